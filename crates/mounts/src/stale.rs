//! Finding and undoing what killed runs left behind under a base directory. A run is
//! stale when its lock is free (the kernel released it when the process died, however it
//! died); a live run's lock is held and it is left alone. Leftovers are undone from the
//! run's state file and, for whatever the file missed, from the kernel's own view (mounts
//! and loop devices under the run directory, nbdfuse processes serving it).

use std::fs::{self, File};
use std::path::Path;

use serde::Serialize;

use crate::state::{self, LOCK_FILE, RUN_PREFIX};
use crate::teardown::{self, Undone};
use crate::{sys, MountError};

/// One run found under the base directory.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StaleRun {
    pub run: String,
    /// The pid that created it (from the state file or the name).
    pub pid: Option<u32>,
    /// True when the run's process still holds its lock: nothing was touched.
    pub live: bool,
    pub undone: Undone,
}

fn pid_from_name(run: &str) -> Option<u32> {
    run.strip_prefix(RUN_PREFIX)?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Undo every stale run under `base`; report every run found (live ones untouched).
pub fn cleanup(base: &Path) -> Result<Vec<StaleRun>, MountError> {
    let mut out = Vec::new();
    let rd = match fs::read_dir(base) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(MountError::io("reading", base, e)),
    };
    let mut runs: Vec<_> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(RUN_PREFIX))
        .map(|e| e.path())
        .collect();
    runs.sort();
    for dir in runs {
        let run = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Hold the dead run's lock while undoing it, so two cleaners never race.
        let lock = File::open(dir.join(LOCK_FILE)).ok();
        let live = match &lock {
            Some(f) => !state::try_lock(f).map_err(|e| MountError::io("locking", &dir, e))?,
            None => false,
        };
        let st = state::load(&dir);
        let pid = st.as_ref().map(|s| s.pid).or_else(|| pid_from_name(&run));
        if live {
            out.push(StaleRun {
                run,
                pid,
                live: true,
                undone: Undone::default(),
            });
            continue;
        }
        let mut u = Undone::default();
        if let Some(st) = &st {
            for rec in &st.tenants {
                teardown::tenant(rec, None, &mut u);
            }
        }
        sweep(&dir, &mut u);
        out.push(StaleRun {
            run,
            pid,
            live: false,
            undone: u,
        });
        drop(lock);
    }
    Ok(out)
}

/// Whatever the state file missed: mounts, loops and nbdfuse processes under `dir`; then
/// the directory itself, unless something is still mounted beneath it.
fn sweep(dir: &Path, u: &mut Undone) {
    for m in sys::mounts_under(dir) {
        // File systems first (deepest first), nbdfuse's mounts after their loops are gone.
        if !m.to_string_lossy().ends_with(".fuse") {
            teardown::unmount(&m, u);
        }
    }
    teardown::detach_loops(dir, u);
    for m in sys::mounts_under(dir) {
        teardown::unmount(&m, u);
    }
    // nbdfuse processes still serving a mount under this run (their mount is gone now).
    for pid in nbdfuse_serving(dir) {
        if let Some(st) = sys::start_time(pid) {
            teardown::stop_nbdfuse(pid, st, None, u);
        }
    }
    if sys::mounts_under(dir).is_empty() {
        match fs::remove_dir_all(dir) {
            Ok(()) => u.dirs_removed += 1,
            Err(e) => u.errors.push(format!("removing {}: {e}", dir.display())),
        }
    } else {
        u.errors
            .push(format!("{} still has mounts: left in place", dir.display()));
    }
}

/// Pids of nbdfuse processes whose command line names a path under `dir`.
fn nbdfuse_serving(dir: &Path) -> Vec<u32> {
    let mut v = Vec::new();
    for (pid, base) in sys::processes() {
        let Ok(cmdline) = fs::read(base.join("cmdline")) else {
            continue;
        };
        let mut args = cmdline.split(|b| *b == 0).map(String::from_utf8_lossy);
        let is_nbdfuse = args
            .next()
            .is_some_and(|a0| a0.rsplit('/').next() == Some("nbdfuse"));
        if is_nbdfuse && args.any(|a| sys::is_under(Path::new(a.as_ref()), dir)) {
            v.push(pid);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_comes_from_the_run_name_when_the_state_file_is_gone() {
        assert_eq!(pid_from_name("run-4242-18a3f00"), Some(4242));
        assert_eq!(pid_from_name("other"), None);
    }

    #[test]
    fn a_dead_run_without_attachments_is_removed_and_a_live_one_is_left_alone() {
        let base = test_support::TestDir::new("mounts-stale");
        let dead = base.join("run-1-a");
        fs::create_dir_all(dead.join("t0.fs")).unwrap();
        fs::write(dead.join(LOCK_FILE), "").unwrap();
        let live = base.join("run-2-b");
        let _held = state::create_locked(&live).unwrap();
        let found = cleanup(&base).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            !found[0].live && found[0].undone.dirs_removed == 1,
            "{found:?}"
        );
        assert!(found[1].live && found[1].undone.is_empty(), "{found:?}");
        assert!(!dead.exists());
        assert!(live.exists());
    }
}
