//! Time series of a job: what fio measured per window (from its IOPS, bandwidth, latency and
//! latency-histogram logs, `log_avg_msec = 500`) and what the storage node measured per
//! volume while the job ran (sampled every 500 ms when the target is a qoslab node).
//!
//! Times are milliseconds on fio's log clock: 0 is where fio starts measuring (after the
//! ramp). Node samples are placed on the same clock by subtracting the ramp from the time
//! since fio was started, so they can be a few milliseconds off fio's windows; samples taken
//! during the ramp are dropped.

use serde::{Deserialize, Serialize};

use crate::ops::OpSample;

/// fio's log window (`log_avg_msec`), which is also the node sampling period, ms.
pub use fio::logs::WINDOW_MS;
/// One fio log window of one direction (defined by the fio adapter, which parses it).
pub use fio::FioSample;

/// A credit bucket at the end of a window: what the report draws on its second axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CreditSample {
    /// Credits in the bucket (I/Os, or bytes).
    pub balance: f64,
    /// The bucket's capacity.
    pub bucket: f64,
    /// The rate the bucket accrues at, which is the limit once it is empty (IOPS or bytes/s).
    pub baseline: f64,
    /// The rate allowed while credits last.
    pub burst: f64,
    /// Seconds until the bucket is empty at the window's use; `None` when that use does not
    /// drain it.
    pub time_to_empty_s: Option<f64>,
}

impl CreditSample {
    /// Whether the bucket still holds one second of its baseline. One that holds less has
    /// run out: within the next second it serves at its baseline.
    pub fn holds_a_second(&self) -> bool {
        self.balance >= self.baseline
    }

    /// A bucket's state with the time to empty at `use_rate` (units per second).
    pub fn at_use(balance: f64, bucket: f64, baseline: f64, burst: f64, use_rate: f64) -> Self {
        let drain = use_rate.min(burst) - baseline;
        CreditSample {
            balance,
            bucket,
            baseline,
            burst,
            time_to_empty_s: (drain > 0.0 && baseline > 0.0).then(|| balance / drain),
        }
    }

    /// Balance as a percentage of the bucket.
    pub fn percent(&self) -> f64 {
        if self.bucket > 0.0 {
            self.balance * 100.0 / self.bucket
        } else {
            0.0
        }
    }
}

/// One node sample of one volume: rates over the window that ends at `t_ms`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeSample {
    pub t_ms: u64,
    pub volume: String,
    pub read_iops: f64,
    pub write_iops: f64,
    /// Trim, write-zeroes, flush, cache, block-status.
    pub other_iops: f64,
    pub read_bps: f64,
    pub write_bps: f64,
    /// Mean latency of all operations in the window, µs.
    pub lat_mean_us: f64,
    /// Mean time each operation was held by the ceiling / behind floors, µs.
    pub ceiling_wait_us: f64,
    pub floor_wait_us: f64,
    /// The volume's IOPS / bytes burst bucket (`None`: that dimension does not burst).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops_credits: Option<CreditSample>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_credits: Option<CreditSample>,
}

/// One sample of a node-wide resource (the emulated provisioned file system's network, disk
/// and SSD IOPS): its use over the window that ends at `t_ms` and its bucket then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceSample {
    pub t_ms: u64,
    /// `network`, `disk`, `disk_iops`, `ssd_iops`.
    pub resource: String,
    /// `bytes` (rates in bytes/s) or `iops`.
    pub unit: String,
    /// Units per second charged to it over the window.
    pub use_rate: f64,
    /// Its sustained rate.
    pub baseline: f64,
    /// Its bucket (`None`: a flat resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credits: Option<CreditSample>,
}

impl NodeSample {
    pub fn iops(&self) -> f64 {
        self.read_iops + self.write_iops + self.other_iops
    }
    pub fn bps(&self) -> f64 {
        self.read_bps + self.write_bps
    }
}

/// The series of one job (`job_id` = `JobRecord::id`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSeries {
    pub job_id: i64,
    pub fio: Vec<FioSample>,
    pub node: Vec<NodeSample>,
    /// Per-operation segments of a request/response driver (S3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<OpSample>,
    /// Node-wide resources (a node with an emulated provisioned file system).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceSample>,
    /// The host tool sets (one series per host sampled), on fio's clock like the rest:
    /// each sample's `t_ms` is the end of its interval after the ramp.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<toolsets::HostSeries>,
}

impl JobSeries {
    pub fn is_empty(&self) -> bool {
        self.fio.is_empty()
            && self.node.is_empty()
            && self.ops.is_empty()
            && self.resources.is_empty()
            && self.hosts.is_empty()
    }

    /// Whether any sample carries a credit balance (a volume's or a resource's).
    pub fn has_credits(&self) -> bool {
        self.node
            .iter()
            .any(|n| n.iops_credits.is_some() || n.bytes_credits.is_some())
            || self.resources.iter().any(|r| r.credits.is_some())
    }

    /// Resources the node sampled, in first-seen order.
    pub fn resource_names(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for s in &self.resources {
            if !v.contains(&s.resource) {
                v.push(s.resource.clone());
            }
        }
        v
    }

    /// The fio windows as (t_ms, all directions summed): IOPS, bytes/s, and the
    /// I/O-weighted mean latency and worst p99 over the directions.
    pub fn fio_totals(&self) -> Vec<FioSample> {
        let mut out: Vec<FioSample> = Vec::new();
        for s in &self.fio {
            match out.iter_mut().find(|o| o.t_ms == s.t_ms) {
                Some(o) => {
                    let n = o.iops + s.iops;
                    if n > 0.0 {
                        o.lat_mean_ns = (o.lat_mean_ns * o.iops + s.lat_mean_ns * s.iops) / n;
                    }
                    o.iops = n;
                    o.bw_bytes += s.bw_bytes;
                    o.p50_ns = o.p50_ns.max(s.p50_ns);
                    o.p99_ns = o.p99_ns.max(s.p99_ns);
                }
                None => {
                    let mut t = s.clone();
                    t.direction = "total".into();
                    out.push(t);
                }
            }
        }
        out.sort_by_key(|s| s.t_ms);
        out
    }

    /// Volumes the node saw I/O on, in first-seen order.
    pub fn node_volumes(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for s in &self.node {
            if !v.contains(&s.volume) {
                v.push(s.volume.clone());
            }
        }
        v
    }
}
