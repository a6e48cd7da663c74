//! [`Gate`]: the admission core for front ends that run each request in a task of its
//! own (the S3 endpoint; an NFS server whose operations are async functions). One gate
//! is one [`Admission`] (one controller registration, one single-flow limit: give each
//! NFS TCP connection its own) driven by a task that feeds it grants and wakes the
//! waiting requests: `let s = gate.admit(op).await;` … the I/O … `gate.finish(s).await`.
//! Replies held for the array's service latency wake on the precise timer.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{oneshot, Notify};

use super::{Admission, Completed, Gates, GrantRx, Op, Started, Submitted, TIMER_SLACK_NS};
use crate::clock::Clock;
use crate::timer::PreciseTimer;

type Core = Admission<oneshot::Sender<Started>, oneshot::Sender<Completed>>;

struct Shared {
    core: Mutex<Core>,
    /// Something new to wait for (a held request or reply): the driver recomputes.
    wake: Notify,
    clock: Clock,
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Core> {
        // The core's tables stay consistent if a holder panicked; keep serving.
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An async driver over one admission core. Create it inside a tokio runtime (it spawns
/// its driver task, stopped when the gate is dropped).
pub struct Gate {
    shared: Arc<Shared>,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.driver.abort();
        // Its connection is gone: what its ceilings still held is given back.
        let now = self.shared.clock.now();
        self.shared.core().abandon(now);
    }
}

impl Gate {
    pub fn new(gates: Gates, clock: Clock) -> Gate {
        let precise = gates.scheduler.precise_timers();
        let (core, grants) = Admission::new(gates);
        let shared = Arc::new(Shared {
            core: Mutex::new(core),
            wake: Notify::new(),
            clock,
        });
        let driver = tokio::spawn(drive(shared.clone(), grants, precise));
        Gate { shared, driver }
    }

    /// Wait until every gate lets `op` through; do its I/O when this returns.
    pub async fn admit(&self, op: Op) -> Started {
        let now = self.shared.clock.now();
        let (tx, rx) = oneshot::channel();
        let decided = {
            let mut core = self.shared.core();
            let d = core.submit(op, tx, now);
            core.pump(now);
            d
        };
        match decided {
            Submitted::Now(s) => s,
            Submitted::At(_) | Submitted::Parked => {
                self.shared.wake.notify_one();
                // The driver only goes away with the gate; a dropped sender would mean
                // a request given up: let it go rather than hang.
                rx.await
                    .unwrap_or_else(|_| Started::at_once(self.shared.clock.now()))
            }
        }
    }

    /// The I/O of `started` is done: wait out the rest of its service latency; returns
    /// its timing for the statistics.
    pub async fn finish(&self, started: Started) -> Completed {
        let now = self.shared.clock.now();
        let rx = {
            let mut core = self.shared.core();
            match core.done(&started, now) {
                Ok(c) => return c,
                Err(_) => {
                    let (tx, rx) = oneshot::channel();
                    core.hold(started, tx);
                    rx
                }
            }
        };
        self.shared.wake.notify_one();
        match rx.await {
            Ok(c) => c,
            Err(_) => Completed {
                latency_ns: self.shared.clock.now().saturating_sub(started.arrival),
                waits: started.waits,
                resource_ns: started.resource_ns,
                overrun_ns: None,
            },
        }
    }
}

/// Feeds the core its grants and wakes requests and replies when their time comes.
async fn drive(shared: Arc<Shared>, mut grants: Option<GrantRx>, precise: bool) {
    let mut timer = PreciseTimer::compensating(precise);
    let clock = shared.clock;
    loop {
        let (release, reply) = {
            let now = clock.now();
            let mut core = shared.core();
            core.set_early(timer.advance());
            while let Some(r) = core.take_ready(now) {
                // The request may have gone away (its client disconnected).
                let _ = r.token.send(r.started);
            }
            while let Some((tx, done)) = core.take_reply(now) {
                let _ = tx.send(done);
            }
            (core.next_release(), core.next_reply())
        };
        let sleep = async {
            match release {
                Some(at) => {
                    tokio::time::sleep_until(clock.instant(at.saturating_sub(TIMER_SLACK_NS))).await
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            Some(g) = recv(&mut grants) => {
                let now = clock.now();
                let mut core = shared.core();
                core.on_grant(g, now);
                while let Some(Ok(g)) = grants.as_mut().map(|rx| rx.try_recv()) {
                    core.on_grant(g, now);
                }
            }
            _ = sleep => {}
            _ = timer.wait_until(clock, reply.unwrap_or(0)), if reply.is_some() => {}
            _ = shared.wake.notified() => {}
        }
    }
}

async fn recv(rx: &mut Option<GrantRx>) -> Option<crate::scheduler::Grant> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
