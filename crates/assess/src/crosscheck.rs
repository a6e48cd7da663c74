//! The promise judged where it is kept: a qoslab node counts every request of a volume
//! itself, so a ceiling, a floor or a baseline is judged on the node's count over the
//! judged window, and the client's (fio's) figure for the same window is the cross-check.
//!
//! The two count the same requests, so over the same span they differ only by the run's
//! noise: each side's windows scatter (a request completes in one window or the next, a
//! window's edges fall a few milliseconds apart on the two clocks) and each side's span
//! holds whole requests. The noise is [`NOISE_SE`] standard errors of the difference of the
//! two means (each side's windows' standard deviation over the root of their count) plus
//! one request over each side's span. Beyond it, one side fell behind the other: the lower
//! count lagged (a client starved between completions and its clock, or a node sampler
//! that missed its time), and a check the two sides judge differently proves nothing
//! ([`crate::outcome::judge_kept`]).

use serde::{Deserialize, Serialize};

use crate::stats::Spread;

/// Standard errors of the difference the two sides may differ by before one lagged.
pub const NOISE_SE: f64 = 3.0;

/// Which side of a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The load generator (fio).
    Client,
    /// The storage node's own counters.
    Node,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "the client (fio)",
            Side::Node => "the node",
        }
    }
}

/// The node's and the client's figure for one judged window, and how far apart they may be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub node: f64,
    pub client: f64,
    /// (client − node) / node, percent.
    pub diff_pct: f64,
    /// The run's noise, percent of the node's figure.
    pub noise_pct: f64,
}

impl Agreement {
    /// The side that fell behind, when the two differ beyond the noise: the lower count.
    pub fn lagging(&self) -> Option<Side> {
        if self.diff_pct.abs() <= self.noise_pct {
            None
        } else if self.client < self.node {
            Some(Side::Client)
        } else {
            Some(Side::Node)
        }
    }

    /// "the node counted 300.0, fio 294.3 over the same window (-1.9%, noise ±0.6%)".
    pub fn describe(&self, show: &dyn Fn(f64) -> String) -> String {
        format!(
            "the node counted {}, fio {} over the same window ({:+.1}%, the run's noise ±{:.1}%)",
            show(self.node),
            show(self.client),
            self.diff_pct,
            self.noise_pct
        )
    }
}

/// The agreement of the node's figure with the client's. `node_windows` and
/// `client_windows` are each side's rates over the judged span's windows (`window_s` long);
/// `quantum` is one request in the figure's unit (1 for IOPS, the mean request's bytes for
/// a bandwidth). None when either side has no windows or the node counted nothing.
pub fn agreement(
    node: f64,
    client: f64,
    node_windows: &[f64],
    client_windows: &[f64],
    window_s: f64,
    quantum: f64,
) -> Option<Agreement> {
    let (n, c) = (Spread::of(node_windows)?, Spread::of(client_windows)?);
    if node <= 0.0 || window_s <= 0.0 {
        return None;
    }
    let se = (n.sem().powi(2) + c.sem().powi(2)).sqrt();
    let whole = quantum / (n.n as f64 * window_s) + quantum / (c.n as f64 * window_s);
    Some(Agreement {
        node,
        client,
        diff_pct: (client - node) / node * 100.0,
        noise_pct: (NOISE_SE * se + whole) / node * 100.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_counts_agree_and_a_lower_count_beyond_the_noise_lagged() {
        // 300 IOPS paced: 500 ms windows of 150 requests, one completing late now and then.
        let node = [300.0, 302.0, 298.0, 300.0, 300.0, 302.0, 298.0, 300.0];
        let a = agreement(300.0, 300.0, &node, &node, 0.5, 1.0).unwrap();
        assert_eq!(a.lagging(), None, "{a:?}");
        // fio saw 2% less over the same span: beyond ±(3 x 0.71 + 0.5) / 300.
        let fio: Vec<f64> = node.iter().map(|v| v * 0.98).collect();
        let a = agreement(300.0, 294.0, &node, &fio, 0.5, 1.0).unwrap();
        assert!((a.noise_pct - 0.915).abs() < 0.001, "{a:?}");
        assert_eq!(a.lagging(), Some(Side::Client));
        let a = agreement(294.0, 300.0, &fio, &node, 0.5, 1.0).unwrap();
        assert_eq!(a.lagging(), Some(Side::Node));
        assert_eq!(
            a.describe(&|v| format!("{v:.1} IOPS")),
            "the node counted 294.0 IOPS, fio 300.0 IOPS over the same window (+2.0%, the run's noise ±0.9%)"
        );
        // Scattered windows widen the noise: the same 2% is then within it.
        let wild = [200.0, 400.0, 250.0, 350.0, 300.0, 300.0, 200.0, 400.0];
        let a = agreement(300.0, 294.0, &wild, &wild, 0.5, 1.0).unwrap();
        assert_eq!(a.lagging(), None, "{a:?}");
        assert_eq!(agreement(300.0, 294.0, &[], &node, 0.5, 1.0), None);
        assert_eq!(agreement(0.0, 294.0, &node, &node, 0.5, 1.0), None);
    }
}
