//! A step's rates on the node's own counters (`harness::kept`): when the target is a qoslab
//! node, the steady rate, the burst rate and the baseline after the credits ran out are
//! measured from the node's samples of the volume exactly as from fio's windows, and each
//! check on them is judged on the node's figure with fio's as the cross-check
//! (`assess::judge_kept`). The burst's duration stays fio's: the node's sampling clock
//! starts before fio's, so the moment credits ran out is the client's to time.

use std::collections::BTreeMap;

use assess::crosscheck::{agreement, Agreement};
use harness::series::WINDOW_MS;

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

/// Whether a burst bucket, sampled by the node over a step (`buckets`, in time order),
/// never ran out: it never held less than one second of its baseline. An empty series
/// says nothing (false): fio's windows alone then tell when the burst ended.
pub fn never_ran_out(buckets: &[harness::series::CreditSample]) -> bool {
    !buckets.is_empty() && buckets.iter().all(|c| c.balance >= c.baseline)
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
        let starved: Vec<CreditSample> = (0..10).map(|k| at(13_500.0 - 850.0 * k as f64)).collect();
        assert!(never_ran_out(&starved));
        // At the burst rate it ran out (and stays at the refill's level after).
        let spent: Vec<CreditSample> = [13_500.0, 8_000.0, 2_000.0, 150.0, 40.0]
            .into_iter()
            .map(at)
            .collect();
        assert!(!never_ran_out(&spent));
        assert!(!never_ran_out(&[]));
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
