//! A sans-IO mClock scheduler (Gulati, Merchant, Varman: *mClock: Handling
//! Throughput Variability for Hypervisor IO Scheduling*, OSDI 2010).
//!
//! [`MClock`] arbitrates between flows for one node's capacity. Each flow has a
//! reservation (floor), a limit (ceiling) and a weight (share of what is left).
//! Like everything in this crate it never reads a clock: time is a [`Nanos`]
//! passed in.
//!
//! # Tags
//!
//! Each flow keeps three tags for its head request (f64 nanoseconds):
//!
//! * **R** (reservation): `max(last_R + interval(reservation), arrival)`;
//! * **L** (limit): `max(last_L + interval(limit), arrival)`;
//! * **P** (proportional): `max(last_P + cost·1e9/weight, v)` in *virtual* time,
//!   where `v` is the P tag of the most recent weight-phase dispatch, taken when a
//!   flow's queue goes from empty to non-empty (the paper's fix for idle VMs: a
//!   returning flow starts level with the active ones, not ahead).
//!
//! `interval(rate)` for a request counting `ops` operations and `b` bytes is the larger
//! of `ops·1e9/iops` and `b·1e9/bytes_per_sec`, over the dimensions that are set; an
//! unset reservation never fires, an unset limit never holds back. `ops` is 1 per
//! request unless the caller's I/O-size accounting says otherwise ([`Charge`],
//! [`crate::accounting`]).
//!
//! Because tags restart from the arrival time, **idle flows earn no credit**.
//! [`MClock::with_limit_lookahead`] lets a flow go up to a few milliseconds before its L
//! tag (the node uses the pacer's 5 ms [`crate::BURST_WINDOW`]), so a ceiling allows the
//! same small burst in both of the node's modes.
//!
//! # Dispatch
//!
//! [`MClock::dequeue`] first checks the node budget, then:
//!
//! 1. **Reservation phase** — the backlogged flow with the smallest R tag ≤ now;
//! 2. **Weight phase** — otherwise, among flows whose L tag ≤ now, the smallest P
//!    tag. A weight-phase dispatch does not advance the flow's R tag (the paper's
//!    "reduce R tags by 1/r"), so reservation and weight share add up, and it
//!    does advance L. A reservation-phase dispatch advances R and L but not P,
//!    so the weight phase shares *what is left* after floors.
//!
//! The node budget is a GCRA over `capacity` (ops and bytes): a request costs
//! `max(1, bytes / cost_unit)` ops (or the `cost` of its [`Charge`]: an I/O-size
//! accounting's counted ops, an array model's time) and `bytes` bytes; it may start
//! when the node's theoretical arrival time is ≤ now. After idleness the node may run
//! ahead by at most [`NODE_BURST`] worth of capacity (tolerance for late callers).
//!
//! Reservations whose sum exceeds the capacity (per dimension: reservation IOPS
//! against capacity IOPS, reservation bytes/s against capacity bytes/s) are
//! scaled by `capacity / sum` ([`MClock::overcommit`] reports the factor).
//!
//! Flow IOPS (reservation and limit) count *requests* (or the charge's counted ops),
//! like [`crate::Pacer`]; the node capacity counts cost units. With requests ≤
//! `cost_unit` the two agree.
//!
//! # FIFO: the control discipline
//!
//! [`MClock::fifo`] builds the same node without QoS arbitration: requests leave
//! in arrival order across all flows (reservations ignored, limits still held),
//! as on an array with no floors. A flow with many requests queued then takes
//! capacity in proportion to its queue; it is what the isolation scenario's
//! control run measures against.
//!
//! # Cost
//!
//! Each backlogged flow caches its head request's tags; three heaps with lazy
//! deletion (a per-flow generation number) find the next request: the R heap
//! (reservation tags), the *limit* heap (flows whose L tag is still in the
//! future) and the *ready* heap (P tags of flows whose L tag has passed). A
//! decision is O(log flows). Measured by `cargo run --release -p qos-core
//! --example mclock_bench` (docs/BENCHMARKS.md). A change of reservations
//! (add, remove or re-spec a flow) rescales and rebuilds the heaps: O(flows).
//!
//! # Semantics worth knowing
//!
//! * [`MClock::set_flow`] keeps the tags: a reservation or limit change applies
//!   from the next request on (the already-computed spacing of the last one stands).
//! * Overcommit compares request IOPS with cost-unit capacity (see above).
//! * Shared (group) policies are the caller's business: one flow per group.
//! * **Burst credits** ([`MClock::set_burst`]): a flow's limit may carry a burst
//!   ([`crate::credit`]). Its L tag then spaces requests at the burst rate and also waits
//!   for the flow's credit bucket (a GCRA at the limit), charged when the request is
//!   dispatched: the flow runs at the burst rate while credits last, at its limit after.
//!   The IOPS bucket is charged the ops the request's [`Charge`] counts (in thousandths,
//!   so an I/O-size accounting's fractional ops spend exactly what they count).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use crate::accounting::MILLI;
use crate::credit::{Burst, CreditStatus, Credits};
use crate::limits::Rate;
use crate::Nanos;

/// How far (ns) the node budget may run ahead after idleness, so callers that
/// wake late (tokio timers tick in milliseconds, and a busy machine adds more) do not
/// lose capacity. Same as the pacer's burst.
pub const NODE_BURST: Nanos = 5_000_000;

const NS: f64 = 1e9;

/// A flow's quality of service: floor, ceiling and weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowSpec {
    /// Reservation (floor); 0 in a dimension = none.
    pub reservation: Rate,
    /// Limit (ceiling); 0 in a dimension = none.
    pub limit: Rate,
    /// Proportional share of what is left; 0 is treated as 1.
    pub weight: u32,
}

/// Identifies a flow of an [`MClock`]. Ids are not reused after removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u32);

/// What one request counts for: against its flow's floor and ceiling (`ops`, in the
/// node's counted unit, see [`crate::accounting`], and `bytes`) and against the node's
/// capacity and the weight phase (`cost`, in capacity ops).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Charge {
    /// Operations counted against the flow's reservation and limit IOPS.
    pub ops: f64,
    /// Bytes, against byte rates (flow and node).
    pub bytes: u64,
    /// Capacity operations the node spends on it.
    pub cost: f64,
}

/// Which phase chose a dispatched request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Served to meet the flow's reservation (floor).
    Reservation,
    /// Served from the proportional share of what is left.
    Weight,
}

/// A request chosen by [`MClock::dequeue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatched<T> {
    /// The flow it belongs to.
    pub flow: FlowId,
    /// The caller's token, as enqueued.
    pub token: T,
    /// Its size in bytes, as enqueued.
    pub bytes: u64,
    /// When it was enqueued.
    pub enqueued: Nanos,
    /// When its limit (ceiling) tag allowed it to start: queue time before this is
    /// the ceiling's, after it the node's (other flows' floors and shares).
    pub limit_at: Nanos,
    /// The phase that chose it.
    pub phase: Phase,
}

struct Request<T> {
    token: T,
    charge: Charge,
    arrival: Nanos,
}

struct Flow<T> {
    spec: FlowSpec,
    /// Burst over the limit (normalised) and its buckets.
    burst: Burst,
    credits: Credits,
    queue: VecDeque<Request<T>>,
    last_r: f64,
    last_l: f64,
    last_p: f64,
    /// Virtual-time floor for P, set when the queue became non-empty.
    p_floor: f64,
    /// Cached tags of the head request (valid while the queue is non-empty).
    head: HeadTags,
    /// Bumped whenever `head` changes; heap entries of older generations are stale.
    gen: u64,
}

/// The ops a charge counts, in thousandths of an operation.
fn milliops(c: &Charge) -> u64 {
    (c.ops * MILLI as f64).round() as u64
}

/// Interval for one request charging `c` under `rate`, in ns: the larger of `c.ops` at
/// the IOPS and `c.bytes` at the byte rate, over the dimensions that are set; `None`
/// when the rate sets no dimension.
fn interval(rate: Rate, c: &Charge) -> Option<f64> {
    let mut out: Option<f64> = None;
    if rate.iops > 0 {
        out = Some(c.ops * NS / rate.iops as f64);
    }
    if rate.bytes_per_sec > 0 {
        let b = c.bytes as f64 * NS / rate.bytes_per_sec as f64;
        out = Some(out.map_or(b, |o| o.max(b)));
    }
    out
}

#[derive(Clone, Copy, Default)]
struct HeadTags {
    r: f64,
    l: f64,
    p: f64,
}

/// A heap entry: a tag value, the flow index and the flow generation it was
/// computed for. Ordered by tag, then index (deterministic ties).
#[derive(Clone, Copy)]
struct Entry {
    tag: f64,
    idx: usize,
    gen: u64,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.tag
            .total_cmp(&o.tag)
            .then(self.idx.cmp(&o.idx))
            .then(self.gen.cmp(&o.gen))
    }
}

type MinHeap = BinaryHeap<Reverse<Entry>>;

#[derive(Clone, Copy)]
enum HeapKind {
    R,
    L,
    P,
}

/// The mClock scheduler; `T` is the caller's opaque request token.
pub struct MClock<T> {
    capacity: Rate,
    cost_unit: u64,
    flows: Vec<Option<Flow<T>>>,
    /// Backlogged flows by R tag (finite reservations only).
    r_heap: MinHeap,
    /// Backlogged flows whose L tag was in the future when pushed, by L tag.
    l_heap: MinHeap,
    /// Backlogged flows whose L tag has passed, by P tag.
    p_heap: MinHeap,
    /// Number of backlogged flows.
    active: usize,
    /// Node GCRA theoretical arrival times (ns).
    tat_ops: f64,
    tat_bytes: f64,
    /// Virtual time: P tag of the last weight-phase dispatch.
    vtime: f64,
    /// Reservation scale factors (ops, bytes), ≤ 1.
    scale_ops: f64,
    scale_bytes: f64,
    queued: usize,
    /// Arrival order instead of tags (see [`MClock::fifo`]).
    fifo: bool,
    /// How far ahead of the node budget a reservation-phase dispatch may go (ns).
    res_lookahead: f64,
    /// How far ahead of its limit tag a flow may be dispatched (ns): its ceiling's burst.
    lim_lookahead: f64,
}

impl<T> MClock<T> {
    /// A scheduler for a node of `capacity` (0 in a dimension = unlimited), where
    /// a request costs `max(1, bytes / cost_unit)` ops (`cost_unit` 0 = 1 op each).
    pub fn new(capacity: Rate, cost_unit: u64) -> Self {
        MClock {
            capacity,
            cost_unit,
            flows: Vec::new(),
            r_heap: BinaryHeap::new(),
            l_heap: BinaryHeap::new(),
            p_heap: BinaryHeap::new(),
            active: 0,
            tat_ops: 0.0,
            tat_bytes: 0.0,
            vtime: 0.0,
            scale_ops: 1.0,
            scale_bytes: 1.0,
            queued: 0,
            fifo: false,
            res_lookahead: 0.0,
            lim_lookahead: 0.0,
        }
    }

    /// Let reservation-phase dispatches run up to `ns` ahead: of the node's budget, and of
    /// the flow's own reservation schedule. A caller that dispatches on timer ticks
    /// otherwise makes a floor's request wait for the next tick when it arrives just after
    /// a tick's weight-phase dispatches, or a hair before its R tag (a client offering
    /// exactly its floor, slightly bursty). With the look-ahead it goes at once and the
    /// weight phase pays it back. Capacity and reservations over any window longer than
    /// `ns` are unchanged; a flow returning from idleness may run at most `ns` ahead.
    pub fn with_reservation_lookahead(mut self, ns: Nanos) -> Self {
        self.res_lookahead = ns as f64;
        self
    }

    /// Let a flow be dispatched up to `ns` before its limit tag: a ceiling then allows a
    /// burst of `ns` worth of its rate after idleness (or one request), and a backlogged
    /// flow stays at most `ns` ahead of its schedule, exactly the pacer's burst window
    /// ([`crate::BURST_WINDOW`]). Without it, requests arriving together (a client at
    /// queue depth 4) are spaced one limit interval apart even when the flow is far
    /// below its ceiling. Over any window `W` a flow dispatches at most `rate × (W + ns)`.
    pub fn with_limit_lookahead(mut self, ns: Nanos) -> Self {
        self.lim_lookahead = ns as f64;
        self
    }

    /// The same node without QoS arbitration: arrival order across flows, no
    /// reservations (floors), limits (ceilings) still held.
    pub fn fifo(capacity: Rate, cost_unit: u64) -> Self {
        MClock {
            fifo: true,
            ..MClock::new(capacity, cost_unit)
        }
    }

    /// The node capacity.
    pub fn capacity(&self) -> Rate {
        self.capacity
    }

    /// Number of queued requests across all flows.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Number of queued requests of one flow (0 for an unknown flow).
    pub fn queued_in(&self, id: FlowId) -> usize {
        self.flow(id).map_or(0, |f| f.queue.len())
    }

    fn flow(&self, id: FlowId) -> Option<&Flow<T>> {
        self.flows.get(id.0 as usize).and_then(|f| f.as_ref())
    }

    /// Add a flow; its tags start at `now`.
    pub fn add_flow(&mut self, spec: FlowSpec, now: Nanos) -> FlowId {
        let t = now as f64;
        self.flows.push(Some(Flow {
            spec,
            burst: Burst::NONE,
            credits: Credits::default(),
            queue: VecDeque::new(),
            last_r: t,
            last_l: t,
            last_p: self.vtime,
            p_floor: self.vtime,
            head: HeadTags::default(),
            gen: 0,
        }));
        self.rescale();
        FlowId((self.flows.len() - 1) as u32)
    }

    /// Change a flow's spec live; its tags are kept (no burst, no stall beyond
    /// the already-earned tags). Unknown ids are ignored.
    pub fn set_flow(&mut self, id: FlowId, spec: FlowSpec, now: Nanos) {
        if let Some(Some(f)) = self.flows.get_mut(id.0 as usize) {
            if f.spec.limit != spec.limit && !f.burst.is_none() {
                f.burst = f.burst.normalized(spec.limit);
                f.credits
                    .reshape(spec.limit.in_milliops(), f.burst.in_milliops(), now);
            }
            f.spec = spec;
            self.rescale();
        }
    }

    /// Give a flow's limit burst credits (or take them away with [`Burst::NONE`]) at `now`:
    /// a bucket that stays keeps its balance, a new one starts at its initial balance.
    /// Unknown ids are ignored.
    pub fn set_burst(&mut self, id: FlowId, burst: Burst, now: Nanos) {
        let idx = id.0 as usize;
        let Some(Some(f)) = self.flows.get_mut(idx) else {
            return;
        };
        let burst = burst.normalized(f.spec.limit);
        if burst == f.burst {
            return;
        }
        f.burst = burst;
        f.credits
            .reshape(f.spec.limit.in_milliops(), burst.in_milliops(), now);
        if !f.queue.is_empty() {
            self.refresh_head(idx, now as f64);
        }
    }

    /// A flow's credit buckets at `now`: (IOPS, bytes); `None` where it does not burst.
    pub fn credit_status(
        &self,
        id: FlowId,
        now: Nanos,
    ) -> (Option<CreditStatus>, Option<CreditStatus>) {
        self.flow(id).map_or((None, None), |f| {
            let (o, b) = f.credits.status(now);
            (o.map(CreditStatus::from_milliops), b)
        })
    }

    /// Remove a flow, dropping its queued requests (returned to the caller).
    /// Unknown ids are ignored.
    pub fn remove_flow(&mut self, id: FlowId) -> Vec<T> {
        let idx = id.0 as usize;
        let Some(slot) = self.flows.get_mut(idx) else {
            return Vec::new();
        };
        let Some(f) = slot.take() else {
            return Vec::new();
        };
        if !f.queue.is_empty() {
            self.active -= 1;
        }
        self.queued -= f.queue.len();
        self.rescale();
        f.queue.into_iter().map(|r| r.token).collect()
    }

    /// Drop every queued request whose token `keep` rejects (a client that went away):
    /// they leave without being dispatched, so they cost no capacity and hold back no
    /// one. O(queued + flows); meant for rare events.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let before = self.queued;
        let (mut queued, mut active) = (0, 0);
        for f in self.flows.iter_mut().flatten() {
            f.queue.retain(|r| keep(&r.token));
            queued += f.queue.len();
            active += usize::from(!f.queue.is_empty());
        }
        if queued != before {
            self.queued = queued;
            self.active = active;
            self.rebuild();
        }
    }

    /// Queue a request of `bytes` on flow `id` at `now`: one operation against the flow's
    /// rates, `max(1, bytes / cost_unit)` against the node's. Gives the token back if the
    /// flow does not exist.
    pub fn enqueue(&mut self, id: FlowId, token: T, bytes: u64, now: Nanos) -> Result<(), T> {
        let charge = Charge {
            ops: 1.0,
            bytes,
            cost: self.cost_ops(bytes) as f64,
        };
        self.enqueue_charged(id, token, charge, now)
    }

    /// Queue a request with an explicit [`Charge`] (I/O-size accounting and array cost
    /// models compute it). Gives the token back if the flow does not exist.
    pub fn enqueue_charged(
        &mut self,
        id: FlowId,
        token: T,
        charge: Charge,
        now: Nanos,
    ) -> Result<(), T> {
        let idx = id.0 as usize;
        let vtime = self.vtime;
        let Some(Some(f)) = self.flows.get_mut(idx) else {
            return Err(token);
        };
        let was_idle = f.queue.is_empty();
        if was_idle {
            // Idle flows earn no credit: R/L restart from the arrival time (via
            // the per-request arrival), P from the current virtual time.
            f.p_floor = vtime;
        }
        f.queue.push_back(Request {
            token,
            charge,
            arrival: now,
        });
        self.queued += 1;
        if was_idle {
            self.active += 1;
            self.refresh_head(idx, now as f64);
        }
        Ok(())
    }

    /// Sum of all flows' reservations, as declared (before any scaling).
    pub fn reserved(&self) -> Rate {
        let mut r = Rate::UNLIMITED;
        for f in self.flows.iter().flatten() {
            r.iops = r.iops.saturating_add(f.spec.reservation.iops);
            r.bytes_per_sec = r
                .bytes_per_sec
                .saturating_add(f.spec.reservation.bytes_per_sec);
        }
        r
    }

    /// Reservation scale factor when reservations exceed capacity:
    /// `Some(capacity / sum)` (< 1, the smaller of the two dimensions), else `None`.
    pub fn overcommit(&self) -> Option<f64> {
        if self.fifo {
            return None;
        }
        let f = self.scale_ops.min(self.scale_bytes);
        (f < 1.0).then_some(f)
    }

    fn rescale(&mut self) {
        let (mut ops, mut bytes) = (0u128, 0u128);
        for f in self.flows.iter().flatten() {
            ops += u128::from(f.spec.reservation.iops);
            bytes += u128::from(f.spec.reservation.bytes_per_sec);
        }
        let scale = |cap: u64, sum: u128| {
            if cap == 0 || sum <= u128::from(cap) {
                1.0
            } else {
                cap as f64 / sum as f64
            }
        };
        self.scale_ops = scale(self.capacity.iops, ops);
        self.scale_bytes = scale(self.capacity.bytes_per_sec, bytes);
        self.rebuild();
    }

    /// Recompute every head and rebuild the heaps (reservations changed, or the
    /// heaps hold too many stale entries). The L heap is re-sorted at the next
    /// dequeue, so pushing everything there is correct at any time.
    fn rebuild(&mut self) {
        self.r_heap.clear();
        self.l_heap.clear();
        self.p_heap.clear();
        for idx in 0..self.flows.len() {
            if self.flows[idx]
                .as_ref()
                .is_some_and(|f| !f.queue.is_empty())
            {
                self.refresh_head(idx, f64::NEG_INFINITY);
            }
        }
    }

    /// Recompute flow `idx`'s head tags (its queue is non-empty) and push its
    /// heap entries; `t` decides between the L and the ready heap.
    fn refresh_head(&mut self, idx: usize, t: f64) {
        let Some(f) = self.flows[idx].as_ref() else {
            return;
        };
        let Some(tags) = self.head_tags(f) else {
            return;
        };
        let f = self.flows[idx].as_mut().expect("checked above");
        f.gen += 1;
        f.head = tags;
        let gen = f.gen;
        if tags.r.is_finite() {
            self.r_heap.push(Reverse(Entry {
                tag: tags.r,
                idx,
                gen,
            }));
        }
        if tags.l <= t + self.lim_lookahead {
            self.p_heap.push(Reverse(Entry {
                tag: tags.p,
                idx,
                gen,
            }));
        } else {
            self.l_heap.push(Reverse(Entry {
                tag: tags.l,
                idx,
                gen,
            }));
        }
    }

    fn live(&self, e: &Entry) -> bool {
        self.flows[e.idx]
            .as_ref()
            .is_some_and(|f| f.gen == e.gen && !f.queue.is_empty())
    }

    /// Drop stale entries from the top of `which` and return the live top.
    fn top(&mut self, which: HeapKind) -> Option<Entry> {
        loop {
            let e = match which {
                HeapKind::R => self.r_heap.peek(),
                HeapKind::L => self.l_heap.peek(),
                HeapKind::P => self.p_heap.peek(),
            }
            .map(|r| r.0)?;
            if self.live(&e) {
                return Some(e);
            }
            match which {
                HeapKind::R => self.r_heap.pop(),
                HeapKind::L => self.l_heap.pop(),
                HeapKind::P => self.p_heap.pop(),
            };
        }
    }

    /// Move flows whose L tag has passed (less the limit look-ahead) from the L heap to
    /// the ready heap.
    fn release_limits(&mut self, t: f64) {
        while let Some(e) = self.top(HeapKind::L) {
            if e.tag > t + self.lim_lookahead {
                break;
            }
            self.l_heap.pop();
            let p = self.flows[e.idx].as_ref().map_or(0.0, |f| f.head.p);
            self.p_heap.push(Reverse(Entry { tag: p, ..e }));
        }
    }

    fn cost_ops(&self, bytes: u64) -> u64 {
        bytes.checked_div(self.cost_unit).unwrap_or(1).max(1)
    }

    fn head_tags(&self, f: &Flow<T>) -> Option<HeadTags> {
        let head = f.queue.front()?;
        let arrival = head.arrival as f64;
        let res = f.spec.reservation;
        let r = if self.fifo || (res.iops == 0 && res.bytes_per_sec == 0) {
            f64::INFINITY
        } else {
            let c = &head.charge;
            let mut i = 0.0f64;
            if res.iops > 0 {
                i = c.ops * NS / (res.iops as f64 * self.scale_ops);
            }
            if res.bytes_per_sec > 0 {
                i = i.max(c.bytes as f64 * NS / (res.bytes_per_sec as f64 * self.scale_bytes));
            }
            (f.last_r + i).max(arrival)
        };
        let mut l = match interval(f.burst.peak(f.spec.limit), &head.charge) {
            Some(i) => (f.last_l + i).max(arrival),
            None => arrival,
        };
        if !f.credits.is_empty() {
            let c = &head.charge;
            l = l.max(f.credits.earliest(milliops(c), c.bytes) as f64);
        }
        let w = f64::from(f.spec.weight.max(1));
        let p = if self.fifo {
            arrival
        } else {
            (f.last_p + head.charge.cost * NS / w).max(f.p_floor)
        };
        Some(HeadTags { r, l, p })
    }

    fn node_ready(&self) -> f64 {
        self.tat_ops.max(self.tat_bytes)
    }

    /// The next request to dispatch at `now`, if any may start now.
    pub fn dequeue(&mut self, now: Nanos) -> Option<Dispatched<T>> {
        if self.queued == 0 {
            return None;
        }
        let t = now as f64;
        let ready = self.node_ready();
        if ready > t + self.res_lookahead {
            return None;
        }
        self.release_limits(t);
        let (entry, phase) = match self
            .top(HeapKind::R)
            .filter(|e| e.tag <= t + self.res_lookahead)
        {
            Some(e) => (e, Phase::Reservation),
            None if ready > t => return None,
            None => (self.top(HeapKind::P)?, Phase::Weight),
        };
        let idx = entry.idx;
        let f = self.flows[idx].as_mut().expect("live entry has a flow");
        let tags = f.head;
        let req = f.queue.pop_front().expect("live entry has a head");
        match phase {
            Phase::Reservation => {
                f.last_r = tags.r;
                f.last_l = tags.l;
            }
            Phase::Weight => {
                f.last_l = tags.l;
                f.last_p = tags.p;
            }
        }
        if !f.credits.is_empty() {
            f.credits
                .commit(now, milliops(&req.charge), req.charge.bytes);
        }
        let empty = f.queue.is_empty();
        f.gen += 1;
        if phase == Phase::Weight {
            self.vtime = self.vtime.max(tags.p);
        }
        self.queued -= 1;
        if empty {
            self.active -= 1;
        } else {
            self.refresh_head(idx, t);
        }
        self.compact();
        // Charge the node budget.
        let floor = t - NODE_BURST as f64;
        let c = req.charge;
        if self.capacity.iops > 0 {
            self.tat_ops = self.tat_ops.max(floor) + c.cost * NS / self.capacity.iops as f64;
        }
        if self.capacity.bytes_per_sec > 0 {
            self.tat_bytes = self.tat_bytes.max(floor)
                + c.bytes as f64 * NS / self.capacity.bytes_per_sec as f64;
        }
        Some(Dispatched {
            flow: FlowId(idx as u32),
            token: req.token,
            bytes: c.bytes,
            enqueued: req.arrival,
            limit_at: tags.l.max(0.0).min(u64::MAX as f64) as Nanos,
            phase,
        })
    }

    /// Rebuild when stale entries outnumber live ones by far (bounded memory).
    fn compact(&mut self) {
        let entries = self.r_heap.len() + self.l_heap.len() + self.p_heap.len();
        if entries > 8 * self.active + 1024 {
            self.rebuild();
        }
    }

    /// When [`dequeue`](Self::dequeue) could next return something (`None`:
    /// nothing queued). Returns `now` if it can right now. Enqueues and
    /// spec changes may make it earlier.
    pub fn next_wakeup(&mut self, now: Nanos) -> Option<Nanos> {
        if self.queued == 0 {
            return None;
        }
        let ready = self.node_ready();
        let mut soonest = f64::INFINITY;
        if self.top(HeapKind::P).is_some() {
            soonest = (now as f64).max(ready);
        }
        if let Some(e) = self.top(HeapKind::L) {
            soonest = soonest.min((e.tag - self.lim_lookahead).max(ready));
        }
        if let Some(e) = self.top(HeapKind::R) {
            soonest = soonest.min(e.tag.max(ready) - self.res_lookahead);
        }
        if soonest == f64::INFINITY {
            return None;
        }
        let at = soonest.ceil();
        let at = if at >= u64::MAX as f64 {
            u64::MAX
        } else {
            at as u64
        };
        Some(at.max(now))
    }
}
