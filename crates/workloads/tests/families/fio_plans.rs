//! The `[[workload]]` family's plans and runs through the registry and the harness's loop
//! (the old `bench::plan` and `bench::run` unit tests, with their assertions).

use std::path::Path;

use fio::FakeFio;
use harness::fio_job::FioJob;
use harness::store::Store;
use harness::target::Target;
use harness::ui::Quiet;
use harness::{Options, Outcome, Plan, PlanError, RunError};

use workloads::fio_plan::FioPlan;
use workloads::registry;

use crate::support::{profile_with, run_with};

fn parse(text: &str, origin: &str) -> Result<Plan, PlanError> {
    registry().parse(text, origin)
}

fn jobs(p: &Plan) -> Vec<FioJob> {
    p.body_as::<FioPlan>().unwrap().jobs(&p.common)
}

fn profile(name: &str, embedded: bool) -> Result<Plan, PlanError> {
    profile_with(name, |r| r.embedded = embedded)
}

fn run_plan(
    plan: &mut Plan,
    exec: &FakeFio,
    target: &Target,
    store: &mut Store,
) -> Result<Outcome, RunError> {
    run_with(plan, target, exec, store, &mut Quiet)
}

const GOOD: &str = r#"
[bench]
name = "qos500"
runtime = "3s"
ramp = 1

[[policy]]
name = "QoS_500iops"
fixed = { max_throughput_iops = 500 }

[[volume]]
name = "vol500"
size = "100GB"
policy = "QoS_500iops"

[[volume]]
name = "base"
size = "10GB"

[[workload]]
name = "rr"
volume = "vol500"
fio = { rw = "randread", bs = "4k", iodepth = 16 }
expect = ["iops <= 500 +-3%"]

[[workload]]
name = "db"
volume = "base"
profile = "dbench"
runtime = "2s"
expect = { read_iops = ["iops >= 100"], rw_mix = ["write.iops > 1"] }
"#;

fn err(text: &str) -> String {
    parse(text, "p.toml").unwrap_err().0
}

#[test]
fn parses_and_expands() {
    let p = parse(GOOD, "plans/p.toml").unwrap();
    assert_eq!(p.common.name, "qos500");
    assert_eq!(
        (p.common.runtime, p.common.ramp, p.common.iterations),
        (3.0, 1.0, 1)
    );
    let node = p.common.node.as_ref().unwrap();
    assert_eq!(node.volumes.len(), 2);
    let jobs = jobs(&p);
    assert_eq!(jobs.len(), 10);
    assert_eq!(jobs[0].name, "rr");
    assert_eq!(jobs[0].runtime, 3.0);
    assert_eq!(jobs[0].expect.len(), 1);
    assert_eq!(jobs[1].name, "read_iops");
    assert_eq!(jobs[1].runtime, 2.0);
    assert_eq!(jobs[1].volume.as_deref(), Some("base"));
    assert_eq!(jobs[1].expect.len(), 1);
    assert_eq!(jobs[2].expect.len(), 0);
    assert_eq!(jobs[9].name, "rw_mix");
    assert_eq!(jobs[9].expect.len(), 1);
    assert!(jobs[1].options.contains(&("size".into(), "2G".into())));
}

#[test]
fn capacity_reaches_the_embedded_node_with_plan_lines() {
    let p = parse(
        "[capacity]\niops = 20000\n\n[[volume]]\nname = \"v\"\nsize = \"1GiB\"\n\n[[workload]]\nfio = { rw = \"randread\" }\n",
        "p.toml",
    )
    .unwrap();
    assert_eq!(p.common.node.unwrap().capacity.unwrap().iops, 20000);
    let e = err("[[volume]]\nname = \"v\"\nsize = \"1GiB\"\n[capacity]\niops = -1\n[[workload]]\nfio = { rw = \"read\" }\n");
    assert!(
        e.contains("p.toml:4") && e.contains("capacity.iops = -1"),
        "{e}"
    );
}

#[test]
fn until_steady_runs_each_job_until_fio_sees_it_steady() {
    let mut p = parse(GOOD, "p.toml").unwrap();
    p.configure(&Options {
        until_steady: Some(30.0),
        ..Default::default()
    })
    .unwrap();
    for j in jobs(&p) {
        assert_eq!(j.runtime, 30.0);
        assert!(
            j.options
                .contains(&("steadystate".into(), "iops:10%".into())),
            "{j:?}"
        );
        assert!(j.options.iter().any(|(k, _)| k == "steadystate_duration"));
    }
}

#[test]
fn cli_overrides_times() {
    let mut p = parse(GOOD, "p.toml").unwrap();
    p.configure(&Options {
        runtime: Some(5.0),
        ..Default::default()
    })
    .unwrap();
    assert!(jobs(&p).iter().all(|j| j.runtime == 5.0 && j.ramp == 1.0));
}

#[test]
fn errors_name_file_line_key_and_allowed_values() {
    for (bad, want) in [
        ("[[workload]]\nprofile = \"dbnch\"\n", "p.toml:2: workload \"workload1\": profile = \"dbnch\": allowed profiles: dbench"),
        ("[[workload]]\nprofil = \"dbench\"\n", "p.toml:2: unknown field `profil`, expected one of"),
        ("[bench]\nruntime = \"3x\"\n[[workload]]\nprofile = \"dbench\"\n", "p.toml:2: bench.runtime: invalid duration \"3x\""),
        ("[bench]\niterations = 0\n[[workload]]\nprofile = \"dbench\"\n", "bench.iterations = 0: allowed 1 .. 1000"),
        ("[[workload]]\nfio = { rw = \"read\", filename = \"/x\" }\n", "fio.filename = \"/x\": it names what fio reads and writes: the target does (--target)"),
        ("[[workload]]\nfio = { bs = \"4k\" }\n", "needs rw"),
        ("[[workload]]\nprofile = \"dbench\"\nexpect = [\"iops <== 5\"]\n", "p.toml:3: workload \"workload1\": expect[0]: expectation \"iops <== 5\""),
        ("[[workload]]\nprofile = \"dbench\"\nexpect = { nope = [\"iops < 5\"] }\n", "expect.nope: no such job; allowed: read_iops, write_iops"),
        ("[[volume]]\nname = \"a\"\nsize = \"10XB\"\n[[workload]]\nprofile = \"dbench\"\n", "p.toml:3: volume \"a\": size"),
        ("[[volume]]\nname = \"a\"\nsize = \"1GB\"\n[[volume]]\nname = \"b\"\nsize = \"1GB\"\n[[workload]]\nprofile = \"dbench\"\n", "volume is required"),
        ("[bench]\nname = \"x\"\n", "no [[workload]]"),
        ("[node]\ndata_dir = \"x\"\n", "unknown field `node`"),
        ("[[workload]]\nprofile = \"dbench\"\nfio = { rw = \"read\" }\n", "set exactly one of profile"),
    ] {
        let e = err(bad);
        assert!(e.contains(want), "for:\n{bad}\ngot: {e}\nwant: {want}");
    }
}

/// A workload's volume the plan does not declare may be a running node's (`--node`: looked
/// up there); on the embedded node it is a plan error before anything is stored.
#[test]
fn an_undeclared_volume_is_refused_on_the_embedded_node_only() {
    let text = "[[volume]]\nname = \"a\"\nsize = \"1GB\"\n[[workload]]\nvolume = \"b\"\nfio = { rw = \"read\" }\n";
    let mut p = parse(text, "p.toml").unwrap();
    assert_eq!(p.body.volumes_used(), ["b"]);
    p.configure(&Options::default()).unwrap();
    let dir = test_support::TestDir::new("undeclared");
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let e = run_plan(
        &mut p,
        &FakeFio::constant(""),
        &Target::Embedded,
        &mut store,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "p.toml:4: workload \"workload1\": volume = \"b\" is not declared; declared volumes: a"
        ),
        "{e}"
    );
    assert!(store.list_runs().unwrap().is_empty(), "nothing stored");
}

#[test]
fn the_example_plan_is_valid() {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/bench-qos500.toml"
    );
    let plan = registry().load(Path::new(p), false).unwrap();
    assert_eq!(jobs(&plan).len(), 10);
    assert!(
        !plan.common.node.unwrap().mmap_reads,
        "pread is the default"
    );
}

/// Seed 000 on real NFS: dbench on a NAS volume per storage class, one job set each.
#[test]
fn the_seed000_nfs_plan_is_valid() {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seed000-nfs.toml"
    );
    let plan = registry().load(Path::new(p), false).unwrap();
    assert_eq!(jobs(&plan).len(), 27, "dbench's nine jobs on three volumes");
    let node = plan.common.node.unwrap();
    let nas: Vec<_> = node
        .volumes
        .iter()
        .filter_map(|v| v.nas.as_ref().map(|n| n.path.clone()))
        .collect();
    assert_eq!(nas, ["/qos500", "/qos100m", "/aqos"]);
}

#[test]
fn profile_plan() {
    let p = profile("dbench", true).unwrap();
    assert_eq!(jobs(&p).len(), 9);
    assert_eq!(p.common.node.unwrap().volumes[0].name, "bench");
    assert!(profile("nope", false).is_err());
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../fio/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

const PLAN: &str = r#"
[bench]
runtime = "2s"
ramp = "500ms"
[[policy]]
name = "QoS_500iops"
fixed = { max_throughput_iops = 500 }
[[volume]]
name = "vol500"
size = "100GB"
policy = "QoS_500iops"
[[workload]]
name = "read_iops"
fio = { rw = "randread", bs = "4k", iodepth = 64 }
expect = ["iops <= 500 +-3%", "iops_mean ~= policy.ceiling +-3%", "iops >= policy.ceiling * 0.99"]
"#;

#[test]
fn runs_on_embedded_node_with_fake_fio_and_stores_everything() {
    let mut plan = parse(PLAN, "p.toml").unwrap();
    let fake = FakeFio::constant(fixture("randread_500iops_msec.out"));
    let mut store = Store::in_memory().unwrap();
    let out = run_plan(&mut plan, &fake, &Target::Embedded, &mut store).unwrap();
    // 479.7 IOPS aggregate (drain included) fails ">= 495"; the steady state is 500.
    assert_eq!(out.tally.verdicts.fail, 1);
    assert!(!out.passed());
    let r = &out.record;
    assert_eq!(r.status, "failed");
    assert_eq!(r.volumes[0].limits.ceiling_iops, 500);
    assert_eq!(r.policies[0].name, "QoS_500iops");
    let v = &r.jobs[0].verdicts;
    assert!(v[0].passed && v[1].passed && !v[2].passed, "{v:?}");
    assert!(v[2].detail.contains("want >= 495"), "{}", v[2].detail);
    let seen = fake.seen.lock().unwrap();
    let text = seen[0].render();
    assert!(
        text.contains("ioengine=nbd\nuri=nbd+unix:///vol500?socket=/"),
        "{text}"
    );
    assert!(text.contains("runtime=2s\nramp_time=500ms\n"), "{text}");
    assert!(
        text.contains("[read_iops]\nrw=randread\nbs=4k\niodepth=64\n"),
        "{text}"
    );
}

#[test]
fn fio_logs_become_the_jobs_time_series() {
    let mut plan = parse(PLAN, "p.toml").unwrap();
    // A stand-in for fio: copy real fio logs (tests/fixtures/fiologs, numjobs=2) to
    // where the job file asks fio to write them.
    let fake = FakeFio::new(|f| {
        let prefix = f.global.get("write_iops_log").unwrap().to_string();
        assert_eq!(f.global.get("log_avg_msec"), Some("500"));
        assert_eq!(f.global.get("write_hist_log"), Some(prefix.as_str()));
        let src = format!(
            "{}/../fio/tests/fixtures/fiologs",
            env!("CARGO_MANIFEST_DIR")
        );
        for e in std::fs::read_dir(&src).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if let Some(rest) = name.strip_prefix("mix_") {
                std::fs::copy(format!("{src}/{name}"), format!("{prefix}_{rest}")).unwrap();
            }
        }
        fixture("randread_500iops_msec.out")
    });
    let mut store = Store::in_memory().unwrap();
    let out = run_plan(&mut plan, &fake, &Target::Embedded, &mut store).unwrap();
    let r = &out.record;
    assert_eq!(r.series.len(), 1);
    let s = r.series_of(r.jobs[0].id).unwrap();
    let reads: Vec<_> = s.fio.iter().filter(|x| x.direction == "read").collect();
    assert_eq!(reads.len(), 4);
    assert_eq!(reads[0].iops, 604.0);
    assert!(reads[0].p99_ns > 0);
    let prefix = fake.seen.lock().unwrap()[0]
        .global
        .get("write_iops_log")
        .unwrap()
        .to_string();
    assert!(
        !std::path::Path::new(&prefix).parent().unwrap().exists(),
        "the log directory is removed after the run"
    );
}

#[test]
fn a_failing_fio_fails_its_expectations_and_the_run_goes_on() {
    let mut plan = parse(
        "[[workload]]\nname = \"a\"\nfio = { rw = \"read\" }\nexpect = [\"iops > 1\"]\n\
         [[workload]]\nname = \"b\"\nfio = { rw = \"read\" }\n",
        "p.toml",
    )
    .unwrap();
    let fake = FakeFio::new(|f| {
        if f.jobs[0].name == "a" {
            "fio: pid=1, err=5/file:io_u.c".into()
        } else {
            fixture("latency_usec.out")
        }
    });
    let mut store = Store::in_memory().unwrap();
    let out = run_plan(
        &mut plan,
        &fake,
        &Target::Nbd("nbd://127.0.0.1/x".into()),
        &mut store,
    )
    .unwrap();
    assert_eq!((out.tally.failed_jobs, out.tally.verdicts.fail), (1, 1));
    assert_eq!(out.record.status, "error");
    assert_eq!(out.record.jobs[0].status, "failed");
    assert_eq!(out.record.jobs[1].status, "done");
    assert!(out.record.jobs[0].verdicts[0]
        .detail
        .contains("the job failed"));
}

#[test]
fn embedded_target_needs_volumes() {
    let mut plan = profile("dbench", false).unwrap();
    let fake = FakeFio::constant("{}");
    let mut store = Store::in_memory().unwrap();
    let e = run_plan(&mut plan, &fake, &Target::Embedded, &mut store).unwrap_err();
    assert!(e.to_string().contains("needs at least one [[volume]]"));
}
