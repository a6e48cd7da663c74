//! `qoslab bench`: run a plan (or a built-in profile) with fio, judge expectations, store
//! everything in the results database. Exit 0 when every expectation holds, 1 when any fails
//! (or a fio run fails), 2 on usage or plan errors.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use bench::dbench;
use bench::fio::{executor::fio_version, Executor, RealFio, RemoteFio};
use bench::plan::{parse_duration_str, Plan, PlannedJob};
use bench::progress::{expected_secs, Progress};
use bench::result::JobResult;
use bench::run::{run_plan, Observer, Outcome};
use bench::store::{Env, Store};
use bench::target::{temp_dir, Target};
use bench::verdict::Verdict;
use bench::{export, fmt};
use clap::Args;

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab bench examples/bench-qos500.toml             # a plan on the embedded node
  qoslab bench --profile dbench --runtime 5s          # dbench on an unlimited embedded volume
  qoslab bench --profile dbench --target 'nbd+unix:///vol500?socket=/run/qoslab.sock'
  qoslab bench --profile dbench --target /mnt/scratch # a directory: DIR/fiotest, libaio, direct=1
  qoslab bench plan.toml --node http://127.0.0.1:8080 --volume vol500   # a volume on a running node
  qoslab bench plan.toml --client 10.0.0.2,8765 --client 10.0.0.3,8765   # fio client/server
  qoslab bench plan.toml --json > run.json
  qoslab bench --profile ramp --min-iops 1000 --max-iops 10000 --runs 10 --scale 0.05
  qoslab bench examples/seed001-ramp.toml             # three concurrent ramp systems

Exit status: 0 all expectations hold; 1 an expectation failed or a fio run failed;
2 usage or plan error. Results go to the SQLite database (--db, default $QOSLAB_DB or
./qoslab-results.db): see `qoslab results`. Plan format: docs/BENCH.md.")]
pub struct BenchArgs {
    /// Plan file (TOML). Without one, --profile runs on --target.
    plan: Option<PathBuf>,
    /// Built-in profile to run without a plan.
    #[arg(long, value_parser = ["dbench", "isolation", "ramp"])]
    profile: Option<String>,
    /// Where the I/O goes: `embedded` (default: a node started for the run from the plan's
    /// volumes), an nbd:// or nbd+unix:// URI, or a file, directory or block device.
    #[arg(long, conflicts_with = "node")]
    target: Option<String>,
    /// A running qoslab node's REST API (e.g. http://127.0.0.1:8080): the volume named by
    /// --volume is looked up there (its NBD URI and effective limits, which expectations
    /// such as `iops >= policy.ceiling * 0.95` use).
    #[arg(long, requires = "volume")]
    node: Option<String>,
    /// The volume on --node to run against.
    #[arg(long, requires = "node")]
    volume: Option<String>,
    /// fio runtime per job, e.g. 5s (default: the plan's, else dbench's 15s); the ramp profile: each
    /// run's length before --scale (default 320s).
    #[arg(long, value_parser = duration)]
    runtime: Option<f64>,
    /// fio ramp time per job, e.g. 2s (default: the plan's, else 2s).
    #[arg(long, value_parser = duration)]
    ramp: Option<f64>,
    /// Remote load generator running `fio --server` (HOST or HOST,PORT); repeatable.
    #[arg(long = "client", value_name = "HOST,PORT")]
    clients: Vec<String>,
    /// Print the stored run as JSON (docs/BENCH.md) instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Results database.
    #[arg(long)]
    db: Option<PathBuf>,
    #[command(flatten)]
    isolation: crate::isolation_cmd::IsolationArgs,
    #[command(flatten)]
    ramp_args: Box<crate::ramp_cmd::RampArgs>,
}

pub(crate) fn duration(s: &str) -> Result<f64, String> {
    parse_duration_str(s)
}

/// The results database path: --db, else $QOSLAB_DB, else ./qoslab-results.db.
pub(crate) fn db_path(db: Option<PathBuf>) -> PathBuf {
    db.or_else(|| std::env::var_os("QOSLAB_DB").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("qoslab-results.db"))
}

/// Exit with status 1 (an expectation failed) after flushing stdout.
pub(crate) fn exit_failed() -> ! {
    let _ = std::io::stdout().flush();
    std::process::exit(1)
}

/// Prints job lines and dbench summary blocks as the run goes; drives the progress line.
pub(crate) struct Printer {
    pub progress: Progress,
    pub job_lines: bool,
    pub quiet: bool,
    remaining: Vec<f64>,
    dbench: BTreeMap<(u32, String), BTreeMap<String, JobResult>>,
    pub summaries: Vec<(String, Option<String>, dbench::Summary)>,
}

impl Printer {
    pub fn new(jobs: &[PlannedJob], progress: bool, job_lines: bool, quiet: bool) -> Printer {
        let mut remaining = vec![0.0; jobs.len()];
        let mut acc = 0.0;
        for (i, j) in jobs.iter().enumerate().rev() {
            remaining[i] = acc;
            acc += expected_secs(j) + 0.5;
        }
        Printer {
            progress: Progress::new(progress && !quiet),
            job_lines,
            quiet,
            remaining,
            dbench: BTreeMap::new(),
            summaries: Vec::new(),
        }
    }
}

impl Observer for Printer {
    fn job_started(&mut self, index: usize, total: usize, job: &PlannedJob) {
        self.progress
            .start(index, total, job, self.remaining[index]);
    }

    fn job_finished(
        &mut self,
        _index: usize,
        job: &PlannedJob,
        result: Result<&JobResult, &str>,
        verdicts: &[Verdict],
    ) {
        self.progress.clear();
        let mut out = String::new();
        let on = job.volume.as_deref().unwrap_or("target");
        match result {
            Ok(r) => {
                if self.job_lines {
                    let mut parts = Vec::new();
                    for (d, s) in [("read", &r.read), ("write", &r.write)] {
                        if s.active() {
                            parts.push(format!(
                                "{d} {} IOPS (steady {:.1}), {}, lat {} usec",
                                fmt::iops(s.iops_text()),
                                s.iops_mean,
                                fmt::bw(s.bw_text()),
                                fmt::usec(s.lat_mean_ns)
                            ));
                        }
                    }
                    out.push_str(&format!(
                        "{} {} on {on}: {}\n",
                        job.workload,
                        job.name,
                        parts.join("; ")
                    ));
                }
                if dbench::JOBS.contains(&job.name.as_str()) {
                    let key = (job.iteration, job.workload.clone());
                    let g = self.dbench.entry(key.clone()).or_default();
                    g.insert(job.name.clone(), r.clone());
                    if job.name == dbench::JOBS[8] {
                        let s = dbench::Summary::from_results(g);
                        if !self.quiet {
                            let title = if job.workload == on || job.workload == dbench::NAME {
                                format!("dbench on {on}")
                            } else {
                                format!("{} (dbench) on {on}", job.workload)
                            };
                            out.push_str(&format!(
                                "\n{title}{}:\n{}\n",
                                if job.iteration > 1 {
                                    format!(" (iteration {})", job.iteration)
                                } else {
                                    String::new()
                                },
                                s.render()
                            ));
                        }
                        self.summaries
                            .push((job.workload.clone(), job.volume.clone(), s));
                    }
                }
            }
            Err(e) => out.push_str(&format!(
                "{} {} on {on}: FAILED: {e}\n",
                job.workload, job.name
            )),
        }
        for v in verdicts {
            out.push_str(&format!(
                "  {} {}: {}\n",
                if v.passed { "PASS" } else { "FAIL" },
                v.expectation,
                v.detail
            ));
        }
        if !self.quiet && !out.is_empty() {
            let mut so = std::io::stdout().lock();
            let _ = so.write_all(out.as_bytes());
            let _ = so.flush();
        }
    }
}

/// The executor: local fio, or fio's client/server mode when clients are given.
pub(crate) fn executor(
    clients: &[String],
    live: Option<bench::fio::LiveSink>,
) -> anyhow::Result<(Box<dyn Executor>, PathBuf)> {
    let dir = temp_dir("fio").context("creating a directory for job files")?;
    let e: Box<dyn Executor> = if clients.is_empty() {
        let mut fio = RealFio::new(&dir);
        fio.live = live;
        Box::new(fio)
    } else {
        Box::new(RemoteFio::new(&dir, clients.to_vec()))
    };
    Ok((e, dir))
}

pub(crate) fn run_and_store(
    plan: &Plan,
    target: &Target,
    clients: &[String],
    db: &std::path::Path,
    printer: &mut Printer,
) -> anyhow::Result<Outcome> {
    let mut store = Store::open(db)?;
    let env = Env::detect(fio_version("fio"), env!("CARGO_PKG_VERSION"));
    let (exec, dir) = executor(clients, printer.progress.live_sink())?;
    let r = run_plan(plan, exec.as_ref(), target, &mut store, &env, printer);
    let _ = std::fs::remove_dir_all(dir);
    Ok(r?)
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.profile.as_deref() == Some("isolation") {
        return run_isolation_profile(&args);
    }
    let mut plan = match (&args.plan, &args.profile) {
        (Some(p), None) => Plan::load(p)?,
        (None, Some(prof)) if prof == bench::ramp::NAME => bench::ramp::profile_plan(
            args.node.is_none() && matches!(args.target.as_deref(), None | Some("embedded")),
        )?,
        (None, Some(prof)) => {
            let embedded = matches!(args.target.as_deref(), None | Some("embedded"));
            Plan::from_profile(prof, embedded)?
        }
        (Some(_), Some(_)) => anyhow::bail!("give a plan file or --profile, not both"),
        (None, None) => anyhow::bail!(
            "nothing to run: give a plan file or --profile dbench (see qoslab bench --help)"
        ),
    };
    plan.set_times(args.runtime, args.ramp);
    let target_s = args
        .target
        .clone()
        .or_else(|| plan.target.clone())
        .unwrap_or_else(|| "embedded".into());
    let target = match (&args.node, &args.volume) {
        (Some(url), Some(vol)) => {
            if plan.node.is_some() {
                anyhow::bail!(
                    "with --node, the plan's [[policy]] and [[volume]] tables would not be applied: \
                     remove them and name an existing volume with --volume"
                );
            }
            node_volume(url, vol)?
        }
        _ => Target::parse(&target_s)?,
    };
    let db = db_path(args.db.clone());
    if plan.ramp_plan.is_some() {
        return crate::ramp_cmd::run(
            &plan,
            &target,
            &db,
            args.runtime,
            args.ramp,
            &args.clients,
            args.json,
            &args.ramp_args,
        );
    }
    let jobs = plan.jobs();
    if !args.json {
        println!(
            "qoslab bench: {} ({} fio run(s), ~{:.0} s) on {}; results: {}",
            plan.name,
            jobs.len(),
            jobs.iter().map(|j| expected_secs(j) + 0.5).sum::<f64>(),
            target.describe(),
            db.display()
        );
    }
    let mut printer = Printer::new(&jobs, true, true, args.json);
    let outcome = run_and_store(&plan, &target, &args.clients, &db, &mut printer)?;
    drop(printer);
    let rec = &outcome.record;
    if args.json {
        std::io::stdout().write_all(&export::json(rec))?;
    } else {
        let (pass, fail) = rec.verdict_counts();
        println!(
            "\nrun {}: {} ({} job(s), {} failed; {pass} expectation(s) passed, {fail} failed)",
            rec.id,
            rec.status.to_uppercase(),
            rec.jobs.len(),
            outcome.failed_jobs
        );
        for j in &rec.jobs {
            for v in j.verdicts.iter().filter(|v| !v.passed) {
                println!(
                    "  FAILED: {} on {}: {}: {}",
                    j.name,
                    j.volume.as_deref().unwrap_or("target"),
                    v.expectation,
                    v.detail
                );
            }
        }
        println!(
            "stored in {} as run {}; `qoslab results show {} --db {}` or `qoslab results export {} --format md|csv|json --db {}`",
            db.display(),
            rec.id,
            rec.id,
            db.display(),
            rec.id,
            db.display()
        );
    }
    if !outcome.passed() {
        exit_failed();
    }
    Ok(())
}

/// `--profile isolation`: its own embedded nodes (floors, then the control).
fn run_isolation_profile(args: &BenchArgs) -> anyhow::Result<()> {
    if args.plan.is_some()
        || args.target.is_some()
        || args.node.is_some()
        || !args.clients.is_empty()
    {
        anyhow::bail!(
            "--profile isolation builds its own embedded node (an emulated controller): \
             it takes no plan, --target, --node or --client"
        );
    }
    let spec = args.isolation.spec(args.runtime, args.ramp)?;
    let db = db_path(args.db.clone());
    let outcome = crate::isolation_cmd::run_isolation(&spec, &db, args.json)?;
    if args.json {
        std::io::stdout().write_all(&export::json(&outcome.record))?;
    } else {
        crate::isolation_cmd::report(&outcome, &db);
    }
    if !outcome.passed() {
        exit_failed();
    }
    Ok(())
}

/// Resolve `volume` on the node whose REST API is at `url`: its NBD URI (the unix socket
/// when it is reachable from here, else TCP) and its effective limits.
fn node_volume(url: &str, volume: &str) -> anyhow::Result<Target> {
    use crate::http_client::{enc, ApiArgs, Client, Output};
    let client = Client::new(&ApiArgs {
        url: url.to_string(),
        token_file: None,
        output: Output::Json,
    })?;
    let list = client.call(
        "GET",
        &format!("/api/storage/volumes?name={}&fields=*", enc(volume)),
        None,
    )?;
    let rec = list["records"]
        .as_array()
        .and_then(|r| r.first())
        .ok_or_else(|| anyhow::anyhow!("--volume {volume:?}: no such volume on {url}"))?;
    let unix = rec["nbd"]["unix_uri"].as_str().filter(|u| {
        u.split_once("?socket=")
            .is_some_and(|(_, p)| std::path::Path::new(p).exists())
    });
    let uri = unix
        .or_else(|| rec["nbd"]["uri"].as_str())
        .ok_or_else(|| anyhow::anyhow!("{url} reports no NBD address for volume {volume:?}"))?
        .to_string();
    let l = &rec["limits"];
    let limits = bench::verdict::Limits {
        ceiling_iops: l["max_throughput_iops"].as_u64().unwrap_or(0),
        ceiling_bps: l["max_throughput_bytes_per_sec"].as_u64().unwrap_or(0),
        floor_iops: l["min_throughput_iops"].as_u64().unwrap_or(0),
        floor_bps: l["min_throughput_bytes_per_sec"].as_u64().unwrap_or(0),
    };
    Ok(Target::NodeVolume {
        node: url.to_string(),
        volume: volume.to_string(),
        uri,
        limits,
        size: rec["size"].as_u64().unwrap_or(0),
        snapshot_reserve_percent: rec["space"]["snapshot"]["reserve_percent"]
            .as_u64()
            .unwrap_or(0)
            .min(100) as u8,
        policy: rec["qos"]["policy"]["name"].as_str().map(str::to_string),
    })
}
