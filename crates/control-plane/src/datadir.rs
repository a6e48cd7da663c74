//! Facts about the data directory's file system that the control plane checks changes
//! against: its type and the largest file it can hold (a volume is one sparse file, so
//! that is the largest volume this node can serve).
//!
//! The limit is measured, not looked up: on a file system known to keep files sparse
//! (ext2/3/4, XFS, Btrfs, tmpfs, overlayfs, ZFS, F2FS, bcachefs) a probe file is grown
//! with `ftruncate` by binary search until the kernel's `EFBIG` says where the file
//! system's `s_maxbytes` lies (ext4 with 4 KiB blocks: 16 TiB − 4 KiB; with 1 KiB blocks:
//! 4 TiB − 1 KiB). Growing a sparse file allocates nothing, so the probe costs ~60
//! syscalls. On other file systems (vfat would write zeroes) nothing is probed and only
//! the node's own limit applies; a grow the file system refuses is then rolled back.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The data directory's file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsFacts {
    /// A name for messages: `ext4`, `xfs`, ... or `0xMAGIC`.
    pub fs_type: String,
    /// The largest file the file system holds (bytes), when it could be measured.
    pub max_file_size: Option<u64>,
}

/// statfs(2) `f_type` magic numbers (linux/magic.h) of file systems that keep files
/// sparse, so probing them with ftruncate allocates nothing.
const SPARSE: &[(i64, &str)] = &[
    (0xEF53, "ext4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x0102_1994, "tmpfs"),
    (0x794C_7630, "overlayfs"),
    (0x2FC1_2FC1, "zfs"),
    (0xF2F5_2010, "f2fs"),
    (0xCA45_1A4E, "bcachefs"),
];

/// The f_type of the file system holding `path`.
fn fs_magic(path: &Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // SAFETY: statfs writes into a zeroed struct we own; `c` is a valid C string.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)]
    Ok(st.f_type as i64)
}

/// Measure the file system holding directory `dir` (which must exist and be writable
/// for the probe; a probe that cannot run leaves `max_file_size` unknown).
pub fn probe(dir: &Path) -> io::Result<FsFacts> {
    let magic = fs_magic(dir)?;
    let Some(&(_, name)) = SPARSE.iter().find(|(m, _)| *m == magic) else {
        return Ok(FsFacts {
            fs_type: format!("{magic:#x}"),
            max_file_size: None,
        });
    };
    let path = dir.join(format!(".qoslab-size-probe-{}", std::process::id()));
    let max = probe_file(&path);
    let _ = std::fs::remove_file(&path);
    Ok(FsFacts {
        fs_type: name.to_string(),
        max_file_size: max.ok(),
    })
}

fn probe_file(path: &Path) -> io::Result<u64> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // Invariant: `lo` fits, `hi` does not (i64::MAX + 1 never does).
    let (mut lo, mut hi) = (0u64, 1u64 << 63);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match f.set_len(mid) {
            Ok(()) => lo = mid,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EFBIG) | Some(libc::EINVAL)) => {
                hi = mid
            }
            Err(e) => return Err(e),
        }
    }
    f.set_len(0)?;
    Ok(lo)
}

/// `17592186040320` → "16 TiB - 4 KiB" style text for messages (exact, binary units).
pub fn describe_size(bytes: u64) -> String {
    const UNITS: &[(u64, &str)] = &[
        (1 << 60, "EiB"),
        (1 << 50, "PiB"),
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for &(u, name) in UNITS {
        if bytes >= u && bytes.is_multiple_of(u) {
            return format!("{} {name}", bytes / u);
        }
        // Just below a round figure: say so (ext4's 16 TiB - 4 KiB).
        let up = bytes.div_ceil(u) * u;
        let gap = up - bytes;
        if bytes >= u && gap > 0 && gap < u && gap.is_power_of_two() && gap >= 512 {
            return format!("{} {name} - {}", up / u, describe_size(gap));
        }
    }
    format!("{bytes} B")
}

/// The lock a running `qoslab serve` holds on its data directory (`DATA_DIR/serve.lock`,
/// an exclusive `flock` for the life of the process, with its pid inside): a second node
/// on the same directory is refused, and `qoslab user delete` can tell that a node runs.
pub struct ServeLock {
    _file: std::fs::File,
}

fn lock_path(data_dir: &Path) -> std::path::PathBuf {
    data_dir.join("serve.lock")
}

/// An exclusive flock(2) without waiting (std's, LOCK_EX | LOCK_NB); Ok(false) when
/// another process holds it.
fn try_flock(f: &std::fs::File) -> io::Result<bool> {
    match f.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

impl ServeLock {
    /// Take the lock; `Err` names the pid of the node that holds it.
    pub fn take(data_dir: &Path) -> Result<ServeLock, String> {
        use std::io::Write;
        let path = lock_path(data_dir);
        let mut f = crate::private::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if !try_flock(&f).map_err(|e| format!("{}: {e}", path.display()))? {
            let pid = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(format!(
                "another qoslab serve (pid {}) is using the data directory {}",
                pid.trim(),
                data_dir.display()
            ));
        }
        let _ = f.set_len(0);
        let _ = writeln!(f, "{}", std::process::id());
        Ok(ServeLock { _file: f })
    }
}

/// The pid of the `qoslab serve` running on `data_dir`, if one is.
pub fn running_node(data_dir: &Path) -> Option<u32> {
    let path = lock_path(data_dir);
    let f = std::fs::File::open(&path).ok()?;
    if try_flock(&f).ok()? {
        return None; // nobody holds it (our lock dies with `f`)
    }
    std::fs::read_to_string(&path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(describe_size(16 << 40), "16 TiB");
        assert_eq!(describe_size((16 << 40) - 4096), "16 TiB - 4 KiB");
        assert_eq!(describe_size((4 << 40) - 1024), "4 TiB - 1 KiB");
        assert_eq!(describe_size(i64::MAX as u64), "9223372036854775807 B");
        assert_eq!(describe_size(1 << 50), "1 PiB");
        assert_eq!(describe_size(1000), "1000 B");
    }

    #[test]
    fn probes_this_file_system() {
        let dir = test_support::TestDir::new("fsprobe");
        let f = probe(&dir).unwrap();
        // The lock: taken once, seen by others, released on drop.
        assert_eq!(running_node(&dir), None);
        let l = ServeLock::take(&dir).unwrap();
        assert_eq!(running_node(&dir), Some(std::process::id()));
        assert!(ServeLock::take(&dir).is_err());
        drop(l);
        assert_eq!(running_node(&dir), None);
        std::fs::remove_file(dir.join("serve.lock")).unwrap();
        // The probe file is gone.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        if let Some(max) = f.max_file_size {
            // The measured size fits and one byte more does not.
            let p = dir.join("x");
            let file = std::fs::File::create(&p).unwrap();
            file.set_len(max).unwrap();
            let e = file.set_len(max + 1).unwrap_err();
            assert!(matches!(
                e.raw_os_error(),
                Some(libc::EFBIG) | Some(libc::EINVAL)
            ));
        }
    }
}
