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

/// Student's t, two-sided 95%, for `df` degrees of freedom (rounded down: the conservative
/// side; beyond 30 the next tabulated row below, and 1.96 from 120 on). Standard tables.
pub fn t_critical_95(df: f64) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df.is_nan() || df < 1.0 {
        return T[0];
    }
    let d = df.floor() as usize;
    match d {
        1..=30 => T[d - 1],
        31..=39 => 2.042,
        40..=59 => 2.021,
        60..=119 => 2.000,
        _ => 1.980,
    }
}

/// What a difference of two means is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseBasis {
    /// Both sides have iterations: Welch's standard error and degrees of freedom.
    Welch,
    /// One side has iterations, the other a single value: that side's standard deviation
    /// stands for both (pooled), with its n − 1 degrees of freedom.
    OneSide,
    /// A single value each: no spread was measured; only the fixed floor applies.
    NoSpread,
}

impl NoiseBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            NoiseBasis::Welch => "welch",
            NoiseBasis::OneSide => "one-side",
            NoiseBasis::NoSpread => "no-spread",
        }
    }
}

/// The smallest difference of two means (as a fraction of the baseline's) that their
/// spreads say is real: the 95% two-sided t threshold on the standard error of the
/// difference, never below `floor_measured` (differences no storage benchmark calls a
/// change however tight the iterations) — or, without any spread (one value each),
/// `floor_unmeasured`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub basis: NoiseBasis,
    /// Standard error of the difference of the means (absolute; None without spread).
    pub stderr: Option<f64>,
    /// Degrees of freedom of the t threshold (None without spread).
    pub df: Option<f64>,
    /// t for 95% two-sided at `df` (None without spread).
    pub t: Option<f64>,
    /// The threshold as a fraction of |base mean|.
    pub relative: f64,
}

/// The noise two sets of iterations allow for the difference of their means.
pub fn noise(base: &Spread, new: &Spread, floor_measured: f64, floor_unmeasured: f64) -> Noise {
    let var_a = base.stddev * base.stddev;
    let var_b = new.stddev * new.stddev;
    let (na, nb) = (base.n.max(1) as f64, new.n.max(1) as f64);
    let (basis, se, df) = match (base.n >= 2, new.n >= 2) {
        (true, true) => {
            let (qa, qb) = (var_a / na, var_b / nb);
            let se = (qa + qb).sqrt();
            let den = qa * qa / (na - 1.0) + qb * qb / (nb - 1.0);
            // Both without variance: any degrees of freedom give a zero threshold.
            let df = if den > 0.0 {
                (qa + qb).powi(2) / den
            } else {
                na + nb - 2.0
            };
            (NoiseBasis::Welch, se, df)
        }
        (true, false) => (
            NoiseBasis::OneSide,
            base.stddev * (1.0 / na + 1.0 / nb).sqrt(),
            na - 1.0,
        ),
        (false, true) => (
            NoiseBasis::OneSide,
            new.stddev * (1.0 / na + 1.0 / nb).sqrt(),
            nb - 1.0,
        ),
        (false, false) => {
            return Noise {
                basis: NoiseBasis::NoSpread,
                stderr: None,
                df: None,
                t: None,
                relative: floor_unmeasured,
            }
        }
    };
    let t = t_critical_95(df);
    let rel = if base.mean != 0.0 {
        t * se / base.mean.abs()
    } else {
        0.0
    };
    Noise {
        basis,
        stderr: Some(se),
        df: Some(df),
        t: Some(t),
        relative: rel.max(floor_measured),
    }
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

    #[test]
    fn t_table_and_noise() {
        assert_eq!(t_critical_95(1.0), 12.706);
        assert_eq!(t_critical_95(4.9), 2.776, "rounded down: conservative");
        assert_eq!(t_critical_95(30.0), 2.042);
        assert_eq!(t_critical_95(45.0), 2.021);
        assert_eq!(t_critical_95(1e6), 1.980);
        assert_eq!(t_critical_95(0.3), 12.706);

        // 3 vs 3 with equal stddev s: Welch's df = 4, se = s sqrt(2/3).
        let a = Spread::of(&[1000.0, 1100.0, 1050.0]).unwrap();
        let b = Spread::of(&[900.0, 1000.0, 950.0]).unwrap();
        let n = noise(&a, &b, 0.01, 0.05);
        assert_eq!(n.basis, NoiseBasis::Welch);
        assert!((n.df.unwrap() - 4.0).abs() < 1e-9, "{n:?}");
        let se = 50.0 * (2.0f64 / 3.0).sqrt();
        assert!((n.stderr.unwrap() - se).abs() < 1e-9);
        assert!((n.relative - 2.776 * se / 1050.0).abs() < 1e-12, "{n:?}");

        // Unequal variances: Welch's df lies between the smaller n - 1 and the sum.
        let c = Spread::of(&[500.0, 501.0, 499.0, 500.0, 500.5]).unwrap();
        let d = Spread::of(&[450.0, 550.0, 480.0]).unwrap();
        let n = noise(&c, &d, 0.01, 0.05);
        assert!(n.df.unwrap() >= 2.0 && n.df.unwrap() < 6.0, "{n:?}");

        // Tight iterations: the measured floor.
        let e = Spread::of(&[500.0, 500.0, 500.0]).unwrap();
        let n = noise(&e, &e, 0.01, 0.05);
        assert_eq!(n.relative, 0.01);

        // One side measured: its stddev stands for both, df = n - 1.
        let one = Spread::of(&[1100.0]).unwrap();
        let n = noise(&a, &one, 0.01, 0.05);
        assert_eq!(n.basis, NoiseBasis::OneSide);
        assert_eq!(n.df, Some(2.0));
        assert!((n.stderr.unwrap() - 50.0 * (1.0f64 / 3.0 + 1.0).sqrt()).abs() < 1e-9);
        let m = noise(&one, &a, 0.01, 0.05);
        assert_eq!((m.basis, m.df), (NoiseBasis::OneSide, Some(2.0)));

        // Nothing measured: the unmeasured floor.
        let n = noise(&one, &one, 0.01, 0.05);
        assert_eq!(
            (n.basis, n.relative, n.stderr),
            (NoiseBasis::NoSpread, 0.05, None)
        );
    }
}
