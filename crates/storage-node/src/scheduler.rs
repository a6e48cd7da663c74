//! Wiring between volumes and the QoS core: the node-wide scheduler.
//!
//! Two modes, fixed when the node starts:
//!
//! * **Ceilings only** (no node capacity declared): each rate-limited volume (or shared
//!   fixed policy group) is a *flow* owning a [`Pacer`]; a request's start time is
//!   computed when it arrives ([`Scheduler::admit`]). Unlimited volumes have no flow and
//!   never take the lock. The node runs at the backend's real speed; floors are reported
//!   but cannot be enforced (there is no capacity to divide).
//! * **Emulated controller** (`[capacity]` in node.toml, or `serve --calibrate`): every
//!   volume (or shared group) is a flow of one node-wide [`MClock`] whose budget is the
//!   declared capacity. Requests are queued ([`Scheduler::submit`]) and dispatched in
//!   mClock order ([`Scheduler::pump`]): floors first, then shares of what is left,
//!   ceilings always. A dispatched request is handed to its connection as a [`Grant`]
//!   through the channel the connection registered. Whoever submits pumps; a dispatcher
//!   task pumps when the next tag falls due and nobody else is around.
//!
//! What a request counts for and costs comes from the array settings of `[capacity]`
//! ([`ArraySpec`]): its I/O-size accounting (ops counted against ceilings, floors and
//! the controller, held in thousandths: pacers run at `iops × MILLI`), the array's cost
//! model (per direction and size, in capacity units of a 4 KiB read) and its service
//! latency (how long a dispatched request takes; the connection holds it that long).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use qos_core::{
    Burst, Charge, CreditStatus, Direction, FlowId, FlowSpec, MClock, Nanos, Pacer, Rate,
};

use crate::config::{ArraySpec, Capacity, Discipline};
use crate::locks::lock;

/// Flow id of a volume without a flow (ceilings-only mode, no ceiling).
pub const NO_FLOW: u32 = u32::MAX;

/// Floors may run this far ahead of the controller's budget and of their own reservation
/// schedule: a floor's request never waits for the dispatcher's next timer tick (tokio's
/// timers tick in ms), and a client offering exactly its floor may be bursty by up to
/// this much (5 ms: the same tolerance ceilings have). Over longer windows neither the
/// capacity nor any floor changes.
pub const RESERVATION_LOOKAHEAD_NS: Nanos = 5_000_000;

/// What the scheduler needs to know about a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowQos {
    pub ceiling: Rate,
    pub floor: Rate,
    /// Share of what is left after floors (0 counts as 1).
    pub weight: u32,
    /// Burst credits over the ceiling (the ceiling is then the baseline).
    pub burst: Burst,
}

impl FlowQos {
    fn spec(&self) -> FlowSpec {
        FlowSpec {
            reservation: self.floor,
            limit: self.ceiling,
            weight: self.weight.max(1),
        }
    }
}

/// A queued request's identity: the connection that owns it and its sequence number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    pub conn: u32,
    pub seq: u64,
}

/// A dispatched request, sent to its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub seq: u64,
    /// When the flow's ceiling allowed it: queue time up to here is the ceiling's, the
    /// rest is the node's (others' floors and shares).
    pub limit_at: Nanos,
    /// When the controller dispatched it: the array starts serving it here (its service
    /// latency counts from this moment, however late its connection picks the grant up).
    pub at: Nanos,
}

/// A snapshot of the emulated controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ControllerStatus {
    pub capacity: Capacity,
    /// Sum of the floors of all flows, as declared (FIFO: reported, not enforced).
    pub reserved: Rate,
    /// `Some(scale)` when floors exceed the capacity and are scaled by `scale`.
    pub overcommit: Option<f64>,
    /// Requests waiting in the controller right now.
    pub queued: usize,
}

/// The node-wide scheduler.
pub struct Scheduler {
    pacers: Mutex<Vec<Option<Pacer>>>,
    /// Ceilings-only mode: requests waiting for a reserved slot, by flow.
    ahead: Mutex<HashMap<u32, usize>>,
    controller: Option<Arc<Controller>>,
    /// Accounting, cost model and service latency.
    array: ArraySpec,
    /// The controller's capacity in ops per second (its cost unit), 0 when unlimited.
    capacity_iops: u64,
    /// `[capacity] cost_unit`, for whole accounting without a cost model.
    cost_unit: u64,
    /// Service latency waits on a precise timer (timerfd); false: tokio's timer (1 ms
    /// ticks; for tests on tokio's paused clock).
    precise_timers: std::sync::atomic::AtomicBool,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler::new(None)
    }
}

/// A one-shot wake-up between threads without a runtime: [`Signal::notify`] wakes the
/// task polling [`Signal::poll`], or the next one to poll (the notice is kept).
#[derive(Default)]
pub struct Signal {
    state: Mutex<(bool, Option<Waker>)>,
}

impl Signal {
    pub fn notify(&self) {
        let w = {
            let mut st = lock(&self.state);
            st.0 = true;
            st.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }

    /// Ready once notified since the last ready poll.
    pub fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = lock(&self.state);
        if std::mem::take(&mut st.0) {
            return Poll::Ready(());
        }
        st.1 = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// One connection's grants, put there by whoever pumped the controller (another
/// connection, the dispatcher); the connection's own pumps hand it its grants directly.
#[derive(Default)]
pub struct Mailbox {
    state: Mutex<(VecDeque<Grant>, Option<Waker>)>,
}

impl Mailbox {
    fn put(&self, g: Grant) {
        let w = {
            let mut st = lock(&self.state);
            st.0.push_back(g);
            st.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
}

/// The receiving end of a connection's [`Mailbox`].
pub struct GrantRx(Arc<Mailbox>);

/// [`GrantRx::try_recv`] found no grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Empty;

impl GrantRx {
    /// The oldest grant waiting, if any.
    pub fn try_recv(&mut self) -> Result<Grant, Empty> {
        lock(&self.0.state).0.pop_front().ok_or(Empty)
    }

    /// Ready when a grant is waiting (take it with [`try_recv`](Self::try_recv));
    /// otherwise the task is woken when one arrives.
    pub fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = lock(&self.0.state);
        if !st.0.is_empty() {
            return Poll::Ready(());
        }
        st.1 = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// The emulated controller: an mClock over the node's declared capacity.
pub struct Controller {
    inner: Mutex<Inner>,
    capacity: Capacity,
    /// Told when an earlier deadline appears (the dispatcher re-arms).
    rearm: Signal,
    /// The deadline the dispatcher sleeps towards (`u64::MAX`: none).
    armed: AtomicU64,
    /// Some driver runs the dispatcher already.
    dispatcher: AtomicBool,
}

impl Drop for Controller {
    fn drop(&mut self) {
        // The dispatcher sees the scheduler gone and ends.
        self.rearm.notify();
    }
}

struct Inner {
    mc: MClock<Ticket>,
    /// Registered connections' mailboxes, by connection id. Ids are never reused: a
    /// closed connection's tickets still in the queues must not reach a newer connection
    /// (whose sequence numbers start from 1 too).
    conns: HashMap<u32, Arc<Mailbox>>,
    next_conn: u32,
}

impl Scheduler {
    /// A scheduler; with `capacity` it is an emulated controller (mClock).
    pub fn new(capacity: Option<Capacity>) -> Scheduler {
        Scheduler::with_array(capacity, ArraySpec::default())
    }

    /// A scheduler with an array's accounting, cost model and service latency. It is an
    /// emulated controller when `capacity` limits something or the array has a cost
    /// model or a service latency.
    pub fn with_array(capacity: Option<Capacity>, array: ArraySpec) -> Scheduler {
        let cost_unit = capacity.map_or(crate::config::DEFAULT_COST_UNIT, |c| c.cost_unit);
        let capacity = match capacity.filter(Capacity::is_set) {
            Some(c) => Some(c),
            None if array.needs_controller() => Some(capacity.unwrap_or_default()),
            None => None,
        };
        let rate = |cap: &Capacity| match &array.model {
            Some(m) => Rate {
                iops: m.capacity_iops(),
                bytes_per_sec: 0,
            },
            None => cap.rate(),
        };
        let capacity_iops = capacity.as_ref().map_or(0, |c| rate(c).iops);
        let controller = capacity.map(|cap| {
            let r = rate(&cap);
            Arc::new(Controller {
                inner: Mutex::new(Inner {
                    // Ceilings keep the pacer's burst window in both modes: a client at
                    // queue depth 4 below its ceiling is not spaced out by it.
                    mc: match cap.discipline {
                        Discipline::Mclock => MClock::new(r, cap.cost_unit)
                            .with_reservation_lookahead(RESERVATION_LOOKAHEAD_NS),
                        Discipline::Fifo => MClock::fifo(r, cap.cost_unit),
                    }
                    .with_limit_lookahead(qos_core::BURST_WINDOW),
                    conns: HashMap::new(),
                    next_conn: 0,
                }),
                // With a cost model, the capacity is the array's own, in 4 KiB reads.
                capacity: Capacity {
                    iops: r.iops,
                    mbps: r.bytes_per_sec >> 20,
                    ..cap
                },
                rearm: Signal::default(),
                armed: AtomicU64::new(u64::MAX),
                dispatcher: AtomicBool::new(false),
            })
        });
        Scheduler {
            pacers: Mutex::new(Vec::new()),
            ahead: Mutex::new(HashMap::new()),
            controller,
            array,
            capacity_iops,
            cost_unit,
            precise_timers: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// The array settings (accounting, cost model, service latency).
    pub fn array(&self) -> &ArraySpec {
        &self.array
    }

    /// Operations a request of `bytes` counts for, in thousandths ([`MILLI`](qos_core::MILLI)).
    pub fn milliops(&self, bytes: u64) -> u64 {
        self.array.accounting.milliops(bytes)
    }

    /// What a request counts for and costs: counted ops against its flow, and against
    /// the controller the array model's time (in 4 KiB reads), else with whole
    /// accounting `max(1, bytes / cost_unit)`, else the counted ops.
    pub fn charge(&self, dir: Direction, bytes: u64) -> Charge {
        let ops = self.array.accounting.ops(bytes);
        let cost = match &self.array.model {
            Some(m) => m.cost_ns(dir, bytes) * self.capacity_iops as f64 / 1e9,
            None if self.array.accounting.is_whole() => {
                bytes.checked_div(self.cost_unit).unwrap_or(1).max(1) as f64
            }
            None => ops,
        };
        Charge { ops, bytes, cost }
    }

    /// How long the array takes to serve a dispatched request (0: no service latency).
    pub fn service_latency(&self, dir: Direction, bytes: u64) -> Nanos {
        self.array.latency.at(dir, bytes)
    }

    /// Whether service latency waits on a precise timer (the default).
    pub fn precise_timers(&self) -> bool {
        self.precise_timers.load(Relaxed)
    }

    /// Wait for service latency on tokio's timer instead of a precise one: for tests on
    /// tokio's paused clock (a precise timer runs on the real clock). Tokio's timer ticks
    /// in milliseconds, so each wait rounds up to the next tick.
    pub fn use_tokio_timers(&self) {
        self.precise_timers.store(false, Relaxed);
    }

    /// Is this an emulated controller (mClock, floors enforced)?
    pub fn controls(&self) -> bool {
        self.controller.is_some()
    }

    /// Does a volume with these limits need a flow? Under a controller every volume
    /// does (its I/O uses the node's capacity); otherwise only volumes with a ceiling.
    pub fn needs_flow(&self, q: &FlowQos) -> bool {
        self.controls() || q.ceiling != Rate::UNLIMITED
    }

    /// The controller's state for the API and metrics (`None`: ceilings-only mode).
    pub fn status(&self) -> Option<ControllerStatus> {
        let c = self.controller.as_ref()?;
        let inner = c.lock();
        Some(ControllerStatus {
            capacity: c.capacity,
            reserved: inner.mc.reserved(),
            overcommit: inner.mc.overcommit(),
            queued: inner.mc.queued(),
        })
    }

    /// Reservation scale factor when floors add up to more than the capacity.
    pub fn overcommit(&self) -> Option<f64> {
        self.controller
            .as_ref()
            .and_then(|c| c.lock().mc.overcommit())
    }

    /// Allocate a flow; returns its id.
    pub fn create_flow(&self, q: FlowQos, now: Nanos) -> u32 {
        if let Some(c) = &self.controller {
            let id = {
                let mut inner = c.lock();
                let id = inner.mc.add_flow(q.spec(), now);
                inner.mc.set_burst(id, q.burst, now);
                id
            };
            c.log_overcommit();
            return id.0;
        }
        let mut flows = lock(&self.pacers);
        // IOPS in thousandths (the accounting counts them), and so are its credits.
        let pacer = Some(Pacer::with_burst(
            q.ceiling.in_milliops(),
            q.burst.in_milliops(),
            now,
        ));
        if let Some(i) = flows.iter().position(Option::is_none) {
            flows[i] = pacer;
            i as u32
        } else {
            flows.push(pacer);
            (flows.len() - 1) as u32
        }
    }

    /// Change a flow's limits in place (live policy changes).
    pub fn set_flow(&self, flow: u32, q: FlowQos, now: Nanos) {
        if let Some(c) = &self.controller {
            let changed = {
                let mut inner = c.lock();
                let before = inner.mc.overcommit();
                inner.mc.set_flow(FlowId(flow), q.spec(), now);
                inner.mc.set_burst(FlowId(flow), q.burst, now);
                before != inner.mc.overcommit()
            };
            if changed {
                c.log_overcommit();
            }
            return;
        }
        if let Some(Some(p)) = lock(&self.pacers).get_mut(flow as usize) {
            p.set_limits(q.ceiling.in_milliops(), q.burst.in_milliops(), now);
        }
    }

    /// A flow's burst buckets at `now`: (IOPS, bytes); `None` where it does not burst (or
    /// there is no such flow).
    pub fn credits(&self, flow: u32, now: Nanos) -> (Option<CreditStatus>, Option<CreditStatus>) {
        if flow == NO_FLOW {
            return (None, None);
        }
        if let Some(c) = &self.controller {
            return c.lock().mc.credit_status(FlowId(flow), now);
        }
        match lock(&self.pacers).get(flow as usize) {
            Some(Some(p)) => {
                let (o, b) = p.credit_status(now);
                (o.map(CreditStatus::from_milliops), b)
            }
            _ => (None, None),
        }
    }

    /// Remove a flow at `now`. Under a controller its queued requests are granted at once
    /// (the volume is moving to another policy or going away; they must not hang).
    pub fn remove_flow(&self, flow: u32, now: Nanos) {
        if let Some(c) = &self.controller {
            let mut inner = c.lock();
            let dropped = inner.mc.remove_flow(FlowId(flow));
            for t in dropped {
                if let Some(mb) = inner.conns.get(&t.conn) {
                    mb.put(Grant {
                        seq: t.seq,
                        limit_at: now,
                        at: now,
                    });
                }
            }
            return;
        }
        if let Some(slot) = lock(&self.pacers).get_mut(flow as usize) {
            *slot = None;
        }
    }

    /// Ceilings-only mode: when may a request counting `milliops` thousandths of an
    /// operation ([`Scheduler::milliops`]) and `bytes` on `flow`, arriving at `now`, start?
    pub fn admit(&self, flow: u32, now: Nanos, milliops: u64, bytes: u64) -> Nanos {
        if flow == NO_FLOW {
            return now;
        }
        match lock(&self.pacers).get_mut(flow as usize) {
            Some(Some(p)) => p.admit(now, milliops, bytes),
            _ => now,
        }
    }

    /// Ceilings-only mode: a request of `flow` was reserved a slot ahead (it waits for it).
    pub fn reserved_ahead(&self, flow: u32) {
        if flow != NO_FLOW {
            *lock(&self.ahead).entry(flow).or_insert(0) += 1;
        }
    }

    /// Ceilings-only mode: a request reserved ahead started (`abandoned`: false) or will
    /// never start (its client went away). When the last request waiting on the flow was
    /// abandoned, nobody holds a later slot: the flow's horizon comes back to `now`, so
    /// the next client is not held behind requests that will never run.
    pub fn ahead_done(&self, flow: u32, now: Nanos, abandoned: bool) {
        if flow == NO_FLOW {
            return;
        }
        let left = {
            let mut m = lock(&self.ahead);
            let n = m.entry(flow).or_insert(0);
            *n = n.saturating_sub(1);
            let left = *n;
            if left == 0 {
                m.remove(&flow);
            }
            left
        };
        if abandoned && left == 0 {
            if let Some(Some(p)) = lock(&self.pacers).get_mut(flow as usize) {
                p.forget_ahead(now);
            }
        }
    }

    /// Controller mode: register a connection; grants others dispatch for it arrive in
    /// its mailbox (the receiver).
    pub fn register(&self) -> Option<(u32, GrantRx)> {
        let c = self.controller.as_ref()?;
        let mb = Arc::new(Mailbox::default());
        let mut inner = c.lock();
        let id = inner.next_conn;
        inner.next_conn = id.wrapping_add(1);
        inner.conns.insert(id, mb.clone());
        Some((id, GrantRx(mb)))
    }

    /// Controller mode: `true` to the first caller only, who then runs the dispatcher
    /// (pumps at each deadline [`dispatch`](Self::dispatch) returns until the scheduler is
    /// dropped).
    pub fn claim_dispatcher(&self) -> bool {
        self.controller
            .as_ref()
            .is_some_and(|c| !c.dispatcher.swap(true, Relaxed))
    }

    /// The dispatcher's step: pump at `now`; returns the next deadline to pump at.
    pub fn dispatch(&self, now: Nanos) -> Option<Nanos> {
        let c = self.controller.as_ref()?;
        let next = c.pump(now, None, &mut Vec::new());
        c.armed.store(next.unwrap_or(u64::MAX), Relaxed);
        next
    }

    /// Ready when a pump found a deadline earlier than the one the dispatcher sleeps
    /// towards (it should [`dispatch`](Self::dispatch) again).
    pub fn poll_rearm(&self, cx: &mut Context<'_>) -> Poll<()> {
        match &self.controller {
            Some(c) => c.rearm.poll(cx),
            None => Poll::Pending,
        }
    }

    /// Controller mode: forget a connection and drop its queued tickets (a client that
    /// went away must not hold back the next one behind requests nobody waits for).
    pub fn unregister(&self, conn: u32) {
        if let Some(c) = &self.controller {
            let mut inner = c.lock();
            inner.conns.remove(&conn);
            inner.mc.retain(|t| t.conn != conn);
        }
    }

    /// Controller mode: queue a request of `bytes` in direction `dir` on `flow`, charged
    /// by [`Scheduler::charge`]. `false` if the flow is gone.
    pub fn submit(
        &self,
        flow: u32,
        ticket: Ticket,
        dir: Direction,
        bytes: u64,
        now: Nanos,
    ) -> bool {
        let charge = self.charge(dir, bytes);
        match &self.controller {
            Some(c) => c
                .lock()
                .mc
                .enqueue_charged(FlowId(flow), ticket, charge, now)
                .is_ok(),
            None => false,
        }
    }

    /// Controller mode: dispatch everything due at `now`, putting each grant in its
    /// connection's mailbox, and re-arm the dispatcher for the next deadline (returned:
    /// when the next queued request falls due).
    pub fn pump(&self, now: Nanos) -> Option<Nanos> {
        self.controller
            .as_ref()
            .and_then(|c| c.pump(now, None, &mut Vec::new()))
    }

    /// [`pump`](Self::pump) by connection `own`: its own grants are appended to `out`
    /// (no mailbox, no wake-up), the others' go to their mailboxes.
    pub fn pump_into(&self, now: Nanos, own: u32, out: &mut Vec<Grant>) -> Option<Nanos> {
        self.controller
            .as_ref()
            .and_then(|c| c.pump(now, Some(own), out))
    }
}

impl Controller {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    fn log_overcommit(&self) {
        match self.lock().mc.overcommit() {
            Some(f) => tracing::warn!(
                scale = format!("{f:.3}"),
                "floors add up to more than the node's capacity; every floor is scaled by this factor"
            ),
            None => tracing::debug!("floors fit the node's capacity"),
        }
    }

    /// Dispatch what is due: grants of connection `own` into `out`, the others' into
    /// their mailboxes; returns the next deadline.
    fn pump(&self, now: Nanos, own: Option<u32>, out: &mut Vec<Grant>) -> Option<Nanos> {
        let next = {
            let mut inner = self.lock();
            let Inner { mc, conns, .. } = &mut *inner;
            // No look-ahead: dispatching early would spend the node's budget before a
            // floor's request arrives, which then waits for the next tick. Late wake-ups
            // lose nothing: the budget carries up to NODE_BURST, and ceilings and floors
            // may run 5 ms ahead of their tags.
            while let Some(d) = mc.dequeue(now) {
                let g = Grant {
                    seq: d.token.seq,
                    limit_at: d.limit_at,
                    at: now,
                };
                if own == Some(d.token.conn) {
                    out.push(g);
                } else if let Some(mb) = conns.get(&d.token.conn) {
                    // A connection that went away has no mailbox: nothing to reply to.
                    mb.put(g);
                }
            }
            mc.next_wakeup(now)
        };
        let at = next.unwrap_or(u64::MAX);
        if at < self.armed.load(Relaxed) {
            self.armed.store(at, Relaxed);
            self.rearm.notify();
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NodeConfig;

    fn scheduler(capacity: &str) -> Scheduler {
        let cfg = NodeConfig::parse(&format!("[capacity]\n{capacity}\n"), "t").unwrap();
        Scheduler::with_array(cfg.capacity, cfg.array)
    }

    #[test]
    fn what_a_request_costs() {
        const K: u64 = 1024;
        // Whole: one op against the flow; the controller keeps cost_unit (today's rule).
        let s = scheduler("iops = 20000\ncost_unit = \"32KiB\"");
        assert_eq!(s.milliops(1 << 20), 1000);
        let c = s.charge(Direction::Read, 1 << 20);
        assert_eq!((c.ops, c.cost), (1.0, 32.0));
        assert_eq!(s.charge(Direction::Write, 4 * K).cost, 1.0);
        // transfer:64KiB: ceilings, floors and the controller count the same transfers.
        let s = scheduler("iops = 20000\nio_accounting = \"transfer\"");
        assert_eq!(s.milliops(128 * K), 2000);
        let c = s.charge(Direction::Read, 1 << 20);
        assert_eq!((c.ops, c.cost), (16.0, 16.0));
        assert_eq!(s.charge(Direction::Write, 0).ops, 1.0);
        // SolidFire's curve.
        let s = scheduler("iops = 20000\nio_accounting = \"solidfire\"");
        assert_eq!(s.charge(Direction::Read, 8 * K).cost, 1.6);
        // An array model: the controller counts array time in 4 KiB reads; the flow
        // still counts the accounting's operations.
        let s = scheduler(
            "io_accounting = \"transfer\"\nread = { 4KiB = \"10000iops\" }\nwrite = { 4KiB = \"5000iops\" }",
        );
        assert_eq!(s.status().unwrap().capacity.iops, 10_000);
        let c = s.charge(Direction::Write, 4 * K);
        assert_eq!((c.ops, c.cost), (1.0, 2.0));
        let c = s.charge(Direction::Read, 128 * K);
        assert_eq!(c.ops, 2.0);
        assert!((c.cost - 32.0).abs() < 1e-9, "{c:?}");
        // A latency alone makes a controller (of unlimited capacity).
        let s = scheduler("latency = { read = { fixed = \"1ms\", per_kib = \"1us\" } }");
        assert!(s.controls());
        assert_eq!(s.service_latency(Direction::Read, 4 * K), 1_004_000);
        assert_eq!(s.service_latency(Direction::Write, 4 * K), 0);
        // Nothing: ceilings only.
        assert!(!scheduler("io_accounting = \"transfer\"").controls());
    }
}
