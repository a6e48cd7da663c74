//! Per-operation results of a request/response benchmark (the S3 family's GET, PUT,
//! DELETE, LIST, STAT): what the results store keeps beside fio's read/write results.
//!
//! One [`OpResult`] per job, client (load generator; `"All hosts"` for the merged view;
//! empty for a single local driver) and operation: counts, throughput over the measured
//! window, latency and time-to-first-byte statistics, the slowest/median/fastest segment
//! and errors by code. One [`OpSample`] per segment (1 s) of the job, client and operation:
//! the time series reports chart and `compare` takes the within-run spread from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The client label of results merged over every load generator, the latency statistics
/// of one operation (ns) and the slowest, median and fastest segment inside the window
/// (ops/s, bytes/s): the S3 driver's analysis computes them ([`loadgen::s3::analysis`]),
/// the store keeps them as they are.
pub use loadgen::s3::analysis::{LatStats as OpLatency, SegSpread as SegmentSpread, ALL_HOSTS};

/// One operation's results on one client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    pub client: String,
    pub op: String,
    /// Successful requests that ended inside the window.
    pub ops: u64,
    /// Bytes moved inside the window.
    pub bytes: f64,
    /// The measured window, ms from the job's start.
    pub window_start_ms: u64,
    pub window_ms: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
    pub lat: OpLatency,
    /// Time to first byte (GETs).
    pub ttfb: Option<OpLatency>,
    pub segments: SegmentSpread,
    /// Requests over the whole job (warm-up and tail included) and the failed ones, by code.
    pub total: u64,
    pub errors: u64,
    pub error_codes: BTreeMap<String, u64>,
}

impl OpResult {
    pub fn window_end_ms(&self) -> u64 {
        self.window_start_ms + self.window_ms
    }
}

/// One segment of one operation on one client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSample {
    pub client: String,
    pub op: String,
    /// The segment's end, ms from the job's start, and its length.
    pub t_ms: u64,
    pub dur_ms: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
    pub errors: u64,
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    /// Mean TTFB of the GETs ending in the segment (0: none).
    pub ttfb_mean_ns: f64,
    /// Wholly inside the measured window.
    pub in_window: bool,
}

/// The results of `ops` that a job's summary shows: the merged view when there are
/// several clients, else the only one.
pub fn primary(ops: &[OpResult]) -> Vec<&OpResult> {
    let merged: Vec<&OpResult> = ops.iter().filter(|o| o.client == ALL_HOSTS).collect();
    if merged.is_empty() {
        ops.iter().collect()
    } else {
        merged
    }
}
