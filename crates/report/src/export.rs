//! Exporters: pure functions from a stored run to bytes (JSON, CSV, series CSV, Markdown,
//! HTML). No I/O, no clock: the same run always exports to the same bytes
//! (snapshot-tested). docs/REPORTS.md documents each format.

use std::fmt::Write as _;

use serde::Serialize;

use fio::fmt;
use fio::{DirStats, JobResult};
use harness::series::CreditSample;
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
    /// The summary tables, one row per cell (long format).
    TablesCsv,
    Md,
    Html,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "series-csv" => Some(Format::SeriesCsv),
            "tables-csv" => Some(Format::TablesCsv),
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
    inconclusive: usize,
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
    let t = run.tally();
    let mut v = serde_json::to_vec_pretty(&JsonRun {
        schema: JSON_SCHEMA,
        run,
        verdicts: Counts {
            passed: t.pass,
            failed: t.fail,
            inconclusive: t.inconclusive,
        },
    })
    .unwrap_or_default();
    v.push(b'\n');
    v
}

/// CSV header of [`csv`].
pub const CSV_HEADER: &str = "run_id,seq,workload,job,volume,iteration,status,client,direction,iops,iops_mean,bw_bytes,bw_mean_bytes,lat_mean_us,p50_us,p90_us,p99_us,p999_us,runtime_ms,total_ios,error,verdicts_passed,verdicts_failed,verdicts_inconclusive,bottleneck,diagnosis,steady";

/// A job's diagnosis and steady state as three CSV fields.
fn csv_assessment(j: &JobRecord) -> String {
    let (b, why) = match &j.diagnosis {
        Some(d) => (d.bottleneck.as_str(), d.reason.as_str()),
        None => ("", ""),
    };
    let steady = match &j.steady {
        Some(s) if s.attained => "steady",
        Some(_) => "not steady",
        None => "",
    };
    format!("{b},{},{steady}", csv_field(why))
}

/// A spread's figures as the reports show them: iterations, mean, stddev, spread (% of
/// the mean), min, max.
pub fn spread_cells(s: &assess::stats::Spread) -> [String; 6] {
    [
        s.n.to_string(),
        fmt::sig(s.mean),
        fmt::sig(s.stddev),
        format!("{:.1}%", s.cv_pct()),
        fmt::sig(s.min),
        fmt::sig(s.max),
    ]
}

/// Jobs run more than once (`iterations = N`): per (workload, job, volume), the spread of
/// fio's steady IOPS (`iops_mean`, directions added) over the iterations, in job order.
pub fn iteration_spreads(run: &RunRecord) -> Vec<(String, assess::stats::Spread)> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    let mut vals: std::collections::BTreeMap<(String, String, String), Vec<f64>> =
        std::collections::BTreeMap::new();
    for j in run.jobs.iter().filter(|j| j.status == "done") {
        let Some(r) = j.primary() else { continue };
        let k = (
            j.workload.clone(),
            j.name.clone(),
            j.volume.clone().unwrap_or_default(),
        );
        if !keys.contains(&k) {
            keys.push(k.clone());
        }
        vals.entry(k)
            .or_default()
            .push(r.read.iops_mean + r.write.iops_mean);
    }
    keys.into_iter()
        .filter_map(|k| {
            let v = vals.get(&k)?;
            let s = assess::stats::Spread::of(v).filter(|s| s.n > 1)?;
            let name = if k.2.is_empty() {
                format!("{} / {}", k.0, k.1)
            } else {
                format!("{} / {} on {}", k.0, k.1, k.2)
            };
            Some((name, s))
        })
        .collect()
}

/// A job's diagnosis in a sentence: "qos-bound: measured 500 IOPS is 100.0% of ...".
pub fn diagnosis_text(j: &JobRecord) -> String {
    match &j.diagnosis {
        Some(d) => format!("{}: {}", d.bottleneck, d.reason),
        None => "-".into(),
    }
}

/// "steady", "not steady" or "-" (fewer than 5 windows), with the figures.
pub fn steady_text(j: &JobRecord) -> String {
    match &j.steady {
        Some(s) => s.describe(),
        None => "-".into(),
    }
}

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
        let t = assess::Tally::of(j.verdicts.iter().map(|v| &v.outcome));
        let (pass, fail, inc) = (t.pass, t.fail, t.inconclusive);
        let assessment = csv_assessment(j);
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
                    "{head},{},{dir},{:.3},{:.3},{},{:.0},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{},{pass},{fail},{inc},{assessment}",
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
            let _ = writeln!(out, "{head},,,,,,,,,,,,,,,{pass},{fail},{inc},{assessment}");
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

/// CSV header of [`tables_csv`].
pub const TABLES_CSV_HEADER: &str = "run_id,kind,table,row,column,value";

/// The summary tables in long format: one row per cell (`row` counts from 1 within its
/// table; booleans as true/false, numbers as [`cell_text`] writes them).
pub fn tables_csv(run: &RunRecord) -> Vec<u8> {
    let mut out = String::new();
    out.push_str(TABLES_CSV_HEADER);
    out.push('\n');
    for t in &run.tables {
        for (k, r) in t.rows.iter().enumerate() {
            for (c, v) in t.columns.iter().zip(r) {
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{}",
                    run.id,
                    csv_field(&t.kind),
                    csv_field(&t.name),
                    k + 1,
                    csv_field(c),
                    csv_field(&cell_text(v))
                );
            }
        }
    }
    out.into_bytes()
}

/// CSV header of [`series_csv`].
pub const SERIES_CSV_HEADER: &str = "run_id,seq,workload,job,volume,iteration,source,t_ms,direction,iops,bw_bytes,lat_mean_us,p50_us,p99_us,ceiling_wait_us,floor_wait_us,metric,instance,value";

/// Columns [`series_csv`] appends when the run's node samples carry burst balances: each
/// bucket's balance, size, baseline and burst rates and time to empty (seconds; empty when
/// not draining), for the IOPS and the bytes dimension.
pub const SERIES_CSV_CREDIT_COLUMNS: &str = ",iops_balance,iops_bucket,iops_baseline,iops_burst,iops_time_to_empty_s,bytes_balance,bytes_bucket,bytes_baseline,bytes_burst,bytes_time_to_empty_s";

/// The credit columns of one row: the IOPS bucket's five, then the bytes bucket's.
fn credit_fields(iops: Option<&CreditSample>, bytes: Option<&CreditSample>) -> String {
    let mut o = String::new();
    for c in [iops, bytes] {
        match c {
            Some(c) => {
                let _ = write!(
                    o,
                    ",{:.0},{:.0},{:.0},{:.0},{}",
                    c.balance,
                    c.bucket,
                    c.baseline,
                    c.burst,
                    c.time_to_empty_s
                        .map_or(String::new(), |t| format!("{t:.3}"))
                );
            }
            None => o.push_str(",,,,,"),
        }
    }
    o
}

/// The time series in long format: one row per fio window and direction (`source` fio,
/// `volume` the job's), per 1 s segment and operation of a request/response driver's
/// merged view (`source` ops, `direction` the operation: GET, PUT, ...), and per node
/// sample and volume (`source` node, `direction` total; read and write rates add up;
/// p50/p99 empty, the node has no per-window percentiles), and per host tool-set sample
/// and figure (`source` `host:NAME`, the figure in `metric`, `instance` (a CPU, device,
/// NIC, role or `pid:name`) and `value`; see docs/DIAGNOSIS.md).
/// When the run's limits burst, the header gains [`SERIES_CSV_CREDIT_COLUMNS`] (filled on
/// node rows) and each sample of a provisioned file system's resources is a row too
/// (`source` resource, `volume` the resource's name, its use in `iops` or `bw_bytes` as it
/// counts, its bucket in the matching credit columns). Runs without balances export
/// exactly the columns they did without them.
pub fn series_csv(run: &RunRecord) -> Vec<u8> {
    let credits = run
        .series
        .iter()
        .any(|s| s.has_credits() || !s.resources.is_empty());
    let fio_credits = if credits { ",,,,,,,,,," } else { "" };
    let mut out = String::new();
    out.push_str(SERIES_CSV_HEADER);
    if credits {
        out.push_str(SERIES_CSV_CREDIT_COLUMNS);
    }
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
                "{},fio,{},{},{:.3},{:.0},{:.3},{:.3},{:.3},,,,,{fio_credits}",
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
                "{},node,{},total,{:.3},{:.0},{:.3},,,{:.3},{:.3},,,{}",
                head(&n.volume),
                n.t_ms,
                n.iops(),
                n.bps(),
                n.lat_mean_us,
                n.ceiling_wait_us,
                n.floor_wait_us,
                if credits {
                    credit_fields(n.iops_credits.as_ref(), n.bytes_credits.as_ref())
                } else {
                    String::new()
                }
            );
        }
        for r in &s.resources {
            let bytes = r.unit == "bytes";
            let (iops, bw) = if bytes {
                (String::new(), format!("{:.0}", r.use_rate))
            } else {
                (format!("{:.3}", r.use_rate), String::new())
            };
            let c = r.credits.as_ref();
            let _ = writeln!(
                out,
                "{},resource,{},total,{iops},{bw},,,,,,,,{}",
                head(&r.resource),
                r.t_ms,
                if bytes {
                    credit_fields(None, c)
                } else {
                    credit_fields(c, None)
                }
            );
        }
        for h in &s.hosts {
            for x in &h.samples {
                for (metric, instance, value) in x.rows() {
                    let _ = writeln!(
                        out,
                        "{},host:{},{},,,,,,,,,{metric},{},{value:.3}{fio_credits}",
                        head(jv),
                        csv_field(&h.host),
                        x.t_ms,
                        csv_field(&instance)
                    );
                }
            }
        }
    }
    out.into_bytes()
}

/// A job's verdicts in one word: FAIL if any failed (or the job did), INCONCLUSIVE if any
/// was, PASS, or "-" without expectations.
pub fn job_verdict(j: &JobRecord) -> &'static str {
    if j.verdicts.is_empty() {
        if j.status == "done" {
            "-"
        } else {
            "ERROR"
        }
    } else if j.status != "done" {
        "FAIL"
    } else {
        assess::Tally::of(j.verdicts.iter().map(|v| &v.outcome))
            .outcome()
            .label()
    }
}

/// A Markdown report: environment, volumes, results, verdicts, summary tables, then what
/// each family's hooks add.
pub fn markdown(run: &RunRecord, hooks: &[&dyn ReportHooks]) -> Vec<u8> {
    let mut o = String::new();
    md_header(&mut o, run);
    md_volumes(&mut o, run);
    md_results(&mut o, run);
    md_expectations(&mut o, run);
    md_iterations(&mut o, run);
    md_limits(&mut o, run);
    md_tables(&mut o, run);
    for h in hooks {
        o.push_str(&h.markdown(run));
    }
    md_series(&mut o, run);
    o.into_bytes()
}

/// The title, the answer first (each claim in words, what did not pass first, or what a
/// run without checks measured), then when, what and where.
fn md_header(o: &mut String, run: &RunRecord) {
    let t = run.tally();
    let _ = writeln!(o, "# qoslab bench run {}: {}\n", run.id, run.name);
    let _ = writeln!(
        o,
        "**{}**: verdicts {}\n",
        run.status.to_uppercase(),
        t.summary()
    );
    let claims = crate::claims::claims(run);
    let lines: Vec<String> = if claims.is_empty() {
        crate::claims::measured(run)
            .into_iter()
            .map(|m| format!("- measured: {m}"))
            .collect()
    } else {
        claims
            .iter()
            .map(|c| format!("- {} {}", c.outcome.label(), c.text))
            .collect()
    };
    for l in lines.iter().take(12) {
        let _ = writeln!(o, "{}", l.replace('|', "/"));
    }
    if lines.len() > 12 {
        let _ = writeln!(o, "- ... and {} more below", lines.len() - 12);
    }
    if !lines.is_empty() {
        o.push('\n');
    }
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
}

/// The volumes and their effective limits.
fn md_volumes(o: &mut String, run: &RunRecord) {
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
}

/// A row per job, direction (or operation) and client.
fn md_results(o: &mut String, run: &RunRecord) {
    o.push_str("## Results\n\n| # | job | volume | client | dir | IOPS | IOPS (steady) | BW | lat mean | p99 | verdict | limited by | steady state |\n|---:|---|---|---|---|---:|---:|---:|---:|---:|---|---|---|\n");
    for j in &run.jobs {
        // The job's cells, the same on each of its rows.
        let job = format!(
            "| {} | {} | {} |",
            j.seq,
            j.name,
            j.volume.as_deref().unwrap_or("-")
        );
        let verdict = job_verdict(j);
        let limited_by = j
            .diagnosis
            .as_ref()
            .map(|d| d.bottleneck.as_str())
            .unwrap_or("-");
        let mut any = false;
        for r in &j.results {
            for (dir, d) in active_dirs(r) {
                any = true;
                let _ = writeln!(
                    o,
                    "{job} {} | {dir} | {} | {} | {} | {} | {} | {verdict} | {limited_by} | {} |",
                    r.client.as_deref().unwrap_or("-"),
                    fmt::iops(d.iops_text()),
                    fmt::sig(d.iops_mean),
                    fmt::bw(d.bw_text()),
                    fmt::lat(d.lat_mean_ns),
                    fmt::lat(d.p99_ns as f64),
                    match &j.steady {
                        Some(s) if s.attained => "steady",
                        Some(_) => "not steady",
                        None => "-",
                    }
                );
            }
        }
        for x in &j.ops {
            any = true;
            let _ = writeln!(
                o,
                "{job} {} | {} | {} ops/s | {} | {} | {} | {} | {verdict} | {limited_by} | - |",
                if x.client.is_empty() { "-" } else { &x.client },
                x.op,
                fmt::sig(x.ops_per_s),
                fmt::sig(x.segments.ops_median),
                fmt::bw(x.bytes_per_s as u64),
                fmt::lat(x.lat.mean_ns),
                fmt::lat(x.lat.p99_ns as f64),
            );
        }
        if !any {
            let _ = writeln!(
                o,
                "{job} - | - | - | - | - | - | - | {verdict} ({}) | - | - |",
                j.error.as_deref().unwrap_or(&j.status).replace('|', "/")
            );
        }
    }
    o.push('\n');
}

/// Every verdict, spelled out.
fn md_expectations(o: &mut String, run: &RunRecord) {
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
                "- {} `{}` on {} #{}: `{}`: {}{}",
                v.label(),
                j.name,
                j.volume.as_deref().unwrap_or("-"),
                j.seq,
                v.expectation,
                v.detail.replace('|', "/"),
                v.reason
                    .as_ref()
                    .map(|r| format!(" ({})", r.replace('|', "/")))
                    .unwrap_or_default()
            );
        }
        o.push('\n');
    }
}

/// The spread of each job's steady IOPS over the plan's iterations.
fn md_iterations(o: &mut String, run: &RunRecord) {
    let spreads = iteration_spreads(run);
    if !spreads.is_empty() {
        o.push_str("## Iterations\n\n| job | iterations | IOPS (steady) mean | stddev | spread (stddev % of mean) | min | max |\n|---|---:|---:|---:|---:|---:|---:|\n");
        for (name, s) in &spreads {
            let _ = writeln!(o, "| {name} | {} |", spread_cells(s).join(" | "));
        }
        o.push('\n');
    }
}

/// What limited each diagnosed job.
fn md_limits(o: &mut String, run: &RunRecord) {
    if run.jobs.iter().any(|j| j.diagnosis.is_some()) {
        o.push_str("## What limited each job\n\n");
        for j in &run.jobs {
            let Some(d) = &j.diagnosis else { continue };
            let figures: Vec<String> = d
                .figures
                .iter()
                .filter(|f| !f.limit.is_empty())
                .map(|f| f.describe())
                .collect();
            let _ = writeln!(
                o,
                "- #{} `{}` on {}: **{}**: {}{}; {}",
                j.seq,
                j.name,
                j.volume.as_deref().unwrap_or("-"),
                d.bottleneck,
                d.reason.replace('|', "/"),
                if figures.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", figures.join("; "))
                },
                steady_text(j)
            );
        }
        o.push('\n');
    }
}

/// The profile tables.
fn md_tables(o: &mut String, run: &RunRecord) {
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
}

/// How many time-series samples there are, and where to see them.
fn md_series(o: &mut String, run: &RunRecord) {
    if !run.series.is_empty() {
        let n: usize = run
            .series
            .iter()
            .map(|s| s.fio.len() + s.node.len() + s.ops.len() + s.resources.len())
            .sum();
        let _ = writeln!(
            o,
            "Time series: {n} samples over {} job(s); see `--format html` for charts or `--format series-csv`.\n",
            run.series.len()
        );
    }
}
