//! Comparing two runs job by job (`qoslab compare A B`). Pure.
//!
//! Jobs match on (workload, job name, volume); a plan's `iterations = N` gives N values of
//! each metric per run. For each metric (IOPS, bandwidth, mean latency, p99) the change is
//! `mean(B) / mean(A) - 1`, the spread of a run is its relative range across iterations,
//! `(max - min) / mean`, and the change is **flagged** when
//!
//! ```text
//! |change| > max(2 x max(spread A, spread B), 5%)
//! ```
//!
//! i.e. when it exceeds twice the run-to-run noise either run showed, and 5% in any case
//! (single-iteration runs have no measured spread; the 5% floor keeps them from flagging
//! every wobble). IOPS and bandwidth are fio's headline numbers (total / runtime, read and
//! write added), mean latency is I/O-weighted over directions, p99 is the worse direction's
//! completion-latency p99.
//!
//! Jobs of request/response drivers (the S3 family) are compared per operation on their
//! merged view: ops/s, MiB/s, mean and p99 latency, and TTFB p50 for GETs. Their spread is
//! also measured inside each run, from its 1 s segments in the measured window (warp's
//! segments): `2 x SE / mean` with `SE = sd / sqrt(segments)`, averaged over iterations; a
//! run's spread is the larger of that and the spread across iterations, so even one
//! iteration per run has a measured noise.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use harness::store::{JobRecord, RunRecord};

use crate::svg::esc;

/// The smallest change ever flagged.
pub const MIN_NOISE: f64 = 0.05;
/// How many spreads a change must exceed.
pub const SPREAD_FACTOR: f64 = 2.0;

/// The `schema` of `qoslab compare --json`.
pub const JSON_SCHEMA: &str = "qoslab.compare/1";

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// (max - min) / mean; 0 for one value.
    pub spread: f64,
    /// The run's own noise from its 1 s segments (request/response drivers): the mean over
    /// iterations of 2 x SE / mean, SE = sd / sqrt(segments); 0 when not measured.
    #[serde(skip_serializing_if = "is_zero")]
    pub segment_spread: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Stat {
    pub fn of(v: &[f64]) -> Option<Stat> {
        if v.is_empty() {
            return None;
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let min = v.iter().copied().fold(f64::MAX, f64::min);
        let max = v.iter().copied().fold(f64::MIN, f64::max);
        let spread = if mean.abs() > 0.0 {
            (max - min) / mean.abs()
        } else {
            0.0
        };
        Some(Stat {
            n: v.len(),
            mean,
            min,
            max,
            spread,
            segment_spread: 0.0,
        })
    }

    /// The larger of the two spreads.
    pub fn noise(&self) -> f64 {
        self.spread.max(self.segment_spread)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDelta {
    /// iops, bw_bytes, lat_mean_us, lat_p99_us (fio jobs); "GET ops/s", "GET MiB/s",
    /// "GET lat mean ms", "GET lat p99 ms", "GET TTFB p50 ms" (per operation of a
    /// request/response driver)
    pub metric: String,
    pub higher_is_better: bool,
    pub a: Stat,
    pub b: Stat,
    /// mean(B) / mean(A) - 1 (None when A's mean is 0).
    pub change: Option<f64>,
    /// The threshold: max(2 x max(spread A, spread B), 5%).
    pub noise: f64,
    pub flagged: bool,
    /// "better", "worse" (flagged changes) or "within noise".
    pub verdict: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobDelta {
    pub workload: String,
    pub job: String,
    pub volume: Option<String>,
    pub metrics: Vec<MetricDelta>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRef {
    pub id: i64,
    pub name: String,
    pub started_at: String,
    pub target: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub a: RunRef,
    pub b: RunRef,
    pub rule: String,
    pub jobs: Vec<JobDelta>,
    /// Jobs (workload/job@volume) present in only one run.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
}

impl Comparison {
    pub fn flagged(&self) -> usize {
        self.jobs
            .iter()
            .flat_map(|j| &j.metrics)
            .filter(|m| m.flagged)
            .count()
    }
}

type Key = (String, String, Option<String>);

/// One measured value of one iteration: metric, direction, value, segment spread.
type Value = (String, bool, f64, f64);

const METRICS: [(&str, bool); 4] = [
    ("iops", true),
    ("bw_bytes", true),
    ("lat_mean_us", false),
    ("lat_p99_us", false),
];

/// 2 x SE / mean of `v` (0 with fewer than 2 values or a zero mean).
fn segment_spread(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / n;
    if mean.abs() == 0.0 {
        return 0.0;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    2.0 * (var / n).sqrt() / mean.abs()
}

/// The per-operation metrics of a request/response driver's job (merged view), with each
/// one's segment spread from the job's 1 s segments inside the measured window.
fn op_values(run: &RunRecord, j: &JobRecord) -> Vec<Value> {
    let series = run.series_of(j.id);
    let mut out = Vec::new();
    for o in harness::ops::primary(&j.ops) {
        if o.ops == 0 {
            continue;
        }
        let segs: Vec<&harness::ops::OpSample> = series
            .map(|s| {
                s.ops
                    .iter()
                    .filter(|x| x.client == o.client && x.op == o.op && x.in_window)
                    .collect()
            })
            .unwrap_or_default();
        let spread = |f: &dyn Fn(&harness::ops::OpSample) -> f64| {
            segment_spread(&segs.iter().map(|x| f(x)).collect::<Vec<_>>())
        };
        let op = &o.op;
        out.push((
            format!("{op} ops/s"),
            true,
            o.ops_per_s,
            spread(&|x| x.ops_per_s),
        ));
        if o.bytes_per_s > 0.0 {
            out.push((
                format!("{op} MiB/s"),
                true,
                o.bytes_per_s / 1048576.0,
                spread(&|x| x.bytes_per_s),
            ));
        }
        out.push((
            format!("{op} lat mean ms"),
            false,
            o.lat.mean_ns / 1e6,
            spread(&|x| x.lat_mean_ns),
        ));
        out.push((
            format!("{op} lat p99 ms"),
            false,
            o.lat.p99_ns as f64 / 1e6,
            spread(&|x| x.lat_p99_ns as f64),
        ));
        if let Some(t) = o.ttfb {
            out.push((
                format!("{op} TTFB p50 ms"),
                false,
                t.p50_ns as f64 / 1e6,
                spread(&|x| x.ttfb_mean_ns),
            ));
        }
    }
    out
}

fn values(run: &RunRecord, j: &JobRecord) -> Option<Vec<Value>> {
    if j.status != "done" {
        return None;
    }
    if !j.ops.is_empty() {
        return Some(op_values(run, j));
    }
    let r = j.primary()?;
    if !(r.read.active() || r.write.active()) {
        return None;
    }
    let v = [
        r.iops(),
        r.bw_bytes() as f64,
        r.lat_mean_ns() / 1000.0,
        r.read.p99_ns.max(r.write.p99_ns) as f64 / 1000.0,
    ];
    Some(
        METRICS
            .iter()
            .zip(v)
            .map(|((m, up), x)| (m.to_string(), *up, x, 0.0))
            .collect(),
    )
}

fn group(run: &RunRecord) -> (Vec<Key>, BTreeMap<Key, Vec<Vec<Value>>>) {
    let mut order = Vec::new();
    let mut m: BTreeMap<Key, Vec<Vec<Value>>> = BTreeMap::new();
    for j in &run.jobs {
        let k = (j.workload.clone(), j.name.clone(), j.volume.clone());
        if !m.contains_key(&k) {
            order.push(k.clone());
        }
        let e = m.entry(k).or_default();
        if let Some(v) = values(run, j) {
            e.push(v);
        }
    }
    (order, m)
}

fn key_name(k: &Key) -> String {
    match &k.2 {
        Some(v) => format!("{}/{}@{v}", k.0, k.1),
        None => format!("{}/{}", k.0, k.1),
    }
}

fn run_ref(r: &RunRecord) -> RunRef {
    RunRef {
        id: r.id,
        name: r.name.clone(),
        started_at: r.started_at.clone(),
        target: r.target.clone(),
    }
}

/// A metric's values over the iterations, with their mean segment spread.
fn stat_of(its: &[Vec<Value>], metric: &str) -> Option<Stat> {
    let found: Vec<&Value> = its
        .iter()
        .filter_map(|v| v.iter().find(|x| x.0 == metric))
        .collect();
    let xs: Vec<f64> = found.iter().map(|x| x.2).collect();
    let mut s = Stat::of(&xs)?;
    s.segment_spread = found.iter().map(|x| x.3).sum::<f64>() / found.len() as f64;
    Some(s)
}

/// Compare run `a` (before) with run `b` (after).
pub fn compare(a: &RunRecord, b: &RunRecord) -> Comparison {
    let (order_a, ga) = group(a);
    let (order_b, gb) = group(b);
    let mut jobs = Vec::new();
    let mut only_in_a = Vec::new();
    let mut segments = false;
    for k in &order_a {
        let (Some(va), Some(vb)) = (ga.get(k), gb.get(k)) else {
            only_in_a.push(key_name(k));
            continue;
        };
        // Metric names in the order they first appear.
        let mut names: Vec<(String, bool)> = Vec::new();
        for v in va.iter().chain(vb.iter()).flatten() {
            if !names.iter().any(|n| n.0 == v.0) {
                names.push((v.0.clone(), v.1));
            }
        }
        let mut metrics = Vec::new();
        for (metric, higher_is_better) in names {
            let (Some(sa), Some(sb)) = (stat_of(va, &metric), stat_of(vb, &metric)) else {
                continue;
            };
            if sa.mean == 0.0 && sb.mean == 0.0 {
                continue;
            }
            segments |= sa.segment_spread > 0.0 || sb.segment_spread > 0.0;
            let change = (sa.mean != 0.0).then(|| sb.mean / sa.mean - 1.0);
            let noise = (SPREAD_FACTOR * sa.noise().max(sb.noise())).max(MIN_NOISE);
            let flagged = match change {
                Some(c) => c.abs() > noise,
                None => true,
            };
            let up = change.map(|c| c > 0.0).unwrap_or(true);
            let verdict = if !flagged {
                "within noise"
            } else if up == higher_is_better {
                "better"
            } else {
                "worse"
            };
            metrics.push(MetricDelta {
                metric,
                higher_is_better,
                a: sa,
                b: sb,
                change,
                noise,
                flagged,
                verdict,
            });
        }
        jobs.push(JobDelta {
            workload: k.0.clone(),
            job: k.1.clone(),
            volume: k.2.clone(),
            metrics,
        });
    }
    let only_in_b = order_b
        .iter()
        .filter(|k| !ga.contains_key(*k))
        .map(key_name)
        .collect();
    let mut rule = format!(
        "flagged when |change| > max({SPREAD_FACTOR} x max(spread A, spread B), {}%); spread = (max - min) / mean across iterations",
        MIN_NOISE * 100.0
    );
    if segments {
        rule.push_str(", or for per-operation results the run's own 2 x SE / mean over its 1 s segments, whichever is larger");
    }
    Comparison {
        schema: JSON_SCHEMA,
        a: run_ref(a),
        b: run_ref(b),
        rule,
        jobs,
        only_in_a,
        only_in_b,
    }
}

fn show(metric: &str, v: f64) -> String {
    match metric {
        "iops" => format!("{v:.1}"),
        "bw_bytes" => format!("{:.2} MiB/s", v / 1048576.0),
        m if m.ends_with(" ops/s") => format!("{v:.1}"),
        m if m.ends_with(" MiB/s") => format!("{v:.2} MiB/s"),
        m if m.ends_with(" ms") => format!("{v:.3} ms"),
        _ => format!("{v:.1} us"),
    }
}

fn show_stat(metric: &str, s: &Stat) -> String {
    if s.n > 1 {
        format!(
            "{} [{}..{}] n={}",
            show(metric, s.mean),
            show(metric, s.min),
            show(metric, s.max),
            s.n
        )
    } else {
        show(metric, s.mean)
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|c| format!("{:+.1}%", c * 100.0))
        .unwrap_or_else(|| "new".into())
}

fn rows(c: &Comparison) -> Vec<[String; 7]> {
    let mut out = Vec::new();
    for j in &c.jobs {
        let name = match &j.volume {
            Some(v) => format!("{}/{} on {v}", j.workload, j.job),
            None => format!("{}/{}", j.workload, j.job),
        };
        for m in &j.metrics {
            out.push([
                name.clone(),
                m.metric.clone(),
                show_stat(&m.metric, &m.a),
                show_stat(&m.metric, &m.b),
                pct(m.change),
                format!("{:.1}%", m.noise * 100.0),
                if m.flagged {
                    format!("FLAG {}", m.verdict)
                } else {
                    m.verdict.to_string()
                },
            ]);
        }
    }
    out
}

const HEAD: [&str; 7] = [
    "job",
    "metric",
    "A mean [min..max]",
    "B mean [min..max]",
    "change",
    "noise",
    "verdict",
];

/// A terminal table.
pub fn text(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "A = run {} ({}, {}), B = run {} ({}, {})",
        c.a.id, c.a.name, c.a.started_at, c.b.id, c.b.name, c.b.started_at
    );
    let _ = writeln!(o, "{}\n", c.rule);
    let rows = rows(c);
    let mut w = HEAD.map(|h| h.chars().count());
    for r in &rows {
        for (i, x) in r.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    let line = |o: &mut String, r: &[String]| {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, x)| format!("{x:<width$}", width = w[i]))
            .collect();
        let _ = writeln!(o, "{}", cells.join("  ").trim_end());
    };
    line(&mut o, &HEAD.map(String::from));
    line(&mut o, &w.map(|n| "-".repeat(n)));
    for r in &rows {
        line(&mut o, r);
    }
    for k in &c.only_in_a {
        let _ = writeln!(o, "only in A: {k}");
    }
    for k in &c.only_in_b {
        let _ = writeln!(o, "only in B: {k}");
    }
    let _ = writeln!(o, "\n{} change(s) beyond the noise.", c.flagged());
    o
}

/// Machine-readable JSON (docs/REPORTS.md).
pub fn json(c: &Comparison) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(c).unwrap_or_default();
    v.push(b'\n');
    v
}

/// A self-contained HTML page.
pub fn html(c: &Comparison) -> Vec<u8> {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>qoslab compare {} vs {}</title><style>\
body{{font:14px/1.45 system-ui,\"DejaVu Sans\",sans-serif;margin:16px 24px;color:#111}}\
table{{border-collapse:collapse;font-size:13px}}th,td{{border:1px solid #ccc;padding:3px 8px;text-align:left}}\
th{{background:#f2f2f2}}td.n{{text-align:right;font-variant-numeric:tabular-nums}}\
tr.worse td{{background:#fdf0e8}}tr.better td{{background:#e8f6f0}}.worse{{color:#D55E00;font-weight:700}}.better{{color:#009E73;font-weight:700}}\
@media print{{body{{margin:0;font-size:10pt}}tr{{break-inside:avoid}}}}</style></head><body>",
        c.a.id, c.b.id
    );
    let _ = write!(
        o,
        "<h1>qoslab compare: run {} vs run {}</h1><p>A = run {} <b>{}</b> ({}, target {})<br>B = run {} <b>{}</b> ({}, target {})</p><p>{}. {} change(s) beyond the noise.</p>",
        c.a.id,
        c.b.id,
        c.a.id,
        esc(&c.a.name),
        esc(&c.a.started_at),
        esc(&c.a.target),
        c.b.id,
        esc(&c.b.name),
        esc(&c.b.started_at),
        esc(&c.b.target),
        esc(&c.rule),
        c.flagged()
    );
    o.push_str("<table><thead><tr>");
    for h in HEAD {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr></thead><tbody>");
    let mut i = 0;
    for j in &c.jobs {
        for m in &j.metrics {
            let r = &rows(c)[i];
            i += 1;
            let class = if m.flagged { m.verdict } else { "" };
            let _ = write!(o, "<tr class=\"{class}\">");
            for (k, cell) in r.iter().enumerate() {
                let cls = match k {
                    2..=5 => " class=\"n\"",
                    6 if m.flagged => {
                        if m.verdict == "better" {
                            " class=\"better\""
                        } else {
                            " class=\"worse\""
                        }
                    }
                    _ => "",
                };
                let _ = write!(o, "<td{cls}>{}</td>", esc(cell));
            }
            o.push_str("</tr>");
        }
    }
    o.push_str("</tbody></table>");
    for (label, ks) in [("only in A", &c.only_in_a), ("only in B", &c.only_in_b)] {
        for k in ks {
            let _ = write!(o, "<p>{label}: {}</p>", esc(k));
        }
    }
    o.push_str("</body></html>\n");
    o.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fio::JobResult;
    use harness::host::Env;
    use harness::store::JobRecord;

    fn job(seq: u32, name: &str, iteration: u32, iops: f64, p99_us: u64) -> JobRecord {
        let mut r = JobResult::default();
        r.read.iops = iops;
        r.read.total_ios = 100;
        r.read.bw_bytes = (iops * 4096.0) as u64;
        r.read.lat_mean_ns = 1e9 / iops * 16.0;
        r.read.p99_ns = p99_us * 1000;
        JobRecord {
            id: seq as i64,
            seq,
            workload: "w".into(),
            name: name.into(),
            volume: Some("v".into()),
            iteration,
            status: "done".into(),
            started_at: String::new(),
            finished_at: None,
            error: None,
            results: vec![r],
            verdicts: vec![],
            ops: vec![],
        }
    }

    fn run(id: i64, jobs: Vec<JobRecord>) -> RunRecord {
        RunRecord {
            id,
            name: format!("r{id}"),
            started_at: "2026-11-22T07:00:00Z".into(),
            finished_at: None,
            status: "passed".into(),
            plan_origin: String::new(),
            plan_text: String::new(),
            target: "embedded node".into(),
            executor: "fake".into(),
            runtime_s: 3.0,
            ramp_s: 1.0,
            env: Env::default(),
            policies: vec![],
            volumes: vec![],
            jobs,
            tables: vec![],
            series: vec![],
        }
    }

    #[test]
    fn changes_beyond_twice_the_spread_are_flagged() {
        // A: 1000, 1100, 1050 IOPS (spread 100/1050 = 9.5%, noise 19%).
        let a = run(
            1,
            vec![
                job(1, "read", 1, 1000.0, 500),
                job(2, "read", 2, 1100.0, 500),
                job(3, "read", 3, 1050.0, 500),
                job(4, "gone", 1, 10.0, 1),
            ],
        );
        // B: -10% IOPS (within 19%), p99 doubled (spread 0 -> noise 5%: flagged, worse).
        let b = run(
            2,
            vec![
                job(1, "read", 1, 900.0, 1000),
                job(2, "read", 2, 990.0, 1000),
                job(3, "read", 3, 945.0, 1000),
                job(4, "new", 1, 10.0, 1),
            ],
        );
        let c = compare(&a, &b);
        assert_eq!(c.jobs.len(), 1);
        let m = &c.jobs[0].metrics;
        let iops = m.iter().find(|m| m.metric == "iops").unwrap();
        assert_eq!(iops.a.n, 3);
        assert!((iops.change.unwrap() + 0.10).abs() < 1e-9, "{iops:?}");
        assert!((iops.noise - 2.0 * 100.0 / 1050.0).abs() < 1e-9, "{iops:?}");
        assert!(!iops.flagged && iops.verdict == "within noise");
        let p99 = m.iter().find(|m| m.metric == "lat_p99_us").unwrap();
        assert!(p99.flagged && p99.verdict == "worse", "{p99:?}");
        assert_eq!(p99.noise, MIN_NOISE);
        assert_eq!(c.only_in_a, vec!["w/gone@v"]);
        assert_eq!(c.only_in_b, vec!["w/new@v"]);
        assert_eq!(
            c.flagged(),
            1,
            "only p99: latency and bw move within their noise"
        );
        let t = text(&c);
        assert!(t.contains("FLAG worse"), "{t}");
        assert!(t.contains("1050.0 [1000.0..1100.0] n=3"), "{t}");
        let j: serde_json::Value = serde_json::from_slice(&json(&c)).unwrap();
        assert_eq!(j["schema"], JSON_SCHEMA);
        assert_eq!(j["jobs"][0]["metrics"][3]["flagged"], true);
        let h = String::from_utf8(html(&c)).unwrap();
        assert!(h.contains("<tr class=\"worse\">"), "{h}");
    }

    fn s3_run(id: i64, ops_per_s: f64, p99_ms: u64, segs: &[f64]) -> RunRecord {
        use harness::ops::{OpLatency, OpResult, OpSample, SegmentSpread};
        use harness::series::JobSeries;
        let mut j = job(1, "mixed", 1, 1.0, 1);
        j.workload = "s3".into();
        j.results.clear();
        j.ops = vec![OpResult {
            client: String::new(),
            op: "GET".into(),
            ops: 1000,
            bytes: 4096.0 * 1000.0,
            window_start_ms: 1000,
            window_ms: 5000,
            ops_per_s,
            bytes_per_s: ops_per_s * 4096.0,
            lat: OpLatency {
                mean_ns: 5e6,
                p99_ns: p99_ms * 1_000_000,
                ..OpLatency::default()
            },
            ttfb: Some(OpLatency {
                p50_ns: 4_000_000,
                ..OpLatency::default()
            }),
            segments: SegmentSpread::default(),
            total: 1000,
            errors: 0,
            error_codes: Default::default(),
        }];
        let ops = segs
            .iter()
            .enumerate()
            .map(|(i, v)| OpSample {
                client: String::new(),
                op: "GET".into(),
                t_ms: 2000 + 1000 * i as u64,
                dur_ms: 1000,
                ops_per_s: *v,
                bytes_per_s: v * 4096.0,
                errors: 0,
                lat_mean_ns: 5e6,
                lat_p50_ns: 4_000_000,
                lat_p99_ns: p99_ms * 1_000_000,
                ttfb_mean_ns: 4e6,
                in_window: true,
            })
            .collect();
        let mut r = run(id, vec![j]);
        r.series = vec![JobSeries {
            job_id: 1,
            ops,
            ..JobSeries::default()
        }];
        r
    }

    /// Per-operation results: one iteration each, noise from the 1 s segments.
    #[test]
    fn operations_are_compared_against_their_segment_noise() {
        // Segments 150..250 ops/s: sd 39.5, SE over 5 = 17.7, 2 SE / 200 = 17.7%, noise 35%.
        let noisy = [150.0, 175.0, 200.0, 225.0, 250.0];
        let a = s3_run(1, 200.0, 10, &noisy);
        let b = s3_run(2, 240.0, 10, &noisy);
        let c = compare(&a, &b);
        let m = &c.jobs[0].metrics;
        let names: Vec<&str> = m.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(
            names,
            [
                "GET ops/s",
                "GET MiB/s",
                "GET lat mean ms",
                "GET lat p99 ms",
                "GET TTFB p50 ms"
            ]
        );
        let ops = &m[0];
        assert!((ops.a.segment_spread - 0.1768).abs() < 1e-3, "{ops:?}");
        assert!(!ops.flagged, "+20% is within 35%: {ops:?}");
        assert!(c.rule.contains("1 s segments"), "{}", c.rule);
        // Steady segments: the same +20% is flagged; a doubled p99 is worse.
        let steady = [199.0, 200.0, 201.0, 200.0, 200.0];
        let c = compare(
            &s3_run(1, 200.0, 10, &steady),
            &s3_run(2, 240.0, 20, &steady),
        );
        let m = &c.jobs[0].metrics;
        assert!(m[0].flagged && m[0].verdict == "better", "{:?}", m[0]);
        assert!(m[3].flagged && m[3].verdict == "worse", "{:?}", m[3]);
        assert_eq!(c.flagged(), 3, "ops/s, MiB/s and p99");
        let t = text(&c);
        assert!(t.contains("GET ops/s") && t.contains("240.0"), "{t}");
        let j: serde_json::Value = serde_json::from_slice(&json(&c)).unwrap();
        assert_eq!(j["jobs"][0]["metrics"][0]["metric"], "GET ops/s");
        // fio jobs keep their JSON shape (no segment_spread key).
        let f = compare(
            &run(1, vec![job(1, "r", 1, 5.0, 1)]),
            &run(2, vec![job(1, "r", 1, 5.0, 1)]),
        );
        let j: serde_json::Value = serde_json::from_slice(&json(&f)).unwrap();
        assert!(j["jobs"][0]["metrics"][0]["a"]
            .get("segment_spread")
            .is_none());
    }

    #[test]
    fn single_iterations_use_the_five_percent_floor() {
        let a = run(1, vec![job(1, "read", 1, 500.0, 100)]);
        let b = run(2, vec![job(1, "read", 1, 520.0, 100)]);
        let c = compare(&a, &b);
        let iops = &c.jobs[0].metrics[0];
        assert!(!iops.flagged, "+4% < 5%");
        let b = run(2, vec![job(1, "read", 1, 530.0, 100)]);
        let c = compare(&a, &b);
        assert!(c.jobs[0].metrics[0].flagged && c.jobs[0].metrics[0].verdict == "better");
    }
}
