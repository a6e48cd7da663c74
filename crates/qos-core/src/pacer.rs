//! The per-flow ceiling enforcer: a smooth two-dimensional GCRA pacer.
//!
//! Each limited dimension (operations, bytes) keeps a *theoretical arrival time*
//! (`tat`): the instant at which everything admitted so far would have finished
//! had it been sent at exactly the ceiling rate. A request of cost `c` may start
//! once `tat + c·interval − capacity ≤ start`, where the burst capacity is
//! `max(BURST_WINDOW worth of rate, c·interval)`; admitting it moves
//! `tat = max(tat, start) + c·interval` (a start less than 1 ns past `tat`, i.e. its
//! rounding to whole nanoseconds, is ignored). The start time is the latest of `now` and
//! every limited dimension's earliest time, so whichever limit is reached first
//! applies.
//!
//! Consequences:
//! * in any window of length `W`, the cost dispatched is at most
//!   `rate·W + capacity` — a flow that was idle gets at most `BURST_WINDOW` worth of
//!   credit (or one request, if a single request is bigger than that), never more;
//! * a backlogged flow is spaced exactly one interval per unit of cost: no
//!   burst-then-stall, no fixed windows;
//! * time is held exactly as `nanoseconds × rate` in 128-bit integers, so the
//!   interval `1e9 / rate` never has to be rounded and long runs do not drift.
//!
//! **Burst credits** ([`Pacer::with_burst`], [`crate::credit`]): a dimension with a burst
//! runs its lane at the burst rate and adds a credit bucket at the ceiling (its baseline);
//! a request also waits for the bucket, so the flow runs at the burst rate while credits
//! last and at the ceiling afterwards.

use crate::credit::{Burst, CreditStatus, Credits};
use crate::limits::Rate;
use crate::Nanos;

/// How much idle credit a flow may keep: this many nanoseconds worth of its rate
/// (5 ms), or one request's cost if that is larger.
pub const BURST_WINDOW: Nanos = 5_000_000;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Rates are clamped to this (about 10^15 per second, far above any real device)
/// so that `nanoseconds × rate` always fits in 128 bits.
const MAX_RATE: u64 = 1 << 50;

/// One limited dimension. Time is kept in units of `1 / rate` nanoseconds, so an
/// interval of one unit of cost is exactly `NANOS_PER_SEC` of those units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Lane {
    /// Clamped rate in units per second; 0 = unlimited.
    rate: u64,
    /// Theoretical arrival time, in nanoseconds × `rate`.
    tat: u128,
}

impl Lane {
    fn new(rate: u64) -> Self {
        Self {
            rate: rate.min(MAX_RATE),
            tat: 0,
        }
    }

    /// Earliest start, in nanoseconds, for a request costing `cost` units.
    fn earliest(&self, cost: u64) -> Nanos {
        if self.rate == 0 {
            return 0;
        }
        let rate = u128::from(self.rate);
        let inc = u128::from(cost) * NANOS_PER_SEC;
        let capacity = (u128::from(BURST_WINDOW) * rate).max(inc);
        let earliest = self.tat.saturating_add(inc).saturating_sub(capacity);
        let ns = earliest.div_ceil(rate);
        Nanos::try_from(ns).unwrap_or(Nanos::MAX)
    }

    /// Records a request costing `cost` units that starts at `start`.
    fn commit(&mut self, start: Nanos, cost: u64) {
        if self.rate == 0 {
            return;
        }
        let rate = u128::from(self.rate);
        let start_scaled = u128::from(start) * rate;
        // `start` is a whole nanosecond rounded up from an exact horizon. Moving `tat` up
        // to it only when it is at least one nanosecond later keeps a backlogged flow on
        // its exact schedule instead of accumulating those sub-nanosecond round-ups.
        if start_scaled >= self.tat.saturating_add(rate) {
            self.tat = start_scaled;
        }
        let inc = u128::from(cost) * NANOS_PER_SEC;
        self.tat = self.tat.saturating_add(inc);
    }

    /// Nothing is reserved ahead any more: the horizon comes back to `now` if it was later.
    fn forget_ahead(&mut self, now: Nanos) {
        if self.rate == 0 {
            return;
        }
        self.tat = self.tat.min(u128::from(now) * u128::from(self.rate));
    }

    /// The theoretical arrival time in nanoseconds (rounded up), 0 if unlimited.
    fn tat_nanos(&self) -> Nanos {
        if self.rate == 0 {
            return 0;
        }
        Nanos::try_from(self.tat.div_ceil(u128::from(self.rate))).unwrap_or(Nanos::MAX)
    }

    /// Changes the rate, keeping the reservation horizon `tat` at the same instant.
    fn set_rate(&mut self, rate: u64, now: Nanos) {
        let new = rate.min(MAX_RATE);
        if new == self.rate {
            return;
        }
        self.tat = match (self.rate, new) {
            (_, 0) => 0,
            // Newly limited: start from a clean slate at `now` (no saved credit).
            (0, n) => u128::from(now) * u128::from(n),
            // Same instant in the new units, rounded up: tat/o·n without overflowing.
            (o, n) => {
                let (o, n) = (u128::from(o), u128::from(n));
                let (q, r) = (self.tat / o, self.tat % o);
                q.saturating_mul(n).saturating_add((r * n).div_ceil(o))
            }
        };
        self.rate = new;
    }
}

/// A smooth ceiling enforcer for one flow over two dimensions (ops and bytes).
///
/// Sans-IO: it never reads a clock and never sleeps; callers pass `now` and
/// dispatch each request at the time [`Pacer::admit`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pacer {
    ceiling: Rate,
    burst: Burst,
    ops: Lane,
    bytes: Lane,
    credits: Credits,
}

impl Pacer {
    /// A pacer enforcing `ceiling` (0 in a dimension = unlimited), with no history.
    pub fn new(ceiling: Rate) -> Self {
        Self {
            ceiling,
            burst: Burst::NONE,
            ops: Lane::new(ceiling.iops),
            bytes: Lane::new(ceiling.bytes_per_sec),
            credits: Credits::default(),
        }
    }

    /// A pacer whose `ceiling` is a baseline with burst credits (`burst`, normalised against
    /// the ceiling), its buckets holding their initial balances at `now`.
    pub fn with_burst(ceiling: Rate, burst: Burst, now: Nanos) -> Self {
        let burst = burst.normalized(ceiling);
        let peak = burst.peak(ceiling);
        Self {
            ceiling,
            burst,
            ops: Lane::new(peak.iops),
            bytes: Lane::new(peak.bytes_per_sec),
            credits: Credits::new(ceiling, burst, now),
        }
    }

    /// Changes ceiling and burst live at `now` ([`Pacer::set_ceiling`]'s rules for the
    /// rates; a bucket that stays keeps its balance, a new one starts at its initial balance).
    pub fn set_limits(&mut self, ceiling: Rate, burst: Burst, now: Nanos) {
        let burst = burst.normalized(ceiling);
        let peak = burst.peak(ceiling);
        self.ceiling = ceiling;
        self.burst = burst;
        self.ops.set_rate(peak.iops, now);
        self.bytes.set_rate(peak.bytes_per_sec, now);
        self.credits.reshape(ceiling, burst, now);
    }

    /// The burst in force (normalised: only dimensions that can burst).
    pub fn burst(&self) -> Burst {
        self.burst
    }

    /// The credit buckets at `now`: (IOPS, bytes); `None` where a dimension does not burst.
    pub fn credit_status(&self, now: Nanos) -> (Option<CreditStatus>, Option<CreditStatus>) {
        self.credits.status(now)
    }

    /// Changes the ceiling live, at time `now`.
    ///
    /// Requests already admitted keep the dispatch times they were given (the caller
    /// holds them), and the flow's reservation horizon stays at the same instant: new
    /// requests follow the already-granted ones at the new rate. So a change neither
    /// grants a burst (no credit is created) nor stalls the flow (no debt is created
    /// beyond what was already granted). A dimension that becomes limited starts
    /// fresh at `now`.
    pub fn set_ceiling(&mut self, ceiling: Rate, now: Nanos) {
        self.set_limits(ceiling, Burst::NONE, now);
    }

    /// The ceiling being enforced.
    pub fn ceiling(&self) -> Rate {
        self.ceiling
    }

    /// True when neither dimension is limited ([`Pacer::admit`] then always returns `now`).
    pub fn is_unlimited(&self) -> bool {
        self.ops.rate == 0 && self.bytes.rate == 0
    }

    /// The instant up to which the flow's rate is already reserved by admitted requests
    /// (the later of the two dimensions); 0 when unlimited. A flow is backlogged while
    /// this is in the future.
    pub fn reserved_until(&self) -> Nanos {
        self.ops.tat_nanos().max(self.bytes.tat_nanos())
    }

    /// Reserve the slot for one request costing `ops` I/Os and `bytes` bytes, arriving at `now`.
    /// Returns the time (>= now) at which it may be dispatched. Never blocks, never reads a clock.
    ///
    /// Unlimited dimensions cost nothing. A request larger than the burst window simply
    /// pushes the horizon further (a 1 MiB request under 10 MiB/s reserves 100 ms).
    pub fn admit(&mut self, now: Nanos, ops: u64, bytes: u64) -> Nanos {
        let start = self.earliest(now, ops, bytes);
        self.commit(start, ops, bytes);
        start
    }

    /// When a request of `ops` and `bytes` arriving at `now` could start, without reserving
    /// it. With [`Pacer::commit`], lets a caller combine several pacers (a request that needs
    /// more than one resource starts when all of them allow it, and is charged to each at that
    /// time).
    pub fn earliest(&self, now: Nanos, ops: u64, bytes: u64) -> Nanos {
        let mut start = now
            .max(self.ops.earliest(ops))
            .max(self.bytes.earliest(bytes));
        if !self.credits.is_empty() {
            start = start.max(self.credits.earliest(ops, bytes));
        }
        start
    }

    /// Every request reserved ahead of `now` was given up (their clients went away, no
    /// other request is waiting for its slot): the horizon comes back to `now`, so the next
    /// request is not held behind requests that will never run. Burst credits they took
    /// are not given back. Callers must know no live request still holds a later slot
    /// (else the flow would exceed its ceiling).
    pub fn forget_ahead(&mut self, now: Nanos) {
        self.ops.forget_ahead(now);
        self.bytes.forget_ahead(now);
    }

    /// Reserves a request of `ops` and `bytes` starting at `start` (from [`Pacer::earliest`]
    /// or later).
    pub fn commit(&mut self, start: Nanos, ops: u64, bytes: u64) {
        self.ops.commit(start, ops);
        self.bytes.commit(start, bytes);
        if !self.credits.is_empty() {
            self.credits.commit(start, ops, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn iops(n: u64) -> Rate {
        Rate {
            iops: n,
            bytes_per_sec: 0,
        }
    }

    #[test]
    fn unlimited_costs_nothing() {
        let mut p = Pacer::new(Rate::UNLIMITED);
        assert!(p.is_unlimited());
        for t in [0, 5, 5, 1_000_000_000] {
            assert_eq!(p.admit(t, 1_000, u64::MAX), t);
        }
        assert_eq!(p.reserved_until(), 0);
        assert_eq!(p, Pacer::new(Rate::UNLIMITED));
    }

    #[test]
    fn backlogged_flow_is_spaced_exactly() {
        // 100 IOPS: capacity is one request (10 ms > 5 ms), so no burst at all.
        let mut p = Pacer::new(iops(100));
        let times: Vec<_> = (0..5).map(|_| p.admit(0, 1, 4096)).collect();
        assert_eq!(times, [0, 10 * MS, 20 * MS, 30 * MS, 40 * MS]);
        assert_eq!(p.reserved_until(), 50 * MS);
    }

    #[test]
    fn idle_credit_is_capped_at_burst_window() {
        // 1000 IOPS: 5 ms worth = 5 ops may go at once after idleness, then 1 per ms.
        let mut p = Pacer::new(iops(1000));
        let first: Vec<_> = (0..8).map(|_| p.admit(10_000 * MS, 1, 0)).collect();
        let base = 10_000 * MS;
        assert_eq!(
            first,
            [
                base,
                base,
                base,
                base,
                base,
                base + MS,
                base + 2 * MS,
                base + 3 * MS
            ]
        );
    }

    #[test]
    fn sub_nanosecond_intervals_do_not_drift() {
        // 3 IOPS: interval 333_333_333.33 ns. After 3 million ops exactly 1e6 s elapsed.
        let mut p = Pacer::new(iops(3));
        let mut last = 0;
        for _ in 0..3_000_001 {
            last = p.admit(0, 1, 0);
        }
        assert_eq!(last, 1_000_000 * 1_000_000_000);
        // 7 GB/s-ish with odd-sized requests: bytes total / rate exactly.
        let mut p = Pacer::new(Rate {
            iops: 0,
            bytes_per_sec: 7_000_000_007,
        });
        let mut last = 0;
        for _ in 0..100_001 {
            last = p.admit(0, 1, 7_000_000_007);
        }
        assert_eq!(last, 100_000 * 1_000_000_000);
    }

    #[test]
    fn forgotten_reservations_are_given_back_up_to_now() {
        let mut p = Pacer::new(iops(2));
        // a backlog of 100 requests: 50 s of reservations
        for _ in 0..100 {
            p.admit(0, 1, 0);
        }
        assert_eq!(p.reserved_until(), 50_000 * MS);
        // all given up at 1 s (2 of them started)
        p.forget_ahead(1_000 * MS);
        assert_eq!(p.reserved_until(), 1_000 * MS);
        assert_eq!(
            p.admit(1_000 * MS, 1, 0),
            1_000 * MS,
            "the next waits for nothing"
        );
        assert_eq!(
            p.admit(1_000 * MS, 1, 0),
            1_500 * MS,
            "then the ceiling's spacing"
        );
    }

    #[test]
    fn large_request_pushes_horizon() {
        let mut p = Pacer::new(Rate {
            iops: 0,
            bytes_per_sec: 10 << 20,
        });
        assert_eq!(p.admit(0, 1, 1 << 20), 0);
        assert_eq!(p.reserved_until(), 100 * MS);
        assert_eq!(p.admit(0, 1, 4096), 100 * MS - 5 * MS + 390_625);
        assert_eq!(p.admit(0, 1, 1 << 20), 100 * MS + 390_625);
    }

    #[test]
    fn both_dimensions_whichever_first() {
        // 1000 IOPS and 1 MiB/s: 4 KiB requests are bound by bytes (256/s).
        let mut p = Pacer::new(Rate {
            iops: 1000,
            bytes_per_sec: 1 << 20,
        });
        let mut t = 0;
        for _ in 0..1000 {
            t = p.admit(0, 1, 4096);
        }
        // 1000 requests of 4 KiB = 4000 KiB at 1 MiB/s: the last starts near 3.9 s.
        assert!((3_890 * MS..3_910 * MS).contains(&t), "{t}");
        // Tiny requests are bound by IOPS.
        let mut p = Pacer::new(Rate {
            iops: 1000,
            bytes_per_sec: 1 << 20,
        });
        for _ in 0..1000 {
            t = p.admit(0, 1, 1);
        }
        assert!((990 * MS..1_000 * MS).contains(&t), "{t}");
    }

    #[test]
    fn set_ceiling_keeps_horizon() {
        let mut p = Pacer::new(iops(1000));
        for _ in 0..10 {
            p.admit(0, 1, 0);
        }
        assert_eq!(p.reserved_until(), 10 * MS);
        p.set_ceiling(iops(300), 0);
        assert_eq!(p.reserved_until(), 10 * MS);
        assert_eq!(p.ceiling(), iops(300));
        // 300 IOPS: capacity = 5 ms worth (1.5 ops) -> next at 10 ms + 3.33 ms - 5 ms.
        assert_eq!(p.admit(0, 1, 0), 10 * MS + 3_333_334 - 5 * MS);
        // Unlimited and back: fresh start at `now`, no saved credit.
        p.set_ceiling(Rate::UNLIMITED, 20 * MS);
        assert!(p.is_unlimited());
        assert_eq!(p.admit(20 * MS, 1, 0), 20 * MS);
        p.set_ceiling(iops(100), 30 * MS);
        assert_eq!(p.admit(30 * MS, 1, 0), 30 * MS);
        assert_eq!(p.admit(30 * MS, 1, 0), 40 * MS);
    }

    #[test]
    fn extreme_values_saturate() {
        let mut p = Pacer::new(Rate {
            iops: u64::MAX,
            bytes_per_sec: 1,
        });
        assert_eq!(p.admit(Nanos::MAX, u64::MAX, u64::MAX), Nanos::MAX);
        assert_eq!(p.admit(0, u64::MAX, u64::MAX), Nanos::MAX);
        p.set_ceiling(
            Rate {
                iops: 1,
                bytes_per_sec: u64::MAX,
            },
            Nanos::MAX,
        );
        assert_eq!(p.admit(0, 1, 1), Nanos::MAX);
    }
}
