//! The data directory is private by construction: every directory the node makes is 0700
//! and every file 0600, whatever the process's umask (modes are given at creation, never
//! left to the umask; `qoslab serve` also sets its umask to 077 for anything a library
//! creates, such as SQLite's `-wal` and `-shm`, which take the database file's mode).
//! At start, [`check`] warns when other users can reach the data directory and tightens
//! files and directories inside it that an older version left readable — the node's own
//! files only: the trees that hold clients' files ([`CLIENT_TREES`]: NAS volumes, whose
//! modes are what NFS clients set) are never entered.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of every file the node creates.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every directory the node creates.
pub const DIR_MODE: u32 = 0o700;

/// `mkdir -p` with mode 0700 for every directory it creates.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// `mkdir` (one level) with mode 0700.
pub fn create_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(DIR_MODE).create(path)
}

/// OpenOptions that create files with mode 0600.
pub fn options() -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    o.mode(FILE_MODE);
    o
}

/// Write a new file (or replace one) with mode 0600, durably.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut f = options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Create `file` empty with mode 0600 if it does not exist (so that a library opening it
/// afterwards — SQLite — finds the mode already set).
pub fn precreate(file: &Path) -> io::Result<()> {
    match options().write(true).create_new(true).open(file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Directories of the data directory whose contents are clients' files, modes included
/// (`nas/NAME` is a NAS volume's tree): [`check`] tightens the directory itself (the
/// node's) and never enters it.
pub const CLIENT_TREES: &[&str] = &["nas"];

/// What [`check`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Privacy {
    /// The data directory's mode when other users can read or enter it.
    pub open_mode: Option<u32>,
    /// Files and directories inside that were tightened.
    pub tightened: u64,
}

/// Check the data directory: report its mode when group or others have any access (the
/// caller warns), and tighten the node's own files (0600) and directories (0700) below
/// it. Symbolic links are not followed; entries owned by another user are left alone;
/// [`CLIENT_TREES`] are not entered (the node never rewrites its clients' modes).
pub fn check(data_dir: &Path) -> io::Result<Privacy> {
    let meta = std::fs::metadata(data_dir)?;
    let mode = meta.permissions().mode() & 0o7777;
    let mut out = Privacy {
        open_mode: (mode & 0o077 != 0).then_some(mode),
        tightened: 0,
    };
    let uid = meta.uid();
    let mut stack = vec![data_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.uid() != uid {
                continue;
            }
            let client_tree = dir == data_dir
                && CLIENT_TREES
                    .iter()
                    .any(|t| e.file_name() == std::ffi::OsStr::new(t));
            let want = if m.is_dir() {
                if !client_tree {
                    stack.push(e.path());
                }
                DIR_MODE
            } else if m.is_file() {
                FILE_MODE
            } else {
                continue; // sockets, links
            };
            if m.permissions().mode() & 0o077 != 0 {
                let keep = m.permissions().mode() & 0o700;
                let p = std::fs::Permissions::from_mode(keep | want);
                if std::fs::set_permissions(e.path(), p).is_ok() {
                    out.tightened += 1;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_ignore_the_umask_and_check_tightens() {
        let dir = test_support::TestDir::new("private");
        let old = unsafe { libc::umask(0o000) };
        create_dir_all(&dir.join("a/b")).unwrap();
        write(&dir.join("a/b/f"), b"x").unwrap();
        std::fs::write(dir.join("loose"), b"y").unwrap(); // 0666 under umask 0
        unsafe { libc::umask(old) };
        let mode = |p: &str| std::fs::metadata(dir.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("a"), 0o700);
        assert_eq!(mode("a/b"), 0o700);
        assert_eq!(mode("a/b/f"), 0o600);
        std::fs::set_permissions(&*dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = check(&dir).unwrap();
        assert_eq!(p.open_mode, Some(0o755));
        assert_eq!(p.tightened, 1);
        assert_eq!(mode("loose"), 0o600);
    }

    #[test]
    fn check_never_enters_a_nas_tree() {
        use std::os::unix::fs::PermissionsExt;
        let dir = test_support::TestDir::new("private-nas");
        let set = |p: &str, m: u32| {
            std::fs::set_permissions(dir.join(p), std::fs::Permissions::from_mode(m)).unwrap()
        };
        std::fs::create_dir_all(dir.join("nas/vol/d2775")).unwrap();
        std::fs::create_dir_all(dir.join("nas/vol/d1777")).unwrap();
        for f in ["nas/vol/f0644", "nas/vol/f4755", "nas/vol/f0444"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let modes = [
            ("nas/vol", 0o755),
            ("nas/vol/d2775", 0o2775),
            ("nas/vol/d1777", 0o1777),
            ("nas/vol/f0644", 0o644),
            ("nas/vol/f4755", 0o4755),
            ("nas/vol/f0444", 0o444),
        ];
        for (p, m) in modes {
            set(p, m);
        }
        set("nas", 0o755);
        let p = check(&dir).unwrap();
        let mode = |p: &str| std::fs::metadata(dir.join(p)).unwrap().permissions().mode() & 0o7777;
        for (p, m) in modes {
            assert_eq!(mode(p), m, "{p} is a client's: its mode is never rewritten");
        }
        assert_eq!(mode("nas"), 0o700, "the node's own directory is tightened");
        assert_eq!(p.tightened, 1);
    }
}
