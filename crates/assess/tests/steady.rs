//! The steady-state check on synthetic series: ramps, sawtooths, flat lines with noise.

use assess::steady::{check, first_steady, robust_rate, steady_samples, WINDOW};

/// Deterministic noise in [-amp, amp] (a small LCG: no dependency, same series every run).
fn noisy(level: f64, amp: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
            level + amp * (2.0 * u - 1.0)
        })
        .collect()
}

fn ramp(from: f64, step: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| from + step * i as f64).collect()
}

fn sawtooth(low: f64, high: f64, period: usize, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| low + (high - low) * (i % period) as f64 / (period - 1) as f64)
        .collect()
}

#[test]
fn synthetic_series() {
    // (name, series, steady over the last 5?, first steady window ends at; "any" for noise
    // as wide as the limit, where a window may pass by chance)
    let any = usize::MAX;
    let cases: Vec<(&str, Vec<f64>, bool, Option<usize>)> = vec![
        ("flat", vec![500.0; 8], true, Some(5)),
        (
            "flat with 2% noise",
            noisy(1000.0, 20.0, 16, 7),
            true,
            Some(5),
        ),
        (
            "flat with 15% noise",
            noisy(1000.0, 150.0, 16, 7),
            false,
            Some(any),
        ),
        ("steep ramp", ramp(50.0, 10.0, 10), false, None),
        // +1% of the level per sample: the line moves 4% across the window, within 10%.
        ("slow drift", ramp(1000.0, 10.0, 10), true, Some(5)),
        // +40 per sample: the last five (1200..1360) range 12.5% of their mean, which
        // passes, but the trend across them is 12.5% too, which does not.
        ("creeping ramp", ramp(1000.0, 40.0, 10), false, None),
        (
            "ramp to a plateau",
            vec![20.0, 40.0, 60.0, 80.0, 100.0, 100.0, 100.0, 100.0, 100.0],
            true,
            Some(9),
        ),
        ("sawtooth +-20%", sawtooth(80.0, 120.0, 4, 12), false, None),
        ("no throughput", vec![0.0; 6], false, None),
    ];
    for (name, series, steady, first) in cases {
        let s = check(&series).unwrap_or_else(|| panic!("{name}: no check"));
        assert_eq!(s.attained, steady, "{name}: {}", s.describe());
        assert_eq!(s.len, WINDOW, "{name}");
        assert_eq!(s.start, series.len() - WINDOW, "{name}");
        if first != Some(any) {
            assert_eq!(first_steady(&series), first, "{name}");
        }
    }
}

#[test]
fn the_figures_behind_the_verdict() {
    // 100, 105, 110, 115, 120: mean 110, range 20 (18.2%), slope 5/sample, 20 across (18.2%).
    let s = check(&ramp(100.0, 5.0, 5)).unwrap();
    assert!((s.mean - 110.0).abs() < 1e-9);
    assert!((s.range_pct - 20.0 / 110.0 * 100.0).abs() < 1e-9);
    assert!((s.slope - 5.0).abs() < 1e-9 && (s.intercept - 100.0).abs() < 1e-9);
    assert!((s.slope_change_pct - 20.0 / 110.0 * 100.0).abs() < 1e-9);
    assert!(
        !s.attained,
        "range passes (18% <= 20%), the trend does not (18% > 10%)"
    );
    assert!(s
        .describe()
        .starts_with("not steady: last 5 samples range 18.2%"));
    // A trend exactly at its limit passes: mean 100, slope 2.5 per sample, 10 across.
    let edge = [90.0, 102.5, 105.0, 97.5, 105.0];
    let e = check(&edge).unwrap();
    assert!((e.mean - 100.0).abs() < 1e-9 && (e.range_pct - 15.0).abs() < 1e-9);
    assert!(e.attained, "{}", e.describe());
}

#[test]
fn too_few_samples_is_no_verdict() {
    assert!(check(&[1.0, 2.0, 3.0, 4.0]).is_none());
    assert_eq!(first_steady(&[1.0; 4]), None);
}

#[test]
fn one_starved_window_cannot_move_the_robust_rate() {
    // A 100 MiB/s ceiling measured over 10 windows, one of them starved to a quarter.
    let mut xs = vec![100.0; 10];
    xs[3] = 25.0;
    let mean = xs.iter().sum::<f64>() / 10.0;
    assert!(mean < 93.0, "the mean is off by {:.1}%", 100.0 - mean);
    assert_eq!(robust_rate(&xs), Some(100.0));
    // Starved at the end (no steady window holds it), still the median.
    let mut ys = vec![100.0; 8];
    ys[7] = 10.0;
    assert_eq!(robust_rate(&ys), Some(100.0));
    // A series that never settles: the median of everything.
    assert_eq!(robust_rate(&ramp(10.0, 10.0, 5)), Some(30.0));
    assert_eq!(robust_rate(&[]), None);
    // Steady samples: the windows holding the dip are not steady; the two after it are.
    assert_eq!(steady_samples(&xs), vec![100.0; 6]);
}
