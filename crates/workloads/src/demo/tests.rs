//! The demo's unit tests: its plan, rows from stored verdicts, the tables.
use super::*;

#[test]
fn demo_plan_is_valid_and_has_the_seed_limits() {
    let p = crate::registry()
        .parse(&plan_text(2.0, 1.0), "demo")
        .unwrap();
    assert_eq!(p.steps().len(), 63);
    let node = p.common.node.unwrap().cfg;
    assert_eq!(node.volumes.len(), 7);
    assert!(node.volumes.iter().all(|v| v.snapshot_reserve_percent == 5));
    assert_eq!(node.policies.len(), 3);
    // On seed 000's emulated array.
    assert_eq!(node.array.accounting.to_string(), "transfer:64KiB");
    assert_eq!(node.array.model.unwrap().capacity_iops(), 15_850);
}

/// A judged job whose stored verdict measured `measured` (IOPS or bytes/s), with the
/// given outcome.
fn job(volume: &str, name: &str, measured: f64, outcome: Outcome) -> JobRecord {
    let mut r = fio::JobResult::default();
    r.read.total_ios = 1;
    let metric = if name.ends_with("_bw") {
        "bw_steady"
    } else {
        "iops_steady"
    };
    let mut v = Verdict::plain(
        format!("{metric} ~= policy.ceiling +-3%"),
        measured,
        String::new(),
        outcome == Outcome::Pass,
        String::new(),
    );
    v.outcome = outcome;
    JobRecord {
        workload: volume.into(),
        name: name.into(),
        volume: Some(volume.into()),
        iteration: 1,
        status: "done".into(),
        results: vec![r],
        verdicts: vec![v],
        ..Default::default()
    }
}

#[test]
fn verdicts_judge_the_steady_state_ceiling_within_3_percent() {
    use harness::store::VolumeRecord;
    use harness::verdict::Limits;
    let vol = |name: &str, iops: u64, bps: u64| VolumeRecord {
        name: name.into(),
        size: 1,
        snapshot_reserve_percent: 5,
        policy: Some("p".into()),
        limits: Limits {
            ceiling_iops: iops,
            ceiling_bps: bps,
            ..Default::default()
        },
    };
    let run = RunRecord {
        id: 1,
        name: "demo".into(),
        status: "passed".into(),
        runtime_s: 2.0,
        ramp_s: 1.0,
        volumes: vec![
            vol("base", 0, 0),
            vol("i500", 500, 0),
            vol("m100", 0, 100 << 20),
            vol("a200", 9500, 9500 * 32768),
        ],
        jobs: vec![
            job("i500", "read_iops", 499.0, Outcome::Pass),
            job("i500", "write_iops", 486.0, Outcome::Pass),
            job("m100", "read_bw", 100.5 * 1048576.0, Outcome::Pass),
            job("m100", "write_bw", 99.0 * 1048576.0, Outcome::Pass),
            job("a200", "read_iops", 8609.0, Outcome::Fail),
            job("a200", "write_iops", 9249.0, Outcome::Inconclusive),
        ],
        ..Default::default()
    };
    let r = rows(&run);
    assert_eq!(r[0].verdict, "n/a (no ceiling)");
    assert!(r[1].passed, "{:?}", r[1]);
    assert_eq!(r[1].verdict, "PASS (-0.2%/-2.8%)");
    assert!(r[2].passed && r[2].expected == "100MiB/s", "{:?}", r[2]);
    assert_eq!(r[2].measured, "100.5/99.0 MiB/s");
    assert!(!r[3].passed, "{:?}", r[3]);
    assert_eq!(
        r[3].outcome,
        Outcome::Fail,
        "a failure outweighs an inconclusive"
    );
    assert_eq!(r[3].expected, "9500 IOPS (+297MiB/s)");
    assert_eq!(r[3].measured, "8609/9249 IOPS");
    assert_eq!(r[3].verdict, "FAIL (-9.4%/-2.6%)");
    assert_eq!(r[3].pct_of_ceiling.len(), 2);
    // The headline table carries the same verdicts, and numbers for its chart.
    let t = headline_table(&r);
    assert_eq!(t.kind, "ceilings");
    assert_eq!(t.rows[3][8], "FAIL (-9.4%/-2.6%)");
    assert_eq!(t.rows[1][9], 99.8);
    assert!(t.rows[0][9].is_null());
}

#[test]
fn the_demo_plan_states_its_checks_as_expectations() {
    let text = plan_text(2.0, 0.5);
    assert!(text.contains("iops_steady ~= policy.ceiling +-3%"));
    assert!(text.contains("bw_steady ~= policy.ceiling +-3%"));
    let p = crate::registry().parse(&text, "demo").unwrap();
    // 12 judged jobs of 4 s (8 windows of 500 ms), the others 2 s.
    let long = p.steps().iter().filter(|s| s.expected_secs == 4.5).count();
    assert_eq!(long, 12);
    // The mix on the two 500 IOPS volumes runs 8 s (seed 000's cells for it).
    let mix: Vec<String> = p
        .steps()
        .into_iter()
        .filter(|s| s.expected_secs == SLOW_MIX_RUNTIME + 0.5)
        .map(|s| s.label)
        .collect();
    assert_eq!(mix.len(), 2, "{mix:?}");
    assert!(mix.iter().all(|l| l.contains("rw_mix")), "{mix:?}");
    // The re-run keeps the setup and only the named volumes' workloads.
    let s = Settings {
        runtime: 2.0,
        ramp: 0.5,
        db: "r.db".into(),
    };
    let p = demo_plan(&s, Some(&["qos500-200g".to_string()])).unwrap();
    assert_eq!(p.steps().len(), 9);
    assert!(p.steps().iter().all(|s| s.label.contains("qos500-200g")));
    assert_eq!(p.common.node.unwrap().volumes.len(), 7);
    let e = demo_plan(&s, Some(&["nope".to_string()])).err().unwrap();
    assert!(e.to_string().contains("no workload runs on nope"), "{e}");
}

#[test]
fn table_aligns_columns() {
    let rows = vec![Row {
        volume: "qos500-100g".into(),
        policy: "QoS_500iops".into(),
        expected: "500 IOPS".into(),
        summary: Summary::default(),
        measured: "500/499 IOPS".into(),
        verdict: "PASS (+0.0%/-0.2%)".into(),
        passed: true,
        outcome: Outcome::Pass,
        pct_of_ceiling: vec![100.0, 99.8],
    }];
    let t = table(&rows);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("volume       policy"));
    assert!(lines[2].contains("PASS (+0.0%/-0.2%)"));
}
