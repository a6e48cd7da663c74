//! What an emulated provisioned file system is: its resources (baseline and burst), caches
//! and single-flow limit, from FSx for ONTAP's throughput-capacity table or given explicitly.

use qos_core::presets::{fsx_default_ssd_iops, fsx_ontap_tier, FsxTier, FSX_ONTAP_TIERS};
use qos_core::BurstShape;

/// One resource: a sustained rate and, optionally, a burst on a credit bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceSpec {
    /// Units per second (bytes or I/Os); 0 = not limited.
    pub baseline: u64,
    /// Burst rate, bucket and initial balance (`None`: flat).
    pub burst: Option<BurstShape>,
}

impl ResourceSpec {
    /// Seconds at the full burst rate from a full bucket.
    pub fn burst_seconds(&self) -> Option<f64> {
        self.burst.and_then(|b| b.burst_seconds(self.baseline))
    }
}

/// A provisioned file system's performance model (validated by the config parser).
#[derive(Debug, Clone, PartialEq)]
pub struct FsSpec {
    /// Preset name (`fsx-ontap-128`, ...) or `custom`.
    pub name: String,
    /// Network throughput between clients and the file server, bytes/s: every READ and WRITE
    /// payload crosses it.
    pub network: ResourceSpec,
    /// Disk throughput the file server supports, bytes/s: read misses and writes.
    pub disk: ResourceSpec,
    /// SSD IOPS the file server supports: one per read that misses both caches.
    pub disk_iops: ResourceSpec,
    /// SSD IOPS provisioned on the disks (flat; 0 = not limited): one per read miss.
    pub ssd_iops: u64,
    /// In-memory cache, bytes.
    pub memory_cache: u64,
    /// NVMe cache, bytes (0: none, e.g. Single-AZ).
    pub nvme_cache: u64,
    /// Cache granularity, bytes.
    pub cache_block: u64,
    /// Single-flow limit per NBD connection, bytes/s (0 = none).
    pub per_connection: u64,
}

/// Knobs applied to a preset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PresetOptions {
    /// Sizes and times shrink together: caches and buckets × `scale` (1 = AWS's sizes).
    pub scale: f64,
    /// Every rate × `rate_scale` (buckets follow, so burst durations are unchanged): lets a
    /// slow machine emulate the shape of a fast file system.
    pub rate_scale: f64,
    /// Seconds a full bucket lasts at the full burst rate (AWS does not document FSx's
    /// bucket sizes; default [`DEFAULT_BURST_SECONDS`]).
    pub burst_seconds: u64,
    /// Balance each bucket starts with, percent.
    pub initial_percent: u8,
    /// SSD storage capacity, bytes: provisioned SSD IOPS default to 3 per GiB of it.
    pub storage: u64,
    /// Provisioned SSD IOPS (overrides the 3 per GiB default).
    pub ssd_iops: Option<u64>,
    /// Single-flow limit, bytes/s (default: AWS's 5 Gb/s).
    pub per_connection: Option<u64>,
    /// Cache granularity, bytes.
    pub cache_block: u64,
}

/// FSx for ONTAP's burst buckets are not documented; a full bucket is assumed to last this
/// long at the full burst rate (30 minutes: what EBS gp2 and Azure credit bursting promise).
pub const DEFAULT_BURST_SECONDS: u64 = 30 * 60;

/// The seed's workshop file system: 1,024 GiB of SSD.
pub const DEFAULT_STORAGE: u64 = 1 << 40;

/// Default cache granularity: 64 KiB.
pub const DEFAULT_CACHE_BLOCK: u64 = 64 << 10;

impl Default for PresetOptions {
    fn default() -> Self {
        PresetOptions {
            scale: 1.0,
            rate_scale: 1.0,
            burst_seconds: DEFAULT_BURST_SECONDS,
            initial_percent: 100,
            storage: DEFAULT_STORAGE,
            ssd_iops: None,
            per_connection: None,
            cache_block: DEFAULT_CACHE_BLOCK,
        }
    }
}

/// Names of the presets: `fsx-ontap-128` … `fsx-ontap-2048`.
pub fn preset_names() -> Vec<String> {
    FSX_ONTAP_TIERS
        .iter()
        .map(|t| format!("fsx-ontap-{}", t.throughput_capacity))
        .collect()
}

fn scaled(x: u64, f: f64) -> u64 {
    let v = (x as f64 * f).round();
    if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        v as u64
    }
}

fn resource((base, burst): (u64, Option<u64>), o: &PresetOptions) -> ResourceSpec {
    let baseline = scaled(base, o.rate_scale).max(1);
    let burst = burst.map(|b| {
        let rate = scaled(b, o.rate_scale);
        let bucket = scaled(
            rate.saturating_sub(baseline)
                .saturating_mul(o.burst_seconds),
            o.scale,
        );
        BurstShape {
            rate,
            bucket,
            initial: scaled(bucket, f64::from(o.initial_percent.min(100)) / 100.0),
        }
    });
    ResourceSpec { baseline, burst }
}

impl FsSpec {
    /// The spec of preset `name` (`fsx-ontap-<throughput capacity>`) with `o` applied;
    /// `None` for an unknown name.
    pub fn preset(name: &str, o: &PresetOptions) -> Option<FsSpec> {
        let cap: u64 = name.strip_prefix("fsx-ontap-")?.parse().ok()?;
        fsx_ontap_tier(cap).map(|t| FsSpec::from_tier(name, &t, o))
    }

    /// An FSx tier with `o` applied.
    pub fn from_tier(name: &str, t: &FsxTier, o: &PresetOptions) -> FsSpec {
        let ssd = o
            .ssd_iops
            .unwrap_or_else(|| fsx_default_ssd_iops(o.storage));
        FsSpec {
            name: name.to_string(),
            network: resource(t.network, o),
            disk: resource(t.disk, o),
            disk_iops: resource(t.disk_iops, o),
            ssd_iops: if ssd == 0 {
                0
            } else {
                scaled(ssd, o.rate_scale).max(1)
            },
            memory_cache: scaled(t.memory_cache, o.scale),
            nvme_cache: scaled(t.nvme_cache, o.scale),
            cache_block: o.cache_block,
            per_connection: o
                .per_connection
                .map(|p| scaled(p, o.rate_scale))
                .unwrap_or_else(|| {
                    scaled(
                        qos_core::presets::AWS_SINGLE_FLOW_BYTES_PER_SEC,
                        o.rate_scale,
                    )
                }),
        }
    }

    /// Cache sizes in blocks.
    pub fn cache_blocks(&self) -> (usize, usize) {
        let b = self.cache_block.max(1);
        let n = |bytes: u64| usize::try_from(bytes / b).unwrap_or(usize::MAX);
        (n(self.memory_cache), n(self.nvme_cache))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsx_128_preset_and_scaling() {
        let s = FsSpec::preset("fsx-ontap-128", &PresetOptions::default()).unwrap();
        assert_eq!(s.network.baseline, 150_000_000);
        let b = s.network.burst.unwrap();
        assert_eq!(b.rate, 1_250_000_000);
        assert_eq!(s.network.burst_seconds(), Some(1_800.0));
        assert_eq!(s.disk.baseline, 128_000_000);
        assert_eq!(s.disk_iops.burst.unwrap().rate, 18_750);
        assert_eq!(s.ssd_iops, 3_072);
        assert_eq!(s.memory_cache, 16_000_000_000);
        assert_eq!(s.per_connection, 625_000_000);
        // scale 0.01: caches and buckets 100x smaller, rates unchanged, bursts 18 s.
        let o = PresetOptions {
            scale: 0.01,
            rate_scale: 0.1,
            ..PresetOptions::default()
        };
        let s = FsSpec::preset("fsx-ontap-128", &o).unwrap();
        assert_eq!(s.memory_cache, 160_000_000);
        assert_eq!(s.network.baseline, 15_000_000);
        assert!((s.network.burst_seconds().unwrap() - 18.0).abs() < 1e-6);
        assert_eq!(s.per_connection, 62_500_000);
        assert!(FsSpec::preset("fsx-ontap-100", &o).is_none());
        assert!(FsSpec::preset("ebs", &o).is_none());
        let big = FsSpec::preset("fsx-ontap-2048", &PresetOptions::default()).unwrap();
        assert_eq!(big.network.burst, None);
        assert_eq!(preset_names().len(), 5);
    }
}
