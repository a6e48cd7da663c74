//! Small statistics: mean, sample standard deviation, median, least-squares slope, and the
//! spread of repeated iterations.

use serde::{Deserialize, Serialize};

pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample standard deviation (n − 1); 0 for a single value.
pub fn stddev(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if xs.len() < 2 {
        return Some(0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// The middle value (mean of the two middle ones for an even count). NaNs are ignored.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Least-squares line through (i, xs[i]), i = 0..n: (slope per step, intercept at 0).
pub fn linear_fit(xs: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mx = (nf - 1.0) / 2.0;
    let my = mean(xs)?;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in xs.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (y - my);
        sxx += dx * dx;
    }
    let slope = sxy / sxx;
    Some((slope, my - slope * mx))
}

/// Repeated measurements of one figure (iterations of a job): how far they spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(xs: &[f64]) -> Option<Spread> {
        Some(Spread {
            n: xs.len(),
            mean: mean(xs)?,
            stddev: stddev(xs)?,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// Coefficient of variation, percent of the mean (pbench's "stddev%").
    pub fn cv_pct(&self) -> f64 {
        if self.mean != 0.0 {
            self.stddev / self.mean.abs() * 100.0
        } else {
            0.0
        }
    }

    /// Standard error of the mean.
    pub fn sem(&self) -> f64 {
        if self.n > 0 {
            self.stddev / (self.n as f64).sqrt()
        } else {
            0.0
        }
    }
}

/// Whether two sets of iterations differ by more than their spread explains: the means are
/// further apart than `k` combined standard errors (Welch's denominator) and than `floor`
/// (a fraction of the baseline, the noise no spread estimate from few samples can rule out).
/// With a single iteration on either side there is no spread: only `floor` applies.
pub fn differs(base: &Spread, new: &Spread, k: f64, floor: f64) -> bool {
    let diff = (new.mean - base.mean).abs();
    let beyond_floor = diff > floor * base.mean.abs();
    if base.n < 2 || new.n < 2 {
        return beyond_floor;
    }
    let se = (base.sem().powi(2) + new.sem().powi(2)).sqrt();
    beyond_floor && diff > k * se
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_basics_on_known_values() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), Some(5.0));
        // Sum of squares 32, n − 1 = 7.
        assert!((stddev(&xs).unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(median(&xs), Some(4.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[]), None);
        assert_eq!(mean(&[]), None);
        assert_eq!(stddev(&[1.0]), Some(0.0));
        let (s, b) = linear_fit(&[1.0, 3.0, 5.0, 7.0]).unwrap();
        assert!((s - 2.0).abs() < 1e-12 && (b - 1.0).abs() < 1e-12);
        assert_eq!(linear_fit(&[1.0]), None);
    }

    #[test]
    fn one_starved_sample_moves_the_mean_not_the_median() {
        let xs = [100.0, 100.0, 100.0, 50.0, 100.0, 100.0, 100.0, 100.0];
        assert!(mean(&xs).unwrap() < 94.0);
        assert_eq!(median(&xs), Some(100.0));
    }

    #[test]
    fn spread_and_difference() {
        let a = Spread::of(&[100.0, 102.0, 98.0]).unwrap();
        assert_eq!((a.n, a.mean, a.min, a.max), (3, 100.0, 98.0, 102.0));
        assert!((a.cv_pct() - 2.0).abs() < 1e-9);
        let b = Spread::of(&[103.0, 105.0, 101.0]).unwrap();
        // 3% apart with ~2% spread over 3 samples each: not beyond 2 standard errors.
        assert!(!differs(&a, &b, 2.0, 0.01), "se {}", a.sem());
        let c = Spread::of(&[110.0, 111.0, 109.0]).unwrap();
        assert!(differs(&a, &c, 2.0, 0.01));
        // The floor alone for single runs.
        let one = |x| Spread::of(&[x]).unwrap();
        assert!(!differs(&one(100.0), &one(104.0), 2.0, 0.05));
        assert!(differs(&one(100.0), &one(106.0), 2.0, 0.05));
    }
}
