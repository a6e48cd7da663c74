//! The S3 tables' charts in the report: throughput and latency per operation and
//! iteration (the merged view; per-second series are drawn per job by the report itself).

use harness::store::SummaryTable;
use report::charts::{categories, num};
use report::svg::{Chart, Unit};
use serde_json::Value;

/// Ops/s and MiB/s, and latency percentiles with TTFB, per operation row.
pub fn charts(t: &SummaryTable) -> Vec<Chart> {
    let col = |n: &str| t.column(n);
    let (Some(it), Some(host), Some(op)) = (col("Iteration"), col("Host"), col("Op")) else {
        return Vec::new();
    };
    // The merged rows: "All hosts", or the only driver ("-").
    let multi = t
        .rows
        .iter()
        .any(|r| r.get(host).and_then(Value::as_str) == Some(harness::ops::ALL_HOSTS));
    let rows: Vec<&Vec<Value>> = t
        .rows
        .iter()
        .filter(|r| {
            let h = r.get(host).and_then(Value::as_str).unwrap_or("");
            !multi || h == harness::ops::ALL_HOSTS
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let label = |r: &Vec<Value>| {
        format!(
            "#{} {}",
            r.get(it).and_then(num).unwrap_or(0.0),
            r.get(op).and_then(Value::as_str).unwrap_or("?")
        )
    };
    let xs: Vec<(f64, String)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (i as f64, label(r)))
        .collect();
    let series = |name: &str| -> Vec<(f64, f64)> {
        let Some(c) = col(name) else {
            return Vec::new();
        };
        rows.iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i as f64, num(r.get(c)?)?)))
            .collect()
    };
    let mut out = Vec::new();
    let mut c = Chart::categorical(
        format!("{}: throughput per operation and iteration", t.name),
        "iteration and operation",
        "ops/s",
        categories(&xs),
    );
    for (i, name) in ["Ops/s", "Slowest 1s (ops/s)", "Fastest 1s (ops/s)"]
        .into_iter()
        .enumerate()
    {
        c.line(name, series(name), i);
    }
    out.push(c);
    let mut c = Chart::categorical(
        format!("{}: latency per operation and iteration", t.name),
        "iteration and operation",
        "latency (ms)",
        categories(&xs),
    );
    c.y_unit = Unit::Ms;
    for (i, name) in [
        "Lat p50 (ms)",
        "Lat p90 (ms)",
        "Lat p99 (ms)",
        "TTFB p50 (ms)",
        "TTFB p99 (ms)",
    ]
    .into_iter()
    .enumerate()
    {
        c.line(name.replace(" (ms)", ""), series(name), i);
    }
    out.push(c);
    out.retain(Chart::has_data);
    out
}
