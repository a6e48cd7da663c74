//! Running a ramp: every system's run k at once on one current-thread tokio runtime (on a
//! thread named `toolsets::GENERATOR_THREADS`, so the tool sets count it as the load
//! generator), each run diagnosed, judged and stored as it ends (a job with its verdicts,
//! diagnosis and time series per system, the system's table rewritten, its summary.csv
//! rewritten), so a crash loses at most the runs in flight.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fio::{DirStats, FioOutput, JobResult};
use harness::plan::{Common, PlanError};
use harness::series::JobSeries;
use harness::target::{EmbeddedNode, Target, TargetError};
use harness::verdict::Limits;
use harness::{FamilyPlan, Options, Outcome, Prepare, RunContext, RunError, RunHeader, Step};
use loadgen::genio::{self, IoError, IoTarget, RunStats, Workload};

use super::cli::{csv_paths, RampArgs};
use super::plan::{Overrides, RampPlan, Settings, System};
use super::render::{render, run_line};
use super::results::{csv, table, Row, CSV_HEADER};

/// A ramp plan as steps (one per run), and what it has measured so far.
pub struct RampRun {
    pub plan: RampPlan,
    /// Each system's summary.csv (the CLI asks for them).
    csv: Vec<PathBuf>,
    csv_error: Option<String>,
    rt: Option<tokio::runtime::Runtime>,
    targets: Vec<Arc<dyn IoTarget>>,
    /// Where each system's I/O goes.
    addrs: Vec<String>,
    /// Per system, its runs so far.
    rows: Vec<Vec<Row>>,
    seq: u32,
}

impl std::fmt::Debug for RampRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RampRun")
            .field("plan", &self.plan)
            .field("csv", &self.csv)
            .field("addrs", &self.addrs)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl RampRun {
    pub fn new(plan: RampPlan) -> RampRun {
        let n = plan.systems.len();
        RampRun {
            plan,
            csv: Vec::new(),
            csv_error: None,
            rt: None,
            targets: Vec::new(),
            addrs: Vec::new(),
            rows: vec![Vec::new(); n],
            seq: 0,
        }
    }

    /// Each system's runs so far (plan order).
    pub fn rows(&self) -> &[Vec<Row>] {
        &self.rows
    }

    fn runtime(&self) -> Result<&tokio::runtime::Runtime, RunError> {
        self.rt
            .as_ref()
            .ok_or_else(|| RunError::Plan("ramp: the run was not prepared".into()))
    }
}

impl RampRun {
    /// The systems whose own target is a path on this machine, with it.
    fn system_paths(&self) -> Vec<(&System, PathBuf)> {
        self.plan
            .systems
            .iter()
            .filter_map(|s| match s.target.as_deref().map(Target::parse) {
                Some(Ok(Target::Path(p))) => Some((s, p)),
                _ => None,
            })
            .collect()
    }
}

impl FamilyPlan for RampRun {
    /// Each system's own file: the path itself, or the generator's file in a directory
    /// (a block device: none).
    fn own_files(&self) -> Vec<PathBuf> {
        self.system_paths()
            .into_iter()
            .filter_map(|(_, p)| match std::fs::metadata(&p) {
                Ok(m) if m.is_dir() => Some(p.join(genio::file::DIR_FILE)),
                Ok(m) if !m.is_file() => None,
                _ => Some(p),
            })
            .collect()
    }

    fn volumes_used(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for s in self.plan.systems.iter().filter(|s| s.target.is_none()) {
            if let Some(name) = &s.volume {
                if !v.contains(name) {
                    v.push(name.clone());
                }
            }
        }
        v
    }

    fn configure(&mut self, common: &mut Common, opts: &Options) -> Result<(), PlanError> {
        if !opts.clients.is_empty() {
            return Err(PlanError(
                "--client: the ramp profile runs qoslab's own generator, not fio; run qoslab on each load generator instead".into(),
            ));
        }
        if opts.ramp.is_some() {
            return Err(PlanError(
                "--ramp is fio's ramp time; the ramp profile has none (see --runs, --runtime, --scale)".into(),
            ));
        }
        let args = opts.args.map(crate::family_flags::<RampArgs>).transpose()?;
        let from_profile = common.origin == super::PROFILE_ORIGIN;
        if from_profile && args.as_ref().is_none_or(|a| a.min_iops.is_none()) {
            return Err(PlanError(
                "--profile ramp needs --min-iops (and usually --max-iops), e.g. --min-iops 1000 --max-iops 10000".into(),
            ));
        }
        let overrides = match &args {
            Some(a) => a.overrides(opts.runtime, opts.scale),
            None => Overrides {
                scale: opts.scale,
                ..Overrides::default()
            },
        };
        self.plan
            .apply(&overrides)
            .map_err(|m| PlanError(format!("{}: {m}", common.origin)))?;
        self.rows = vec![Vec::new(); self.plan.systems.len()];
        // A system's own path gets the --target rules (never damaged by surprise), checked
        // before anything is opened or stored; a directory's generator file likewise.
        for (s, p) in self.system_paths() {
            let what = format!("{}: system {:?}: target", common.origin, s.name);
            harness::target_files::admit_path(&p, opts.allow, &what).map_err(PlanError)?;
            let file = p.join(genio::file::DIR_FILE);
            match std::fs::metadata(&file) {
                Ok(m) if p.is_dir() && !opts.allow.overwrite => {
                    return Err(PlanError(harness::target_files::existing(
                        &file,
                        m.len(),
                        &what,
                        " (the generator's file in a directory)",
                    )))
                }
                _ => {}
            }
        }
        // summary.csv is the command line's, written (its header) once the run's targets
        // are admitted: a refused or dry run leaves none.
        self.csv = match &args {
            Some(a) => csv_paths(a.summary_csv.as_deref(), &self.plan.systems),
            None => Vec::new(),
        };
        Ok(())
    }

    fn banner(&self, common: &Common, target: &Target, db: &Path) -> String {
        let s = &self.plan.settings;
        format!(
            "qoslab bench: ramp {} ({} system(s) × {} run(s) × {:.1} s, ~{:.0} s) on {}; results: {}",
            common.name,
            self.plan.systems.len(),
            s.runs,
            s.runtime_s(),
            f64::from(s.runs) * (s.runtime_s() + 0.2),
            target.describe(),
            db.display()
        )
    }

    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError> {
        let rp = &self.plan;
        let s = &rp.settings;
        let addrs = addresses(&ctx.common.origin, rp, ctx.target, ctx.node)?;
        // Fail now, not after the ramp, when a summary.csv cannot be written.
        for p in &self.csv {
            std::fs::write(p, format!("{CSV_HEADER}\n")).map_err(|e| {
                RunError::Plan(format!("--summary-csv: writing {}: {e}", p.display()))
            })?;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .thread_name(format!("{}-ramp", toolsets::GENERATOR_THREADS))
            .enable_all()
            .build()
            .map_err(|e| RunError::Target(TargetError::Node(format!("runtime: {e}"))))?;
        let bs = u64::from(s.block_size);
        let targets: Vec<Arc<dyn IoTarget>> = rt.block_on(async {
            let mut v = Vec::new();
            for (sys, a) in rp.systems.iter().zip(&addrs) {
                let need = s.span + s.dirty_blocks_at(sys.max_iops) * bs + 4096;
                let t = genio::open(a, need).await.map_err(|e| {
                    RunError::Target(TargetError::Invalid(
                        a.clone(),
                        format!("system {:?}: {e}", sys.name),
                    ))
                })?;
                v.push(t);
            }
            Ok::<_, RunError>(v)
        })?;
        // Check every run's layout before anything is stored.
        let n = rp.systems.len();
        let mut ends = Vec::new();
        for (i, (sys, t)) in rp.systems.iter().zip(&targets).enumerate() {
            let w = workload(s, sys, i, n, 0, t.size()).map_err(RunError::Plan)?;
            ends.push((w.journal_offset + s.dirty_blocks_at(sys.max_iops) * bs).min(t.size()));
        }
        if s.prefill {
            ctx.ui.print(&format!(
                "prefilling {} MiB of each system's volume (span and journal, once; --no-prefill skips)\n",
                ends.iter().copied().max().unwrap_or(0) >> 20
            ));
            rt.block_on(async {
                let handles: Vec<_> = targets
                    .iter()
                    .zip(&ends)
                    .map(|(t, end)| tokio::spawn(genio::prefill(t.clone(), *end, 1 << 20, 8)))
                    .collect();
                for (h, a) in handles.into_iter().zip(&addrs) {
                    h.await
                        .map_err(|e| IoError::Io(e.to_string()))
                        .and_then(|r| r)
                        .map_err(|e| {
                            RunError::Target(TargetError::Invalid(a.clone(), e.to_string()))
                        })?;
                }
                Ok::<_, RunError>(())
            })?;
        }
        let describe = if n == 1 {
            targets[0].describe()
        } else {
            targets
                .iter()
                .zip(&rp.systems)
                .map(|(t, s)| format!("{}: {}", s.name, t.describe()))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let header = RunHeader {
            target: describe,
            executor: "qoslab genio (ramp profile)".into(),
            runtime_s: s.runtime_s(),
            ramp_s: 0.0,
            fio_version: Some("not used (qoslab genio)".into()),
        };
        self.rt = Some(rt);
        self.targets = targets;
        self.addrs = addrs;
        Ok(header)
    }

    fn steps(&self) -> Vec<Step> {
        let s = &self.plan.settings;
        (0..s.runs)
            .map(|k| Step {
                label: format!(
                    "ramp run {} ({} system(s) at once)",
                    k + 1,
                    self.plan.systems.len()
                ),
                expected_secs: s.runtime_s(),
            })
            .collect()
    }

    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let k = index as u32;
        let rp = &self.plan;
        let s = &rp.settings;
        let bs = u64::from(s.block_size);
        let n = rp.systems.len();
        let mut jobs = Vec::new();
        let mut loads = Vec::new();
        let first_seq = self.seq as usize + 1;
        for (i, (sys, t)) in rp.systems.iter().zip(&self.targets).enumerate() {
            let w = workload(s, sys, i, n, k, t.size()).map_err(RunError::Plan)?;
            self.seq += 1;
            let tgt = sys.target_iops(k, s.runs);
            jobs.push(ctx.begin_job(
                self.seq,
                &sys.name,
                &format!("run{:02}", k + 1),
                sys.volume.as_deref(),
                k + 1,
                &describe_job(sys, &self.addrs[i], &w, tgt),
            )?);
            loads.push(w);
        }
        // The node's samples and the hosts' tool sets over the run, once for every system.
        let recording = ctx
            .recorder
            .start(first_seq, ctx.node, ctx.target, 0.0, true);
        let stats = self.generate(&loads)?;
        let series = recording.finish(jobs[0]);
        let devices = harness::assessment::devices(ctx.node, ctx.target);
        for (i, sys) in rp.systems.iter().enumerate() {
            let (w, st) = (&loads[i], &stats[i]);
            let mut row = Row::new(k + 1, sys.target_iops(k, s.runs), w, st, s);
            // The system's share of the recording: its volume's node samples, the hosts.
            let volume = volume_of(sys, ctx.target);
            let own = JobSeries {
                job_id: jobs[i],
                fio: Vec::new(),
                node: series
                    .node
                    .iter()
                    .filter(|n| volume.as_deref().is_none_or(|v| n.volume == v))
                    .cloned()
                    .collect(),
                // Node-wide like the hosts: every system shares the provisioned file system.
                resources: series.resources.clone(),
                hosts: series.hosts.clone(),
                ..JobSeries::default()
            };
            ctx.add_series(&own)?;
            let limits = limits_of(sys, ctx.node, ctx.target);
            let diagnosis = diagnose(&own, &row, volume.as_deref(), limits.as_ref(), &devices, s);
            let v = row.judge(s, &diagnosis);
            let raw = serde_json::json!({
                "schema": "qoslab.genio.run/1",
                "system": sys.name,
                "workload": w,
                "stats": st,
                "row": row,
            });
            let out = FioOutput {
                fio_version: "qoslab genio".into(),
                jobs: vec![JobResult {
                    jobname: format!("run{:02}", k + 1),
                    client: None,
                    error: if st.errors > 0 { 5 } else { 0 },
                    read: dir_stats(st.reads, st.window_s, st.read_lat_mean_s, bs),
                    write: dir_stats(
                        st.cycles.iter().map(|c| c.writes).sum(),
                        st.window_s,
                        st.write_lat_mean_s(),
                        bs,
                    ),
                }],
                raw: raw.to_string(),
                stderr: String::new(),
            };
            ctx.finish_job(jobs[i], Ok(&out), &v)?;
            ctx.store.set_assessment(jobs[i], Some(&diagnosis), None)?;
            self.rows[i].push(row);
            ctx.put_table(&table(&sys.name, &self.rows[i], s))?;
            if let Some(path) = self.csv.get(i) {
                if let Err(e) = std::fs::write(path, csv(&self.rows[i])) {
                    self.csv_error = Some(format!("writing {}: {e}", path.display()));
                }
            }
            if let Some(r) = self.rows[i].last() {
                ctx.ui
                    .print(&format!("{}\n", run_line(&sys.name, s.runs, r)));
            }
        }
        Ok(())
    }

    fn finish(&mut self, _ctx: &mut RunContext) -> Result<(), RunError> {
        self.targets.clear();
        // Let the connections say goodbye before the node stops.
        if let Some(rt) = self.rt.take() {
            rt.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
        }
        Ok(())
    }

    fn summary(&self, _outcome: &Outcome) -> Result<String, RunError> {
        if let Some(e) = &self.csv_error {
            return Err(RunError::Plan(format!("summary.csv: {e}")));
        }
        let s = &self.plan.settings;
        let mut out = String::new();
        for (i, (sys, rows)) in self.plan.systems.iter().zip(&self.rows).enumerate() {
            let addr = self.addrs.get(i).map(String::as_str).unwrap_or("-");
            out.push_str(&format!("\n{}\n", render(sys, addr, rows, s)));
            if let Some(p) = self.csv.get(i) {
                out.push_str(&format!("summary.csv: {}\n", p.display()));
            }
        }
        Ok(out)
    }
}

impl RampRun {
    /// Runs every system's workload at once, on a thread named for the tool sets.
    fn generate(&self, loads: &[Workload]) -> Result<Vec<RunStats>, RunError> {
        let rt = self.runtime()?;
        let targets = &self.targets;
        let run = move || {
            rt.block_on(async {
                let handles: Vec<_> = targets
                    .iter()
                    .zip(loads)
                    .map(|(t, w)| {
                        let (t, w) = (t.clone(), w.clone());
                        tokio::spawn(async move { genio::run_once(t, &w).await })
                    })
                    .collect();
                let mut out = Vec::new();
                for h in handles {
                    out.push(h.await.unwrap_or_else(|e| RunStats {
                        errors: 1,
                        first_error: Some(format!("generator task: {e}")),
                        ..Default::default()
                    }));
                }
                out
            })
        };
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name(format!("{}-ramp", toolsets::GENERATOR_THREADS))
                .spawn_scoped(scope, run)
                .map_err(|e| RunError::Plan(format!("ramp: generator thread: {e}")))?
                .join()
                .map_err(|_| RunError::Plan("ramp: the generator thread panicked".into()))
        })
    }
}

/// The volume a system's I/O goes to, as the node names it (None: not a qoslab volume).
fn volume_of(sys: &System, target: &Target) -> Option<String> {
    match (&sys.target, target) {
        (Some(_), _) => None,
        (None, Target::NodeVolume { volume, .. }) => Some(volume.clone()),
        (None, Target::Embedded | Target::NodeVolumes { .. }) => sys.volume.clone(),
        _ => None,
    }
}

/// The effective limits of a system's volume, when a qoslab node serves it.
fn limits_of(sys: &System, node: Option<&EmbeddedNode>, target: &Target) -> Option<Limits> {
    if sys.target.is_some() {
        return None;
    }
    match (node, &sys.volume) {
        (Some(n), Some(v)) => n.limits(v),
        _ => target.limits_for(sys.volume.as_deref()),
    }
}

/// What limited one system's run: the generator's own figures stand for fio's (its mean
/// rate over the run, reads and writes), the node's samples of the volume give the QoS
/// waits, the tool sets the hosts over the run's window.
fn diagnose(
    series: &JobSeries,
    row: &Row,
    volume: Option<&str>,
    limits: Option<&Limits>,
    devices: &[String],
    s: &Settings,
) -> assess::Diagnosis {
    let to_ms = (s.runtime_s() * 1000.0) as u64;
    assess::diagnose(&assess::Inputs {
        fio: assess::FioFigures {
            iops: row.total_iops,
            bw_bytes: row.total_iops * f64::from(s.block_size),
        },
        node: harness::assessment::node_figures(series, volume, limits, None),
        hosts: series
            .hosts
            .iter()
            .filter(|h| !h.samples.is_empty())
            .map(|h| assess::figures::summarize(h, 0, to_ms, devices))
            .collect(),
    })
}

/// Where each system's I/O goes.
fn addresses(
    origin: &str,
    rp: &RampPlan,
    target: &Target,
    node: Option<&EmbeddedNode>,
) -> Result<Vec<String>, RunError> {
    let mut out = Vec::new();
    for s in &rp.systems {
        let a = match (&s.target, target, node) {
            (Some(t), _, _) => t.clone(),
            (None, Target::Embedded, Some(n)) => {
                let v = s.volume.as_deref().ok_or_else(|| {
                    RunError::Plan(format!(
                        "{}: system {:?}: no volume (the embedded node needs volume = NAME)",
                        origin, s.name
                    ))
                })?;
                if n.iscsi_url(v).is_some() {
                    return Err(RunError::Plan(format!(
                        "{origin}: system {:?}: volume {v:?} is a LUN ([[iscsi.lun]]): the ramp's \
                         generator speaks NBD and files, not iSCSI (drop the LUN, or run the \
                         volume's work as a [[workload]])",
                        s.name
                    )));
                }
                n.uri(v)
            }
            (None, Target::Nbd(u), _) | (None, Target::NodeVolume { uri: u, .. }, _) => u.clone(),
            (None, t @ Target::NodeVolumes { .. }, _) => t
                .options_for(s.volume.as_deref())
                .into_iter()
                .find(|(k, _)| k == "uri")
                .map(|(_, u)| u)
                .ok_or_else(|| {
                    RunError::Plan(format!(
                        "{}: system {:?}: no volume of the node (give it volume = NAME)",
                        origin, s.name
                    ))
                })?,
            (None, Target::Path(p), _) => p.display().to_string(),
            (None, Target::Nfs(u), _) => {
                return Err(RunError::Plan(format!(
                    "{origin}: --target {u}: the ramp's generator speaks NBD and files, not NFS (mount the export and give --target DIR)"
                )))
            }
            (None, Target::Iscsi(u), _) => {
                return Err(RunError::Plan(format!(
                    "{origin}: --target {u}: the ramp's generator speaks NBD and files, not iSCSI (log in with the kernel's initiator and give --target /dev/sdX)"
                )))
            }
            (None, Target::Devices(_), _) => {
                return Err(RunError::Plan(format!(
                    "{}: a ramp takes one target (give each [[system]] its own target = PATH)",
                    origin
                )))
            }
            (None, Target::Node(n), _) => {
                return Err(RunError::Plan(format!(
                    "{}: --node {} needs --volume NAME for a ramp",
                    origin,
                    n.url()
                )))
            }
            (None, Target::Embedded, None) => {
                return Err(RunError::Plan(format!(
                    "{}: the embedded node needs at least one [[volume]] in the plan (or pass --target URI|PATH)",
                    origin
                )))
            }
        };
        out.push(a);
    }
    let shared = out.len() > 1
        && rp
            .systems
            .iter()
            .any(|s| s.target.is_none() && s.volume.is_none());
    if shared {
        return Err(RunError::Plan(format!(
            "{}: several systems would share the target {}: give each [[system]] its own volume (embedded node) or target = URI|PATH",
            origin,
            target.describe()
        )));
    }
    Ok(out)
}

/// The generator's workload for system `i` of `n`, run `k`, on a target of `size` bytes.
pub fn workload(
    s: &Settings,
    system: &System,
    i: usize,
    n: usize,
    k: u32,
    size: u64,
) -> Result<Workload, String> {
    let bs = u64::from(s.block_size);
    let target = system.target_iops(k, s.runs);
    let journal_max = s.dirty_blocks_at(system.max_iops) * bs;
    let journal_max = journal_max.div_ceil(4096) * 4096;
    let want_span = s.span / bs * bs;
    let span = if size >= want_span + journal_max {
        want_span
    } else {
        size.saturating_sub(journal_max) / bs * bs
    };
    if span < bs * 16 {
        return Err(format!(
            "system {:?}: the target has {size} bytes, too small for a journal of {journal_max} bytes (dirty blocks × block size at {} IOPS) and at least 16 blocks of data",
            system.name, system.max_iops
        ));
    }
    let cycle = Duration::from_secs_f64(s.cycle_s());
    let offset = if s.stagger && n > 1 {
        cycle * i as u32 / n as u32
    } else {
        Duration::ZERO
    };
    Ok(Workload {
        read_iops: target as f64 * s.read_pct / 100.0,
        block_size: s.block_size,
        dirty_blocks: s.dirty_blocks_at(target),
        cycle,
        cycle_offset: offset,
        runtime: Duration::from_secs_f64(s.runtime_s()),
        write_qd: s.write_qd,
        wij_block: s.wij_block,
        wij_qd: s.wij_qd,
        read_inflight: s.read_inflight,
        span,
        journal_offset: span,
        seed: 0x9e37_79b9 ^ ((i as u64) << 32) ^ u64::from(k),
    })
}

/// The job's description stored in `jobs.jobfile` (the generator has no job file).
fn describe_job(system: &System, addr: &str, w: &Workload, target: u64) -> String {
    format!(
        "# qoslab genio (the ramp profile), not fio\nsystem = {:?}\naddress = {:?}\ntarget_iops = {target}\nworkload = {}\n",
        system.name,
        addr,
        serde_json::to_string(w).unwrap_or_default()
    )
}

fn dir_stats(ios: u64, window_s: f64, lat_s: f64, bytes_per_io: u64) -> DirStats {
    let iops = if window_s > 0.0 {
        ios as f64 / window_s
    } else {
        0.0
    };
    DirStats {
        iops,
        iops_mean: iops,
        bw_bytes: (iops * bytes_per_io as f64) as u64,
        bw_mean_bytes: iops * bytes_per_io as f64,
        io_bytes: ios * bytes_per_io,
        total_ios: ios,
        runtime_ms: (window_s * 1e3).round() as u64,
        lat_mean_ns: lat_s * 1e9,
        clat_mean_ns: lat_s * 1e9,
        ..Default::default()
    }
}
