//! Burst credits: a limit whose shape changes over time.
//!
//! A bursting limit has a **baseline** rate `B` (its sustained ceiling), a **burst** rate
//! `P ≥ B` and a **bucket** of `C` credits (one credit = one I/O, or one byte). The usual
//! vendor model (EBS gp2/st1/sc1, Azure credit bursting, FSx for ONTAP, SolidFire):
//!
//! * served rate `S ≤ P` while the bucket holds credits, `S ≤ B` once it is empty;
//! * the balance moves at `B − S`: it **accrues** while the flow runs below its baseline and
//!   is **spent** at `S − B` above it, clamped to `[0, C]`;
//! * from a full bucket a flow at `P` bursts for `C / (P − B)`; an idle flow refills an
//!   empty bucket in `C / B`.
//!
//! # How it is enforced
//!
//! The bucket is exactly a GCRA at the baseline rate whose tolerance is the whole bucket:
//! a [`CreditLane`] keeps a theoretical arrival time `tat` (in nanoseconds × `B`, the
//! pacer's exact integer units) and a request of cost `c` may start once
//! `tat + c − C ≤ start` (all in those units); admitting it moves `tat = max(tat, start) + c`.
//! The balance at `t` is `C − (tat − t)`, capped at `C`. Beside it, the flow's ordinary
//! pacer lane runs at the burst rate `P` (see [`crate::Pacer`]). The start time is the later
//! of the two, so a flow runs at `P` while credits last and at `B` once they are gone —
//! with no timers, no periodic refill and no drift (integer arithmetic throughout).
//!
//! IOPS and bytes have independent buckets (Azure states this explicitly; EBS gp2 has only
//! an IOPS bucket, st1/sc1 only a throughput bucket).

use crate::accounting::MILLI;
use crate::rate::Rate;
use crate::Nanos;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Rates are clamped to this so `nanoseconds × rate` always fits in 128 bits (as in the pacer).
const MAX_RATE: u64 = 1 << 50;

/// The burst part of one dimension's limit: the rate allowed while credits last, the bucket
/// size and the balance a new limit starts with. The baseline is the ceiling it sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BurstShape {
    /// Burst rate, units per second (I/Os or bytes); above the baseline to mean anything.
    pub rate: u64,
    /// Bucket capacity in credits (units).
    pub bucket: u64,
    /// Balance when the limit is first applied (≤ `bucket`).
    pub initial: u64,
}

impl BurstShape {
    /// Seconds a flow at the full burst rate lasts from a full bucket over `baseline`
    /// (`bucket / (rate − baseline)`); `None` when it would not burst.
    pub fn burst_seconds(&self, baseline: u64) -> Option<f64> {
        (self.rate > baseline && self.bucket > 0)
            .then(|| self.bucket as f64 / (self.rate - baseline) as f64)
    }

    /// Seconds an idle flow takes to refill an empty bucket (`bucket / baseline`).
    pub fn refill_seconds(&self, baseline: u64) -> Option<f64> {
        (baseline > 0 && self.bucket > 0).then(|| self.bucket as f64 / baseline as f64)
    }
}

/// Burst credits on a ceiling, per dimension. `None` in a dimension: that dimension's
/// ceiling is flat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Burst {
    /// IOPS burst (credits are I/Os).
    pub iops: Option<BurstShape>,
    /// Bytes/s burst (credits are bytes).
    pub bytes: Option<BurstShape>,
}

impl Burst {
    /// No burst in either dimension.
    pub const NONE: Burst = Burst {
        iops: None,
        bytes: None,
    };

    /// True when no dimension bursts.
    pub fn is_none(&self) -> bool {
        self.iops.is_none() && self.bytes.is_none()
    }

    /// Drops dimensions that cannot burst over `ceiling`: an unlimited baseline (0), a burst
    /// rate not above the baseline, or an empty bucket. The initial balance is clamped to the
    /// bucket. What is left is what the pacer enforces.
    pub fn normalized(self, ceiling: Rate) -> Burst {
        let keep = |s: Option<BurstShape>, base: u64| {
            s.filter(|s| base > 0 && s.rate > base && s.bucket > 0)
                .map(|s| BurstShape {
                    initial: s.initial.min(s.bucket),
                    ..s
                })
        };
        Burst {
            iops: keep(self.iops, ceiling.iops),
            bytes: keep(self.bytes, ceiling.bytes_per_sec),
        }
    }

    /// The pacer's rates: the burst rate where a dimension bursts, else the ceiling.
    pub fn peak(&self, ceiling: Rate) -> Rate {
        Rate {
            iops: self.iops.map_or(ceiling.iops, |s| s.rate),
            bytes_per_sec: self.bytes.map_or(ceiling.bytes_per_sec, |s| s.rate),
        }
    }

    /// The same burst with its IOPS shape counted in thousandths of an operation
    /// ([`MILLI`]): the unit the node's pacers and mClock's buckets count in, so a request
    /// spends the credits its I/O-size accounting counts ([`crate::accounting`]).
    pub fn in_milliops(self) -> Burst {
        Burst {
            iops: self.iops.map(|s| BurstShape {
                rate: s.rate.saturating_mul(MILLI),
                bucket: s.bucket.saturating_mul(MILLI),
                initial: s.initial.saturating_mul(MILLI),
            }),
            bytes: self.bytes,
        }
    }
}

/// ONTAP's documented ceiling tolerance, as a burst: "The ceiling might be exceeded by up to
/// 50% to handle bursts. Bursts occur on single nodes when tokens accumulate up to 150%."
/// (docs.netapp.com, *Guarantee throughput with QoS overview*). Read as: tokens beyond the
/// 100 % that one second of the ceiling holds may accumulate up to 150 %, i.e. a bucket of
/// half a second of the ceiling, spent at up to 1.5 × the ceiling; an idle workload starts
/// full. So after idleness a flow may run at +50 % for one second, and over any window `W`
/// it gets at most `ceiling × W + ceiling / 2`.
pub fn ontap_tolerance(ceiling: Rate) -> Burst {
    let shape = |c: u64| {
        (c > 0).then(|| BurstShape {
            rate: c.saturating_add(c / 2),
            bucket: c / 2,
            initial: c / 2,
        })
    };
    Burst {
        iops: shape(ceiling.iops),
        bytes: shape(ceiling.bytes_per_sec),
    }
    .normalized(ceiling)
}

/// A credit bucket for one dimension, enforced as a GCRA at the baseline whose tolerance is
/// the bucket (module docs). Sans-IO: time is passed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditLane {
    /// Baseline (accrual) rate, units per second; > 0.
    baseline: u64,
    /// Bucket size in units.
    bucket: u64,
    /// Theoretical arrival time in nanoseconds × `baseline`.
    tat: u128,
}

/// A bucket's state for reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CreditStatus {
    /// Credits in the bucket now (units: I/Os or bytes).
    pub balance: u64,
    /// Bucket capacity.
    pub bucket: u64,
    /// Accrual rate (the sustained ceiling), units per second.
    pub baseline: u64,
    /// Rate allowed while credits last.
    pub burst: u64,
}

impl CreditStatus {
    /// An IOPS bucket counted in thousandths of an operation ([`Burst::in_milliops`]),
    /// back in operations.
    pub fn from_milliops(self) -> CreditStatus {
        CreditStatus {
            balance: self.balance / MILLI,
            bucket: self.bucket / MILLI,
            baseline: self.baseline / MILLI,
            burst: self.burst / MILLI,
        }
    }

    /// Balance as a percentage of the bucket (CloudWatch's `BurstBalance`).
    pub fn percent(&self) -> f64 {
        if self.bucket == 0 {
            return 0.0;
        }
        self.balance as f64 * 100.0 / self.bucket as f64
    }

    /// Seconds until the bucket is empty if the flow keeps using `use_rate` units per second;
    /// `None` when that does not drain it (at or below the baseline).
    pub fn time_to_empty(&self, use_rate: f64) -> Option<f64> {
        let drain = use_rate.min(self.burst as f64) - self.baseline as f64;
        (drain > 0.0).then(|| self.balance as f64 / drain)
    }

    /// Azure's names for the three states: `bursting` (using credits), `accruing` (below
    /// baseline with room in the bucket) or `constant` (full and not above the baseline, or
    /// empty and held at it).
    pub fn state(&self, use_rate: f64) -> &'static str {
        let base = self.baseline as f64;
        if use_rate > base * 1.001 && self.balance > 0 {
            "bursting"
        } else if use_rate < base * 0.999 && self.balance < self.bucket {
            "accruing"
        } else {
            "constant"
        }
    }
}

impl CreditLane {
    /// A bucket of `bucket` units accruing at `baseline` per second, holding `initial` at
    /// `now`. `baseline` must be > 0 (callers normalise first; 0 is treated as 1).
    pub fn new(baseline: u64, bucket: u64, initial: u64, now: Nanos) -> Self {
        let baseline = baseline.clamp(1, MAX_RATE);
        let missing = u128::from(bucket - initial.min(bucket));
        CreditLane {
            baseline,
            bucket,
            tat: u128::from(now) * u128::from(baseline) + missing * NANOS_PER_SEC,
        }
    }

    fn cap(&self) -> u128 {
        u128::from(self.bucket) * NANOS_PER_SEC
    }

    /// Earliest start, in nanoseconds, for a request costing `cost` units: when the bucket
    /// holds `cost` credits (a request larger than the bucket waits until it is full).
    pub fn earliest(&self, cost: u64) -> Nanos {
        let inc = u128::from(cost) * NANOS_PER_SEC;
        let tolerance = self.cap().max(inc);
        let earliest = self.tat.saturating_add(inc).saturating_sub(tolerance);
        Nanos::try_from(earliest.div_ceil(u128::from(self.baseline))).unwrap_or(Nanos::MAX)
    }

    /// Records a request costing `cost` units that starts at `start`.
    pub fn commit(&mut self, start: Nanos, cost: u64) {
        let rate = u128::from(self.baseline);
        let start_scaled = u128::from(start) * rate;
        // As in the pacer: catch up to `start` only when it is a whole nanosecond later, so
        // round-ups of exact horizons do not accumulate.
        if start_scaled >= self.tat.saturating_add(rate) {
            self.tat = start_scaled;
        }
        self.tat = self.tat.saturating_add(u128::from(cost) * NANOS_PER_SEC);
    }

    /// Credits in the bucket at `now` (net of requests already admitted to start later).
    pub fn balance(&self, now: Nanos) -> u64 {
        let now_scaled = u128::from(now) * u128::from(self.baseline);
        let debt = self.tat.saturating_sub(now_scaled);
        let left = self.cap().saturating_sub(debt) / NANOS_PER_SEC;
        u64::try_from(left).unwrap_or(u64::MAX).min(self.bucket)
    }

    /// The bucket size.
    pub fn bucket(&self) -> u64 {
        self.bucket
    }

    /// The accrual rate.
    pub fn baseline(&self) -> u64 {
        self.baseline
    }

    /// Changes baseline and bucket at `now`, keeping the balance (clamped to the new bucket).
    pub fn reshape(&mut self, baseline: u64, bucket: u64, now: Nanos) {
        if baseline.clamp(1, MAX_RATE) == self.baseline && bucket == self.bucket {
            return;
        }
        let balance = self.balance(now);
        *self = CreditLane::new(baseline, bucket, balance, now);
    }
}

/// The credit buckets of a two-dimensional limit (ops, bytes), with the shapes they enforce.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Credits {
    ops: Option<(CreditLane, u64)>,
    bytes: Option<(CreditLane, u64)>,
}

impl Credits {
    /// Buckets for `burst` (normalised against `ceiling`) starting at their initial balances.
    pub fn new(ceiling: Rate, burst: Burst, now: Nanos) -> Credits {
        let mut c = Credits::default();
        c.reshape(ceiling, burst, now);
        c
    }

    /// Applies a new ceiling and burst live: a dimension that keeps bursting keeps its
    /// balance (clamped to the new bucket); one that starts bursting starts at its initial
    /// balance; one that stops drops its bucket.
    pub fn reshape(&mut self, ceiling: Rate, burst: Burst, now: Nanos) {
        let burst = burst.normalized(ceiling);
        let apply = |slot: &mut Option<(CreditLane, u64)>, base: u64, s: Option<BurstShape>| {
            *slot = match (slot.take(), s) {
                (_, None) => None,
                (Some((mut lane, _)), Some(s)) => {
                    lane.reshape(base, s.bucket, now);
                    Some((lane, s.rate))
                }
                (None, Some(s)) => Some((CreditLane::new(base, s.bucket, s.initial, now), s.rate)),
            };
        };
        apply(&mut self.ops, ceiling.iops, burst.iops);
        apply(&mut self.bytes, ceiling.bytes_per_sec, burst.bytes);
    }

    /// True when neither dimension bursts.
    pub fn is_empty(&self) -> bool {
        self.ops.is_none() && self.bytes.is_none()
    }

    /// Earliest start allowed by the buckets for a request of `ops` and `bytes`.
    pub fn earliest(&self, ops: u64, bytes: u64) -> Nanos {
        let o = self.ops.as_ref().map_or(0, |(l, _)| l.earliest(ops));
        let b = self.bytes.as_ref().map_or(0, |(l, _)| l.earliest(bytes));
        o.max(b)
    }

    /// Records a request starting at `start`.
    pub fn commit(&mut self, start: Nanos, ops: u64, bytes: u64) {
        if let Some((l, _)) = &mut self.ops {
            l.commit(start, ops);
        }
        if let Some((l, _)) = &mut self.bytes {
            l.commit(start, bytes);
        }
    }

    /// The buckets' states at `now`: (ops, bytes).
    pub fn status(&self, now: Nanos) -> (Option<CreditStatus>, Option<CreditStatus>) {
        let st = |x: &Option<(CreditLane, u64)>| {
            x.as_ref().map(|(l, rate)| CreditStatus {
                balance: l.balance(now),
                bucket: l.bucket(),
                baseline: l.baseline(),
                burst: *rate,
            })
        };
        (st(&self.ops), st(&self.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Nanos = 1_000_000_000;

    #[test]
    fn lane_starts_at_initial_and_refills_at_baseline() {
        let l = CreditLane::new(100, 1_000, 250, 5 * SEC);
        assert_eq!(l.balance(5 * SEC), 250);
        assert_eq!(l.balance(6 * SEC), 350);
        assert_eq!(l.balance(12 * SEC + SEC / 2), 1_000);
        assert_eq!(l.balance(100 * SEC), 1_000);
        // Before `now` (not meaningful, but must not panic or overflow).
        assert_eq!(l.balance(0), 0);
    }

    #[test]
    fn lane_spends_and_waits_for_credits() {
        let mut l = CreditLane::new(10, 100, 100, 0);
        // 100 credits: one request of 100 goes now, the next must wait 1 s for 10.
        assert_eq!(l.earliest(100), 0);
        l.commit(0, 100);
        assert_eq!(l.balance(0), 0);
        assert_eq!(l.earliest(10), SEC);
        l.commit(SEC, 10);
        assert_eq!(l.balance(SEC), 0);
        // A request bigger than the bucket waits until the bucket is full.
        assert_eq!(l.earliest(500), 11 * SEC);
    }

    #[test]
    fn reshape_keeps_balance() {
        let mut l = CreditLane::new(10, 100, 40, 0);
        l.reshape(20, 30, SEC);
        assert_eq!(l.balance(SEC), 30);
        assert_eq!(l.baseline(), 20);
        l.reshape(20, 1_000, SEC);
        assert_eq!(l.balance(SEC), 30);
        assert_eq!(l.balance(2 * SEC), 50);
    }

    #[test]
    fn normalize_drops_what_cannot_burst() {
        let s = |rate, bucket, initial| {
            Some(BurstShape {
                rate,
                bucket,
                initial,
            })
        };
        let ceiling = Rate {
            iops: 300,
            bytes_per_sec: 0,
        };
        let b = Burst {
            iops: s(3_000, 1_000, 5_000),
            bytes: s(10, 10, 10),
        }
        .normalized(ceiling);
        assert_eq!(b.iops, s(3_000, 1_000, 1_000));
        assert_eq!(b.bytes, None, "no bytes baseline: nothing to burst over");
        assert!(Burst {
            iops: s(300, 1_000, 0),
            bytes: None
        }
        .normalized(ceiling)
        .is_none());
        assert_eq!(
            b.peak(ceiling),
            Rate {
                iops: 3_000,
                bytes_per_sec: 0
            }
        );
    }

    #[test]
    fn status_reports() {
        let st = CreditStatus {
            balance: 500,
            bucket: 1_000,
            baseline: 100,
            burst: 300,
        };
        assert_eq!(st.percent(), 50.0);
        assert_eq!(st.time_to_empty(300.0), Some(2.5));
        assert_eq!(
            st.time_to_empty(1_000.0),
            Some(2.5),
            "capped at the burst rate"
        );
        assert_eq!(st.time_to_empty(100.0), None);
        assert_eq!(st.state(200.0), "bursting");
        assert_eq!(st.state(50.0), "accruing");
        assert_eq!(st.state(100.0), "constant");
    }

    #[test]
    fn ontap_tolerance_is_half_a_second_at_plus_50_percent() {
        let b = ontap_tolerance(Rate {
            iops: 1_000,
            bytes_per_sec: 0,
        });
        let s = b.iops.expect("iops bursts");
        assert_eq!((s.rate, s.bucket, s.initial), (1_500, 500, 500));
        assert_eq!(s.burst_seconds(1_000), Some(1.0));
        assert_eq!(b.bytes, None);
    }
}
