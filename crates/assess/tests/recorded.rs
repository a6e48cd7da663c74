//! The rules of issue 35 on samples recorded on this 2-core machine (`data/*.json`, each
//! made by `data/record.py` from a stored run; what ran, and beside what, is in its
//! `recorded` field):
//!
//! - quiet: a 500 IOPS ceiling job (4k randread QD16, 20 s) on the embedded node with
//!   nothing else running — not starved; the node's and fio's counts agree; the check
//!   passes;
//! - starved: the same job beside two busy loops at nice -10 and an fsync writer (the
//!   issue's reproduction) — `starved-host` with its pressure figures, and a shortfall
//!   judged under that diagnosis is inconclusive with them, never a failure;
//! - client-lagging: the job through a running node (`--node`) while a second fio read
//!   the same volume — the node counted both clients, fio its own: the client's is the
//!   lower count, named, and the check inconclusive;
//! - node-lagging: the job on an embedded node that counts a 4 KiB request as half an
//!   operation (`io_accounting = "curve:4KiB=0.5,..."`) — the node's is the lower count,
//!   named, and the check inconclusive.
//!
//! The two counts fall apart here for a reason a reader can check (another client, another
//! unit); the rule under test is the same whatever made them differ: beyond the run's noise,
//! the lower count is the side named, and a check the two sides judge differently proves
//! nothing.

use assess::crosscheck::{agreement, Agreement, Side};
use assess::figures::summarize;
use assess::{judge_kept, Check, ClientSide, Diagnosis, Outcome, Quantity, Sense};
use serde::Deserialize;

#[derive(Deserialize)]
struct Recorded {
    recorded: String,
    window_ms: u64,
    node: f64,
    client: f64,
    node_windows: Vec<f64>,
    client_windows: Vec<f64>,
    hosts: Vec<toolsets::HostSeries>,
}

/// The recorded jobs' expectation: `iops ~= policy.ceiling +-3%` on a 500 IOPS ceiling.
const CEILING: f64 = 500.0;
const TOLERANCE: f64 = 0.03;

fn load(name: &str) -> Recorded {
    let path = format!("{}/tests/data/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The two counts' agreement as harness::kept computes it: 500 ms windows, IOPS (one
/// request is 1).
fn sides(r: &Recorded) -> Agreement {
    agreement(
        r.node,
        r.client,
        &r.node_windows,
        &r.client_windows,
        0.5,
        1.0,
    )
    .expect("both sides have windows")
}

fn starvation(r: &Recorded) -> Option<Diagnosis> {
    let h = r.hosts.first().expect("a host series");
    assess::starvation(&summarize(h, 0, r.window_ms, &[]))
}

/// `measured ~= target +-3%`.
fn around(measured: f64, target: f64) -> Check {
    Check {
        passed: (measured - target).abs() <= target * TOLERANCE,
        quantity: Quantity::Throughput,
        sense: Sense::Around,
        measured,
        target,
        io_error: false,
    }
}

/// The ceiling check judged on the node's figure with fio's as the cross-check.
fn judged_on_node(r: &Recorded, diagnosis: Option<&Diagnosis>) -> assess::Judged {
    let client = ClientSide {
        passed: around(r.client, CEILING).passed,
        agreement: sides(r),
    };
    judge_kept(&around(r.node, CEILING), Some(&client), diagnosis, &|v| {
        format!("{v:.1}")
    })
}

#[test]
fn quiet_is_not_starved_both_sides_agree_and_the_ceiling_passes() {
    let r = load("quiet");
    assert_eq!(starvation(&r), None, "{}", r.recorded);
    let f = summarize(&r.hosts[0], 0, r.window_ms, &[]);
    let p = f.pressure.expect("this kernel has PSI");
    assert!(p.cpu_some < 25.0, "{p:?}");
    let a = sides(&r);
    assert_eq!(a.lagging(), None, "{a:?}");
    let j = judged_on_node(&r, None);
    assert_eq!((j.outcome, j.reason), (Outcome::Pass, None));
}

#[test]
fn starved_is_starved_host_and_a_shortfall_under_it_is_inconclusive_with_the_pressure() {
    let r = load("starved");
    let d = starvation(&r).unwrap_or_else(|| panic!("not starved: {}", r.recorded));
    assert_eq!(d.bottleneck, assess::Bottleneck::StarvedHost);
    assert!(
        d.reason.contains("pressure over the window"),
        "{}",
        d.reason
    );
    let cpu = d
        .figures
        .iter()
        .find(|f| f.name == "cpu pressure (some)")
        .unwrap_or_else(|| panic!("{:?}", d.figures));
    assert!(cpu.value >= 25.0 && !cpu.limit.is_empty(), "{cpu:?}");
    assert!(d.pressure_note().is_some());
    // The node held its ceiling here: the check passes, starved or not.
    assert_eq!(judged_on_node(&r, Some(&d)).outcome, Outcome::Pass);
    // A floor the job fell short of while the host was starved is no failed promise.
    let short = Check {
        passed: false,
        quantity: Quantity::Throughput,
        sense: Sense::AtLeast,
        measured: r.node,
        target: r.node * 1.2,
        io_error: false,
    };
    let j = assess::judge(&short, Some(&d));
    assert_eq!(j.outcome, Outcome::Inconclusive, "{j:?}");
    let why = j.reason.unwrap_or_default();
    assert!(
        why.contains("starved-host") && why.contains("cpu "),
        "{why}"
    );
    // A ceiling exceeded is a failure whatever the host did.
    let over = around(CEILING * 1.5, CEILING);
    assert_eq!(assess::judge(&over, Some(&d)).outcome, Outcome::Fail);
}

/// The recorded run `name`, in which `side` lagged: its figure the lower, `sides` names it,
/// and the check on the node's figure is inconclusive. Returns the reason given.
fn lagged(name: &str, side: Side) -> String {
    let r = load(name);
    let a = sides(&r);
    let (lagging, other) = match side {
        Side::Client => (r.client, r.node),
        Side::Node => (r.node, r.client),
    };
    assert!(lagging < other, "{a:?}");
    assert_eq!(a.lagging(), Some(side), "{a:?}: {}", r.recorded);
    let j = judged_on_node(&r, None);
    assert_eq!(j.outcome, Outcome::Inconclusive, "{j:?}");
    j.reason.unwrap_or_default()
}

#[test]
fn a_client_that_lagged_is_named_and_the_check_is_inconclusive() {
    let why = lagged("client-lagging", Side::Client);
    assert!(why.contains("the client (fio) lagged"), "{why}");
    assert!(
        why.contains("the node's figure passes, fio's does not"),
        "{why}"
    );
}

#[test]
fn a_node_that_lagged_is_named_and_the_check_is_inconclusive() {
    let why = lagged("node-lagging", Side::Node);
    assert!(why.contains("the node lagged"), "{why}");
}
