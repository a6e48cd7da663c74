//! The demo's scenario end to end in process (workloads::demo::run): the embedded nodes
//! start, every step runs (fio is a fake that reports nothing, so every ceiling verdict
//! fails and the floors are not held), both runs are stored with the ceilings table, and
//! the answer's exit status says so. The real thing, with real fio, is `qoslab demo`.

use fio::FakeFio;
use harness::store::Store;
use harness::target::Target;
use harness::ui::Quiet;
use harness::{Plan, RunError};
use workloads::demo::{self, Host, Settings};

use crate::support::run_with;

struct Fake {
    db: std::path::PathBuf,
    exec: FakeFio,
    text: String,
}

impl Host for Fake {
    fn run(&mut self, plan: &mut Plan) -> Result<harness::Outcome, RunError> {
        let mut store = Store::open(&self.db)?;
        run_with(plan, &Target::Embedded, &self.exec, &mut store, &mut Quiet)
    }

    fn print(&mut self, text: &str) {
        self.text.push_str(text);
    }
}

#[test]
fn the_demo_runs_both_scenarios_and_stores_what_it_prints() {
    let dir = test_support::TestDir::new("demo-flow");
    let db = dir.join("r.db");
    let s = Settings {
        runtime: 0.1,
        ramp: 0.0,
        db: db.clone(),
    };
    let mut host = Fake {
        db: db.clone(),
        exec: FakeFio::constant("{\"fio version\": \"fio-3.33\", \"jobs\": []}"),
        text: String::new(),
    };
    let answer = demo::run(&s, &mut host).unwrap();
    let out = &host.text;
    for heading in [
        "qoslab demo: seed 000 on an embedded node: 3 policies, 7 volumes",
        "Seed 000 on qoslab: measured vs expected QoS ceilings",
        "Seed 000 beside qoslab, cell by cell",
        "Seed 001 on qoslab: floors against a noisy neighbour",
    ] {
        assert!(out.contains(heading), "{heading}:\n{out}");
    }
    assert_eq!(answer.ceilings.record.jobs.len(), 63);
    assert!(answer
        .ceilings
        .record
        .tables
        .iter()
        .any(|t| t.kind == "ceilings"));
    assert!(!answer.floors_held);
    assert_eq!(answer.exit_code(false), 1);
    assert!(
        answer
            .closing_line()
            .starts_with("qoslab demo: ceilings FAIL"),
        "{}",
        answer.closing_line()
    );
    // Both runs are in the database, with the status the harness's rule gave them.
    let store = Store::open(&db).unwrap();
    for r in [&answer.ceilings.record, &answer.isolation.record] {
        let stored = store.load_run(r.id).unwrap();
        assert_eq!(stored.status, r.status);
        assert_ne!(stored.status, "running");
    }
}

/// The client path probe with real fio on a real embedded node. fio's window holds the
/// node's (the node reads a request after fio sent it and replies before fio reaps it), so
/// fio's mean less the node's is positive in both directions whatever the machine's load;
/// and the demo's plan then serves the seed's latency less it.
#[test]
fn the_client_path_is_fio_less_the_node_and_comes_off_the_arrays_latency() {
    let dir = test_support::TestDir::new("demo-path");
    let p = demo::path::measure(&fio::RealFio::new(dir.path())).unwrap();
    assert!(p.read_us > 0.0 && p.write_us > 0.0, "{p:?}");
    let text = demo::plan_text_on(1.0, 0.0, Some(&p));
    let plan = workloads::registry().parse(&text, "demo").unwrap();
    let lat = plan.common.node.unwrap().array.latency;
    let [r, w] = p.served_us();
    assert_eq!(lat.at(qos_core::Direction::Read, 4096), r * 1000, "{text}");
    assert_eq!(lat.at(qos_core::Direction::Write, 4096), w * 1000, "{text}");
    // Taken off exactly, unless the machine made the path meaningless (over 25%).
    for (path, seed, served) in [(p.read_us, 794.0, r), (p.write_us, 689.0, w)] {
        let want = if path <= seed * 0.25 {
            seed - path
        } else {
            seed
        };
        assert!(
            (served as f64 - want).abs() <= 0.5,
            "{p:?}: {served} for {want}"
        );
    }
}
