//! What one driver runs: the endpoint, one test of a plan (GOSBench's vocabulary, already
//! validated and resolved for this driver), and the operations it issues.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::genio::Rng;

/// Where the requests go, and as whom. The secret never appears in `Debug` output.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// `http://HOST[:PORT][/PATH]` (path-style addressing).
    pub url: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("region", &self.region)
            .field("access_key", &self.access_key)
            .field("secret_key", &"(hidden)")
            .finish()
    }
}

/// An S3 operation as the analysis names it (warp's names). Reads of objects this test
/// wrote and of objects that existed before are both `GET`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "GET")]
    Get,
    #[serde(rename = "PUT")]
    Put,
    #[serde(rename = "DELETE")]
    Delete,
    #[serde(rename = "LIST")]
    List,
    #[serde(rename = "STAT")]
    Stat,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Get, Op::Put, Op::Delete, Op::List, Op::Stat];

    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "GET",
            Op::Put => "PUT",
            Op::Delete => "DELETE",
            Op::List => "LIST",
            Op::Stat => "STAT",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(s))
    }

    pub(crate) fn index(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_index(i: u8) -> Option<Op> {
        Op::ALL.get(usize::from(i)).copied()
    }
}

/// What a client does next, drawn by the test's weights (GOSBench's `*_weight`s plus warp's
/// stat).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// GET an object this test wrote (prepared or PUT during the run).
    Read,
    /// GET an object that was in the bucket before the test.
    ExistingRead,
    Write,
    Delete,
    List,
    Stat,
}

impl Action {
    pub fn op(self) -> Op {
        match self {
            Action::Read | Action::ExistingRead => Op::Get,
            Action::Write => Op::Put,
            Action::Delete => Op::Delete,
            Action::List => Op::List,
            Action::Stat => Op::Stat,
        }
    }
}

/// Relative weights of the actions (0 = never).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Weights {
    pub read: u32,
    pub existing_read: u32,
    pub write: u32,
    pub delete: u32,
    pub list: u32,
    pub stat: u32,
}

impl Weights {
    fn table(&self) -> [(Action, u32); 6] {
        [
            (Action::Read, self.read),
            (Action::ExistingRead, self.existing_read),
            (Action::Write, self.write),
            (Action::Delete, self.delete),
            (Action::List, self.list),
            (Action::Stat, self.stat),
        ]
    }

    pub fn total(&self) -> u64 {
        self.table().iter().map(|(_, w)| u64::from(*w)).sum()
    }

    /// Whether the test needs objects of its own before it starts (reads, deletes, stats).
    pub fn needs_pool(&self) -> bool {
        self.read > 0 || self.delete > 0 || self.stat > 0
    }

    /// An action drawn in proportion to the weights (`total() > 0`).
    pub fn draw(&self, rng: &mut Rng) -> Action {
        let total = self.total().max(1);
        let mut x = rng.next_u64() % total;
        for (a, w) in self.table() {
            let w = u64::from(w);
            if x < w {
                return a;
            }
            x -= w;
        }
        Action::Write
    }
}

/// Object sizes between `min` and `max` bytes (GOSBench's `size_distribution`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "distribution", rename_all = "lowercase")]
pub enum SizeDist {
    Constant {
        size: u64,
    },
    /// Every size in `[min, max]` equally likely (GOSBench's `random`).
    Uniform {
        min: u64,
        max: u64,
    },
    /// ln(size) normal with its mean at the middle of [ln min, ln max] and σ a sixth of
    /// that range (99.7% of draws inside; the rest clamped to it): many small objects, a
    /// long tail of large ones, the median at the geometric mean √(min·max).
    LogNormal {
        min: u64,
        max: u64,
    },
}

impl SizeDist {
    pub fn max(&self) -> u64 {
        match *self {
            SizeDist::Constant { size } => size,
            SizeDist::Uniform { max, .. } | SizeDist::LogNormal { max, .. } => max,
        }
    }

    pub fn min(&self) -> u64 {
        match *self {
            SizeDist::Constant { size } => size,
            SizeDist::Uniform { min, .. } | SizeDist::LogNormal { min, .. } => min,
        }
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            SizeDist::Constant { size } => size,
            SizeDist::Uniform { min, max } => min + rng.next_u64() % (max - min + 1),
            SizeDist::LogNormal { min, max } => {
                let (lo, hi) = ((min.max(1) as f64).ln(), (max.max(1) as f64).ln());
                let mu = (lo + hi) / 2.0;
                let sigma = (hi - lo) / 6.0;
                let x = (mu + sigma * standard_normal(rng)).exp().round() as u64;
                x.clamp(min, max)
            }
        }
    }
}

/// A uniform draw in (0, 1].
fn unit(rng: &mut Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut Rng) -> f64 {
    let (u1, u2) = (unit(rng), unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// When a test's timed phase ends (GOSBench's `stop_with_runtime` / `stop_with_ops`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this long (ramp included).
    Runtime(Duration),
    /// After this many operations have been started by this driver.
    Ops(u64),
}

/// One test as one driver runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    pub name: String,
    pub weights: Weights,
    pub sizes: SizeDist,
    /// Objects uploaded per bucket before the timed phase (when the weights need a pool).
    pub objects: u64,
    /// The buckets this driver's clients use, round-robin.
    pub buckets: Vec<String>,
    /// Key prefix of every object this driver writes (unique per driver and test).
    pub prefix: String,
    /// Concurrent clients (GOSBench's `parallel_clients`), each with its own connection.
    pub clients: u32,
    pub stop: Stop,
    /// Keys per LIST request (ListObjectsV2 `max-keys`).
    pub list_max_keys: u32,
    /// Per-request timeout.
    pub timeout: Duration,
    pub seed: u64,
}

impl TestSpec {
    /// The largest PUT body.
    pub fn max_object(&self) -> u64 {
        self.sizes.max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_draw_in_proportion() {
        let w = Weights {
            read: 70,
            write: 20,
            delete: 10,
            ..Weights::default()
        };
        let mut rng = Rng::new(3);
        let mut n = [0u32; 3];
        for _ in 0..100_000 {
            match w.draw(&mut rng) {
                Action::Read => n[0] += 1,
                Action::Write => n[1] += 1,
                Action::Delete => n[2] += 1,
                a => panic!("{a:?} has weight 0"),
            }
        }
        for (got, want) in n.iter().zip([70_000.0, 20_000.0, 10_000.0]) {
            assert!((f64::from(*got) - want).abs() < want * 0.03, "{n:?}");
        }
        assert!(w.needs_pool());
        assert_eq!(w.total(), 100);
    }

    #[test]
    fn sizes_stay_in_range_and_lognormal_centres_on_the_geometric_mean() {
        let mut rng = Rng::new(9);
        let d = SizeDist::LogNormal {
            min: 1024,
            max: 1 << 20,
        };
        let mut v: Vec<u64> = (0..20_001).map(|_| d.sample(&mut rng)).collect();
        assert!(v.iter().all(|s| (1024..=1 << 20).contains(s)));
        v.sort_unstable();
        let median = v[v.len() / 2] as f64;
        let geo = (1024.0f64 * f64::from(1 << 20)).sqrt();
        assert!(
            (median / geo - 1.0).abs() < 0.05,
            "median {median}, want ~{geo}"
        );
        // σ = (ln max − ln min)/6: ~16% of draws lie beyond one σ above the median.
        let one_sigma = geo * ((f64::from(1 << 20) / 1024.0).ln() / 6.0).exp();
        let above = v.iter().filter(|&&s| s as f64 > one_sigma).count() as f64 / v.len() as f64;
        assert!((above - 0.1587).abs() < 0.015, "{above}");
        let u = SizeDist::Uniform { min: 10, max: 12 };
        let mut seen = [false; 3];
        for _ in 0..100 {
            seen[(u.sample(&mut rng) - 10) as usize] = true;
        }
        assert_eq!(seen, [true; 3]);
        assert_eq!(SizeDist::Constant { size: 7 }.sample(&mut rng), 7);
    }

    #[test]
    fn ops_have_warps_names() {
        assert_eq!(Op::parse("get"), Some(Op::Get));
        assert_eq!(Op::parse("STAT"), Some(Op::Stat));
        assert_eq!(Op::parse("copy"), None);
        assert_eq!(serde_json::to_string(&Op::Delete).unwrap(), "\"DELETE\"");
        for o in Op::ALL {
            assert_eq!(Op::from_index(o.index()), Some(o));
        }
        let e = Endpoint {
            url: "http://x".into(),
            region: "r".into(),
            access_key: "AK".into(),
            secret_key: "very secret".into(),
        };
        assert!(!format!("{e:?}").contains("very secret"));
    }
}
