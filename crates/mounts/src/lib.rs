//! Tenant file systems over qoslab volumes, owned for their whole life.
//!
//! A tenant's volume (an NBD URI) becomes a mounted file system in four steps: `nbdfuse`
//! exports it as a file, `losetup --direct-io=on` attaches that file as a loop device,
//! `mkfs` (ext4 or xfs) formats it and `mount` mounts it. No kernel NBD client is needed.
//!
//! **Ownership.** A [`Session`] is one run: a directory `BASE/run-PID-NONCE` whose `lock`
//! file is flock'ed while the run lives, and whose `state.json` records every step before
//! the next one. Teardown (unmount, detach, stop nbdfuse, remove directories) runs on
//! [`Session::close`], on drop, and on SIGINT/SIGTERM/SIGHUP (the process's [`lifecycle`]:
//! application processes in its child phase, the mounts in its local phase). A run killed
//! with SIGKILL leaves its state and its lock free: the next [`Session::open`] (or
//! [`cleanup_stale`], `qoslab tenants cleanup`) finds it and undoes it. Nothing is ever
//! reused: every run makes new names.
//!
//! **Caches.** With direct I/O on the loop device the page cache sits once, above the
//! tenant's file system (as on a real client); without it, the loop device's reads of
//! nbdfuse's file are cached a second time (docs/TENANTS.md has the measurement).

pub mod children;
mod cmd;
pub mod preflight;
mod session;
mod stale;
pub mod state;
pub mod sys;
mod teardown;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use preflight::{Missing, PreflightError};
pub use session::{AttachOptions, Session, Tenant};
pub use stale::StaleRun;
pub use teardown::Undone;

/// The default base directory (a tmpfs: mounts do not survive a reboot, nor should this).
pub const DEFAULT_BASE: &str = "/run/qoslab/tenants";

/// A tenant file system type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    Ext4,
    Xfs,
}

impl FsType {
    pub fn as_str(self) -> &'static str {
        match self {
            FsType::Ext4 => "ext4",
            FsType::Xfs => "xfs",
        }
    }
}

impl std::str::FromStr for FsType {
    type Err = String;
    fn from_str(s: &str) -> Result<FsType, String> {
        match s {
            "ext4" => Ok(FsType::Ext4),
            "xfs" => Ok(FsType::Xfs),
            _ => Err(format!("unknown file system {s:?}: expected ext4 or xfs")),
        }
    }
}

impl std::fmt::Display for FsType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    #[error("{step}: `{command}` failed: {detail}")]
    Command {
        step: String,
        command: String,
        detail: String,
    },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid tenant name {0:?}: use 1-64 of A-Z a-z 0-9 _ - . (not starting with . or -)")]
    TenantName(String),
    #[error("tenant {0} is already attached in this run")]
    Duplicate(String),
    #[error("nbdfuse could not export {uri}: {detail}; its log: {log}")]
    NbdfuseNotReady {
        uri: String,
        detail: String,
        log: String,
    },
    #[error("the run is being torn down (a signal arrived)")]
    Closing,
    #[error("teardown incomplete: {}", .0.join("; "))]
    Teardown(Vec<String>),
    #[error("{cause}; undoing the attach also failed: {}", errors.join("; "))]
    Undo {
        cause: Box<MountError>,
        errors: Vec<String>,
    },
}

impl MountError {
    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> MountError {
        MountError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Undo every stale run under `base` (runs whose process is gone) and report every run
/// found; live runs are listed and left alone.
pub fn cleanup_stale(base: &Path) -> Result<Vec<StaleRun>, MountError> {
    stale::cleanup(base)
}
