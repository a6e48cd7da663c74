//! The `tenants` family (seed 004): storage classes whose tenants claim volumes on the
//! embedded node or a `--node` (through its REST API), or a directory each on a
//! `--target DIR` (`backend`); real applications on mounted file systems (git, redis,
//! build, broker: `loadgen::apps`) or fio on the volumes, swept from 1 to N tenants per
//! class; per point and class the
//! failures, the distribution of the tenants' figures, fairness, first/last done, the
//! node's QoS waits and the load; seed 004's tables and degradation curves
//! (docs/TENANTS.md).

mod app_spec;
pub mod backend;
pub mod charts;
mod cli;
mod diagnose;
pub mod fio_group;
pub mod fio_mix;
pub mod load;
pub mod point;
pub mod remote;
pub mod rows;
mod run;
pub mod runner;
pub mod spec;
pub mod stats;
pub mod sweep;
pub mod tables;
pub mod verdicts;

use clap::Args;
use harness::plan::{Common, PlanError, PlanSource};
use harness::store::SummaryTable;
use harness::{Family, FamilyPlan, Plan, ProfileRequest, Registry};
use report::svg::Chart;
use report::ReportHooks;
use serde::Deserialize;

pub use cli::TenantsArgs;
pub use run::{TenantsPlan, KIND, SEED_KIND};
pub use spec::TenantsSpec;

/// The family's name (`--profile tenants`).
pub const NAME: &str = "tenants";

pub struct Tenants;

/// The plan's view for this family: its two tables.
#[derive(Deserialize)]
struct View {
    tenants: Option<spec::RawTenants>,
    #[serde(default)]
    class: Vec<spec::RawClass>,
}

impl Family for Tenants {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `--node URL` alone (it creates its tenants' volumes there) and a list of block
    /// devices (one per tenant).
    fn accepts(&self) -> harness::Accepts {
        harness::Accepts {
            node_alone: true,
            devices: true,
            own_directory: true,
            ..Default::default()
        }
    }

    fn about(&self) -> &'static str {
        "real applications (git, redis, build, broker) or fio on a volume per tenant, swept from 1 to N tenants per class: failures, fairness, degradation curves (seed 004)"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["[tenants]", "[[class]]"]
    }

    fn parse(
        &self,
        src: &PlanSource,
        common: &Common,
        _registry: &Registry,
    ) -> Result<Box<dyn FamilyPlan>, PlanError> {
        let v: View = src.deserialize()?;
        if !common.volumes().is_empty() {
            return Err(PlanError(format!(
                "{}: a tenants plan declares no [[volume]]: its tenants' volumes are created per point from the [[class]]es",
                src.origin
            )));
        }
        let spec = TenantsSpec::from_raw(&v.tenants.unwrap_or_default(), &v.class)
            .map_err(|e| PlanError(format!("{}: {e}", src.origin)))?;
        Ok(Box::new(TenantsPlan::new(spec)))
    }

    fn offers_profile(&self) -> bool {
        true
    }

    fn profile(&self, req: &ProfileRequest, _registry: &Registry) -> Result<Plan, PlanError> {
        if req.plan_file || req.clients {
            return Err(PlanError(
                "--profile tenants runs its applications on this machine: it takes no plan file and no --client (its targets: the embedded node, --node URL, --target DIR); write a plan with [tenants] and [[class]] tables for more (docs/TENANTS.md)".into(),
            ));
        }
        let args: TenantsArgs = crate::profile_flags(req)?;
        let spec = args.spec(req.runtime, req.ramp).map_err(PlanError)?;
        Ok(Plan {
            common: Common::without_file(NAME, "--profile tenants", args.describe()),
            family: NAME,
            body: Box::new(TenantsPlan::new(spec)),
        })
    }

    fn cli(&self, cmd: clap::Command) -> clap::Command {
        TenantsArgs::augment_args(cmd)
    }
}

/// The summary table's degradation curves.
impl ReportHooks for Tenants {
    fn table_charts(&self, t: &SummaryTable) -> Option<Vec<Chart>> {
        match t.kind.as_str() {
            KIND if t.name == "summary" => Some(charts::charts(&t.columns, &t.rows)),
            KIND | SEED_KIND => Some(Vec::new()),
            _ => None,
        }
    }
}
