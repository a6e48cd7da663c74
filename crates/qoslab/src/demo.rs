//! `qoslab demo`: seed 000's whole scenario on an embedded node. Three policies (500 IOPS;
//! 100 MB/s; adaptive 5/50 IOPS/GB on allocated space), a baseline volume with no policy, a
//! 100 GB and a 200 GB volume under each policy (5% snapshot reserve); dbench on each; the
//! dbench summary blocks and one comparison table with a verdict per volume.
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
//! inconclusive, and the demo runs such a job's volume once more before it answers.

use std::io::Write;
use std::path::PathBuf;

use std::collections::BTreeMap;

use assess::Outcome;
use clap::Args;
use fio::fmt;
use harness::store::{JobRecord, RunRecord, SummaryTable, SUPERSEDED};
use harness::target::Target;
use harness::verdict::Verdict;
use harness::Options;
use report::Format;
use workloads::dbench::{self, Summary};
use workloads::isolation::{self, IsolationSpec};

use crate::bench::{db_path, duration, run_and_store};
use crate::ui::TerminalUi;

/// Runtime of the jobs whose windows the verdicts judge: 8 windows of 500 ms.
const JUDGED_RUNTIME: f64 = 4.0;

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab demo                          # ~4.5 minutes: 2 s runs (4 s judged) + 0.5 s ramp
  qoslab demo --runtime 15s --ramp 2s  # dbench's own timing (~20 minutes)
  qoslab demo --db /tmp/demo.db

After the ceilings, the demo runs seed 001's noisy-neighbour scenario (`qoslab bench
--profile isolation`, 3 steps of 3 s): two volumes with a 5,000 IOPS floor beside a bully
on an emulated 20,000 IOPS controller, with floors and without.

Exit status 0 when every measured ceiling is within 3% of the expected one and the floors
held; 1 when one is not, or a protected volume got less than 98% of its floor (or the
control showed no harm); 3 when nothing failed but a ceiling verdict is inconclusive (the
job's diagnosis says the machine, not the node, was the limit; docs/DIAGNOSIS.md). The
isolation run's p99 verdicts are printed and stored with their diagnoses; they do not change
the demo's exit status, because fio's p99 on one small machine includes the load
generator's share of the CPU (the node's own latency is printed beside it).

The results database and the reports are written under ./qoslab-results/ (git-ignored)
unless --db or $QOSLAB_DB says otherwise.")]
pub struct DemoArgs {
    /// fio runtime per job (dbench's own: 15s). The default keeps 7 volumes x 9 jobs near
    /// 4 minutes on 2 cores.
    #[arg(long, value_parser = duration, default_value = "2s")]
    runtime: f64,
    /// fio ramp time per job (dbench's own: 2s).
    #[arg(long, value_parser = duration, default_value = "0.5s")]
    ramp: f64,
    /// Count inconclusive verdicts as failures (exit 1 instead of 3).
    #[arg(long)]
    strict: bool,
    /// Results database (default $QOSLAB_DB or ./qoslab-results.db).
    #[arg(long)]
    db: Option<PathBuf>,
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
    let mut t = format!(
        "# qoslab demo: seed 000 on the embedded node\n[bench]\nname = \"demo\"\nruntime = {runtime}\nramp = {ramp}\n\
\n\
         [[policy]]\nname = \"QoS_500iops\"\nfixed = {{ max_throughput_iops = 500, capacity_shared = false }}\n\n\
         [[policy]]\nname = \"QoS_100MBps\"\nfixed = {{ max_throughput_mbps = 100, capacity_shared = false }}\n\n\
         [[policy]]\nname = \"aQoS\"\nadaptive = {{ expected_iops = \"5IOPS/GB\", peak_iops = \"50IOPS/GB\", peak_iops_allocation = \"allocated_space\" }}\n\n"
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
            t.push_str(&format!(
                "job_runtime = {{ {r} = {JUDGED_RUNTIME}, {w} = {JUDGED_RUNTIME} }}\nexpect = {{ {r} = {e}, {w} = {e} }}\n"
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

/// The comparison table (plain text, aligned).
pub fn table(rows: &[Row]) -> String {
    let d = |v: Option<u64>| v.map(fmt::iops).unwrap_or_else(|| "-".into());
    let b = |v: Option<u64>| v.map(fmt::bw).unwrap_or_else(|| "-".into());
    let mut cells: Vec<[String; 9]> = vec![[
        "volume".into(),
        "policy".into(),
        "expected ceiling".into(),
        "rand R/W IOPS".into(),
        "rand R/W BW".into(),
        "seq R/W".into(),
        "mixed R/W IOPS".into(),
        "measured ceiling (steady)".into(),
        "verdict (within 3%)".into(),
    ]];
    for r in rows {
        let s = &r.summary;
        cells.push([
            r.volume.clone(),
            r.policy.clone(),
            r.expected.clone(),
            format!("{}/{}", d(s.read_iops), d(s.write_iops)),
            format!("{} / {}", b(s.read_bw), b(s.write_bw)),
            format!("{} / {}", b(s.read_seq_bw), b(s.write_seq_bw)),
            format!("{}/{}", d(s.mix_read_iops), d(s.mix_write_iops)),
            r.measured.clone(),
            r.verdict.clone(),
        ]);
    }
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
    let d = |v: Option<u64>| v.map(fmt::iops).unwrap_or_else(|| "-".into());
    let b = |v: Option<u64>| v.map(fmt::bw).unwrap_or_else(|| "-".into());
    SummaryTable {
        kind: "ceilings".into(),
        name: "Seed 000: measured vs expected QoS ceilings".into(),
        columns: [
            "volume",
            "policy",
            "expected ceiling",
            "rand R/W IOPS",
            "rand R/W BW",
            "seq R/W",
            "mixed R/W IOPS",
            "measured ceiling (steady)",
            "verdict (within 3%)",
            "read % of ceiling",
            "write % of ceiling",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .map(|r| {
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

/// The volumes whose judged verdicts are inconclusive because the host was noisy: worth
/// one more run.
fn noisy_volumes(run: &RunRecord) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for j in &run.jobs {
        let noisy = j
            .diagnosis
            .as_ref()
            .is_some_and(|d| d.bottleneck.discredits_measurement());
        if noisy && j.verdicts.iter().any(|x| x.outcome != Outcome::Pass) {
            if let Some(vol) = &j.volume {
                if !v.contains(vol) {
                    v.push(vol.clone());
                }
            }
        }
    }
    v
}

/// The plan text restricted to `volumes`' workloads (the re-run).
fn rerun_text(text: &str, volumes: &[String]) -> String {
    text.split("[[workload]]")
        .enumerate()
        .filter(|(i, part)| {
            *i == 0
                || volumes
                    .iter()
                    .any(|v| part.contains(&format!("volume = \"{v}\"")))
        })
        .map(|(_, p)| p)
        .collect::<Vec<_>>()
        .join("[[workload]]")
}

/// The results directory the demo writes to when neither --db nor $QOSLAB_DB says.
pub const RESULTS_DIR: &str = "qoslab-results";

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let text = plan_text(args.runtime, args.ramp);
    let mut plan = workloads::registry().parse(&text, "qoslab demo")?;
    plan.configure(&Options {
        no_step_lines: true,
        ..Default::default()
    })?;
    let db = match (&args.db, std::env::var_os("QOSLAB_DB")) {
        (None, None) => {
            std::fs::create_dir_all(RESULTS_DIR)?;
            PathBuf::from(RESULTS_DIR).join("qoslab-results.db")
        }
        _ => db_path(args.db.clone()),
    };
    let steps = plan.steps();
    let secs: f64 = steps.iter().map(|s| s.expected_secs + 0.6).sum::<f64>() + 45.0;
    println!(
        "qoslab demo: seed 000 on an embedded node: 3 policies, {} volumes, dbench on each \
         ({} fio runs of {} s ({} s for the {} judged ones) + {} s ramp; then seed 001's \
         isolation; about {:.1} minutes)\n",
        VOLUMES.len(),
        steps.len(),
        args.runtime,
        JUDGED_RUNTIME,
        VOLUMES.iter().filter(|v| v.2.is_some()).count() * 2,
        args.ramp,
        secs / 60.0
    );
    let mut ui = TerminalUi::new(false);
    let mut outcome = run_and_store(&mut plan, &Target::Embedded, &[], &db, &mut ui, true)?;
    drop(ui);
    // One more run of the volumes whose verdicts the machine spoiled (diagnosed noisy-host
    // or client-cpu-bound, and not a pass): the second run is the answer.
    let noisy = noisy_volumes(&outcome.record);
    if !noisy.is_empty() {
        println!(
            "\nRunning {} again: the host was busy with other work while it ran ({}).",
            noisy.join(", "),
            outcome
                .record
                .jobs
                .iter()
                .filter_map(|j| j.diagnosis.as_ref())
                .find(|d| d.bottleneck.discredits_measurement())
                .map(|d| d.reason.clone())
                .unwrap_or_default()
        );
        let mut again =
            workloads::registry().parse(&rerun_text(&text, &noisy), "qoslab demo (re-run)")?;
        again.configure(&Options {
            no_step_lines: true,
            ..Default::default()
        })?;
        let mut ui = TerminalUi::new(false);
        let second = run_and_store(&mut again, &Target::Embedded, &[], &db, &mut ui, true)?;
        drop(ui);
        outcome = merge_rerun(outcome, second, &db)?;
    }
    let rows = rows(&outcome.record);
    let table_rec = headline_table(&rows);
    {
        let store = harness::store::Store::open(&db)?;
        store.put_table(outcome.record.id, &table_rec)?;
        outcome.record = store.load_run(outcome.record.id)?;
    }
    let rec = &outcome.record;
    let tally = rec.tally();
    let mut out = String::new();
    out.push_str(&format!(
        "Seed 000 on qoslab: measured vs expected QoS ceilings (verdicts: {})\n\n",
        tally.summary()
    ));
    out.push_str(&table(&rows));
    out.push_str(
        "\nMeasured ceiling: the median of fio's 500 ms windows in steady state on the 4k random \
         IOPS jobs (IOPS ceilings) or the 128k random BW jobs (MB/s ceilings), 8 windows each; the \
         dbench columns are fio's headline numbers, which include the queue draining after the \
         runtime ends.\n\
         aQoS's default block_size 32k adds an MB/s ceiling of peak IOPS x 32 KiB (4750 x 32 KiB = \
         148 MiB/s; 9500 x 32 KiB = 297 MiB/s): dbench's 128k BW and 1M sequential jobs hit it, \
         as they would on ONTAP.\n",
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
    if outcome.failed_jobs > 0 {
        out.push_str(&format!(
            "\n{} fio run(s) failed: see `qoslab results show {}`.\n",
            outcome.failed_jobs, rec.id
        ));
    }
    out.push_str(&format!(
        "\nResults stored in {} as run {}. Export them with:\n  qoslab results export {} --format md   (or csv, json) --db {}\n",
        db.display(),
        rec.id,
        rec.id,
        db.display()
    ));
    let mut so = std::io::stdout().lock();
    so.write_all(out.as_bytes())?;
    so.flush()?;
    drop(so);
    let isolation = isolation_scenario(args.runtime, args.ramp, &db)?;
    // The reports (every job's charts), next to the results database.
    println!();
    for run in [rec, &isolation.record] {
        let report = crate::report_cmd::path_next_to(&db, run.id);
        match std::fs::write(&report, workloads::export(run, Format::Html)) {
            Ok(()) => println!(
                "Report: {} (open it in a browser; `qoslab report {} --db {}` writes it again)",
                report.display(),
                run.id,
                db.display()
            ),
            Err(e) => eprintln!("qoslab demo: writing {}: {e}", report.display()),
        }
    }
    let floors = isolation::floors_held(&isolation);
    println!(
        "\nqoslab demo: ceilings {} ({}); floors {}",
        tally.outcome().label(),
        tally.summary(),
        if floors { "HELD" } else { "NOT HELD" }
    );
    let mut t = tally;
    if outcome.failed_jobs > 0 || !floors {
        t.fail += 1;
    }
    let code = t.exit_code(args.strict);
    if code != 0 {
        crate::bench::exit_with(code);
    }
    Ok(())
}

/// The first run with the re-run's jobs in place of its spoiled volumes' jobs: the re-run's
/// jobs are moved into the first run (same run id, so one report answers), the re-run row
/// removed.
fn merge_rerun(
    first: harness::Outcome,
    second: harness::Outcome,
    db: &std::path::Path,
) -> anyhow::Result<harness::Outcome> {
    let store = harness::store::Store::open(db)?;
    store.adopt_jobs(first.record.id, second.record.id)?;
    let record = store.load_run(first.record.id)?;
    Ok(harness::Outcome {
        failed_verdicts: record.tally().fail,
        failed_jobs: record
            .jobs
            .iter()
            .filter(|j| j.status != "done" && j.status != SUPERSEDED)
            .count(),
        record,
    })
}

/// The demo's second part: seed 001's isolation scenario in 3 steps (1x, 1.5x, 2x).
fn isolation_scenario(
    runtime: f64,
    ramp: f64,
    db: &std::path::Path,
) -> anyhow::Result<harness::Outcome> {
    let spec = IsolationSpec {
        steps: 3,
        runtime: runtime.max(3.0),
        ramp,
        ..IsolationSpec::default()
    };
    println!(
        "\nSeed 001 on qoslab: floors against a noisy neighbour (emulated {} IOPS controller)\n",
        spec.capacity_iops
    );
    let mut plan = isolation::plan(spec);
    println!("{}", plan.banner(&Target::Embedded, db));
    let mut ui = TerminalUi::new(false);
    let outcome = run_and_store(&mut plan, &Target::Embedded, &[], db, &mut ui, true)?;
    drop(ui);
    print!("{}", plan.body.summary(&outcome, db)?);
    if isolation::floors_held(&outcome) && !outcome.passed() {
        println!(
            "The floors held (IOPS); a p99 verdict failed. fio's p99 includes the load generator \
             sharing this machine's CPU with the bully; the node's own mean latency for the \
             protected volumes is printed above the table's notes."
        );
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_plan_is_valid_and_has_the_seed_limits() {
        let p = workloads::registry()
            .parse(&plan_text(2.0, 1.0), "demo")
            .unwrap();
        assert_eq!(p.steps().len(), 63);
        let node = p.common.node.unwrap();
        assert_eq!(node.volumes.len(), 7);
        assert!(node.volumes.iter().all(|v| v.snapshot_reserve_percent == 5));
        assert_eq!(node.policies.len(), 3);
    }

    /// A judged job whose stored verdict measured `measured` (IOPS or bytes/s), with the
    /// given outcome.
    fn job(volume: &str, name: &str, measured: f64, outcome: Outcome) -> JobRecord {
        let mut r = fio::JobResult::default();
        r.read.total_ios = 1;
        let metric = if name.ends_with("_bw") {
            "bw_steady"
        } else {
            "iops_steady"
        };
        let mut v = Verdict::plain(
            format!("{metric} ~= policy.ceiling +-3%"),
            measured,
            String::new(),
            outcome == Outcome::Pass,
            String::new(),
        );
        v.outcome = outcome;
        JobRecord {
            id: 0,
            seq: 0,
            workload: volume.into(),
            name: name.into(),
            volume: Some(volume.into()),
            iteration: 1,
            status: "done".into(),
            started_at: String::new(),
            finished_at: None,
            error: None,
            diagnosis: None,
            steady: None,
            results: vec![r],
            verdicts: vec![v],
            ops: vec![],
        }
    }

    #[test]
    fn verdicts_judge_the_steady_state_ceiling_within_3_percent() {
        use harness::host::Env;
        use harness::store::VolumeRecord;
        use harness::verdict::Limits;
        let vol = |name: &str, iops: u64, bps: u64| VolumeRecord {
            name: name.into(),
            size: 1,
            snapshot_reserve_percent: 5,
            policy: Some("p".into()),
            limits: Limits {
                ceiling_iops: iops,
                ceiling_bps: bps,
                ..Default::default()
            },
        };
        let run = RunRecord {
            id: 1,
            name: "demo".into(),
            started_at: String::new(),
            finished_at: None,
            status: "passed".into(),
            plan_origin: String::new(),
            plan_text: String::new(),
            target: String::new(),
            executor: String::new(),
            runtime_s: 2.0,
            ramp_s: 1.0,
            env: Env::default(),
            policies: vec![],
            volumes: vec![
                vol("base", 0, 0),
                vol("i500", 500, 0),
                vol("m100", 0, 100 << 20),
                vol("a200", 9500, 9500 * 32768),
            ],
            jobs: vec![
                job("i500", "read_iops", 499.0, Outcome::Pass),
                job("i500", "write_iops", 486.0, Outcome::Pass),
                job("m100", "read_bw", 100.5 * 1048576.0, Outcome::Pass),
                job("m100", "write_bw", 99.0 * 1048576.0, Outcome::Pass),
                job("a200", "read_iops", 8609.0, Outcome::Fail),
                job("a200", "write_iops", 9249.0, Outcome::Inconclusive),
            ],
            tables: vec![],
            series: vec![],
        };
        let r = rows(&run);
        assert_eq!(r[0].verdict, "n/a (no ceiling)");
        assert!(r[1].passed, "{:?}", r[1]);
        assert_eq!(r[1].verdict, "PASS (-0.2%/-2.8%)");
        assert!(r[2].passed && r[2].expected == "100MiB/s", "{:?}", r[2]);
        assert_eq!(r[2].measured, "100.5/99.0 MiB/s");
        assert!(!r[3].passed, "{:?}", r[3]);
        assert_eq!(
            r[3].outcome,
            Outcome::Fail,
            "a failure outweighs an inconclusive"
        );
        assert_eq!(r[3].expected, "9500 IOPS (+297MiB/s)");
        assert_eq!(r[3].measured, "8609/9249 IOPS");
        assert_eq!(r[3].verdict, "FAIL (-9.4%/-2.6%)");
        assert_eq!(r[3].pct_of_ceiling.len(), 2);
        // The headline table carries the same verdicts, and numbers for its chart.
        let t = headline_table(&r);
        assert_eq!(t.kind, "ceilings");
        assert_eq!(t.rows[3][8], "FAIL (-9.4%/-2.6%)");
        assert_eq!(t.rows[1][9], 99.8);
        assert!(t.rows[0][9].is_null());
    }

    #[test]
    fn the_demo_plan_states_its_checks_as_expectations() {
        let text = plan_text(2.0, 0.5);
        assert!(text.contains("iops_steady ~= policy.ceiling +-3%"));
        assert!(text.contains("bw_steady ~= policy.ceiling +-3%"));
        let p = workloads::registry().parse(&text, "demo").unwrap();
        // 12 judged jobs of 4 s (8 windows of 500 ms), the others 2 s.
        let long = p.steps().iter().filter(|s| s.expected_secs == 4.5).count();
        assert_eq!(long, 12);
        // The re-run keeps the setup and only the named volumes' workloads.
        let again = rerun_text(&text, &["qos500-200g".to_string()]);
        let p = workloads::registry().parse(&again, "demo").unwrap();
        assert_eq!(p.steps().len(), 9);
        assert_eq!(p.common.node.unwrap().volumes.len(), 7);
    }

    #[test]
    fn table_aligns_columns() {
        let rows = vec![Row {
            volume: "qos500-100g".into(),
            policy: "QoS_500iops".into(),
            expected: "500 IOPS".into(),
            summary: Summary::default(),
            measured: "500/499 IOPS".into(),
            verdict: "PASS (+0.0%/-0.2%)".into(),
            passed: true,
            outcome: Outcome::Pass,
            pct_of_ceiling: vec![100.0, 99.8],
        }];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("volume       policy"));
        assert!(lines[2].contains("PASS (+0.0%/-0.2%)"));
    }
}
