//! A workload's live `metric` rates and raw `statistics` counters, as ONTAP reports them
//! for volumes and LUNs (each a block volume of the node with its own books).

use serde_json::{json, Value};

use crate::stats::OpKind;
use crate::volume::Volume;

/// Rates over the last second. ONTAP's `metric` also carries `duration`, whose values
/// (PT15S, PT4M, ...) name windows of 15 s and longer; qoslab's window is 1 s, which has
/// no name in that set, so `duration` is omitted rather than misstated (docs/API.md).
pub(super) fn metric_json(v: &Volume) -> Value {
    let r = v.stats.rates();
    let round = |x: f64| x.round() as u64;
    json!({
        "status": "ok",
        "iops": {
            "read": round(r.iops[0]),
            "write": round(r.iops[1]),
            "other": round(r.iops[2]),
            "total": round(r.total_iops()),
        },
        "throughput": {
            "read": round(r.throughput[0]),
            "write": round(r.throughput[1]),
            "other": 0,
            "total": round(r.throughput[0] + r.throughput[1]),
        },
        "latency": {
            "read": round(r.latency_us[0]),
            "write": round(r.latency_us[1]),
            "other": round(r.latency_us[2]),
            "total": round(r.latency_us[3]),
        },
        "qos_latency": {
            "ceiling": round(r.qos_latency_us[0]),
            "floor": round(r.qos_latency_us[1]),
        },
    })
}

/// ONTAP's raw cumulative counters (`statistics`): operations, bytes and latency sums in
/// microseconds since the node started, with the time they were read. Two readings give
/// rates over any interval.
pub(super) fn statistics_json(v: &Volume) -> Value {
    let s = &v.stats;
    let ops = [OpKind::Read, OpKind::Write, OpKind::Other].map(|k| s.ops(k));
    let lat_us = [0, 1, 2].map(|i| s.latency[i].sum_ns() / 1000);
    let read = s.read_bytes.load(std::sync::atomic::Ordering::Relaxed);
    let write = s.write_bytes.load(std::sync::atomic::Ordering::Relaxed);
    json!({
        "timestamp": super::rfc3339_now(),
        "status": "ok",
        "iops_raw": {
            "read": ops[0], "write": ops[1], "other": ops[2],
            "total": ops.iter().sum::<u64>(),
        },
        "latency_raw": {
            "read": lat_us[0], "write": lat_us[1], "other": lat_us[2],
            "total": lat_us.iter().sum::<u64>(),
        },
        "throughput_raw": {
            "read": read, "write": write, "other": 0, "total": read + write,
        },
    })
}
