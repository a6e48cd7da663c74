//! Things to undo when the process is interrupted.
//!
//! Drop guards undo on success and failure (panics unwind); signals do not unwind, so every
//! resource that must not outlive the process also registers an undo action here. The first
//! [`register`] installs one handler thread for SIGINT, SIGTERM and SIGHUP: it runs every
//! registered action (newest first), then lets the signal take its default effect (the
//! process ends with the usual status).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

type Action = Box<dyn FnOnce() + Send>;

/// A list of undo actions.
pub struct Registry {
    actions: Mutex<BTreeMap<u64, Action>>,
    next: AtomicU64,
}

static GLOBAL: Registry = Registry::new();
static INSTALL: Once = Once::new();

/// Removes its action from the list when dropped (without running it): the owner undoes
/// the resource itself on the normal path.
#[must_use = "dropping the guard unregisters the action at once"]
pub struct Guard {
    id: u64,
    registry: &'static Registry,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cleanup::Guard({})", self.id)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.id);
    }
}

impl Registry {
    pub const fn new() -> Registry {
        Registry {
            actions: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Action>> {
        self.actions.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&'static self, action: impl FnOnce() + Send + 'static) -> Guard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, Box::new(action));
        Guard { id, registry: self }
    }

    /// Run every registered action now (newest first) and forget them.
    pub fn run_all(&self) {
        let actions = std::mem::take(&mut *self.lock());
        for (_, a) in actions.into_iter().rev() {
            a();
        }
    }
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

/// Run `action` if the process is interrupted before the guard is dropped.
pub fn register(action: impl FnOnce() + Send + 'static) -> Guard {
    install();
    GLOBAL.register(action)
}

/// Run every registered action now (newest first) and forget them.
pub fn run_all() {
    GLOBAL.run_all();
}

fn install() {
    INSTALL.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("qoslab-cleanup".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    eprintln!("qoslab: signal {sig}: cleaning up");
                    run_all();
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn dropped_guards_do_not_run_and_live_ones_run_newest_first() {
        static R: Registry = Registry::new();
        let order = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicUsize::new(0));
        let (o1, o2, c) = (order.clone(), order.clone(), count.clone());
        let g1 = R.register(move || o1.lock().unwrap().push(1));
        let g2 = R.register(move || o2.lock().unwrap().push(2));
        drop(R.register(move || {
            c.fetch_add(1, Ordering::SeqCst);
        }));
        R.run_all();
        let seen: Vec<i32> = order.lock().unwrap().clone();
        assert_eq!(seen, vec![2, 1]);
        assert_eq!(count.load(Ordering::SeqCst), 0);
        drop((g1, g2));
    }
}
