//! A volume's file and its row in `state.db` agree, always: every change applies the file
//! change first and commits the row only when it succeeded, and undoes the file change
//! when the commit fails (docs/SECURITY.md, "All or nothing").
//!
//! - create: the file is made (`O_EXCL`, sized) → the row is inserted → the volume is
//!   served. A failed insert removes the file.
//! - grow: the file is grown → the row is updated → clients see the new size. A failed
//!   update shrinks the file back (nothing was written past the old end: clients were
//!   still held to it).
//! - delete: the file is renamed to a tombstone (`volumes/.deleted.UUID`) → the row is
//!   deleted → the volume leaves service and the tombstone is removed. A failed delete
//!   renames it back.
//!
//! A crash between the two steps is repaired at the next start ([`reconcile`],
//! [`sweep_tombstones`]): a tombstone whose row still exists is renamed back, one whose
//! row is gone is removed; a file longer than its row whose tail holds no data (an
//! interrupted grow) is cut back to the row's size. Anything else that disagrees (a file
//! with data past the row's size, a size the file system cannot hold, a file that cannot
//! be opened) leaves that one volume offline with the reason, never the node down.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::model::{code, ApiError};
use super::R;
use crate::datadir::{describe_size, FsFacts};
use crate::node::Node;

pub(super) const TOMBSTONE: &str = ".deleted.";

/// Refuse a file of `size` bytes (a volume's, a LUN's) that the data directory's file
/// system cannot hold in one file: `field` is the body's field (`size`, `space.size`),
/// `what` the object (`volume`, `LUN`).
pub(super) fn check_file_size(fs: &FsFacts, field: &str, what: &str, size: u64) -> R<()> {
    match fs.max_file_size {
        Some(max) if size > max => Err(ApiError::bad(
            code::OUT_OF_RANGE,
            field,
            format!(
                "{field} = {size} ({}) is more than the data directory's file system ({}) \
                 holds in one file: the largest {what} here is {max} bytes ({})",
                describe_size(size),
                fs.fs_type,
                describe_size(max)
            ),
        )),
        _ => Ok(()),
    }
}

/// Where a volume's file waits between a delete's rename and its commit.
pub(super) fn tombstone(node: &Node, uuid: &str) -> PathBuf {
    node.data_dir()
        .join("volumes")
        .join(format!("{TOMBSTONE}{uuid}"))
}

/// Create a new volume file of `size` bytes (sparse, mode 0600). An existing file is an
/// error (the caller removed orphans first); a failure leaves no file behind.
pub(super) fn create_file(path: &Path, size: u64) -> io::Result<()> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    let r = f.set_len(size).and_then(|_| sync_dir(path));
    if r.is_err() {
        drop(f);
        let _ = std::fs::remove_file(path);
    }
    r
}

/// Set a volume file's length (growing, or undoing a grow).
pub(super) fn set_len(path: &Path, size: u64) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .set_len(size)
}

/// fsync the directory holding `path`, so a create, rename or unlink is durable before
/// the state that depends on it is committed.
pub(super) fn sync_dir(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(d) => std::fs::File::open(d)?.sync_all(),
        None => Ok(()),
    }
}

/// Whether the file holds data (allocated extents) at or past `offset`.
fn has_data_from(path: &Path, offset: u64) -> io::Result<bool> {
    let f = std::fs::File::open(path)?;
    // SAFETY: lseek on an fd we own; only the return value is used.
    let r = unsafe { libc::lseek(f.as_raw_fd(), offset as i64, libc::SEEK_DATA) };
    if r >= 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENXIO) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// The checks a volume's file must pass before the volume is served at start (or brought
/// back online by a PATCH). Repairs what an interrupted change left (see the module
/// doc); returns the reason the volume must stay offline otherwise.
pub(super) fn reconcile(
    node: &Node,
    uuid: &str,
    name: &str,
    size: u64,
    max: Option<u64>,
) -> Result<(), String> {
    let path = node.volume_path(name);
    if let Some(m) = max {
        if size > m {
            return Err(format!(
                "its size {size} ({}) is more than the data directory's file system holds in \
                 one file ({m} bytes, {}); PATCH a size of at most {m} to bring it online",
                describe_size(size),
                describe_size(m)
            ));
        }
    }
    let stone = tombstone(node, uuid);
    if !path.exists() && stone.exists() {
        undo_interrupted_delete(&stone, &path, name, "file")?;
    }
    let len = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        // A volume declared in the configuration gets its file at first start.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if len > size {
        match has_data_from(&path, size) {
            Ok(false) => {
                // An interrupted grow: the tail was never written. Cut it back.
                set_len(&path, size)
                    .map_err(|e| format!("cutting {} back to {size} bytes: {e}", path.display()))?;
                tracing::warn!(volume = %name, file = len, size, "cut back an interrupted grow");
            }
            Ok(true) => {
                return Err(format!(
                    "its file {} holds {len} bytes with data past the size {size} in \
                     state.db; PATCH a size of at least {len} to bring it online (nothing \
                     is discarded)",
                    path.display()
                ))
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok(())
}

/// A delete that did not commit (the volume still exists): rename its tombstone back to
/// the volume's `what` ("file", "tree") at `live`.
pub(super) fn undo_interrupted_delete(
    stone: &Path,
    live: &Path,
    volume: &str,
    what: &str,
) -> Result<(), String> {
    std::fs::rename(stone, live).map_err(|e| {
        format!(
            "restoring {} from an interrupted delete: {e}",
            live.display()
        )
    })?;
    tracing::warn!(volume = %volume, "restored the volume's {what} from an interrupted delete");
    Ok(())
}

/// Remove tombstones whose volume no longer exists (a committed delete whose unlink did
/// not happen); those of existing volumes are left for [`reconcile`] to restore.
pub(super) fn sweep_tombstones(node: &Node, live_uuids: &[&str]) {
    remove_dead_tombstones(&node.data_dir().join("volumes"), live_uuids, |p| {
        std::fs::remove_file(p)
    });
}

/// Remove, with `remove`, the tombstones in `dir` (`.deleted.UUID`: a volume's file or a
/// NAS volume's tree) whose volume is not among `live_uuids`.
pub(super) fn remove_dead_tombstones(
    dir: &Path,
    live_uuids: &[&str],
    remove: fn(&Path) -> std::io::Result<()>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(uuid) = name.to_str().and_then(|n| n.strip_prefix(TOMBSTONE)) else {
            continue;
        };
        if !live_uuids.contains(&uuid) {
            if let Err(err) = remove(&e.path()) {
                tracing::warn!("removing {}: {err}", e.path().display());
            }
        }
    }
}

/// An error's text with what was left: "..., nothing was changed".
pub(super) fn unchanged(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}; nothing was changed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn node(dir: &Path) -> std::sync::Arc<Node> {
        Node::open(&crate::NodeConfig::default(), dir).unwrap()
    }

    #[test]
    fn an_interrupted_delete_is_restored_and_a_committed_one_swept() {
        let dir = test_support::TestDir::new("vfiles-del");
        let n = node(&dir);
        // "a": renamed aside, row still there (the commit never happened).
        create_file(&tombstone(&n, "uuid-a"), 1 << 20).unwrap();
        reconcile(&n, "uuid-a", "a", 1 << 20, None).unwrap();
        assert!(n.volume_path("a").exists());
        assert!(!tombstone(&n, "uuid-a").exists());
        // "b": committed, not unlinked.
        create_file(&tombstone(&n, "uuid-b"), 1 << 20).unwrap();
        sweep_tombstones(&n, &["uuid-a"]);
        assert!(!tombstone(&n, "uuid-b").exists());
    }

    #[test]
    fn an_interrupted_grow_is_cut_back_and_data_past_the_end_keeps_it_offline() {
        let dir = test_support::TestDir::new("vfiles-grow");
        let n = node(&dir);
        let p = n.volume_path("v");
        create_file(&p, 8 << 20).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .write_all_at(b"x", 0)
            .unwrap();
        // Grown to 8 MiB, never written past 1 MiB, row says 1 MiB: cut back.
        reconcile(&n, "u", "v", 1 << 20, None).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 1 << 20);
        // Data past the row's size: offline, nothing cut.
        set_len(&p, 8 << 20).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .write_all_at(b"y", 6 << 20)
            .unwrap();
        let why = reconcile(&n, "u", "v", 1 << 20, None).unwrap_err();
        assert!(why.contains("at least 8388608"), "{why}");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 8 << 20);
        // Too large for the file system: offline.
        let why = reconcile(&n, "u", "v", 1 << 30, Some(1 << 29)).unwrap_err();
        assert!(why.contains("536870912"), "{why}");
        // create_file never overwrites.
        assert!(create_file(&p, 1).is_err());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 8 << 20);
    }
}
