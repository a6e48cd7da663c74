//! qoslab's extensions of ONTAP's policy shapes: a burst on a fixed or adaptive policy's
//! ceiling, and provisioned policies (a vendor's model per volume).

use super::{check_u64, check_weight, PolicyError, MAX_IOPS, MAX_MBPS};
use crate::presets::Model;

/// Largest burst bucket duration: 30 days.
pub const MAX_BURST_SECONDS: u64 = 30 * 86_400;
/// Largest bucket in I/O credits (10^15).
pub const MAX_BUCKET_IOPS: u64 = 1_000_000_000_000_000;
/// Largest bucket in MiB of credits (1 EiB).
pub const MAX_BUCKET_MB: u64 = 1 << 40;

/// Burst credits on a fixed or adaptive policy's ceiling (a qoslab extension of ONTAP's
/// shapes; see [`crate::credit`]). The policy's ceiling is the baseline: credits accrue while
/// a volume runs below it and are spent above it, up to the burst ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BurstPolicy {
    /// Burst ceiling in IOPS (`burst.max_throughput_iops`); 0 = the IOPS ceiling is flat.
    pub max_iops: u64,
    /// Burst ceiling in MB/s, 1 MB = 2^20 bytes (`burst.max_throughput_mbps`); 0 = flat.
    pub max_mbps: u64,
    /// Bucket size in I/O credits (`burst.bucket_iops`).
    pub bucket_iops: u64,
    /// Bucket size in MB of credits (`burst.bucket_mb`).
    pub bucket_mb: u64,
    /// Bucket given as seconds at the full burst rate from a full bucket (`burst.duration`):
    /// bucket = (burst − ceiling) × seconds per dimension. Exclusive with `bucket_*`.
    pub seconds: u64,
    /// Balance a volume starts with, percent of the bucket (`burst.initial_percent`).
    pub initial_percent: u8,
}

impl Default for BurstPolicy {
    fn default() -> Self {
        BurstPolicy {
            max_iops: 0,
            max_mbps: 0,
            bucket_iops: 0,
            bucket_mb: 0,
            seconds: 0,
            initial_percent: 100,
        }
    }
}

impl BurstPolicy {
    /// Ranges, and that each bursting dimension has a bucket and each bucket a burst rate.
    pub fn validate(&self, kind: &'static str) -> Result<(), PolicyError> {
        let f = |name: &'static str| -> &'static str {
            match (kind, name) {
                ("fixed", "iops") => "fixed.burst.max_throughput_iops",
                ("fixed", "mbps") => "fixed.burst.max_throughput_mbps",
                ("fixed", "bi") => "fixed.burst.bucket_iops",
                ("fixed", "bm") => "fixed.burst.bucket_mb",
                ("fixed", "s") => "fixed.burst.duration",
                ("fixed", _) => "fixed.burst.initial_percent",
                (_, "iops") => "adaptive.burst.max_throughput_iops",
                (_, "mbps") => "adaptive.burst.max_throughput_mbps",
                (_, "bi") => "adaptive.burst.bucket_iops",
                (_, "bm") => "adaptive.burst.bucket_mb",
                (_, "s") => "adaptive.burst.duration",
                _ => "adaptive.burst.initial_percent",
            }
        };
        check_u64(f("iops"), self.max_iops, MAX_IOPS, "IOPS")?;
        check_u64(f("mbps"), self.max_mbps, MAX_MBPS, "MB/s")?;
        check_u64(f("bi"), self.bucket_iops, MAX_BUCKET_IOPS, "I/O credits")?;
        check_u64(f("bm"), self.bucket_mb, MAX_BUCKET_MB, "MB of credits")?;
        check_u64(f("s"), self.seconds, MAX_BURST_SECONDS, "seconds")?;
        if self.initial_percent > 100 {
            return Err(PolicyError::OutOfRange {
                field: f("pct"),
                value: self.initial_percent.to_string(),
                allowed: "0 to 100 (percent of the bucket; default 100)".into(),
            });
        }
        if self.max_iops == 0 && self.max_mbps == 0 {
            return Err(PolicyError::BurstIncomplete {
                field: f("iops"),
                message:
                    "a burst needs a burst ceiling: max_throughput_iops and/or max_throughput_mbps"
                        .into(),
            });
        }
        if self.seconds > 0 && (self.bucket_iops > 0 || self.bucket_mb > 0) {
            return Err(PolicyError::BurstIncomplete {
                field: f("s"),
                message:
                    "give the bucket either as a duration or as bucket_iops/bucket_mb, not both"
                        .into(),
            });
        }
        for (rate, bucket, rf, bf) in [
            (self.max_iops, self.bucket_iops, f("iops"), f("bi")),
            (self.max_mbps, self.bucket_mb, f("mbps"), f("bm")),
        ] {
            if rate > 0 && bucket == 0 && self.seconds == 0 {
                return Err(PolicyError::BurstIncomplete {
                    field: bf,
                    message: format!("{rf} = {rate} needs a bucket: {bf} or a duration"),
                });
            }
            if rate == 0 && bucket > 0 {
                return Err(PolicyError::BurstIncomplete {
                    field: rf,
                    message: format!("{bf} = {bucket} needs a burst ceiling: {rf}"),
                });
            }
        }
        Ok(())
    }

    /// For fixed policies: each burst ceiling sits above a ceiling of the same dimension.
    pub(super) fn check_above(&self, max_iops: u64, max_mbps: u64) -> Result<(), PolicyError> {
        for (burst, ceiling, bf, cf) in [
            (
                self.max_iops,
                max_iops,
                "fixed.burst.max_throughput_iops",
                "fixed.max_throughput_iops",
            ),
            (
                self.max_mbps,
                max_mbps,
                "fixed.burst.max_throughput_mbps",
                "fixed.max_throughput_mbps",
            ),
        ] {
            if burst > 0 && burst <= ceiling {
                return Err(PolicyError::OutOfRange {
                    field: bf,
                    value: burst.to_string(),
                    allowed: format!("above {cf} = {ceiling} (the baseline it bursts over)"),
                });
            }
            if burst > 0 && ceiling == 0 {
                return Err(PolicyError::BurstIncomplete {
                    field: bf,
                    message: format!("{bf} = {burst} needs a baseline to burst over: set {cf}"),
                });
            }
        }
        Ok(())
    }
}

/// A vendor's provisioned-performance model applied per volume (a qoslab extension): the
/// volume's size decides its baseline, burst and bucket ([`crate::presets::Model`]). Always
/// per volume, never shared; no floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProvisionedPolicy {
    /// The model (`provisioned.model`).
    pub model: Model,
    /// Buckets are multiplied by this (`provisioned.bucket_scale`, default 1): 0.1 makes
    /// bursts and refills 10x shorter at the same rates, for labs that cannot wait hours.
    pub bucket_scale: f64,
    /// Balance a volume starts with, percent of its bucket (default 100).
    pub initial_percent: u8,
    /// Share of spare capacity; 0 = default (1).
    pub weight: u32,
}

impl ProvisionedPolicy {
    /// A policy for `model` with full-size buckets starting full.
    pub fn new(model: Model) -> Self {
        ProvisionedPolicy {
            model,
            bucket_scale: 1.0,
            initial_percent: 100,
            weight: 0,
        }
    }

    /// Checks `0 < bucket_scale ≤ 1000`, `initial_percent ≤ 100` and the weight.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let s = self.bucket_scale;
        if !(s.is_finite() && s > 0.0 && s <= 1000.0) {
            return Err(PolicyError::OutOfRange {
                field: "provisioned.bucket_scale",
                value: s.to_string(),
                allowed: "above 0, up to 1000 (1 = the vendor's bucket)".into(),
            });
        }
        if self.initial_percent > 100 {
            return Err(PolicyError::OutOfRange {
                field: "provisioned.initial_percent",
                value: self.initial_percent.to_string(),
                allowed: "0 to 100 (percent of the bucket; default 100)".into(),
            });
        }
        check_weight("provisioned.weight", self.weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::fixed;
    use crate::policy::{FixedPolicy, Policy};

    #[test]
    fn burst_validation() {
        let b = |max_iops, max_mbps, bucket_iops, bucket_mb, seconds| BurstPolicy {
            max_iops,
            max_mbps,
            bucket_iops,
            bucket_mb,
            seconds,
            initial_percent: 100,
        };
        let with = |burst| FixedPolicy {
            burst: Some(burst),
            ..fixed(300, 100, 0, 0)
        };
        assert_eq!(with(b(3_000, 0, 5_400_000, 0, 0)).validate(), Ok(()));
        assert_eq!(with(b(3_000, 200, 0, 0, 60)).validate(), Ok(()));
        let msg = |p: FixedPolicy| p.validate().unwrap_err().to_string();
        assert_eq!(
            msg(with(b(3_000, 0, 0, 0, 0))),
            "fixed.burst.bucket_iops: fixed.burst.max_throughput_iops = 3000 needs a bucket: \
             fixed.burst.bucket_iops or a duration"
        );
        assert!(msg(with(b(200, 0, 10, 0, 0))).contains("above fixed.max_throughput_iops = 300"));
        assert!(msg(with(b(0, 0, 10, 0, 0))).contains("needs a burst ceiling"));
        assert!(msg(with(b(3_000, 0, 10, 0, 60))).contains("not both"));
        assert_eq!(with(b(0, 200, 0, 10, 0)).validate(), Ok(()));
        let no_base = FixedPolicy {
            burst: Some(b(3_000, 0, 10, 0, 0)),
            ..fixed(0, 100, 0, 0)
        };
        assert!(msg(no_base).contains("needs a baseline"));
        let pct = BurstPolicy {
            initial_percent: 101,
            ..b(3_000, 0, 10, 0, 0)
        };
        assert!(msg(with(pct)).contains("initial_percent"));
    }

    #[test]
    fn provisioned_validation() {
        let mut p = ProvisionedPolicy::new(Model::EbsGp2);
        assert_eq!(Policy::Provisioned(p).validate(), Ok(()));
        p.bucket_scale = 0.0;
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bucket_scale"));
        p.bucket_scale = f64::NAN;
        assert!(p.validate().is_err());
        p.bucket_scale = 0.1;
        p.initial_percent = 120;
        assert!(p.validate().is_err());
    }
}
