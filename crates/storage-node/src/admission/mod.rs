//! The admission core: what every front end (NBD, S3, NFS) asks before and after a
//! request's I/O. Sans-IO: it never reads a clock (`now` is passed in), never sleeps and
//! never touches a socket or a file; tests drive it in virtual time (`tests`).
//!
//! One [`Admission`] per front-end connection (an NBD connection, an NFS TCP connection,
//! the S3 endpoint), over the node's shared [`Gates`]: the scheduler (ceilings, burst
//! credits, the emulated controller's mClock) and the provisioned file system (its
//! resources and this connection's single-flow limit). It knows no protocol: a request is
//! an [`Op`] (a flow, the work it does, optionally where) and an opaque token of the
//! front end's (`T`: whatever it needs to run the request later, e.g. NBD's header and
//! payload). Its life:
//!
//! 1. [`submit_with`](Admission::submit_with)`(op, now, token)` →
//!    * [`Submitted::Now`]: every gate lets it through; do the I/O now.
//!    * [`Submitted::At`]`(t)`: a ceiling or the file system's resources hold it until
//!      `t`; the core keeps the token.
//!    * [`Submitted::Parked`]: queued in the emulated controller until it grants it.
//! 2. The front end feeds the core: [`on_grant`](Admission::on_grant) for each grant
//!    arriving on the receiver [`Admission::new`] returned, [`pump`](Admission::pump)
//!    after a batch of submissions (dispatches what is due node-wide), and wakes at
//!    [`next_wake`](Admission::next_wake).
//! 3. [`take_ready`](Admission::take_ready)`(now)` hands back tokens whose time has come,
//!    each with its [`Started`]: do their I/O now.
//! 4. After the I/O, [`done`](Admission::done)`(&started, now)`: `Ok(Completed)` — reply
//!    now; `Err(t)` — the emulated array's service latency is not over: give the reply to
//!    [`hold`](Admission::hold) and take it back from [`take_reply`](Admission::take_reply)
//!    at `t`.
//!
//! **Service latency counts from admission.** The emulated array serves a request for its
//! configured time from the moment the controller dispatched it (or every gate let it
//! through): the host's own I/O runs inside that time and the reply leaves when it is
//! over. A request whose host I/O alone takes longer completes when its I/O does, and is
//! counted ([`Completed::overrun_ns`], `VolumeStats::service_overruns`, the metric
//! `qoslab_volume_service_overruns_total`).
//!
//! Queue time is split by cause in [`Started::waits`] (ceiling, floor) and
//! [`Started::resource_ns`] (the provisioned file system); [`Completed::record`] puts a
//! finished request into a volume's or bucket's statistics.
//!
//! Front ends that run each request in a task of its own (S3; an NFS server whose
//! handlers are async functions) use [`Gate`], an async driver over one core.

mod gate;
#[cfg(test)]
mod tests;

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use qos_core::Nanos;
/// Re-exported so a front end needs nothing but this module.
pub use qos_core::{Direction, MILLI};
use tokio::sync::mpsc;

pub use gate::Gate;

use crate::provisioned::{Access, ConnCap, ProvisionedFs};
use crate::scheduler::{Grant, Scheduler, Ticket, NO_FLOW};
use crate::stats::{OpKind, VolumeStats, Waits};

/// tokio's timers tick in milliseconds: a request whose start time is less than this far
/// away goes now instead of sleeping to the next tick. Early by at most 1 ms per request;
/// the pacer's schedule (and so the rate) is unchanged. Without it a 50,000 IOPS ceiling at
/// queue depth 16 measured 8% low: every request in flight could be parked for a whole
/// tick at once.
pub const TIMER_SLACK_NS: Nanos = 1_000_000;

/// Grants of the emulated controller, for one [`Admission`].
pub type GrantRx = mpsc::UnboundedReceiver<Grant>;

/// The node's shared gates: its scheduler and its provisioned file system, if any.
#[derive(Clone)]
pub struct Gates {
    pub scheduler: Arc<Scheduler>,
    pub fs: Option<Arc<ProvisionedFs>>,
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
}

/// A token whose time has come, with its timing.
#[derive(Debug)]
pub struct Ready<T> {
    pub token: T,
    pub started: Started,
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
    /// Record a finished request of `kind` that moved `bytes`, counted as `milliops`
    /// thousandths of an operation, in `stats`.
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

/// A token the core holds, with what it needs to release it.
struct Pending<T> {
    token: T,
    op: Op,
    arrival: Nanos,
    /// When QoS (the ceiling, or the controller's grant) released it: later waiting is
    /// the provisioned file system's.
    qos_until: Nanos,
    /// Queue time the controller's grant already split; `None`: all of it until release
    /// that is not the file system's is the ceiling's.
    waits: Option<Waits>,
}

/// A heap entry ordered by (time, sequence), earliest first.
struct Timed<X> {
    at: Nanos,
    seq: u64,
    item: X,
}

impl<X> PartialEq for Timed<X> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<X> Eq for Timed<X> {}
impl<X> PartialOrd for Timed<X> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<X> Ord for Timed<X> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // Reversed: BinaryHeap is a max-heap, the earliest must come out first.
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// One front-end connection's admission state. `T`: the front end's request token;
/// `R`: its finished reply, held while the array's service latency runs.
pub struct Admission<T, R> {
    gates: Gates,
    /// This connection's single-flow limit on the provisioned file system.
    cap: Option<ConnCap>,
    /// The controller registration (connection id), when the node has a controller.
    ctl: Option<u32>,
    seq: u64,
    /// Held until a time (a ceiling, the file system's resources).
    deferred: BinaryHeap<Timed<Pending<T>>>,
    /// Queued in the controller, by ticket sequence number.
    parked: HashMap<u64, Pending<T>>,
    /// Released, not yet taken.
    ready: VecDeque<Ready<T>>,
    /// Finished replies waiting for their service latency to pass.
    held: BinaryHeap<Timed<(R, Started)>>,
    /// Something was submitted to the controller since the last pump.
    submitted: bool,
    /// Replies due within this much of now go now (the precise timer's learned lateness).
    early: Nanos,
}

impl<T, R> Drop for Admission<T, R> {
    fn drop(&mut self) {
        if let Some(id) = self.ctl {
            // Its queued tickets go too: nobody waits for them.
            self.gates.scheduler.unregister(id);
        }
        for d in self.deferred.drain() {
            if d.item.waits.is_none() {
                self.gates.scheduler.ahead_done(d.item.op.flow, 0, false);
            }
        }
    }
}

impl<T, R> Admission<T, R> {
    /// A connection's admission over `gates`; under an emulated controller it registers
    /// with it, and its grants arrive on the returned receiver (feed them to
    /// [`on_grant`](Self::on_grant)).
    pub fn new(gates: Gates) -> (Admission<T, R>, Option<GrantRx>) {
        let (ctl, rx) = match gates.scheduler.register() {
            Some((id, rx)) => (Some(id), Some(rx)),
            None => (None, None),
        };
        let cap = gates.fs.as_ref().map(|fs| fs.connection());
        let a = Admission {
            gates,
            cap,
            ctl,
            seq: 0,
            deferred: BinaryHeap::new(),
            parked: HashMap::new(),
            ready: VecDeque::new(),
            held: BinaryHeap::new(),
            submitted: false,
            early: 0,
        };
        (a, rx)
    }

    /// The scheduler (accounting, service latency, controller status).
    pub fn scheduler(&self) -> &Scheduler {
        &self.gates.scheduler
    }

    /// Submit a request arriving at `now`. `token` is called only when the core keeps the
    /// request ([`Submitted::At`], [`Submitted::Parked`]); on [`Submitted::Now`] the
    /// caller still has everything and runs it at once.
    pub fn submit_with(&mut self, op: Op, now: Nanos, token: impl FnOnce() -> T) -> Submitted {
        let Some((dir, bytes)) = op.work.charged() else {
            return Submitted::Now(Started::at_once(now));
        };
        if let Some(conn) = self.ctl {
            if op.flow != NO_FLOW {
                self.seq += 1;
                let ticket = Ticket {
                    conn,
                    seq: self.seq,
                };
                if self
                    .gates
                    .scheduler
                    .submit(op.flow, ticket, dir, bytes, now)
                {
                    self.parked.insert(
                        self.seq,
                        Pending {
                            token: token(),
                            op,
                            arrival: now,
                            qos_until: now,
                            waits: None,
                        },
                    );
                    self.submitted = true;
                    return Submitted::Parked;
                }
            }
            // Between flows (a policy change in progress): nothing to queue behind.
            return Submitted::Now(self.start(op, now, now, Waits::default(), 0));
        }
        let sched = &self.gates.scheduler;
        let qos_until = sched.admit(op.flow, now, sched.milliops(bytes), bytes);
        let start = self.resources(&op, qos_until);
        if start <= now + TIMER_SLACK_NS {
            return Submitted::Now(self.start(op, now, now, Waits::default(), 0));
        }
        self.seq += 1;
        self.gates.scheduler.reserved_ahead(op.flow);
        self.deferred.push(Timed {
            at: start,
            seq: self.seq,
            item: Pending {
                token: token(),
                op,
                arrival: now,
                qos_until,
                waits: None,
            },
        });
        Submitted::At(start)
    }

    /// [`submit_with`](Self::submit_with) for a token at hand (dropped on `Now`).
    pub fn submit(&mut self, op: Op, token: T, now: Nanos) -> Submitted {
        self.submit_with(op, now, || token)
    }

    /// Dispatch what the controller has due, if this connection submitted anything since
    /// the last pump (its own grants then arrive on its receiver at once). Returns whether
    /// it pumped.
    pub fn pump(&mut self, now: Nanos) -> bool {
        if !std::mem::take(&mut self.submitted) {
            return false;
        }
        self.gates.scheduler.pump(now);
        true
    }

    /// [`pump`](Self::pump), then take this connection's own grants from `rx` at once.
    pub fn pump_own(&mut self, rx: &mut Option<GrantRx>, now: Nanos) {
        if self.pump(now) {
            if let Some(rx) = rx {
                while let Ok(g) = rx.try_recv() {
                    self.on_grant(g, now);
                }
            }
        }
    }

    /// The controller granted a parked request: it goes through the file system's
    /// resources, then becomes ready. Its queue time is split at the moment its ceiling
    /// allowed it (before: the ceiling's; after: the node's).
    pub fn on_grant(&mut self, g: Grant, now: Nanos) {
        let Some(p) = self.parked.remove(&g.seq) else {
            return;
        };
        let wait = now.saturating_sub(p.arrival);
        let ceiling_ns = g.limit_at.saturating_sub(p.arrival).min(wait);
        let waits = Waits {
            ceiling_ns,
            floor_ns: wait - ceiling_ns,
        };
        let start = self.resources(&p.op, now);
        if start > now + TIMER_SLACK_NS {
            self.seq += 1;
            self.deferred.push(Timed {
                at: start,
                seq: self.seq,
                item: Pending {
                    qos_until: now,
                    waits: Some(waits),
                    ..p
                },
            });
            return;
        }
        // The array serves it from the dispatch (its connection may pick it up later).
        let admitted = g.at.clamp(p.arrival, now);
        let started = self.start(p.op, p.arrival, admitted, waits, 0);
        self.ready.push_back(Ready {
            token: p.token,
            started,
        });
    }

    /// The next request whose time has come at `now` (due within [`TIMER_SLACK_NS`]).
    pub fn take_ready(&mut self, now: Nanos) -> Option<Ready<T>> {
        if let Some(r) = self.ready.pop_front() {
            return Some(r);
        }
        if self.deferred.peek()?.at > now + TIMER_SLACK_NS {
            return None;
        }
        let p = self.deferred.pop()?.item;
        if p.waits.is_none() {
            self.gates.scheduler.ahead_done(p.op.flow, now, false);
        }
        let total = now.saturating_sub(p.arrival);
        let resource_ns = now.saturating_sub(p.qos_until.max(p.arrival)).min(total);
        let waits = p.waits.unwrap_or(Waits {
            ceiling_ns: total - resource_ns,
            floor_ns: 0,
        });
        let started = self.start(p.op, p.arrival, now, waits, resource_ns);
        Some(Ready {
            token: p.token,
            started,
        })
    }

    /// The I/O of a started request finished at `now`: `Ok` — reply now; `Err(at)` — the
    /// service latency runs until `at`: [`hold`](Self::hold) the reply.
    pub fn done(&self, started: &Started, now: Nanos) -> Result<Completed, Nanos> {
        if started.reply_at > now.saturating_add(self.early) {
            return Err(started.reply_at);
        }
        let overrun = (started.reply_at > started.admitted && now > started.reply_at)
            .then(|| now - started.reply_at);
        Ok(Completed {
            latency_ns: now.saturating_sub(started.arrival),
            waits: started.waits,
            resource_ns: started.resource_ns,
            overrun_ns: overrun,
        })
    }

    /// Keep a finished reply until its service latency has passed.
    pub fn hold(&mut self, started: Started, reply: R) {
        self.seq += 1;
        self.held.push(Timed {
            at: started.reply_at,
            seq: self.seq,
            item: (reply, started),
        });
    }

    /// The next held reply due at `now` (within the learned lateness, see
    /// [`set_early`](Self::set_early)).
    pub fn take_reply(&mut self, now: Nanos) -> Option<(R, Completed)> {
        if self.held.peek()?.at > now.saturating_add(self.early) {
            return None;
        }
        let (reply, started) = self.held.pop()?.item;
        let done = Completed {
            latency_ns: now.saturating_sub(started.arrival),
            waits: started.waits,
            resource_ns: started.resource_ns,
            overrun_ns: None,
        };
        Some((reply, done))
    }

    /// Replies due within `ns` of now go now: the front end's timer wakes that late on
    /// average, so they then leave on time on average instead of one wake-up late.
    pub fn set_early(&mut self, ns: Nanos) {
        self.early = ns;
    }

    /// When a held request next becomes ready (call [`take_ready`](Self::take_ready)
    /// then); due requests may go [`TIMER_SLACK_NS`] early, so a coarse timer may wake
    /// that much before.
    pub fn next_release(&self) -> Option<Nanos> {
        if !self.ready.is_empty() {
            return Some(0);
        }
        self.deferred.peek().map(|d| d.at)
    }

    /// When the next held reply is due (call [`take_reply`](Self::take_reply) then).
    pub fn next_reply(&self) -> Option<Nanos> {
        self.held.peek().map(|h| h.at)
    }

    /// The earlier of [`next_release`](Self::next_release) and
    /// [`next_reply`](Self::next_reply).
    pub fn next_wake(&self) -> Option<Nanos> {
        match (self.next_release(), self.next_reply()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Requests queued in the controller.
    pub fn parked(&self) -> usize {
        self.parked.len()
    }

    /// Nothing held: no request waiting, ready or finished-and-held.
    pub fn is_idle(&self) -> bool {
        self.deferred.is_empty()
            && self.parked.is_empty()
            && self.ready.is_empty()
            && self.held.is_empty()
    }

    /// The connection went away at `now`: requests held by a ceiling will never start and
    /// are dropped; when they were the last ones waiting on their flow, its reservations
    /// are given back (a client that pipelined a backlog and left does not hold back the
    /// next one; while other connections still wait, their slots stand and nothing is).
    pub fn abandon(&mut self, now: Nanos) {
        for d in std::mem::take(&mut self.deferred).into_vec() {
            if d.item.waits.is_none() {
                self.gates.scheduler.ahead_done(d.item.op.flow, now, true);
            }
        }
    }

    /// Give up every request that has not started (shutting down): their tokens, parked
    /// ones first; held replies stay (their I/O is done).
    pub fn give_up(&mut self) -> Vec<T> {
        let mut out: Vec<T> = self.parked.drain().map(|(_, p)| p.token).collect();
        out.extend(self.ready.drain(..).map(|r| r.token));
        while let Some(d) = self.deferred.pop() {
            if d.item.waits.is_none() {
                self.gates.scheduler.ahead_done(d.item.op.flow, 0, false);
            }
            out.push(d.item.token);
        }
        out
    }

    /// Started now (`admitted`), replying after the array's service latency.
    fn start(
        &self,
        op: Op,
        arrival: Nanos,
        admitted: Nanos,
        waits: Waits,
        resource_ns: Nanos,
    ) -> Started {
        let service = op.work.charged().map_or(0, |(dir, bytes)| {
            self.gates.scheduler.service_latency(dir, bytes)
        });
        Started {
            arrival,
            admitted,
            reply_at: admitted.saturating_add(service),
            waits,
            resource_ns,
        }
    }

    /// The provisioned file system's say on a request QoS released at `at`: when its
    /// resources (and this connection's single-flow limit) allow it to start.
    fn resources(&mut self, op: &Op, at: Nanos) -> Nanos {
        let (Some(fs), Some(cap), Some(ext)) = (&self.gates.fs, &mut self.cap, op.extent) else {
            return at;
        };
        let (access, len) = match op.work {
            Work::Read(b) => (Access::Read, b),
            Work::Write(b) => (Access::Write, b),
            Work::Meta(_) | Work::Free => return at,
        };
        fs.admit(cap, ext.object, access, ext.offset, len, at)
    }
}
