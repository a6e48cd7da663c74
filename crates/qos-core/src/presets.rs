//! Vendors' provisioned-performance models as pure data, each with its source.
//!
//! Every model here is the same token bucket ([`crate::credit`]); what differs is how the
//! baseline, the burst rate and the bucket follow from what the customer bought. The test
//! vectors the vendors publish are reproduced in virtual time by
//! `tests/credit_vectors.rs`. Where a vendor leaves a number undocumented, the choice made
//! here says so.
//!
//! Sources (also listed in docs/PROVISIONED.md):
//! * EBS gp2: AWS, *Amazon EBS volume types* / *General Purpose SSD volumes*
//!   (`awsdocs/amazon-ec2-user-guide`, `doc_source/ebs-volume-types.md`,
//!   `general-purpose.md`; live: <https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html>).
//! * EBS st1/sc1: AWS, *Throughput Optimized HDD and Cold HDD volumes* (`hdd-vols.md`).
//! * Azure Premium SSD credit bursting: Microsoft, *Managed disk bursting*
//!   (`MicrosoftDocs/azure-compute-docs`, `articles/virtual-machines/disk-bursting.md`) and
//!   *Scalability and performance targets for VM disks*.
//! * NetApp Element (SolidFire): KB *How do Burst Credits Work in the Context of Element
//!   Quality of Service (QoS)?* (burstTime fixed at 60 s; bucket = (burstIOPS − maxIOPS) × 60).
//! * FSx for ONTAP: AWS, *Amazon FSx for NetApp ONTAP performance*
//!   (`awsdocs/amazon-fsx-ontap-user-guide`, `doc_source/performance.md`, table *Impact of
//!   throughput capacity on performance*).

use std::fmt;
use std::str::FromStr;

use crate::credit::{Burst, BurstShape};
use crate::rate::Rate;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// A size-driven provisioned-performance model: the volume's size decides its baseline,
/// burst and bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Model {
    /// AWS EBS General Purpose SSD (gp2): IOPS credits.
    EbsGp2,
    /// AWS EBS Throughput Optimized HDD (st1): throughput credits.
    EbsSt1,
    /// AWS EBS Cold HDD (sc1): throughput credits.
    EbsSc1,
    /// Azure Premium SSD (v1) with credit-based bursting (P20 and smaller burst).
    AzurePremiumSsd,
}

/// A model's limits for one volume size: `ceiling` is the baseline, `burst` the burst rate
/// and bucket per dimension (initial balance: full).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// The sustained limit (baseline).
    pub ceiling: Rate,
    /// Burst credits over it.
    pub burst: Burst,
}

impl Model {
    /// Every model, in a stable order.
    pub const ALL: [Model; 4] = [
        Model::EbsGp2,
        Model::EbsSt1,
        Model::EbsSc1,
        Model::AzurePremiumSsd,
    ];

    /// The model's name in configs, the API and the CLI.
    pub fn name(&self) -> &'static str {
        match self {
            Model::EbsGp2 => "ebs-gp2",
            Model::EbsSt1 => "ebs-st1",
            Model::EbsSc1 => "ebs-sc1",
            Model::AzurePremiumSsd => "azure-premium-ssd",
        }
    }

    /// One line on what the model is, for `--help` and docs.
    pub fn summary(&self) -> &'static str {
        match self {
            Model::EbsGp2 => {
                "3 IOPS/GiB (min 100, max 16,000); below 3,000 bursts to 3,000 IOPS on a \
                 5.4 M I/O-credit bucket; 128 MiB/s up to 170 GiB, 250 MiB/s above"
            }
            Model::EbsSt1 => {
                "40 MiB/s per TiB baseline, 250 MiB/s per TiB burst (both capped at 500), \
                 bucket 1 TiB of credits per TiB; 500 IOPS"
            }
            Model::EbsSc1 => {
                "12 MiB/s per TiB baseline, 80 MiB/s per TiB burst (capped at 192 / 250), \
                 bucket 1 TiB of credits per TiB; 250 IOPS"
            }
            Model::AzurePremiumSsd => {
                "the P tier the size rounds up to; P20 (512 GiB) and smaller burst to 3,500 \
                 IOPS and 170 MB/s for 30 minutes from a full bucket"
            }
        }
    }

    /// The limits of a volume of `size` bytes under this model, buckets full.
    pub fn limits(&self, size: u64) -> ModelLimits {
        match self {
            Model::EbsGp2 => gp2(size),
            Model::EbsSt1 => hdd(size, 40, 250, 500, 500, 500),
            Model::EbsSc1 => hdd(size, 12, 80, 192, 250, 250),
            Model::AzurePremiumSsd => azure_premium(size),
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown model name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provisioned-performance model {input:?}: expected one of ebs-gp2, ebs-st1, ebs-sc1, azure-premium-ssd")]
pub struct UnknownModel {
    /// The rejected input.
    pub input: String,
}

impl FromStr for Model {
    type Err = UnknownModel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('_', "-");
        Model::ALL
            .into_iter()
            .find(|m| m.name() == norm)
            .ok_or_else(|| UnknownModel { input: s.into() })
    }
}

fn full(rate: u64, bucket: u64) -> Option<BurstShape> {
    Some(BurstShape {
        rate,
        bucket,
        initial: bucket,
    })
}

/// gp2 burst rate and bucket (AWS: "3,000 IOPS", "5.4 million I/O credits", initial balance
/// full).
pub const GP2_BURST_IOPS: u64 = 3_000;
/// gp2 bucket, I/O credits.
pub const GP2_BUCKET: u64 = 5_400_000;

/// gp2: baseline 3 IOPS per GiB of volume size, at least 100 (≤ 33.33 GiB) and at most
/// 16,000 (≥ 5,334 GiB); volumes whose baseline is below 3,000 burst to 3,000 IOPS on a
/// 5.4 M-credit bucket that starts full. Throughput: 128 MiB/s up to 170 GiB, 250 MiB/s above
/// (AWS: 170–334 GiB reach 250 MiB/s only while burst credits last; modelled as a flat 250).
fn gp2(size: u64) -> ModelLimits {
    let iops = u64::try_from(u128::from(size) * 3 / u128::from(GIB))
        .unwrap_or(u64::MAX)
        .clamp(100, 16_000);
    let mbps = if size <= 170 * GIB { 128 } else { 250 };
    let ceiling = Rate {
        iops,
        bytes_per_sec: mbps * MIB,
    };
    let burst = Burst {
        iops: full(GP2_BURST_IOPS, GP2_BUCKET),
        bytes: None,
    };
    ModelLimits {
        ceiling,
        burst: burst.normalized(ceiling),
    }
}

/// st1/sc1: per TiB of size, `base` MiB/s baseline (capped at `base_cap`) and `burst` MiB/s
/// burst (capped at `burst_cap`); the bucket holds 1 TiB of credits per TiB of size (i.e.
/// the size in bytes); at most `iops` IOPS. AWS does not state the initial balance for
/// st1/sc1: full is assumed.
fn hdd(size: u64, base: u64, burst: u64, base_cap: u64, burst_cap: u64, iops: u64) -> ModelLimits {
    // MiB/s per TiB × size / 2^40 × 2^20 bytes = rate × size / 2^20 bytes/s.
    let per = |r: u64, cap: u64| {
        u64::try_from(u128::from(size) * u128::from(r) / u128::from(MIB))
            .unwrap_or(u64::MAX)
            .min(cap * MIB)
    };
    let ceiling = Rate {
        iops,
        bytes_per_sec: per(base, base_cap).max(1),
    };
    let b = Burst {
        iops: None,
        bytes: full(per(burst, burst_cap), size),
    };
    ModelLimits {
        ceiling,
        burst: b.normalized(ceiling),
    }
}

/// Azure Premium SSD tiers: (name, size GiB, provisioned IOPS, provisioned MB/s).
pub const AZURE_PREMIUM_TIERS: [(&str, u64, u64, u64); 14] = [
    ("P1", 4, 120, 25),
    ("P2", 8, 120, 25),
    ("P3", 16, 120, 25),
    ("P4", 32, 120, 25),
    ("P6", 64, 240, 50),
    ("P10", 128, 500, 100),
    ("P15", 256, 1_100, 125),
    ("P20", 512, 2_300, 150),
    ("P30", 1_024, 5_000, 200),
    ("P40", 2_048, 7_500, 250),
    ("P50", 4_096, 7_500, 250),
    ("P60", 8_192, 16_000, 500),
    ("P70", 16_384, 18_000, 750),
    ("P80", 32_767, 20_000, 900),
];

/// Azure credit bursting for P20 and smaller: to 3,500 IOPS and 170 MB/s.
pub const AZURE_BURST_IOPS: u64 = 3_500;
/// Azure credit-burst throughput, MB/s (read as MiB/s, qoslab's MB).
pub const AZURE_BURST_MBPS: u64 = 170;
/// "Up to 30 minutes at the maximum burst rate" from a full bucket.
pub const AZURE_BURST_SECONDS: u64 = 30 * 60;

/// The Azure Premium SSD tier a volume of `size` bytes is billed as (the smallest whose size
/// is at least the volume's; the largest beyond P80).
pub fn azure_premium_tier(size: u64) -> (&'static str, u64, u64, u64) {
    AZURE_PREMIUM_TIERS
        .into_iter()
        .find(|t| size <= t.1 * GIB)
        .unwrap_or(AZURE_PREMIUM_TIERS[AZURE_PREMIUM_TIERS.len() - 1])
}

/// Azure Premium SSD: the tier's provisioned IOPS and MB/s; tiers up to P20 (512 GiB) burst to
/// 3,500 IOPS and 170 MB/s, each dimension with its own bucket. Microsoft states the burst
/// lasts up to 30 minutes at the maximum burst rate from a full bucket but not the bucket
/// size; it is derived here as (burst − provisioned) × 1,800 s per dimension.
fn azure_premium(size: u64) -> ModelLimits {
    let (_, gib, iops, mbps) = azure_premium_tier(size);
    let ceiling = Rate {
        iops,
        bytes_per_sec: mbps * MIB,
    };
    let burst = if gib <= 512 {
        let bi = AZURE_BURST_IOPS;
        let bb = AZURE_BURST_MBPS * MIB;
        Burst {
            iops: full(bi, (bi - iops) * AZURE_BURST_SECONDS),
            bytes: full(bb, (bb - ceiling.bytes_per_sec) * AZURE_BURST_SECONDS),
        }
    } else {
        Burst::NONE
    };
    ModelLimits {
        ceiling,
        burst: burst.normalized(ceiling),
    }
}

/// NetApp Element (SolidFire) QoS burst: `burstIOPS` above `maxIOPS` on a bucket of
/// `(burstIOPS − maxIOPS) × burstTime` credits, burstTime fixed at 60 s. The initial balance
/// is not documented; full is assumed. (minIOPS is the policy's floor.)
pub fn solidfire_burst(max_iops: u64, burst_iops: u64) -> Burst {
    let bucket = burst_iops.saturating_sub(max_iops).saturating_mul(60);
    Burst {
        iops: full(burst_iops, bucket),
        bytes: None,
    }
    .normalized(Rate {
        iops: max_iops,
        bytes_per_sec: 0,
    })
}

/// One FSx for ONTAP throughput-capacity tier (first generation, per the table in AWS's
/// performance page). Throughputs are AWS's MBps: 10^6 bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsxTier {
    /// Provisioned throughput capacity, MBps.
    pub throughput_capacity: u64,
    /// Network throughput, bytes/s: baseline and burst (`None`: no burst).
    pub network: (u64, Option<u64>),
    /// In-memory cache, bytes (GB = 10^9).
    pub memory_cache: u64,
    /// NVMe cache, bytes (Multi-AZ file systems only).
    pub nvme_cache: u64,
    /// Disk throughput the file server supports, bytes/s: baseline and burst.
    pub disk: (u64, Option<u64>),
    /// SSD drive IOPS the file server supports: baseline and burst. Used only by reads that
    /// miss both caches.
    pub disk_iops: (u64, Option<u64>),
}

const MB: u64 = 1_000_000;
const GB: u64 = 1_000_000_000;

/// AWS's table *Impact of throughput capacity on performance* (FSx for ONTAP user guide,
/// `doc_source/performance.md`, 2022 snapshot; the live page adds newer generations).
pub const FSX_ONTAP_TIERS: [FsxTier; 5] = [
    FsxTier {
        throughput_capacity: 128,
        network: (150 * MB, Some(1_250 * MB)),
        memory_cache: 16 * GB,
        nvme_cache: 150 * GB,
        disk: (128 * MB, Some(600 * MB)),
        disk_iops: (6_000, Some(18_750)),
    },
    FsxTier {
        throughput_capacity: 256,
        network: (300 * MB, Some(1_250 * MB)),
        memory_cache: 32 * GB,
        nvme_cache: 300 * GB,
        disk: (256 * MB, Some(600 * MB)),
        disk_iops: (12_000, Some(18_750)),
    },
    FsxTier {
        throughput_capacity: 512,
        network: (625 * MB, Some(1_250 * MB)),
        memory_cache: 32 * GB,
        nvme_cache: 600 * GB,
        disk: (512 * MB, Some(600 * MB)),
        disk_iops: (18_750, None),
    },
    FsxTier {
        throughput_capacity: 1_024,
        network: (1_500 * MB, None),
        memory_cache: 64 * GB,
        nvme_cache: 1_200 * GB,
        disk: (1_024 * MB, None),
        disk_iops: (40_000, None),
    },
    FsxTier {
        throughput_capacity: 2_048,
        network: (3_125 * MB, None),
        memory_cache: 128 * GB,
        nvme_cache: 2_400 * GB,
        disk: (2_048 * MB, None),
        disk_iops: (80_000, None),
    },
];

/// The tier for a throughput capacity in MBps (128, 256, 512, 1024, 2048).
pub fn fsx_ontap_tier(throughput_capacity: u64) -> Option<FsxTier> {
    FSX_ONTAP_TIERS
        .into_iter()
        .find(|t| t.throughput_capacity == throughput_capacity)
}

/// Single-flow (one 5-tuple) network limit between EC2 instances outside a cluster placement
/// group: 5 Gb/s (AWS, *Amazon EC2 instance network bandwidth*; the FSx performance page
/// points to it for `nconnect`).
pub const AWS_SINGLE_FLOW_BYTES_PER_SEC: u64 = 625 * MB;

/// SSD IOPS provisioned by default on FSx for ONTAP: 3 per GiB of SSD storage (the seed's
/// 1,024 GiB file system shows 3,072).
pub fn fsx_default_ssd_iops(storage: u64) -> u64 {
    u64::try_from(u128::from(storage) * 3 / u128::from(GIB)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gp2_table() {
        // (GiB, baseline IOPS, bursts?, MiB/s)
        for (gib, base, bursts, mbps) in [
            (1, 100, true, 128),
            (33, 100, true, 128),
            (100, 300, true, 128),
            (170, 510, true, 128),
            (171, 513, true, 250),
            (334, 1_002, true, 250),
            (750, 2_250, true, 250),
            (999, 2_997, true, 250),
            (1_000, 3_000, false, 250),
            (5_334, 16_000, false, 250),
            (16_384, 16_000, false, 250),
        ] {
            let l = Model::EbsGp2.limits(gib * GIB);
            assert_eq!(l.ceiling.iops, base, "{gib} GiB");
            assert_eq!(l.ceiling.bytes_per_sec, mbps * MIB, "{gib} GiB");
            assert_eq!(l.burst.iops.is_some(), bursts, "{gib} GiB");
            if let Some(s) = l.burst.iops {
                assert_eq!((s.rate, s.bucket, s.initial), (3_000, 5_400_000, 5_400_000));
            }
        }
    }

    #[test]
    fn hdd_tables() {
        let tib = GIB * 1024;
        let st1 = Model::EbsSt1.limits(tib);
        assert_eq!(st1.ceiling.bytes_per_sec, 40 * MIB);
        let s = st1.burst.bytes.unwrap();
        assert_eq!((s.rate, s.bucket), (250 * MIB, tib));
        // 0.125 TiB: 5 / 31.25 MiB/s; 12.5 TiB and up: baseline capped at 500.
        let small = Model::EbsSt1.limits(tib / 8);
        assert_eq!(small.ceiling.bytes_per_sec, 5 * MIB);
        assert_eq!(small.burst.bytes.unwrap().rate, 250 * MIB / 8);
        assert_eq!(
            Model::EbsSt1.limits(13 * tib).ceiling.bytes_per_sec,
            500 * MIB
        );
        assert!(Model::EbsSt1.limits(13 * tib).burst.is_none());
        let sc1 = Model::EbsSc1.limits(tib);
        assert_eq!(sc1.ceiling.bytes_per_sec, 12 * MIB);
        assert_eq!(sc1.burst.bytes.unwrap().rate, 80 * MIB);
        assert_eq!(sc1.ceiling.iops, 250);
        assert_eq!(
            Model::EbsSc1.limits(16 * tib).ceiling.bytes_per_sec,
            192 * MIB
        );
    }

    #[test]
    fn azure_tiers() {
        assert_eq!(azure_premium_tier(GIB).0, "P1");
        assert_eq!(azure_premium_tier(100 * GIB).0, "P10");
        assert_eq!(azure_premium_tier(512 * GIB).0, "P20");
        assert_eq!(azure_premium_tier(513 * GIB).0, "P30");
        let p20 = Model::AzurePremiumSsd.limits(512 * GIB);
        assert_eq!(p20.ceiling.iops, 2_300);
        let i = p20.burst.iops.unwrap();
        assert_eq!(i.burst_seconds(2_300), Some(1_800.0));
        let b = p20.burst.bytes.unwrap();
        assert_eq!(b.burst_seconds(150 * MIB), Some(1_800.0));
        assert!(Model::AzurePremiumSsd.limits(1024 * GIB).burst.is_none());
    }

    #[test]
    fn model_names_round_trip() {
        for m in Model::ALL {
            assert_eq!(m.name().parse::<Model>(), Ok(m));
            assert!(!m.summary().is_empty());
        }
        assert_eq!("EBS_GP2".parse::<Model>(), Ok(Model::EbsGp2));
        let e = "gp3".parse::<Model>().unwrap_err().to_string();
        assert!(e.contains("ebs-gp2"), "{e}");
    }

    #[test]
    fn solidfire_kb_example() {
        // KB: maxIOPS 1000, burstIOPS 1500 -> 30,000 credits, 60 s.
        let b = solidfire_burst(1_000, 1_500).iops.unwrap();
        assert_eq!(b.bucket, 30_000);
        assert_eq!(b.burst_seconds(1_000), Some(60.0));
    }

    #[test]
    fn fsx_tiers() {
        let t = fsx_ontap_tier(128).unwrap();
        assert_eq!(t.network, (150 * MB, Some(1_250 * MB)));
        assert_eq!(t.disk, (128 * MB, Some(600 * MB)));
        assert_eq!(t.memory_cache, 16 * GB);
        assert_eq!(fsx_ontap_tier(2_048).unwrap().network.1, None);
        assert!(fsx_ontap_tier(100).is_none());
        assert_eq!(fsx_default_ssd_iops(1024 * GIB), 3_072);
    }
}
