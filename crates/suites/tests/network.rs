//! Acceptance: the network suite on 3 namespace hosts, 1 Gbit/s links, one pair held to
//! 200 Mbit/s. The matrix finds that pair (both directions) and only it; the others are
//! within 10% of their shaping; retransmits, RTT and CPU are recorded for every pair.

use std::sync::{Arc, Mutex};

use suites::network::{self, NetworkPlan};
use suites::Session;
use testbed::{Spec, Testbed};

#[test]
fn the_matrix_finds_the_throttled_pair_and_only_it() {
    let bed = Testbed::build(&Spec {
        hosts: 3,
        link_mbit: 1000,
        slow_pairs: vec![(0, 1, 200)],
        ..Spec::default()
    })
    .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l2 = lines.clone();
    let s = Session::open(
        bed.suite_hosts().unwrap(),
        &["iperf3"],
        Box::new(move |l| l2.lock().unwrap().push(l.to_string())),
    )
    .unwrap();
    let plan = NetworkPlan {
        // 3 s after a 1 s omit: short, but long enough that a scheduling hiccup on a busy
        // 2-core machine does not decide a pair.
        seconds: 3,
        omit_s: 1,
        // veth reports 10000 Mb/s; the bed's links are shaped to 1000.
        rated_mbps: Some(1000),
        ..NetworkPlan::default()
    };
    let r = network::run(&s, &plan).unwrap();
    let text = r.render();
    println!("{text}");
    assert_eq!(r.connectivity.len(), 6);
    let mut failing = r.failing_pairs();
    failing.sort();
    assert_eq!(
        failing,
        vec![("h0".into(), "h1".into()), ("h1".into(), "h0".into())],
        "{text}"
    );
    for p in &r.connectivity {
        let run = p.run.as_ref().unwrap_or_else(|| panic!("{p:?}"));
        assert!(run.rtt_mean_us > 0.0 && run.seconds > 1.0, "{p:?}");
        let g = p.goodput_mbps();
        let slow = (p.from == "h0" && p.to == "h1") || (p.from == "h1" && p.to == "h0");
        let shaped = if slow { 200.0 } else { 1000.0 };
        assert!(
            (g - shaped).abs() <= 0.1 * shaped,
            "{} -> {}: {g:.0} Mbit/s vs {shaped}\n{text}",
            p.from,
            p.to
        );
        assert!(p.retransmits_ok, "{p:?}");
    }
    // Under load: every pair measured, each host's egress and ingress held to its link.
    assert_eq!(r.under_load.len(), 6);
    for p in &r.under_load {
        assert!(p.error.is_none() && p.run.is_some(), "{p:?}");
    }
    for p in &r.under_load {
        assert!(p.goodput_mbps() > 0.0, "{p:?}");
    }
    for t in &r.totals {
        // The shaping holds under load: no host sends or receives past its link.
        assert!(t.out_mbps <= 1050.0 && t.in_mbps <= 1050.0, "{t:?}\n{text}");
    }
    let slow_load = r
        .under_load
        .iter()
        .find(|p| p.from == "h0" && p.to == "h1")
        .unwrap();
    assert!(slow_load.goodput_mbps() <= 220.0, "{text}");
    assert!(text.contains("!"), "failed cells are marked:\n{text}");
    assert!(!r.passed());
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["connectivity"][0]["run"]["retransmits"].is_u64());
    assert!(lines.lock().unwrap().iter().any(|l| l.contains("h0 -> h1")));
}
