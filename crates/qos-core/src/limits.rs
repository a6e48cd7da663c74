//! Effective-limit arithmetic: turning a [`Policy`] and a volume's space into rates.

use crate::credit::{Burst, BurstShape};
use crate::policy::{AdaptivePolicy, Allocation, BurstPolicy, Policy, ProvisionedPolicy};
use crate::units::{IopsPerTb, MIB, TB};

/// Space figures of one volume, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VolumeSpace {
    /// Provisioned volume size.
    pub size: u64,
    /// Percentage of `size` reserved for snapshots (values above 100 count as 100).
    pub snapshot_reserve_percent: u8,
    /// Bytes currently used.
    pub used: u64,
}

impl VolumeSpace {
    /// Allocated space: `size * (100 - snapshot_reserve_percent) / 100`, rounded down,
    /// computed in 128 bits so it never overflows.
    pub fn allocated(&self) -> u64 {
        let keep = 100 - u128::from(self.snapshot_reserve_percent.min(100));
        // keep <= 100, so the quotient is <= size and fits in u64.
        u64::try_from(u128::from(self.size) * keep / 100).unwrap_or(self.size)
    }

    /// The space an adaptive density applies to.
    pub fn for_allocation(&self, allocation: Allocation) -> u64 {
        match allocation {
            Allocation::AllocatedSpace => self.allocated(),
            Allocation::UsedSpace => self.used,
        }
    }
}

pub use crate::rate::Rate;

/// The rates a volume is held to under its policy right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EffectiveLimits {
    /// Maximum rate (enforced by the [`crate::Pacer`]).
    pub ceiling: Rate,
    /// Minimum rate the volume should be guaranteed (for a future scheduler).
    pub floor: Rate,
    /// Burst credits over the ceiling (normalised: only dimensions that can burst). The
    /// ceiling is then the baseline the volume settles at once its credits are spent.
    pub burst: Burst,
}

/// Computes the effective ceiling and floor of a volume.
///
/// * Fixed: ceiling = (`max_iops`, `max_mbps · 2^20`), floor = (`min_iops`, `min_mbps · 2^20`).
///   A shared (`capacity_shared`) policy yields the same numbers; the caller applies them
///   to the whole group instead of to each volume.
/// * Adaptive: `iops = ⌊density · space / 10^12⌋` with space chosen by the allocation
///   setting, raised to `absolute_min_iops` when lower. Ceiling from the peak density,
///   floor from the expected density; each byte rate = its IOPS × block size
///   (0, i.e. unlimited / not set, for block size `any`).
///
/// The policy is expected to be valid ([`Policy::validate`]); invalid densities
/// (negative, NaN) count as 0 and results saturate at `u64::MAX`.
///
/// A burst extension ([`BurstPolicy`]) sits on the ceiling just computed; a provisioned
/// policy takes ceiling and burst from its model for the volume's (provisioned) size, its
/// buckets scaled and its initial balance set as the policy says.
pub fn effective_limits(policy: &Policy, space: &VolumeSpace) -> EffectiveLimits {
    let mut l = match policy {
        Policy::Fixed(p) => EffectiveLimits {
            ceiling: Rate {
                iops: p.max_iops,
                bytes_per_sec: p.max_mbps.saturating_mul(MIB),
            },
            floor: Rate {
                iops: p.min_iops,
                bytes_per_sec: p.min_mbps.saturating_mul(MIB),
            },
            burst: Burst::NONE,
        },
        Policy::Adaptive(p) => adaptive_limits(p, space),
        Policy::Provisioned(p) => return provisioned_limits(p, space),
    };
    if let Some(b) = policy.burst() {
        l.burst = burst_limits(b, l.ceiling);
    }
    l
}

/// A burst extension over `ceiling`, normalised (dimensions whose baseline already reaches
/// the burst ceiling do not burst).
pub fn burst_limits(b: &BurstPolicy, ceiling: Rate) -> Burst {
    let shape = |rate: u64, base: u64, bucket: u64| {
        (rate > 0).then(|| {
            let bucket = if b.seconds > 0 {
                rate.saturating_sub(base).saturating_mul(b.seconds)
            } else {
                bucket
            };
            BurstShape {
                rate,
                bucket,
                initial: percent_of(bucket, b.initial_percent),
            }
        })
    };
    Burst {
        iops: shape(b.max_iops, ceiling.iops, b.bucket_iops),
        bytes: shape(
            b.max_mbps.saturating_mul(MIB),
            ceiling.bytes_per_sec,
            b.bucket_mb.saturating_mul(MIB),
        ),
    }
    .normalized(ceiling)
}

fn percent_of(x: u64, pct: u8) -> u64 {
    u64::try_from(u128::from(x) * u128::from(pct.min(100)) / 100).unwrap_or(x)
}

fn provisioned_limits(p: &ProvisionedPolicy, space: &VolumeSpace) -> EffectiveLimits {
    let m = p.model.limits(space.size);
    let scale = |s: Option<BurstShape>| {
        s.map(|s| {
            let bucket = (s.bucket as f64 * p.bucket_scale).round();
            let bucket = if bucket >= u64::MAX as f64 {
                u64::MAX
            } else {
                bucket as u64
            };
            BurstShape {
                rate: s.rate,
                bucket,
                initial: percent_of(bucket, p.initial_percent),
            }
        })
    };
    EffectiveLimits {
        ceiling: m.ceiling,
        floor: Rate::UNLIMITED,
        burst: Burst {
            iops: scale(m.burst.iops),
            bytes: scale(m.burst.bytes),
        }
        .normalized(m.ceiling),
    }
}

fn adaptive_limits(p: &AdaptivePolicy, space: &VolumeSpace) -> EffectiveLimits {
    let rate = |density: IopsPerTb, allocation: Allocation| {
        let iops = iops_for(density, space.for_allocation(allocation)).max(p.absolute_min_iops);
        let bytes_per_sec = p.block_size.bytes().map_or(0, |b| iops.saturating_mul(b));
        Rate {
            iops,
            bytes_per_sec,
        }
    };
    EffectiveLimits {
        ceiling: rate(p.peak_iops, p.peak_allocation),
        floor: rate(p.expected_iops, p.expected_allocation),
        burst: Burst::NONE,
    }
}

/// `⌊density · bytes / 10^12⌋`, saturating.
///
/// Integral densities (all of ONTAP's) are computed exactly in 128-bit integers.
/// Fractional densities use `f64`; a product within a relative 1e-9 of an integer is
/// snapped to it so that decimal inputs like `0.3IOPS/TB`, which `f64` stores slightly
/// low, are not floored one below their exact decimal result.
pub fn iops_for(density: IopsPerTb, bytes: u64) -> u64 {
    let d = density.0;
    if d.is_nan() || d <= 0.0 || bytes == 0 {
        return 0;
    }
    if d.fract() == 0.0 && d < 1e18 {
        // Exact: d is an integer below 2^60, bytes below 2^64; the product fits in u128.
        let v = (d as u128) * u128::from(bytes) / u128::from(TB);
        return u64::try_from(v).unwrap_or(u64::MAX);
    }
    let x = d * (bytes as f64) / (TB as f64);
    if !x.is_finite() || x >= u64::MAX as f64 {
        return u64::MAX;
    }
    let r = x.round();
    let v = if (x - r).abs() <= r.abs() * 1e-9 {
        r
    } else {
        x.floor()
    };
    v as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{default_adaptive_groups, BlockSize, FixedPolicy};

    const GB: u64 = 1_000_000_000;

    fn group(name: &str) -> AdaptivePolicy {
        default_adaptive_groups()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p)
            .expect("default group exists")
    }

    fn rate(iops: u64, block: u64) -> Rate {
        Rate {
            iops,
            bytes_per_sec: iops * block,
        }
    }

    /// `check(policy, space, ceiling_iops, floor_iops)` for 32K block size policies.
    fn check(p: AdaptivePolicy, space: VolumeSpace, ceiling_iops: u64, floor_iops: u64) {
        let got = effective_limits(&Policy::Adaptive(p), &space);
        let block = p.block_size.bytes().unwrap_or(0);
        let want = EffectiveLimits {
            ceiling: rate(ceiling_iops, block),
            floor: rate(floor_iops, block),
            burst: Burst::NONE,
        };
        assert_eq!(got, want, "policy {p:?} space {space:?}");
    }

    fn vol(size: u64, reserve: u8, used: u64) -> VolumeSpace {
        VolumeSpace {
            size,
            snapshot_reserve_percent: reserve,
            used,
        }
    }

    #[test]
    fn allocated_space() {
        assert_eq!(vol(100 * GB, 5, 0).allocated(), 95 * GB);
        assert_eq!(vol(100 * GB, 0, 0).allocated(), 100 * GB);
        assert_eq!(vol(100 * GB, 100, 0).allocated(), 0);
        assert_eq!(vol(100 * GB, 255, 0).allocated(), 0);
        assert_eq!(vol(u64::MAX, 0, 0).allocated(), u64::MAX);
        assert_eq!(vol(u64::MAX, 50, 0).allocated(), u64::MAX / 2);
        assert_eq!(vol(199, 50, 0).allocated(), 99);
    }

    #[test]
    fn seed_numbers_50_iops_per_gb() {
        // 50 IOPS/GB on 100 GB with 5% snapshot reserve: 95e9 * 50_000 / 1e12 = 4750.
        let p = AdaptivePolicy {
            expected_iops: IopsPerTb(50_000.0),
            peak_iops: IopsPerTb(50_000.0),
            absolute_min_iops: 0,
            expected_allocation: Allocation::AllocatedSpace,
            peak_allocation: Allocation::AllocatedSpace,
            block_size: BlockSize::K32,
            weight: 0,
            burst: None,
        };
        check(p, vol(100 * GB, 5, 0), 4_750, 4_750);
        check(p, vol(200 * GB, 5, 0), 9_500, 9_500);
        // Non-integral densities (f64 path) still land on the exact decimal result.
        assert_eq!(iops_for(IopsPerTb(49_999.999_999_999_99), 95 * GB), 4_750);
        assert_eq!(iops_for(IopsPerTb(0.3), 10 * TB), 3);
        assert_eq!(iops_for(IopsPerTb(0.5), 3 * TB), 1);
    }

    #[test]
    fn default_groups_table() {
        // (group, size, reserve %, used, ceiling iops, floor iops)
        // ceiling = max(peak/TB * used, min), floor = max(expected/TB * allocated, min)
        let table: &[(&str, u64, u8, u64, u64, u64)] = &[
            ("extreme", TB, 0, TB, 12_288, 6_144),
            ("extreme", TB, 5, TB / 2, 6_144, 5_836), // 6144 * 0.95 = 5836.8
            ("extreme", 10 * TB, 0, 10 * TB, 122_880, 61_440),
            ("extreme", 100 * GB, 0, 10 * GB, 1_000, 1_000), // both below absolute min
            ("extreme", 100 * GB, 0, 100 * GB, 1_228, 1_000), // 1228.8 -> 1228
            ("performance", TB, 0, TB, 4_096, 2_048),
            ("performance", 2 * TB, 5, TB, 4_096, 3_891), // 2048 * 1.9 = 3891.2
            ("performance", 100 * GB, 0, 100 * GB, 500, 500), // 409.6 / 204.8 -> min 500
            ("performance", 500 * GB, 0, 250 * GB, 1_024, 1_024),
            ("value", TB, 0, TB, 512, 128),
            ("value", 10 * TB, 0, 10 * TB, 5_120, 1_280),
            ("value", 100 * GB, 0, 100 * GB, 75, 75), // 51.2 / 12.8 -> min 75
            ("value", 1 << 40, 0, 1 << 40, 562, 140), // 1 TiB: 562.9 / 140.7
        ];
        for &(name, size, reserve, used, ceiling, floor) in table {
            check(group(name), vol(size, reserve, used), ceiling, floor);
        }
    }

    #[test]
    fn used_space_at_zero_gets_absolute_min() {
        for (name, p) in default_adaptive_groups() {
            let got = effective_limits(&Policy::Adaptive(p), &vol(10 * TB, 5, 0));
            assert_eq!(got.ceiling.iops, p.absolute_min_iops, "{name}");
            assert!(got.floor.iops > p.absolute_min_iops, "{name}");
        }
        // A policy with both sides on used space on an empty volume: both at the min.
        let mut p = group("performance");
        p.expected_allocation = Allocation::UsedSpace;
        check(p, vol(10 * TB, 0, 0), 500, 500);
        // And with no absolute min the ceiling is 0, which callers must treat with care.
        p.absolute_min_iops = 0;
        check(p, vol(10 * TB, 0, 0), 0, 0);
    }

    #[test]
    fn block_size_any_gives_no_byte_ceiling() {
        let mut p = group("performance");
        p.block_size = BlockSize::Any;
        let got = effective_limits(&Policy::Adaptive(p), &vol(TB, 0, TB));
        assert_eq!(
            got,
            EffectiveLimits {
                ceiling: Rate {
                    iops: 4_096,
                    bytes_per_sec: 0
                },
                floor: Rate {
                    iops: 2_048,
                    bytes_per_sec: 0
                },
                burst: Burst::NONE,
            }
        );
        p.block_size = BlockSize::K4;
        check(p, vol(TB, 0, TB), 4_096, 2_048);
        p.block_size = BlockSize::K128;
        check(p, vol(TB, 0, TB), 4_096, 2_048);
    }

    #[test]
    fn fixed_policies() {
        let p = FixedPolicy {
            max_iops: 5_000,
            max_mbps: 100,
            min_iops: 1_000,
            min_mbps: 10,
            capacity_shared: true,
            weight: 0,
            burst: None,
        };
        let got = effective_limits(&Policy::Fixed(p), &vol(TB, 5, 0));
        assert_eq!(
            got,
            EffectiveLimits {
                ceiling: Rate {
                    iops: 5_000,
                    bytes_per_sec: 100 << 20
                },
                floor: Rate {
                    iops: 1_000,
                    bytes_per_sec: 10 << 20
                },
                burst: Burst::NONE,
            }
        );
        let none = effective_limits(&Policy::Fixed(FixedPolicy::default()), &vol(0, 0, 0));
        assert!(none.ceiling.is_unlimited() && none.floor.is_unlimited());
    }

    #[test]
    fn burst_on_fixed_adaptive_and_provisioned() {
        use crate::policy::{BurstPolicy, ProvisionedPolicy};
        use crate::presets::Model;
        const GIB: u64 = 1 << 30;
        // Fixed 300 IOPS bursting to 3000 for 60 s from full (SolidFire's rule): 162,000.
        let p = FixedPolicy {
            max_iops: 300,
            burst: Some(BurstPolicy {
                max_iops: 3_000,
                seconds: 60,
                initial_percent: 50,
                ..BurstPolicy::default()
            }),
            ..FixedPolicy::default()
        };
        let l = effective_limits(&Policy::Fixed(p), &vol(TB, 0, 0));
        let s = l.burst.iops.unwrap();
        assert_eq!((s.rate, s.bucket, s.initial), (3_000, 162_000, 81_000));
        assert_eq!(l.burst.bytes, None);
        // Adaptive like gp2: absolute burst ceiling; at 1 TB the peak reaches it.
        let mut a = group("performance");
        a.burst = Some(BurstPolicy {
            max_iops: 3_000,
            bucket_iops: 5_400_000,
            ..BurstPolicy::default()
        });
        let small = effective_limits(&Policy::Adaptive(a), &vol(TB, 0, TB / 10));
        assert_eq!(small.ceiling.iops, 500);
        assert_eq!(small.burst.iops.unwrap().bucket, 5_400_000);
        let big = effective_limits(&Policy::Adaptive(a), &vol(TB, 0, TB));
        assert_eq!(big.ceiling.iops, 4_096);
        assert!(big.burst.is_none());
        // Provisioned gp2 on 100 GiB with a 10x smaller bucket, half full.
        let g = ProvisionedPolicy {
            bucket_scale: 0.1,
            initial_percent: 50,
            ..ProvisionedPolicy::new(Model::EbsGp2)
        };
        let l = effective_limits(&Policy::Provisioned(g), &vol(100 * GIB, 5, 0));
        assert_eq!(l.ceiling.iops, 300, "size, not allocated space");
        let s = l.burst.iops.unwrap();
        assert_eq!((s.rate, s.bucket, s.initial), (3_000, 540_000, 270_000));
        assert_eq!(l.floor, Rate::UNLIMITED);
    }

    #[test]
    fn iops_for_edges() {
        assert_eq!(iops_for(IopsPerTb(f64::NAN), TB), 0);
        assert_eq!(iops_for(IopsPerTb(-5.0), TB), 0);
        assert_eq!(iops_for(IopsPerTb(5.0), 0), 0);
        assert_eq!(iops_for(IopsPerTb(1e17), u64::MAX), u64::MAX);
        assert_eq!(iops_for(IopsPerTb(f64::INFINITY), 1), u64::MAX);
        assert_eq!(iops_for(IopsPerTb(1e300), TB), u64::MAX);
        assert_eq!(iops_for(IopsPerTb(2048.0), u64::MAX), 37_778_931_862);
    }
}
