//! The HTML report: one self-contained page (docs/REPORTS.md).

use std::fmt::Write as _;

use serde_json::Value;

use fio::fmt;
use fio::DirStats;
use harness::store::{JobRecord, RunRecord, SummaryTable};

use crate::charts::{job_charts, latency_percentiles, truthy};
use crate::hooks::{table_charts, ReportHooks};
use crate::svg::{esc, render as svg, Chart};

const CSS: &str = r#"
:root { --fg:#111; --muted:#555; --line:#ccc; --pass:#009E73; --fail:#D55E00; --inc:#8a6d00; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: var(--fg); background: #fff; margin: 0 auto; max-width: 1200px; padding: 16px 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
  border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: #f7f7f7; border: 1px solid var(--line); padding: 8px; overflow-x: auto; }
.meta { color: var(--muted); margin: 2px 0; }
.badge { display: inline-block; padding: 1px 8px; border: 2px solid; font-weight: 700; }
.PASS, .passed { color: var(--pass); } .FAIL, .failed, .error { color: var(--fail); }
.badge.passed { border-color: var(--pass); } .badge.done, .DONE { border-color: var(--muted); color: var(--muted); } .badge.failed, .badge.error, .badge.running { border-color: var(--fail); }
.INCONCLUSIVE, .inconclusive { color: var(--inc); } .badge.inconclusive { border-color: var(--inc); }
#answer { border: 2px solid var(--line); padding: 4px 14px 8px; margin-top: 10px; }
#answer h2 { border: 0; margin: 6px 0; } .counts { font-size: 18px; font-weight: 700; margin: 4px 0; }
ul.why { margin: 4px 0 8px; padding-left: 18px; }
tr.fail td { background: #fdf0e8; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(480px, 1fr)); gap: 10px 18px; }
figure { margin: 0; break-inside: avoid; page-break-inside: avoid; }
svg.qchart { width: 100%; max-width: 760px; height: auto; display: block; }
svg.qchart text { font-family: system-ui, "DejaVu Sans", sans-serif; }
svg .ct { font-size: 13px; font-weight: 600; } svg .tk { font-size: 10px; fill: #333; }
svg .al { font-size: 11px; fill: #333; } svg .lg { font-size: 11px; } svg .rl { font-size: 11px; font-weight: 600; }
nav ol { columns: 3; font-size: 13px; } #js-errors { color: var(--fail); }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  .charts { display: block; } figure { margin: 0 0 8mm; }
  svg.qchart { max-width: 170mm; }
  nav, .noprint { display: none; }
  h2 { break-after: avoid; } tr, td, th { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
@page { size: A4; margin: 12mm; }
"#;

/// Counts the charts the browser actually drew (a series path with length, or a marker
/// with a box) and records it in the page; any script error lands in `#js-errors`.
const SCRIPT: &str = r#"
window.onerror = function (m) { var e = document.getElementById('js-errors'); e.hidden = false; e.textContent += m + '\n'; };
(function () {
  var n = 0;
  document.querySelectorAll('svg.qchart').forEach(function (s) {
    var ok = false;
    s.querySelectorAll('path.series').forEach(function (p) { if (p.getTotalLength() > 0) ok = true; });
    s.querySelectorAll('.pt, .pass, .fail').forEach(function (m) { var b = m.getBBox(); if (b.width > 0 && b.height > 0) ok = true; });
    if (ok && s.getBoundingClientRect().width > 0) n++;
  });
  document.getElementById('charts-drawn').textContent = String(n);
  document.body.setAttribute('data-charts-drawn', String(n));
  // Where the answer landed on the page (px from the top): the first screen must hold it.
  var at = function (sel, edge) {
    var e = document.querySelector(sel);
    return e ? String(Math.round(e.getBoundingClientRect()[edge] + window.scrollY)) : 'none';
  };
  document.body.setAttribute('data-answer-counts-bottom', at('#answer .counts', 'bottom'));
  document.body.setAttribute('data-answer-table-top', at('#answer table', 'top'));
})();
"#;

fn cell(v: &Value, pass_col: bool) -> (String, bool) {
    match v {
        Value::Bool(b) if pass_col => (if *b { "PASS" } else { "FAIL" }.into(), false),
        Value::Bool(b) => (if *b { "yes" } else { "no" }.into(), false),
        Value::Number(_) => (crate::export::cell_text(v), true),
        v => (crate::export::cell_text(v), false),
    }
}

/// A summary table as an HTML table (failing rows marked in words, not colour alone).
pub fn table_html(t: &SummaryTable) -> String {
    let mut o = String::from("<table><thead><tr>");
    for c in &t.columns {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr></thead><tbody>");
    let pass = t
        .columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case("pass"));
    for r in &t.rows {
        let failed = pass.and_then(|i| r.get(i)).is_some_and(|v| !truthy(v));
        o.push_str(if failed {
            "<tr class=\"fail\">"
        } else {
            "<tr>"
        });
        for (i, v) in r.iter().enumerate() {
            let is_pass = Some(i) == pass;
            let (s, numeric) = cell(v, is_pass);
            let class = if is_pass {
                format!(" class=\"{}\"", if truthy(v) { "PASS" } else { "FAIL" })
            } else if numeric {
                " class=\"n\"".into()
            } else {
                String::new()
            };
            let _ = write!(o, "<td{class}>{}</td>", esc(&s));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>");
    o
}

fn figures(o: &mut String, charts: &[Chart], count: &mut usize) {
    if charts.is_empty() {
        return;
    }
    o.push_str("<div class=\"charts\">");
    for c in charts {
        *count += 1;
        let _ = write!(o, "<figure>{}</figure>", svg(c));
    }
    o.push_str("</div>");
}

fn verdict_word(j: &JobRecord) -> &'static str {
    if j.status == harness::store::SUPERSEDED {
        "SUPERSEDED"
    } else if j.status != "done" {
        "ERROR"
    } else if j.verdicts.is_empty() {
        "-"
    } else {
        assess::Tally::of(j.verdicts.iter().map(|v| &v.outcome))
            .outcome()
            .label()
    }
}

/// A job as a person names it: its workload only when that differs from its name (no
/// "randread / randread"), and its volume when it has one.
fn job_title(j: &JobRecord) -> String {
    let base = if j.workload.is_empty() || j.workload == j.name {
        j.name.clone()
    } else {
        format!("{} / {}", j.workload, j.name)
    };
    match &j.volume {
        Some(v) => format!("{base} on {v}"),
        None => base,
    }
}

/// The most claims the answer box lists (the rest are in the verdicts table).
const ANSWER_CLAIMS: usize = 12;

/// The first screen: the run's answer. Its status, each claim it checked stated in words
/// with its number ([`crate::claims`]; what did not pass first), then the headline: the
/// run's first summary table (the profile's own table) with its charts.
fn answer(o: &mut String, run: &RunRecord, hooks: &[&dyn ReportHooks], n_charts: &mut usize) {
    let t = run.tally();
    let errored = run
        .jobs
        .iter()
        .filter(|j| j.status != "done" && j.status != harness::store::SUPERSEDED)
        .count();
    let total = t.pass + t.fail + t.inconclusive;
    let word = if errored > 0 {
        "FAIL"
    } else if total == 0 {
        "DONE"
    } else {
        t.outcome().label()
    };
    let measured = crate::claims::measured(run);
    let counts = if total == 0 && measured.is_empty() {
        "No checks: nothing was judged.".to_string()
    } else if total == 0 {
        format!(
            "No checks, so nothing was judged; what {} job(s) measured is below (add \
             <code>expect = [...]</code> to a plan's workload to judge it: docs/BENCH.md)",
            measured.len()
        )
    } else {
        format!(
            "<span class=\"PASS\">{} of {total} held</span> &middot; <span class=\"FAIL\">{} failed</span> &middot; \
             <span class=\"INCONCLUSIVE\">{} inconclusive</span>",
            t.pass, t.fail, t.inconclusive
        )
    };
    let _ = write!(
        o,
        "<section id=\"answer\"><h2>Answer: <span class=\"{word}\">{word}</span></h2>\
         <p class=\"counts\">{counts}{}</p>",
        if errored > 0 {
            format!(" &middot; <span class=\"ERROR\">{errored} job(s) did not finish</span>")
        } else {
            String::new()
        },
    );
    let claims = crate::claims::claims(run);
    if claims.is_empty() && !measured.is_empty() {
        o.push_str("<ul class=\"why\">");
        for m in measured.iter().take(ANSWER_CLAIMS) {
            let _ = write!(o, "<li>{}</li>", esc(m));
        }
        if measured.len() > ANSWER_CLAIMS {
            let _ = write!(
                o,
                "<li>… and {} more in the results below</li>",
                measured.len() - ANSWER_CLAIMS
            );
        }
        o.push_str("</ul>");
    }
    if !claims.is_empty() {
        o.push_str("<ul class=\"why\">");
        for c in claims.iter().take(ANSWER_CLAIMS) {
            let w = c.outcome.label();
            let _ = write!(
                o,
                "<li><span class=\"{w}\">{w}</span> {}</li>",
                esc(&c.text)
            );
        }
        if claims.len() > ANSWER_CLAIMS {
            let _ = write!(
                o,
                "<li>… and {} more in the verdicts below</li>",
                claims.len() - ANSWER_CLAIMS
            );
        }
        o.push_str("</ul>");
    }
    if let Some(t) = run.tables.first() {
        let _ = write!(o, "<h3>{}</h3>", esc(&t.name));
        o.push_str(&table_html(t));
        figures(o, &table_charts(hooks, t), n_charts);
    }
    o.push_str("</section>\n");
}

fn dir_row(o: &mut String, j: &JobRecord, client: Option<&str>, dir: &str, d: &DirStats) {
    let figures = [
        fmt::iops(d.iops_text()),
        fmt::sig(d.iops_mean),
        fmt::bw(d.bw_text()),
        fmt::lat(d.lat_mean_ns),
        fmt::lat(d.p99_ns as f64),
        fmt::lat(d.p999_ns as f64),
    ];
    result_row(o, j, [client.unwrap_or("-"), dir], &figures);
}

/// A request/response driver's operation as a results row (IOPS = ops/s; p99.9 = max).
fn op_row(o: &mut String, j: &JobRecord, x: &harness::ops::OpResult) {
    let figures = [
        fmt::sig(x.ops_per_s),
        fmt::sig(x.segments.ops_median),
        fmt::bw(x.bytes_per_s as u64),
        fmt::lat(x.lat.mean_ns),
        fmt::lat(x.lat.p99_ns as f64),
        fmt::lat(x.lat.max_ns as f64),
    ];
    let client = if x.client.is_empty() { "-" } else { &x.client };
    result_row(o, j, [client, &x.op], &figures);
}

/// One row of the results table: the job, its volume, `client` and `dir` (a direction or
/// an operation), six figures (IOPS, steady IOPS, bandwidth, mean, p99, p99.9) and the
/// job's verdict.
fn result_row(o: &mut String, j: &JobRecord, [client, dir]: [&str; 2], figures: &[String; 6]) {
    let _ = write!(
        o,
        "<tr><td class=\"n\"><a href=\"#job{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        j.seq,
        j.seq,
        esc(&j.workload),
        esc(&j.name),
        esc(j.volume.as_deref().unwrap_or("-")),
        esc(client),
        esc(dir),
    );
    for f in figures {
        let _ = write!(o, "<td class=\"n\">{f}</td>");
    }
    let _ = write!(o, "<td class=\"{v}\">{v}</td></tr>", v = verdict_word(j));
}

/// The whole report page; `hooks` are the workload families' report hooks, in registry order.
pub fn render(run: &RunRecord, hooks: &[&dyn ReportHooks]) -> Vec<u8> {
    let mut o = String::with_capacity(64 * 1024);
    let mut n_charts = 0usize;
    header(&mut o, run);
    o.push_str("<pre id=\"js-errors\" hidden></pre>\n");
    answer(&mut o, run, hooks, &mut n_charts);
    contents(&mut o, run);
    verdicts(&mut o, run);
    setup(&mut o, run);
    results(&mut o, run, &mut n_charts);
    summary_tables(&mut o, run, hooks, &mut n_charts);
    series(&mut o, run, &mut n_charts);
    let _ = write!(
        o,
        "<h2 id=\"plan\">Plan</h2><pre>{}</pre>\n<p class=\"meta noprint\">Charts drawn by this browser: <span id=\"charts-drawn\">0</span> of <span id=\"charts-expected\">{n_charts}</span>.</p>\n<script>{SCRIPT}</script>\n</body></html>\n",
        esc(&run.plan_text)
    );
    o.into_bytes()
}

/// The page's head and the run's header (title, status, verdict tally, when and where).
fn header(o: &mut String, run: &RunRecord) {
    let tally = run.tally();
    let title = format!("qoslab run {}: {}", run.id, run.name);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"qoslab {}\"><title>{}</title><style>{CSS}</style></head><body>\n",
        esc(&run.env.qoslab_version),
        esc(&title)
    );
    let _ = write!(
        o,
        "<header><h1>{}</h1><p><span class=\"badge {st}\">{}</span> verdicts: {}; {} job(s)</p>",
        esc(&title),
        esc(&run.status.to_uppercase()),
        tally.summary(),
        run.jobs.len(),
        st = esc(&run.status)
    );
    let _ = writeln!(
        o,
        "<p class=\"meta\">started {} &middot; finished {} &middot; runtime {} s, ramp {} s per job</p>\
         <p class=\"meta\">plan <code>{}</code> &middot; target {} &middot; executor {}</p>\
         <p class=\"meta\">host {} &middot; kernel {} &middot; CPU {} &middot; {} &middot; qoslab {}</p></header>",
        esc(&run.started_at),
        esc(run.finished_at.as_deref().unwrap_or("-")),
        run.runtime_s,
        run.ramp_s,
        esc(&run.plan_origin),
        esc(&run.target),
        esc(&run.executor),
        esc(&run.env.host),
        esc(&run.env.kernel),
        esc(&run.env.cpu),
        esc(&run.env.fio_version),
        esc(&run.env.qoslab_version)
    );
}

/// Contents (screen only): sections, then every job with its verdict.
fn contents(o: &mut String, run: &RunRecord) {
    o.push_str("<nav><a href=\"#verdicts\">Verdicts</a> &middot; <a href=\"#setup\">Volumes and policies</a> &middot; <a href=\"#results\">Results</a>");
    if run.tables.len() > 1 {
        o.push_str(" &middot; <a href=\"#tables\">Summary tables</a>");
    }
    o.push_str(" &middot; <a href=\"#series\">Over time</a> &middot; <a href=\"#plan\">Plan</a>");
    if run.jobs.len() > 1 && !run.series.is_empty() {
        o.push_str("<ol>");
        for j in &run.jobs {
            let name = esc(&job_title(j));
            let _ = write!(
                o,
                "<li value=\"{}\">{} {}</li>",
                j.seq,
                if job_charts(run, j).is_empty() {
                    name
                } else {
                    format!("<a href=\"#job{}\">{name}</a>", j.seq)
                },
                match verdict_word(j) {
                    "-" => "",
                    w => w,
                }
            );
        }
        o.push_str("</ol>");
    }
    o.push_str("</nav>\n");
}

/// Verdicts: failures first, each spelled out.
fn verdicts(o: &mut String, run: &RunRecord) {
    let mut vs: Vec<(&JobRecord, &harness::verdict::Verdict)> = run
        .jobs
        .iter()
        .flat_map(|j| j.verdicts.iter().map(move |v| (j, v)))
        .collect();
    vs.sort_by_key(|(_, v)| std::cmp::Reverse(v.outcome));
    o.push_str("<h2 id=\"verdicts\">Verdicts</h2>");
    let errored: Vec<&JobRecord> = run.jobs.iter().filter(|j| j.status != "done").collect();
    if vs.is_empty() && errored.is_empty() {
        o.push_str("<p>No expectations were set.</p>");
    } else {
        o.push_str("<table><thead><tr><th>verdict</th><th>job</th><th>volume</th><th>expectation</th><th>measured</th><th>bound</th><th>detail</th></tr></thead><tbody>");
        for j in &errored {
            let _ = write!(
                o,
                "<tr class=\"fail\"><td class=\"ERROR\">ERROR</td><td><a href=\"#job{}\">#{} {}</a></td><td>{}</td><td colspan=\"3\">the job did not finish ({})</td><td>{}</td></tr>",
                j.seq,
                j.seq,
                esc(&j.name),
                esc(j.volume.as_deref().unwrap_or("-")),
                esc(&j.status),
                esc(j.error.as_deref().unwrap_or(""))
            );
        }
        for (j, v) in &vs {
            let w = v.label();
            let _ = write!(
                o,
                "<tr{}><td class=\"{w}\">{w}</td><td><a href=\"#job{}\">#{} {}</a></td><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td><code>{}</code></td><td>{}</td></tr>",
                if v.passed { "" } else { " class=\"fail\"" },
                j.seq,
                j.seq,
                esc(&j.name),
                esc(j.volume.as_deref().unwrap_or("-")),
                esc(&v.expectation),
                esc(&v.measured_text()),
                esc(&v.bound),
                esc(&match &v.reason {
                    Some(r) => format!("{}; {r}", v.detail),
                    None => v.detail.clone(),
                })
            );
        }
        o.push_str("</tbody></table>");
    }
}

/// Setup: policies and volumes with their effective limits.
fn setup(o: &mut String, run: &RunRecord) {
    o.push_str("<h2 id=\"setup\">Volumes and policies</h2>");
    if run.volumes.is_empty() {
        o.push_str("<p>The target is not a qoslab node: no volumes or limits recorded.</p>");
    } else {
        o.push_str("<table><thead><tr><th>volume</th><th>size</th><th>snapshot reserve</th><th>policy</th><th>ceiling IOPS</th><th>ceiling bandwidth</th><th>floor IOPS</th><th>floor bandwidth</th></tr></thead><tbody>");
        let lim = |x: u64, bw: bool| {
            if x == 0 {
                "-".to_string()
            } else if bw {
                fmt::bw(x)
            } else {
                x.to_string()
            }
        };
        for v in &run.volumes {
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"n\">{} GB</td><td class=\"n\">{}%</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(&v.name),
                v.size as f64 / 1e9,
                v.snapshot_reserve_percent,
                esc(v.policy.as_deref().unwrap_or("none")),
                lim(v.limits.ceiling_iops, false),
                lim(v.limits.ceiling_bps, true),
                lim(v.limits.floor_iops, false),
                lim(v.limits.floor_bps, true)
            );
        }
        o.push_str("</tbody></table><p class=\"meta\">Effective limits at the start of the run (adaptive policies computed from the volume's size; 0 or - = not enforced).</p>");
    }
    if !run.policies.is_empty() {
        o.push_str("<table><thead><tr><th>policy</th><th>definition</th></tr></thead><tbody>");
        for p in &run.policies {
            let _ = write!(
                o,
                "<tr><td>{}</td><td><code>{}</code></td></tr>",
                esc(&p.name),
                esc(&p.definition)
            );
        }
        o.push_str("</tbody></table>");
    }
}

/// Results: a row per job, direction and client; the latency percentiles; iterations.
fn results(o: &mut String, run: &RunRecord, n_charts: &mut usize) {
    o.push_str("<h2 id=\"results\">Results</h2><table><thead><tr><th>#</th><th>workload</th><th>job</th><th>volume</th><th>client</th><th>dir</th><th>IOPS</th><th>IOPS (steady)</th><th>bandwidth</th><th>mean lat</th><th>p99</th><th>p99.9</th><th>verdict</th></tr></thead><tbody>");
    for j in &run.jobs {
        let mut any = false;
        for r in &j.results {
            for (dir, d) in [("read", &r.read), ("write", &r.write)] {
                if d.active() {
                    any = true;
                    dir_row(o, j, r.client.as_deref(), dir, d);
                }
            }
        }
        for x in &j.ops {
            any = true;
            op_row(o, j, x);
        }
        if !any {
            // A finished job without fio results measured something else (an iperf3 test,
            // a host's totals): its figures are in the summary tables.
            let done = j.status == "done";
            let _ = write!(
                o,
                "<tr{}><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td colspan=\"8\">{}</td><td class=\"{v}\">{v}</td></tr>",
                if done { "" } else { " class=\"fail\"" },
                j.seq,
                esc(&j.workload),
                esc(&j.name),
                esc(j.volume.as_deref().unwrap_or("-")),
                if done {
                    "no fio results: see the summary tables".to_string()
                } else {
                    esc(j.error.as_deref().unwrap_or(&j.status))
                },
                v = verdict_word(j)
            );
        }
    }
    o.push_str("</tbody></table><p class=\"meta\">IOPS and bandwidth are fio's headline numbers (total / runtime, including the queue draining at the end); IOPS (steady) is the mean of fio's 500 ms samples.");
    if run.jobs.iter().any(|j| !j.ops.is_empty()) {
        o.push_str(" Rows whose direction is an operation (GET, PUT, ...) come from a request/response driver: requests per second and throughput over the measured window (every client running, warm-up and tail trimmed), IOPS (steady) the median 1 s segment, p99.9 column the slowest request.");
    }
    o.push_str("</p>");
    if let Some(c) = latency_percentiles(run) {
        figures(o, &[c], n_charts);
    }
    let spreads = crate::export::iteration_spreads(run);
    if !spreads.is_empty() {
        o.push_str("<h2 id=\"iterations\">Iterations</h2><table><thead><tr><th>job</th><th>iterations</th><th>IOPS (steady) mean</th><th>stddev</th><th>spread</th><th>min</th><th>max</th></tr></thead><tbody>");
        for (name, s) in &spreads {
            let _ = write!(o, "<tr><td>{}</td>", esc(name));
            for c in crate::export::spread_cells(s) {
                let _ = write!(o, "<td class=\"n\">{c}</td>");
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table><p class=\"meta\">The spread of a job's steady IOPS over the plan's iterations (sample standard deviation); <code>qoslab compare</code> flags a change only beyond twice the larger spread of the two runs.</p>");
    }
}

/// Profile tables (the first is the answer's headline, at the top) and the hooks' sections.
fn summary_tables(
    o: &mut String,
    run: &RunRecord,
    hooks: &[&dyn ReportHooks],
    n_charts: &mut usize,
) {
    if run.tables.len() > 1 {
        o.push_str("<h2 id=\"tables\">Summary tables</h2>");
        for t in &run.tables[1..] {
            let _ = write!(
                o,
                "<h3>{} <span class=\"meta\">({})</span></h3>",
                esc(&t.name),
                esc(&t.kind)
            );
            figures(o, &table_charts(hooks, t), n_charts);
            o.push_str(&table_html(t));
        }
    }
    for h in hooks {
        o.push_str(&h.html(run));
        for (heading, charts) in h.html_charts(run) {
            let _ = write!(o, "<h3>{}</h3>", esc(&heading));
            figures(o, &charts, n_charts);
        }
    }
}

/// Time series per job.
fn series(o: &mut String, run: &RunRecord, n_charts: &mut usize) {
    o.push_str("<h2 id=\"series\">Over time, per job</h2>");
    if run.series.is_empty() {
        o.push_str("<p>No time series were recorded for this run.</p>");
    } else {
        o.push_str("<p class=\"meta\">fio's 500 ms windows (IOPS, bandwidth, mean latency; p50/p99 from its latency histograms) and, on a qoslab node, the node's own per-volume samples. Ceilings are drawn as long-dashed lines, floors as dash-dot lines.");
        if run.series.iter().any(|s| !s.ops.is_empty()) {
            o.push_str(" Request/response drivers (S3): whole 1 s segments from the test's start, per operation (the merged view), and requests per second per load generator.");
        }
        o.push_str("</p>");
    }
    for j in &run.jobs {
        let charts = job_charts(run, j);
        if charts.is_empty() {
            continue;
        }
        let _ = write!(
            o,
            "<h3 id=\"job{}\">#{} {} (iteration {}) <span class=\"{v}\">{v}</span></h3>",
            j.seq,
            j.seq,
            esc(&job_title(j)),
            j.iteration,
            v = match verdict_word(j) {
                "-" => "",
                w => w,
            }
        );
        figures(o, &charts, n_charts);
    }
}
