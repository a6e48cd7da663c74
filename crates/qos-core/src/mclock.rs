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
//! `interval(rate)` for a request of `b` bytes is the larger of `1e9/iops` (one
//! request) and `b·1e9/bytes_per_sec`, over the dimensions that are set; an unset
//! reservation never fires, an unset limit never holds back.
//!
//! Because tags restart from the arrival time, **idle flows earn no credit**.
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
//! `max(1, bytes / cost_unit)` ops and `bytes` bytes; it may start when the
//! node's theoretical arrival time is ≤ now. After idleness the node may run
//! ahead by at most [`NODE_BURST`] worth of capacity (tolerance for late callers).
//!
//! Reservations whose sum exceeds the capacity (per dimension: reservation IOPS
//! against capacity IOPS, reservation bytes/s against capacity bytes/s) are
//! scaled by `capacity / sum` ([`MClock::overcommit`] reports the factor).
//!
//! Flow IOPS (reservation and limit) count *requests*, like [`crate::Pacer`]; the
//! node capacity counts cost units. With requests ≤ `cost_unit` the two agree.
//!
//! # What is not done yet
//!
//! * Each decision scans the backlogged flows (O(active flows)); the paper's
//!   per-tag heaps are not implemented, nor are head tags cached. Measured by
//!   `cargo run --release -p qos-core --example mclock_bench` (one dequeue plus one
//!   enqueue, all flows backlogged): ~120 ns at 10 flows, ~1.0 µs at 100,
//!   ~9.6 µs at 1,000 — fine for ~100k decisions/s at 100 flows, too slow for
//!   1,000 busy flows at high rates; heaps are the next step.
//! * [`MClock::set_flow`] keeps the tags: a reservation or limit change applies
//!   from the next request on (the already-computed spacing of the last one stands).
//! * Overcommit compares request IOPS with cost-unit capacity (see above).
//! * Shared (group) policies are the caller's business: one flow per group.
//! * Not yet wired into `storage-node`'s scheduler.

use std::collections::VecDeque;

use crate::limits::Rate;
use crate::Nanos;

/// How far (ns) the node budget may run ahead after idleness, so callers that
/// wake slightly late do not lose capacity.
pub const NODE_BURST: Nanos = 1_000_000;

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
    /// The phase that chose it.
    pub phase: Phase,
}

struct Request<T> {
    token: T,
    bytes: u64,
    arrival: Nanos,
}

struct Flow<T> {
    spec: FlowSpec,
    queue: VecDeque<Request<T>>,
    last_r: f64,
    last_l: f64,
    last_p: f64,
    /// Virtual-time floor for P, set when the queue became non-empty.
    p_floor: f64,
}

/// Seconds-per-unit interval for one request of `bytes` under `rate`, in ns;
/// `None` when the rate sets no dimension.
fn interval(rate: Rate, scale: f64, bytes: u64) -> Option<f64> {
    let mut out: Option<f64> = None;
    if rate.iops > 0 {
        out = Some(NS / (rate.iops as f64 * scale));
    }
    if rate.bytes_per_sec > 0 {
        let b = bytes as f64 * NS / (rate.bytes_per_sec as f64 * scale);
        out = Some(out.map_or(b, |o| o.max(b)));
    }
    out
}

#[derive(Clone, Copy)]
struct HeadTags {
    r: f64,
    l: f64,
    p: f64,
}

/// The mClock scheduler; `T` is the caller's opaque request token.
pub struct MClock<T> {
    capacity: Rate,
    cost_unit: u64,
    flows: Vec<Option<Flow<T>>>,
    /// Indices of flows with a non-empty queue.
    active: Vec<usize>,
    /// Node GCRA theoretical arrival times (ns).
    tat_ops: f64,
    tat_bytes: f64,
    /// Virtual time: P tag of the last weight-phase dispatch.
    vtime: f64,
    /// Reservation scale factors (ops, bytes), ≤ 1.
    scale_ops: f64,
    scale_bytes: f64,
    queued: usize,
}

impl<T> MClock<T> {
    /// A scheduler for a node of `capacity` (0 in a dimension = unlimited), where
    /// a request costs `max(1, bytes / cost_unit)` ops (`cost_unit` 0 = 1 op each).
    pub fn new(capacity: Rate, cost_unit: u64) -> Self {
        MClock {
            capacity,
            cost_unit,
            flows: Vec::new(),
            active: Vec::new(),
            tat_ops: 0.0,
            tat_bytes: 0.0,
            vtime: 0.0,
            scale_ops: 1.0,
            scale_bytes: 1.0,
            queued: 0,
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
            queue: VecDeque::new(),
            last_r: t,
            last_l: t,
            last_p: self.vtime,
            p_floor: self.vtime,
        }));
        self.rescale();
        FlowId((self.flows.len() - 1) as u32)
    }

    /// Change a flow's spec live; its tags are kept (no burst, no stall beyond
    /// the already-earned tags). Unknown ids are ignored.
    pub fn set_flow(&mut self, id: FlowId, spec: FlowSpec, now: Nanos) {
        let _ = now;
        if let Some(Some(f)) = self.flows.get_mut(id.0 as usize) {
            f.spec = spec;
            self.rescale();
        }
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
        self.active.retain(|&i| i != idx);
        self.queued -= f.queue.len();
        self.rescale();
        f.queue.into_iter().map(|r| r.token).collect()
    }

    /// Queue a request of `bytes` on flow `id` at `now`. Gives the token back
    /// if the flow does not exist.
    pub fn enqueue(&mut self, id: FlowId, token: T, bytes: u64, now: Nanos) -> Result<(), T> {
        let idx = id.0 as usize;
        let vtime = self.vtime;
        let Some(Some(f)) = self.flows.get_mut(idx) else {
            return Err(token);
        };
        if f.queue.is_empty() {
            // Idle flows earn no credit: R/L restart from the arrival time (via
            // the per-request arrival), P from the current virtual time.
            f.p_floor = vtime;
            self.active.push(idx);
        }
        f.queue.push_back(Request {
            token,
            bytes,
            arrival: now,
        });
        self.queued += 1;
        Ok(())
    }

    /// Reservation scale factor when reservations exceed capacity:
    /// `Some(capacity / sum)` (< 1, the smaller of the two dimensions), else `None`.
    pub fn overcommit(&self) -> Option<f64> {
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
    }

    fn cost_ops(&self, bytes: u64) -> u64 {
        bytes.checked_div(self.cost_unit).unwrap_or(1).max(1)
    }

    fn head_tags(&self, f: &Flow<T>) -> Option<HeadTags> {
        let head = f.queue.front()?;
        let arrival = head.arrival as f64;
        let res = f.spec.reservation;
        let r = if res.iops == 0 && res.bytes_per_sec == 0 {
            f64::INFINITY
        } else {
            let mut i = 0.0f64;
            if res.iops > 0 {
                i = NS / (res.iops as f64 * self.scale_ops);
            }
            if res.bytes_per_sec > 0 {
                i = i.max(head.bytes as f64 * NS / (res.bytes_per_sec as f64 * self.scale_bytes));
            }
            (f.last_r + i).max(arrival)
        };
        let l = match interval(f.spec.limit, 1.0, head.bytes) {
            Some(i) => (f.last_l + i).max(arrival),
            None => arrival,
        };
        let w = f64::from(f.spec.weight.max(1));
        let p = (f.last_p + self.cost_ops(head.bytes) as f64 * NS / w).max(f.p_floor);
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
        if self.node_ready() > t {
            return None;
        }
        let mut best_r: Option<(usize, f64, HeadTags)> = None;
        let mut best_p: Option<(usize, f64, HeadTags)> = None;
        for (pos, &idx) in self.active.iter().enumerate() {
            let Some(f) = self.flows[idx].as_ref() else {
                continue;
            };
            let Some(tags) = self.head_tags(f) else {
                continue;
            };
            if tags.r <= t && best_r.is_none_or(|(_, r, _)| tags.r < r) {
                best_r = Some((pos, tags.r, tags));
            }
            if tags.l <= t && best_p.is_none_or(|(_, p, _)| tags.p < p) {
                best_p = Some((pos, tags.p, tags));
            }
        }
        let (pos, phase, tags) = match (best_r, best_p) {
            (Some((pos, _, tags)), _) => (pos, Phase::Reservation, tags),
            (None, Some((pos, _, tags))) => (pos, Phase::Weight, tags),
            (None, None) => return None,
        };
        let idx = self.active[pos];
        let f = self.flows[idx].as_mut().expect("active flow exists");
        let req = f.queue.pop_front().expect("active flow has a head");
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
        let empty = f.queue.is_empty();
        if phase == Phase::Weight {
            self.vtime = self.vtime.max(tags.p);
        }
        if empty {
            self.active.swap_remove(pos);
        }
        self.queued -= 1;
        // Charge the node budget.
        let floor = t - NODE_BURST as f64;
        if self.capacity.iops > 0 {
            let c = self.cost_ops(req.bytes) as f64;
            self.tat_ops = self.tat_ops.max(floor) + c * NS / self.capacity.iops as f64;
        }
        if self.capacity.bytes_per_sec > 0 {
            self.tat_bytes = self.tat_bytes.max(floor)
                + req.bytes as f64 * NS / self.capacity.bytes_per_sec as f64;
        }
        Some(Dispatched {
            flow: FlowId(idx as u32),
            token: req.token,
            bytes: req.bytes,
            enqueued: req.arrival,
            phase,
        })
    }

    /// When [`dequeue`](Self::dequeue) could next return something (`None`:
    /// nothing queued). Returns `now` if it can right now. Enqueues and
    /// spec changes may make it earlier.
    pub fn next_wakeup(&self, now: Nanos) -> Option<Nanos> {
        if self.queued == 0 {
            return None;
        }
        let mut soonest = f64::INFINITY;
        for &idx in &self.active {
            if let Some(tags) = self.flows[idx].as_ref().and_then(|f| self.head_tags(f)) {
                soonest = soonest.min(tags.r.min(tags.l));
            }
        }
        if soonest == f64::INFINITY {
            return None;
        }
        let at = soonest.max(self.node_ready()).ceil();
        let at = if at >= u64::MAX as f64 {
            u64::MAX
        } else {
            at as u64
        };
        Some(at.max(now))
    }
}
