//! The suites' verdicts, judged here without a diagnosis (the suites' figures are the
//! measurement itself): steady state, connectivity and under-load rates, retransmits. A
//! network figure missed while a host it ran on was starved is inconclusive with the
//! pressure figure ([`suites::stall`]), never a failure.

use assess::steady::SteadyState;
use fio::FioOutput;
use harness::verdict::Verdict;
use suites::network::{HostTotal, Pair};

use super::spec::SuiteSpec;

/// A fio measurement's steady-state verdict: passed when SNIA's check held; when it did
/// not, inconclusive (a figure still moving says nothing about the storage either way: the
/// measurement is not a steady-state figure; SNIA PTS would run longer), never a failure.
pub(super) fn steady(s: &SteadyState) -> Verdict {
    let mut v = Verdict::plain(
        STEADY_EXPECTATION.into(),
        s.range_pct,
        "range <= 20%, trend <= 10%".into(),
        s.attained,
        s.describe(),
    );
    if !s.attained {
        v.outcome = assess::Outcome::Inconclusive;
        v.reason = Some(
            "not in steady state: the figure was still moving; run longer (--runtime) or \
             precondition the device"
                .into(),
        );
    }
    v
}

/// The steady-state verdict's expectation.
const STEADY_EXPECTATION: &str =
    "steady state (SNIA PTS: last 5 windows range <= 20%, trend <= 10% of their mean)";

/// What the store keeps for an iperf3 test: its JSON, no fio results.
pub(super) fn iperf_output(p: &Pair) -> FioOutput {
    FioOutput {
        fio_version: "iperf3".into(),
        jobs: Vec::new(),
        raw: p.raw.clone(),
        stderr: String::new(),
    }
}

/// A verdict missed while `starved` names why the host, not the network, may have held
/// it: inconclusive, with that reason.
fn unless_starved(mut v: Verdict, starved: Option<&str>) -> Verdict {
    if let (false, Some(why)) = (v.passed, starved) {
        v.outcome = assess::Outcome::Inconclusive;
        v.reason = Some(why.to_string());
    }
    v
}

/// A pair's verdicts: goodput against the rated speed (connectivity), retransmits.
pub(super) fn pair_verdicts(p: &Pair, spec: &SuiteSpec, rate: bool) -> Vec<Verdict> {
    let Some(r) = &p.run else {
        return Vec::new();
    };
    let mut v = Vec::new();
    let g = r.goodput_bps / 1e6;
    if let (true, Some(rated)) = (rate, p.rated_mbps) {
        let thr = spec.min_fraction * rated as f64;
        v.push(Verdict::plain(
            format!(
                "goodput >= {:.0}% of rated {rated} Mbit/s",
                spec.min_fraction * 100.0
            ),
            g,
            format!(">= {thr:.0} Mbit/s"),
            g >= thr,
            format!(
                "{} -> {}: {g:.0} Mbit/s, {:.0}% of {rated}",
                p.from,
                p.to,
                100.0 * g / rated as f64
            ),
        ));
    }
    v.push(Verdict::plain(
        format!("retransmits <= {}", spec.max_retransmits),
        r.retransmits as f64,
        format!("<= {}", spec.max_retransmits),
        p.retransmits_ok,
        format!(
            "{} -> {}: {} retransmits in {:.1} s",
            p.from, p.to, r.retransmits, r.seconds
        ),
    ));
    let starved = p.starved();
    v.into_iter()
        .map(|v| unless_starved(v, starved.as_deref()))
        .collect()
}

pub(super) fn total_verdicts(t: &HostTotal, min_fraction: f64) -> Vec<Verdict> {
    let Some(rated) = t.rated_mbps else {
        return Vec::new();
    };
    let thr = min_fraction * rated as f64;
    [("out", t.out_mbps), ("in", t.in_mbps)]
        .into_iter()
        .map(|(dir, x)| {
            let v = Verdict::plain(
                format!(
                    "cumulative {dir} under load >= {:.0}% of rated {rated} Mbit/s",
                    min_fraction * 100.0
                ),
                x,
                format!(">= {thr:.0} Mbit/s"),
                x >= thr,
                format!(
                    "{} {dir}: {x:.0} Mbit/s, {:.0}% of {rated} ({})",
                    t.host,
                    100.0 * x / rated as f64,
                    t.rated_from
                ),
            );
            unless_starved(v, t.starved.as_deref())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use assess::Outcome;

    #[test]
    fn a_flat_run_passes_and_a_ramping_one_is_inconclusive_not_failed() {
        let flat = assess::steady::check_window(&[100.0, 101.0, 99.0, 100.0, 100.0], 3).unwrap();
        let v = super::steady(&flat);
        assert_eq!((v.passed, v.outcome, v.reason), (true, Outcome::Pass, None));
        let ramp = assess::steady::check_window(&[50.0, 70.0, 90.0, 110.0, 130.0], 3).unwrap();
        let v = super::steady(&ramp);
        assert!(!v.passed);
        assert_eq!(v.outcome, Outcome::Inconclusive);
        assert!(v.reason.unwrap().starts_with("not in steady state"));
        assert!(v.detail.starts_with("not steady"), "{}", v.detail);
    }

    #[test]
    fn a_network_figure_missed_on_a_starved_host_is_inconclusive_with_its_pressure() {
        let missed = || {
            harness::verdict::Verdict::plain(
                "goodput >= 90% of rated 200 Mbit/s".into(),
                150.0,
                ">= 180 Mbit/s".into(),
                false,
                "h0 -> h1: 150 Mbit/s".into(),
            )
        };
        let why = "starved-host: some task on h1 waited for a CPU 48% of the test (>= 25%)";
        let v = super::unless_starved(missed(), Some(why));
        assert_eq!(v.outcome, Outcome::Inconclusive);
        assert_eq!(v.reason.as_deref(), Some(why));
        // Not starved: the miss is a failure; held: a pass whatever the host did.
        assert_eq!(super::unless_starved(missed(), None).outcome, Outcome::Fail);
        let mut held = missed();
        (held.passed, held.outcome) = (true, Outcome::Pass);
        assert_eq!(
            super::unless_starved(held, Some(why)).outcome,
            Outcome::Pass
        );
    }
}
