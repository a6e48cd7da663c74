//! The process's lifecycle: one owner of SIGINT, SIGTERM and SIGHUP, one ordered
//! teardown, one exit rule.
//!
//! Drop guards undo resources on success and failure (panics unwind); signals do not
//! unwind, so everything that must not outlive the process also registers an undo action
//! here, in the [`Phase`] it belongs to, and drops the [`Guard`] when it undid the
//! resource itself. [`install`] (once, in `main`) starts the one handler thread. When a
//! signal arrives:
//!
//! 1. If a command stops itself in order ([`graceful`]: `qoslab serve` finishes its
//!    in-flight requests), it is told to, and the process exits the way that command
//!    returns (`serve`: 0). A second signal goes on to step 2.
//! 2. Otherwise every registered action runs, phase by phase ([`Phase::ORDER`]: child
//!    processes, local mounts and loop devices, remote and REST clean-up, test
//!    infrastructure), newest first within a phase, each phase reported on stderr; then
//!    the process exits with **128 + the signal number** (130 for SIGINT, 143 for
//!    SIGTERM, 129 for SIGHUP) — the one exit rule, whatever registered what.
//!
//! SIGKILL cannot be caught: that case is each resource's stale clean-up in the next run,
//! and for child processes their parent-death signal ([`children::spawn`]).

pub mod children;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

/// When an action runs during teardown. The order matters: a busy file system cannot be
/// unmounted while a process sits in it, and a remote host may be reachable only through
/// test infrastructure that must go last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Local child processes (applications on tenant file systems, fio, servers).
    Children,
    /// Local mounts, loop devices, FUSE exports, this run's local files and directories.
    Local,
    /// Remote processes and directories (over ssh), ssh connections, objects made
    /// through a node's REST API.
    Remote,
    /// Test infrastructure the remote phase may still need: network namespaces, bridges,
    /// their sshd and loop devices (the testbed).
    Infrastructure,
}

impl Phase {
    /// Teardown order.
    pub const ORDER: [Phase; 4] = [
        Phase::Children,
        Phase::Local,
        Phase::Remote,
        Phase::Infrastructure,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Children => "child processes",
            Phase::Local => "local mounts and files",
            Phase::Remote => "remote and REST clean-up",
            Phase::Infrastructure => "test infrastructure",
        }
    }
}

type Action = Box<dyn FnOnce() + Send>;
type Stopper = Arc<dyn Fn(i32) + Send + Sync>;

/// Registered actions and graceful stoppers.
pub struct Registry {
    actions: Mutex<BTreeMap<u64, (Phase, Action)>>,
    stoppers: Mutex<BTreeMap<u64, Stopper>>,
    next: AtomicU64,
}

static GLOBAL: Registry = Registry::new();
static INSTALL: Once = Once::new();
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Set by the signal thread before it tears down (it then exits the process itself).
static TEARING_DOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The exit status after signal `sig`: 128 + its number.
pub fn exit_status(sig: i32) -> i32 {
    128 + sig
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a teardown did, per phase in order: (phase, actions run).
pub type Report = Vec<(Phase, usize)>;

impl Registry {
    pub const fn new() -> Registry {
        Registry {
            actions: Mutex::new(BTreeMap::new()),
            stoppers: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
        }
    }

    /// Run `action` in `phase` if the process is interrupted before the guard is dropped.
    pub fn register(&'static self, phase: Phase, action: impl FnOnce() + Send + 'static) -> Guard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.actions).insert(id, (phase, Box::new(action)));
        Guard { id, registry: self }
    }

    /// Call `stop` on the first signal instead of tearing down.
    pub fn graceful(&'static self, stop: impl Fn(i32) + Send + Sync + 'static) -> Guard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.stoppers).insert(id, Arc::new(stop));
        Guard { id, registry: self }
    }

    /// Run every registered action now, phase by phase (newest first within one), and
    /// forget them; `progress` is told before each phase and after it.
    pub fn teardown(&self, mut progress: impl FnMut(Phase, usize, bool)) -> Report {
        let actions = std::mem::take(&mut *lock(&self.actions));
        let mut by_phase: BTreeMap<Phase, Vec<Action>> = BTreeMap::new();
        for (_, (phase, a)) in actions.into_iter().rev() {
            by_phase.entry(phase).or_default().push(a);
        }
        let mut report = Vec::new();
        for phase in Phase::ORDER {
            let list = by_phase.remove(&phase).unwrap_or_default();
            let n = list.len();
            progress(phase, n, false);
            for a in list {
                // One action that panics must not keep the others (or the exit) from
                // running: the process is ending on a signal either way.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(a));
            }
            progress(phase, n, true);
            report.push((phase, n));
        }
        report
    }

    /// The graceful stoppers, if any command registered one.
    fn stoppers(&self) -> Vec<Stopper> {
        lock(&self.stoppers).values().cloned().collect()
    }

    fn unregister(&self, id: u64) {
        lock(&self.actions).remove(&id);
        lock(&self.stoppers).remove(&id);
    }
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

/// Removes its action (or stopper) when dropped, without running it: the owner undid the
/// resource itself.
#[must_use = "dropping the guard unregisters the action at once"]
pub struct Guard {
    id: u64,
    registry: &'static Registry,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.registry.unregister(self.id);
    }
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "lifecycle::Guard({})", self.id)
    }
}

/// Run `action` in `phase` if a signal ends the process before the guard is dropped.
pub fn register(phase: Phase, action: impl FnOnce() + Send + 'static) -> Guard {
    GLOBAL.register(phase, action)
}

/// A command that stops itself in order: on the first signal `stop(sig)` is called
/// instead of the teardown (the command finishes and returns; the process exits as it
/// returns). A second signal tears down and exits.
pub fn graceful(stop: impl Fn(i32) + Send + Sync + 'static) -> Guard {
    GLOBAL.graceful(stop)
}

/// The signal that ended (or is ending) the process, if one did.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Call before the process exits on its own: while a caught signal's teardown runs, the
/// process is the signal thread's to end (with 128 + the signal, once every phase is
/// done), so this never returns then. A command whose work stopped because the teardown
/// stopped its children (fio) would otherwise exit first, with its own status, in the
/// middle of the teardown.
pub fn wait_for_teardown() {
    if TEARING_DOWN.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

/// Whether [`install`] ran in this process.
pub fn installed() -> bool {
    INSTALL.is_completed()
}

/// Run the whole teardown now (the signal thread's work; tests).
pub fn teardown(sig: i32) -> Report {
    // Load generators first: they stop now, not when the process exits after the phases.
    children::stop_load_generators();
    GLOBAL.teardown(|phase, n, done| {
        if done {
            say(&format!(
                "qoslab: signal {sig}: teardown: {} done ({n} action(s))",
                phase.name()
            ));
        }
    })
}

/// A line on stderr that never panics: the signal thread must reach its exit when stderr
/// is a pipe nobody reads any more (its parent died: `eprintln!` would panic on EPIPE, and
/// the main thread, waiting for the teardown, would wait for ever).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Install the process's one handler for SIGINT, SIGTERM and SIGHUP (idempotent; call in
/// `main`).
pub fn install() {
    INSTALL.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(s) => s,
            Err(e) => {
                say(&format!("qoslab: cannot install signal handlers ({e}): resources are undone on normal exit only"));
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("qoslab-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    let first = RECEIVED
                        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                    let stoppers = GLOBAL.stoppers();
                    if first && !stoppers.is_empty() {
                        say(&format!(
                            "qoslab: signal {sig}: stopping (a second signal forces it)"
                        ));
                        for s in stoppers {
                            s(sig);
                        }
                        continue;
                    }
                    TEARING_DOWN.store(true, Ordering::SeqCst);
                    say(&format!("qoslab: signal {sig}: tearing down"));
                    let _ = std::panic::catch_unwind(|| teardown(sig));
                    say(&format!("qoslab: signal {sig}: exit {}", exit_status(sig)));
                    std::process::exit(exit_status(sig));
                }
            });
        if let Err(e) = spawned {
            say(&format!("qoslab: cannot start the signal thread: {e}"));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_in_order_newest_first_within_one_dropped_guards_never_run() {
        static R: Registry = Registry::new();
        let seen: Arc<Mutex<Vec<&'static str>>> = Arc::default();
        let rec = |what: &'static str| {
            let s = seen.clone();
            move || s.lock().unwrap().push(what)
        };
        // Registered out of phase order, as resources come and go in a run.
        let _a = R.register(Phase::Infrastructure, rec("testbed"));
        let _b = R.register(Phase::Remote, rec("ssh masters"));
        let _c = R.register(Phase::Local, rec("mount 1"));
        let _d = R.register(Phase::Remote, rec("remote process"));
        let _e = R.register(Phase::Children, rec("app"));
        let _f = R.register(Phase::Local, rec("mount 2"));
        drop(R.register(Phase::Children, rec("reaped app")));
        let mut progress = Vec::new();
        let report = R.teardown(|p, n, done| progress.push((p, n, done)));
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "app",
                "mount 2",
                "mount 1",
                "remote process",
                "ssh masters",
                "testbed"
            ]
        );
        assert_eq!(
            report,
            [
                (Phase::Children, 1),
                (Phase::Local, 2),
                (Phase::Remote, 2),
                (Phase::Infrastructure, 1)
            ]
        );
        assert_eq!(progress.len(), 8, "each phase reported before and after");
        // Everything ran once: a second teardown finds nothing.
        assert!(R.teardown(|_, _, _| {}).iter().all(|(_, n)| *n == 0));
    }

    #[test]
    fn graceful_stoppers_come_and_go_with_their_guard() {
        static R: Registry = Registry::new();
        let g = R.graceful(|_| {});
        assert_eq!(R.stoppers().len(), 1);
        drop(g);
        assert!(R.stoppers().is_empty());
        assert_eq!(exit_status(15), 143);
    }
}
