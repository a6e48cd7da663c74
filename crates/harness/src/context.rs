//! What a family's plan works with while it runs ([`Prepare`] before the run row exists,
//! [`RunContext`] after), and what it hands back ([`RunHeader`], [`Tally`]).
//!
//! Everything a step records goes to the store as it happens (jobs before their work
//! starts, results and verdicts when each ends, series after each job, summary tables as
//! soon as they change), so a crash loses at most the step in flight.

use fio::{Executor, FioOutput};
use storage_node::NodeConfig;

use crate::plan::Common;
use crate::recording::SeriesRecorder;
use crate::series::JobSeries;
use crate::store::{PolicyRecord, RunRecord, Store, StoreError, SummaryTable, VolumeRecord};
use crate::target::{EmbeddedNode, Target, TargetError};
use crate::ui::Ui;
use crate::verdict::Verdict;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The plan cannot run as given (a message naming the plan and what is missing).
    #[error("{0}")]
    Plan(String),
}

/// One step of a plan: a fio job, a ramp run, an isolation step. The harness shows its
/// `label` on the progress line.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub label: String,
    /// Expected wall time, seconds (runtime plus ramp for a fio job).
    pub expected_secs: f64,
}

/// What the run row records about how the run was made.
#[derive(Debug, Clone, PartialEq)]
pub struct RunHeader {
    /// The target, as the reports name it.
    pub target: String,
    /// What issued the I/O ("local fio", "qoslab genio (ramp profile)").
    pub executor: String,
    pub runtime_s: f64,
    pub ramp_s: f64,
    /// Replaces the detected fio version when fio plays no part.
    pub fio_version: Option<String>,
}

/// A run's result, as its family judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Passed,
    /// An expectation failed.
    Failed,
    /// A job failed to run (fio errors, I/O errors).
    Error,
}

impl Status {
    /// The word the results store keeps.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Error => "error",
        }
    }
}

/// What [`crate::family::FamilyPlan::finish`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub status: Status,
    pub failed_jobs: usize,
    pub failed_verdicts: usize,
}

/// A finished run: the stored record and its family's counts.
#[derive(Debug)]
pub struct Outcome {
    pub record: RunRecord,
    pub failed_verdicts: usize,
    pub failed_jobs: usize,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.record.status == Status::Passed.as_str()
    }
}

/// Before the run row exists: check the target, start or open what the family needs.
pub struct Prepare<'a> {
    pub common: &'a Common,
    pub target: &'a Target,
    /// The embedded node the harness started from the plan's volumes (embedded target).
    pub node: Option<&'a EmbeddedNode>,
    pub exec: &'a dyn Executor,
    pub ui: &'a mut dyn Ui,
}

/// While the steps run.
pub struct RunContext<'a> {
    pub common: &'a Common,
    pub target: &'a Target,
    pub node: Option<&'a EmbeddedNode>,
    pub exec: &'a dyn Executor,
    pub ui: &'a mut dyn Ui,
    pub store: &'a mut Store,
    /// The run's id in the store.
    pub run: i64,
    /// fio's logs and the node's samples, per job.
    pub recorder: &'a SeriesRecorder,
}

impl RunContext<'_> {
    /// Record that a job is starting (before its work).
    #[allow(clippy::too_many_arguments)]
    pub fn begin_job(
        &mut self,
        seq: u32,
        workload: &str,
        name: &str,
        volume: Option<&str>,
        iteration: u32,
        jobfile: &str,
    ) -> Result<i64, StoreError> {
        self.store
            .begin_job(self.run, seq, workload, name, volume, iteration, jobfile)
    }

    /// Record a job's outcome, results and verdicts (one transaction).
    pub fn finish_job(
        &mut self,
        job: i64,
        outcome: Result<&FioOutput, &str>,
        verdicts: &[Verdict],
    ) -> Result<(), StoreError> {
        self.store.finish_job(job, outcome, verdicts)
    }

    /// Record a job of a request/response driver (S3): its raw output and per-operation
    /// results, or its failure; and its verdicts (one transaction).
    pub fn finish_op_job(
        &mut self,
        job: i64,
        outcome: Result<&str, &str>,
        ops: &[crate::ops::OpResult],
        verdicts: &[Verdict],
    ) -> Result<(), StoreError> {
        self.store.finish_op_job(job, outcome, ops, verdicts)
    }

    /// Store a job's time series (nothing when it is empty).
    pub fn add_series(&mut self, s: &JobSeries) -> Result<(), StoreError> {
        if s.is_empty() {
            return Ok(());
        }
        self.store.add_series(s)
    }

    /// Store a summary table, replacing the run's table of the same kind and name.
    pub fn put_table(&mut self, t: &SummaryTable) -> Result<(), StoreError> {
        self.store.put_table(self.run, t)
    }

    /// Record an embedded node's policies and volumes (a family that starts its own).
    pub fn record_node(&mut self, node: &EmbeddedNode, cfg: &NodeConfig) -> Result<(), StoreError> {
        record_setup(
            self.store,
            self.run,
            Some(node),
            Some(cfg),
            &Target::Embedded,
        )
    }
}

/// Store what a run ran on: the embedded node's policies and volumes (with their effective
/// limits as the node computed them), or the `--node` volume as its API reported it.
pub fn record_setup(
    store: &Store,
    run: i64,
    node: Option<&EmbeddedNode>,
    cfg: Option<&NodeConfig>,
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
