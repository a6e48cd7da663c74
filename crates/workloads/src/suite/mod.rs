//! The `suites` family: seed 002's system suites over many hosts reached by ssh, on the
//! `suites` crate's engines (docs/SUITES.md).
//!
//! - `--suite network`: iperf3 between every ordered pair in turn, then all pairs at once;
//!   a job per pair (its iperf3 JSON, verdicts: goodput >= 0.9 x rated, retransmits) and
//!   per host under load (cumulative out and in); the matrix on the terminal and as a heat
//!   map in the report.
//! - `--suite disks`: each device alone, all devices of a host together, optionally every
//!   host at once; sizing from each host's facts (shown); a prefill; iterations with spread;
//!   SNIA's steady-state check on fio's windows; iostat per device.
//! - `--suite nfs|iscsi|block|dir`: every load generator on its own mount or device through
//!   fio client/server, after the seed's prepare step; per-client and merged results.
//!
//! A plan names the same with `[suite]` and `[[host]]` tables ([`spec`]).

mod cli;
mod remote_tools;
mod render;
mod results;
mod run;
mod sections;
mod spec;
mod verdicts;

use clap::Args;
use harness::plan::{Common, PlanError, PlanSource};
use harness::store::{RunRecord, SummaryTable};
use harness::{Family, FamilyPlan, Plan, ProfileRequest, Registry};
use report::svg::Chart;
use report::ReportHooks;
use serde::Deserialize;

pub use cli::SuiteArgs;
pub use remote_tools::{from_args as remote_tools, RemoteTools};
pub use results::{
    CLIENTS, CONNECTIVITY, FIO, HOSTS, INTERVALS, IOSTAT, PAIRS, SIZING, UNDER_LOAD, VMSTAT,
};
pub use run::SuitePlan;
pub use spec::{HostSpec, Kind, SuiteSpec, KINDS};

/// The family's name.
pub const NAME: &str = "suites";

/// The family: `--suite NAME` and plans with `[suite]` and `[[host]]`.
pub struct Suites;

/// The plan that runs `spec`.
pub fn plan(spec: SuiteSpec) -> Plan {
    let origin = format!("--suite {}", spec.kind.name());
    Plan {
        common: Common::without_file(
            &format!("suite-{}", spec.kind.name()),
            &origin,
            spec.describe(),
        ),
        family: NAME,
        body: Box::new(SuitePlan::new(spec)),
    }
}

#[derive(Deserialize)]
struct View {
    suite: spec::RawSuite,
    #[serde(default)]
    host: Vec<HostSpec>,
    #[serde(default)]
    bench: Option<BenchTiming>,
}

/// Which of `[bench]`'s timing keys the plan gave (the common parser fills in defaults
/// that are dbench's, not the suites').
#[derive(Deserialize)]
struct BenchTiming {
    runtime: Option<toml::Value>,
    ramp: Option<toml::Value>,
    iterations: Option<toml::Value>,
}

impl Family for Suites {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `--hosts` names the suites' own hosts.
    fn accepts(&self) -> harness::Accepts {
        harness::Accepts {
            own_hosts: true,
            ..Default::default()
        }
    }

    fn about(&self) -> &'static str {
        "seed 002's system suites over ssh: the network mesh (iperf3), disks one by one and together, NFS/iSCSI/block/dir through fio client/server"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["[suite]", "[[host]]"]
    }

    fn plan_hint(&self, _registry: &Registry) -> String {
        "[suite] and [[host]]s for a system suite".into()
    }

    fn plan_noun(&self) -> String {
        "[suite] and [[host]]s (a system suite)".into()
    }

    fn parse(
        &self,
        src: &PlanSource,
        common: &Common,
        _registry: &Registry,
    ) -> Result<Box<dyn FamilyPlan>, PlanError> {
        let v: View = src.deserialize()?;
        // A plan reaches its hosts; it runs nothing here (the command line's --ssh-opt may).
        hosts::ssh::check_plan_options(&v.suite.ssh_options)
            .map_err(|e| PlanError(format!("{}: suite.ssh_options: {e}", src.origin)))?;
        if let Some(c) = &v.suite.ssh_config {
            return Err(PlanError(format!(
                "{}: suite.ssh_config = {:?}: a plan cannot name an ssh config file (one can \
                 run programs here: ProxyCommand, LocalCommand, Match exec); give --ssh-config \
                 FILE on the command line",
                src.origin,
                c.display()
            )));
        }
        let mut s = v
            .suite
            .spec(v.host)
            .map_err(|e| PlanError(format!("{}: {}", src.origin, e.0)))?;
        if let Some(b) = v.bench {
            if b.runtime.is_some() {
                s.runtime = Some(common.runtime);
            }
            if b.ramp.is_some() {
                s.ramp = Some(common.ramp);
            }
            if b.iterations.is_some() {
                s.iterations = Some(common.iterations);
            }
        }
        if common.node.is_some() {
            return Err(PlanError(format!(
                "{}: a system suite runs on its hosts; [[policy]], [[volume]] and [capacity] do not apply",
                src.origin
            )));
        }
        // Hosts may come from the command line; everything is checked in configure.
        Ok(Box::new(SuitePlan::new(s)))
    }

    fn suites(&self) -> &'static [&'static str] {
        &KINDS
    }

    fn suite(
        &self,
        name: &str,
        req: &ProfileRequest,
        _registry: &Registry,
    ) -> Result<Plan, PlanError> {
        let kind = Kind::parse(name).map_err(|e| PlanError(format!("--suite {e}")))?;
        if req.plan_file || req.target || req.node || req.clients {
            return Err(PlanError(format!(
                "--suite {name} runs on the hosts of --hosts: it takes no plan file, --target, --node or --client \
                 (a plan file with [suite] and [[host]] tables runs a suite too)"
            )));
        }
        let mut spec = SuiteSpec::new(kind);
        if let Some(m) = req.args {
            crate::family_flags::<SuiteArgs>(m)?
                .apply(&mut spec)
                .map_err(PlanError)?;
        }
        spec.runtime = req.runtime;
        spec.ramp = req.ramp;
        spec.validate().map_err(PlanError)?;
        Ok(plan(spec))
    }

    fn cli(&self, cmd: clap::Command) -> clap::Command {
        SuiteArgs::augment_args(cmd)
    }
}

impl ReportHooks for Suites {
    fn table_charts(&self, t: &SummaryTable) -> Option<Vec<Chart>> {
        sections::charts(t)
    }

    fn markdown(&self, run: &RunRecord) -> String {
        sections::markdown(run)
    }

    fn html(&self, run: &RunRecord) -> String {
        sections::html(run)
    }
}
