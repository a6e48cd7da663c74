//! What a burst step measured, from fio's 500 ms windows (so it works on any target): the
//! rate while credits lasted, when they ran out, and the rate afterwards. Pure.

use harness::series::WINDOW_MS;

/// The median of `v` (NaN when empty): `assess::stats::median`.
pub fn median(v: Vec<f64>) -> f64 {
    assess::stats::median(&v).unwrap_or(f64::NAN)
}

/// A burst that ended during the step.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// Median rate of the windows before the transition (the first window, which holds
    /// fio's start, left out when there are others). The median, so a window in which a
    /// busy client was starved is not taken for the target's rate.
    pub burst_rate: f64,
    /// Mean rate of the windows after it (the window right after it and the last,
    /// possibly partial, window left out when there are others): the bytes or requests
    /// they hold over their time. The mean, not the median, because a window holds whole
    /// requests: at 30 MB/s of 1 MiB reads a 500 ms window holds 14 or 15, so each
    /// window's rate is off by up to one request (7%), and a median of such windows keeps
    /// that error however many there are. Summed over the span the error is one request
    /// in all of them (1.2% over 3 s), and a window a starved client lost is repaid in the
    /// next one by the baseline's bucket, so the sum is still the target's rate.
    pub after_rate: f64,
    /// Seconds from the start of fio's clock to the moment credits ran out. The transition
    /// lies in the last window at or above the midpoint or in the first below it; each
    /// holds `(w − after) / (burst − after)` of its 500 ms at the burst rate.
    pub duration_s: f64,
    /// The windows `burst_rate` and `after_rate` were taken over (the cross-check of a
    /// node's figure with the client's weighs their spread: `assess::crosscheck`).
    pub burst_windows: Vec<f64>,
    pub after_windows: Vec<f64>,
}

/// Find where a rate that started at about `burst` fell to about `baseline` (the spec's
/// figures: only their midpoint is used, as the threshold). `windows` are (end of window
/// in ms, rate), in time order. The end is the first window below the midpoint with the
/// next one below too (a momentary dip is not the end). `None` when the rate never fell
/// (the burst outlasted the step), never burst, or there is too little to tell.
pub fn transition(windows: &[(u64, f64)], burst: f64, baseline: f64) -> Option<Transition> {
    let mid = (burst + baseline) / 2.0;
    let n = windows.len();
    let i = (0..n.saturating_sub(1)).find(|&i| windows[i].1 < mid && windows[i + 1].1 < mid)?;
    if i == 0 {
        return None;
    }
    let k = i - 1;
    let rates = |ws: &[(u64, f64)]| median(ws.iter().map(|w| w.1).collect());
    let before = match k {
        0 | 1 => &windows[..1],
        _ => &windows[1..k],
    };
    let after = if i + 3 < n {
        &windows[i + 2..n - 1]
    } else {
        &windows[i + 1..]
    };
    let mean = |ws: &[(u64, f64)]| ws.iter().map(|w| w.1).sum::<f64>() / ws.len() as f64;
    let (p, b) = (rates(before), mean(after));
    let share = |w: f64| {
        if p > b {
            ((w - b) / (p - b)).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let window_s = WINDOW_MS as f64 / 1000.0;
    let start = (windows[k].0 as f64 / 1000.0 - window_s).max(0.0);
    Some(Transition {
        burst_rate: p,
        after_rate: b,
        duration_s: start + window_s * (share(windows[k].1) + share(windows[i].1)),
        burst_windows: before.iter().map(|w| w.1).collect(),
        after_windows: after.iter().map(|w| w.1).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows of a flow at `p` until `t_end` s, then at `b`, for `len` s.
    fn flow(p: f64, b: f64, t_end: f64, len: f64) -> Vec<(u64, f64)> {
        (1..=(len * 2.0) as u64)
            .map(|k| {
                let (s, e) = ((k - 1) as f64 * 0.5, k as f64 * 0.5);
                let at_p = (t_end.min(e) - s).clamp(0.0, 0.5);
                (k * 500, (p * at_p + b * (0.5 - at_p)) / 0.5)
            })
            .collect()
    }

    #[test]
    fn finds_the_end_of_the_burst_inside_a_window() {
        for t_end in [3.6, 4.0, 4.25, 4.3, 5.0, 9.05] {
            let t = transition(&flow(3000.0, 300.0, t_end, 15.0), 3000.0, 300.0).unwrap();
            assert!((t.duration_s - t_end).abs() < 1e-9, "{t_end}: {t:?}");
            assert!(
                (t.burst_rate - 3000.0).abs() < 1e-9 && (t.after_rate - 300.0).abs() < 1e-9,
                "{t:?}"
            );
        }
    }

    #[test]
    fn uses_the_measured_rates_and_ignores_a_dip() {
        // The client reached 2,900 (not 3,000) and the baseline settled at 297; one window
        // at 1,000 during the burst and one at 150 after it (a starved client, repaid in
        // the next window from the bucket) are neither the end nor the rate.
        let mut w = flow(2900.0, 297.0, 6.2, 12.0);
        w[3].1 = 1000.0;
        w[18].1 = 150.0;
        w[19].1 = 297.0 + 147.0;
        let t = transition(&w, 3000.0, 300.0).unwrap();
        assert!((t.duration_s - 6.2).abs() < 1e-9, "{t:?}");
        assert_eq!((t.burst_rate, t.after_rate), (2900.0, 297.0), "{t:?}");
    }

    /// 1 MiB reads at 30 MB/s (28.61 MiB/s): each 500 ms window holds 14 or 15 requests,
    /// and a late completion moves one from a window to the next. The median of the
    /// windows after the burst read 30 MiB/s (+4.9%, outside +-3%) on a busy machine; the
    /// mean is within one request of the span.
    #[test]
    fn the_rate_after_the_burst_is_within_one_request_of_the_span() {
        let rate = 30e6 / 1_048_576.0; // requests per second
        let mut w: Vec<(u64, f64)> = (1..=10).map(|k| (k * 500, 240.0)).collect();
        // After 5 s, whole requests per window: 86 in the six measured windows (3 s at
        // 28.61/s), 15, 15, 13 as completions bunch across window edges.
        for (k, n) in [14, 15, 15, 15, 13, 15, 15, 13, 14].into_iter().enumerate() {
            w.push(((k as u64 + 11) * 500, n as f64 * 2.0));
        }
        let quantized: Vec<f64> = w[12..18].iter().map(|x| x.1).collect();
        assert!((median(quantized) - rate).abs() > rate * 0.03, "{w:?}");
        let t = transition(&w, 240.0, rate).unwrap();
        let span_s = 3.0; // windows i+2..n-1: six of them
        assert!(
            (t.after_rate - rate).abs() <= 1.0 / span_s,
            "{} vs {rate}: {w:?}",
            t.after_rate
        );
    }

    #[test]
    fn no_transition_when_the_burst_outlasts_the_step_or_never_happens() {
        assert_eq!(
            transition(&flow(3000.0, 300.0, 20.0, 10.0), 3000.0, 300.0),
            None
        );
        assert_eq!(
            transition(&flow(300.0, 300.0, 0.0, 10.0), 3000.0, 300.0),
            None
        );
        assert_eq!(transition(&[], 3000.0, 300.0), None);
        // Ended in the second window: the first window is the burst rate.
        let t = transition(&flow(3000.0, 300.0, 0.7, 6.0), 3000.0, 300.0).unwrap();
        assert!((t.duration_s - 0.7).abs() < 1e-9, "{t:?}");
    }
}
