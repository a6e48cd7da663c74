//! The admission core: one front-end connection's state between "a request arrived" and
//! "its reply may leave". Sans-IO: no clock, no sleeping, no runtime (see the module
//! above for its life).

use std::collections::{BinaryHeap, HashMap, VecDeque};

use qos_core::Nanos;

use super::{Completed, Gates, Op, Started, Submitted, Work, TIMER_SLACK_NS};
use crate::provisioned::{Access, ConnCap};
use crate::scheduler::{Grant, GrantRx, Scheduler, Ticket, NO_FLOW};
use crate::stats::Waits;

/// A token whose time has come, with its timing.
#[derive(Debug)]
pub struct Ready<T> {
    pub token: T,
    pub started: Started,
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
    /// This connection's own grants of the last pump (kept for its capacity).
    own: Vec<Grant>,
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
    /// with it, and the grants others dispatch for it arrive in the returned mailbox
    /// (feed them to [`on_grant`](Self::on_grant); a [`Driver`](super::Driver) does).
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
            own: Vec::new(),
            early: 0,
        };
        (a, rx)
    }

    /// The scheduler (accounting, service latency, controller status).
    pub fn scheduler(&self) -> &Scheduler {
        &self.gates.scheduler
    }

    /// The gates it consults (for [`Gates::record`] and [`Gates::is_free`]).
    pub fn gates(&self) -> &Gates {
        &self.gates
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
    /// the last pump: its own grants are taken at once (no mailbox, no wake-up), the
    /// others' go to their connections. Returns whether it pumped.
    pub fn pump(&mut self, now: Nanos) -> bool {
        if !std::mem::take(&mut self.submitted) {
            return false;
        }
        let Some(conn) = self.ctl else {
            return false;
        };
        let mut own = std::mem::take(&mut self.own);
        self.gates.scheduler.pump_into(now, conn, &mut own);
        for g in own.drain(..) {
            self.on_grant(g, now);
        }
        self.own = own;
        true
    }

    /// [`pump`](Self::pump), then take the grants others dispatched for this connection
    /// from its mailbox `rx`.
    pub fn pump_own(&mut self, rx: &mut Option<GrantRx>, now: Nanos) {
        self.pump(now);
        if let Some(rx) = rx {
            while let Ok(g) = rx.try_recv() {
                self.on_grant(g, now);
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
        Ok(started.finished(now))
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
        Some((reply, started.completed(now)))
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
