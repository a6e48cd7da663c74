//! A step's rates on the node's own counters (`harness::kept`): when the target is a qoslab
//! node, the steady rate, the burst rate and the baseline after the credits ran out are
//! measured from the node's samples of the volume exactly as from fio's windows, and each
//! check on them is judged on the node's figure with fio's as the cross-check
//! (`assess::judge_kept`). The burst's duration stays fio's: the node's sampling clock
//! starts before fio's, so the moment credits ran out is the client's to time.

use std::collections::BTreeMap;

use assess::crosscheck::{agreement, Agreement};
use harness::series::{CreditSample, WINDOW_MS};

use super::measure::{median, transition};

/// One metric on both sides: each side's figure and the windows it was taken over.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub node: f64,
    pub client: f64,
    node_windows: Vec<f64>,
    client_windows: Vec<f64>,
    /// One request in the figure's unit.
    quantum: f64,
}

impl Kept {
    /// Whether the node's windows show credits earned back and spent: a burst bucket
    /// refills while it serves less than its baseline (EBS gp2 earns credits below its
    /// baseline), so after the credits ran out, requests served above `baseline` are
    /// explained when the windows under it earned at least as many, plus the one second
    /// of baseline a bucket may still hold when it counts as run out. Some((lowest window,
    /// requests earned, requests spent above the baseline)) when explained.
    pub fn earned_back(&self, baseline: f64) -> Option<(f64, f64, f64)> {
        let w = WINDOW_MS as f64 / 1000.0;
        let (mut low, mut earned, mut spent) = (f64::INFINITY, 0.0, 0.0);
        for &r in &self.node_windows {
            low = low.min(r);
            if r < baseline {
                earned += (baseline - r) * w;
            } else {
                spent += (r - baseline) * w;
            }
        }
        (low < baseline && spent <= earned + baseline).then_some((low, earned, spent))
    }

    pub fn agreement(&self) -> Option<Agreement> {
        agreement(
            self.node,
            self.client,
            &self.node_windows,
            &self.client_windows,
            WINDOW_MS as f64 / 1000.0,
            self.quantum,
        )
    }
}

/// Whether a burst bucket, sampled by the node over a step (`buckets`: (end of window ms,
/// the bucket), in time order),
/// never ran out: it never held less than one second of its baseline. An empty series
/// says nothing (false): fio's windows alone then tell when the burst ended.
pub fn never_ran_out(buckets: &[(u64, CreditSample)]) -> bool {
    !buckets.is_empty() && buckets.iter().all(|(_, c)| c.holds_a_second())
}

/// The node's sample that shows fio's rate fell while the volume's bucket still held credits,
/// when one does: the first sample at or after the fall (fio's `fell_s` seconds) that holds
/// at least one second of its baseline. `buckets`: (end of window on the node's clock in ms,
/// the bucket), in time order. The node's clock starts before fio's, by at most `lead_ms`
/// (the end of the node's first window with I/O: fio's clock starts with its first I/O), so
/// a sample at `fell_s`·1000 + `lead_ms` or later was read after the fall, whatever the lead
/// was. A bucket that holds credits then either never ran out at the fall (the client's rate
/// dipped mid-burst: a starved client) or refilled, which takes the node serving below its
/// baseline for a second (a client that stopped asking): either way the fall is the client's,
/// not the moment credits ran out, and nothing after it measured the baseline.
pub fn held_after_fall(
    buckets: &[(u64, CreditSample)],
    lead_ms: u64,
    fell_s: f64,
) -> Option<(u64, CreditSample)> {
    let from = (fell_s.max(0.0) * 1000.0).round() as u64 + lead_ms;
    buckets
        .iter()
        .find(|(t, _)| *t >= from)
        .filter(|(_, c)| c.holds_a_second())
        .cloned()
}

/// Why what fio timed and measured after its rate fell at `fell_s` proves nothing, when the
/// node's bucket shows the fall was the client's ([`held_after_fall`]).
pub fn clients_fall(buckets: &[(u64, CreditSample)], lead_ms: u64, fell_s: f64) -> Option<String> {
    let (t, c) = held_after_fall(buckets, lead_ms, fell_s)?;
    Some(format!(
        "fio's rate fell at {fell_s:.2} s, but the node's bucket still held {:.0} credits \
         ({:.0}% of it) in a sample read at least {:.2} s after that: fio lagged; a starved \
         client's dip, not the end of the burst, so when credits ran out and the rate after \
         them were not measured",
        c.balance,
        c.percent(),
        (t.saturating_sub(lead_ms) as f64 / 1000.0 - fell_s).max(0.0),
    ))
}

/// The windows a step's steady rate is the median of: all but the first (fio's start)
/// when there are three or more.
pub fn steady(windows: &[(u64, f64)]) -> &[(u64, f64)] {
    if windows.len() >= 3 {
        &windows[1..]
    } else {
        windows
    }
}

/// The metrics of one dimension (`p`: "iops" or "bw") on both sides, from each side's
/// windows within the step's runtime, (end ms, rate). `burst`: the step's burst and
/// baseline rates, when it bursts in this dimension.
pub fn kept(
    p: &str,
    client: &[(u64, f64)],
    node: &[(u64, f64)],
    burst: Option<(f64, f64)>,
    quantum: f64,
) -> BTreeMap<String, Kept> {
    let mut m = BTreeMap::new();
    let rates = |w: &[(u64, f64)]| w.iter().map(|x| x.1).collect::<Vec<f64>>();
    let (c, n) = (steady(client), steady(node));
    if c.len() >= 2 && n.len() >= 2 {
        m.insert(
            p.to_string(),
            Kept {
                node: median(rates(n)),
                client: median(rates(c)),
                node_windows: rates(n),
                client_windows: rates(c),
                quantum,
            },
        );
    }
    if let Some((rate, baseline)) = burst {
        if let (Some(tc), Some(tn)) = (
            transition(client, rate, baseline),
            transition(node, rate, baseline),
        ) {
            m.insert(
                format!("{p}_burst"),
                Kept {
                    node: tn.burst_rate,
                    client: tc.burst_rate,
                    node_windows: tn.burst_windows,
                    client_windows: tc.burst_windows,
                    quantum,
                },
            );
            m.insert(
                format!("{p}_after_credits"),
                Kept {
                    node: tn.after_rate,
                    client: tc.after_rate,
                    node_windows: tn.after_windows,
                    client_windows: tc.after_windows,
                    quantum,
                },
            );
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 5 s at 3,000 IOPS, then 300: fio counted its baseline 2% low (a starved client), the
    /// node the baseline.
    #[test]
    fn a_bucket_that_never_emptied_had_no_after_credits() {
        use harness::series::CreditSample;
        let at = |balance: f64| CreditSample::at_use(balance, 13_500.0, 300.0, 3_000.0, 2_000.0);
        // A starved client spent 13,500 credits at 2,000 IOPS less 300 of refill a second:
        // after 5 s 5,000 remain.
        let starved: Vec<(u64, CreditSample)> = (0..10)
            .map(|k| (500 * (k + 1), at(13_500.0 - 850.0 * k as f64)))
            .collect();
        assert!(never_ran_out(&starved));
        // At the burst rate it ran out (and stays at the refill's level after).
        let spent: Vec<(u64, CreditSample)> = [13_500.0, 8_000.0, 2_000.0, 150.0, 40.0]
            .into_iter()
            .enumerate()
            .map(|(k, b)| (500 * (k as u64 + 1), at(b)))
            .collect();
        assert!(!never_ran_out(&spent));
        assert!(!never_ran_out(&[]));
    }

    /// The gp2 bucket of the hostile run that failed (burst_duration 3.86 s, want 5 s +-5%):
    /// 13,500 credits, 300 IOPS of refill, 3,000 IOPS of burst, a starved client at ~2,400
    /// IOPS whose rate dipped under the midpoint at 3.86 s. The node's samples (its clock
    /// 200 ms ahead of fio's) still held ~3,700 credits at 4.5 s: the fall was the client's.
    #[test]
    fn a_fall_while_the_bucket_held_credits_is_the_clients() {
        let at = |balance: f64| CreditSample::at_use(balance, 13_500.0, 300.0, 3_000.0, 2_400.0);
        // Node windows at 0.5 s steps from 0.7 s (first I/O in the first window).
        let starved: Vec<(u64, CreditSample)> = (0..16)
            .map(|k| {
                let t = 700 + 500 * k as u64;
                let spent = (t as f64 / 1000.0 - 0.2) * (2_400.0 - 300.0);
                (t, at((13_500.0 - spent).max(0.0)))
            })
            .collect();
        let (t, c) = held_after_fall(&starved, 700, 3.86).expect("credits were held");
        // The first sample read after 3.86 s + 0.7 s of lead at most.
        assert_eq!(t, 4_700);
        assert!(c.balance > 3_000.0 && c.balance < 4_500.0, "{c:?}");
        // At 6.6 s on fio's clock the same bucket had run out: that fall is the volume's.
        assert_eq!(held_after_fall(&starved, 700, 6.6), None);
        // A bucket that ran out at the fall and sits at its refill after it.
        let spent: Vec<(u64, CreditSample)> = (1..=12)
            .map(|k| (500 * k, at(if k < 10 { 9_000.0 } else { 120.0 })))
            .collect();
        assert_eq!(held_after_fall(&spent, 500, 4.5), None);
        // No sample after the fall (the step ended): nothing shown.
        assert_eq!(held_after_fall(&spent, 500, 30.0), None);
        let why = clients_fall(&starved, 700, 3.86).unwrap();
        assert!(
            why.starts_with("fio's rate fell at 3.86 s, but the node's bucket still held 4050 credits (30% of it) in a sample read at least 0.14 s after"),
            "{why}"
        );
        assert_eq!(clients_fall(&spent, 500, 4.5), None);
    }

    #[test]
    fn each_side_measures_its_own_windows_and_the_lagging_one_shows() {
        let flow = |after: f64| -> Vec<(u64, f64)> {
            (1..=30)
                .map(|k| (k * 500, if k <= 10 { 3000.0 } else { after }))
                .collect()
        };
        let m = kept(
            "iops",
            &flow(294.0),
            &flow(300.0),
            Some((3000.0, 300.0)),
            1.0,
        );
        let a = &m["iops_after_credits"];
        assert_eq!((a.node, a.client), (300.0, 294.0));
        let ag = a.agreement().unwrap();
        assert_eq!(
            ag.lagging(),
            Some(assess::crosscheck::Side::Client),
            "{ag:?}"
        );
        assert_eq!(m["iops_burst"].node, 3000.0);
        assert_eq!(m["iops"].node, 300.0, "the median of the step");
        // Too few node windows: nothing to judge on the node.
        assert!(kept("bw", &flow(1.0), &[(500, 1.0)], None, 1.0).is_empty());
    }
}
