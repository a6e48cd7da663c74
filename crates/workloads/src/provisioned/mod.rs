//! The `provisioned` family: seed 003's FSx for ONTAP performance workshop as a profile,
//! judged against a provisioned spec.
//!
//! The target is a provisioned file system (an FSx for ONTAP throughput-capacity preset or
//! node.toml's `[provisioned]` keys: network, disk and SSD IOPS with baseline and burst, a
//! memory and an NVMe cache, a single-flow limit) or a volume under a vendor's model (EBS
//! gp2/st1/sc1, Azure Premium SSD). On the embedded node the family starts a node that
//! emulates the spec; on any other target (a real FSx mount, an EBS device, an NBD export,
//! a `--node` volume) the spec says what the target promises.
//!
//! The workshop (a file system), in the seed's order: write the in-memory data set (2 x 16
//! MiB, 1 MiB blocks, 2 x QD64) and read it over one connection (the single-flow limit)
//! and over 16 (`nconnect=16`) until the network credits run out (burst, then baseline);
//! write a data set larger than the memory cache and smaller than the NVMe cache and read
//! it; 4 KiB writes and reads against the provisioned SSD IOPS. A volume model: each
//! bursting dimension from a full bucket until it is empty. `--scale` shrinks sizes and
//! times together so the whole story runs in minutes.
//!
//! Each step has checks against the spec (`bw >= spec.disk.baseline`, `burst_duration ~=
//! spec.burst_seconds +-5%`, `bw_after_credits ~= spec.baseline +-3%`; the grammar is in
//! [`check`]); a plan may replace them per step. The results: a summary table in the
//! seed's story layout (kind `provisioned`), the terminal table, and a report section with
//! the transitions.
//!
//! ```toml
//! [provisioned]                 # the spec: node.toml's [provisioned] keys ...
//! preset = "fsx-ontap-128"
//! scale = 0.005
//! # ... or a volume model: model = "ebs-gp2", size = "100GiB", bucket_scale = 0.0025
//!
//! [provisioned.run]             # optional
//! connections = 16
//! runtime = "2s"                # time-based steps (burst steps run until the credits are out)
//! steps = ["mem-write", "mem-read-1", "mem-read-16"]
//!
//! [provisioned.expect]          # optional: replace a step's checks
//! "mem-read-16" = ["burst_duration ~= spec.burst_seconds +-5%"]
//! ```

mod balance;
pub mod charts;
pub mod check;
mod cli;
pub mod kept;
mod measure;
pub mod results;
mod run;
pub mod spec;
pub mod steps;

use clap::Args;
use harness::plan::{Common, PlanError, PlanSource};
use harness::store::{RunRecord, SummaryTable};
use harness::{Family, FamilyPlan, Plan, ProfileRequest, Registry};
use report::svg::Chart;
use report::ReportHooks;

pub use cli::{parse_plan, ProvisionedArgs, Settings};
pub use measure::{transition, Transition};
pub use results::{Row, KIND};
pub use run::ProvisionedPlan;
pub use spec::Spec;

/// The family's name (`--profile provisioned`).
pub const NAME: &str = "provisioned";

/// The plan origin of `--profile provisioned`.
pub const PROFILE_ORIGIN: &str = "--profile provisioned";

/// The family.
pub struct Provisioned;

/// The plan `--profile provisioned` runs against `spec`.
pub fn plan(spec: Spec, settings: Settings) -> Plan {
    let text = format!(
        "# qoslab bench --profile provisioned\n# {}\n\n{}",
        spec.describe(),
        spec.node_toml()
    );
    Plan {
        common: Common::without_file(NAME, PROFILE_ORIGIN, text),
        family: NAME,
        body: Box::new(ProvisionedPlan::new(spec, settings)),
    }
}

impl Family for Provisioned {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "seed 003's FSx workshop against a provisioned spec: cached reads, burst then baseline, 1 vs 16 connections, IOPS; or a volume model's burst (EBS, Azure)"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["[provisioned]"]
    }

    fn parse(
        &self,
        src: &PlanSource,
        common: &Common,
        _registry: &Registry,
    ) -> Result<Box<dyn FamilyPlan>, PlanError> {
        if common.node.is_some() {
            return Err(PlanError(format!(
                "{}: [provisioned] describes the target; on the embedded node the family starts its own node from it: leave out [[volume]], [[policy]] and [capacity]",
                src.origin
            )));
        }
        let (spec, settings) = parse_plan(src)?;
        Ok(Box::new(ProvisionedPlan::new(spec, settings)))
    }

    fn offers_profile(&self) -> bool {
        true
    }

    fn profile(&self, req: &ProfileRequest, _registry: &Registry) -> Result<Plan, PlanError> {
        if req.clients {
            return Err(PlanError(
                "--profile provisioned counts connections per fio job on this machine: it takes no --client".into(),
            ));
        }
        let args: ProvisionedArgs = crate::profile_flags(req)?;
        let spec = args.spec(req.scale, req.embedded).map_err(PlanError)?;
        Ok(plan(spec, Settings::default()))
    }

    fn cli(&self, cmd: clap::Command) -> clap::Command {
        ProvisionedArgs::augment_args(cmd)
    }
}

/// The table's charts, and a section with the transitions.
impl ReportHooks for Provisioned {
    fn table_charts(&self, t: &SummaryTable) -> Option<Vec<Chart>> {
        (t.kind == KIND).then(|| charts::table_charts(t))
    }

    fn html(&self, run: &RunRecord) -> String {
        charts::html(run)
    }

    fn html_charts(&self, run: &RunRecord) -> Vec<(String, Vec<Chart>)> {
        charts::transitions(run)
    }
}
