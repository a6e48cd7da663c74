//! The provisioned family through the registry: plans with a `[provisioned]` spec (errors
//! with their lines), the profile's spec from the command line, and a run through the
//! harness's loop with a fake fio on a target that is not a qoslab node.

use fio::FakeFio;
use harness::store::Store;
use harness::target::Target;
use harness::ui::Captured;
use harness::{Options, Plan, PlanError, ProfileRequest};
use test_support::TestDir;
use workloads::provisioned::{ProvisionedPlan, Spec, KIND, NAME};
use workloads::registry;

use crate::support::{profile_with, run_with};

fn parse(text: &str) -> Result<Plan, PlanError> {
    registry().parse(text, "p.toml")
}

fn body(p: &Plan) -> &ProvisionedPlan {
    p.body_as::<ProvisionedPlan>().unwrap()
}

const FSX: &str = r#"
[bench]
name = "workshop"

[provisioned]
preset = "fsx-ontap-128"
scale = 0.005

[provisioned.run]
connections = 8
runtime = "3s"
steps = ["mem-write", "mem-read-1", "mem-read-8"]

[provisioned.expect]
"mem-read-8" = ["burst_duration ~= spec.burst_seconds +-10%", "bw_burst > step.mem-read-1.bw * 1.5"]
"#;

#[test]
fn a_plan_with_a_spec_runs_the_steps_it_names() {
    let mut p = parse(FSX).unwrap();
    assert_eq!(p.family, NAME);
    p.configure(&Options::default()).unwrap();
    let b = body(&p);
    let names: Vec<&str> = b.step_defs().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["mem-write", "mem-read-1", "mem-read-8"]);
    assert_eq!(b.step_defs()[1].runtime, Some(3.0));
    // Eight connections at 625 MB/s reach the 1,250 MB/s burst: 9 s from full.
    let s = &b.step_defs()[2];
    assert_eq!(s.rate, Some(1250e6));
    assert!((s.burst.unwrap().seconds - 9.0).abs() < 1e-9);
    assert!(matches!(b.spec, Spec::Fs(_)));
    // --scale rescales the plan's spec; --connections overrides the plan's.
    let mut p = parse(
        &FSX.replace("mem-read-8", "mem-read-16")
            .replace("connections = 8", ""),
    )
    .unwrap();
    p.configure(&Options {
        scale: Some(0.01),
        ..Default::default()
    })
    .unwrap();
    assert!((body(&p).step_defs()[2].burst.unwrap().seconds - 18.0).abs() < 1e-9);
}

#[test]
fn plan_errors_name_the_line_and_what_is_allowed() {
    let configure = |t: &str| -> String {
        match parse(t) {
            Err(e) => e.0,
            Ok(mut p) => p.configure(&Options::default()).unwrap_err().0,
        }
    };
    for (text, want) in [
        (
            "[provisioned]\npreset = \"fsx-ontap-99\"\n",
            "p.toml:1: provisioned.preset = \"fsx-ontap-99\": allowed presets are fsx-ontap-128",
        ),
        (
            "\n[provisioned]\npreset = \"fsx-ontap-128\"\nscale = 0.005\n[provisioned.run]\nconnectons = 4\n",
            "p.toml:2: provisioned.run: unknown field `connectons`",
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\nscale = 0.005\n[provisioned.run]\nsteps = [\"mem-read-2\"]\n",
            "no step \"mem-read-2\"; this spec's steps are mem-write, mem-read-1, mem-read-16, nvme-write",
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\nscale = 0.005\n[provisioned.expect]\n\"mem-read-1\" = [\"bw > spec.ssd_iops\"]\n",
            "provisioned step mem-read-1: expectation \"bw > spec.ssd_iops\": bw is a bandwidth, spec.ssd_iops is IOPS",
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\nscale = 0.005\n[provisioned.expect]\n\"mem-read-1\" = [\"bw > step.mem-read-16.bw\"]\n",
            "expected a number, or one of spec.network.baseline",
        ),
        (
            "[provisioned]\nmodel = \"ebs-gp2\"\nsize = \"100GiB\"\n\n[[volume]]\nname = \"v\"\nsize = \"1GB\"\n",
            "leave out [[volume]], [[policy]] and [capacity]",
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\n\n[[workload]]\nfio = {}\n",
            "a plan runs",
        ),
    ] {
        let e = configure(text);
        assert!(e.contains(want), "{text}\n=> {e}");
    }
}

#[test]
fn the_profile_takes_its_spec_from_the_command_line() {
    let req = |embedded, scale| ProfileRequest {
        embedded,
        scale,
        ..Default::default()
    };
    let p = registry().profile(NAME, &req(true, None)).unwrap();
    assert_eq!(
        body(&p).spec.scale(),
        0.005,
        "the embedded emulation's default scale"
    );
    assert!(body(&p)
        .spec
        .describe()
        .starts_with("fsx-ontap-128 at scale 0.005"));
    let p = registry().profile(NAME, &req(false, None)).unwrap();
    assert_eq!(
        body(&p).spec.scale(),
        1.0,
        "a real target is described at its real size"
    );
    let p = registry().profile(NAME, &req(true, Some(0.01))).unwrap();
    assert_eq!(body(&p).spec.scale(), 0.01);
    let e = profile_with(NAME, |r| r.clients = true).unwrap_err().0;
    assert!(e.contains("no --client"), "{e}");
    // Other families refuse --scale rather than ignore it.
    let mut d = registry().profile("dbench", &req(true, None)).unwrap();
    let e = d
        .configure(&Options {
            scale: Some(0.1),
            ..Default::default()
        })
        .unwrap_err()
        .0;
    assert!(
        e.contains("--scale applies to the ramp and provisioned profiles"),
        "{e}"
    );
}

/// fio's JSON for one job: `iops` I/Os of `bs` bytes per second for 10 s.
fn fio_json(name: &str, iops: f64, bs: u64) -> String {
    let ios = (iops * 10.0) as u64;
    format!(
        r#"{{"fio version": "fio-3.33", "jobs": [{{"jobname": "{name}", "error": 0,
          "read": {{"iops": {iops}, "iops_mean": {iops}, "bw_bytes": {bw}, "bw_mean": 0, "io_bytes": {io}, "total_ios": {ios}, "runtime": 10000,
                    "lat_ns": {{"mean": 5000000.0}}, "clat_ns": {{"mean": 5000000.0, "percentile": {{"50.000000": 4000000, "99.000000": 9000000}}}}}},
          "write": {{"iops": 0, "iops_mean": 0, "bw_bytes": 0, "bw_mean": 0, "io_bytes": 0, "total_ios": 0, "runtime": 0,
                    "lat_ns": {{"mean": 0}}, "clat_ns": {{"mean": 0, "percentile": {{}}}}}}}}]}}"#,
        bw = (iops * bs as f64) as u64,
        io = ios * bs
    )
}

/// On a target that is not a qoslab node the family judges fio's numbers against the spec
/// and says plainly what it could not measure (fake fio writes no logs, so no burst).
#[test]
fn a_run_on_a_foreign_target_judges_against_the_spec() {
    let dir = TestDir::new("prov");
    let mut p = parse(
        "[provisioned]\nmodel = \"ebs-gp2\"\nsize = \"2000GiB\"\n[provisioned.run]\nruntime = \"1s\"\n",
    )
    .unwrap();
    p.configure(&Options::default()).unwrap();
    assert_eq!(body(&p).step_defs()[0].name, "iops-baseline");
    let exec = FakeFio::new(|j| fio_json(&j.jobs[0].name, 6_010.0, 4096));
    let mut store = Store::in_memory().unwrap();
    let mut ui = Captured::default();
    let target = Target::Path(dir.join("disk"));
    let out = run_with(&mut p, &target, &exec, &mut store, &mut ui).unwrap();
    assert!(out.passed(), "{:?}", out.record.jobs[0].verdicts);
    let v = &out.record.jobs[0].verdicts[0];
    assert_eq!(v.expectation, "iops ~= spec.iops.baseline +-3%");
    assert_eq!(v.detail, "iops = 6010, want 5820..6180 (from 6000)");
    let t = &out.record.tables[0];
    assert_eq!(t.kind, KIND);
    assert_eq!(t.rows[0][t.column("result").unwrap()], 6010.0);
    assert!(
        out.record.target.contains("ebs-gp2 2000 GiB"),
        "{}",
        out.record.target
    );
    // The job file reaches the target (libaio, direct) with the step's options.
    let seen = exec.seen.lock().unwrap();
    let text = seen[0].render();
    assert!(
        text.contains("ioengine=libaio")
            && text.contains("rw=randread")
            && text.contains("iodepth=16"),
        "{text}"
    );
    drop(seen);
    // A burst step without fio's windows: its burst metrics are not measured.
    let mut p =
        parse("[provisioned]\nmodel = \"ebs-gp2\"\nsize = \"100GiB\"\nbucket_scale = 0.0001\n")
            .unwrap();
    p.configure(&Options::default()).unwrap();
    let exec = FakeFio::new(|j| fio_json(&j.jobs[0].name, 900.0, 4096));
    let out = run_with(&mut p, &target, &exec, &mut store, &mut ui).unwrap();
    assert_eq!(out.record.status, "failed");
    let v = &out.record.jobs[0].verdicts;
    assert_eq!(v.len(), 3);
    assert!(
        v.iter()
            .all(|v| !v.passed && v.detail.contains("not measured")),
        "{v:?}"
    );
    assert!(ui.0.contains("FAIL 0/3"), "{}", ui.0);
}
