//! Teardown on SIGINT, SIGTERM and SIGHUP: a thread (signal-hook) kills the registered
//! application process groups, tears down every open [`Session`](crate::Session) of this
//! process, and exits with 128 + the signal number. SIGKILL cannot be caught: that case is
//! the next run's stale cleanup.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::children;
use crate::teardown::Undone;

/// Something this module tears down on a signal (an open session).
pub(crate) trait Teardown: Send + Sync {
    fn teardown_all(&self) -> Undone;
}

static INSTALL: Once = Once::new();
static LIVE: Mutex<Vec<Weak<dyn Teardown>>> = Mutex::new(Vec::new());
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Other cleanups run on a signal after the sessions' teardown (the tenants family's
/// volumes on a remote node, its directories on a target): id -> cleanup.
type Cleanup = Arc<dyn Fn() + Send + Sync>;
static CLEANUPS: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());
static NEXT_CLEANUP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A cleanup registered with [`on_signal`]; dropping it unregisters the cleanup (the
/// owner then cleans up itself, on its normal path).
pub struct CleanupGuard(u64);

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        let mut l = CLEANUPS.lock().unwrap_or_else(|p| p.into_inner());
        l.retain(|(id, _)| *id != self.0);
    }
}

/// Run `f` if a signal arrives while the guard lives (after the sessions are torn down,
/// before the process exits). Installs the handler thread.
pub fn on_signal(f: Cleanup) -> CleanupGuard {
    install();
    let id = NEXT_CLEANUP.fetch_add(1, Ordering::SeqCst);
    CLEANUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((id, f));
    CleanupGuard(id)
}

/// The signal that started a teardown, if one did (the process exits with 128 + it as
/// soon as the teardown is done).
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

pub(crate) fn register(t: Weak<dyn Teardown>) {
    let mut l = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    l.retain(|w| w.strong_count() > 0);
    l.push(t);
}

pub(crate) fn unregister(t: &Weak<dyn Teardown>) {
    let mut l = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    l.retain(|w| w.strong_count() > 0 && !Weak::ptr_eq(w, t));
}

/// Install the handler thread (once per process).
pub fn install() {
    INSTALL.call_once(|| {
        let Ok(mut signals) = Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            eprintln!("qoslab: cannot install signal handlers: mounts are torn down on exit only");
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("mounts-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    RECEIVED.store(sig, Ordering::SeqCst);
                    eprintln!("qoslab: signal {sig}: tearing down tenant mounts and volumes");
                    teardown_everything();
                    std::process::exit(128 + sig);
                }
            });
        if let Err(e) = spawned {
            eprintln!("qoslab: cannot start the signal thread: {e}");
        }
    });
}

/// Kill application processes, then undo every open session. Used by the signal thread.
pub fn teardown_everything() {
    children::kill_all();
    let live: Vec<Arc<dyn Teardown>> = LIVE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for inner in live {
        let u = inner.teardown_all();
        for e in &u.errors {
            eprintln!("qoslab: teardown: {e}");
        }
    }
    let cleanups: Vec<Cleanup> = CLEANUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|(_, f)| f.clone())
        .collect();
    for f in cleanups {
        f();
    }
}
