//! A run's directory and its state file: what this run has attached, written before and
//! after every step, so whatever a killed run leaves behind can be found and undone.
//!
//! Layout: `BASE/run-PID-NONCE/` holds `lock` (flock'ed for the run's whole life: the
//! kernel drops the lock when the process dies, however it dies), `state.json` (replaced
//! atomically), and per tenant `TENANT.fuse/` (nbdfuse's mount, the volume as the file
//! `nbd`), `TENANT.fs/` (the tenant's file system) and `TENANT.nbdfuse.log`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::FsType;

/// The state file's format version.
pub const STATE_VERSION: u32 = 1;
pub const STATE_FILE: &str = "state.json";
pub const LOCK_FILE: &str = "lock";
/// Run directories are named `run-PID-NONCE`.
pub const RUN_PREFIX: &str = "run-";

/// Everything one tenant has attached, filled in step by step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TenantRecord {
    pub tenant: String,
    pub nbd_uri: String,
    pub fs: FsType,
    /// nbdfuse's mount point; the volume appears in it as the file `nbd`.
    pub fuse_dir: PathBuf,
    /// Where the tenant's file system is mounted.
    pub mount_dir: PathBuf,
    /// nbdfuse's pid and start time (None until it is running).
    pub nbdfuse: Option<(u32, u64)>,
    /// The loop device over the nbdfuse file (None until attached).
    pub loop_dev: Option<String>,
    /// A caller's block device the file system is made on directly (no nbdfuse, no loop
    /// device: `nbd_uri` is empty); it is unmounted on teardown, never detached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Whether the file system is mounted.
    pub mounted: bool,
}

impl TenantRecord {
    pub fn image(&self) -> PathBuf {
        self.fuse_dir.join("nbd")
    }
}

/// The state file's content.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunState {
    pub version: u32,
    pub run: String,
    pub pid: u32,
    pub pid_start: u64,
    pub tenants: Vec<TenantRecord>,
}

/// Create `dir` and take its lock (held until the returned file is closed).
pub fn create_locked(dir: &Path) -> io::Result<File> {
    fs::create_dir_all(dir)?;
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))?;
    if !try_lock(&f)? {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("{} is locked by another process", dir.display()),
        ));
    }
    Ok(f)
}

/// Take an exclusive flock without waiting (std's `File::try_lock`: flock(2) with
/// LOCK_EX | LOCK_NB); Ok(false) when another process holds it.
pub fn try_lock(f: &File) -> io::Result<bool> {
    match f.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Write `state` to `dir/state.json` atomically (temp file, fsync, rename).
pub fn save(dir: &Path, state: &RunState) -> io::Result<()> {
    let tmp = dir.join("state.json.tmp");
    let mut f = File::create(&tmp)?;
    let text = serde_json::to_string_pretty(state).map_err(io::Error::other)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join(STATE_FILE))
}

/// Read `dir/state.json`; None when it is missing or unreadable (a run killed before its
/// first write: the kernel-side scan still finds what it attached).
pub fn load(dir: &Path) -> Option<RunState> {
    let text = fs::read_to_string(dir.join(STATE_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> test_support::TestDir {
        test_support::TestDir::new(&format!("mounts-state-{tag}"))
    }

    #[test]
    fn state_round_trips_and_the_lock_is_exclusive() {
        let d = tmpdir("rt");
        let lock = create_locked(&d).unwrap();
        // A second open file description cannot take the lock while the first holds it.
        let other = File::open(d.join(LOCK_FILE)).unwrap();
        assert!(!try_lock(&other).unwrap());
        let st = RunState {
            version: STATE_VERSION,
            run: "run-1-2".into(),
            pid: 1,
            pid_start: 2,
            tenants: vec![TenantRecord {
                tenant: "t0".into(),
                nbd_uri: "nbd+unix:///v?socket=/s".into(),
                fs: FsType::Xfs,
                fuse_dir: d.join("t0.fuse"),
                mount_dir: d.join("t0.fs"),
                nbdfuse: Some((10, 20)),
                loop_dev: Some("/dev/loop7".into()),
                device: None,
                mounted: true,
            }],
        };
        save(&d, &st).unwrap();
        assert_eq!(load(&d), Some(st));
        drop(lock);
        assert!(
            try_lock(&other).unwrap(),
            "the lock is free once its holder closes it"
        );
    }

    #[test]
    fn a_missing_or_corrupt_state_file_loads_as_none() {
        let d = tmpdir("bad");
        fs::create_dir_all(&d).unwrap();
        assert_eq!(load(&d), None);
        fs::write(d.join(STATE_FILE), "{not json").unwrap();
        assert_eq!(load(&d), None);
    }
}
