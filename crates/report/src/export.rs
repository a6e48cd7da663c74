//! Exporters: pure functions from a stored run to bytes (JSON, CSV, series CSV, Markdown,
//! HTML). No I/O, no clock: the same run always exports to the same bytes
//! (snapshot-tested). docs/REPORTS.md documents each format.

use std::fmt::Write as _;

use serde::Serialize;

use fio::fmt;
use fio::{DirStats, JobResult};
use harness::store::{JobRecord, RunRecord};

use crate::hooks::ReportHooks;

/// The `schema` field of exported JSON; bumped on incompatible changes.
/// Additive fields (`tables`, `series`) keep the version; readers ignore unknown fields.
pub const JSON_SCHEMA: &str = "qoslab.bench.run/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    /// The time series, one row per sample (long format).
    SeriesCsv,
    Md,
    Html,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "series-csv" => Some(Format::SeriesCsv),
            "md" | "markdown" => Some(Format::Md),
            "html" => Some(Format::Html),
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct Counts {
    passed: usize,
    failed: usize,
}

#[derive(Serialize)]
struct JsonRun<'a> {
    schema: &'static str,
    #[serde(flatten)]
    run: &'a RunRecord,
    verdicts: Counts,
}

/// Pretty JSON of the whole run (raw fio JSON excluded: see `results show --raw`).
pub fn json(run: &RunRecord) -> Vec<u8> {
    let (passed, failed) = run.verdict_counts();
    let mut v = serde_json::to_vec_pretty(&JsonRun {
        schema: JSON_SCHEMA,
        run,
        verdicts: Counts { passed, failed },
    })
    .unwrap_or_default();
    v.push(b'\n');
    v
}

/// CSV header of [`csv`].
pub const CSV_HEADER: &str = "run_id,seq,workload,job,volume,iteration,status,client,direction,iops,iops_mean,bw_bytes,bw_mean_bytes,lat_mean_us,p50_us,p90_us,p99_us,p999_us,runtime_ms,total_ios,error,verdicts_passed,verdicts_failed";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn active_dirs(r: &JobResult) -> Vec<(&'static str, &DirStats)> {
    let mut v: Vec<(&'static str, &DirStats)> = Vec::new();
    if r.read.active() {
        v.push(("read", &r.read));
    }
    if r.write.active() {
        v.push(("write", &r.write));
    }
    v
}

/// One row per job, client and active direction (a job without results gets one row with
/// its status and empty numbers).
pub fn csv(run: &RunRecord) -> Vec<u8> {
    let mut out = String::new();
    out.push_str(CSV_HEADER);
    out.push('\n');
    for j in &run.jobs {
        let pass = j.verdicts.iter().filter(|v| v.passed).count();
        let fail = j.verdicts.len() - pass;
        let head = format!(
            "{},{},{},{},{},{},{}",
            run.id,
            j.seq,
            csv_field(&j.workload),
            csv_field(&j.name),
            csv_field(j.volume.as_deref().unwrap_or("")),
            j.iteration,
            j.status
        );
        let mut rows = 0;
        for r in &j.results {
            for (dir, d) in active_dirs(r) {
                rows += 1;
                let _ = writeln!(
                    out,
                    "{head},{},{dir},{:.3},{:.3},{},{:.0},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{},{pass},{fail}",
                    csv_field(r.client.as_deref().unwrap_or("")),
                    d.iops,
                    d.iops_mean,
                    d.bw_bytes,
                    d.bw_mean_bytes,
                    d.lat_mean_ns / 1000.0,
                    d.p50_ns as f64 / 1000.0,
                    d.p90_ns as f64 / 1000.0,
                    d.p99_ns as f64 / 1000.0,
                    d.p999_ns as f64 / 1000.0,
                    d.runtime_ms,
                    d.total_ios,
                    r.error
                );
            }
        }
        // Request/response drivers (S3): one row per client and operation; `direction` is
        // the operation, iops its ops/s (iops_mean: the median 1 s segment), runtime the
        // measured window, total_ios the requests in it, error the failed requests.
        for o in &j.ops {
            rows += 1;
            let _ = writeln!(
                out,
                "{head},{},{},{:.3},{:.3},{:.0},{:.0},{:.3},{:.3},{:.3},{:.3},,{},{},{},{pass},{fail}",
                csv_field(&o.client),
                csv_field(&o.op),
                o.ops_per_s,
                o.segments.ops_median,
                o.bytes_per_s,
                o.segments.bps_median,
                o.lat.mean_ns / 1000.0,
                o.lat.p50_ns as f64 / 1000.0,
                o.lat.p90_ns as f64 / 1000.0,
                o.lat.p99_ns as f64 / 1000.0,
                o.window_ms,
                o.ops,
                o.errors
            );
        }
        if rows == 0 {
            let _ = writeln!(out, "{head},,,,,,,,,,,,,,,{pass},{fail}");
        }
    }
    out.into_bytes()
}

/// A summary-table cell as text: numbers with at most 3 decimals (trailing zeros
/// dropped), strings as they are, booleans as true/false, null as empty.
pub fn cell_text(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => {
                let s = format!("{f:.3}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// CSV header of [`series_csv`].
pub const SERIES_CSV_HEADER: &str = "run_id,seq,workload,job,volume,iteration,source,t_ms,direction,iops,bw_bytes,lat_mean_us,p50_us,p99_us,ceiling_wait_us,floor_wait_us";

/// The time series in long format: one row per fio window and direction (`source` fio,
/// `volume` the job's), per 1 s segment and operation of a request/response driver's
/// merged view (`source` ops, `direction` the operation: GET, PUT, ...), and per node
/// sample and volume (`source` node, `direction` total; read and write rates add up;
/// p50/p99 empty, the node has no per-window percentiles).
pub fn series_csv(run: &RunRecord) -> Vec<u8> {
    let mut out = String::new();
    out.push_str(SERIES_CSV_HEADER);
    out.push('\n');
    for j in &run.jobs {
        let Some(s) = run.series_of(j.id) else {
            continue;
        };
        let head = |vol: &str| {
            format!(
                "{},{},{},{},{},{}",
                run.id,
                j.seq,
                csv_field(&j.workload),
                csv_field(&j.name),
                csv_field(vol),
                j.iteration
            )
        };
        let jv = j.volume.as_deref().unwrap_or("");
        for f in &s.fio {
            let _ = writeln!(
                out,
                "{},fio,{},{},{:.3},{:.0},{:.3},{:.3},{:.3},,",
                head(jv),
                f.t_ms,
                f.direction,
                f.iops,
                f.bw_bytes,
                f.lat_mean_ns / 1000.0,
                f.p50_ns as f64 / 1000.0,
                f.p99_ns as f64 / 1000.0
            );
        }
        // Request/response drivers: the merged view's 1 s segments per operation.
        let merged = harness::ops::primary(&j.ops);
        for o in s
            .ops
            .iter()
            .filter(|o| merged.iter().any(|m| m.client == o.client))
        {
            let _ = writeln!(
                out,
                "{},ops,{},{},{:.3},{:.0},{:.3},{:.3},{:.3},,",
                head(jv),
                o.t_ms,
                csv_field(&o.op),
                o.ops_per_s,
                o.bytes_per_s,
                o.lat_mean_ns / 1000.0,
                o.lat_p50_ns as f64 / 1000.0,
                o.lat_p99_ns as f64 / 1000.0
            );
        }
        for n in &s.node {
            let _ = writeln!(
                out,
                "{},node,{},total,{:.3},{:.0},{:.3},,,{:.3},{:.3}",
                head(&n.volume),
                n.t_ms,
                n.iops(),
                n.bps(),
                n.lat_mean_us,
                n.ceiling_wait_us,
                n.floor_wait_us
            );
        }
    }
    out.into_bytes()
}

fn job_verdict(j: &JobRecord) -> &'static str {
    if j.verdicts.is_empty() {
        if j.status == "done" {
            "-"
        } else {
            "ERROR"
        }
    } else if j.verdicts.iter().all(|v| v.passed) && j.status == "done" {
        "PASS"
    } else {
        "FAIL"
    }
}

/// A Markdown report: environment, volumes, results, verdicts, summary tables, then what
/// each family's hooks add.
pub fn markdown(run: &RunRecord, hooks: &[&dyn ReportHooks]) -> Vec<u8> {
    let mut o = String::new();
    let (passed, failed) = run.verdict_counts();
    let _ = writeln!(o, "# qoslab bench run {}: {}\n", run.id, run.name);
    let _ = writeln!(
        o,
        "- status: **{}** ({passed} expectation(s) passed, {failed} failed)",
        run.status
    );
    let _ = writeln!(
        o,
        "- started {}, finished {}",
        run.started_at,
        run.finished_at.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        o,
        "- plan: {}; target: {}; executor: {}",
        run.plan_origin, run.target, run.executor
    );
    let _ = writeln!(o, "- runtime {} s, ramp {} s", run.runtime_s, run.ramp_s);
    let e = &run.env;
    let _ = writeln!(
        o,
        "- host {}, kernel {}, CPU {}, {}, qoslab {}\n",
        e.host, e.kernel, e.cpu, e.fio_version, e.qoslab_version
    );
    if !run.volumes.is_empty() {
        o.push_str("## Volumes\n\n| volume | size (bytes) | reserve | policy | ceiling IOPS | ceiling BW | floor IOPS | floor BW |\n|---|---:|---:|---|---:|---:|---:|---:|\n");
        let iops = |x: u64| {
            if x == 0 {
                "-".to_string()
            } else {
                x.to_string()
            }
        };
        let bw = |x: u64| if x == 0 { "-".to_string() } else { fmt::bw(x) };
        for v in &run.volumes {
            let l = v.limits;
            let _ = writeln!(
                o,
                "| {} | {} | {}% | {} | {} | {} | {} | {} |",
                v.name,
                v.size,
                v.snapshot_reserve_percent,
                v.policy.as_deref().unwrap_or("-"),
                iops(l.ceiling_iops),
                bw(l.ceiling_bps),
                iops(l.floor_iops),
                bw(l.floor_bps),
            );
        }
        o.push('\n');
    }
    o.push_str("## Results\n\n| # | job | volume | client | dir | IOPS | IOPS (steady) | BW | lat mean (usec) | p99 (usec) | verdict |\n|---:|---|---|---|---|---:|---:|---:|---:|---:|---|\n");
    for j in &run.jobs {
        let mut any = false;
        for r in &j.results {
            for (dir, d) in active_dirs(r) {
                any = true;
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {dir} | {} | {:.1} | {} | {} | {} | {} |",
                    j.seq,
                    j.name,
                    j.volume.as_deref().unwrap_or("-"),
                    r.client.as_deref().unwrap_or("-"),
                    fmt::iops(d.iops_text()),
                    d.iops_mean,
                    fmt::bw(d.bw_text()),
                    fmt::usec(d.lat_mean_ns),
                    fmt::usec(d.p99_ns as f64),
                    job_verdict(j)
                );
            }
        }
        for x in &j.ops {
            any = true;
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {:.1} ops/s | {:.1} | {} | {} | {} | {} |",
                j.seq,
                j.name,
                j.volume.as_deref().unwrap_or("-"),
                if x.client.is_empty() { "-" } else { &x.client },
                x.op,
                x.ops_per_s,
                x.segments.ops_median,
                fmt::bw(x.bytes_per_s as u64),
                fmt::usec(x.lat.mean_ns),
                fmt::usec(x.lat.p99_ns as f64),
                job_verdict(j)
            );
        }
        if !any {
            let _ = writeln!(
                o,
                "| {} | {} | {} | - | - | - | - | - | - | - | {} ({}) |",
                j.seq,
                j.name,
                j.volume.as_deref().unwrap_or("-"),
                job_verdict(j),
                j.error.as_deref().unwrap_or(&j.status).replace('|', "/")
            );
        }
    }
    o.push('\n');
    let verdicts: Vec<_> = run
        .jobs
        .iter()
        .flat_map(|j| j.verdicts.iter().map(move |v| (j, v)))
        .collect();
    if !verdicts.is_empty() {
        o.push_str("## Expectations\n\n");
        for (j, v) in verdicts {
            let _ = writeln!(
                o,
                "- {} `{}` on {} #{}: `{}`: {}",
                if v.passed { "PASS" } else { "FAIL" },
                j.name,
                j.volume.as_deref().unwrap_or("-"),
                j.seq,
                v.expectation,
                v.detail.replace('|', "/")
            );
        }
        o.push('\n');
    }
    for t in &run.tables {
        let _ = writeln!(o, "## {} ({})\n", t.name, t.kind);
        let _ = writeln!(o, "| {} |", t.columns.join(" | "));
        let _ = writeln!(o, "|{}", "---|".repeat(t.columns.len()));
        for r in &t.rows {
            let cells: Vec<String> = r.iter().map(|v| cell_text(v).replace('|', "/")).collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
        o.push('\n');
    }
    for h in hooks {
        o.push_str(&h.markdown(run));
    }
    if !run.series.is_empty() {
        let n: usize = run
            .series
            .iter()
            .map(|s| s.fio.len() + s.node.len() + s.ops.len())
            .sum();
        let _ = writeln!(
            o,
            "Time series: {n} samples over {} job(s); see `--format html` for charts or `--format series-csv`.\n",
            run.series.len()
        );
    }
    o.into_bytes()
}
