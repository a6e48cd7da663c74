//! Running a plan: start the target, expand the plan into fio runs, run each through an
//! [`Executor`], judge expectations, and write everything to the [`Store`] as it happens.

use crate::fio::{Executor, JobFile, Section};
use crate::plan::{fio_time, Plan, PlannedJob};
use crate::recording::SeriesRecorder;
use crate::result::JobResult;
use crate::store::{Env, NewRun, PolicyRecord, RunRecord, Store, StoreError, VolumeRecord};
use crate::target::{EmbeddedNode, Target, TargetError};
use crate::verdict::{Limits, Verdict};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Plan(String),
}

/// Told about each job as the run goes (progress display, printing summaries).
pub trait Observer {
    fn job_started(&mut self, _index: usize, _total: usize, _job: &PlannedJob) {}
    fn job_finished(
        &mut self,
        _index: usize,
        _job: &PlannedJob,
        _result: Result<&JobResult, &str>,
        _verdicts: &[Verdict],
    ) {
    }
}

/// An observer that does nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// What a finished run amounts to.
#[derive(Debug)]
pub struct Outcome {
    pub record: RunRecord,
    pub failed_verdicts: usize,
    pub failed_jobs: usize,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.failed_verdicts == 0 && self.failed_jobs == 0
    }
}

/// The job file for one planned job on a target (`target_opts` from the target).
pub fn job_file(job: &PlannedJob, target_opts: &[(String, String)]) -> JobFile {
    let mut f = JobFile::new();
    for (k, v) in target_opts {
        f.global.set(k, v.clone());
    }
    f.global.set("time_based", "1");
    f.global.set("runtime", fio_time(job.runtime));
    if job.ramp > 0.0 {
        f.global.set("ramp_time", fio_time(job.ramp));
    }
    let mut s = Section::new(job.name.clone());
    for (k, v) in &job.options {
        s.set(k, v.clone());
    }
    f.jobs.push(s);
    f
}

/// Store what a run ran on: the embedded node's policies and volumes (with their effective
/// limits as the node computed them), or the `--node` volume as its API reported it.
pub fn record_setup(
    store: &Store,
    run: i64,
    node: Option<&EmbeddedNode>,
    cfg: Option<&storage_node::NodeConfig>,
    target: &Target,
) -> Result<(), StoreError> {
    if let (Some(n), Some(cfg)) = (node, cfg) {
        for p in &cfg.policies {
            store.add_policy(
                run,
                &PolicyRecord {
                    name: p.name.clone(),
                    definition: format!("{:?}", p.policy),
                },
            )?;
        }
        for v in &cfg.volumes {
            store.add_volume(
                run,
                &VolumeRecord {
                    name: v.name.clone(),
                    size: v.size,
                    snapshot_reserve_percent: v.snapshot_reserve_percent,
                    policy: v.policy.clone(),
                    limits: n.limits(&v.name).unwrap_or_default(),
                },
            )?;
        }
    }
    if let Target::NodeVolume {
        volume,
        limits,
        size,
        snapshot_reserve_percent,
        policy,
        ..
    } = target
    {
        store.add_volume(
            run,
            &VolumeRecord {
                name: volume.clone(),
                size: *size,
                snapshot_reserve_percent: *snapshot_reserve_percent,
                policy: policy.clone(),
                limits: *limits,
            },
        )?;
    }
    Ok(())
}

/// Run `plan` on `target`. A failed fio run fails its job's expectations and the run goes
/// on; store errors end the run.
pub fn run_plan(
    plan: &Plan,
    exec: &dyn Executor,
    target: &Target,
    store: &mut Store,
    env: &Env,
    observer: &mut dyn Observer,
) -> Result<Outcome, RunError> {
    let node = match target {
        Target::Embedded => {
            let cfg = plan.node.as_ref().ok_or_else(|| {
                RunError::Plan(format!(
                    "{}: the embedded node needs at least one [[volume]] in the plan (or pass --target URI|PATH)",
                    plan.origin
                ))
            })?;
            Some(EmbeddedNode::start(cfg)?)
        }
        _ => None,
    };
    let run = store.begin_run(&NewRun {
        name: &plan.name,
        plan_origin: &plan.origin,
        plan_text: &plan.text,
        target: &target.describe(),
        executor: &exec.describe(),
        runtime_s: plan.runtime,
        ramp_s: plan.ramp,
        env,
    })?;
    record_setup(store, run, node.as_ref(), plan.node.as_ref(), target)?;
    let jobs = plan.jobs();
    let (mut failed_verdicts, mut failed_jobs) = (0, 0);
    let recorder = SeriesRecorder::new();
    for (i, job) in jobs.iter().enumerate() {
        let target_opts = match (&node, &job.volume) {
            (Some(n), Some(v)) => n.options(v),
            _ => target.options(),
        };
        let mut file = job_file(job, &target_opts);
        recorder.add_log_options(i + 1, &mut file);
        let id = store.begin_job(
            run,
            i as u32 + 1,
            &job.workload,
            &job.name,
            job.volume.as_deref(),
            job.iteration,
            &file.render(),
        )?;
        observer.job_started(i, jobs.len(), job);
        let limits: Option<Limits> = match (&node, &job.volume) {
            (Some(n), Some(v)) => n.limits(v),
            _ => target.limits(),
        };
        let recording = recorder.start(i + 1, node.as_ref(), target, job.ramp);
        let ran = exec.run(&file);
        let series = recording.finish(id);
        if !series.is_empty() {
            store.add_series(&series)?;
        }
        match ran {
            Ok(out) => {
                let primary = out.job(&job.name).cloned().unwrap_or_default();
                let mut verdicts: Vec<Verdict> = job
                    .expect
                    .iter()
                    .map(|e| e.check(&primary, limits.as_ref()))
                    .collect();
                if primary.error != 0 {
                    failed_jobs += 1;
                    for v in &mut verdicts {
                        v.passed = false;
                        v.detail = format!("fio reported error {}; {}", primary.error, v.detail);
                    }
                }
                failed_verdicts += verdicts.iter().filter(|v| !v.passed).count();
                store.finish_job(id, Ok(&out), &verdicts)?;
                observer.job_finished(i, job, Ok(&primary), &verdicts);
            }
            Err(e) => {
                let msg = e.to_string();
                failed_jobs += 1;
                let verdicts: Vec<Verdict> = job
                    .expect
                    .iter()
                    .map(|x| Verdict {
                        expectation: x.text.clone(),
                        measured: 0.0,
                        bound: String::new(),
                        passed: false,
                        detail: format!("the job failed: {msg}"),
                    })
                    .collect();
                failed_verdicts += verdicts.len();
                store.finish_job(id, Err(&msg), &verdicts)?;
                observer.job_finished(i, job, Err(&msg), &verdicts);
            }
        }
    }
    let status = if failed_jobs > 0 {
        "error"
    } else if failed_verdicts > 0 {
        "failed"
    } else {
        "passed"
    };
    store.finish_run(run, status)?;
    drop(recorder);
    if let Some(n) = node {
        n.stop();
    }
    Ok(Outcome {
        record: store.load_run(run)?,
        failed_verdicts,
        failed_jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::FakeFio;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    const PLAN: &str = r#"
[bench]
runtime = "2s"
ramp = "500ms"
[[policy]]
name = "QoS_500iops"
fixed = { max_throughput_iops = 500 }
[[volume]]
name = "vol500"
size = "100GB"
policy = "QoS_500iops"
[[workload]]
name = "read_iops"
fio = { rw = "randread", bs = "4k", iodepth = 64 }
expect = ["iops <= 500 +-3%", "iops_mean ~= policy.ceiling +-3%", "iops >= policy.ceiling * 0.99"]
"#;

    #[test]
    fn runs_on_embedded_node_with_fake_fio_and_stores_everything() {
        let plan = Plan::parse(PLAN, "p.toml").unwrap();
        let fake = FakeFio::constant(fixture("randread_500iops_msec.out"));
        let mut store = Store::in_memory().unwrap();
        let out = run_plan(
            &plan,
            &fake,
            &Target::Embedded,
            &mut store,
            &Env::default(),
            &mut Quiet,
        )
        .unwrap();
        // 479.7 IOPS aggregate (drain included) fails ">= 495"; the steady state is 500.
        assert_eq!(out.failed_verdicts, 1);
        assert!(!out.passed());
        let r = &out.record;
        assert_eq!(r.status, "failed");
        assert_eq!(r.volumes[0].limits.ceiling_iops, 500);
        assert_eq!(r.policies[0].name, "QoS_500iops");
        let v = &r.jobs[0].verdicts;
        assert!(v[0].passed && v[1].passed && !v[2].passed, "{v:?}");
        assert!(v[2].detail.contains("want >= 495"), "{}", v[2].detail);
        let seen = fake.seen.lock().unwrap();
        let text = seen[0].render();
        assert!(
            text.contains("ioengine=nbd\nuri=nbd+unix:///vol500?socket=/"),
            "{text}"
        );
        assert!(text.contains("runtime=2s\nramp_time=500ms\n"), "{text}");
        assert!(
            text.contains("[read_iops]\nbs=4k\niodepth=64\nrw=randread\n"),
            "{text}"
        );
    }

    #[test]
    fn fio_logs_become_the_jobs_time_series() {
        let plan = Plan::parse(PLAN, "p.toml").unwrap();
        // A stand-in for fio: copy real fio logs (tests/fixtures/fiologs, numjobs=2) to
        // where the job file asks fio to write them.
        let fake = FakeFio::new(|f| {
            let prefix = f.global.get("write_iops_log").unwrap().to_string();
            assert_eq!(f.global.get("log_avg_msec"), Some("500"));
            assert_eq!(f.global.get("write_hist_log"), Some(prefix.as_str()));
            let src = format!("{}/tests/fixtures/fiologs", env!("CARGO_MANIFEST_DIR"));
            for e in std::fs::read_dir(&src).unwrap() {
                let name = e.unwrap().file_name().into_string().unwrap();
                if let Some(rest) = name.strip_prefix("mix_") {
                    std::fs::copy(format!("{src}/{name}"), format!("{prefix}_{rest}")).unwrap();
                }
            }
            fixture("randread_500iops_msec.out")
        });
        let mut store = Store::in_memory().unwrap();
        let out = run_plan(
            &plan,
            &fake,
            &Target::Embedded,
            &mut store,
            &Env::default(),
            &mut Quiet,
        )
        .unwrap();
        let r = &out.record;
        assert_eq!(r.series.len(), 1);
        let s = r.series_of(r.jobs[0].id).unwrap();
        let reads: Vec<_> = s.fio.iter().filter(|x| x.direction == "read").collect();
        assert_eq!(reads.len(), 4);
        assert_eq!(reads[0].iops, 604.0);
        assert!(reads[0].p99_ns > 0);
        let prefix = fake.seen.lock().unwrap()[0]
            .global
            .get("write_iops_log")
            .unwrap()
            .to_string();
        assert!(
            !std::path::Path::new(&prefix).parent().unwrap().exists(),
            "the log directory is removed after the run"
        );
    }

    #[test]
    fn a_failing_fio_fails_its_expectations_and_the_run_goes_on() {
        let plan = Plan::parse(
            "[[workload]]\nname = \"a\"\nfio = { rw = \"read\" }\nexpect = [\"iops > 1\"]\n\
             [[workload]]\nname = \"b\"\nfio = { rw = \"read\" }\n",
            "p.toml",
        )
        .unwrap();
        let fake = FakeFio::new(|f| {
            if f.jobs[0].name == "a" {
                "fio: pid=1, err=5/file:io_u.c".into()
            } else {
                fixture("latency_usec.out")
            }
        });
        let mut store = Store::in_memory().unwrap();
        let out = run_plan(
            &plan,
            &fake,
            &Target::Nbd("nbd://127.0.0.1/x".into()),
            &mut store,
            &Env::default(),
            &mut Quiet,
        )
        .unwrap();
        assert_eq!((out.failed_jobs, out.failed_verdicts), (1, 1));
        assert_eq!(out.record.status, "error");
        assert_eq!(out.record.jobs[0].status, "failed");
        assert_eq!(out.record.jobs[1].status, "done");
        assert!(out.record.jobs[0].verdicts[0]
            .detail
            .contains("the job failed"));
    }

    #[test]
    fn embedded_target_needs_volumes() {
        let plan = Plan::from_profile("dbench", false).unwrap();
        let fake = FakeFio::constant("{}");
        let mut store = Store::in_memory().unwrap();
        let e = run_plan(
            &plan,
            &fake,
            &Target::Embedded,
            &mut store,
            &Env::default(),
            &mut Quiet,
        )
        .unwrap_err();
        assert!(e.to_string().contains("needs at least one [[volume]]"));
    }
}
