//! `qoslab demo`'s scenario: seed 000's whole scenario on an embedded node that emulates the
//! seed's array (`crate::dbench::seed000::ARRAY`: ONTAP's NFS accounting, the array its baseline row
//! measured). Three policies (500 IOPS; 100 MB/s; adaptive 5/50 IOPS/GB on allocated
//! space), a baseline volume with no policy, a 100 GB and a 200 GB volume under each policy
//! (5% snapshot reserve); dbench on each; one comparison table with a verdict per volume,
//! then the seed's summaries beside qoslab's, cell by cell.
//!
//! The verdicts are the plan's own expectations, stored with the run (so the terminal, the
//! report, `results show` and the exit status say the same thing): on every volume with a
//! ceiling, the judged jobs' measured ceiling within 3% of the effective one —
//! `iops_steady ~= policy.ceiling +-3%` on the 4k random IOPS jobs (IOPS ceilings) or
//! `bw_steady` on the 128k random BW jobs (MB/s ceilings). `_steady` is the median of fio's
//! 500 ms windows that lie in steady state: one window starved by the machine cannot move it
//! (a mean can), and fio's headline figure would include the queue draining after the
//! runtime ends. The judged jobs run `JUDGED_RUNTIME` (8 windows); the others `--runtime`.
//! A failure the job's diagnosis explains (a starved load generator, a shared host) is
//! inconclusive, and the demo runs such a job's volume once more before it answers; so it
//! does for a volume with a cell of the seed's summaries that misses while its job was
//! diagnosed so (`seed000_run::spoiled_volumes`). The re-run is a harness operation on the
//! parsed plan (`Plan::retain_volumes`, `harness::outcome::adopt_rerun`).
//!
//! The CLI (`qoslab demo`) gives it a [`Host`]: how to run a plan with real fio and where
//! text goes; it writes the reports and picks the exit status from the [`Answer`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assess::Outcome;
use fio::fmt;
use harness::store::{JobRecord, RunRecord, SummaryTable, SUPERSEDED};
use harness::target::Target;
use harness::verdict::Verdict;
use harness::{Options, Plan, RunError};

use crate::dbench::{self, seed000, seed000_run, Summary};
use crate::isolation::{self, IsolationSpec};

pub mod path;
pub use path::ClientPath;

/// Runtime of the jobs whose windows the verdicts judge: 8 windows of 500 ms.
const JUDGED_RUNTIME: f64 = 4.0;

/// Runtime of the 75/25 mix on the 500 IOPS volumes. In 2 s, fio's headline figure (what
/// dbench's summary prints) loses 6% to the 64 requests still queued when the runtime
/// ends (64 / 500 IOPS = 128 ms more), and the mix's 25% writes are ~250 requests, ±5.5%
/// by the draw alone: seed 000's cells for them missed by 11% in a demo. 8 s brings both
/// under 2-3% (dbench's own 15 s: under 1%) for 12 s more.
const SLOW_MIX_RUNTIME: f64 = 8.0;

/// What the demo runs with.
pub struct Settings {
    /// fio runtime per job (dbench's own: 15 s).
    pub runtime: f64,
    /// fio ramp time per job (dbench's own: 2 s).
    pub ramp: f64,
    /// The results database.
    pub db: PathBuf,
}

/// What the scenario needs from its caller: a way to run a plan (real fio, the results
/// database, the terminal's progress line) and to print as it goes.
pub trait Host {
    /// Run a configured plan on the embedded node and store it in the results database.
    fn run(&mut self, plan: &mut Plan) -> Result<harness::Outcome, RunError>;
    /// Text, as it comes.
    fn print(&mut self, text: &str);
    /// What the client path adds to the node's latency on this machine ([`path`]), or
    /// `None` to serve the seed's latency as declared (the default).
    fn client_path(&mut self) -> Result<Option<ClientPath>, RunError> {
        Ok(None)
    }
}

/// What the demo found: the ceilings run (re-run volumes adopted) and the isolation run.
pub struct Answer {
    pub ceilings: harness::Outcome,
    pub isolation: harness::Outcome,
    pub floors_held: bool,
}

impl Answer {
    /// 0 when every measured ceiling is within 3% and the floors held; 1 when one is not
    /// (or a fio run failed); 3 when nothing failed but a ceiling verdict is inconclusive
    /// (1 with `strict`).
    pub fn exit_code(&self, strict: bool) -> i32 {
        let mut t = self.ceilings.record.tally();
        if self.ceilings.tally.failed_jobs > 0 || !self.floors_held {
            t.fail += 1;
        }
        t.exit_code(strict)
    }

    /// The closing line: "qoslab demo: ceilings PASS (...); floors HELD".
    pub fn closing_line(&self) -> String {
        let t = self.ceilings.record.tally();
        format!(
            "qoslab demo: ceilings {} ({}); floors {}",
            t.outcome().label(),
            t.summary(),
            if self.floors_held { "HELD" } else { "NOT HELD" }
        )
    }
}

/// (volume, size, policy, expectation kind).
const VOLUMES: [(&str, &str, Option<&str>); 7] = [
    ("baseline", "100GB", None),
    ("qos500-100g", "100GB", Some("QoS_500iops")),
    ("qos500-200g", "200GB", Some("QoS_500iops")),
    ("qos100m-100g", "100GB", Some("QoS_100MBps")),
    ("qos100m-200g", "200GB", Some("QoS_100MBps")),
    ("aqos-100g", "100GB", Some("aQoS")),
    ("aqos-200g", "200GB", Some("aQoS")),
];

/// The demo as a plan (what `qoslab bench` would run; stored with the run).
pub fn plan_text(runtime: f64, ramp: f64) -> String {
    plan_text_on(runtime, ramp, None)
}

/// The demo's plan on seed 000's array, its latency less `path` when given.
pub fn plan_text_on(runtime: f64, ramp: f64, path: Option<&ClientPath>) -> String {
    let array = path.map_or_else(|| seed000::ARRAY.to_string(), ClientPath::array);
    let mut t = format!(
        "# qoslab demo: seed 000 on the embedded node\n[bench]\nname = \"demo\"\nruntime = {runtime}\nramp = {ramp}\n\
\n{}\n\
         [[policy]]\nname = \"QoS_500iops\"\nfixed = {{ max_throughput_iops = 500, capacity_shared = false }}\n\n\
         [[policy]]\nname = \"QoS_100MBps\"\nfixed = {{ max_throughput_mbps = 100, capacity_shared = false }}\n\n\
         [[policy]]\nname = \"aQoS\"\nadaptive = {{ expected_iops = \"5IOPS/GB\", peak_iops = \"50IOPS/GB\", peak_iops_allocation = \"allocated_space\" }}\n\n",
        array
    );
    for (name, size, policy) in VOLUMES {
        t.push_str(&format!(
            "[[volume]]\nname = \"{name}\"\nsize = \"{size}\"\nsnapshot_reserve_percent = 5\n{}\n",
            policy
                .map(|p| format!("policy = \"{p}\"\n"))
                .unwrap_or_default()
        ));
    }
    for (name, _, policy) in VOLUMES {
        t.push_str(&format!(
            "[[workload]]\nname = \"{name}\"\nvolume = \"{name}\"\nprofile = \"dbench\"\n"
        ));
        // The demo's checks, as expectations: IOPS ceilings on the 4k random IOPS jobs,
        // MB/s ceilings on the 128k random BW jobs.
        let judged = match policy {
            None => None,
            Some("QoS_100MBps") => Some(("read_bw", "write_bw", "bw_steady")),
            Some(_) => Some(("read_iops", "write_iops", "iops_steady")),
        };
        if let Some((r, w, metric)) = judged {
            let e = format!("[\"{metric} ~= policy.ceiling +-3%\"]");
            let mix = if policy == Some("QoS_500iops") {
                format!(", rw_mix = {SLOW_MIX_RUNTIME}")
            } else {
                String::new()
            };
            t.push_str(&format!(
                "job_runtime = {{ {r} = {JUDGED_RUNTIME}, {w} = {JUDGED_RUNTIME}{mix} }}\nexpect = {{ {r} = {e}, {w} = {e} }}\n"
            ));
        }
        t.push('\n');
    }
    t
}

/// One row of the comparison table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub volume: String,
    pub policy: String,
    pub expected: String,
    pub summary: Summary,
    pub measured: String,
    pub verdict: String,
    pub passed: bool,
    pub outcome: Outcome,
    /// The judged jobs' measured ceiling, percent of the expected one (read, write).
    pub pct_of_ceiling: Vec<f64>,
}

/// The judged jobs' stored verdicts on `volume` (read, write), in job order.
fn judged<'a>(run: &'a RunRecord, volume: &str) -> Vec<(&'a JobRecord, &'a Verdict)> {
    run.jobs
        .iter()
        .filter(|j| j.volume.as_deref() == Some(volume) && j.status != SUPERSEDED)
        .flat_map(|j| j.verdicts.iter().map(move |v| (j, v)))
        .collect()
}

/// The dbench summary of the jobs that ran on `volume` (fio's headline numbers).
fn summary_of(run: &RunRecord, volume: &str) -> Summary {
    let results: BTreeMap<String, fio::JobResult> = run
        .jobs
        .iter()
        .filter(|j| {
            j.volume.as_deref() == Some(volume)
                && j.status != SUPERSEDED
                && dbench::JOBS.contains(&j.name.as_str())
        })
        .filter_map(|j| Some((j.name.clone(), j.primary()?.clone())))
        .collect();
    Summary::from_results(&results)
}

/// Rows from a finished demo run (pure; unit-tested with canned records).
pub fn rows(run: &RunRecord) -> Vec<Row> {
    let mut out = Vec::new();
    for v in &run.volumes {
        let summary = summary_of(run, &v.name);
        let l = v.limits;
        let judged = judged(run, &v.name);
        let bw = judged
            .first()
            .is_some_and(|(_, x)| x.expectation.starts_with("bw"));
        let target = if bw { l.ceiling_bps } else { l.ceiling_iops } as f64;
        let pct_of_ceiling: Vec<f64> = judged
            .iter()
            .filter(|_| target > 0.0)
            .map(|(_, x)| x.measured / target * 100.0)
            .collect();
        let (expected, measured, verdict, outcome) = if judged.is_empty() {
            (
                if l.ceiling_iops == 0 && l.ceiling_bps == 0 {
                    "none".to_string()
                } else {
                    "not judged".to_string()
                },
                "-".to_string(),
                "n/a (no ceiling)".to_string(),
                Outcome::Pass,
            )
        } else {
            let expected = if bw {
                fmt::bw(l.ceiling_bps)
            } else if l.ceiling_bps > 0 {
                format!("{} IOPS (+{})", l.ceiling_iops, fmt::bw(l.ceiling_bps))
            } else {
                format!("{} IOPS", l.ceiling_iops)
            };
            let target = if bw { l.ceiling_bps } else { l.ceiling_iops } as f64;
            let meas = judged
                .iter()
                .map(|(_, x)| {
                    if bw {
                        format!("{:.1}", x.measured / 1048576.0)
                    } else {
                        format!("{:.0}", x.measured)
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            let dev = judged
                .iter()
                .map(|(_, x)| format!("{:+.1}%", (x.measured / target - 1.0) * 100.0))
                .collect::<Vec<_>>()
                .join("/");
            let outcome = assess::Tally::of(judged.iter().map(|(_, x)| &x.outcome)).outcome();
            (
                expected,
                format!("{meas} {}", if bw { "MiB/s" } else { "IOPS" }),
                format!("{} ({dev})", outcome.label()),
                outcome,
            )
        };
        let passed = outcome == Outcome::Pass;
        out.push(Row {
            volume: v.name.clone(),
            policy: v.policy.clone().unwrap_or_else(|| "-".into()),
            expected,
            summary,
            measured,
            verdict,
            passed,
            outcome,
            pct_of_ceiling,
        });
    }
    out
}

/// The comparison table's columns (the headline table adds the percentages of the ceiling).
const COLUMNS: [&str; 9] = [
    "volume",
    "policy",
    "expected ceiling",
    "rand R/W IOPS",
    "rand R/W BW",
    "seq R/W",
    "mixed R/W IOPS",
    "measured ceiling (steady)",
    "verdict (within 3%)",
];

/// A row's cells under [`COLUMNS`].
fn cells(r: &Row) -> [String; 9] {
    let d = |v: Option<u64>| v.map(fmt::iops).unwrap_or_else(|| "-".into());
    let b = |v: Option<u64>| v.map(fmt::bw).unwrap_or_else(|| "-".into());
    let s = &r.summary;
    [
        r.volume.clone(),
        r.policy.clone(),
        r.expected.clone(),
        format!("{}/{}", d(s.read_iops), d(s.write_iops)),
        format!("{} / {}", b(s.read_bw), b(s.write_bw)),
        format!("{} / {}", b(s.read_seq_bw), b(s.write_seq_bw)),
        format!("{}/{}", d(s.mix_read_iops), d(s.mix_write_iops)),
        r.measured.clone(),
        r.verdict.clone(),
    ]
}

/// The comparison table (plain text, aligned).
pub fn table(rows: &[Row]) -> String {
    let mut cells: Vec<[String; 9]> = vec![COLUMNS.map(String::from)];
    cells.extend(rows.iter().map(self::cells));
    let mut w = [0usize; 9];
    for c in &cells {
        for (i, x) in c.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    let mut out = String::new();
    for (n, c) in cells.iter().enumerate() {
        let line: Vec<String> = c
            .iter()
            .enumerate()
            .map(|(i, x)| format!("{x:<width$}", width = w[i]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if n == 0 {
            let rule: Vec<String> = w.iter().map(|&x| "-".repeat(x)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}

/// The comparison table as a stored summary table (the report's headline).
pub fn headline_table(rows: &[Row]) -> SummaryTable {
    SummaryTable {
        kind: "ceilings".into(),
        name: "Seed 000: measured vs expected QoS ceilings".into(),
        columns: COLUMNS
            .iter()
            .chain(&["read % of ceiling", "write % of ceiling"])
            .map(|c| c.to_string())
            .collect(),
        rows: rows
            .iter()
            .map(|r| {
                cells(r)
                    .into_iter()
                    .map(serde_json::Value::from)
                    .chain((0..2).map(|i| {
                        r.pct_of_ceiling
                            .get(i)
                            .map(|p| serde_json::json!((p * 10.0).round() / 10.0))
                            .unwrap_or(serde_json::Value::Null)
                    }))
                    .collect()
            })
            .collect(),
    }
}

/// The results directory the demo writes to when neither --db nor $QOSLAB_DB says.
pub const RESULTS_DIR: &str = "qoslab-results";

fn plan_err(e: harness::PlanError) -> RunError {
    RunError::Plan(e.0)
}

/// The demo's plan, parsed and configured (all volumes, or only `volumes`).
fn demo_plan(s: &Settings, volumes: Option<&[String]>) -> Result<Plan, RunError> {
    demo_plan_on(s, None, volumes)
}

/// The same, on the array serving the seed's latency less `path`.
fn demo_plan_on(
    s: &Settings,
    path: Option<&ClientPath>,
    volumes: Option<&[String]>,
) -> Result<Plan, RunError> {
    let text = plan_text_on(s.runtime, s.ramp, path);
    let origin = if volumes.is_some() {
        "qoslab demo (re-run)"
    } else {
        "qoslab demo"
    };
    let mut plan = crate::registry().parse(&text, origin).map_err(plan_err)?;
    plan.configure(&Options {
        no_step_lines: true,
        ..Default::default()
    })
    .map_err(plan_err)?;
    if let Some(v) = volumes {
        plan.retain_volumes(v).map_err(plan_err)?;
    }
    Ok(plan)
}

/// Run the whole demo: seed 000's ceilings (with one re-run of the volumes the machine
/// spoiled), its table and the seed's cells, then seed 001's isolation.
pub fn run(s: &Settings, host: &mut dyn Host) -> Result<Answer, RunError> {
    let steps = demo_plan(s, None)?.steps();
    let secs: f64 = steps.iter().map(|s| s.expected_secs + 0.6).sum::<f64>() + 45.0;
    host.print(&format!(
        "qoslab demo: seed 000 on an embedded node: 3 policies, {} volumes, dbench on each \
         ({} fio runs of {} s ({} s for the {} judged ones) + {} s ramp; then seed 001's \
         isolation; about {:.1} minutes)\n\n",
        VOLUMES.len(),
        steps.len(),
        s.runtime,
        JUDGED_RUNTIME,
        VOLUMES.iter().filter(|v| v.2.is_some()).count() * 2,
        s.ramp,
        secs / 60.0
    ));
    let path = host.client_path()?;
    if let Some(p) = &path {
        host.print(&format!("{}\n", p.describe()));
    }
    let mut plan = demo_plan_on(s, path.as_ref(), None)?;
    let mut outcome = host.run(&mut plan)?;
    // One more run of the volumes whose verdicts the machine spoiled (diagnosed noisy-host
    // or client-cpu-bound, and not a pass): the second run is the answer.
    // So are the volumes with a cell of seed 000's summaries that misses while its job
    // was diagnosed so (and the seed's own figures do not explain the miss).
    let mut noisy = harness::outcome::discredited_volumes(&outcome.record);
    for v in seed000_run::spoiled_volumes(&outcome.record) {
        if !noisy.contains(&v) {
            noisy.push(v);
        }
    }
    if !noisy.is_empty() {
        host.print(&format!(
            "\nRunning {} again: the host was busy with other work while it ran ({}).\n",
            noisy.join(", "),
            outcome
                .record
                .jobs
                .iter()
                .filter_map(|j| j.diagnosis.as_ref())
                .find(|d| d.bottleneck.discredits_measurement())
                .map(|d| d.reason.clone())
                .unwrap_or_default()
        ));
        let mut again = demo_plan_on(s, path.as_ref(), Some(&noisy))?;
        let second = host.run(&mut again)?;
        let store = harness::store::Store::open(&s.db)?;
        outcome = harness::outcome::adopt_rerun(&store, outcome.record.id, second.record.id)?;
    }
    let rows = rows(&outcome.record);
    let table_rec = headline_table(&rows);
    {
        let store = harness::store::Store::open(&s.db)?;
        store.put_table(outcome.record.id, &table_rec)?;
        outcome.record = store.load_run(outcome.record.id)?;
    }
    host.print(&ceilings_text(s, &outcome, &rows));
    let isolation = isolation_scenario(s, host)?;
    let floors_held = isolation::floors_held(&isolation);
    Ok(Answer {
        ceilings: outcome,
        isolation,
        floors_held,
    })
}

/// The ceilings table, the judged failures, the seed's cells and where the run is stored.
fn ceilings_text(s: &Settings, outcome: &harness::Outcome, rows: &[Row]) -> String {
    let rec = &outcome.record;
    let tally = rec.tally();
    let mut out = String::new();
    out.push_str(&format!(
        "Seed 000 on qoslab: measured vs expected QoS ceilings (verdicts: {})\n\n",
        tally.summary()
    ));
    out.push_str(&table(rows));
    out.push_str(
        "\nMeasured ceiling: the median of fio's 500 ms windows in steady state on the 4k random \
         IOPS jobs (IOPS ceilings) or the 128k random BW jobs (MB/s ceilings), 8 windows each; the \
         dbench columns are fio's headline numbers, which include the queue draining after the \
         runtime ends.\n\
         Requests count their 64 KiB NFS transfers, as ONTAP's QoS does over NFS: 500 IOPS is \
         31.25 MiB/s of 128 KiB or 1 MiB requests. aQoS's 32K block size would add MB/s ceilings \
         (148 and 297 MiB/s), but ONTAP does not enforce the MB/s ceiling of a policy that has a \
         floor, and neither does this array (docs/CONFIG.md).\n",
    );
    for r in rows.iter().filter(|r| r.outcome != Outcome::Pass) {
        for (j, v) in judged(rec, &r.volume) {
            if v.outcome != Outcome::Pass {
                out.push_str(&format!(
                    "{} {} on {}: {}{}\n",
                    v.label(),
                    j.name,
                    r.volume,
                    v.detail,
                    v.reason
                        .as_ref()
                        .map(|x| format!("; {x}"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    out.push_str(&format!(
        "\nSeed 000 beside qoslab, cell by cell (IOPS and MiB/s within {:.0}%, latency within \
         {:.0}%; {} s runs, {} s for the judged ones; dbench's own are 15 s):\n\n",
        seed000::TOLERANCE * 100.0,
        seed000::LATENCY_TOLERANCE * 100.0,
        s.runtime,
        JUDGED_RUNTIME
    ));
    let cells = seed000_run::compare(rec);
    out.push_str(&seed000::table(&cells));
    out.push_str(
        "The cells inform and do not change the exit status (the verdicts above do). A miss \
         marked \"the seed's own\" is a cell where the seed disagrees with its own baseline \
         by more than the tolerance (its aQoS volumes read 251-256 MiB/s of 128 KiB where its \
         baseline read 195 on the same array: docs/CONFIG.md, \"Seed 000's array\").\n",
    );
    if outcome.tally.failed_jobs > 0 {
        out.push_str(&format!(
            "\n{} fio run(s) failed: see `qoslab results show {}`.\n",
            outcome.tally.failed_jobs, rec.id
        ));
    }
    out.push_str(&format!(
        "\nResults stored in {} as run {}. Export them with:\n  qoslab results export {} --format md   (or csv, json) --db {}\n",
        s.db.display(),
        rec.id,
        rec.id,
        s.db.display()
    ));
    out
}

/// The demo's second part: seed 001's isolation scenario in 3 steps (1x, 1.5x, 2x).
fn isolation_scenario(s: &Settings, host: &mut dyn Host) -> Result<harness::Outcome, RunError> {
    let spec = IsolationSpec {
        steps: 3,
        runtime: s.runtime.max(3.0),
        ramp: s.ramp,
        ..IsolationSpec::default()
    };
    host.print(&format!(
        "\nSeed 001 on qoslab: floors against a noisy neighbour (emulated {} IOPS controller)\n\n",
        spec.capacity_iops
    ));
    let mut plan = isolation::plan(spec);
    host.print(&format!("{}\n", plan.banner(&Target::Embedded, &s.db)));
    let outcome = host.run(&mut plan)?;
    host.print(&plan.summary(&outcome, &s.db)?);
    if isolation::floors_held(&outcome) && !outcome.passed() {
        host.print(
            "The floors held (IOPS); a p99 verdict failed. fio's p99 includes the load generator \
             sharing this machine's CPU with the bully; the node's own mean latency for the \
             protected volumes is printed above the table's notes.\n",
        );
    }
    Ok(outcome)
}

/// Where the demo's results go when neither `--db` nor `$QOSLAB_DB` says.
pub fn default_db() -> PathBuf {
    Path::new(RESULTS_DIR).join("qoslab-results.db")
}

#[cfg(test)]
mod tests;
