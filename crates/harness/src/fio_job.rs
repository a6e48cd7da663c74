//! One fio job as a step: the job file for the target, the job's row, its time series, fio's
//! result and the expectations judged on it, all stored. Any family whose steps are single
//! fio jobs runs them through [`run_job`].

use fio::{JobFile, JobResult, Section};

use crate::assessment;
use crate::context::{RunContext, RunError};
use crate::verdict::{Evidence, Expectation, Limits, Verdict};

/// One fio job of a plan, expanded.
#[derive(Debug, Clone)]
pub struct FioJob {
    pub workload: String,
    /// fio job name (a job set's job name, or the workload's name).
    pub name: String,
    pub volume: Option<String>,
    pub iteration: u32,
    /// Job-specific options (target and time options are added by [`job_file`]).
    pub options: Vec<(String, String)>,
    pub runtime: f64,
    pub ramp: f64,
    pub expect: Vec<Expectation>,
}

impl FioJob {
    /// How long it is expected to take (fio's start-up and drain are extra).
    pub fn expected_secs(&self) -> f64 {
        self.runtime + self.ramp
    }
}

/// A fio job a plan will run, before it runs ([`crate::FamilyPlan::fio_jobs`]).
#[derive(Debug, Clone)]
pub struct PlannedJob {
    /// Where the plan asks for it (`plan.toml:7: workload "w"`).
    pub at: String,
    /// The volume it runs on (None: the target's only one).
    pub volume: Option<String>,
    /// Its job file, without the target's options.
    pub file: JobFile,
}

impl PlannedJob {
    /// The job's own options (its sections', not the harness's globals).
    pub fn options(&self) -> Vec<(String, String)> {
        self.file
            .jobs
            .iter()
            .flat_map(|s| &s.options)
            .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
            .collect()
    }

    /// Whether the job writes (or trims) its target: any `rw` mode but `read` and
    /// `randread` (fio's default is `read`; the last `rw`/`readwrite` set wins, the job's
    /// own over the file's globals).
    pub fn writes(&self) -> bool {
        let global = self
            .file
            .global
            .options
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.clone()?)));
        let mode = global
            .chain(self.options())
            .rfind(|(k, _)| k == "rw" || k == "readwrite")
            .map(|(_, v)| v);
        let mode = mode.as_deref().unwrap_or("read");
        let mode = mode.split(':').next().unwrap_or(mode).trim();
        !matches!(mode, "read" | "randread")
    }
}

/// The job file for one job on a target (`target_opts` from the target).
pub fn job_file(job: &FioJob, target_opts: &[(String, String)]) -> JobFile {
    let mut f = JobFile::new();
    for (k, v) in target_opts {
        f.global.set(k, v.clone());
    }
    f.global.set("time_based", "1");
    f.global.set("runtime", fio::jobfile::fio_time(job.runtime));
    if job.ramp > 0.0 {
        f.global.set("ramp_time", fio::jobfile::fio_time(job.ramp));
    }
    let mut s = Section::new(job.name.clone());
    for (k, v) in &job.options {
        s.set(k, v.clone());
    }
    f.jobs.push(s);
    f
}

/// What one job came to.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// fio's result for the job, or why fio failed.
    pub result: Result<JobResult, String>,
    pub verdicts: Vec<Verdict>,
    /// fio failed, or reported an error for the job.
    pub failed: bool,
    /// What limited the job (None when fio failed).
    pub diagnosis: Option<assess::Diagnosis>,
    pub steady: Option<assess::steady::SteadyState>,
    /// What fio wrote to stderr (its reasons when it reported an error).
    pub stderr: String,
}

/// Run `job` as job `seq` (1-based) of the run. A failed fio run fails the job's
/// expectations; only store errors are errors.
pub fn run_job(ctx: &mut RunContext, seq: u32, job: &FioJob) -> Result<JobOutcome, RunError> {
    let target_opts = match (ctx.node, &job.volume) {
        (Some(n), Some(v)) => n.options(v),
        _ => ctx.target.options_for(job.volume.as_deref()),
    };
    if let Some(pre) = crate::nfs::prefill(&target_opts, &job.options) {
        ctx.ui.print(&format!(
            "laying out the file {} uses over NFS first (fio's nfs engine makes a file only by writing it in order)\n",
            job.name
        ));
        if let Err(e) = ctx.exec.run(&pre) {
            ctx.ui.print(&format!("  prefill failed: {e}\n"));
        }
    }
    let mut file = job_file(job, &target_opts);
    ctx.recorder.add_log_options(seq as usize, &mut file);
    let id = ctx.begin_job(
        seq,
        &job.workload,
        &job.name,
        job.volume.as_deref(),
        job.iteration,
        &file.render(),
    )?;
    let limits: Option<Limits> = match (ctx.node, &job.volume) {
        (Some(n), Some(v)) => n.limits(v),
        _ => ctx.target.limits_for(job.volume.as_deref()),
    };
    let recording = ctx
        .recorder
        .start(seq as usize, ctx.node, ctx.target, job.ramp, false);
    let ran = ctx.exec.run(&file);
    let series = recording.finish(id);
    ctx.add_series(&series)?;
    match ran {
        Ok(out) => {
            let primary = out.job(&job.name).cloned().unwrap_or_default();
            let devices = assessment::devices(ctx.node, ctx.target);
            // The node's samples of the job's volume: its LUN's when it ran over iSCSI.
            let sampled = ctx.target.sampled_volume(job.volume.as_deref());
            let diagnosis = assessment::diagnose(
                &series,
                &primary,
                sampled,
                limits.as_ref(),
                &devices,
                job.runtime,
            );
            let steady = assessment::steady_state(&series);
            let failed = primary.error != 0;
            let ev = Evidence {
                fio: &series.fio,
                diagnosis: Some(&diagnosis),
                io_error: failed,
                node: &series.node,
                volume: sampled,
                span_ms: (job.runtime * 1000.0) as u64,
            };
            let mut verdicts: Vec<Verdict> = job
                .expect
                .iter()
                .map(|e| e.check_with(&primary, limits.as_ref(), &ev))
                .collect();
            if failed {
                verdicts = verdicts
                    .into_iter()
                    .map(|v| {
                        let detail = format!(
                            "fio reported error {}: {}; {}",
                            primary.error,
                            fio::executor::first_lines(&out.stderr, 1),
                            v.detail
                        );
                        v.failed(detail)
                    })
                    .collect();
            }
            ctx.finish_job(id, Ok(&out), &verdicts)?;
            if failed {
                // fio's reason (`you need to specify size=`) is on its stderr: all of it is
                // kept with the job, its first lines go in the summary.
                ctx.store
                    .set_job_error(id, &fio_error_text(primary.error, &out.stderr))?;
            }
            ctx.store
                .set_assessment(id, Some(&diagnosis), steady.as_ref())?;
            Ok(JobOutcome {
                result: Ok(primary),
                verdicts,
                failed,
                diagnosis: Some(diagnosis),
                steady,
                stderr: out.stderr.clone(),
            })
        }
        Err(e) => failed_run(ctx, id, job, &e),
    }
}

/// A job whose fio run failed: its expectations fail with the run's error.
fn failed_run(
    ctx: &mut RunContext,
    id: i64,
    job: &FioJob,
    e: &fio::executor::ExecError,
) -> Result<JobOutcome, RunError> {
    let msg = e.to_string();
    let stored = e.full_text();
    let verdicts: Vec<Verdict> = job
        .expect
        .iter()
        .map(|x| {
            Verdict::plain(
                x.text.clone(),
                0.0,
                String::new(),
                false,
                format!("the job failed: {msg}"),
            )
        })
        .collect();
    ctx.finish_job(id, Err(&stored), &verdicts)?;
    Ok(JobOutcome {
        result: Err(msg),
        verdicts,
        failed: true,
        diagnosis: None,
        steady: None,
        stderr: String::new(),
    })
}

/// A job fio ended with an error: the error's meaning and everything fio wrote to stderr.
pub fn fio_error_text(code: i64, stderr: &str) -> String {
    let meaning = std::io::Error::from_raw_os_error(code as i32).to_string();
    let meaning = meaning
        .split(" (os error")
        .next()
        .unwrap_or(&meaning)
        .to_string();
    if stderr.trim().is_empty() {
        format!("fio reported error {code} ({meaning})")
    } else {
        format!(
            "fio reported error {code} ({meaning}); fio said:\n{}",
            stderr.trim_end()
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fio_errors_keep_fios_words() {
        assert_eq!(
            super::fio_error_text(22, "j: you need to specify size=\nfio: pid=0, err=22/file:filesetup.c:1155\n"),
            "fio reported error 22 (Invalid argument); fio said:\nj: you need to specify size=\nfio: pid=0, err=22/file:filesetup.c:1155"
        );
        assert_eq!(
            super::fio_error_text(5, ""),
            "fio reported error 5 (Input/output error)"
        );
    }

    #[test]
    fn a_job_writes_unless_it_only_reads() {
        let job = |global: &[(&str, &str)], own: &[(&str, &str)]| {
            let mut file = fio::JobFile::new();
            for (k, v) in global {
                file.global.set(k, *v);
            }
            let mut s = fio::Section::new("j");
            for (k, v) in own {
                s.set(k, *v);
            }
            file.jobs.push(s);
            super::PlannedJob {
                at: "p.toml:5".into(),
                volume: None,
                file,
            }
        };
        for reads in [
            job(&[], &[]),
            job(&[], &[("rw", "randread")]),
            job(&[], &[("readwrite", "read:8")]),
            job(&[("rw", "write")], &[("rw", "randread")]),
        ] {
            assert!(!reads.writes(), "{:?}", reads.file.render());
        }
        for writes in [
            job(&[], &[("rw", "randwrite")]),
            job(&[], &[("rw", "randrw"), ("rwmixread", "90")]),
            job(&[], &[("rw", "trim")]),
            job(&[], &[("rw", "read"), ("readwrite", "rw")]),
            job(&[("rw", "write")], &[("bs", "4k")]),
        ] {
            assert!(writes.writes(), "{:?}", writes.file.render());
        }
    }
}
