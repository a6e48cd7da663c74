use super::*;
use fio::DirStats;

fn result(read_iops: f64, read_bw: u64, lat_ns: f64) -> JobResult {
    JobResult {
        jobname: "j".into(),
        read: DirStats {
            iops: read_iops,
            iops_mean: read_iops,
            bw_bytes: read_bw,
            total_ios: 100,
            lat_mean_ns: lat_ns,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn check(e: &str, r: &JobResult, l: Option<&Limits>) -> Verdict {
    Expectation::parse(e).unwrap().check(r, l)
}

#[test]
fn grammar_examples_from_the_issue() {
    let r = result(510.0, 100 << 20, 800_000.0);
    let lim = Limits {
        ceiling_iops: 500,
        ..Default::default()
    };
    assert!(check("iops <= 500 +-3%", &r, None).passed);
    assert!(!check("iops <= 500", &r, None).passed);
    assert!(check("bw ~= 100MiB/s +-3%", &r, None).passed);
    assert!(check("lat_mean_us < 1000", &r, None).passed);
    assert!(!check("lat_mean_us < 1ms / 2", &r, None).passed);
    assert!(check("iops >= policy.ceiling * 0.95", &r, Some(&lim)).passed);
    assert!(check("read.iops>=500", &r, None).passed);
    assert!(check("write.iops <= 0", &r, None).passed);
    let v = check("iops >= policy.ceiling * 0.95", &r, None);
    assert!(
        !v.passed && v.detail.contains("not an embedded node"),
        "{v:?}"
    );
    let v = check("bw >= policy.ceiling", &r, Some(&lim));
    assert!(
        !v.passed && v.detail.contains("no bandwidth ceiling"),
        "{v:?}"
    );
}

#[test]
fn tolerance_widens_leniently() {
    let r = result(485.0, 0, 0.0);
    assert!(check("iops >= 500 +-3%", &r, None).passed);
    assert!(!check("iops >= 500 +-2%", &r, None).passed);
    let v = check("iops ~= 500 +-2%", &r, None);
    assert_eq!(v.bound, "490..510");
    assert_eq!(v.detail, "iops = 485, want 490..510 (from 500)");
}

#[test]
fn parse_errors_say_what_is_allowed() {
    for (bad, want) in [
        ("iopz <= 5", "allowed: iops"),
        ("iops = 5", "expected an operator"),
        ("bw ~= 5MiB/s", "needs a tolerance"),
        ("bw <= 5XB/s", "allowed: B/s"),
        ("iops <= 5 +-x", "percentage"),
        ("lat_mean_us < policy.ceiling", "latency metrics"),
        ("iops <= lots", "expected a number"),
        ("iops <= policy.ceiling * -1", "positive"),
    ] {
        let e = Expectation::parse(bad).unwrap_err().0;
        assert!(e.contains(want), "{bad}: {e}");
    }
}
#[test]
fn a_familys_own_metrics_and_names_reuse_the_grammar() {
    let names = |n: &str| n.starts_with("spec.");
    let text = "burst_duration ~= spec.burst_seconds +-5%";
    let b = parse_bound(text, " ~= spec.burst_seconds +-5%", Kind::Secs, &names, "").unwrap();
    assert_eq!(b.operand, BoundOperand::Name("spec.burst_seconds".into()));
    assert_eq!((b.op, b.factor, b.tolerance), (Op::Approx, 1.0, 0.05));
    let v = judge(text, "burst_duration", 3.7, b.op, 3.6, b.tolerance, true);
    assert!(v.passed, "{v:?}");
    assert_eq!(v.bound, "3.42..3.78");
    assert_eq!(v.detail, "burst_duration = 3.7, want 3.42..3.78 (from 3.6)");
    let b = parse_bound("x", "<= 1500ms", Kind::Secs, &names, "").unwrap();
    assert_eq!(b.operand, BoundOperand::Number(1.5));
    let b = parse_bound("x", ">= spec.network.baseline * 2", Kind::Bw, &names, "").unwrap();
    assert_eq!(
        (b.operand, b.factor),
        (BoundOperand::Name("spec.network.baseline".into()), 2.0)
    );
    let e = parse_bound("x", "> spec_x", Kind::Bw, &names, ", or spec.NAME")
        .unwrap_err()
        .0;
    assert!(
        e.ends_with("\"spec_x\": expected a number, or spec.NAME"),
        "{e}"
    );
    let e = parse_bound("x", "< 5MiB/s", Kind::Secs, &names, "")
        .unwrap_err()
        .0;
    assert!(e.contains("allowed: none (seconds), s, ms"), "{e}");
    let v = judge("bw > 5", "bw", 5.0, Op::Gt, 5.0, 0.0, false);
    assert!(!v.passed && v.detail == "bw = 5 B/s, want > 5 B/s", "{v:?}");
}
