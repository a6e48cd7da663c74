//! The `isolation` profile: do floors protect volumes from a noisy neighbour?
//!
//! Seed 001's story on an emulated controller: `protected` volumes under a floor policy,
//! each driven at a constant rate equal to its floor (fio `rate_iops`), beside one bully
//! volume with no policy whose offered load ramps from 1x to 2x the capacity the floors
//! leave over. The node is an embedded qoslab node with `[capacity]` declared, so the
//! contention is the same on any machine.
//!
//! The run happens twice: with floors (mClock) and as the control (the same node in FIFO
//! discipline: arrival order, floors ignored, as an array without floor QoS). Per step
//! and volume it records IOPS, mean and p99 latency, and the node's QoS queue times
//! (ceiling and floor waits, per request, from the node's own counters).
//!
//! Verdicts (floors run, each protected volume, every step): IOPS ≥ 98% of the target,
//! and p99 latency ≤ 2× the first step's. The control must show the bully mattering: a
//! protected volume below 98% of its target at some step (otherwise the scenario proves
//! nothing, and that verdict fails saying so).

use std::sync::atomic::Ordering::Relaxed;

use serde_json::json;
use storage_node::NodeConfig;

use crate::fio::{Executor, JobFile, Section};
use crate::plan::fio_time;
use crate::recording::SeriesRecorder;
use crate::result::{FioOutput, JobResult};
use crate::run::RunError;
use crate::store::{Env, NewRun, RunRecord, Store, SummaryTable};
use crate::target::EmbeddedNode;
use crate::target::Target;
use crate::verdict::{Expectation, Verdict};

/// What to run. [`IsolationSpec::default`] is seed 001 scaled to a laptop.
#[derive(Debug, Clone, PartialEq)]
pub struct IsolationSpec {
    /// The emulated controller's capacity, IOPS.
    pub capacity_iops: u64,
    /// Number of protected volumes.
    pub protected: usize,
    /// Each protected volume's floor, and the rate it is driven at.
    pub floor_iops: u64,
    /// fio iodepth of each protected volume.
    pub protected_qd: u32,
    /// fio iodepth of the bully.
    pub bully_qd: u32,
    /// Number of steps from 1x to `max_load` x the remaining capacity.
    pub steps: u32,
    pub max_load: f64,
    /// fio block size (bytes) and rw mode, for every volume.
    pub bs: u64,
    pub rw: String,
    /// Per step, seconds.
    pub runtime: f64,
    pub ramp: f64,
    /// Also run the control (FIFO, no floors).
    pub control: bool,
}

impl Default for IsolationSpec {
    fn default() -> Self {
        IsolationSpec {
            capacity_iops: 20_000,
            protected: 2,
            floor_iops: 5_000,
            protected_qd: 16,
            bully_qd: 64,
            steps: 5,
            max_load: 2.0,
            bs: 4096,
            rw: "randread".into(),
            runtime: 5.0,
            ramp: 1.0,
            control: true,
        }
    }
}

/// Which run of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// mClock: floors enforced.
    Floors,
    /// FIFO: the same node without floor QoS.
    Control,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Floors => "floors",
            Mode::Control => "control",
        }
    }
}

/// One volume in one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub mode: Mode,
    pub step: u32,
    /// Bully's offered load as a multiple of the remaining capacity.
    pub bully_load: f64,
    pub volume: String,
    pub protected: bool,
    /// Offered IOPS (the floor for protected volumes, the step's load for the bully).
    pub target_iops: u64,
    pub iops: f64,
    pub lat_mean_ms: f64,
    pub lat_p99_ms: f64,
    /// Mean time per request queued for the volume's own ceiling / for the node.
    pub ceiling_wait_ms: f64,
    pub floor_wait_ms: f64,
    /// Mean time per request from arrival at the node to its reply (the node's own
    /// counters: fio's latency minus this is the client, the network and the CPU).
    pub node_lat_ms: f64,
    /// Protected: both step verdicts held (the control's rows say whether they would
    /// have). Bully: always true.
    pub pass: bool,
}

/// Columns of the stored summary table (`kind = "isolation"`).
pub const COLUMNS: [&str; 13] = [
    "mode",
    "step",
    "bully_load",
    "volume",
    "role",
    "target_iops",
    "iops",
    "lat_mean_ms",
    "lat_p99_ms",
    "ceiling_wait_ms",
    "floor_wait_ms",
    "pass",
    "node_lat_ms",
];

/// The metric of the per-step p99 verdicts.
const P99_METRIC: &str = "lat_p99_us";

/// What a finished scenario amounts to.
#[derive(Debug)]
pub struct IsolationOutcome {
    pub record: RunRecord,
    pub rows: Vec<Row>,
    pub failed_verdicts: usize,
    pub failed_jobs: usize,
}

impl IsolationOutcome {
    pub fn passed(&self) -> bool {
        self.failed_verdicts == 0 && self.failed_jobs == 0
    }

    /// The floors held: every IOPS verdict and the control's own verdict passed and no
    /// fio run failed (the p99 verdicts aside).
    pub fn floors_held(&self) -> bool {
        self.failed_jobs == 0
            && self
                .record
                .jobs
                .iter()
                .flat_map(|j| &j.verdicts)
                .all(|v| v.passed || v.expectation.starts_with(P99_METRIC))
    }
}

impl IsolationSpec {
    /// Check the spec once, at the edge; messages name the option and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        if !(100..=10_000_000).contains(&self.capacity_iops) {
            return Err(format!(
                "capacity {} IOPS: allowed 100 to 10,000,000",
                self.capacity_iops
            ));
        }
        if !(1..=16).contains(&self.protected) {
            return Err(format!(
                "protected volumes {}: allowed 1 to 16",
                self.protected
            ));
        }
        let floors = self.floor_iops * self.protected as u64;
        if self.floor_iops == 0 || floors >= self.capacity_iops {
            return Err(format!(
                "floors {} x {} IOPS = {floors} IOPS must be above 0 and leave capacity for the bully (capacity {} IOPS)",
                self.protected, self.floor_iops, self.capacity_iops
            ));
        }
        for (what, qd) in [
            ("protected iodepth", self.protected_qd),
            ("bully iodepth", self.bully_qd),
        ] {
            if !(1..=1024).contains(&qd) {
                return Err(format!("{what} {qd}: allowed 1 to 1024"));
            }
        }
        if !(1..=20).contains(&self.steps) {
            return Err(format!("steps {}: allowed 1 to 20", self.steps));
        }
        if !(self.max_load >= 1.0 && self.max_load <= 10.0) {
            return Err(format!("max load {}x: allowed 1 to 10", self.max_load));
        }
        if !(512..=(4 << 20)).contains(&self.bs) || !self.bs.is_multiple_of(512) {
            return Err(format!(
                "block size {}: allowed 512 B to 4 MiB, a multiple of 512",
                self.bs
            ));
        }
        if !matches!(
            self.rw.as_str(),
            "randread" | "randwrite" | "randrw" | "read" | "write" | "rw"
        ) {
            return Err(format!(
                "rw {:?}: allowed randread, randwrite, randrw, read, write, rw",
                self.rw
            ));
        }
        if !(self.runtime > 0.0 && self.runtime <= 3600.0 && (0.0..=600.0).contains(&self.ramp)) {
            return Err("runtime must be in (0, 3600] s and ramp in [0, 600] s".into());
        }
        Ok(())
    }

    /// Capacity left after the floors.
    pub fn remaining(&self) -> u64 {
        self.capacity_iops - self.floor_iops * self.protected as u64
    }

    /// The bully's load per step, as multiples of the remaining capacity.
    pub fn loads(&self) -> Vec<f64> {
        let n = self.steps.max(1);
        (0..n)
            .map(|k| {
                if n == 1 {
                    self.max_load
                } else {
                    1.0 + (self.max_load - 1.0) * f64::from(k) / f64::from(n - 1)
                }
            })
            .collect()
    }

    /// Names of the protected volumes.
    pub fn protected_names(&self) -> Vec<String> {
        (1..=self.protected)
            .map(|i| format!("protected-{i}"))
            .collect()
    }

    /// The embedded node of one mode.
    pub fn node_toml(&self, mode: Mode) -> String {
        let mut t = format!(
            "[capacity]\niops = {}\ndiscipline = \"{}\"\n\n[[policy]]\nname = \"floor\"\nfixed = {{ min_throughput_iops = {} }}\n",
            self.capacity_iops,
            match mode {
                Mode::Floors => "mclock",
                Mode::Control => "fifo",
            },
            self.floor_iops
        );
        for v in self.protected_names() {
            t.push_str(&format!(
                "\n[[volume]]\nname = \"{v}\"\nsize = \"10GB\"\nsnapshot_reserve_percent = 0\npolicy = \"floor\"\n"
            ));
        }
        t.push_str(
            "\n[[volume]]\nname = \"bully\"\nsize = \"10GB\"\nsnapshot_reserve_percent = 0\n",
        );
        t
    }

    /// A one-paragraph description (stored as the run's plan text).
    pub fn describe(&self) -> String {
        format!(
            "# qoslab bench --profile isolation\n# {} protected volume(s) at a {} IOPS floor (driven at that rate, iodepth {}), \
             a bully (no policy, iodepth {}) offered {}..{} IOPS in {} step(s) ({:.2}x..{:.2}x the remaining {} IOPS), \
             {} {} B, {} s per step (+{} s ramp), emulated controller {} IOPS; control run (FIFO): {}\n\n{}",
            self.protected,
            self.floor_iops,
            self.protected_qd,
            self.bully_qd,
            self.bully_iops(self.loads()[0]),
            self.bully_iops(self.max_load),
            self.steps,
            self.loads()[0],
            self.max_load,
            self.remaining(),
            self.rw,
            self.bs,
            self.runtime,
            self.ramp,
            self.capacity_iops,
            if self.control { "yes" } else { "no" },
            self.node_toml(Mode::Floors)
        )
    }

    fn bully_iops(&self, load: f64) -> u64 {
        (self.remaining() as f64 * load).round() as u64
    }

    /// The fio job file of one step (`logs`: ask each job for its time-series logs,
    /// numbered from `first_seq`).
    pub fn job_file(
        &self,
        node: &EmbeddedNode,
        load: f64,
        logs: Option<(&SeriesRecorder, usize)>,
    ) -> JobFile {
        let mut f = JobFile::new();
        f.global.set("ioengine", "nbd");
        f.global.set("rw", self.rw.clone());
        f.global.set("bs", self.bs.to_string());
        f.global.set("time_based", "1");
        f.global.set("runtime", fio_time(self.runtime));
        if self.ramp > 0.0 {
            f.global.set("ramp_time", fio_time(self.ramp));
        }
        for v in self.protected_names() {
            let mut s = Section::new(v.clone());
            s.set("uri", node.uri(&v));
            s.set("iodepth", self.protected_qd.to_string());
            s.set("rate_iops", self.floor_iops.to_string());
            f.jobs.push(s);
        }
        let mut s = Section::new("bully");
        s.set("uri", node.uri("bully"));
        s.set("iodepth", self.bully_qd.to_string());
        s.set("rate_iops", self.bully_iops(load).to_string());
        f.jobs.push(s);
        if let Some((rec, first)) = logs {
            for (i, s) in f.jobs.iter_mut().enumerate() {
                rec.add_section_log_options(first + i, s);
            }
        }
        f
    }
}

/// Told about each step as the scenario goes.
pub trait Progress {
    fn step_started(&mut self, _mode: Mode, _step: u32, _steps: u32, _load: f64) {}
    fn step_finished(&mut self, _rows: &[Row]) {}
}

/// Queue-time counters of one volume.
#[derive(Clone, Copy, Default)]
struct Counters {
    ops: u64,
    ceiling_ns: u64,
    floor_ns: u64,
    lat_ns: u64,
}

fn counters(node: &EmbeddedNode, vol: &str) -> Counters {
    node.node()
        .volume(vol)
        .map(|v| Counters {
            ops: v.stats.total_ops(),
            ceiling_ns: v.stats.ceiling_wait_ns.load(Relaxed),
            floor_ns: v.stats.floor_wait_ns.load(Relaxed),
            lat_ns: v.stats.latency.iter().map(|h| h.sum_ns()).sum(),
        })
        .unwrap_or_default()
}

fn p99_ns(r: &JobResult) -> u64 {
    r.read.p99_ns.max(r.write.p99_ns)
}

/// Run the scenario: the floors run, then the control; everything is stored as it comes.
pub fn run(
    spec: &IsolationSpec,
    exec: &dyn Executor,
    store: &mut Store,
    env: &Env,
    progress: &mut dyn Progress,
) -> Result<IsolationOutcome, RunError> {
    spec.validate().map_err(RunError::Plan)?;
    let run = store.begin_run(&NewRun {
        name: "isolation",
        plan_origin: "--profile isolation",
        plan_text: &spec.describe(),
        target: &format!(
            "embedded node, emulated controller {} IOPS",
            spec.capacity_iops
        ),
        executor: &exec.describe(),
        runtime_s: spec.runtime,
        ramp_s: spec.ramp,
        env,
    })?;
    let mut modes = vec![Mode::Floors];
    if spec.control {
        modes.push(Mode::Control);
    }
    let (mut rows, mut failed_verdicts, mut failed_jobs, mut seq) = (Vec::new(), 0, 0, 0u32);
    let recorder = SeriesRecorder::new();
    let mut control_worst: Option<(f64, String)> = None;
    let mut last_control_job: Option<(i64, FioOutput)> = None;
    for mode in modes {
        let cfg = NodeConfig::parse(&spec.node_toml(mode), "isolation profile")
            .map_err(|e| RunError::Plan(e.to_string()))?;
        let node = EmbeddedNode::start(&cfg)?;
        if mode == Mode::Floors {
            crate::run::record_setup(store, run, Some(&node), Some(&cfg), &Target::Embedded)?;
        }
        let mut first_p99: Vec<Option<u64>> = vec![None; spec.protected];
        let loads = spec.loads();
        for (k, &load) in loads.iter().enumerate() {
            let step = k as u32 + 1;
            progress.step_started(mode, step, loads.len() as u32, load);
            let first = seq as usize + 1;
            let file = spec.job_file(&node, load, Some((&recorder, first)));
            let text = file.render();
            let names: Vec<String> = file.jobs.iter().map(|s| s.name.clone()).collect();
            let mut ids = Vec::new();
            for name in &names {
                seq += 1;
                let id = store.begin_job(
                    run,
                    seq,
                    &format!("isolation-{}", mode.as_str()),
                    &format!("{}/step{step}/{name}", mode.as_str()),
                    Some(name),
                    step,
                    &text,
                )?;
                ids.push(id);
            }
            let before: Vec<Counters> = names.iter().map(|n| counters(&node, n)).collect();
            // fio's logs for every job; the node's samples (every volume) with the bully's,
            // so its chart shows protected vs bully over time.
            let recordings: Vec<_> = (0..names.len())
                .map(|i| {
                    if i + 1 == names.len() {
                        recorder.start(first + i, Some(&node), &Target::Embedded, spec.ramp)
                    } else {
                        recorder.start_logs(first + i)
                    }
                })
                .collect();
            let out = exec.run(&file);
            let after: Vec<Counters> = names.iter().map(|n| counters(&node, n)).collect();
            for (rec, id) in recordings.into_iter().zip(&ids) {
                let series = rec.finish(*id);
                if !series.is_empty() {
                    store.add_series(&series)?;
                }
            }
            let out = match out {
                Ok(o) => o,
                Err(e) => {
                    let msg = e.to_string();
                    failed_jobs += names.len();
                    for id in ids {
                        store.finish_job(id, Err(&msg), &[])?;
                    }
                    continue;
                }
            };
            let mut step_rows = Vec::new();
            for (i, name) in names.iter().enumerate() {
                let r = out.job(name).cloned().unwrap_or_default();
                let protected = name != "bully";
                let target = if protected {
                    spec.floor_iops
                } else {
                    spec.bully_iops(load)
                };
                let d_ops = after[i].ops.saturating_sub(before[i].ops).max(1) as f64;
                let ceiling_ms =
                    after[i].ceiling_ns.saturating_sub(before[i].ceiling_ns) as f64 / d_ops / 1e6;
                let floor_ms =
                    after[i].floor_ns.saturating_sub(before[i].floor_ns) as f64 / d_ops / 1e6;
                let node_lat_ms =
                    after[i].lat_ns.saturating_sub(before[i].lat_ns) as f64 / d_ops / 1e6;
                let mut verdicts = Vec::new();
                if protected {
                    let mut exp = vec![format!("iops >= {} * 0.98", spec.floor_iops)];
                    match first_p99[i] {
                        None => first_p99[i] = Some(p99_ns(&r)),
                        Some(p) => {
                            exp.push(format!("{P99_METRIC} <= {:.1}us", 2.0 * p as f64 / 1000.0))
                        }
                    }
                    for e in exp {
                        let v = Expectation::parse(&e)
                            .map(|x| x.check(&r, None))
                            .map_err(|e| RunError::Plan(e.to_string()))?;
                        verdicts.push(v);
                    }
                    if mode == Mode::Control {
                        let ratio = r.iops() / spec.floor_iops as f64;
                        if control_worst.as_ref().is_none_or(|(w, _)| ratio < *w) {
                            control_worst = Some((ratio, format!("{name} at step {step}")));
                        }
                    }
                }
                if r.error != 0 {
                    failed_jobs += 1;
                }
                let pass = verdicts.iter().all(|v| v.passed) && r.error == 0;
                let row = Row {
                    mode,
                    step,
                    bully_load: load,
                    volume: name.clone(),
                    protected,
                    target_iops: target,
                    iops: r.iops(),
                    lat_mean_ms: r.lat_mean_ns() / 1e6,
                    lat_p99_ms: p99_ns(&r) as f64 / 1e6,
                    ceiling_wait_ms: ceiling_ms,
                    floor_wait_ms: floor_ms,
                    node_lat_ms,
                    pass,
                };
                let sub = FioOutput {
                    fio_version: out.fio_version.clone(),
                    jobs: vec![r],
                    raw: out.raw.clone(),
                };
                // The control's per-step verdicts are what *would* have been judged: they
                // go in the table, not in the run's verdicts (the control is meant to fail).
                let stored: &[Verdict] = if mode == Mode::Floors { &verdicts } else { &[] };
                failed_verdicts += stored.iter().filter(|v| !v.passed).count();
                if mode == Mode::Control && name == "bully" {
                    // Held back: the control's last job carries the control's verdict.
                    if let Some((id, prev)) = last_control_job.replace((ids[i], sub)) {
                        store.finish_job(id, Ok(&prev), &[])?;
                    }
                } else {
                    store.finish_job(ids[i], Ok(&sub), stored)?;
                }
                step_rows.push(row);
            }
            progress.step_finished(&step_rows);
            rows.extend(step_rows);
        }
        node.stop();
    }
    if let Some((id, sub)) = last_control_job {
        // The control's own verdict, on its last job: the bully must have mattered.
        let v = match &control_worst {
            Some((ratio, at)) => Verdict {
                expectation:
                    "control (no floors): a protected volume falls below 98% of its target".into(),
                measured: ratio * 100.0,
                bound: "< 98% of target".into(),
                passed: *ratio < 0.98,
                detail: if *ratio < 0.98 {
                    format!(
                        "without floors the worst was {at}: {:.1}% of its target",
                        ratio * 100.0
                    )
                } else {
                    format!(
                        "without floors every protected volume still got {:.1}% or more of its target: \
                         the bully never hurt them, so this scenario proves nothing; raise the bully's \
                         iodepth or --max-load",
                        ratio * 100.0
                    )
                },
            },
            None => Verdict {
                expectation:
                    "control (no floors): a protected volume falls below 98% of its target".into(),
                measured: 0.0,
                bound: "< 98% of target".into(),
                passed: false,
                detail: "the control produced no results".into(),
            },
        };
        if !v.passed {
            failed_verdicts += 1;
        }
        store.finish_job(id, Ok(&sub), std::slice::from_ref(&v))?;
    }
    store.add_table(run, &table(&rows))?;
    let status = if failed_verdicts == 0 && failed_jobs == 0 {
        "passed"
    } else {
        "failed"
    };
    store.finish_run(run, status)?;
    Ok(IsolationOutcome {
        record: store.load_run(run)?,
        rows,
        failed_verdicts,
        failed_jobs,
    })
}

/// The stored summary table.
pub fn table(rows: &[Row]) -> SummaryTable {
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    SummaryTable {
        kind: "isolation".into(),
        name: "isolation".into(),
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    json!(r.mode.as_str()),
                    json!(r.step),
                    json!(r3(r.bully_load)),
                    json!(r.volume),
                    json!(if r.protected { "protected" } else { "bully" }),
                    json!(r.target_iops),
                    json!(r3(r.iops)),
                    json!(r3(r.lat_mean_ms)),
                    json!(r3(r.lat_p99_ms)),
                    json!(r3(r.ceiling_wait_ms)),
                    json!(r3(r.floor_wait_ms)),
                    json!(r.pass),
                    json!(r3(r.node_lat_ms)),
                ]
            })
            .collect(),
    }
}

/// The side-by-side table: per step, the protected volumes' worst IOPS and p99 with and
/// without floors, and the bully's IOPS.
pub fn render(rows: &[Row]) -> String {
    let mut steps: Vec<(u32, f64)> = rows.iter().map(|r| (r.step, r.bully_load)).collect();
    steps.sort_by_key(|s| s.0);
    steps.dedup_by_key(|s| s.0);
    let has_control = rows.iter().any(|r| r.mode == Mode::Control);
    let pick = |mode: Mode, step: u32| {
        rows.iter()
            .filter(move |r| r.mode == mode && r.step == step)
    };
    let mut out = String::new();
    let target = rows
        .iter()
        .find(|r| r.protected)
        .map_or(0, |r| r.target_iops);
    out.push_str(&format!(
        "Protected volumes (target {target} IOPS each): worst of them per step\n"
    ));
    let head = if has_control {
        format!(
            "{:<5} {:>12} | {:>10} {:>9} {:>10} {:>10} | {:>10} {:>9} {:>10} {:>10}\n{:<5} {:>12} | {:^43} | {:^43}\n",
            "Step", "Bully load", "IOPS", "p99 ms", "bully q ms", "bully IOPS", "IOPS", "p99 ms", "bully q ms", "bully IOPS",
            "", "", "with floors (mClock)", "control: no floors (FIFO)"
        )
    } else {
        format!(
            "{:<5} {:>12} | {:>10} {:>9} {:>10} {:>10}\n",
            "Step", "Bully load", "IOPS", "p99 ms", "bully q ms", "bully IOPS"
        )
    };
    for l in head.lines() {
        out.push_str(l.trim_end());
        out.push('\n');
    }
    let cell = |mode: Mode, step: u32| -> String {
        let prot: Vec<&Row> = pick(mode, step).filter(|r| r.protected).collect();
        let bully = pick(mode, step).find(|r| !r.protected);
        if prot.is_empty() {
            return format!("{:>10} {:>9} {:>10} {:>10}", "-", "-", "-", "-");
        }
        let worst_iops = prot.iter().map(|r| r.iops).fold(f64::INFINITY, f64::min);
        let worst_p99 = prot.iter().map(|r| r.lat_p99_ms).fold(0.0, f64::max);
        let bully_wait = bully.map_or(0.0, |b| b.floor_wait_ms);
        let ok = prot.iter().all(|r| r.pass);
        format!(
            "{:>10} {:>9.2} {:>10.2} {:>10.0}",
            format!("{:.0}{}", worst_iops, if ok { "" } else { " !" }),
            worst_p99,
            bully_wait,
            bully.map_or(0.0, |b| b.iops)
        )
    };
    for (step, load) in steps {
        let offered = pick(Mode::Floors, step)
            .chain(pick(Mode::Control, step))
            .find(|r| !r.protected)
            .map_or(0, |r| r.target_iops);
        let mut line = format!(
            "{:<5} {:>12} | {}",
            step,
            format!("{load:.2}x {offered}"),
            cell(Mode::Floors, step)
        );
        if has_control {
            line.push_str(&format!(" | {}", cell(Mode::Control, step)));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for mode in [Mode::Floors, Mode::Control] {
        let lat: Vec<f64> = rows
            .iter()
            .filter(|r| r.mode == mode && r.protected)
            .map(|r| r.node_lat_ms * 1000.0)
            .collect();
        if let (Some(lo), Some(hi)) = (
            lat.iter().copied().reduce(f64::min),
            lat.iter().copied().reduce(f64::max),
        ) {
            out.push_str(&format!(
                "Protected volumes' mean latency at the node, {}: {lo:.0}-{hi:.0} us per step\n",
                match mode {
                    Mode::Floors => "with floors",
                    Mode::Control => "control",
                }
            ));
        }
    }
    out.push_str(
        "IOPS: the worst protected volume (\"!\": below 98% of target or p99 over 2x its first step);\n\
         p99: fio's, as the client saw it (the load generator's share of the CPU included).\n\
         bully q ms: the bully's mean time per request queued for the node (behind others' floors,\n\
         or behind everyone in FIFO); every volume's ceiling and floor waits are in the stored table.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_validation() {
        let s = IsolationSpec::default();
        assert_eq!(s.loads(), vec![1.0, 1.25, 1.5, 1.75, 2.0]);
        assert_eq!(s.remaining(), 10_000);
        assert_eq!(s.bully_iops(2.0), 20_000);
        assert!(s.validate().is_ok());
        let bad = IsolationSpec {
            floor_iops: 10_000,
            ..IsolationSpec::default()
        };
        assert!(bad.validate().unwrap_err().contains("leave capacity"));
        let one = IsolationSpec {
            steps: 1,
            ..IsolationSpec::default()
        };
        assert_eq!(one.loads(), vec![2.0]);
        let cfg = NodeConfig::parse(&s.node_toml(Mode::Control), "t").unwrap();
        assert_eq!(cfg.volumes.len(), 3);
        assert_eq!(
            cfg.capacity.unwrap().discipline,
            storage_node::config::Discipline::Fifo
        );
    }

    #[test]
    fn table_round_trips_and_renders_side_by_side() {
        let row = |mode, step, volume: &str, iops, p99, pass| Row {
            mode,
            step,
            bully_load: 1.0 + f64::from(step - 1),
            volume: volume.into(),
            protected: volume != "bully",
            target_iops: if volume == "bully" {
                10_000 * u64::from(step)
            } else {
                5000
            },
            iops,
            lat_mean_ms: 0.2,
            lat_p99_ms: p99,
            ceiling_wait_ms: 0.0,
            floor_wait_ms: if volume == "bully" { 3.5 } else { 0.0 },
            node_lat_ms: 0.02,
            pass,
        };
        let rows = vec![
            row(Mode::Floors, 1, "protected-1", 4999.0, 0.3, true),
            row(Mode::Floors, 1, "bully", 10000.0, 9.0, true),
            row(Mode::Floors, 2, "protected-1", 4998.0, 0.35, true),
            row(Mode::Floors, 2, "bully", 10001.0, 9.0, true),
            row(Mode::Control, 1, "protected-1", 4990.0, 1.0, true),
            row(Mode::Control, 1, "bully", 10000.0, 3.0, true),
            row(Mode::Control, 2, "protected-1", 3900.0, 5.0, false),
            row(Mode::Control, 2, "bully", 16000.0, 3.0, true),
        ];
        let t = table(&rows);
        assert_eq!(t.columns.len(), COLUMNS.len());
        assert_eq!(t.rows.len(), rows.len());
        let at = |r: usize, c: &str| t.rows[r][t.column(c).unwrap()].clone();
        assert_eq!(at(6, "mode"), "control");
        assert_eq!(at(6, "volume"), "protected-1");
        assert_eq!(at(6, "iops"), 3900.0);
        assert_eq!(at(6, "pass"), false);
        assert_eq!(at(7, "role"), "bully");
        let text = render(&rows);
        let expected = "\
Protected volumes (target 5000 IOPS each): worst of them per step
Step    Bully load |       IOPS    p99 ms bully q ms bully IOPS |       IOPS    p99 ms bully q ms bully IOPS
                   |            with floors (mClock)             |          control: no floors (FIFO)
1      1.00x 10000 |       4999      0.30       3.50      10000 |       4990      1.00       3.50      10000
2      2.00x 20000 |       4998      0.35       3.50      10001 |     3900 !      5.00       3.50      16000
";
        assert!(text.starts_with(expected), "got:\n{text}");
    }
}
