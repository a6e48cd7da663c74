//! Steady state, as SNIA's Solid State Storage PTS defines it, on a job's stored samples
//! (fio's 500 ms windows): over the last [`WINDOW`] samples,
//! - the data excursion, max − min, is at most [`MAX_RANGE`] (20%) of their mean, and
//! - the slope excursion, the least-squares line's change across the window
//!   (|slope| × (WINDOW − 1)), is at most [`MAX_SLOPE_CHANGE`] (10%) of their mean.
//!
//! (fio's own `ss=` checks one criterion at a time and its slope per interval, not across
//! the window; this is the PTS rule as cloudharmony and TKperf implement it.)

use serde::{Deserialize, Serialize};

use crate::stats::{linear_fit, mean, median};

/// Samples in the measurement window (PTS: 5 rounds).
pub const WINDOW: usize = 5;
/// Largest data excursion, fraction of the window's mean.
pub const MAX_RANGE: f64 = 0.20;
/// Largest change of the fitted line across the window, fraction of the window's mean.
pub const MAX_SLOPE_CHANGE: f64 = 0.10;

/// The check on one window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    pub attained: bool,
    /// Index of the window's first sample in the series, and its length.
    pub start: usize,
    pub len: usize,
    pub mean: f64,
    /// max − min, percent of the mean.
    pub range_pct: f64,
    /// |slope| × (len − 1), percent of the mean.
    pub slope_change_pct: f64,
    /// The fitted line: change per sample and value at the window's first sample.
    pub slope: f64,
    pub intercept: f64,
}

impl SteadyState {
    /// "steady: last 5 windows vary 3.1% (≤ 20%), trend 1.2% (≤ 10%)".
    pub fn describe(&self) -> String {
        format!(
            "{}: last {} samples range {:.1}% of their mean (<= {:.0}%), trend {:.1}% across them (<= {:.0}%)",
            if self.attained { "steady" } else { "not steady" },
            self.len,
            self.range_pct,
            MAX_RANGE * 100.0,
            self.slope_change_pct,
            MAX_SLOPE_CHANGE * 100.0
        )
    }
}

/// The PTS check on one window (any length ≥ 2).
pub fn check_window(xs: &[f64], start: usize) -> Option<SteadyState> {
    let m = mean(xs)?;
    let (slope, intercept) = linear_fit(xs)?;
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let change = slope.abs() * (xs.len() - 1) as f64;
    // A window with no throughput is not a steady state of anything.
    let (range_pct, slope_change_pct, attained) = if m > 0.0 {
        let r = (max - min) / m;
        let s = change / m;
        (
            r * 100.0,
            s * 100.0,
            r <= MAX_RANGE && s <= MAX_SLOPE_CHANGE,
        )
    } else {
        (f64::INFINITY, f64::INFINITY, false)
    };
    Some(SteadyState {
        attained,
        start,
        len: xs.len(),
        mean: m,
        range_pct,
        slope_change_pct,
        slope,
        intercept,
    })
}

/// The job's verdict on steady state: the last [`WINDOW`] samples (None with fewer).
pub fn check(series: &[f64]) -> Option<SteadyState> {
    if series.len() < WINDOW {
        return None;
    }
    let start = series.len() - WINDOW;
    check_window(&series[start..], start)
}

/// Where steady state was first reached: the index just past the first steady window
/// (`--until-steady` stops there).
pub fn first_steady(series: &[f64]) -> Option<usize> {
    (WINDOW..=series.len()).find(|&end| {
        check_window(&series[end - WINDOW..end], end - WINDOW).is_some_and(|s| s.attained)
    })
}

/// The samples that belong to at least one steady window.
pub fn steady_samples(series: &[f64]) -> Vec<f64> {
    let mut keep = vec![false; series.len()];
    for end in WINDOW..=series.len() {
        let w = &series[end - WINDOW..end];
        if check_window(w, end - WINDOW).is_some_and(|s| s.attained) {
            keep[end - WINDOW..end].iter_mut().for_each(|k| *k = true);
        }
    }
    series
        .iter()
        .zip(keep)
        .filter_map(|(x, k)| k.then_some(*x))
        .collect()
}

/// A rate one starved sample cannot move: the median of the samples in steady windows, or
/// of all samples when no window is steady (then the figure is marked not steady by
/// [`check`]). None for an empty series.
pub fn robust_rate(series: &[f64]) -> Option<f64> {
    let steady = steady_samples(series);
    if steady.is_empty() {
        median(series)
    } else {
        median(&steady)
    }
}
