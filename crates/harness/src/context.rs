//! What a family's plan works with while it runs ([`Prepare`] before the run row exists,
//! [`RunContext`] after), and what it hands back ([`RunHeader`]).
//!
//! Everything a step records goes to the store as it happens (jobs before their work
//! starts, results and verdicts when each ends, series after each job, summary tables as
//! soon as they change), so a crash loses at most the step in flight.

use fio::{Executor, FioOutput};
use storage_node::NodeConfig;

use crate::plan::Common;
use crate::recording::SeriesRecorder;
use crate::series::JobSeries;
use crate::store::{PolicyRecord, Store, StoreError, SummaryTable, VolumeRecord};
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
                    definition: policy_text(&p.policy),
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
    if let Target::NodeVolumes { volumes, .. } = target {
        for v in volumes {
            store.add_volume(
                run,
                &VolumeRecord {
                    name: v.name.clone(),
                    size: v.size,
                    snapshot_reserve_percent: v.snapshot_reserve_percent,
                    policy: v.policy.clone(),
                    limits: v.limits,
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

/// A policy as ONTAP's CLI shows it (`qos policy-group show`, `qos adaptive-policy-group
/// show`): "fixed: max-throughput 500IOPS, min-throughput 0, is-shared false". Stored as the
/// policy's definition, so reports never print Rust's debug text.
pub fn policy_text(p: &qos_core::Policy) -> String {
    use qos_core::{Allocation, Policy};
    let alloc = |a: Allocation| match a {
        Allocation::AllocatedSpace => "allocated-space",
        Allocation::UsedSpace => "used-space",
    };
    let density = |v: f64| {
        // ONTAP writes per GB when the density is a whole number of IOPS per GB.
        let per_gb = v / 1000.0;
        if v > 0.0 && (per_gb - per_gb.round()).abs() < 1e-9 {
            format!("{}IOPS/GB", per_gb.round())
        } else {
            format!("{v}IOPS/TB")
        }
    };
    // Each kind's own settings, then what they share: the weight (when not the default)
    // and the burst (provisioned policies have none).
    let (mut s, weight, burst) = match p {
        Policy::Fixed(f) => {
            let pair = |iops: u64, mbps: u64| match (iops, mbps) {
                (0, 0) => "0".to_string(),
                (i, 0) => format!("{i}IOPS"),
                (0, m) => format!("{m}MB/s"),
                (i, m) => format!("{i}IOPS,{m}MB/s"),
            };
            let s = format!(
                "fixed: max-throughput {}, min-throughput {}, is-shared {}",
                pair(f.max_iops, f.max_mbps),
                pair(f.min_iops, f.min_mbps),
                f.capacity_shared
            );
            (s, f.weight, f.burst.as_ref())
        }
        Policy::Adaptive(a) => {
            let s = format!(
                "adaptive: expected-iops {}, peak-iops {}, absolute-min-iops {}IOPS, \
                 expected-iops-allocation {}, peak-iops-allocation {}, block-size {}",
                density(a.expected_iops.0),
                density(a.peak_iops.0),
                a.absolute_min_iops,
                alloc(a.expected_allocation),
                alloc(a.peak_allocation),
                a.block_size
            );
            (s, a.weight, a.burst.as_ref())
        }
        Policy::Provisioned(p) => {
            let s = format!(
                "provisioned: model {}, bucket-scale {}, initial {}%",
                p.model, p.bucket_scale, p.initial_percent
            );
            (s, p.weight, None)
        }
    };
    if weight > 1 {
        s.push_str(&format!(", weight {weight}"));
    }
    s.push_str(&burst_text(burst));
    s
}

/// A policy's burst (a qoslab extension), as `policy_text` appends it.
fn burst_text(b: Option<&qos_core::BurstPolicy>) -> String {
    let Some(b) = b else {
        return String::new();
    };
    let rate = match (b.max_iops, b.max_mbps) {
        (i, 0) => format!("{i}IOPS"),
        (0, m) => format!("{m}MB/s"),
        (i, m) => format!("{i}IOPS,{m}MB/s"),
    };
    let bucket = if b.seconds > 0 {
        format!("{}s at full burst", b.seconds)
    } else {
        match (b.bucket_iops, b.bucket_mb) {
            (i, 0) => format!("{i} I/O credits"),
            (0, m) => format!("{m}MB of credits"),
            (i, m) => format!("{i} I/O credits, {m}MB of credits"),
        }
    };
    format!(", burst {rate} on {bucket}, initial {}%", b.initial_percent)
}

#[cfg(test)]
mod policy_text_tests {
    use super::policy_text;
    use qos_core::{AdaptivePolicy, FixedPolicy, IopsPerTb, Policy};

    #[test]
    fn policies_read_as_ontap_shows_them() {
        let f = Policy::Fixed(FixedPolicy {
            max_iops: 500,
            ..Default::default()
        });
        assert_eq!(
            policy_text(&f),
            "fixed: max-throughput 500IOPS, min-throughput 0, is-shared false"
        );
        let f = Policy::Fixed(FixedPolicy {
            max_iops: 1000,
            max_mbps: 100,
            min_iops: 200,
            capacity_shared: true,
            ..Default::default()
        });
        assert_eq!(
            policy_text(&f),
            "fixed: max-throughput 1000IOPS,100MB/s, min-throughput 200IOPS, is-shared true"
        );
        let mut a = AdaptivePolicy::new(IopsPerTb(5000.0), IopsPerTb(50000.0), 0);
        a.peak_allocation = qos_core::Allocation::AllocatedSpace;
        let t = policy_text(&Policy::Adaptive(a));
        assert_eq!(
            t,
            "adaptive: expected-iops 5IOPS/GB, peak-iops 50IOPS/GB, absolute-min-iops 0IOPS, \
             expected-iops-allocation allocated-space, peak-iops-allocation allocated-space, block-size 32K"
        );
        assert!(!t.contains('{') && !t.contains("Adaptive("));
    }

    #[test]
    fn bursts_and_provisioned_models_read_plainly() {
        use qos_core::{BurstPolicy, Model, ProvisionedPolicy};
        let f = Policy::Fixed(FixedPolicy {
            max_iops: 1000,
            burst: Some(BurstPolicy {
                max_iops: 1500,
                seconds: 60,
                ..Default::default()
            }),
            ..Default::default()
        });
        assert_eq!(
            policy_text(&f),
            "fixed: max-throughput 1000IOPS, min-throughput 0, is-shared false, burst 1500IOPS on 60s at full burst, initial 100%"
        );
        let p = Policy::Provisioned(ProvisionedPolicy {
            bucket_scale: 0.0025,
            ..ProvisionedPolicy::new(Model::EbsGp2)
        });
        assert_eq!(
            policy_text(&p),
            "provisioned: model ebs-gp2, bucket-scale 0.0025, initial 100%"
        );
    }
}
