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

/// One node sample of one volume: rates over the window that ends at `t_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The host tool sets (one series per host sampled), on fio's clock like the rest:
    /// each sample's `t_ms` is the end of its interval after the ramp.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<toolsets::HostSeries>,
}

impl JobSeries {
    pub fn is_empty(&self) -> bool {
        self.fio.is_empty() && self.node.is_empty() && self.ops.is_empty() && self.hosts.is_empty()
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
