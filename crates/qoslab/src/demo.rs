//! `qoslab demo`: seed 000's whole scenario on an embedded node. Three policies (500 IOPS;
//! 100 MB/s; adaptive 5/50 IOPS/GB on allocated space), a baseline volume with no policy, a
//! 100 GB and a 200 GB volume under each policy (5% snapshot reserve); dbench on each; the
//! dbench summary blocks and one comparison table with a verdict per volume.
//!
//! The verdict compares the measured ceiling with the expected one (within 3%). The measured
//! ceiling is fio's steady-state rate: the mean of its per-500 ms samples (`iops_mean`,
//! `bw_mean`), which excludes the last in-flight requests draining after the runtime ends.
//! (fio's headline `iops` includes that drain, which reads iodepth / (IOPS × runtime) low:
//! 64 / (500 × 2 s) = 6% for a 500 IOPS volume in a 2 s run; 0.9% in dbench's 15 s.)

use std::io::Write;
use std::path::PathBuf;

use std::collections::BTreeMap;

use clap::Args;
use fio::fmt;
use harness::store::{JobRecord, RunRecord};
use harness::target::Target;
use harness::Options;
use report::Format;
use workloads::dbench::{self, Summary};
use workloads::isolation::{self, IsolationSpec};

use crate::bench::{db_path, duration, exit_failed, run_and_store};
use crate::ui::TerminalUi;

/// A measured ceiling passes within this fraction of the expected one.
const TOLERANCE: f64 = 0.03;

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab demo                          # ~5 minutes: 2 s runs + 1 s ramp per fio job
  qoslab demo --runtime 15s --ramp 2s  # dbench's own timing (~20 minutes)
  qoslab demo --db /tmp/demo.db

After the ceilings, the demo runs seed 001's noisy-neighbour scenario (`qoslab bench
--profile isolation`, 3 steps of 3 s): two volumes with a 5,000 IOPS floor beside a bully
on an emulated 20,000 IOPS controller, with floors and without.

Exit status 1 when a measured ceiling is not within 3% of the expected one, or a protected
volume got less than 98% of its floor (or the control showed no harm). The isolation run's
p99 verdicts are printed and stored; they do not change the demo's exit status, because
fio's p99 on one small machine includes the load generator's share of the CPU (the node's
own latency is printed beside it).")]
pub struct DemoArgs {
    /// fio runtime per job (dbench's own: 15s). The default keeps 7 volumes x 9 jobs near
    /// 4 minutes on 2 cores.
    #[arg(long, value_parser = duration, default_value = "2s")]
    runtime: f64,
    /// fio ramp time per job (dbench's own: 2s).
    #[arg(long, value_parser = duration, default_value = "1s")]
    ramp: f64,
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
    for (name, _, _) in VOLUMES {
        t.push_str(&format!(
            "[[workload]]\nname = \"{name}\"\nvolume = \"{name}\"\nprofile = \"dbench\"\n\n"
        ));
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
}

fn steady(j: Option<&JobRecord>, bw: bool) -> Option<f64> {
    let r = j?.primary()?;
    let v = if bw {
        r.read.bw_mean_bytes + r.write.bw_mean_bytes
    } else {
        r.read.iops_mean + r.write.iops_mean
    };
    Some(v)
}

fn within(measured: &[Option<f64>], expected: f64) -> (bool, String) {
    let mut ok = true;
    let mut parts = Vec::new();
    for m in measured {
        match m {
            Some(m) => {
                ok &= (m - expected).abs() <= expected * TOLERANCE;
                parts.push(format!("{:+.1}%", (m / expected - 1.0) * 100.0));
            }
            None => {
                ok = false;
                parts.push("missing".into());
            }
        }
    }
    (ok, parts.join("/"))
}

/// The dbench summary of the jobs that ran on `volume` (fio's headline numbers).
fn summary_of(run: &RunRecord, volume: &str) -> Summary {
    let results: BTreeMap<String, fio::JobResult> = run
        .jobs
        .iter()
        .filter(|j| j.volume.as_deref() == Some(volume) && dbench::JOBS.contains(&j.name.as_str()))
        .filter_map(|j| Some((j.name.clone(), j.primary()?.clone())))
        .collect();
    Summary::from_results(&results)
}

/// Rows from a finished demo run (pure; unit-tested with canned records).
pub fn rows(run: &RunRecord) -> Vec<Row> {
    let mut out = Vec::new();
    for v in &run.volumes {
        let job = |name: &str| {
            run.jobs
                .iter()
                .find(|j| j.volume.as_deref() == Some(v.name.as_str()) && j.name == name)
        };
        let summary = summary_of(run, &v.name);
        let l = v.limits;
        let (expected, measured, verdict, passed) = if l.ceiling_iops == 0 && l.ceiling_bps == 0 {
            (
                "none".to_string(),
                "-".to_string(),
                "n/a (no ceiling)".to_string(),
                true,
            )
        } else if l.ceiling_iops > 0 {
            // IOPS ceiling (fixed 500, or adaptive): judged on the 4k random IOPS jobs.
            let m = [
                steady(job("read_iops"), false),
                steady(job("write_iops"), false),
            ];
            let (ok, dev) = within(&m, l.ceiling_iops as f64);
            let mut exp = format!("{} IOPS", l.ceiling_iops);
            if l.ceiling_bps > 0 {
                exp.push_str(&format!(" (+{})", fmt::bw(l.ceiling_bps)));
            }
            let meas = m
                .iter()
                .map(|x| x.map(|x| format!("{x:.0}")).unwrap_or_else(|| "-".into()))
                .collect::<Vec<_>>()
                .join("/");
            (
                exp,
                format!("{meas} IOPS"),
                format!("{} ({dev})", if ok { "PASS" } else { "FAIL" }),
                ok,
            )
        } else {
            // Bandwidth ceiling: judged on the 128k random BW jobs.
            let m = [steady(job("read_bw"), true), steady(job("write_bw"), true)];
            let (ok, dev) = within(&m, l.ceiling_bps as f64);
            let meas = m
                .iter()
                .map(|x| {
                    x.map(|x| format!("{:.1}", x / 1048576.0))
                        .unwrap_or_else(|| "-".into())
                })
                .collect::<Vec<_>>()
                .join("/");
            (
                fmt::bw(l.ceiling_bps),
                format!("{meas} MiB/s"),
                format!("{} ({dev})", if ok { "PASS" } else { "FAIL" }),
                ok,
            )
        };
        out.push(Row {
            volume: v.name.clone(),
            policy: v.policy.clone().unwrap_or_else(|| "-".into()),
            expected,
            summary,
            measured,
            verdict,
            passed,
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

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let text = plan_text(args.runtime, args.ramp);
    let mut plan = workloads::registry().parse(&text, "qoslab demo")?;
    plan.configure(&Options {
        no_step_lines: true,
        ..Default::default()
    })?;
    let db = db_path(args.db);
    let jobs = plan.steps().len();
    println!(
        "qoslab demo: seed 000 on an embedded node: 3 policies, {} volumes, dbench on each \
         ({} fio runs of {} s + {} s ramp, about {:.0} minutes)\n",
        VOLUMES.len(),
        jobs,
        args.runtime,
        args.ramp,
        (jobs as f64 * (args.runtime + args.ramp + 0.6)) / 60.0
    );
    let mut ui = TerminalUi::new(false);
    let outcome = run_and_store(&mut plan, &Target::Embedded, &[], &db, &mut ui)?;
    drop(ui);
    let rec = &outcome.record;
    let rows = rows(rec);
    let mut out = String::new();
    out.push_str("Seed 000 on qoslab: measured vs expected QoS ceilings\n\n");
    out.push_str(&table(&rows));
    out.push_str(
        "\nMeasured ceiling: fio's steady-state rate (mean of its 500 ms samples) on the 4k random \
         IOPS jobs (IOPS ceilings) or the 128k random BW jobs (MB/s ceilings); the dbench columns \
         are fio's headline numbers, which include the queue draining after the runtime ends.\n\
         aQoS's default block_size 32k adds an MB/s ceiling of peak IOPS x 32 KiB (4750 x 32 KiB = \
         148 MiB/s; 9500 x 32 KiB = 297 MiB/s): dbench's 128k BW and 1M sequential jobs hit it, \
         as they would on ONTAP.\n",
    );
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
    if outcome.failed_jobs > 0
        || rows.iter().any(|r| !r.passed)
        || !isolation::floors_held(&isolation)
    {
        exit_failed();
    }
    Ok(())
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
    let outcome = run_and_store(&mut plan, &Target::Embedded, &[], db, &mut ui)?;
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

    fn job(volume: &str, name: &str, iops_mean: f64, bw_mean: f64) -> JobRecord {
        let mut r = fio::JobResult::default();
        r.read.iops_mean = iops_mean;
        r.read.bw_mean_bytes = bw_mean;
        r.read.total_ios = 1;
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
            results: vec![r],
            verdicts: vec![],
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
                job("i500", "read_iops", 499.0, 0.0),
                job("i500", "write_iops", 486.0, 0.0),
                job("m100", "read_bw", 0.0, 100.5 * 1048576.0),
                job("m100", "write_bw", 0.0, 99.0 * 1048576.0),
                job("a200", "read_iops", 8609.0, 0.0),
                job("a200", "write_iops", 9249.0, 0.0),
            ],
            tables: vec![],
            series: vec![],
        };
        let r = rows(&run);
        assert_eq!(r[0].verdict, "n/a (no ceiling)");
        assert!(r[1].passed, "{:?}", r[1]);
        assert_eq!(r[1].verdict, "PASS (-0.2%/-2.8%)");
        assert!(r[2].passed && r[2].expected == "100MiB/s", "{:?}", r[2]);
        assert!(!r[3].passed, "{:?}", r[3]);
        assert_eq!(r[3].expected, "9500 IOPS (+297MiB/s)");
        assert_eq!(r[3].measured, "8609/9249 IOPS");
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
        }];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("volume       policy"));
        assert!(lines[2].contains("PASS (+0.0%/-0.2%)"));
    }
}
