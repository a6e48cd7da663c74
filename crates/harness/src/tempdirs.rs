//! The harness's temporary directories (`qoslab-TAG-PID-N` under the system temp dir: the
//! embedded node's data, fio's job files and logs, a family's scratch space). Each is
//! removed by its owner when the run ends or fails, and by the signal teardown on SIGINT,
//! SIGTERM or SIGHUP (the lifecycle's local phase: every directory this process made that
//! is still there); a run killed by a signal it cannot catch (SIGKILL, OOM) cannot, so the
//! next run removes every such directory whose process is gone, once per process, before
//! making its first. A directory with anything mounted below it is left alone (the
//! tenants' clean-up owns mounts: `qoslab tenants cleanup`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once, OnceLock};

static SEQ: AtomicU32 = AtomicU32::new(0);
static SWEPT: Once = Once::new();
/// Every directory this process made, for the signal teardown.
static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static ON_SIGNAL: OnceLock<lifecycle::Guard> = OnceLock::new();

/// The teardown's action: remove what this process made and still has (unless something
/// is mounted below it).
fn remove_made() {
    let made = std::mem::take(&mut *MADE.lock().unwrap_or_else(|p| p.into_inner()));
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for d in made {
        if d.exists() && !has_mounts_below(&d, &mountinfo) {
            let _ = std::fs::remove_dir_all(&d);
        }
    }
}

/// A fresh directory `qoslab-TAG-PID-N` under the system temp dir.
pub fn temp_dir(tag: &str) -> std::io::Result<PathBuf> {
    let root = std::env::temp_dir();
    SWEPT.call_once(|| {
        for (p, e) in remove_stale(&root) {
            eprintln!(
                "qoslab: could not remove {} (left by a killed run): {e}",
                p.display()
            );
        }
    });
    let n = SEQ.fetch_add(1, Ordering::SeqCst);
    let p = root.join(format!("qoslab-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p)?;
    ON_SIGNAL.get_or_init(|| lifecycle::register(lifecycle::Phase::Local, remove_made));
    MADE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(p.clone());
    Ok(p)
}

/// The process id in a `qoslab-TAG-PID-N` name.
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("qoslab-")?;
    let mut parts = rest.rsplitn(3, '-');
    let n = parts.next()?;
    let pid = parts.next()?;
    let tag = parts.next()?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(n) && digits(pid) && !tag.is_empty()).then(|| pid.parse().ok())?
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Mount points at or below `dir` (from this process's mount table).
fn has_mounts_below(dir: &Path, mountinfo: &str) -> bool {
    let d = dir.to_string_lossy();
    mountinfo.lines().any(|l| {
        l.split(' ')
            .nth(4)
            .is_some_and(|m| m == d || m.starts_with(&format!("{d}/")))
    })
}

/// Removes the harness's directories under `root` whose process is gone; returns those
/// it could not remove.
fn remove_stale(root: &Path) -> Vec<(PathBuf, std::io::Error)> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut failed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner(&name) else { continue };
        let path = e.path();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || alive(pid) || has_mounts_below(&path, &mountinfo) {
            continue;
        }
        if let Err(err) = std::fs::remove_dir_all(&path) {
            failed.push((path, err));
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_their_process() {
        assert_eq!(owner("qoslab-bench-9280-1"), Some(9280));
        assert_eq!(owner("qoslab-suite-logs-23672-1"), Some(23672));
        assert_eq!(owner("qoslab-results.db"), None);
        assert_eq!(owner("qoslab-bench-x-1"), None);
        assert_eq!(owner("qoslab-9280-1"), None);
        assert_eq!(owner("other-bench-9280-1"), None);
    }

    #[test]
    fn a_dead_runs_directories_go_a_live_ones_and_mounted_ones_stay() {
        let root =
            std::env::temp_dir().join(format!("qoslab-tempdirs-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        struct Rm(PathBuf);
        impl Drop for Rm {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let _rm = Rm(root.clone());
        // A pid above the kernel's maximum is never alive.
        let dead = root.join("qoslab-bench-4194305-1");
        std::fs::create_dir_all(dead.join("data")).unwrap();
        std::fs::write(dead.join("data/v.img"), b"x").unwrap();
        let live = root.join(format!("qoslab-fio-{}-0", std::process::id()));
        std::fs::create_dir_all(&live).unwrap();
        let mounted = root.join("qoslab-tenants-4194305-2");
        std::fs::create_dir_all(mounted.join("t0")).unwrap();
        let other = root.join("unrelated-4194305-1");
        std::fs::create_dir_all(&other).unwrap();
        let fake_mounts = format!(
            "36 35 98:0 / {} rw - ext4 /dev/loop0 rw\n",
            mounted.join("t0").display()
        );
        assert!(has_mounts_below(&mounted, &fake_mounts));
        assert!(!has_mounts_below(&dead, &fake_mounts));
        assert!(remove_stale(&root).is_empty());
        assert!(!dead.exists(), "a dead run's directory is removed");
        assert!(live.exists() && other.exists());
        // (the real mount table has nothing under `mounted`: removed too)
        assert!(!mounted.exists());
    }
}
