//! Steady state as SNIA's Solid State Storage PTS defines it, on one run's per-window
//! figures (fio's 500 ms IOPS windows): over the last [`WINDOW`] windows,
//! - the data excursion, max − min, is at most [`MAX_RANGE`] (20%) of their mean, and
//! - the slope excursion, the least-squares line's change across the window
//!   (|slope| × (WINDOW − 1)), is at most [`MAX_SLOPE_CHANGE`] (10%) of their mean.
//!
//! One small function on purpose: issue 12 builds the same check in crate `assess`
//! (`assess::steady::check`); when that lands in main, this module becomes a call to it.

use serde::Serialize;

/// Windows in the measurement window (PTS: 5 rounds).
pub const WINDOW: usize = 5;
/// Largest data excursion, fraction of the window's mean.
pub const MAX_RANGE: f64 = 0.20;
/// Largest change of the fitted line across the window, fraction of the window's mean.
pub const MAX_SLOPE_CHANGE: f64 = 0.10;

/// The check on the last [`WINDOW`] windows of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Steady {
    pub attained: bool,
    pub mean: f64,
    /// max − min, percent of the mean.
    pub range_pct: f64,
    /// |slope| × (WINDOW − 1), percent of the mean.
    pub slope_change_pct: f64,
}

impl Steady {
    /// "steady: range 3.1% (<= 20%), trend 1.2% (<= 10%) over the last 5 windows".
    pub fn describe(&self) -> String {
        format!(
            "{}: range {:.1}% of the mean (<= {:.0}%), trend {:.1}% (<= {:.0}%) over the last {WINDOW} windows",
            if self.attained { "steady" } else { "not steady" },
            self.range_pct,
            MAX_RANGE * 100.0,
            self.slope_change_pct,
            MAX_SLOPE_CHANGE * 100.0
        )
    }
}

/// The PTS check on the last [`WINDOW`] values of `xs` (None with fewer: not judged).
pub fn check(xs: &[f64]) -> Option<Steady> {
    if xs.len() < WINDOW {
        return None;
    }
    let w = &xs[xs.len() - WINDOW..];
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    let max = w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = w.iter().copied().fold(f64::INFINITY, f64::min);
    // Least squares over x = 0..n-1.
    let xm = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in w.iter().enumerate() {
        let dx = i as f64 - xm;
        sxy += dx * (y - mean);
        sxx += dx * dx;
    }
    let slope = sxy / sxx;
    if mean <= 0.0 {
        // No throughput is not a steady state of anything.
        return Some(Steady {
            attained: false,
            mean,
            range_pct: f64::INFINITY,
            slope_change_pct: f64::INFINITY,
        });
    }
    let range = (max - min) / mean;
    let change = slope.abs() * (n - 1.0) / mean;
    Some(Steady {
        attained: range <= MAX_RANGE && change <= MAX_SLOPE_CHANGE,
        mean,
        range_pct: range * 100.0,
        slope_change_pct: change * 100.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pts_rule() {
        // (xs, (attained, range %, slope change %))
        type Case<'a> = (&'a [f64], Option<(bool, f64, f64)>);
        let cases: &[Case] = &[
            (&[100.0, 100.0, 100.0, 100.0], None),
            (
                &[1.0, 100.0, 100.0, 100.0, 100.0, 100.0],
                Some((true, 0.0, 0.0)),
            ),
            // A ramp 90..110: range 20% (held), trend 20% (too steep).
            (
                &[90.0, 95.0, 100.0, 105.0, 110.0],
                Some((false, 20.0, 20.0)),
            ),
            // Noise without a trend: range 20%, slope 0.
            (&[90.0, 110.0, 100.0, 110.0, 90.0], Some((true, 20.0, 0.0))),
            // Too noisy: range 40%.
            (&[80.0, 120.0, 100.0, 120.0, 80.0], Some((false, 40.0, 0.0))),
            (
                &[0.0, 0.0, 0.0, 0.0, 0.0],
                Some((false, f64::INFINITY, f64::INFINITY)),
            ),
        ];
        for (xs, want) in cases {
            let got = check(xs).map(|s| (s.attained, s.range_pct, s.slope_change_pct));
            match (got, want) {
                (None, None) => {}
                (Some((a, r, c)), Some((wa, wr, wc))) => {
                    assert_eq!(a, *wa, "{xs:?}");
                    assert!(r == *wr || (r - wr).abs() < 1e-9, "{xs:?}: range {r}");
                    assert!(c == *wc || (c - wc).abs() < 1e-9, "{xs:?}: slope {c}");
                }
                _ => panic!("{xs:?}: {got:?} vs {want:?}"),
            }
        }
        assert!(check(&[100.0; 5])
            .unwrap()
            .describe()
            .starts_with("steady: range 0.0%"));
    }
}
