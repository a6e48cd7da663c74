//! Spread of a figure over iterations (the seed: 3-5 iterations of the same test).

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n - 1).
    pub stddev: f64,
    /// stddev / mean, percent.
    pub cv_pct: f64,
}

impl Spread {
    pub fn of(v: &[f64]) -> Spread {
        let n = v.len();
        if n == 0 {
            return Spread::default();
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let stddev = var.sqrt();
        Spread {
            n,
            mean,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev,
            cv_pct: if mean > 0.0 {
                100.0 * stddev / mean
            } else {
                0.0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread() {
        let s = Spread::of(&[90.0, 100.0, 110.0]);
        assert_eq!(
            (s.n, s.mean, s.min, s.max, s.stddev),
            (3, 100.0, 90.0, 110.0, 10.0)
        );
        assert!((s.cv_pct - 10.0).abs() < 1e-9);
        assert_eq!(Spread::of(&[]).n, 0);
        assert_eq!(Spread::of(&[5.0]).stddev, 0.0);
    }
}
