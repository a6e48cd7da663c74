//! YCSB's key choice: records are `user` + FNV hash of the record number (so inserts in
//! order spread over the key space), and requests pick records by a scrambled Zipfian
//! distribution (YCSB's default, constant 0.99: a few hot records take most requests).

use crate::apps::rng::{fnv64, Rng};

/// YCSB's Zipfian constant.
pub const ZIPF_THETA: f64 = 0.99;

/// The key of record `i`.
pub fn key(i: u64) -> String {
    format!("user{}", fnv64(i))
}

/// Zipfian over `0..n` (Gray et al., "Quickly generating billion-record synthetic
/// databases", as in YCSB's ZipfianGenerator), scrambled by hashing the rank.
#[derive(Debug, Clone)]
pub struct Zipfian {
    n: u64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl Zipfian {
    pub fn new(n: u64) -> Zipfian {
        let n = n.max(1);
        let theta = ZIPF_THETA;
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2, theta);
        Zipfian {
            n,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    /// The rank (0 is the most popular).
    pub fn rank(&self, r: &mut Rng) -> u64 {
        let u = r.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.n - 1);
        }
        let v = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.n - 1)
    }

    /// A record number: the rank scrambled over `0..n`.
    pub fn next(&self, r: &mut Rng) -> u64 {
        fnv64(self.rank(r)) % self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_skewed_like_zipf_and_stay_in_range() {
        let z = Zipfian::new(1000);
        let mut r = Rng::new(3);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            let k = z.rank(&mut r);
            counts[k as usize] += 1;
            assert!(z.next(&mut r) < 1000);
        }
        // P(rank 0) = 1/zeta(1000, 0.99) ~ 0.13; the top 10 take about 38%.
        let p0 = counts[0] as f64 / 100_000.0;
        assert!((0.11..0.16).contains(&p0), "p0 = {p0}");
        let top10: u32 = counts[..10].iter().sum();
        assert!(top10 > 30_000 && top10 < 45_000, "top10 = {top10}");
        assert!(counts[0] > counts[1] && counts[1] > counts[9]);
    }

    #[test]
    fn keys_are_ycsb_style_and_distinct() {
        assert!(key(0).starts_with("user"));
        assert_ne!(key(1), key(2));
    }
}
