//! The sweep's statistics per scale point, pure and unit-tested: the distribution of a
//! per-tenant figure (min, p5, median, max; sum and mean), Jain's fairness index, the
//! slowest-to-fastest ratio, elbencho's first-done / last-done, and the fail rate.

use serde::{Deserialize, Serialize};

/// Distribution of one figure over tenants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub n: usize,
    pub sum: f64,
    pub mean: f64,
    pub min: f64,
    pub p5: f64,
    pub median: f64,
    pub max: f64,
}

/// Percentile `p` (0..=100) of sorted values by linear interpolation between closest
/// ranks (numpy's default, R type 7): p5 of 1..=21 is 2.0.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
            let lo = h.floor() as usize;
            let hi = h.ceil() as usize;
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// The distribution of `values` (NaNs ignored); None when there is none.
pub fn distribution(values: &[f64]) -> Option<Distribution> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let sum: f64 = v.iter().sum();
    Some(Distribution {
        n: v.len(),
        sum,
        mean: sum / v.len() as f64,
        min: v[0],
        p5: percentile(&v, 5.0),
        median: percentile(&v, 50.0),
        max: v[v.len() - 1],
    })
}

/// Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when every tenant gets the same,
/// 1/n when one gets everything. None for no values or all zeros.
pub fn jain(values: &[f64]) -> Option<f64> {
    let n = values.len() as f64;
    let s: f64 = values.iter().sum();
    let s2: f64 = values.iter().map(|x| x * x).sum();
    if values.is_empty() || s2 == 0.0 {
        return None;
    }
    Some(s * s / (n * s2))
}

/// Slowest over fastest (min / max) of a throughput-like figure: 1 is perfectly even.
pub fn min_over_max(values: &[f64]) -> Option<f64> {
    let d = distribution(values)?;
    (d.max > 0.0).then(|| d.min / d.max)
}

/// elbencho's first-done / last-done: of tenants started together, when the first and
/// the last finished (seconds from the start); their ratio shows the spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub first_done: f64,
    pub last_done: f64,
    /// last / first (1 is perfectly even).
    pub last_over_first: f64,
}

pub fn completion(finish_secs: &[f64]) -> Option<Completion> {
    let d = distribution(finish_secs)?;
    Some(Completion {
        first_done: d.min,
        last_done: d.max,
        last_over_first: if d.min > 0.0 { d.max / d.min } else { f64::NAN },
    })
}

/// Failed iterations out of all (the seed's "total / failed / fail rate (%)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    pub total: u64,
    pub failed: u64,
}

impl Failures {
    pub fn rate_percent(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            100.0 * self.failed as f64 / self.total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn distribution_of_known_values() {
        let v: Vec<f64> = (1..=21).rev().map(f64::from).collect();
        let d = distribution(&v).unwrap();
        assert_eq!((d.n, d.min, d.max), (21, 1.0, 21.0));
        assert!(close(d.p5, 2.0) && close(d.median, 11.0), "{d:?}");
        assert!(close(d.sum, 231.0) && close(d.mean, 11.0));
        // Interpolated: p5 of [10, 20] is 10.5; the median of four values is the middle.
        assert!(close(distribution(&[20.0, 10.0]).unwrap().p5, 10.5));
        assert!(close(
            distribution(&[1.0, 2.0, 3.0, 10.0]).unwrap().median,
            2.5
        ));
        let one = distribution(&[7.0]).unwrap();
        assert_eq!((one.min, one.p5, one.median, one.max), (7.0, 7.0, 7.0, 7.0));
        assert!(distribution(&[]).is_none());
        assert_eq!(distribution(&[f64::NAN, 3.0]).unwrap().n, 1);
    }

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_takes_all() {
        assert!(close(jain(&[5.0, 5.0, 5.0, 5.0]).unwrap(), 1.0));
        assert!(close(jain(&[8.0, 0.0, 0.0, 0.0]).unwrap(), 0.25));
        // Two tenants at 100 and 50: 150^2 / (2 * 12500) = 0.9.
        assert!(close(jain(&[100.0, 50.0]).unwrap(), 0.9));
        assert!(jain(&[]).is_none() && jain(&[0.0, 0.0]).is_none());
    }

    #[test]
    fn spread_first_last_and_fail_rate() {
        assert!(close(min_over_max(&[50.0, 100.0, 75.0]).unwrap(), 0.5));
        let c = completion(&[12.0, 10.0, 15.0]).unwrap();
        assert_eq!((c.first_done, c.last_done), (10.0, 15.0));
        assert!(close(c.last_over_first, 1.5));
        // Seed 004's Jenkins row for 10 instances: 300 builds, 60 failed, 20.0 %.
        assert!(close(
            Failures {
                total: 300,
                failed: 60
            }
            .rate_percent(),
            20.0
        ));
        assert!(close(
            Failures {
                total: 0,
                failed: 0
            }
            .rate_percent(),
            0.0
        ));
    }
}
