//! The ramp family's plans through the registry: the example plans, errors with the plan's
//! lines, command-line overrides (moved from the family's unit tests: they need the registry).

use harness::{Plan, PlanError};
use workloads::ramp::{Overrides, RampPlan, RampRun, NAME};
use workloads::registry;

use crate::support::profile_with;

/// The ramp part of a plan.
fn ramp_plan(p: &Plan) -> Option<RampPlan> {
    p.body_as::<RampRun>().map(|r| r.plan.clone())
}

fn profile_plan(embedded: bool) -> Result<Plan, PlanError> {
    profile_with(NAME, |r| r.embedded = embedded)
}

#[test]
fn the_example_ramp_plans_are_valid() {
    let load = |f: &str| {
        let p = format!("{}/../../examples/{f}", env!("CARGO_MANIFEST_DIR"));
        registry().load(std::path::Path::new(&p), false).unwrap()
    };
    let p = load("seed001-ramp.toml");
    let r = ramp_plan(&p).unwrap();
    assert_eq!(r.systems.len(), 3);
    assert_eq!((r.systems[2].min_iops, r.systems[2].max_iops), (900, 1800));
    assert!((r.settings.cycle_limit_s() - 1.125).abs() < 1e-9);
    assert_eq!(p.common.node.as_ref().unwrap().capacity.unwrap().iops, 3500);
    assert!(p.family == NAME && p.body_as::<workloads::fio_plan::FioPlan>().is_none());
    let r = ramp_plan(&load("ramp-cycle-2000.toml")).unwrap();
    assert_eq!(r.settings.dirty_blocks, Some(4000));
    assert_eq!(r.settings.read_pct, 0.0);
    let r = ramp_plan(&load("ramp-controller.toml")).unwrap();
    assert_eq!(r.systems[0].target_iops(9, r.settings.runs), 4000);
}

#[test]
fn plan_errors_name_the_line_and_key() {
    let e = |t: &str| registry().parse(t, "p.toml").unwrap_err().0;
    let v = "[[volume]]\nname = \"a\"\nsize = \"1GB\"\n";
    for (bad, want) in [
        (format!("{v}[ramp]\nruns = 3\n"), "p.toml:4: [ramp] without any [[system]]"),
        (format!("{v}[[system]]\nname = \"s\"\nmax_iops = 5\n"), "p.toml:4: system \"s\": min_iops is required"),
        (format!("{v}[[system]]\nmin_iops = 0\nmax_iops = 5\n"), "p.toml:5: system \"system1\": min_iops = 0: allowed 1 .. 100000000"),
        (format!("{v}[ramp]\ncycle = \"x\"\n[[system]]\nmin_iops = 1\nmax_iops = 5\n"), "p.toml:5: ramp.cycle: invalid duration"),
        (format!("{v}[ramp]\nrunz = 3\n"), "unknown field `runz`"),
        (format!("{v}[[system]]\nmin_iops = 1\nmax_iops = 5\n[[workload]]\nfio = {{ rw = \"read\" }}\n"), "not both"),
        (format!("{v}[[system]]\nvolume = \"a\"\ntarget = \"/tmp\"\nmin_iops = 1\nmax_iops = 5\n"), "not both"),
        (format!("{v}[[system]]\nname = \"s\"\ntarget = \"iscsi://h/iqn.2026-01.lab.qoslab:n/0\"\nmin_iops = 1\nmax_iops = 5\n"), "p.toml:4: system \"s\": target = \"iscsi://h/iqn.2026-01.lab.qoslab:n/0\": the ramp's generator speaks NBD and files, not NFS or iSCSI"),
    ] {
        let got = e(&bad);
        assert!(got.contains(want), "for:\n{bad}\ngot: {got}\nwant: {want}");
    }
}

#[test]
fn overrides_apply_and_validate() {
    let mut p = ramp_plan(&profile_plan(true).unwrap()).unwrap();
    p.apply(&Overrides {
        min_iops: Some(1000),
        max_iops: Some(10000),
        scale: Some(0.05),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(p.systems[0].volume.as_deref(), Some("bench"));
    assert_eq!(
        (p.systems[0].min_iops, p.systems[0].max_iops),
        (1000, 10000)
    );
    for (o, want) in [
        (
            Overrides {
                max_iops: Some(10),
                ..Default::default()
            },
            "max_iops (--max-iops) = 10: allowed min_iops (1000)",
        ),
        (
            Overrides {
                runs: Some(0),
                ..Default::default()
            },
            "runs (--runs) = 0: allowed 1 .. 1000",
        ),
        (
            Overrides {
                scale: Some(0.0),
                ..Default::default()
            },
            "scale (--scale) = 0",
        ),
        (
            Overrides {
                read_pct: Some(101.0),
                ..Default::default()
            },
            "read_pct (--read-pct) = 101 %: allowed 0 .. 100 %",
        ),
        (
            Overrides {
                runtime: Some(10.0),
                ..Default::default()
            },
            "shorter than one write cycle",
        ),
        (
            Overrides {
                block_size: Some(1000),
                ..Default::default()
            },
            "block_size (--block-size) = 1000 bytes",
        ),
    ] {
        let e = p.clone().apply(&o).unwrap_err();
        assert!(e.contains(want), "{e}\nwant: {want}");
    }
}
