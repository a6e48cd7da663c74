//! Verdict outcomes under each bottleneck, and the exit status of a run.

use assess::crosscheck::{agreement, Side};
use assess::outcome::{EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS};
use assess::{
    judge, judge_kept, Bottleneck, Check, ClientSide, Diagnosis, Outcome, Quantity, Sense, Tally,
};

fn diag(b: Bottleneck) -> Diagnosis {
    Diagnosis {
        bottleneck: b,
        reason: "a fio process on local used 97% of a core".into(),
        figures: vec![],
    }
}

fn check(passed: bool, quantity: Quantity, sense: Sense, measured: f64, target: f64) -> Check {
    Check {
        passed,
        quantity,
        sense,
        measured,
        target,
        io_error: false,
    }
}

#[test]
fn failures_a_bottleneck_explains_are_inconclusive_and_only_those() {
    use Bottleneck::*;
    use Outcome::*;
    use Quantity::*;
    use Sense::*;
    // (bottleneck, check, expected)
    let cases = [
        // Passes stay passes, whatever limited the job.
        (
            ClientCpuBound,
            check(true, Throughput, AtLeast, 100.0, 100.0),
            Pass,
        ),
        (NoisyHost, check(true, Latency, AtMost, 1.0, 2.0), Pass),
        // A shortfall under a starved client or a noisy host proves nothing.
        (
            ClientCpuBound,
            check(false, Throughput, AtLeast, 80.0, 100.0),
            Inconclusive,
        ),
        (
            NoisyHost,
            check(false, Throughput, AtLeast, 80.0, 100.0),
            Inconclusive,
        ),
        (
            StarvedHost,
            check(false, Throughput, Around, 294.0, 300.0),
            Inconclusive,
        ),
        (
            StarvedHost,
            check(false, Throughput, AtMost, 1495.0, 450.0),
            Fail,
        ),
        (
            ClientCpuBound,
            check(false, Throughput, Around, 87.5, 100.0),
            Inconclusive,
        ),
        // So does a latency excess.
        (
            ClientCpuBound,
            check(false, Latency, AtMost, 900.0, 500.0),
            Inconclusive,
        ),
        (
            NoisyHost,
            check(false, Latency, Around, 900.0, 500.0),
            Inconclusive,
        ),
        // A ceiling exceeded: a slow client cannot cause it.
        (
            ClientCpuBound,
            check(false, Throughput, AtMost, 560.0, 500.0),
            Fail,
        ),
        (
            NoisyHost,
            check(false, Throughput, Around, 112.0, 100.0),
            Fail,
        ),
        // A latency below a floor bound, likewise.
        (NoisyHost, check(false, Latency, AtLeast, 10.0, 50.0), Fail),
        // Other bottlenecks never excuse.
        (
            QosBound,
            check(false, Throughput, AtLeast, 80.0, 100.0),
            Fail,
        ),
        (
            DeviceBound,
            check(false, Throughput, AtLeast, 80.0, 100.0),
            Fail,
        ),
        (
            NodeCpuBound,
            check(false, Latency, AtMost, 900.0, 500.0),
            Fail,
        ),
        (
            Unconstrained,
            check(false, Throughput, AtLeast, 80.0, 100.0),
            Fail,
        ),
        (
            NotMeasured,
            check(false, Throughput, AtLeast, 80.0, 100.0),
            Fail,
        ),
    ];
    for (b, c, want) in cases {
        let j = judge(&c, Some(&diag(b)));
        assert_eq!(j.outcome, want, "{b} {c:?}: {:?}", j.reason);
        match want {
            Inconclusive => {
                let r = j.reason.unwrap();
                assert!(r.starts_with(b.as_str()), "{r}");
                assert!(r.contains("proves nothing"), "{r}");
            }
            Fail if b.discredits_measurement() => {
                assert!(j.reason.unwrap().contains("stays a failure"))
            }
            _ => assert!(j.reason.is_none(), "{b}: {:?}", j.reason),
        }
    }
    // No diagnosis: plain outcomes.
    assert_eq!(
        judge(&check(false, Throughput, AtLeast, 1.0, 2.0), None).outcome,
        Fail
    );
    // An I/O error is a failure whatever the host did.
    let mut c = check(false, Throughput, AtLeast, 0.0, 100.0);
    c.io_error = true;
    let j = judge(&c, Some(&diag(ClientCpuBound)));
    assert_eq!(j.outcome, Fail);
    assert!(j.reason.unwrap().contains("I/O error"));
}

#[test]
fn exit_status_0_1_3_and_strict() {
    use Outcome::*;
    let t = |o: &[Outcome]| Tally::of(o);
    assert_eq!(t(&[]).exit_code(false), EXIT_PASS);
    assert_eq!(t(&[Pass, Pass]).exit_code(false), EXIT_PASS);
    assert_eq!(t(&[Pass, Fail, Inconclusive]).exit_code(false), EXIT_FAIL);
    assert_eq!(t(&[Pass, Inconclusive]).exit_code(false), EXIT_INCONCLUSIVE);
    assert_eq!(t(&[Pass, Inconclusive]).exit_code(true), EXIT_FAIL);
    assert_eq!((EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE), (0, 1, 3));
    let x = t(&[Pass, Pass, Inconclusive]);
    assert_eq!(x.summary(), "2 pass, 0 fail, 1 inconclusive");
    assert_eq!((x.total(), x.outcome()), (3, Inconclusive));
    for o in [Pass, Fail, Inconclusive] {
        assert_eq!(Outcome::parse(o.as_str()), Some(o));
    }
    assert_eq!(
        serde_json::to_string(&Inconclusive).unwrap(),
        "\"inconclusive\""
    );
}

/// A check judged on the node's count with fio's as the cross-check: the sides' windows of a
/// 300 IOPS baseline, 500 ms each.
#[test]
fn a_check_the_two_sides_judge_differently_is_inconclusive_only_beyond_the_noise() {
    use Outcome::*;
    let node = [300.0, 302.0, 298.0, 300.0, 300.0, 302.0, 298.0, 300.0];
    let lagging: Vec<f64> = node.iter().map(|v| v * 0.98).collect();
    let close: Vec<f64> = node.iter().map(|v| v - 1.0).collect();
    let show = |v: f64| format!("{v:.1} IOPS");
    // `iops_after_credits ~= spec.baseline +-1%`: 297..303.
    let kept = |node_v: f64, client_v: f64, client_w: &[f64], d: Option<&Diagnosis>| {
        let c = check(
            (297.0..=303.0).contains(&node_v),
            Quantity::Throughput,
            Sense::Around,
            node_v,
            300.0,
        );
        let side = ClientSide {
            passed: (297.0..=303.0).contains(&client_v),
            agreement: agreement(node_v, client_v, &node, client_w, 0.5, 1.0).unwrap(),
        };
        judge_kept(&c, Some(&side), d, &show)
    };
    // The node served the baseline, fio counted 2% less: the client lagged.
    let j = kept(300.0, 294.0, &lagging, None);
    assert_eq!(j.outcome, Inconclusive, "{j:?}");
    let r = j.reason.unwrap();
    assert!(
        r.starts_with("the node counted 300.0 IOPS, fio 294.0 IOPS over the same window (-2.0%")
            && r.contains("the client (fio) lagged; the node's figure passes, fio's does not"),
        "{r}"
    );
    // The other way round: the node's count fell behind fio's.
    let j = kept(294.0, 300.0, &node, None);
    assert_eq!(j.outcome, Inconclusive);
    assert!(j
        .reason
        .unwrap()
        .contains("the node lagged; fio's figure passes"));
    // Within the noise the node's figure decides: pass, or fail.
    assert_eq!(kept(297.5, 296.5, &close, None).outcome, Pass);
    assert_eq!(kept(296.5, 297.5, &node, None).outcome, Fail);
    // Both sides short, beyond the noise of each other or not: the node's shortfall, which
    // a starved host excuses and nothing else does.
    assert_eq!(kept(290.0, 284.0, &lagging, None).outcome, Fail);
    let j = kept(290.0, 284.0, &lagging, Some(&diag(Bottleneck::StarvedHost)));
    assert_eq!(j.outcome, Inconclusive);
    assert!(j.reason.unwrap().starts_with("starved-host"));
    // Agreement says which side lagged.
    let a = agreement(300.0, 294.0, &node, &lagging, 0.5, 1.0).unwrap();
    assert_eq!(a.lagging(), Some(Side::Client));
}
