//! Comparing two runs job by job (`qoslab compare A B`). Pure.
//!
//! Jobs match on (workload, job name, volume); a plan's `iterations = N` gives N values of
//! each metric per run. For each metric (IOPS, bandwidth, mean latency, p99) the change is
//! `mean(B) / mean(A) - 1`, and it is **flagged** when it is larger than the noise the
//! iterations' spread allows (assess's [`stats::noise`](assess::stats::noise)):
//!
//! ```text
//! both runs iterated:  noise = t95(Welch df) x sqrt(sA^2/nA + sB^2/nB) / |mean A|, at least 1%
//! one run iterated:    noise = t95(n - 1) x s x sqrt(1/nA + 1/nB) / |mean A|, at least 1%
//! neither:             noise = 5% (no spread was measured)
//! ```
//!
//! i.e. a two-sided Welch t-test at 95% on the iterations' sample standard deviations, with
//! a floor under it. IOPS and bandwidth are fio's headline numbers (total / runtime, read and
//! write added), mean latency is I/O-weighted over directions, p99 is the worse direction's
//! completion-latency p99.
//!
//! Jobs of request/response drivers (the S3 family) are compared per operation on their
//! merged view ([`ops`]): ops/s, MiB/s, mean and p99 latency, and TTFB p50 for GETs. Each
//! run also measures its spread inside itself, from its 1 s segments in the measured window
//! (warp's segments): the same t-test on the segments' values (Welch, n = segments, all
//! iterations' segments together) gives a second threshold, and the larger one holds. The
//! segments cannot lower the threshold: they say nothing about run-to-run changes, so a
//! single-iteration run keeps the 5% floor unless its segments spread wider.

mod ops;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use assess::stats::{noise, Noise, Spread};
use serde::Serialize;

use harness::store::{JobRecord, RunRecord};

use crate::svg::esc;
use fio::fmt;

/// The noise when neither run has iterations (no spread measured): the smallest change
/// flagged.
pub const MIN_NOISE: f64 = 0.05;
/// The smallest change flagged when a spread was measured, however tight.
pub const MIN_NOISE_MEASURED: f64 = 0.01;

/// The `schema` of `qoslab compare --json`.
pub const JSON_SCHEMA: &str = "qoslab.compare/3";

/// One run's values of one metric over its iterations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for one value.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// stddev as a percentage of the mean (0 for one value).
    pub cv_pct: f64,
    /// The 1 s segments of a request/response driver's operation over all iterations
    /// (absent for fio jobs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Spread>,
}

impl Stat {
    pub fn of(v: &[f64]) -> Option<Stat> {
        let s = Spread::of(v)?;
        Some(Stat {
            n: s.n,
            mean: s.mean,
            stddev: s.stddev,
            min: s.min,
            max: s.max,
            cv_pct: s.cv_pct(),
            segments: None,
        })
    }

    fn spread(&self) -> Spread {
        Spread {
            n: self.n,
            mean: self.mean,
            stddev: self.stddev,
            min: self.min,
            max: self.max,
        }
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
    /// The threshold |change| must exceed, a fraction of |mean A| (module docs).
    pub noise: f64,
    /// What the threshold was computed from: "welch", "one-side" or "no-spread" (the
    /// iterations), or "segments" (the 1 s segments' t-test, when larger).
    pub basis: &'static str,
    /// Standard error of mean(B) - mean(A), the t-test's degrees of freedom and t
    /// (absent without a spread).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t: Option<f64>,
    pub flagged: bool,
    /// "better", "worse" (flagged changes), "within noise", or "inconclusive": a change
    /// past the 5% of unmeasured noise on a job the runs' own diagnoses discredited
    /// ([`JobDelta::discredited`]).
    pub verdict: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobDelta {
    pub workload: String,
    pub job: String,
    pub volume: Option<String>,
    pub metrics: Vec<MetricDelta>,
    /// Why a run's own assessment discredits this job's measurement ("A: noisy-host; B:
    /// not steady"): without iterations its changes are inconclusive, not better or worse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discredited: Option<String>,
}

impl JobDelta {
    /// The change of metric `name` (`"iops"`, `"lat_p99_us"`, ...), if the job has it.
    pub fn metric(&self, name: &str) -> Option<&MetricDelta> {
        self.metrics.iter().find(|m| m.metric == name)
    }
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

    /// Changes past the unmeasured 5% on jobs whose measurement a run's own diagnosis
    /// discredited: not judged.
    pub fn inconclusive(&self) -> usize {
        self.jobs
            .iter()
            .flat_map(|j| &j.metrics)
            .filter(|m| m.verdict == "inconclusive")
            .count()
    }

    /// The conclusion, first in every rendering: how many changes are beyond the noise and
    /// which (the first five), what could not be judged and what to do.
    pub fn closing(&self) -> String {
        let flagged: Vec<String> = self
            .jobs
            .iter()
            .flat_map(|j| j.metrics.iter().map(move |m| (j, m)))
            .filter(|(_, m)| m.flagged)
            .map(|(j, m)| {
                let on = j
                    .volume
                    .as_deref()
                    .map(|v| format!(" on {v}"))
                    .unwrap_or_default();
                format!(
                    "{}/{}{on} {} {} ({})",
                    j.workload,
                    j.job,
                    m.metric,
                    pct(m.change),
                    m.verdict
                )
            })
            .collect();
        let mut s = match flagged.len() {
            0 => "No change beyond the noise: B measures as A did.".to_string(),
            n => format!(
                "{n} change(s) beyond the noise: {}{}.",
                flagged[..n.min(5)].join("; "),
                if n > 5 { "; ..." } else { "" }
            ),
        };
        let n = self.inconclusive();
        if n > 0 {
            s.push_str(&format!(
                " {n} inconclusive: the runs' own diagnoses discredited those jobs (a starved \
                 load generator, a shared host, no steady state) and neither run measured its \
                 noise; run both with --iterations 3 (or more) to judge them."
            ));
        }
        s
    }
}

/// Why `run`'s iterations of job `k` do not measure the target (a bottleneck that discredits
/// the measurement, or no steady state), if they do not.
fn discredit(run: &RunRecord, k: &Key) -> Option<String> {
    let mut why: Vec<String> = Vec::new();
    for j in run
        .jobs
        .iter()
        .filter(|j| j.status == "done" && (&j.workload, &j.name, &j.volume) == (&k.0, &k.1, &k.2))
    {
        if let Some(d) = j
            .diagnosis
            .as_ref()
            .filter(|d| d.bottleneck.discredits_measurement())
        {
            why.push(d.bottleneck.to_string());
        }
        if j.steady.as_ref().is_some_and(|s| !s.attained) {
            why.push("not steady".into());
        }
    }
    why.dedup();
    (!why.is_empty()).then(|| why.join(", "))
}

/// The flagging rule, as `compare` prints it.
pub const RULE: &str = "flagged when |change| > noise: t(95%, two-sided) x the standard error of mean(B) - mean(A) from the iterations' stddev (Welch when both runs iterated; the iterated run's stddev for both when one ran once), at least 1%; 5% when neither run has iterations";

/// Added to [`RULE`] when per-operation results carried 1 s segments.
pub const RULE_SEGMENTS: &str =
    "; per-operation results: the same Welch test on the runs' 1 s segments when it gives more";

/// One measured value of one iteration: metric, higher is better, value, and the values of
/// the metric in the job's 1 s segments (empty for fio jobs).
type Value = (String, bool, f64, Vec<f64>);

type Key = (String, String, Option<String>);

const METRICS: [(&str, bool); 4] = [
    ("iops", true),
    ("bw_bytes", true),
    ("lat_mean_us", false),
    ("lat_p99_us", false),
];

fn values(run: &RunRecord, j: &JobRecord) -> Option<Vec<Value>> {
    if j.status != "done" {
        return None;
    }
    if !j.ops.is_empty() {
        return Some(ops::values(run, j));
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
            .map(|((m, up), x)| (m.to_string(), *up, x, Vec::new()))
            .collect(),
    )
}

/// A metric's values over the iterations, with all their segments.
fn stat_of(its: &[Vec<Value>], metric: &str) -> Option<Stat> {
    let found: Vec<&Value> = its
        .iter()
        .filter_map(|v| v.iter().find(|x| x.0 == metric))
        .collect();
    let xs: Vec<f64> = found.iter().map(|x| x.2).collect();
    let mut s = Stat::of(&xs)?;
    let segs: Vec<f64> = found.iter().flat_map(|x| x.3.iter().copied()).collect();
    s.segments = Spread::of(&segs).filter(|g| g.n >= 2);
    Some(s)
}

/// The iterations' noise, or the segments' when both runs have segments and theirs is
/// larger.
fn noise_of(sa: &Stat, sb: &Stat) -> (Noise, &'static str) {
    let n = noise(&sa.spread(), &sb.spread(), MIN_NOISE_MEASURED, MIN_NOISE);
    if let (Some(ga), Some(gb)) = (&sa.segments, &sb.segments) {
        let g = noise(ga, gb, 0.0, 0.0);
        if g.relative > n.relative {
            return (g, "segments");
        }
    }
    (n, n.basis.as_str())
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
        let discredited = match (discredit(a, k), discredit(b, k)) {
            (None, None) => None,
            (Some(x), None) => Some(format!("A: {x}")),
            (None, Some(y)) => Some(format!("B: {y}")),
            (Some(x), Some(y)) => Some(format!("A: {x}; B: {y}")),
        };
        let mut metrics = Vec::new();
        for (metric, higher_is_better) in names {
            let (Some(sa), Some(sb)) = (stat_of(va, &metric), stat_of(vb, &metric)) else {
                continue;
            };
            if sa.mean == 0.0 && sb.mean == 0.0 {
                continue;
            }
            segments |= sa.segments.is_some() && sb.segments.is_some();
            let change = (sa.mean != 0.0).then(|| sb.mean / sa.mean - 1.0);
            let (n, basis) = noise_of(&sa, &sb);
            let flagged = match change {
                Some(c) => c.abs() > n.relative,
                None => true,
            };
            let up = change.map(|c| c > 0.0).unwrap_or(true);
            let unjudged = flagged && discredited.is_some() && basis == "no-spread";
            let flagged = flagged && !unjudged;
            let verdict = if unjudged {
                "inconclusive"
            } else if !flagged {
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
                noise: n.relative,
                basis,
                stderr: n.stderr,
                df: n.df,
                t: n.t,
                flagged,
                verdict,
            });
        }
        jobs.push(JobDelta {
            workload: k.0.clone(),
            job: k.1.clone(),
            volume: k.2.clone(),
            metrics,
            discredited,
        });
    }
    let only_in_b = order_b
        .iter()
        .filter(|k| !ga.contains_key(*k))
        .map(key_name)
        .collect();
    Comparison {
        schema: JSON_SCHEMA,
        a: run_ref(a),
        b: run_ref(b),
        rule: if segments {
            format!("{RULE}{RULE_SEGMENTS}")
        } else {
            RULE.into()
        },
        jobs,
        only_in_a,
        only_in_b,
    }
}

/// A metric's value for a person: 4 significant digits and its unit (fio::fmt).
fn show(metric: &str, v: f64) -> String {
    match metric {
        "iops" => fmt::sig(v),
        "bw_bytes" => fmt::rate(v),
        m if m.ends_with(" ops/s") => fmt::sig(v),
        m if m.ends_with(" MiB/s") => fmt::rate(v * 1048576.0),
        m if m.ends_with(" ms") => fmt::lat(v * 1e6),
        _ => fmt::lat(v * 1e3),
    }
}

fn show_stat(metric: &str, s: &Stat) -> String {
    if s.n > 1 {
        format!(
            "{} ± {} n={}",
            show(metric, s.mean),
            show(metric, s.stddev),
            s.n
        )
    } else {
        show(metric, s.mean)
    }
}

fn show_noise(m: &MetricDelta) -> String {
    let basis = match (m.basis, m.df) {
        ("no-spread", _) => "no spread".to_string(),
        (b, Some(df)) => format!("{b}, df {df:.1}"),
        (b, None) => b.to_string(),
    };
    format!("{:.1}% ({basis})", m.noise * 100.0)
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
                show_noise(m),
                if m.flagged {
                    format!("FLAG {}", m.verdict)
                } else if m.verdict == "inconclusive" {
                    format!(
                        "inconclusive ({})",
                        j.discredited.as_deref().unwrap_or_default()
                    )
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
    "A mean ± sd",
    "B mean ± sd",
    "change",
    "noise",
    "verdict",
];

/// A terminal table.
pub fn text(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}", c.closing());
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
        "<h1>qoslab compare: run {} vs run {}</h1><p class=\"conclusion\"><b>{}</b></p><p>A = run {} <b>{}</b> ({}, target {})<br>B = run {} <b>{}</b> ({}, target {})</p><p>{}.</p>",
        c.a.id,
        c.b.id,
        esc(&c.closing()),
        c.a.id,
        esc(&c.a.name),
        esc(&c.a.started_at),
        esc(&c.a.target),
        c.b.id,
        esc(&c.b.name),
        esc(&c.b.started_at),
        esc(&c.b.target),
        esc(&c.rule),
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
mod tests;
