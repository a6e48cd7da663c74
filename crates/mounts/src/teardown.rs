//! Undoing what a tenant attached, in order: processes using the file system, the file
//! system, the loop device, nbdfuse's mount, nbdfuse itself, the directories. Every step
//! checks the kernel's view first (so it is idempotent and works on a half-attached or
//! long-dead run) and every failure is collected, never hidden.

use std::fs;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cmd;
use crate::state::TenantRecord;
use crate::sys;

const UMOUNT_LIMIT: Duration = Duration::from_secs(60);
const LOSETUP_LIMIT: Duration = Duration::from_secs(30);
/// How long nbdfuse may take to exit after its mount is gone before it is killed.
const NBDFUSE_EXIT: Duration = Duration::from_secs(10);

/// What a teardown did (for `qoslab tenants cleanup` and logs).
#[derive(Debug, Default, Clone, Serialize, PartialEq, Eq)]
pub struct Undone {
    pub processes_killed: usize,
    pub unmounted: Vec<String>,
    pub loops_detached: Vec<String>,
    pub nbdfuse_stopped: usize,
    pub dirs_removed: usize,
    /// Steps that failed, with the reason; empty when everything is gone.
    pub errors: Vec<String>,
}

impl Undone {
    pub fn merge(&mut self, o: Undone) {
        self.processes_killed += o.processes_killed;
        self.unmounted.extend(o.unmounted);
        self.loops_detached.extend(o.loops_detached);
        self.nbdfuse_stopped += o.nbdfuse_stopped;
        self.dirs_removed += o.dirs_removed;
        self.errors.extend(o.errors);
    }

    pub fn is_empty(&self) -> bool {
        *self == Undone::default()
    }
}

/// Unmount `dir`: kill its users, `umount`, retry, and as a last resort detach it lazily
/// (`umount -l`, reported as an error because the device may stay busy).
pub fn unmount(dir: &Path, u: &mut Undone) {
    if !sys::is_mounted(dir) {
        return;
    }
    let d = dir.to_string_lossy().into_owned();
    let mut last = String::new();
    for attempt in 0..8 {
        u.processes_killed += sys::kill_users(dir);
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(100 * attempt));
        }
        match cmd::run("unmount", "umount", &[&d], UMOUNT_LIMIT) {
            Ok(_) => {
                u.unmounted.push(d);
                return;
            }
            Err(e) if !sys::is_mounted(dir) => {
                // Someone else (a concurrent teardown) got there first.
                let _ = e;
                return;
            }
            Err(e) => last = e.to_string(),
        }
    }
    match cmd::run("lazy unmount", "umount", &["-l", &d], UMOUNT_LIMIT) {
        Ok(_) => {
            u.unmounted.push(d.clone());
            u.errors.push(format!(
                "{d} stayed busy ({last}); detached lazily with umount -l"
            ));
        }
        Err(e) => u
            .errors
            .push(format!("{d} could not be unmounted: {last}; {e}")),
    }
}

/// How long a detached loop device may take to let go of its backing file.
const LOOP_RELEASE: Duration = Duration::from_secs(20);

/// Detach loop device `dev` if its backing file lies under `prefix`, and wait until the
/// kernel has let go of the file: `losetup -d` of a device still open (a just-unmounted
/// file system's last reference) only marks it for auto-clear, and nbdfuse's mount stays
/// busy until the release.
pub fn detach_loop(dev: &str, prefix: &Path, u: &mut Undone) {
    let backed = |d: &str| sys::loop_backing_file(d).is_some_and(|b| sys::is_under(&b, prefix));
    if !backed(dev) {
        return;
    }
    if let Err(e) = cmd::run("detach loop", "losetup", &["-d", dev], LOSETUP_LIMIT) {
        if backed(dev) {
            u.errors.push(e.to_string());
            return;
        }
    }
    let deadline = Instant::now() + LOOP_RELEASE;
    while backed(dev) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if backed(dev) {
        u.errors.push(format!(
            "{dev} still holds its backing file {LOOP_RELEASE:?} after losetup -d"
        ));
    } else {
        u.loops_detached.push(dev.to_string());
    }
}

/// Detach every loop device whose backing file lies under `prefix`.
pub fn detach_loops(prefix: &Path, u: &mut Undone) {
    for (dev, _) in sys::loops_backed_under(prefix) {
        detach_loop(&dev, prefix, u);
    }
}

/// Wait for nbdfuse to exit after its mount went away; kill it if it does not.
pub fn stop_nbdfuse(pid: u32, start: u64, child: Option<Child>, u: &mut Undone) {
    let deadline = Instant::now() + NBDFUSE_EXIT;
    if let Some(mut c) = child {
        loop {
            match c.try_wait() {
                Ok(Some(_)) => {
                    u.nbdfuse_stopped += 1;
                    return;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let _ = c.kill();
                    let _ = c.wait();
                    u.nbdfuse_stopped += 1;
                    return;
                }
            }
        }
    }
    if !sys::alive(pid, start) {
        return;
    }
    while sys::alive(pid, start) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if sys::signal_if_same(pid, start, libc::SIGKILL) {
        u.errors.push(format!(
            "nbdfuse (pid {pid}) did not exit after its unmount; killed"
        ));
    }
    u.nbdfuse_stopped += 1;
}

/// Undo one tenant's record. `child` is nbdfuse's handle when this process started it.
pub fn tenant(rec: &TenantRecord, child: Option<Child>, u: &mut Undone) {
    unmount(&rec.mount_dir, u);
    if let Some(dev) = &rec.loop_dev {
        detach_loop(dev, &rec.fuse_dir, u);
    }
    // A loop attached just before a crash, not yet in the record.
    detach_loops(&rec.fuse_dir, u);
    unmount(&rec.fuse_dir, u);
    match rec.nbdfuse {
        Some((pid, start)) => stop_nbdfuse(pid, start, child, u),
        None => {
            if let Some(mut c) = child {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    for d in [&rec.mount_dir, &rec.fuse_dir] {
        remove_dir_if_unmounted(d, u);
    }
}

/// Remove an empty directory unless something is still mounted at or under it.
pub fn remove_dir_if_unmounted(d: &Path, u: &mut Undone) {
    if !d.exists() {
        return;
    }
    if !sys::mounts_under(d).is_empty() {
        u.errors
            .push(format!("{} is still mounted: left in place", d.display()));
        return;
    }
    match fs::remove_dir(d) {
        Ok(()) => u.dirs_removed += 1,
        Err(e) => u.errors.push(format!("removing {}: {e}", d.display())),
    }
}
