//! The suites family's plans through the registry: the example plan, `[suite]`/`[[host]]`
//! errors with the plan's lines, `--suite` built from the command line, what each kind
//! needs checked before anything runs.

use harness::{Options, ProfileRequest};
use workloads::registry;

use crate::support::{configure_error, request};
use workloads::suite::{Kind, SuitePlan, SuiteSpec, NAME};

fn spec(p: &harness::Plan) -> SuiteSpec {
    p.body_as::<SuitePlan>().unwrap().spec.clone()
}

#[test]
fn the_example_suite_plan_is_valid() {
    let path = format!(
        "{}/../../examples/suite-disks.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut p = registry().load(std::path::Path::new(&path), false).unwrap();
    assert_eq!(p.family, NAME);
    p.configure(&Options::default()).unwrap();
    let s = spec(&p);
    assert_eq!(s.kind, Kind::Disks);
    assert_eq!((s.timing(), s.iterations()), ((60, 2), 3));
    assert_eq!(s.host_list(), "node1,node2=10.0.0.12");
    let d = s.disks_plan();
    assert_eq!(
        d.devices[0],
        ("node1".into(), vec!["/dev/sdb".into(), "/dev/sdc".into()])
    );
    assert!(d.all_hosts && d.prefill);
    assert_eq!(d.device_jobs.len(), 4);
    assert_eq!(s.max_cv, Some(10.0));
}

#[test]
fn plan_errors_name_the_key_and_line() {
    let e = |text: &str| registry().parse(text, "p.toml").unwrap_err().0;
    let msg = e("[suite]\nkind = \"disks\"\nsizee = \"1GiB\"\n");
    assert!(
        msg.starts_with("p.toml:3:") && msg.contains("unknown field `sizee`"),
        "{msg}"
    );
    let msg = e("[suite]\nkind = \"tape\"\n");
    assert!(
        msg.contains("suite.kind: \"tape\": allowed network, disks"),
        "{msg}"
    );
    let msg = e("[suite]\nkind = \"disks\"\njobs = [\"fio.nope\"]\n");
    assert!(
        msg.contains("suite.jobs: unknown job \"fio.nope\""),
        "{msg}"
    );
    let msg = e("[suite]\nkind = \"disks\"\n[[host]]\nname = \"a\"\ndevice = [\"/dev/x\"]\n");
    assert!(
        msg.starts_with("p.toml:5:") && msg.contains("unknown field `device`"),
        "{msg}"
    );
    let msg = e("[[volume]]\nname = \"v\"\nsize = \"1GB\"\n[suite]\nkind = \"network\"\n");
    assert!(msg.contains("a system suite runs on its hosts"), "{msg}");
    let msg = e("[suite]\nkind = \"disks\"\n[[workload]]\nfio = {}\n");
    assert!(msg.contains("not both"), "{msg}");
    // Checked when configured: a disks plan without devices, a network plan with one host.
    let msg = configure_error("[suite]\nkind = \"disks\"\n[[host]]\nname = \"a\"\n");
    assert!(msg.contains("--suite disks: no devices"), "{msg}");
    let msg = configure_error("[suite]\nkind = \"network\"\n[[host]]\nname = \"a\"\n");
    assert_eq!(msg, "--suite network: needs at least 2 hosts");
    let mut p = registry()
        .parse("[bench]\nruntime = \"5s\"\n[suite]\nkind = \"network\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n", "p.toml")
        .unwrap();
    p.configure(&Options::default()).unwrap();
    assert_eq!(
        spec(&p).timing(),
        (5, 1),
        "[bench].runtime given, ramp the suite's"
    );
}

#[test]
fn suite_names_come_from_the_registry() {
    let r = registry();
    assert_eq!(
        r.suites(),
        ["network", "disks", "nfs", "iscsi", "block", "dir"]
    );
    let req = ProfileRequest {
        runtime: Some(4.0),
        ..Default::default()
    };
    // Without hosts: refused, naming the option.
    let e = r.suite("network", &req).unwrap_err().0;
    assert!(e.contains("no hosts (give --hosts"), "{e}");
    let e = r
        .suite("disks", &request(|q| q.target = true))
        .unwrap_err()
        .0;
    assert!(e.contains("takes no plan file, --target"), "{e}");
    assert!(r
        .help()
        .contains("--suite network|disks|nfs|iscsi|block|dir; [suite] [[host]]"));
}
