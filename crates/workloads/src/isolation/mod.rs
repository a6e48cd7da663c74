//! The `isolation` family: do floors protect volumes from a noisy neighbour?
//!
//! Seed 001's story on an emulated controller: `protected` volumes under a floor policy,
//! each driven at a constant rate equal to its floor (fio `rate_iops`), beside one bully
//! volume with no policy whose offered load ramps from 1x to 2x the capacity the floors
//! leave over. The node is an embedded qoslab node with `[capacity]` declared, so the
//! contention is the same on any machine.
//!
//! The run happens twice: with floors (mClock) and as the control (the same node in FIFO
//! discipline: arrival order, floors ignored, as an array without floor QoS). Per step
//! and volume it records IOPS, mean and p99 latency, and the node's QoS queue times
//! (ceiling and floor waits, per request, from the node's own counters).
//!
//! Verdicts (floors run, each protected volume, every step): IOPS ≥ 98% of the target,
//! and p99 latency ≤ 2× the first step's. The control must show the bully mattering: a
//! protected volume below 98% of its target at some step (otherwise the scenario proves
//! nothing, and that verdict fails saying so).

mod charts;
mod cli;
mod render;
mod results;
mod run;
mod spec;

use clap::Args;
use harness::plan::{Common, PlanError};
use harness::store::SummaryTable;
use harness::{Family, Plan, ProfileRequest, Registry};
use report::svg::Chart;
use report::ReportHooks;

pub use cli::IsolationArgs;
pub use render::render;
pub use results::{floors_held, table, Row, COLUMNS, KIND, P99_METRIC};
pub use run::IsolationPlan;
pub use spec::{IsolationSpec, Mode, Protocol};

/// The family's name (`--profile isolation`).
pub const NAME: &str = "isolation";

/// The family: `--profile isolation` builds its own embedded nodes.
pub struct Isolation;

/// The plan that runs `spec` (what `--profile isolation` makes; `qoslab demo` too).
pub fn plan(spec: IsolationSpec) -> Plan {
    Plan {
        common: Common::without_file(NAME, "--profile isolation", spec.describe()),
        family: NAME,
        body: Box::new(IsolationPlan::new(spec)),
    }
}

impl Family for Isolation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "floors against a noisy neighbour on an emulated controller, with the FIFO control (seed 001)"
    }

    fn offers_profile(&self) -> bool {
        true
    }

    fn profile(&self, req: &ProfileRequest, _registry: &Registry) -> Result<Plan, PlanError> {
        if req.scale.is_some() {
            return Err(PlanError(
                "--profile isolation takes no --scale (its size is --capacity-iops, its time --runtime)"
                    .into(),
            ));
        }
        if req.plan_file || req.target || req.node || req.clients {
            return Err(PlanError(
                "--profile isolation builds its own embedded node (an emulated controller): \
                 it takes no plan, --target, --node or --client"
                    .into(),
            ));
        }
        let spec = match req.args {
            Some(m) => crate::family_flags::<IsolationArgs>(m)?
                .spec(req.runtime, req.ramp)
                .map_err(PlanError)?,
            None => {
                let spec = IsolationSpec {
                    runtime: req.runtime.unwrap_or(5.0),
                    ramp: req.ramp.unwrap_or(1.0),
                    ..IsolationSpec::default()
                };
                spec.validate()
                    .map_err(|e| PlanError(format!("--profile isolation: {e}")))?;
                spec
            }
        };
        Ok(plan(spec))
    }

    fn cli(&self, cmd: clap::Command) -> clap::Command {
        IsolationArgs::augment_args(cmd)
    }
}

/// The step table's charts: IOPS per step per mode, protected p99 floors vs control.
impl ReportHooks for Isolation {
    fn table_charts(&self, t: &SummaryTable) -> Option<Vec<Chart>> {
        (t.kind == KIND).then(|| charts::charts(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;
    use harness::node_spec::NodeSpec;
    use storage_node::NodeConfig;

    #[test]
    fn loads_and_validation() {
        let s = IsolationSpec::default();
        assert_eq!(s.loads(), vec![1.0, 1.25, 1.5, 1.75, 2.0]);
        assert_eq!(s.remaining(), 10_000);
        assert_eq!(s.bully_iops(2.0), 20_000);
        assert!(s.validate().is_ok());
        let bad = IsolationSpec {
            floor_iops: 10_000,
            ..IsolationSpec::default()
        };
        assert!(bad.validate().unwrap_err().contains("leave capacity"));
        let one = IsolationSpec {
            steps: 1,
            ..IsolationSpec::default()
        };
        assert_eq!(one.loads(), vec![2.0]);
        let cfg = NodeConfig::parse(&s.node_toml(Mode::Control), "t").unwrap();
        assert_eq!(cfg.volumes.len(), 3);
        assert_eq!(
            cfg.capacity.unwrap().discipline,
            storage_node::config::Discipline::Fifo
        );
    }

    #[test]
    fn each_volume_spreads_over_its_jobs_and_one_job_keeps_the_plain_file() {
        let cfg = NodeSpec::parse(&IsolationSpec::default().node_toml(Mode::Floors), "t").unwrap();
        let node = harness::target::EmbeddedNode::start(&cfg).unwrap();
        let plain = IsolationSpec::default()
            .job_file(&node, 2.0, None)
            .unwrap()
            .render();
        assert!(
            !plain.contains("numjobs") && !plain.contains("group_reporting"),
            "{plain}"
        );
        assert!(plain.contains("rate_iops=20000"), "{plain}");
        let many = IsolationSpec {
            bully_jobs: 3,
            protected_jobs: 2,
            ..IsolationSpec::default()
        };
        let f = many.job_file(&node, 2.0, None).unwrap().render();
        assert!(f.contains("group_reporting=1"), "{f}");
        assert_eq!(f.matches("new_group=1").count(), 3, "{f}");
        // 20,000 IOPS over 3 jobs: 6,667 each; a 5,000 IOPS floor over 2: 2,500 each.
        assert!(
            f.contains("rate_iops=6667") && f.contains("numjobs=3"),
            "{f}"
        );
        assert_eq!(f.matches("rate_iops=2500").count(), 2, "{f}");
        node.stop();
        // The defaults follow the rate: seed 001 at 300k/75k x 2 needs 5 bully jobs, 2 each.
        assert_eq!(spec::jobs_for(300_000), 5);
        assert_eq!(spec::jobs_for(75_000), 2);
        assert_eq!(spec::jobs_for(20_000), 1);
        let bad = IsolationSpec {
            bully_jobs: 0,
            ..IsolationSpec::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .contains("bully jobs 0: allowed 1 to 64"));
    }

    #[test]
    fn over_iscsi_every_volume_is_a_lun_driven_by_libiscsi() {
        let spec = IsolationSpec {
            protocol: Protocol::Iscsi,
            ..IsolationSpec::default()
        };
        let cfg = NodeSpec::parse(&spec.node_toml(Mode::Floors), "t").unwrap();
        let luns: Vec<(&str, u16)> = cfg
            .iscsi
            .luns
            .iter()
            .map(|l| (l.volume.as_str(), l.number))
            .collect();
        assert_eq!(luns, [("protected-1", 0), ("protected-2", 1), ("bully", 2)]);
        assert!(spec.describe().contains("over iSCSI (each volume a LUN"));
        let node = harness::target::EmbeddedNode::start(&cfg).unwrap();
        let f = spec.job_file(&node, 1.0, None).unwrap().render();
        assert!(f.contains("ioengine=libiscsi"), "{f}");
        assert!(
            f.contains(&format!("initiator={}", harness::iscsi::INITIATOR)),
            "{f}"
        );
        assert!(!f.contains("uri="), "{f}");
        // fio splits filename at ':': the URL's colons are escaped.
        let lun2 = node.iscsi_url("bully").unwrap().replace(':', "\\:");
        assert!(f.contains(&format!("filename={lun2}")), "{f}");
        assert!(lun2.ends_with("/2"), "{lun2}");
        node.stop();
        // A node whose volumes are no LUNs: the job file says which.
        let plain =
            NodeSpec::parse(&IsolationSpec::default().node_toml(Mode::Floors), "t").unwrap();
        let node = harness::target::EmbeddedNode::start(&plain).unwrap();
        let e = spec.job_file(&node, 1.0, None).unwrap_err();
        assert!(e.contains("volume \"protected-1\" is no LUN"), "{e}");
        node.stop();
        // The command line: NBD unless --protocol iscsi; anything else is refused.
        let cmd = <IsolationArgs as clap::Args>::augment_args(clap::Command::new("t"));
        let args = |a: &[&str]| {
            let m = cmd
                .clone()
                .try_get_matches_from([&["t"], a].concat())
                .map_err(|e| e.to_string())?;
            IsolationArgs::from_arg_matches(&m).map_err(|e| e.to_string())
        };
        assert_eq!(
            args(&[]).unwrap().spec(None, None).unwrap().protocol,
            Protocol::Nbd
        );
        let s = args(&["--protocol", "iscsi"])
            .unwrap()
            .spec(None, None)
            .unwrap();
        assert_eq!(s.protocol, Protocol::Iscsi);
        let e = args(&["--protocol", "nfs"]).unwrap_err();
        assert!(e.contains("[possible values: nbd, iscsi]"), "{e}");
    }

    #[test]
    fn table_round_trips_and_renders_side_by_side() {
        let row = |mode, step, volume: &str, iops, p99, pass| Row {
            mode,
            step,
            bully_load: 1.0 + f64::from(step - 1),
            volume: volume.into(),
            protected: volume != "bully",
            target_iops: if volume == "bully" {
                10_000 * u64::from(step)
            } else {
                5000
            },
            iops,
            lat_mean_ms: 0.2,
            lat_p99_ms: p99,
            ceiling_wait_ms: 0.0,
            floor_wait_ms: if volume == "bully" { 3.5 } else { 0.0 },
            node_lat_ms: 0.02,
            pass,
        };
        let rows = vec![
            row(Mode::Floors, 1, "protected-1", 4999.0, 0.3, true),
            row(Mode::Floors, 1, "bully", 10000.0, 9.0, true),
            row(Mode::Floors, 2, "protected-1", 4998.0, 0.35, true),
            row(Mode::Floors, 2, "bully", 10001.0, 9.0, true),
            row(Mode::Control, 1, "protected-1", 4990.0, 1.0, true),
            row(Mode::Control, 1, "bully", 10000.0, 3.0, true),
            row(Mode::Control, 2, "protected-1", 3900.0, 5.0, false),
            row(Mode::Control, 2, "bully", 16000.0, 3.0, true),
        ];
        let t = table(&rows, Protocol::Nbd);
        assert_eq!(t.columns.len(), COLUMNS.len());
        assert_eq!(t.rows.len(), rows.len());
        let at = |r: usize, c: &str| t.rows[r][t.column(c).unwrap()].clone();
        assert_eq!(at(6, "mode"), "control");
        assert_eq!(at(6, "volume"), "protected-1");
        assert_eq!(at(6, "iops"), 3900.0);
        assert_eq!(at(6, "pass"), false);
        assert_eq!(at(7, "role"), "bully");
        assert_eq!(at(7, "protocol"), "nbd");
        assert_eq!(
            table(&rows, Protocol::Iscsi).rows[0][t.column("protocol").unwrap()],
            "iscsi"
        );
        assert!(render(&rows, Protocol::Iscsi)
            .starts_with("Protected LUNs over iSCSI (target 5000 IOPS each)"));
        let text = render(&rows, Protocol::Nbd);
        let expected = "\
Protected volumes over NBD (target 5000 IOPS each): worst of them per step
Step    Bully load |       IOPS    p99 ms bully q ms bully IOPS |       IOPS    p99 ms bully q ms bully IOPS
                   |            with floors (mClock)             |          control: no floors (FIFO)
1      1.00x 10000 |       4999      0.30       3.50      10000 |       4990      1.00       3.50      10000
2      2.00x 20000 |       4998      0.35       3.50      10001 |     3900 !      5.00       3.50      16000
";
        assert!(text.starts_with(expected), "got:\n{text}");
    }
}
