//! [`Gate`]: an admission core for front ends that run each request in a task of its own
//! (S3, NFS). One gate is one [`Admission`] (one controller registration, one
//! single-flow limit: give each TCP connection its own where that limit applies, as NFS
//! does; S3's objects have no block identity and share one per endpoint) and one
//! [`Driver`] in a task that wakes the waiting requests: `let s = gate.admit(op).await;`
//! … the I/O … `gate.finish(s).await`, then [`Gate::record`].
//!
//! A request the gates let through returns from `admit` without leaving its task; one
//! nothing can hold ([`Gates::is_free`]) takes neither the core's lock nor a channel, and
//! one whose grant its own pump dispatched is handed it at once too. Only requests that must
//! wait (a ceiling's time, another connection's pump, a held reply) are woken by the
//! driver's task.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{oneshot, Notify};

use super::{Admission, Completed, Driver, Gates, Op, Started, Submitted, Work};
use crate::clock::Clock;
use crate::locks;
use crate::stats::VolumeStats;

type Core = Admission<oneshot::Sender<Started>, oneshot::Sender<Completed>>;

struct Shared {
    core: Mutex<Core>,
    /// Something new to wait for (a held request or reply): the driver re-arms.
    wake: Notify,
    clock: Clock,
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Core> {
        // The core's tables stay consistent if a holder panicked; keep serving.
        locks::lock(&self.core)
    }
}

/// An admission core shared by request tasks, driven by a task of its own. Create it
/// inside a tokio runtime (the driver's task stops when the gate is dropped).
pub struct Gate {
    shared: Arc<Shared>,
    gates: Gates,
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
        let (core, driver) = Driver::new(gates.clone(), clock);
        let shared = Arc::new(Shared {
            core: Mutex::new(core),
            wake: Notify::new(),
            clock,
        });
        let driver = tokio::spawn(drive(shared.clone(), driver));
        Gate {
            shared,
            gates,
            driver,
        }
    }

    /// Wait until every gate lets `op` through; do its I/O when this returns.
    pub async fn admit(&self, op: Op) -> Started {
        match self.try_admit(op) {
            Ok(s) => s,
            Err(w) => w.wait().await,
        }
    }

    /// [`admit`](Self::admit) without waiting: `Ok`: every gate lets `op` through now (or
    /// this gate's own pump granted it); `Err`: it is held, [`Admitting::wait`] for it
    /// (e.g. in a task of its own).
    pub fn try_admit(&self, op: Op) -> Result<Started, Admitting> {
        let now = self.shared.clock.now();
        if self.gates.is_free(&op) {
            // Nothing can hold it: the core would start it at once; skip its lock.
            return Ok(Started::at_once(now));
        }
        let mut waiting = None;
        {
            let mut core = self.shared.core();
            // The reply channel is made only for a request the core keeps.
            let token = || {
                let (tx, rx) = oneshot::channel();
                waiting = Some(rx);
                tx
            };
            if let Submitted::Now(s) = core.submit_with(op, now, token) {
                return Ok(s);
            }
            // Its own pump may have granted it (and others of this gate): hand them out.
            if core.pump(now) {
                while let Some(r) = core.take_ready(now) {
                    let _ = r.token.send(r.started);
                }
            }
        }
        // The core kept it, so it made the channel; else it was started (never reached).
        let Some(mut rx) = waiting else {
            return Ok(Started::at_once(now));
        };
        if let Ok(s) = rx.try_recv() {
            return Ok(s);
        }
        self.shared.wake.notify_one();
        Err(Admitting {
            rx,
            clock: self.shared.clock,
        })
    }

    /// The I/O of `started` is done: wait out the rest of its service latency; returns
    /// its timing for the statistics.
    pub async fn finish(&self, started: Started) -> Completed {
        match self.try_finish(started) {
            Ok(c) => c,
            Err(f) => f.wait().await,
        }
    }

    /// [`finish`](Self::finish) without waiting: `Ok`: reply now; `Err`: the service
    /// latency runs on, [`Finishing::wait`] for it.
    pub fn try_finish(&self, started: Started) -> Result<Completed, Finishing> {
        let now = self.shared.clock.now();
        if started.reply_at <= now {
            // Its reply time has come (always, for a request nothing held): no lock.
            return Ok(started.finished(now));
        }
        let rx = {
            let mut core = self.shared.core();
            match core.done(&started, now) {
                Ok(c) => return Ok(c),
                Err(_) => {
                    let (tx, rx) = oneshot::channel();
                    core.hold(started, tx);
                    rx
                }
            }
        };
        self.shared.wake.notify_one();
        Err(Finishing {
            rx,
            started,
            clock: self.shared.clock,
        })
    }

    /// Can nothing hold `op`? ([`Gates::is_free`]).
    pub fn is_free(&self, op: &Op) -> bool {
        self.gates.is_free(op)
    }

    /// Put a finished request that did `work` in `stats` ([`Gates::record`]).
    pub fn record(&self, done: &Completed, stats: &VolumeStats, work: Work) {
        self.gates.record(done, stats, work);
    }
}

/// A request [`Gate::try_admit`] holds.
pub struct Admitting {
    rx: oneshot::Receiver<Started>,
    clock: Clock,
}

impl Admitting {
    /// Wait until every gate lets it through; do its I/O then.
    pub async fn wait(self) -> Started {
        // The driver only goes away with the gate; a dropped sender would mean a request
        // given up: let it go rather than hang.
        self.rx
            .await
            .unwrap_or_else(|_| Started::at_once(self.clock.now()))
    }
}

/// A reply [`Gate::try_finish`] holds for the rest of its service latency.
pub struct Finishing {
    rx: oneshot::Receiver<Completed>,
    started: Started,
    clock: Clock,
}

impl Finishing {
    /// Wait until the reply may leave; its timing for the statistics.
    pub async fn wait(self) -> Completed {
        match self.rx.await {
            Ok(c) => c,
            Err(_) => self.started.completed(self.clock.now()),
        }
    }
}

/// The gate's driver: wakes requests and replies when their time comes.
async fn drive(shared: Arc<Shared>, mut driver: Driver) {
    loop {
        {
            let mut core = shared.core();
            let now = driver.turn(&mut core);
            while let Some(r) = core.take_ready(now) {
                // The request may have gone away (its client disconnected).
                let _ = r.token.send(r.started);
            }
            while let Some((tx, done)) = core.take_reply(now) {
                let _ = tx.send(done);
            }
            driver.arm(&core);
        }
        tokio::select! {
            _ = driver.wait(None) => {}
            _ = shared.wake.notified() => {}
        }
    }
}
