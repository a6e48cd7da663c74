//! An emulated provisioned file system (FSx for ONTAP's performance model) in front of the
//! backend: every request passes through it after its volume's QoS.
//!
//! * **Resources** ([`spec::ResourceSpec`]): network throughput, disk throughput and the file
//!   server's SSD IOPS each have a baseline and may burst on a credit bucket
//!   ([`qos_core::credit`]); provisioned SSD IOPS are a flat limit. Each is a sans-IO
//!   [`Pacer`] with burst credits.
//! * **Caches** ([`cache::Caches`]): an in-memory cache and an NVMe cache, LRU over the
//!   volumes' blocks. What a request costs depends on them: a READ whose blocks are all
//!   cached costs network only; a READ that misses costs network, disk bytes (the missing
//!   blocks) and one disk I/O (server SSD IOPS and provisioned SSD IOPS); a WRITE costs
//!   network and disk bytes and lands in the memory cache. (AWS: "SSD IOPS are only used
//!   when you access data that is not cached"; writes are coalesced by ONTAP before they
//!   reach the SSDs, so they are charged disk bytes, not disk I/Os — which is why the seed's
//!   ~29K 4 KiB write IOPS sit at the 128 MB/s disk baseline, far above 3,072 SSD IOPS.)
//! * **Single-flow limit** ([`ConnCap`]): each NBD connection is one network flow and may
//!   be capped (AWS: 5 Gb/s per flow); several connections (`nconnect`, NBD multi-conn) lift
//!   it, up to the network resource.
//!
//! A request may start when every resource it uses allows it; each resource is charged at
//! the earliest time it allows (a resource that is not the bottleneck is never reserved into
//! the future, which would idle it for requests that do not need the bottleneck). The
//! node's other contention (mClock
//! floors, the `[capacity]` budget) happens before; time spent here is reported as
//! *resource* wait.

pub mod cache;
pub mod spec;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qos_core::{Burst, CreditStatus, Nanos, Pacer, Rate};

use crate::locks;
use cache::{Caches, Hit};
pub use spec::{FsSpec, PresetOptions, ResourceSpec};

/// What a request does, for the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    /// TRIM, WRITE_ZEROES and the rest: no payload crosses the network, nothing is charged.
    Other,
}

/// The resources, in report order.
pub const RESOURCES: [&str; 4] = ["network", "disk", "disk_iops", "ssd_iops"];

fn bytes_pacer(r: &ResourceSpec, now: Nanos) -> Pacer {
    let ceiling = Rate {
        iops: 0,
        bytes_per_sec: r.baseline,
    };
    Pacer::with_burst(
        ceiling,
        Burst {
            iops: None,
            bytes: r.burst,
        },
        now,
    )
}

fn ops_pacer(r: &ResourceSpec, now: Nanos) -> Pacer {
    let ceiling = Rate {
        iops: r.baseline,
        bytes_per_sec: 0,
    };
    Pacer::with_burst(
        ceiling,
        Burst {
            iops: r.burst,
            bytes: None,
        },
        now,
    )
}

struct Inner {
    /// network, disk (bytes), disk_iops, ssd_iops (ops).
    res: [Pacer; 4],
    caches: Caches,
}

/// Cumulative counters (relaxed atomics) and their rates over the last second.
#[derive(Debug, Default)]
pub struct FsStats {
    /// Units charged to each resource (bytes or I/Os), in [`RESOURCES`] order.
    pub used: [AtomicU64; 4],
    /// READ bytes found in memory, in NVMe, and missed.
    pub read_memory_bytes: AtomicU64,
    pub read_nvme_bytes: AtomicU64,
    pub read_miss_bytes: AtomicU64,
    /// Time requests waited for the file system's resources (incl. the single-flow limit).
    pub wait_ns: AtomicU64,
    ring: Mutex<Vec<(Instant, [u64; 4])>>,
    rates: Mutex<[f64; 4]>,
}

impl FsStats {
    /// Takes a sample (the node's sampler calls this every 250 ms); rates cover ~1 s.
    pub fn sample(&self, at: Instant) {
        let snap: [u64; 4] = std::array::from_fn(|i| self.used[i].load(Relaxed));
        let mut ring = locks::lock(&self.ring);
        ring.push((at, snap));
        while ring.len() > 2 && at.duration_since(ring[1].0) >= Duration::from_secs(1) {
            ring.remove(0);
        }
        let (t0, first) = ring[0];
        let secs = at.duration_since(t0).as_secs_f64();
        if secs > 0.0 {
            *locks::lock(&self.rates) =
                std::array::from_fn(|i| snap[i].saturating_sub(first[i]) as f64 / secs);
        }
    }

    /// Per-second use of each resource over the last second, in [`RESOURCES`] order.
    pub fn rates(&self) -> [f64; 4] {
        *locks::lock(&self.rates)
    }
}

/// One resource's state for the API, metrics and stats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceStatus {
    pub name: &'static str,
    /// "bytes" or "iops".
    pub unit: &'static str,
    pub baseline: u64,
    /// The bucket, when the resource bursts.
    pub credits: Option<CreditStatus>,
    /// Use over the last second, units per second.
    pub use_rate: f64,
}

impl ResourceStatus {
    /// Seconds until the bucket is empty at the current use (`None`: not draining).
    pub fn time_to_empty(&self) -> Option<f64> {
        self.credits.and_then(|c| c.time_to_empty(self.use_rate))
    }
}

/// A snapshot of the file system.
#[derive(Debug, Clone, PartialEq)]
pub struct FsStatus {
    pub resources: Vec<ResourceStatus>,
    /// Blocks cached / capacity: memory, NVMe.
    pub memory_blocks: (usize, usize),
    pub nvme_blocks: (usize, usize),
}

/// The emulated provisioned file system of a node.
pub struct ProvisionedFs {
    spec: FsSpec,
    inner: Mutex<Inner>,
    pub stats: FsStats,
}

/// A connection's single-flow limit.
pub struct ConnCap(Option<Pacer>);

impl ProvisionedFs {
    /// The file system with full (initial) buckets at `now`.
    pub fn new(spec: FsSpec, now: Nanos) -> ProvisionedFs {
        let (mem, nvme) = spec.cache_blocks();
        let ssd = ResourceSpec {
            baseline: spec.ssd_iops,
            burst: None,
        };
        ProvisionedFs {
            inner: Mutex::new(Inner {
                res: [
                    bytes_pacer(&spec.network, now),
                    bytes_pacer(&spec.disk, now),
                    ops_pacer(&spec.disk_iops, now),
                    ops_pacer(&ssd, now),
                ],
                caches: Caches::new(mem, nvme),
            }),
            spec,
            stats: FsStats::default(),
        }
    }

    pub fn spec(&self) -> &FsSpec {
        &self.spec
    }

    /// A new connection's single-flow limit.
    pub fn connection(&self) -> ConnCap {
        ConnCap((self.spec.per_connection > 0).then(|| {
            Pacer::new(Rate {
                iops: 0,
                bytes_per_sec: self.spec.per_connection,
            })
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        locks::lock(&self.inner)
    }

    /// When a request released by QoS at `now` may start: looks it up in the caches (and
    /// updates them), then takes the latest start every resource it uses allows and charges
    /// each at that start. `vol` identifies the volume's blocks.
    pub fn admit(
        &self,
        conn: &mut ConnCap,
        vol: u64,
        access: Access,
        offset: u64,
        len: u64,
        now: Nanos,
    ) -> Nanos {
        if access == Access::Other || len == 0 {
            return now;
        }
        let block = self.spec.cache_block.max(1);
        let mut inner = self.lock();
        let mut missed = 0u64;
        let (mut in_mem, mut in_nvme) = (0u64, 0u64);
        let end = offset + len;
        let mut b = offset / block;
        while b * block < end {
            let overlap = end.min((b + 1) * block) - offset.max(b * block);
            match access {
                Access::Read => match inner.caches.read((vol, b)) {
                    Hit::Memory => in_mem += overlap,
                    Hit::Nvme => in_nvme += overlap,
                    Hit::Miss => missed += overlap,
                },
                _ => inner.caches.write((vol, b)),
            }
            b += 1;
        }
        let (disk_bytes, disk_ops) = match access {
            Access::Write => (len, 0),
            _ => (missed, u64::from(missed > 0)),
        };
        // [network, disk, disk_iops, ssd_iops] costs as (ops, bytes). Each resource is charged
        // at the earliest time it allows (not at the request's overall start): a resource
        // that is not the bottleneck is not reserved into the future, so a disk-bound write
        // does not hold the network away from a cached read that could go now.
        let cost = [(0, len), (0, disk_bytes), (disk_ops, 0), (disk_ops, 0)];
        let mut start = now;
        for (i, (p, &(ops, bytes))) in inner.res.iter_mut().zip(&cost).enumerate() {
            if ops > 0 || bytes > 0 {
                start = start.max(p.admit(now, ops, bytes));
                self.stats.used[i].fetch_add(ops + bytes, Relaxed);
            }
        }
        drop(inner);
        if let Some(p) = &mut conn.0 {
            start = start.max(p.admit(now, 0, len));
        }
        if access == Access::Read {
            for (c, v) in [
                (&self.stats.read_memory_bytes, in_mem),
                (&self.stats.read_nvme_bytes, in_nvme),
                (&self.stats.read_miss_bytes, missed),
            ] {
                if v > 0 {
                    c.fetch_add(v, Relaxed);
                }
            }
        }
        if start > now {
            self.stats.wait_ns.fetch_add(start - now, Relaxed);
        }
        start
    }

    /// Resources and caches at `now`.
    pub fn status(&self, now: Nanos) -> FsStatus {
        let rates = self.stats.rates();
        let inner = self.lock();
        let specs = [
            (self.spec.network.baseline, "bytes"),
            (self.spec.disk.baseline, "bytes"),
            (self.spec.disk_iops.baseline, "iops"),
            (self.spec.ssd_iops, "iops"),
        ];
        let resources = (0..4)
            .map(|i| {
                let (ops, bytes) = inner.res[i].credit_status(now);
                ResourceStatus {
                    name: RESOURCES[i],
                    unit: specs[i].1,
                    baseline: specs[i].0,
                    credits: if specs[i].1 == "bytes" { bytes } else { ops },
                    use_rate: rates[i],
                }
            })
            .collect();
        FsStatus {
            resources,
            memory_blocks: (inner.caches.memory.len(), inner.caches.memory.capacity()),
            nvme_blocks: (inner.caches.nvme.len(), inner.caches.nvme.capacity()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qos_core::BurstShape;

    const SEC: Nanos = 1_000_000_000;
    const MIB: u64 = 1 << 20;

    fn spec() -> FsSpec {
        FsSpec {
            name: "test".into(),
            network: ResourceSpec {
                baseline: 100 * MIB,
                burst: Some(BurstShape {
                    rate: 400 * MIB,
                    bucket: 300 * MIB,
                    initial: 300 * MIB,
                }),
            },
            disk: ResourceSpec {
                baseline: 10 * MIB,
                burst: None,
            },
            disk_iops: ResourceSpec {
                baseline: 1_000,
                burst: None,
            },
            ssd_iops: 100,
            memory_cache: 4 * MIB,
            nvme_cache: 16 * MIB,
            cache_block: MIB,
            per_connection: 200 * MIB,
        }
    }

    /// Saturating 1 MiB requests from `conns` connections for `secs` from `from`; bytes per
    /// second.
    fn run_from(
        fs: &ProvisionedFs,
        from: Nanos,
        conns: usize,
        access: Access,
        span: u64,
        secs: u64,
    ) -> f64 {
        let mut caps: Vec<ConnCap> = (0..conns).map(|_| fs.connection()).collect();
        let mut next = vec![from; conns];
        // Each connection starts at its own part of the span.
        let mut off: Vec<u64> = (0..conns as u64)
            .map(|i| i * (span / conns as u64) / MIB * MIB)
            .collect();
        let mut bytes = 0u64;
        let until = from + secs * SEC;
        loop {
            let (i, &t) = next.iter().enumerate().min_by_key(|(_, t)| **t).unwrap();
            if t >= until {
                break;
            }
            let s = fs.admit(&mut caps[i], 1, access, off[i] % span, MIB, t);
            if s < until {
                bytes += MIB;
            }
            off[i] += MIB;
            next[i] = s + 1;
        }
        bytes as f64 / secs as f64
    }

    fn run(fs: &ProvisionedFs, conns: usize, access: Access, span: u64, secs: u64) -> f64 {
        run_from(fs, 0, conns, access, span, secs)
    }

    /// `rate` (bytes per second) is `mib_s` MiB/s, within `tolerance`.
    #[track_caller]
    fn assert_mib_s(rate: f64, mib_s: f64, tolerance: f64) {
        let got = rate / MIB as f64;
        assert!((got - mib_s).abs() < tolerance, "{got}");
    }

    #[test]
    fn cached_reads_cost_network_only_misses_cost_disk() {
        let fs = ProvisionedFs::new(spec(), 0);
        // Warm 4 MiB (memory) with writes: they cost disk (10 MiB/s) -> ~0.4 s.
        let w = run(&fs, 1, Access::Write, 4 * MIB, 1);
        assert!((9.0 * MIB as f64..=12.0 * MIB as f64).contains(&w), "{w}");
        // Cached reads (after warming 4 MiB with writes): one connection is held to its
        // 200 MiB/s flow limit; four reach the network burst (400 MiB/s).
        let warm = || {
            let fs = ProvisionedFs::new(spec(), 0);
            let mut cap = fs.connection();
            for b in 0..4 {
                fs.admit(&mut cap, 1, Access::Write, b * MIB, MIB, 0);
            }
            fs
        };
        let fs = warm();
        let one = run_from(&fs, SEC, 1, Access::Read, 4 * MIB, 1);
        assert_mib_s(one, 200.0, 3.0);
        let fs = warm();
        let four = run_from(&fs, SEC, 4, Access::Read, 4 * MIB, 1);
        assert_mib_s(four, 400.0, 8.0);
        assert!(fs.stats.read_miss_bytes.load(Relaxed) == 0);
        // Misses (a span beyond both caches) run at the disk: 10 MiB/s, 100 SSD IOPS.
        let fs = ProvisionedFs::new(spec(), 0);
        let miss = run(&fs, 4, Access::Read, 64 * MIB, 2);
        assert_mib_s(miss, 10.0, 1.0);
        assert!(fs.stats.read_memory_bytes.load(Relaxed) == 0);
    }

    #[test]
    fn network_bursts_then_settles_at_baseline() {
        // 300 MiB bucket at 400 over 100: 1 s of burst, then 100 MiB/s.
        let fs = ProvisionedFs::new(spec(), 0);
        let mut cap = fs.connection();
        fs.admit(&mut cap, 1, Access::Write, 0, MIB, 0);
        let st = fs.status(0);
        assert_eq!(st.resources[0].credits.unwrap().bucket, 300 * MIB);
        let avg = run(&fs, 8, Access::Read, MIB, 11);
        // 1 s at 400 + 10 s at 100 over 11 s = 127 MiB/s.
        assert_mib_s(avg, 127.3, 2.5);
        let st = fs.status(11 * SEC);
        assert!(st.resources[0].credits.unwrap().balance < 2 * MIB);
        assert_eq!(st.memory_blocks, (1, 4));
    }
}
