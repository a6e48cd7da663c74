//! Buckets between steps: a burst step starts from a full bucket. On a qoslab node (the
//! embedded one, or `--node`) the family reads the balance and waits until it is full; on
//! any other target it cannot, so it tracks an estimate from the spec (buckets start full,
//! each step spends what it moved above the baseline, idle time refills) and waits for
//! that. Also the node's cache counters (how much a read step found in the caches).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fio::JobResult;
use harness::target::{EmbeddedNode, Target};
use harness::ui::Ui;
use serde_json::Value;
use storage_node::credits::volume_credits;

use super::spec::Spec;
use super::steps::{Bucket, BurstStep};

/// Poll interval while waiting for a bucket.
const POLL: Duration = Duration::from_millis(200);

/// A balance counts as full from this share of the bucket (a burst from 99.5 % lasts
/// 99.5 % as long: inside every check's tolerance).
const FULL_PCT: f64 = 99.5;

/// A bucket the family cannot read: its figures and estimated balance.
#[derive(Debug, Clone, Copy)]
struct Estimate {
    capacity: f64,
    baseline: f64,
    balance: f64,
    at: Instant,
}

/// What the family knows of the buckets.
#[derive(Debug)]
pub struct Balances {
    estimates: HashMap<Bucket, Estimate>,
}

impl Balances {
    /// Every bucket of `spec`, at its initial balance (vendors: full) as of now.
    pub fn new(spec: &Spec) -> Balances {
        let now = Instant::now();
        let est = |b: qos_core::BurstShape, baseline: u64| Estimate {
            capacity: b.bucket as f64,
            baseline: baseline as f64,
            balance: b.initial as f64,
            at: now,
        };
        let mut estimates = HashMap::new();
        match spec {
            Spec::Fs(f) => {
                if let Some(b) = f.spec.network.burst {
                    estimates.insert(Bucket::Resource("network"), est(b, f.spec.network.baseline));
                }
            }
            Spec::Volume(v) => {
                let l = &v.limits;
                if let Some(b) = l.burst.iops {
                    estimates.insert(Bucket::VolumeIops, est(b, l.ceiling.iops));
                }
                if let Some(b) = l.burst.bytes {
                    estimates.insert(Bucket::VolumeBytes, est(b, l.ceiling.bytes_per_sec));
                }
            }
        }
        Balances { estimates }
    }

    /// The balance in percent, read from the node (`None`: not a qoslab node, or the node
    /// does not report that bucket).
    fn read(
        b: &Bucket,
        node: Option<&EmbeddedNode>,
        target: &Target,
        volume: Option<&str>,
    ) -> Option<f64> {
        if let Some(n) = node {
            let node = n.node();
            let now = node.clock.now();
            return match b {
                Bucket::Resource(name) => node
                    .provisioned()?
                    .status(now)
                    .resources
                    .iter()
                    .find(|r| r.name == *name)?
                    .credits
                    .map(|c| c.percent()),
                Bucket::VolumeIops | Bucket::VolumeBytes => {
                    let v = node.volume(volume?)?;
                    let c = volume_credits(node, &v, now);
                    let c = if *b == Bucket::VolumeIops {
                        c.iops
                    } else {
                        c.bytes
                    };
                    c.map(|x| x.credits.percent())
                }
            };
        }
        let Target::NodeVolume { node, volume, .. } = target else {
            return None;
        };
        let t = Duration::from_secs(5);
        match b {
            Bucket::Resource(name) => {
                let v = node.get("/api/cluster", t).ok()?;
                v["provisioned"]["resources"]
                    .as_array()?
                    .iter()
                    .find(|r| r["name"] == *name)?["credits"]["percent"]
                    .as_f64()
            }
            Bucket::VolumeIops | Bucket::VolumeBytes => {
                let v = node
                    .get(
                        &format!("/api/storage/volumes?name={volume}&fields=burst"),
                        t,
                    )
                    .ok()?;
                let dim = if *b == Bucket::VolumeIops {
                    "iops"
                } else {
                    "bytes"
                };
                v["records"][0]["burst"][dim]["percent"].as_f64()
            }
        }
    }

    /// Wait until `step`'s bucket is full: read from a qoslab node, else estimated.
    pub fn wait_full(
        &mut self,
        step: &BurstStep,
        node: Option<&EmbeddedNode>,
        target: &Target,
        volume: Option<&str>,
        ui: &mut dyn Ui,
    ) {
        let refill = step.capacity / step.baseline;
        match Self::read(&step.bucket, node, target, volume) {
            Some(pct) => {
                if pct >= FULL_PCT {
                    return;
                }
                let wait = (FULL_PCT - pct) / 100.0 * refill;
                ui.print(&format!(
                    "  waiting ~{wait:.0} s for {} to refill (at {pct:.1}%)\n",
                    step.bucket.describe()
                ));
                let deadline = Instant::now() + Duration::from_secs_f64(wait * 1.5 + 5.0);
                while Instant::now() < deadline {
                    std::thread::sleep(POLL);
                    if Self::read(&step.bucket, node, target, volume).is_some_and(|p| p >= FULL_PCT)
                    {
                        return;
                    }
                }
                ui.print("  (the bucket did not report full in time; running anyway)\n");
            }
            None => {
                let Some(e) = self.estimates.get_mut(&step.bucket) else {
                    return;
                };
                let now = Instant::now();
                let bal = (e.balance + e.baseline * now.duration_since(e.at).as_secs_f64())
                    .min(e.capacity);
                let wait = (e.capacity * FULL_PCT / 100.0 - bal) / e.baseline;
                if wait > 0.0 {
                    ui.print(&format!(
                        "  waiting {wait:.0} s for {} to refill (estimated from the spec: the target does not report it)\n",
                        step.bucket.describe()
                    ));
                    std::thread::sleep(Duration::from_secs_f64(wait));
                }
                e.balance = e.capacity * FULL_PCT / 100.0;
                e.at = Instant::now();
            }
        }
    }

    /// After a step that ran `elapsed` and moved what `r` says, the estimates: idle time
    /// before it refilled, the step spent what it moved (a file system's network: every
    /// byte; a volume: its I/Os or bytes) and accrued the baseline meanwhile.
    pub fn spent(&mut self, r: &JobResult, elapsed: Duration) {
        let bytes = (r.read.io_bytes + r.write.io_bytes) as f64;
        let ios = (r.read.total_ios + r.write.total_ios) as f64;
        let now = Instant::now();
        let run = elapsed.as_secs_f64();
        for (bucket, e) in self.estimates.iter_mut() {
            let used = match bucket {
                Bucket::VolumeIops => ios,
                _ => bytes,
            };
            let idle = (now.duration_since(e.at).as_secs_f64() - run).max(0.0);
            let before = (e.balance + e.baseline * idle).min(e.capacity);
            e.balance = (before + e.baseline * run - used).clamp(0.0, e.capacity);
            e.at = now;
        }
    }
}

/// READ bytes the node found in memory, in NVMe, and missed (a qoslab node only).
pub fn cache_reads(node: Option<&EmbeddedNode>, target: &Target) -> Option<[u64; 3]> {
    if let Some(n) = node {
        let s = &n.node().provisioned()?.stats;
        let l = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        return Some([
            l(&s.read_memory_bytes),
            l(&s.read_nvme_bytes),
            l(&s.read_miss_bytes),
        ]);
    }
    let Target::NodeVolume { node, .. } = target else {
        return None;
    };
    let v: Value = node.get("/api/cluster", Duration::from_secs(5)).ok()?;
    let r = &v["provisioned"]["cache"]["read_bytes"];
    Some([
        r["memory"].as_u64()?,
        r["nvme"].as_u64()?,
        r["miss"].as_u64()?,
    ])
}

/// The share of the READ bytes between two readings found in a cache, percent.
pub fn cached_pct(before: Option<[u64; 3]>, after: Option<[u64; 3]>) -> Option<f64> {
    let (b, a) = (before?, after?);
    let d: [u64; 3] = std::array::from_fn(|i| a[i].saturating_sub(b[i]));
    let all = d[0] + d[1] + d[2];
    (all > 0).then(|| (d[0] + d[1]) as f64 * 100.0 / all as f64)
}
