//! The generic fio family: a plan's `[[workload]]` tables, each one fio job from raw
//! options (`fio = { ... }`) or a job set by name (`profile = "dbench"`), with expectations
//! judged on fio's results. Every job is one step ([`harness::fio_job::run_job`]).

mod parse;
mod plan;

use harness::plan::{Common, PlanError, PlanSource};
use harness::{Family, FamilyPlan, Registry};
use report::ReportHooks;

pub use parse::{parse_expect, valid_job_name, Workload, WorkloadSpec, JOB_NAME_RULE};
pub use plan::FioPlan;

/// The family.
pub struct Fio;

impl Family for Fio {
    fn name(&self) -> &'static str {
        "fio"
    }

    fn about(&self) -> &'static str {
        "fio jobs from a plan: raw options or a job set by name, with expectations"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["[[workload]]"]
    }

    fn plan_hint(&self, registry: &Registry) -> String {
        let sets: Vec<String> = registry
            .job_set_names()
            .iter()
            .map(|s| format!("profile = \"{s}\""))
            .collect();
        format!("at least one ({} or fio = {{ ... }})", sets.join(" or "))
    }

    fn plan_noun(&self) -> String {
        "[[workload]]s (fio)".into()
    }

    fn parse(
        &self,
        src: &PlanSource,
        common: &Common,
        registry: &Registry,
    ) -> Result<Box<dyn FamilyPlan>, PlanError> {
        let workloads = parse::workloads(src, common, registry)?;
        Ok(Box::new(FioPlan::new(workloads, common)))
    }
}

/// Its reports need nothing beyond the common sections (job sets add theirs).
impl ReportHooks for Fio {}
