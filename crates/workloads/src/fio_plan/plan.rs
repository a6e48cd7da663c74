//! A `[[workload]]` plan as steps: one fio job each, iterations outermost, then workloads,
//! then a set's jobs. Prints a line per job (its results and verdicts) and a job set's
//! summary once its last job has run.

use std::collections::BTreeMap;
use std::path::Path;

use fio::{fmt, JobResult};
use harness::fio_job::{run_job, FioJob, JobOutcome};
use harness::plan::{Common, PlanError};
use harness::target::Target;
use harness::verdict::{Dir, Metric};
use harness::{FamilyPlan, Options, Prepare, RunContext, RunError, RunHeader, Step};

use super::parse::{Workload, WorkloadSpec};

/// fio's own steady-state stop (`steadystate=iops:10%` over `steadystate_duration`): every
/// one-second IOPS sample of the window within 10% of its mean, which implies SNIA's range
/// rule (range within 20%); the stored windows are then checked by the full rule.
pub const UNTIL_STEADY_WINDOW_S: f64 = 5.0;

/// Run `job` until fio sees it steady, at most `max` seconds.
pub fn until_steady(job: &mut FioJob, max: f64) {
    job.runtime = max.max(UNTIL_STEADY_WINDOW_S);
    job.options
        .retain(|(k, _)| !k.starts_with("steadystate") && !k.starts_with("ss"));
    job.options.push(("steadystate".into(), "iops:10%".into()));
    job.options.push((
        "steadystate_duration".into(),
        fio::jobfile::fio_time(UNTIL_STEADY_WINDOW_S),
    ));
}

/// Fixed start-up and drain time per fio job, seconds (estimates only).
const JOB_OVERHEAD_S: f64 = 0.5;

/// The parsed workloads and, once running, what their jobs came to.
#[derive(Debug)]
pub struct FioPlan {
    pub workloads: Vec<WorkloadSpec>,
    jobs: Vec<FioJob>,
    step_lines: bool,
    /// A job set's results so far, per (iteration, workload).
    sets: BTreeMap<(u32, String), BTreeMap<String, JobResult>>,
    /// `--until-steady MAX`.
    until_steady: Option<f64>,
    /// The headline words already explained in this run ("steady", "mean").
    explained: Vec<&'static str>,
    notes: Vec<String>,
}

/// A job's name as a person reads it: the job alone when the workload is that job
/// (`randread`), else workload/job (`db/read_iops`).
pub fn label(job: &FioJob) -> String {
    if job.workload == job.name {
        job.name.clone()
    } else {
        format!("{}/{}", job.workload, job.name)
    }
}

impl FioPlan {
    pub fn new(workloads: Vec<WorkloadSpec>, common: &Common) -> FioPlan {
        let mut p = FioPlan {
            workloads,
            jobs: Vec::new(),
            step_lines: true,
            sets: BTreeMap::new(),
            until_steady: None,
            explained: Vec::new(),
            notes: Vec::new(),
        };
        p.jobs = p.jobs(common);
        p
    }

    /// Every fio run, in order: iterations outermost, then workloads, then a set's jobs.
    pub fn jobs(&self, common: &Common) -> Vec<FioJob> {
        let mut out = Vec::new();
        for iteration in 1..=common.iterations {
            for w in &self.workloads {
                let runs: Vec<(String, Vec<(String, String)>)> = match &w.workload {
                    Workload::Set { set, .. } => set.jobs(),
                    Workload::Fio(opts) => vec![(w.name.clone(), opts.clone())],
                };
                for (name, options) in runs {
                    let expect = w
                        .expect
                        .iter()
                        .filter(|(job, _)| !matches!(job.as_deref(), Some(j) if j != name))
                        .map(|(_, e)| e.clone())
                        .collect();
                    let runtime = w
                        .job_runtime
                        .iter()
                        .find(|(j, _)| *j == name)
                        .map(|(_, r)| *r)
                        .or(w.runtime)
                        .unwrap_or(common.runtime);
                    out.push(FioJob {
                        workload: w.name.clone(),
                        name,
                        volume: w.volume.clone(),
                        iteration,
                        options,
                        runtime,
                        ramp: w.ramp.unwrap_or(common.ramp),
                        expect,
                    });
                }
            }
        }
        if let Some(max) = self.until_steady {
            for j in &mut out {
                until_steady(j, max);
            }
        }
        out
    }

    /// Override runtime and ramp (command line); workload-level values no longer win.
    fn set_times(&mut self, common: &mut Common, runtime: Option<f64>, ramp: Option<f64>) {
        if let Some(r) = runtime {
            common.runtime = r;
            for w in &mut self.workloads {
                w.runtime = None;
                w.job_runtime.clear();
            }
        }
        if let Some(r) = ramp {
            common.ramp = r;
            for w in &mut self.workloads {
                w.ramp = None;
            }
        }
    }

    /// What to print for a finished job: its line (one headline number per direction:
    /// the one its checks judge, named as fio names it), a set's summary, its verdicts.
    fn lines(&mut self, job: &FioJob, out: &JobOutcome, target: &Target) -> String {
        let mut text = String::new();
        let on = job.volume.clone().unwrap_or_else(|| target.short());
        let label = label(job);
        match &out.result {
            Ok(r) if r.error != 0 => {
                text.push_str(&format!(
                    "{label} on {on}: fio reported error {} ({}): {}\n",
                    r.error,
                    std::io::Error::from_raw_os_error(r.error as i32)
                        .to_string()
                        .split(" (os error")
                        .next()
                        .unwrap_or_default(),
                    match &out.stderr {
                        s if s.trim().is_empty() => "fio said nothing more".to_string(),
                        s => fio::executor::first_lines(s, 3),
                    }
                ));
            }
            Ok(r) => {
                if self.step_lines {
                    let mut parts = Vec::new();
                    let active = [r.read.active(), r.write.active()];
                    let one_dir = active.iter().filter(|a| **a).count() == 1;
                    for (d, s) in [(Dir::Read, &r.read), (Dir::Write, &r.write)] {
                        if !s.active() {
                            continue;
                        }
                        let judged = |kinds: &[Metric]| {
                            job.expect.iter().zip(&out.verdicts).find_map(|(e, v)| {
                                let dir_ok = e.dir == d || (e.dir == Dir::Both && one_dir);
                                (dir_ok && kinds.contains(&e.metric))
                                    .then_some((v.measured, e.metric))
                            })
                        };
                        let iops = match judged(&[Metric::IopsSteady, Metric::IopsMean]) {
                            Some((v, m)) => {
                                let word = if m == Metric::IopsSteady {
                                    "steady"
                                } else {
                                    "mean"
                                };
                                if !self.explained.contains(&word) {
                                    self.explained.push(word);
                                    self.notes.push(format!(
                                        "  ({word}: what the checks judge, the {}; fio's own IOPS={} averages the whole runtime, the queue draining at the end included)\n",
                                        if word == "steady" {
                                            "median of the job's steady 500 ms windows"
                                        } else {
                                            "mean of fio's 500 ms samples"
                                        },
                                        fmt::iops(s.iops_text())
                                    ));
                                }
                                format!("IOPS={} ({word})", fmt::sig(v))
                            }
                            None => format!("IOPS={}", fmt::iops(s.iops_text())),
                        };
                        let bw = match judged(&[Metric::BwSteady, Metric::BwMean]) {
                            Some((v, m)) => format!(
                                "BW={} ({})",
                                fmt::bw(v as u64),
                                if m == Metric::BwSteady {
                                    "steady"
                                } else {
                                    "mean"
                                }
                            ),
                            None => format!("BW={}", fmt::bw(s.bw_text())),
                        };
                        parts.push(format!(
                            "{}: {iops}, {bw}, lat avg {}",
                            if d == Dir::Read { "read" } else { "write" },
                            fmt::lat(s.lat_mean_ns)
                        ));
                    }
                    text.push_str(&format!("{label} on {on}: {}\n", parts.join("; ")));
                    for n in self.notes.drain(..) {
                        text.push_str(&n);
                    }
                    if let Some(d) = &out.diagnosis {
                        text.push_str(&format!(
                            "  limited by: {}: {}{}\n",
                            d.bottleneck,
                            d.reason,
                            match &out.steady {
                                Some(s) if !s.attained => format!(" ({})", s.describe()),
                                _ => String::new(),
                            }
                        ));
                    }
                }
                text.push_str(&self.set_summary(job, r, &on));
            }
            Err(e) => text.push_str(&format!("{label} on {on}: FAILED: {e}\n")),
        }
        for v in &out.verdicts {
            text.push_str(&format!(
                "  {} {}: {}{}\n",
                v.label(),
                v.expectation,
                v.detail,
                v.reason
                    .as_ref()
                    .map(|r| format!("\n    {r}"))
                    .unwrap_or_default()
            ));
        }
        text
    }

    /// A job set's summary block, once the set's last job of an iteration has run.
    fn set_summary(&mut self, job: &FioJob, r: &JobResult, on: &str) -> String {
        let Some((set_name, set)) = self
            .workloads
            .iter()
            .find(|w| w.name == job.workload)
            .and_then(|w| match &w.workload {
                Workload::Set { name, set } => Some((name.clone(), *set)),
                Workload::Fio(_) => None,
            })
        else {
            return String::new();
        };
        let group = self
            .sets
            .entry((job.iteration, job.workload.clone()))
            .or_default();
        group.insert(job.name.clone(), r.clone());
        let last = set.jobs().last().map(|j| j.0.clone());
        if last.as_deref() != Some(job.name.as_str()) {
            return String::new();
        }
        let title = if job.workload == on || job.workload == set_name {
            format!("{set_name} on {on}")
        } else {
            format!("{} ({set_name}) on {on}", job.workload)
        };
        format!(
            "\n{title}{}:\n{}\n",
            if job.iteration > 1 {
                format!(" (iteration {})", job.iteration)
            } else {
                String::new()
            },
            set.summary(group)
        )
    }
}

impl FamilyPlan for FioPlan {
    fn configure(&mut self, common: &mut Common, opts: &Options) -> Result<(), PlanError> {
        if let Some(s) = opts.scale {
            return Err(PlanError(format!(
                "--scale {s}: {} runs fio jobs as written (--scale applies to the ramp and provisioned profiles)",
                common.origin
            )));
        }
        self.set_times(common, opts.runtime, opts.ramp);
        self.step_lines = !opts.no_step_lines;
        self.until_steady = opts.until_steady;
        self.jobs = self.jobs(common);
        Ok(())
    }

    fn banner(&self, common: &Common, target: &Target, db: &Path) -> String {
        format!(
            "qoslab bench: {} ({} fio run(s), ~{:.0} s) on {}; results: {}",
            common.name,
            self.jobs.len(),
            self.jobs
                .iter()
                .map(|j| j.expected_secs() + JOB_OVERHEAD_S)
                .sum::<f64>(),
            target.describe(),
            db.display()
        )
    }

    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError> {
        if ctx.target == &Target::Embedded {
            if let Some(e) = self.workloads.iter().find_map(|w| w.undeclared.clone()) {
                return Err(RunError::Plan(e));
            }
        }
        // A plan's engine does I/O on a file: the target's own engine (nbd, nfs) reaches
        // every other target, and another would open a file named after the job.
        if !matches!(ctx.target, Target::Path(_)) {
            for w in &self.workloads {
                if let Workload::Fio(opts) = &w.workload {
                    if let Some((k, v)) = opts.iter().find(|(k, _)| k == "ioengine") {
                        return Err(RunError::Plan(format!(
                            "{}: workload {:?}: fio.{k} = {v:?}: {} is reached through the \
                             target's own engine; a plan's ioengine applies to a file, \
                             directory or block-device target",
                            w.at,
                            w.name,
                            ctx.target.short()
                        )));
                    }
                }
            }
        }
        if ctx.target == &Target::Embedded && ctx.node.is_none() {
            return Err(RunError::Plan(format!(
                "{}: the embedded node needs at least one [[volume]] in the plan (or pass --target URI|PATH)",
                ctx.common.origin
            )));
        }
        Ok(RunHeader {
            target: ctx.target.describe(),
            executor: ctx.exec.describe(),
            runtime_s: ctx.common.runtime,
            ramp_s: ctx.common.ramp,
            fio_version: None,
        })
    }

    fn steps(&self) -> Vec<Step> {
        self.jobs
            .iter()
            .map(|j| Step {
                label: format!(
                    "{} on {}",
                    label(j),
                    j.volume.as_deref().unwrap_or("the target")
                ),
                expected_secs: j.expected_secs(),
            })
            .collect()
    }

    fn volumes_used(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for w in &self.workloads {
            if let Some(name) = &w.volume {
                if !v.contains(name) {
                    v.push(name.clone());
                }
            }
        }
        v
    }

    fn job_files(&self) -> Vec<(String, fio::JobFile)> {
        // Raw options only (job sets are built in); one file per workload is enough.
        let mut seen = std::collections::BTreeSet::new();
        self.jobs
            .iter()
            .filter(|j| seen.insert(j.workload.clone()))
            .filter_map(|j| {
                let w = self.workloads.iter().find(|w| w.name == j.workload)?;
                matches!(w.workload, Workload::Fio(_)).then(|| {
                    (
                        format!("{}: workload {:?}", w.at, w.name),
                        harness::fio_job::job_file(j, &[]),
                    )
                })
            })
            .collect()
    }

    fn fio_jobs(&self) -> Vec<harness::fio_job::PlannedJob> {
        self.jobs
            .iter()
            .filter(|j| j.iteration == 1)
            .filter_map(|j| {
                let w = self.workloads.iter().find(|w| w.name == j.workload)?;
                let what = match &w.workload {
                    Workload::Fio(_) => format!("{}: workload {:?}", w.at, w.name),
                    Workload::Set { .. } => {
                        format!("{}: workload {:?}, job {}", w.at, w.name, j.name)
                    }
                };
                Some(harness::fio_job::PlannedJob {
                    at: what,
                    volume: j.volume.clone(),
                    file: harness::fio_job::job_file(j, &[]),
                })
            })
            .collect()
    }

    fn retain_volumes(&mut self, common: &Common, volumes: &[String]) -> Result<(), PlanError> {
        self.workloads
            .retain(|w| w.volume.as_ref().is_some_and(|v| volumes.contains(v)));
        if self.workloads.is_empty() {
            return Err(PlanError(format!(
                "no workload runs on {}",
                volumes.join(", ")
            )));
        }
        self.jobs = self.jobs(common);
        Ok(())
    }

    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let job = self.jobs[index].clone();
        let out = run_job(ctx, index as u32 + 1, &job)?;
        let text = self.lines(&job, &out, ctx.target);
        if !text.is_empty() {
            ctx.ui.print(&text);
        }
        Ok(())
    }
}
