//! What an S3 test measured, as the results store keeps it: the analysis's summaries as
//! per-operation results, its segments as the job's series, a summary table per test
//! (`kind = "s3"`), and the terminal lines.

use harness::ops::{OpResult, OpSample};
use harness::store::SummaryTable;
use loadgen::s3::{Analysis, OpSummary};
use serde_json::json;

/// The summary table's `kind`.
pub const KIND: &str = "s3";

/// The stored table's columns.
pub const COLUMNS: [&str; 18] = [
    "Iteration",
    "Host",
    "Op",
    "Ops/s",
    "MiB/s",
    "Lat mean (ms)",
    "Lat p50 (ms)",
    "Lat p90 (ms)",
    "Lat p99 (ms)",
    "Lat max (ms)",
    "TTFB p50 (ms)",
    "TTFB p99 (ms)",
    "Errors",
    "Requests",
    "Slowest 1s (ops/s)",
    "Median 1s (ops/s)",
    "Fastest 1s (ops/s)",
    "Window (s)",
];

fn op_result(s: &OpSummary, window_start_ns: u64) -> OpResult {
    OpResult {
        client: s.host.clone(),
        op: s.op.name().to_string(),
        ops: s.ops,
        bytes: s.bytes,
        window_start_ms: window_start_ns / 1_000_000,
        window_ms: s.window_ns / 1_000_000,
        ops_per_s: s.ops_per_s,
        bytes_per_s: s.bytes_per_s,
        lat: s.lat,
        ttfb: s.ttfb,
        segments: s.seg,
        total: s.total,
        errors: s.errors,
        error_codes: s.error_codes.clone(),
    }
}

/// The store's per-operation results and segments of an analysis.
pub fn store_form(a: &Analysis) -> (Vec<OpResult>, Vec<OpSample>) {
    let ops = a
        .summaries
        .iter()
        .map(|s| op_result(s, a.window.start_ns))
        .collect();
    let samples = a
        .segments
        .iter()
        .map(|s| OpSample {
            client: s.host.clone(),
            op: s.op.name().to_string(),
            t_ms: s.end_ns / 1_000_000,
            dur_ms: (s.end_ns - s.start_ns) / 1_000_000,
            ops_per_s: s.ops_per_s,
            bytes_per_s: s.bytes_per_s,
            errors: s.errors,
            lat_mean_ns: s.lat_mean_ns,
            lat_p50_ns: s.lat_p50_ns,
            lat_p99_ns: s.lat_p99_ns,
            ttfb_mean_ns: s.ttfb_mean_ns,
            in_window: s.in_window,
        })
        .collect();
    (ops, samples)
}

fn r(v: f64, places: i32) -> serde_json::Value {
    let m = 10f64.powi(places);
    json!((v * m).round() / m)
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// One table row.
pub fn row(iteration: u32, o: &OpResult) -> Vec<serde_json::Value> {
    vec![
        iteration.into(),
        if o.client.is_empty() {
            "-".into()
        } else {
            o.client.clone().into()
        },
        o.op.clone().into(),
        r(o.ops_per_s, 1),
        r(o.bytes_per_s / 1048576.0, 2),
        r(ms(o.lat.mean_ns), 3),
        r(ms(o.lat.p50_ns as f64), 3),
        r(ms(o.lat.p90_ns as f64), 3),
        r(ms(o.lat.p99_ns as f64), 3),
        r(ms(o.lat.max_ns as f64), 3),
        o.ttfb
            .map(|t| r(ms(t.p50_ns as f64), 3))
            .unwrap_or(serde_json::Value::Null),
        o.ttfb
            .map(|t| r(ms(t.p99_ns as f64), 3))
            .unwrap_or(serde_json::Value::Null),
        if o.error_codes.is_empty() {
            "0".into()
        } else {
            o.error_codes
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
                .into()
        },
        o.total.into(),
        r(o.segments.ops_slowest, 1),
        r(o.segments.ops_median, 1),
        r(o.segments.ops_fastest, 1),
        r(o.window_ms as f64 / 1000.0, 2),
    ]
}

/// A test's table (every iteration so far).
pub fn table(test: &str, rows: Vec<Vec<serde_json::Value>>) -> SummaryTable {
    SummaryTable::new(KIND, test, &COLUMNS, rows)
}

/// The terminal lines of one test iteration: one per operation (merged view), warp-like.
pub fn lines(test: &str, iteration: u32, ops: &[&OpResult]) -> String {
    let mut o = String::new();
    for x in ops {
        let ttfb = x
            .ttfb
            .map(|t| {
                format!(
                    ", TTFB p50 {:.2} ms p99 {:.2} ms",
                    ms(t.p50_ns as f64),
                    ms(t.p99_ns as f64)
                )
            })
            .unwrap_or_default();
        let errors = if x.errors > 0 {
            format!(
                ", {} error(s): {}",
                x.errors,
                x.error_codes
                    .iter()
                    .map(|(c, n)| format!("{c} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        };
        o.push_str(&format!(
            "  {test} #{iteration} {:<6} {:>9.1} ops/s {:>9.2} MiB/s  lat mean {:.2} p50 {:.2} p90 {:.2} p99 {:.2} max {:.2} ms{ttfb}{errors}\n",
            x.op,
            x.ops_per_s,
            x.bytes_per_s / 1048576.0,
            ms(x.lat.mean_ns),
            ms(x.lat.p50_ns as f64),
            ms(x.lat.p90_ns as f64),
            ms(x.lat.p99_ns as f64),
            ms(x.lat.max_ns as f64),
        ));
    }
    o
}
