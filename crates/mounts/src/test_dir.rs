//! Test helper (unit tests only): a temp path removed when dropped, also when a test panics.

use std::path::{Path, PathBuf};

/// A path under the system temp dir (not created: the code under test creates it), removed
/// with everything below it when dropped.
pub(crate) struct RemoveOnDrop(PathBuf);

impl RemoveOnDrop {
    pub(crate) fn new(tag: &str) -> RemoveOnDrop {
        let p = std::env::temp_dir().join(format!("mounts-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        RemoveOnDrop(p)
    }
}

impl std::ops::Deref for RemoveOnDrop {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for RemoveOnDrop {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
