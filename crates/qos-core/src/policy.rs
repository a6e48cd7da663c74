//! QoS policy definitions (ONTAP fixed and adaptive policy groups) and their validation.

use std::fmt;
use std::str::FromStr;

use crate::units::IopsPerTb;

mod extensions;
pub use extensions::{
    BurstPolicy, ProvisionedPolicy, MAX_BUCKET_IOPS, MAX_BUCKET_MB, MAX_BURST_SECONDS,
};

/// Largest IOPS value accepted anywhere in a policy (2 billion).
pub const MAX_IOPS: u64 = 2_000_000_000;

/// Largest MB/s value accepted in a policy: 4,194,304 MB/s (4 TiB/s, 1 MB = 2^20 bytes).
pub const MAX_MBPS: u64 = 4_194_304;

/// Largest IOPS/TB density accepted in an adaptive policy (2 billion IOPS per TB).
pub const MAX_IOPS_PER_TB: f64 = 2e9;

/// Errors from policy validation and from parsing policy enums.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// A numeric field is outside its allowed range.
    #[error("{field} = {value} is out of range: allowed {allowed}")]
    OutOfRange {
        /// Configuration name of the field, e.g. `fixed.max_throughput_iops`.
        field: &'static str,
        /// The rejected value, as written.
        value: String,
        /// The allowed range, in words.
        allowed: String,
    },
    /// A minimum (floor) is above the matching maximum (ceiling).
    #[error(
        "{min_field} = {min} is above {max_field} = {max}: the minimum must not exceed the maximum \
         (0 means not enforced)"
    )]
    MinAboveMax {
        /// Configuration name of the minimum field.
        min_field: &'static str,
        /// The minimum value, as written.
        min: String,
        /// Configuration name of the maximum field.
        max_field: &'static str,
        /// The maximum value, as written.
        max: String,
    },
    /// An adaptive policy with a zero peak would block all I/O.
    #[error("adaptive policy needs peak_iops: adaptive.peak_iops must be greater than 0 IOPS/TB")]
    MissingPeak,
    /// Unknown allocation keyword.
    #[error("invalid allocation {input:?}: expected allocated_space (or allocated-space) or used_space (or used-space)")]
    InvalidAllocation {
        /// The rejected input.
        input: String,
    },
    /// A burst extension is missing a part it needs.
    #[error("{field}: {message}")]
    BurstIncomplete {
        /// Configuration name of the field to set or fix.
        field: &'static str,
        /// What is missing, in words.
        message: String,
    },
    /// Unknown block size keyword.
    #[error("invalid block size {input:?}: expected any, 4K, 8K, 16K, 32K, 64K or 128K (K = 1024 bytes; 4k and 4KB also accepted)")]
    InvalidBlockSize {
        /// The rejected input.
        input: String,
    },
}

fn check_u64(field: &'static str, value: u64, max: u64, unit: &str) -> Result<(), PolicyError> {
    if value > max {
        return Err(PolicyError::OutOfRange {
            field,
            value: value.to_string(),
            allowed: format!("0 (not enforced) to {max} {unit}"),
        });
    }
    Ok(())
}

fn check_min_max(
    min_field: &'static str,
    min: u64,
    max_field: &'static str,
    max: u64,
) -> Result<(), PolicyError> {
    if min != 0 && max != 0 && min > max {
        return Err(PolicyError::MinAboveMax {
            min_field,
            min: min.to_string(),
            max_field,
            max: max.to_string(),
        });
    }
    Ok(())
}

/// An ONTAP fixed policy group: absolute ceilings and floors. 0 means "not enforced".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FixedPolicy {
    /// Ceiling in IOPS (`fixed.max_throughput_iops`).
    pub max_iops: u64,
    /// Ceiling in MB/s, 1 MB = 2^20 bytes (`fixed.max_throughput_mbps`).
    pub max_mbps: u64,
    /// Floor in IOPS (`fixed.min_throughput_iops`).
    pub min_iops: u64,
    /// Floor in MB/s (`fixed.min_throughput_mbps`).
    pub min_mbps: u64,
    /// When true the limits are shared by all volumes of the policy group
    /// (one pacer for the group); otherwise each volume gets the full limits.
    pub capacity_shared: bool,
    /// Share of the node's spare capacity (after floors) relative to other flows;
    /// 0 = default (1). A qoslab extension; ONTAP has no weights.
    pub weight: u32,
    /// Burst credits over the ceiling (a qoslab extension; ONTAP has none).
    pub burst: Option<BurstPolicy>,
}

impl FixedPolicy {
    /// Checks ranges (`≤ 2e9` IOPS, `≤ 4,194,304` MB/s) and that each floor is not above its ceiling.
    pub fn validate(&self) -> Result<(), PolicyError> {
        check_u64("fixed.max_throughput_iops", self.max_iops, MAX_IOPS, "IOPS")?;
        check_u64("fixed.min_throughput_iops", self.min_iops, MAX_IOPS, "IOPS")?;
        check_u64("fixed.max_throughput_mbps", self.max_mbps, MAX_MBPS, "MB/s")?;
        check_u64("fixed.min_throughput_mbps", self.min_mbps, MAX_MBPS, "MB/s")?;
        check_weight("fixed.weight", self.weight)?;
        check_min_max(
            "fixed.min_throughput_iops",
            self.min_iops,
            "fixed.max_throughput_iops",
            self.max_iops,
        )?;
        check_min_max(
            "fixed.min_throughput_mbps",
            self.min_mbps,
            "fixed.max_throughput_mbps",
            self.max_mbps,
        )?;
        if let Some(b) = &self.burst {
            b.validate("fixed")?;
            b.check_above(self.max_iops, self.max_mbps)?;
        }
        Ok(())
    }
}

/// Which volume space an adaptive IOPS density is multiplied by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Allocation {
    /// Volume size minus snapshot reserve.
    AllocatedSpace,
    /// Bytes actually used in the volume.
    UsedSpace,
}

impl FromStr for Allocation {
    type Err = PolicyError;
    /// Accepts `allocated_space`, `allocated-space`, `used_space`, `used-space` (case-insensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        match norm.as_str() {
            "allocated_space" => Ok(Self::AllocatedSpace),
            "used_space" => Ok(Self::UsedSpace),
            _ => Err(PolicyError::InvalidAllocation {
                input: s.to_owned(),
            }),
        }
    }
}

impl fmt::Display for Allocation {
    /// Renders `allocated_space` / `used_space`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AllocatedSpace => "allocated_space",
            Self::UsedSpace => "used_space",
        })
    }
}

/// Block size used to turn an adaptive IOPS ceiling into a byte-rate ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BlockSize {
    /// No byte-rate ceiling is derived.
    Any,
    /// 4 KiB.
    K4,
    /// 8 KiB.
    K8,
    /// 16 KiB.
    K16,
    /// 32 KiB (ONTAP's default).
    #[default]
    K32,
    /// 64 KiB.
    K64,
    /// 128 KiB.
    K128,
}

impl BlockSize {
    /// Block size in bytes (K = 1024); `None` for [`BlockSize::Any`].
    pub fn bytes(&self) -> Option<u64> {
        let k = match self {
            Self::Any => return None,
            Self::K4 => 4,
            Self::K8 => 8,
            Self::K16 => 16,
            Self::K32 => 32,
            Self::K64 => 64,
            Self::K128 => 128,
        };
        Some(k * 1024)
    }
}

impl FromStr for BlockSize {
    type Err = PolicyError;
    /// Accepts `any` or `<N>`, `<N>k`, `<N>K`, `<N>KB`, `<N>KiB` for N in 4, 8, 16, 32, 64, 128.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || PolicyError::InvalidBlockSize {
            input: s.to_owned(),
        };
        let t = s.trim();
        if t.eq_ignore_ascii_case("any") {
            return Ok(Self::Any);
        }
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        let (num, unit) = t.split_at(digits);
        if !["k", "kb", "kib"]
            .iter()
            .any(|u| u.eq_ignore_ascii_case(unit.trim_start()))
        {
            return Err(invalid());
        }
        match num {
            "4" => Ok(Self::K4),
            "8" => Ok(Self::K8),
            "16" => Ok(Self::K16),
            "32" => Ok(Self::K32),
            "64" => Ok(Self::K64),
            "128" => Ok(Self::K128),
            _ => Err(invalid()),
        }
    }
}

impl fmt::Display for BlockSize {
    /// Renders the ONTAP form: `any`, `4K`, …, `128K`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes() {
            None => f.write_str("any"),
            Some(b) => write!(f, "{}K", b / 1024),
        }
    }
}

/// An ONTAP adaptive policy group: IOPS limits that scale with volume space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptivePolicy {
    /// Expected (floor) IOPS density.
    pub expected_iops: IopsPerTb,
    /// Peak (ceiling) IOPS density.
    pub peak_iops: IopsPerTb,
    /// Lower bound applied to both computed expected and peak IOPS.
    pub absolute_min_iops: u64,
    /// Space the expected density applies to (default: allocated space).
    pub expected_allocation: Allocation,
    /// Space the peak density applies to (default: used space).
    pub peak_allocation: Allocation,
    /// Block size for the derived byte-rate ceiling (default: 32K).
    pub block_size: BlockSize,
    /// Share of spare capacity after floors; 0 = default (1). See [`FixedPolicy::weight`].
    pub weight: u32,
    /// Burst credits over the computed ceiling (a qoslab extension). The burst rates are
    /// absolute; a volume whose computed ceiling reaches them does not burst (as EBS gp2 at
    /// 1,000 GiB and up).
    pub burst: Option<BurstPolicy>,
}

impl AdaptivePolicy {
    /// An adaptive policy with ONTAP's defaults for allocations (expected: allocated space,
    /// peak: used space) and block size (32K).
    pub fn new(expected_iops: IopsPerTb, peak_iops: IopsPerTb, absolute_min_iops: u64) -> Self {
        Self {
            expected_iops,
            peak_iops,
            absolute_min_iops,
            expected_allocation: Allocation::AllocatedSpace,
            peak_allocation: Allocation::UsedSpace,
            block_size: BlockSize::default(),
            weight: 0,
            burst: None,
        }
    }

    /// Checks densities are finite, non-negative and `≤ 2e9` IOPS/TB, the peak is set,
    /// expected `≤` peak, and `absolute_min_iops ≤ 2e9`.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for (field, v) in [
            ("adaptive.expected_iops", self.expected_iops.0),
            ("adaptive.peak_iops", self.peak_iops.0),
        ] {
            if !(v.is_finite() && (0.0..=MAX_IOPS_PER_TB).contains(&v)) {
                return Err(PolicyError::OutOfRange {
                    field,
                    value: format!("{v}IOPS/TB"),
                    allowed: format!("a finite number from 0 to {MAX_IOPS_PER_TB}IOPS/TB"),
                });
            }
        }
        if self.peak_iops.0 <= 0.0 {
            return Err(PolicyError::MissingPeak);
        }
        if self.expected_iops.0 > self.peak_iops.0 {
            return Err(PolicyError::MinAboveMax {
                min_field: "adaptive.expected_iops",
                min: self.expected_iops.to_string(),
                max_field: "adaptive.peak_iops",
                max: self.peak_iops.to_string(),
            });
        }
        check_u64(
            "adaptive.absolute_min_iops",
            self.absolute_min_iops,
            MAX_IOPS,
            "IOPS",
        )?;
        check_weight("adaptive.weight", self.weight)?;
        if let Some(b) = &self.burst {
            b.validate("adaptive")?;
            if b.max_mbps > 0 && self.block_size.bytes().is_none() {
                return Err(PolicyError::OutOfRange {
                    field: "adaptive.burst.max_throughput_mbps",
                    value: b.max_mbps.to_string(),
                    allowed: "0 when block_size is any (there is no MB/s ceiling to burst over)"
                        .into(),
                });
            }
        }
        Ok(())
    }
}

/// A QoS policy: fixed, adaptive, or a vendor's provisioned model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Policy {
    /// Fixed limits.
    Fixed(FixedPolicy),
    /// Capacity-scaled limits.
    Adaptive(AdaptivePolicy),
    /// A vendor's size-driven model with burst credits (qoslab extension).
    Provisioned(ProvisionedPolicy),
}

/// Largest policy weight.
pub const MAX_WEIGHT: u32 = 10_000;

fn check_weight(field: &'static str, w: u32) -> Result<(), PolicyError> {
    if w > MAX_WEIGHT {
        return Err(PolicyError::OutOfRange {
            field,
            value: w.to_string(),
            allowed: format!("1 to {MAX_WEIGHT} (0 or absent: the default, 1)"),
        });
    }
    Ok(())
}

impl Policy {
    /// The policy's share weight (≥ 1).
    pub fn weight(&self) -> u32 {
        match self {
            Self::Fixed(p) => p.weight,
            Self::Adaptive(p) => p.weight,
            Self::Provisioned(p) => p.weight,
        }
        .max(1)
    }

    /// Validates the inner policy.
    pub fn validate(&self) -> Result<(), PolicyError> {
        match self {
            Self::Fixed(p) => p.validate(),
            Self::Adaptive(p) => p.validate(),
            Self::Provisioned(p) => p.validate(),
        }
    }

    /// The policy's burst extension, if it has one (provisioned policies always burst by
    /// their model and report `None` here).
    pub fn burst(&self) -> Option<&BurstPolicy> {
        match self {
            Self::Fixed(p) => p.burst.as_ref(),
            Self::Adaptive(p) => p.burst.as_ref(),
            Self::Provisioned(_) => None,
        }
    }
}

/// ONTAP's built-in adaptive policy groups, as `(name, policy)`:
/// `extreme` (6144/12288 IOPS/TB, min 1000 IOPS), `performance` (2048/4096, 500),
/// `value` (128/512, 75); default allocations and 32K block size.
pub fn default_adaptive_groups() -> Vec<(&'static str, AdaptivePolicy)> {
    [
        ("extreme", 6144.0, 12288.0, 1000),
        ("performance", 2048.0, 4096.0, 500),
        ("value", 128.0, 512.0, 75),
    ]
    .into_iter()
    .map(|(name, expected, peak, min)| {
        (
            name,
            AdaptivePolicy::new(IopsPerTb(expected), IopsPerTb(peak), min),
        )
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed policy with these limits and nothing else (shared with `extensions`' tests).
    pub(super) fn fixed(max_iops: u64, max_mbps: u64, min_iops: u64, min_mbps: u64) -> FixedPolicy {
        FixedPolicy {
            max_iops,
            max_mbps,
            min_iops,
            min_mbps,
            capacity_shared: false,
            weight: 0,
            burst: None,
        }
    }

    #[test]
    fn fixed_validation() {
        assert_eq!(fixed(0, 0, 0, 0).validate(), Ok(()));
        assert_eq!(fixed(1000, 100, 500, 50).validate(), Ok(()));
        assert_eq!(fixed(0, 0, 500, 50).validate(), Ok(())); // floor without ceiling
        assert_eq!(
            fixed(MAX_IOPS, MAX_MBPS, MAX_IOPS, MAX_MBPS).validate(),
            Ok(())
        );

        let err = fixed(100, 0, 500, 0).validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "fixed.min_throughput_iops = 500 is above fixed.max_throughput_iops = 100: \
             the minimum must not exceed the maximum (0 means not enforced)"
        );
        assert!(matches!(
            fixed(0, 10, 0, 20).validate(),
            Err(PolicyError::MinAboveMax {
                min_field: "fixed.min_throughput_mbps",
                ..
            })
        ));
        let err = fixed(0, 0, MAX_IOPS + 1, 0).validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "fixed.min_throughput_iops = 2000000001 is out of range: allowed 0 (not enforced) to 2000000000 IOPS"
        );
        assert!(matches!(
            fixed(0, MAX_MBPS + 1, 0, 0).validate(),
            Err(PolicyError::OutOfRange {
                field: "fixed.max_throughput_mbps",
                ..
            })
        ));
    }

    #[test]
    fn allocation_parse_and_display() {
        for (s, want) in [
            ("allocated_space", Allocation::AllocatedSpace),
            ("allocated-space", Allocation::AllocatedSpace),
            ("used_space", Allocation::UsedSpace),
            ("Used-Space", Allocation::UsedSpace),
        ] {
            assert_eq!(s.parse::<Allocation>(), Ok(want));
            assert_eq!(want.to_string().parse::<Allocation>(), Ok(want));
        }
        assert_eq!(Allocation::AllocatedSpace.to_string(), "allocated_space");
        assert!("used".parse::<Allocation>().is_err());
    }

    #[test]
    fn block_size_parse_and_display() {
        let cases = [
            ("any", BlockSize::Any, None),
            ("ANY", BlockSize::Any, None),
            ("4k", BlockSize::K4, Some(4096)),
            ("4K", BlockSize::K4, Some(4096)),
            ("4KB", BlockSize::K4, Some(4096)),
            ("8kb", BlockSize::K8, Some(8192)),
            ("16KiB", BlockSize::K16, Some(16384)),
            ("32k", BlockSize::K32, Some(32768)),
            ("64K", BlockSize::K64, Some(65536)),
            ("128k", BlockSize::K128, Some(131072)),
        ];
        for (s, want, bytes) in cases {
            assert_eq!(s.parse::<BlockSize>(), Ok(want), "{s}");
            assert_eq!(want.bytes(), bytes);
            assert_eq!(want.to_string().parse::<BlockSize>(), Ok(want));
        }
        assert_eq!(BlockSize::default(), BlockSize::K32);
        assert_eq!(BlockSize::K128.to_string(), "128K");
        for bad in ["", "2k", "4", "4M", "256k", "k", "4 kb x"] {
            assert!(bad.parse::<BlockSize>().is_err(), "{bad}");
        }
    }

    #[test]
    fn adaptive_validation() {
        let p = |e: f64, pk: f64, m: u64| AdaptivePolicy::new(IopsPerTb(e), IopsPerTb(pk), m);
        assert_eq!(p(128.0, 512.0, 75).validate(), Ok(()));
        assert_eq!(p(512.0, 512.0, 0).validate(), Ok(()));
        assert_eq!(p(0.0, 0.0, 75).validate(), Err(PolicyError::MissingPeak));
        assert_eq!(
            p(0.0, 0.0, 75).validate().unwrap_err().to_string(),
            "adaptive policy needs peak_iops: adaptive.peak_iops must be greater than 0 IOPS/TB"
        );
        assert!(matches!(
            p(1024.0, 512.0, 0).validate(),
            Err(PolicyError::MinAboveMax { .. })
        ));
        for bad in [f64::NAN, f64::INFINITY, -1.0, 3e9] {
            assert!(
                matches!(
                    p(bad, 512.0, 0).validate(),
                    Err(PolicyError::OutOfRange {
                        field: "adaptive.expected_iops",
                        ..
                    })
                ),
                "{bad}"
            );
            assert!(
                matches!(
                    p(1.0, bad, 0).validate(),
                    Err(PolicyError::OutOfRange {
                        field: "adaptive.peak_iops",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            p(1.0, 2.0, MAX_IOPS + 1).validate(),
            Err(PolicyError::OutOfRange {
                field: "adaptive.absolute_min_iops",
                ..
            })
        ));
    }

    #[test]
    fn defaults_are_ontaps_and_valid() {
        let groups = default_adaptive_groups();
        let names: Vec<_> = groups.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["extreme", "performance", "value"]);
        for (name, p) in &groups {
            assert_eq!(Policy::Adaptive(*p).validate(), Ok(()), "{name}");
            assert_eq!(p.expected_allocation, Allocation::AllocatedSpace);
            assert_eq!(p.peak_allocation, Allocation::UsedSpace);
            assert_eq!(p.block_size, BlockSize::K32);
        }
        assert_eq!(groups[0].1.expected_iops, IopsPerTb(6144.0));
        assert_eq!(groups[1].1.peak_iops, IopsPerTb(4096.0));
        assert_eq!(groups[2].1.absolute_min_iops, 75);
    }
}
