//! Visibility of burst credits: per volume (its flow's buckets) and per node resource (the
//! provisioned file system), with the use rate that decides time-to-empty. Shared by the
//! API, `/metrics` and the node sampler.

use std::fmt::Write;

use qos_core::{CreditStatus, Nanos};
use serde_json::{json, Value};

use crate::node::Node;
use crate::provisioned::ResourceStatus;
use crate::volume::Volume;

/// One bucket and how fast it is being used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub credits: CreditStatus,
    /// Units per second over the last second (I/Os or bytes).
    pub use_rate: f64,
}

impl Bucket {
    pub fn time_to_empty(&self) -> Option<f64> {
        self.credits.time_to_empty(self.use_rate)
    }

    /// JSON: balance, bucket, percent, baseline, burst, use, state, time_to_empty_s (null
    /// when not draining).
    pub fn json(&self) -> Value {
        let c = &self.credits;
        json!({
            "balance": c.balance,
            "bucket": c.bucket,
            "percent": (c.percent() * 100.0).round() / 100.0,
            "baseline": c.baseline,
            "burst": c.burst,
            "use": self.use_rate.round(),
            "state": c.state(self.use_rate),
            "time_to_empty_s": self.time_to_empty().map(|s| (s * 10.0).round() / 10.0),
        })
    }
}

/// A volume's buckets: IOPS and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VolumeCredits {
    pub iops: Option<Bucket>,
    pub bytes: Option<Bucket>,
}

impl VolumeCredits {
    pub fn is_empty(&self) -> bool {
        self.iops.is_none() && self.bytes.is_none()
    }

    /// `{"iops": {...}, "bytes": {...}}` with only the dimensions that burst; `None` when
    /// none does.
    pub fn json(&self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let mut m = serde_json::Map::new();
        if let Some(b) = &self.iops {
            m.insert("iops".into(), b.json());
        }
        if let Some(b) = &self.bytes {
            m.insert("bytes".into(), b.json());
        }
        Some(Value::Object(m))
    }
}

/// A volume's buckets at `now` (a shared policy's volumes report the group's buckets).
pub fn volume_credits(node: &Node, vol: &Volume, now: Nanos) -> VolumeCredits {
    let (ops, bytes) = node.scheduler.credits(vol.flow(), now);
    if ops.is_none() && bytes.is_none() {
        return VolumeCredits::default();
    }
    let r = vol.stats.rates();
    VolumeCredits {
        iops: ops.map(|credits| Bucket {
            credits,
            use_rate: r.total_iops(),
        }),
        bytes: bytes.map(|credits| Bucket {
            credits,
            use_rate: r.throughput[0] + r.throughput[1],
        }),
    }
}

/// A node resource as JSON (`credits` null for flat resources).
pub fn resource_json(r: &ResourceStatus) -> Value {
    json!({
        "name": r.name,
        "unit": r.unit,
        "baseline": r.baseline,
        "use": r.use_rate.round(),
        "credits": r.credits.map(|credits| Bucket { credits, use_rate: r.use_rate }.json()),
    })
}

/// The provisioned file system as JSON for `GET /api/cluster` (`None`: the node has none).
pub fn fs_json(node: &Node) -> Option<Value> {
    let fs = node.provisioned()?;
    let st = fs.status(node.clock.now());
    let spec = fs.spec();
    let s = &fs.stats;
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    Some(json!({
        "model": spec.name,
        "resources": st.resources.iter().map(resource_json).collect::<Vec<_>>(),
        "cache": {
            "block_bytes": spec.cache_block,
            "memory": {"bytes": spec.memory_cache, "blocks": st.memory_blocks.0, "capacity_blocks": st.memory_blocks.1},
            "nvme": {"bytes": spec.nvme_cache, "blocks": st.nvme_blocks.0, "capacity_blocks": st.nvme_blocks.1},
            "read_bytes": {
                "memory": load(&s.read_memory_bytes),
                "nvme": load(&s.read_nvme_bytes),
                "miss": load(&s.read_miss_bytes),
            },
        },
        "per_connection_bytes_per_second": spec.per_connection,
        "resource_wait_seconds": load(&s.wait_ns) as f64 / 1e9,
    }))
}

/// A Prometheus metric family's `# HELP` and `# TYPE` lines (the node's `/metrics`).
pub fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// What a burst gauge shows of a bucket.
#[derive(Clone, Copy)]
enum Gauge {
    Balance,
    Capacity,
    Burst,
    /// Seconds until empty at the use rate (`+Inf`: not draining).
    SecondsToEmpty,
}

impl Gauge {
    fn of(self, b: &Bucket) -> String {
        match self {
            Gauge::Balance => b.credits.balance.to_string(),
            Gauge::Capacity => b.credits.bucket.to_string(),
            Gauge::Burst => b.credits.burst.to_string(),
            Gauge::SecondsToEmpty => b
                .time_to_empty()
                .map_or_else(|| "+Inf".to_string(), |s| format!("{s}")),
        }
    }
}

/// What a file-system resource gauge shows: a resource's rate, or a gauge of its bucket
/// (resources without one have no sample).
#[derive(Clone, Copy)]
enum ResourceGauge {
    Baseline,
    Use,
    Bucket(Gauge),
}

impl ResourceGauge {
    fn of(self, r: &ResourceStatus) -> Option<String> {
        match self {
            ResourceGauge::Baseline => Some(r.baseline.to_string()),
            ResourceGauge::Use => Some(r.use_rate.to_string()),
            ResourceGauge::Bucket(g) => r.credits.map(|credits| {
                g.of(&Bucket {
                    credits,
                    use_rate: r.use_rate,
                })
            }),
        }
    }
}

/// Burst metrics per volume (`labels` are each volume's label set) and per node resource.
pub fn render_metrics(o: &mut String, node: &Node, vols: &[(std::sync::Arc<Volume>, String)]) {
    let now = node.clock.now();
    let credits: Vec<(VolumeCredits, &String)> = vols
        .iter()
        .map(|(v, l)| (volume_credits(node, v, now), l))
        .filter(|(c, _)| !c.is_empty())
        .collect();
    let each = |c: &VolumeCredits| [("iops", c.iops), ("bytes", c.bytes)];
    if !credits.is_empty() {
        for (name, help, gauge) in [
            (
                "qoslab_volume_burst_balance",
                "Burst credits in the volume's bucket (I/Os, or bytes).",
                Gauge::Balance,
            ),
            (
                "qoslab_volume_burst_bucket",
                "Capacity of the volume's burst bucket (I/Os, or bytes).",
                Gauge::Capacity,
            ),
            (
                "qoslab_volume_burst_limit",
                "Rate allowed while credits last (IOPS, or bytes/s); the ceiling is the baseline.",
                Gauge::Burst,
            ),
            (
                "qoslab_volume_burst_seconds_to_empty",
                "Seconds until the bucket is empty at the last second's use (+Inf: not draining).",
                Gauge::SecondsToEmpty,
            ),
        ] {
            header(o, name, "gauge", help);
            for (c, l) in &credits {
                for (dim, b) in each(c) {
                    if let Some(b) = b {
                        let _ = writeln!(o, "{name}{{{l},dim=\"{dim}\"}} {}", gauge.of(&b));
                    }
                }
            }
        }
    }
    if let Some(fs) = node.provisioned() {
        fs_metrics(o, fs, now);
    }
}

/// The provisioned file system's resources (rates, use, burst credits) and caches.
fn fs_metrics(o: &mut String, fs: &crate::provisioned::ProvisionedFs, now: Nanos) {
    let st = fs.status(now);
    for (name, help, gauge) in [
        (
            "qoslab_fs_resource_baseline",
            "Provisioned file system: a resource's sustained rate (bytes/s or IOPS).",
            ResourceGauge::Baseline,
        ),
        (
            "qoslab_fs_resource_use",
            "Provisioned file system: a resource's use over the last second (bytes/s or IOPS).",
            ResourceGauge::Use,
        ),
        (
            "qoslab_fs_resource_burst",
            "Provisioned file system: a resource's burst rate.",
            ResourceGauge::Bucket(Gauge::Burst),
        ),
        (
            "qoslab_fs_resource_balance",
            "Provisioned file system: credits in a resource's bucket (bytes or I/Os).",
            ResourceGauge::Bucket(Gauge::Balance),
        ),
        (
            "qoslab_fs_resource_bucket",
            "Provisioned file system: capacity of a resource's bucket.",
            ResourceGauge::Bucket(Gauge::Capacity),
        ),
        (
            "qoslab_fs_resource_seconds_to_empty",
            "Provisioned file system: seconds until a resource's bucket is empty at the current use (+Inf: not draining).",
            ResourceGauge::Bucket(Gauge::SecondsToEmpty),
        ),
    ] {
        header(o, name, "gauge", help);
        for r in &st.resources {
            if let Some(v) = gauge.of(r) {
                let _ = writeln!(
                    o,
                    "{name}{{resource=\"{}\",unit=\"{}\"}} {v}",
                    r.name, r.unit
                );
            }
        }
    }
    header(
        o,
        "qoslab_fs_read_bytes_total",
        "counter",
        "Provisioned file system: READ bytes by where they were found (memory, nvme) or missed.",
    );
    for (k, c) in [
        ("memory", &fs.stats.read_memory_bytes),
        ("nvme", &fs.stats.read_nvme_bytes),
        ("miss", &fs.stats.read_miss_bytes),
    ] {
        let _ = writeln!(
            o,
            "qoslab_fs_read_bytes_total{{cache=\"{k}\"}} {}",
            c.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    header(
        o,
        "qoslab_fs_cache_blocks",
        "gauge",
        "Provisioned file system: blocks held by each cache.",
    );
    for (k, blocks) in [("memory", st.memory_blocks.0), ("nvme", st.nvme_blocks.0)] {
        let _ = writeln!(o, "qoslab_fs_cache_blocks{{cache=\"{k}\"}} {blocks}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    /// The burst families of a volume under a gp2 policy and of a provisioned file system,
    /// in order, with their types.
    #[test]
    fn burst_and_file_system_families() {
        let (node, _d) = crate::testing::TestNode::open(
            "[provisioned]\npreset = \"fsx-ontap-128\"\n\
             [[policy]]\nname = \"gp2\"\nprovisioned = { model = \"ebs-gp2\" }\n\
             [[volume]]\nname = \"v\"\nsize = \"100GiB\"\npolicy = \"gp2\"\n",
            "credits-metrics",
        )
        .split();
        let vols: Vec<(Arc<crate::volume::Volume>, String)> = node
            .volumes()
            .into_iter()
            .map(|v| (v, "volume=\"v\"".to_string()))
            .collect();
        let mut text = String::new();
        super::render_metrics(&mut text, &node, &vols);
        let families = crate::testing::metric_families(&text);
        assert_eq!(
            families,
            [
                "qoslab_volume_burst_balance gauge",
                "qoslab_volume_burst_bucket gauge",
                "qoslab_volume_burst_limit gauge",
                "qoslab_volume_burst_seconds_to_empty gauge",
                "qoslab_fs_resource_baseline gauge",
                "qoslab_fs_resource_use gauge",
                "qoslab_fs_resource_burst gauge",
                "qoslab_fs_resource_balance gauge",
                "qoslab_fs_resource_bucket gauge",
                "qoslab_fs_resource_seconds_to_empty gauge",
                "qoslab_fs_read_bytes_total counter",
                "qoslab_fs_cache_blocks gauge",
            ],
            "{text}"
        );
        assert!(
            text.contains("qoslab_volume_burst_balance{volume=\"v\",dim=\"iops\"}"),
            "{text}"
        );
    }
}
