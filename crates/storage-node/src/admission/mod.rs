//! Admission: what every front end (NBD, S3, NFS, any new one) asks before and after a
//! request's I/O. Two halves:
//!
//! * **The core** ([`Admission`], `core.rs`; with the [`Scheduler`] and the provisioned
//!   file system it consults): sans-IO. It never reads a clock (`now` is passed in),
//!   never sleeps, never touches a socket or a file and links no runtime; tests drive it
//!   in virtual time (`tests.rs`).
//! * **The driver** ([`Driver`], `driver.rs`): the one piece of tokio around a core —
//!   it takes the grants other connections dispatched for it, pumps after submissions,
//!   and sleeps until the core's next release (tokio's timer, a tick early) or its next
//!   held reply (the precise timer); it also runs the node's dispatcher. A front end that
//!   owns its connection loop (NBD) puts [`Driver::wait`] in its `select!`; one that runs
//!   each request in a task of its own (S3, NFS) uses [`Gate`], the same driver in a task.
//!
//! One core per NBD connection and per NFS TCP connection (S3: one for the endpoint;
//! `s3-server`'s `Endpoint` says why), over the node's shared [`Gates`]: the scheduler
//! (ceilings, burst credits, the emulated controller's mClock) and the provisioned file
//! system (its resources and this connection's single-flow limit). It knows no protocol: a request is an [`Op`] (a flow,
//! the [`Work`] it does, optionally where) and an opaque token of the front end's (`T`:
//! whatever it needs to run the request later, e.g. NBD's header and payload). Its life:
//!
//! 1. [`submit_with`](Admission::submit_with)`(op, now, token)` →
//!    * [`Submitted::Now`]: every gate lets it through; do the I/O now.
//!    * [`Submitted::At`]`(t)`: a ceiling or the file system's resources hold it until
//!      `t`; the core keeps the token.
//!    * [`Submitted::Parked`]: queued in the emulated controller until it grants it.
//! 2. [`pump`](Admission::pump) after a batch of submissions dispatches what is due
//!    node-wide; this connection's own grants come back from it directly, others' go to
//!    their mailboxes. Grants others dispatched for this one arrive in its mailbox
//!    ([`GrantRx`]) and go in through [`on_grant`](Admission::on_grant).
//! 3. [`take_ready`](Admission::take_ready)`(now)` hands back tokens whose time has come,
//!    each with its [`Started`]: do their I/O now.
//! 4. After the I/O, [`done`](Admission::done)`(&started, now)`: `Ok(Completed)` — reply
//!    now; `Err(t)` — the emulated array's service latency is not over: give the reply to
//!    [`hold`](Admission::hold) and take it back from [`take_reply`](Admission::take_reply)
//!    at `t`.
//! 5. [`Gates::record`] puts the finished request in its volume's or bucket's books,
//!    counted as the core charged it.
//!
//! **Service latency counts from admission.** The emulated array serves a request for its
//! configured time from the moment the controller dispatched it (or every gate let it
//! through): the host's own I/O runs inside that time and the reply leaves when it is
//! over. A request whose host I/O alone takes longer completes when its I/O does, and is
//! counted ([`Completed::overrun_ns`], `VolumeStats::service_overruns`, the metric
//! `qoslab_volume_service_overruns_total`).
//!
//! Queue time is split by cause in [`Started::waits`] (ceiling, floor) and
//! [`Started::resource_ns`] (the provisioned file system).

mod core;
mod driver;
mod gate;
#[cfg(test)]
mod tests;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use qos_core::Nanos;
/// Re-exported so a front end needs nothing but this module.
pub use qos_core::{Direction, MILLI};

pub use self::core::{Admission, Ready};
pub use crate::scheduler::GrantRx;
pub use driver::Driver;
pub use gate::{Admitting, Finishing, Gate};

use crate::provisioned::ProvisionedFs;
use crate::scheduler::{Scheduler, NO_FLOW};
use crate::stats::{OpKind, VolumeStats, Waits};

/// tokio's timers tick in milliseconds: a request whose start time is less than this far
/// away goes now instead of sleeping to the next tick. Early by at most 1 ms per request;
/// the pacer's schedule (and so the rate) is unchanged. Without it a 50,000 IOPS ceiling at
/// queue depth 16 measured 8% low: every request in flight could be parked for a whole
/// tick at once.
pub const TIMER_SLACK_NS: Nanos = 1_000_000;

/// The node's shared gates: its scheduler and its provisioned file system, if any.
#[derive(Clone)]
pub struct Gates {
    pub scheduler: Arc<Scheduler>,
    pub fs: Option<Arc<ProvisionedFs>>,
}

impl Gates {
    /// Can nothing hold `op` or delay its reply? No ceiling or controller on its flow, no
    /// file system in its way, no service latency. A front end may then run it without a
    /// core (inline, recorded with [`Completed::at_once`]).
    pub fn is_free(&self, op: &Op) -> bool {
        let Some((dir, bytes)) = op.work.charged() else {
            return true;
        };
        let s = &self.scheduler;
        op.flow == NO_FLOW
            && !s.controls()
            && (self.fs.is_none() || op.extent.is_none())
            && s.service_latency(dir, bytes) == 0
    }

    /// The books: put a finished request that did `work` in `stats`. Reads and writes
    /// count their bytes and the operations the node's I/O-size accounting charged them;
    /// everything else (metadata, free work) counts as one "other" operation.
    pub fn record(&self, done: &Completed, stats: &VolumeStats, work: Work) {
        let (kind, bytes, milliops) = match work {
            Work::Read(b) => (OpKind::Read, b, self.scheduler.milliops(b)),
            Work::Write(b) => (OpKind::Write, b, self.scheduler.milliops(b)),
            Work::Meta(_) | Work::Free => (OpKind::Other, 0, MILLI),
        };
        done.record(stats, kind, bytes, milliops);
    }
}

/// What a request does, as the QoS gates see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Moves `bytes` from the store to the client (NBD READ, NFS READ, S3 GET).
    Read(u64),
    /// Moves `bytes` from the client to the store (NBD WRITE, NFS WRITE, S3 PUT).
    Write(u64),
    /// Moves no data but counts as one operation of its direction: the array's cost and
    /// service latency of a zero-byte request (NBD TRIM and WRITE_ZEROES are writes; NFS
    /// GETATTR, LOOKUP, READDIR are reads, CREATE, SETATTR, REMOVE writes).
    Meta(Direction),
    /// Not counted and never held (NBD FLUSH, CACHE, BLOCK_STATUS).
    Free,
}

impl Work {
    /// The direction and bytes QoS charges; `None` for free work.
    pub fn charged(self) -> Option<(Direction, u64)> {
        match self {
            Work::Read(b) => Some((Direction::Read, b)),
            Work::Write(b) => Some((Direction::Write, b)),
            Work::Meta(d) => Some((d, 0)),
            Work::Free => None,
        }
    }
}

/// Where a request's bytes are, for the provisioned file system's caches: an object
/// unique in the process (a volume's id, a file's) and the offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub object: u64,
    pub offset: u64,
}

/// A request as the admission core sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// The scheduler flow of its volume or bucket ([`NO_FLOW`]: none).
    pub flow: u32,
    pub work: Work,
    /// Where its bytes are; `None` skips the provisioned file system (no block identity).
    pub extent: Option<Extent>,
}

impl Op {
    pub fn new(flow: u32, work: Work) -> Op {
        Op {
            flow,
            work,
            extent: None,
        }
    }

    /// The same op, at `offset` of `object`.
    pub fn at(self, object: u64, offset: u64) -> Op {
        Op {
            extent: Some(Extent { object, offset }),
            ..self
        }
    }
}

/// What [`Admission::submit_with`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// Every gate lets it through: do the I/O now.
    Now(Started),
    /// Held by a ceiling or the file system's resources until this time.
    At(Nanos),
    /// Queued in the emulated controller until it grants it.
    Parked,
}

/// A request every gate let through: do its I/O now; its reply may leave at `reply_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// When the front end submitted it.
    pub arrival: Nanos,
    /// When the last gate let it through (the controller's dispatch, else now).
    pub admitted: Nanos,
    /// `admitted` + the emulated array's service latency (`admitted` when none).
    pub reply_at: Nanos,
    /// Queue time by the ceiling and by the node (others' floors and shares).
    pub waits: Waits,
    /// Queue time by the provisioned file system's resources.
    pub resource_ns: Nanos,
}

impl Started {
    pub(crate) fn at_once(now: Nanos) -> Started {
        Started {
            arrival: now,
            admitted: now,
            reply_at: now,
            waits: Waits::default(),
            resource_ns: 0,
        }
    }

    /// Its I/O finished at `now`, its reply time come: its timing, with the time the I/O
    /// outlasted the service latency (if it had one).
    pub(crate) fn finished(&self, now: Nanos) -> Completed {
        let overrun =
            (self.reply_at > self.admitted && now > self.reply_at).then(|| now - self.reply_at);
        Completed {
            overrun_ns: overrun,
            ..self.completed(now)
        }
    }

    /// Finished at `now` with no wait of any kind (a reply held to its time, or a request
    /// given up while held).
    pub(crate) fn completed(&self, now: Nanos) -> Completed {
        Completed {
            latency_ns: now.saturating_sub(self.arrival),
            waits: self.waits,
            resource_ns: self.resource_ns,
            overrun_ns: None,
        }
    }
}

/// A finished request's timing, for the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    /// From arrival to the reply.
    pub latency_ns: Nanos,
    pub waits: Waits,
    pub resource_ns: Nanos,
    /// The host's I/O outlasted the service latency by this much: the reply left when the
    /// I/O finished (counted in the statistics).
    pub overrun_ns: Option<Nanos>,
}

impl Completed {
    /// A request nothing could hold ([`Gates::is_free`]) that arrived at `arrival` and
    /// finished at `now`.
    pub fn at_once(arrival: Nanos, now: Nanos) -> Completed {
        Started::at_once(arrival).completed(now)
    }

    /// Record a finished request of `kind` that moved `bytes`, counted as `milliops`
    /// thousandths of an operation, in `stats` ([`Gates::record`] says which).
    pub fn record(&self, stats: &VolumeStats, kind: OpKind, bytes: u64, milliops: u64) {
        if self.resource_ns > 0 {
            stats.resource_wait_ns.fetch_add(self.resource_ns, Relaxed);
        }
        if let Some(o) = self.overrun_ns {
            stats.service_overruns.fetch_add(1, Relaxed);
            stats.service_overrun_ns.fetch_add(o, Relaxed);
        }
        stats.record_counted(kind, bytes, milliops, self.latency_ns, self.waits);
    }
}
