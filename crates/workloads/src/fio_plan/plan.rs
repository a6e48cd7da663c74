//! A `[[workload]]` plan as steps: one fio job each, iterations outermost, then workloads,
//! then a set's jobs. Prints a line per job (its results and verdicts) and a job set's
//! summary once its last job has run.

use std::collections::BTreeMap;
use std::path::Path;

use fio::{fmt, JobResult};
use harness::fio_job::{run_job, FioJob, JobOutcome};
use harness::plan::{Common, PlanError};
use harness::target::Target;
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
}

impl FioPlan {
    pub fn new(workloads: Vec<WorkloadSpec>, common: &Common) -> FioPlan {
        let mut p = FioPlan {
            workloads,
            jobs: Vec::new(),
            step_lines: true,
            sets: BTreeMap::new(),
            until_steady: None,
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

    /// What to print for a finished job: its line, a set's summary, its verdicts.
    fn lines(&mut self, job: &FioJob, out: &JobOutcome) -> String {
        let mut text = String::new();
        let on = job.volume.as_deref().unwrap_or("target");
        match &out.result {
            Ok(r) => {
                if self.step_lines {
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
                    text.push_str(&format!(
                        "{} {} on {on}: {}\n",
                        job.workload,
                        job.name,
                        parts.join("; ")
                    ));
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
                text.push_str(&self.set_summary(job, r));
            }
            Err(e) => text.push_str(&format!(
                "{} {} on {on}: FAILED: {e}\n",
                job.workload, job.name
            )),
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
    fn set_summary(&mut self, job: &FioJob, r: &JobResult) -> String {
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
        let on = job.volume.as_deref().unwrap_or("target");
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
                    "{} {} on {}",
                    j.workload,
                    j.name,
                    j.volume.as_deref().unwrap_or("target")
                ),
                expected_secs: j.expected_secs(),
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
        let text = self.lines(&job, &out);
        if !text.is_empty() {
            ctx.ui.print(&text);
        }
        Ok(())
    }
}
