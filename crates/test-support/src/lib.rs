//! Helpers for the workspace's tests (a dev-dependency only; never in a shipped binary):
//! the temporary-directory guard and a free loopback port.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh directory under the system temp dir (`qoslab-TAG-PID-N`), removed when dropped —
/// also when the test panics (unwinding drops it), so no test leaves anything in /tmp.
pub struct TestDir(PathBuf);

impl TestDir {
    pub fn new(tag: &str) -> TestDir {
        TestDir::new_in(&std::env::temp_dir(), tag)
    }

    /// The same under `base` (a tmpfs, a small file system a test mounted).
    pub fn new_in(base: &Path, tag: &str) -> TestDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let p = base.join(format!("qoslab-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("creating {}: {e}", p.display()));
        TestDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Write `text` to the file `name` in it; its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
        p
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the OS's pick, released for the
/// test's server to bind).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

#[cfg(test)]
mod tests {
    use super::TestDir;

    #[test]
    fn made_fresh_and_removed_on_drop() {
        let a = TestDir::new("ts");
        let b = TestDir::new("ts");
        assert_ne!(a.path(), b.path());
        assert_eq!(std::fs::read(a.write("f", "x")).unwrap(), b"x");
        let c = TestDir::new_in(b.path(), "in");
        assert!(c.starts_with(b.path()) && c.is_dir());
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists());
    }
}
