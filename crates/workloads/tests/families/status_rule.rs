//! Every family reaches the same status for the same set of job outcomes (error, failed,
//! inconclusive, pass): a family only records jobs and verdicts, through the two ways the
//! families record them (`finish_job` for fio-shaped jobs, `finish_op_job` for the S3
//! driver's), and the harness's one rule (`harness::outcome`) derives the status, the
//! exit code and the summary line from what was stored.

use assess::Outcome;
use fio::{FioOutput, JobResult};
use harness::host::Env;
use harness::store::{NewRun, Store};
use harness::verdict::Verdict;
use harness::{RunTally, Status};

/// How a job ended.
#[derive(Clone, Copy, Debug)]
enum Job {
    /// It failed to run.
    Failed,
    /// It ran and reported an I/O error.
    IoError,
    /// It ran; its verdicts.
    Ran(&'static [Outcome]),
}

fn verdict(o: Outcome) -> Verdict {
    Verdict::new("iops >= 1".into(), 1.0, ">= 1".into(), "detail".into(), o)
}

/// A run of `family` whose jobs ended as `jobs`, recorded as the family records them; its
/// status by the harness's rule.
fn status_of(family: &str, jobs: &[Job]) -> (Status, i32, String) {
    let mut store = Store::in_memory().unwrap();
    let env = Env::default();
    let run = store
        .begin_run(&NewRun {
            name: family,
            plan_origin: "test",
            plan_text: "",
            target: "embedded",
            executor: "test",
            runtime_s: 1.0,
            ramp_s: 0.0,
            env: &env,
        })
        .unwrap();
    for (i, j) in jobs.iter().enumerate() {
        let id = store
            .begin_job(run, i as u32 + 1, family, "job", Some("vol"), 1, "")
            .unwrap();
        let verdicts: Vec<Verdict> = match j {
            Job::Ran(v) => v.iter().map(|o| verdict(*o)).collect(),
            _ => Vec::new(),
        };
        let result = JobResult {
            jobname: "job".into(),
            error: if matches!(j, Job::IoError) { 5 } else { 0 },
            ..Default::default()
        };
        if family == workloads::s3::NAME {
            let out = match j {
                Job::Failed => Err("driver failed"),
                // The S3 driver's errors are counted per operation, and an I/O failure of
                // the test is a failed job.
                Job::IoError => Err("I/O error 5"),
                Job::Ran(_) => Ok("{}"),
            };
            store.finish_op_job(id, out, &[], &verdicts).unwrap();
        } else {
            let fio = FioOutput {
                fio_version: "fio-3.33".into(),
                jobs: vec![result],
                raw: "{}".into(),
            };
            let out = match j {
                Job::Failed => Err("fio exited 1"),
                _ => Ok(&fio),
            };
            store.finish_job(id, out, &verdicts).unwrap();
        }
    }
    let rec = store.load_run(run).unwrap();
    let t = RunTally::of(&rec);
    let summary = harness::outcome::summary(&rec, std::path::Path::new("r.db"));
    let first = summary.lines().next().unwrap_or_default().to_string();
    (t.status, t.exit_code(false), first)
}

#[test]
fn every_family_reaches_the_same_status_for_the_same_outcomes() {
    use Outcome::*;
    let cases: &[(&[Job], Status, i32)] = &[
        (
            &[Job::Ran(&[Pass]), Job::Ran(&[Pass, Pass])],
            Status::Passed,
            0,
        ),
        (&[Job::Ran(&[])], Status::Passed, 0),
        (
            &[Job::Ran(&[Pass]), Job::Ran(&[Inconclusive])],
            Status::Inconclusive,
            3,
        ),
        (
            &[Job::Ran(&[Inconclusive]), Job::Ran(&[Fail])],
            Status::Failed,
            1,
        ),
        (&[Job::Ran(&[Fail]), Job::Failed], Status::Error, 1),
        (&[Job::Ran(&[Pass]), Job::IoError], Status::Error, 1),
        (&[Job::Ran(&[Inconclusive]), Job::Failed], Status::Error, 1),
    ];
    let names: Vec<&str> = workloads::registry()
        .families()
        .iter()
        .map(|f| f.name())
        .collect();
    assert_eq!(names.len(), 8, "every registered family: {names:?}");
    for (jobs, want, code) in cases {
        for name in &names {
            let (status, exit, line) = status_of(name, jobs);
            assert_eq!((status, exit), (*want, *code), "{name}: {jobs:?} -> {line}");
            assert!(
                line.contains(&want.as_str().to_uppercase()),
                "{name}: {line}"
            );
        }
    }
}
