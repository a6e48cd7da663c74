//! The one rule that turns a run's stored records into its status, its exit code and its
//! summary line. Every family's runs are judged by it (docs/BENCH.md, "A run's status"):
//! a family records jobs, results and verdicts (its own run-level verdicts included, on a
//! job of its choice) and the harness derives the rest from what was stored.
//!
//! The rule, over the run's jobs (superseded jobs left out: a re-run answers for them):
//! 1. **error** when a job is in error: it did not run to the end (stored `failed`,
//!    `interrupted`, or still `running`), or its result reports an I/O error (fio's
//!    `error` ≠ 0);
//! 2. else **failed** when a verdict failed;
//! 3. else **inconclusive** when a verdict is inconclusive (the job's bottleneck explains
//!    its failure, docs/DIAGNOSIS.md);
//! 4. else **passed** when some verdict passed;
//! 5. else **done**: the run had no checks at all (a profile without expectations, a plan
//!    without `expect`): it ran to the end, and nothing was judged.
//!
//! Exit codes: passed and done 0, failed and error 1, inconclusive 3 (1 with `--strict`).

use std::path::Path;

use crate::store::{JobRecord, RunRecord, SUPERSEDED};

/// A run's result, derived from its records by the rule above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Passed,
    /// Every job ran to the end and nothing was checked (no verdicts).
    Done,
    /// An expectation failed.
    Failed,
    /// A job failed to run or reported an I/O error.
    Error,
    /// Nothing failed, but a verdict is inconclusive: the job's bottleneck explains its
    /// failure (docs/DIAGNOSIS.md).
    Inconclusive,
}

impl Status {
    /// The word the results store keeps.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::Error => "error",
            Status::Inconclusive => "inconclusive",
        }
    }
}

/// What the rule counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunTally {
    pub status: Status,
    /// Jobs that count (superseded ones left out).
    pub jobs: usize,
    /// Of those, jobs in error.
    pub failed_jobs: usize,
    /// Every counted verdict's outcome.
    pub verdicts: assess::Tally,
}

/// Whether a job is in error: it did not run to the end, or reported an I/O error.
pub fn job_in_error(j: &JobRecord) -> bool {
    matches!(j.status.as_str(), "failed" | "running" | "interrupted")
        || j.primary().is_some_and(|r| r.error != 0)
}

/// The message of a job in error, for the summary: its first line and the first lines of
/// what fio said (all of it is stored with the job: `qoslab results show`).
fn job_error(j: &JobRecord) -> String {
    match (&j.error, j.primary()) {
        (Some(e), _) => {
            let mut lines = e.lines().filter(|l| !l.trim().is_empty());
            let first = lines.next().unwrap_or_default().to_string();
            let more: Vec<&str> = lines.take(3).collect();
            if more.is_empty() {
                first
            } else {
                format!("{first}\n      {}", more.join("\n      "))
            }
        }
        (None, Some(r)) if r.error != 0 => format!("I/O error {}", r.error),
        _ if j.status == "running" => "never finished".into(),
        _ if j.status == "interrupted" => "interrupted: the run was stopped".into(),
        _ => String::new(),
    }
}

impl RunTally {
    /// The rule (module docs), applied to a stored run.
    pub fn of(rec: &RunRecord) -> RunTally {
        let jobs: Vec<&JobRecord> = rec.jobs.iter().filter(|j| j.status != SUPERSEDED).collect();
        let failed_jobs = jobs.iter().filter(|j| job_in_error(j)).count();
        let verdicts = rec.tally();
        let status = if failed_jobs > 0 {
            Status::Error
        } else if verdicts.fail > 0 {
            Status::Failed
        } else if verdicts.inconclusive > 0 {
            Status::Inconclusive
        } else if verdicts.pass > 0 {
            Status::Passed
        } else {
            Status::Done
        };
        RunTally {
            status,
            jobs: jobs.len(),
            failed_jobs,
            verdicts,
        }
    }

    /// 0 passed, 1 failed or error, 3 inconclusive (1 with `strict`).
    pub fn exit_code(&self, strict: bool) -> i32 {
        match self.status {
            Status::Passed | Status::Done => assess::outcome::EXIT_PASS,
            Status::Failed | Status::Error => assess::outcome::EXIT_FAIL,
            Status::Inconclusive if strict => assess::outcome::EXIT_FAIL,
            Status::Inconclusive => assess::outcome::EXIT_INCONCLUSIVE,
        }
    }
}

/// The summary every run ends with: the status line, one line per job in error and per
/// verdict that did not pass, and where the run is stored.
///
/// ```text
/// run 7: FAILED (9 job(s), 0 in error; verdicts: 8 pass, 1 fail, 0 inconclusive)
///   FAILED: read-iops on vol1: iops <= 500 +-3%: iops = 612.0, want <= 515
/// stored in r.db as run 7; `qoslab results show 7 --db r.db`, `qoslab report 7 --db r.db`
/// ```
pub fn summary(rec: &RunRecord, db: &Path) -> String {
    let t = RunTally::of(rec);
    let checks = if t.status == Status::Done {
        "no checks: it ran to the end, nothing was judged".to_string()
    } else {
        format!("verdicts: {}", t.verdicts.summary())
    };
    let mut out = format!(
        "run {}: {} ({} job(s), {} in error; {checks})\n",
        rec.id,
        t.status.as_str().to_uppercase(),
        t.jobs,
        t.failed_jobs,
    );
    for j in rec.jobs.iter().filter(|j| j.status != SUPERSEDED) {
        let on = j
            .volume
            .as_deref()
            .map(|v| format!(" on {v}"))
            .unwrap_or_default();
        if job_in_error(j) {
            out.push_str(&format!("  ERROR: {}{on}: {}\n", j.name, job_error(j)));
        }
        for v in j.verdicts.iter().filter(|v| !v.passed) {
            let label = match v.outcome {
                assess::Outcome::Inconclusive => "INCONCLUSIVE",
                _ => "FAILED",
            };
            out.push_str(&format!(
                "  {label}: {}{on}: {}: {}{}\n",
                j.name,
                v.expectation,
                v.detail,
                v.reason_note()
            ));
        }
    }
    out.push_str(&format!(
        "stored in {db} as run {id}; `qoslab results show {id} --db {db}`, `qoslab report {id} --db {db}`\n",
        db = db.display(),
        id = rec.id,
    ));
    out
}

/// The volumes with a verdict that did not pass while its job's diagnosis discredits the
/// measurement (a starved load generator, a busy host): worth one more run, whose jobs
/// then answer for theirs ([`adopt_rerun`]).
pub fn discredited_volumes(rec: &RunRecord) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for j in rec.jobs.iter().filter(|j| j.status != SUPERSEDED) {
        let noisy = j
            .diagnosis
            .as_ref()
            .is_some_and(|d| d.bottleneck.discredits_measurement());
        if noisy
            && j.verdicts
                .iter()
                .any(|x| x.outcome != assess::Outcome::Pass)
        {
            if let Some(vol) = &j.volume {
                if !v.contains(vol) {
                    v.push(vol.clone());
                }
            }
        }
    }
    v
}

/// A finished run: the stored record and what the harness's one rule made of it
/// (this module's rule).
#[derive(Debug)]
pub struct Outcome {
    pub record: crate::store::RunRecord,
    pub tally: RunTally,
}

impl Outcome {
    /// Nothing failed, nothing inconclusive, no job in error (passed, or done: no checks).
    pub fn passed(&self) -> bool {
        matches!(self.tally.status, Status::Passed | Status::Done)
    }

    pub fn status(&self) -> Status {
        self.tally.status
    }

    /// 0 passed, 1 failed or error, 3 inconclusive (1 with `strict`).
    pub fn exit_code(&self, strict: bool) -> i32 {
        self.tally.exit_code(strict)
    }
}

/// Run `rerun`'s jobs answer for run `first`'s on the same volumes (`Store::adopt_jobs`:
/// one run id, one report); the merged run's status by the rule, stored.
pub fn adopt_rerun(
    store: &crate::store::Store,
    first: i64,
    rerun: i64,
) -> Result<Outcome, crate::store::StoreError> {
    store.adopt_jobs(first, rerun)?;
    let mut record = store.load_run(first)?;
    let tally = RunTally::of(&record);
    store.finish_run(first, tally.status.as_str())?;
    record.status = tally.status.as_str().to_string();
    Ok(Outcome { record, tally })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;
    use assess::Outcome;

    fn job(status: &str, error: i64, verdicts: &[Outcome]) -> JobRecord {
        JobRecord {
            id: 1,
            seq: 1,
            workload: "w".into(),
            name: "j".into(),
            volume: Some("v".into()),
            iteration: 1,
            status: status.into(),
            error: (status == "failed").then(|| "fio exited 1".to_string()),
            results: vec![fio::JobResult {
                error,
                ..Default::default()
            }],
            verdicts: verdicts
                .iter()
                .map(|o| Verdict::new("iops >= 1".into(), 0.0, ">= 1".into(), "x".into(), *o))
                .collect(),
            ..Default::default()
        }
    }

    fn status(jobs: Vec<JobRecord>) -> Status {
        let rec = RunRecord {
            jobs,
            ..Default::default()
        };
        RunTally::of(&rec).status
    }

    #[test]
    fn the_rule_in_order() {
        use Outcome::*;
        type Job<'a> = (&'a str, i64, &'a [Outcome]);
        let cases: &[(&[Job], Status)] = &[
            (&[], Status::Done),
            (&[("done", 0, &[])], Status::Done),
            (&[("done", 0, &[Pass, Pass])], Status::Passed),
            (&[("done", 0, &[Pass, Inconclusive])], Status::Inconclusive),
            (
                &[("done", 0, &[Inconclusive]), ("done", 0, &[Fail])],
                Status::Failed,
            ),
            (&[("done", 0, &[Fail]), ("failed", 0, &[])], Status::Error),
            (&[("done", 5, &[Pass])], Status::Error),
            (&[("running", 0, &[])], Status::Error),
            (
                &[(SUPERSEDED, 0, &[Fail]), ("done", 0, &[Pass])],
                Status::Passed,
            ),
        ];
        for (i, (jobs, want)) in cases.iter().enumerate() {
            let jobs = jobs.iter().map(|(s, e, v)| job(s, *e, v)).collect();
            assert_eq!(status(jobs), *want, "case {i}");
        }
    }

    #[test]
    fn the_summary_names_every_problem_and_where_the_run_is() {
        let rec = RunRecord {
            id: 7,
            jobs: vec![
                job("failed", 0, &[]),
                job("done", 0, &[Outcome::Fail, Outcome::Pass]),
            ],
            ..Default::default()
        };
        let s = summary(&rec, Path::new("r.db"));
        assert_eq!(
            s,
            "run 7: ERROR (2 job(s), 1 in error; verdicts: 1 pass, 1 fail, 0 inconclusive)\n\
             \x20 ERROR: j on v: fio exited 1\n\
             \x20 FAILED: j on v: iops >= 1: x\n\
             stored in r.db as run 7; `qoslab results show 7 --db r.db`, `qoslab report 7 --db r.db`\n"
        );
        assert_eq!(RunTally::of(&rec).exit_code(false), 1);
        // A run without checks says DONE, and so: nothing was judged.
        let rec = RunRecord {
            id: 8,
            jobs: vec![job("done", 0, &[])],
            ..Default::default()
        };
        let s = summary(&rec, Path::new("r.db"));
        assert!(
            s.starts_with("run 8: DONE (1 job(s), 0 in error; no checks: it ran to the end, nothing was judged)\n"),
            "{s}"
        );
        assert_eq!(RunTally::of(&rec).exit_code(true), 0);
    }
}
