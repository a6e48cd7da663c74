//! Can this host mount tenant file systems? Every missing piece is named with how to get it.

use std::fmt;
use std::path::Path;

use crate::cmd::on_path;
use crate::FsType;

/// One thing the host lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// Not running as root (loop devices and mount(2) need it).
    Root { uid: u32 },
    /// `/dev/fuse` absent or not openable read-write.
    Fuse { detail: String },
    /// No loop-device control node (`/dev/loop-control`).
    Loop,
    /// A program not on PATH, with the Debian package that ships it.
    Program { program: String, package: String },
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::Root { uid } => write!(
                f,
                "not running as root (uid {uid}): attaching loop devices and mounting file \
                 systems need root; run as root (sudo)"
            ),
            Missing::Fuse { detail } => write!(
                f,
                "no usable /dev/fuse ({detail}): load the module (`modprobe fuse`); in a \
                 container pass `--device /dev/fuse`"
            ),
            Missing::Loop => write!(
                f,
                "no loop devices (/dev/loop-control is missing): load the module \
                 (`modprobe loop`); in a container run privileged or pass the loop devices"
            ),
            Missing::Program { program, package } => write!(
                f,
                "`{program}` is not installed: apt-get install {package} (scripts/install-deps.sh \
                 installs it)"
            ),
        }
    }
}

/// Everything the host lacks to mount tenant volumes of the given file-system types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightError(pub Vec<Missing>);

impl fmt::Display for PreflightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "this host cannot mount tenant volumes:")?;
        for m in &self.0 {
            write!(f, "\n  - {m}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PreflightError {}

/// Check root, `/dev/fuse`, loop devices and the programs (nbdfuse, losetup, mount, umount,
/// the mkfs of each type in `fs_types`). Returns every missing piece at once.
pub fn check(fs_types: &[FsType]) -> Result<(), PreflightError> {
    check_for(fs_types, true)
}

/// As [`check`]; with `volumes` false (file systems made on the caller's block devices:
/// [`crate::Session::attach_device`]) FUSE, loop devices, nbdfuse and losetup are not needed.
pub fn check_for(fs_types: &[FsType], volumes: bool) -> Result<(), PreflightError> {
    let mut missing = Vec::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        missing.push(Missing::Root { uid });
    }
    let mut programs = vec![("mount", "mount"), ("umount", "mount")];
    if volumes {
        if let Err(e) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
        {
            missing.push(Missing::Fuse {
                detail: e.to_string(),
            });
        }
        if !Path::new("/dev/loop-control").exists() {
            missing.push(Missing::Loop);
        }
        programs.splice(0..0, [("nbdfuse", "libnbd-bin"), ("losetup", "util-linux")]);
    }
    for fs in fs_types {
        programs.push(match fs {
            FsType::Ext4 => ("mkfs.ext4", "e2fsprogs"),
            FsType::Xfs => ("mkfs.xfs", "xfsprogs"),
        });
    }
    programs.dedup();
    for (program, package) in programs {
        if !on_path(program) {
            missing.push(Missing::Program {
                program: program.into(),
                package: package.into(),
            });
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PreflightError(missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_missing_piece_is_named_with_its_remedy() {
        let e = PreflightError(vec![
            Missing::Root { uid: 1000 },
            Missing::Fuse {
                detail: "No such file or directory (os error 2)".into(),
            },
            Missing::Loop,
            Missing::Program {
                program: "mkfs.xfs".into(),
                package: "xfsprogs".into(),
            },
        ]);
        let s = e.to_string();
        for needle in [
            "not running as root (uid 1000)",
            "/dev/fuse",
            "modprobe fuse",
            "/dev/loop-control",
            "`mkfs.xfs` is not installed: apt-get install xfsprogs",
        ] {
            assert!(s.contains(needle), "{needle:?} missing from {s}");
        }
        assert_eq!(s.lines().count(), 5, "{s}");
    }

    #[test]
    fn a_program_that_is_not_on_path_is_reported() {
        assert!(on_path("sh"));
        assert!(!on_path("qoslab-no-such-program"));
    }
}
