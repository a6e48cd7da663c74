//! Per-volume counters, recorded on the request path with relaxed atomics only, and the
//! per-second rates a sampler derives from them (off the request path).
//!
//! Operations are counted twice: as requests (the latency histograms' counts) and in the
//! node's I/O-size accounting unit (`counted_milli`, thousandths: a 1 MiB read is 16
//! operations under `transfer:64KiB`). Rates report IOPS in the counted unit, and mean
//! latencies per counted operation: each operation of a request is charged the request's
//! latency and queue time (ONTAP's per-transfer view), so with `whole` accounting they
//! are plain per-request means.

use crate::locks;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Upper bounds (inclusive, nanoseconds) of the latency histogram buckets; a last,
/// implicit bucket holds everything slower (Prometheus `+Inf`).
pub const LATENCY_BUCKETS_NS: [u64; 16] = [
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
];
const NBUCKETS: usize = LATENCY_BUCKETS_NS.len() + 1;

/// A fixed-bucket latency histogram of relaxed atomics (no locks, no allocation).
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; NBUCKETS],
    sum_ns: AtomicU64,
}

impl Histogram {
    #[inline]
    pub fn observe(&self, ns: u64) {
        let i = LATENCY_BUCKETS_NS.partition_point(|&b| b < ns);
        self.buckets[i].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(ns, Relaxed);
    }

    /// Per-bucket counts (not cumulative), last entry is the `+Inf` bucket.
    pub fn counts(&self) -> [u64; NBUCKETS] {
        std::array::from_fn(|i| self.buckets[i].load(Relaxed))
    }

    pub fn sum_ns(&self) -> u64 {
        self.sum_ns.load(Relaxed)
    }

    pub fn count(&self) -> u64 {
        self.counts().iter().sum()
    }
}

/// Monotonic counters for one volume. Readers take differences between snapshots.
#[derive(Debug, Default)]
pub struct VolumeStats {
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
    /// Sum of time requests waited for the ceiling (ONTAP's "QoS Max" part).
    pub ceiling_wait_ns: AtomicU64,
    /// Sum of time requests waited behind floors of others ("QoS Min"); mClock fills it.
    pub floor_wait_ns: AtomicU64,
    /// Sum of time requests waited for the provisioned file system's resources (network,
    /// disk, SSD IOPS, the single-flow limit).
    pub resource_wait_ns: AtomicU64,
    /// Requests whose host I/O outlasted the emulated array's service latency (their
    /// replies left when the I/O finished, late), and by how much in total.
    pub service_overruns: AtomicU64,
    pub service_overrun_ns: AtomicU64,
    pub errors: AtomicU64,
    /// Latency histograms by kind: read, write, other.
    pub latency: [Histogram; 3],
    /// Operations in the node's accounting unit, in thousandths, by kind.
    pub counted_milli: [AtomicU64; 3],
    /// Latency × counted operations (ns·ops), by kind: per-operation means.
    op_latency_ns: [AtomicU64; 3],
    /// Queue time × counted operations (ns·ops): by ceilings, by floors.
    op_wait_ns: [AtomicU64; 2],
    /// Sampler state (never touched by the request path).
    sampler: Mutex<Sampler>,
}

/// The kind of operation, for accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
    Other,
}

/// How long a request was queued by QoS, split by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Waits {
    /// Waiting for the volume's own ceiling.
    pub ceiling_ns: u64,
    /// Waiting for the node (others' floors and shares, under an emulated controller).
    pub floor_ns: u64,
}

impl VolumeStats {
    /// Record a completed request of `kind` that moved `bytes`, counted as one operation.
    pub fn record(&self, kind: OpKind, bytes: u64, latency_ns: u64, waits: Waits) {
        self.record_counted(kind, bytes, 1000, latency_ns, waits);
    }

    /// Record a completed request of `kind` that moved `bytes`, counted as `milliops`
    /// thousandths of an operation (the node's accounting), with its latency and waits.
    pub fn record_counted(
        &self,
        kind: OpKind,
        bytes: u64,
        milliops: u64,
        latency_ns: u64,
        waits: Waits,
    ) {
        // The histogram's bucket counts are the request counts (see `requests`).
        let k = kind as usize;
        match kind {
            OpKind::Read => self.read_bytes.fetch_add(bytes, Relaxed),
            OpKind::Write => self.write_bytes.fetch_add(bytes, Relaxed),
            OpKind::Other => 0,
        };
        self.latency[k].observe(latency_ns);
        self.counted_milli[k].fetch_add(milliops, Relaxed);
        let weighted = |ns: u64| (u128::from(ns) * u128::from(milliops) / 1000) as u64;
        self.op_latency_ns[k].fetch_add(weighted(latency_ns), Relaxed);
        if waits.ceiling_ns > 0 {
            self.ceiling_wait_ns.fetch_add(waits.ceiling_ns, Relaxed);
            self.op_wait_ns[0].fetch_add(weighted(waits.ceiling_ns), Relaxed);
        }
        if waits.floor_ns > 0 {
            self.floor_wait_ns.fetch_add(waits.floor_ns, Relaxed);
            self.op_wait_ns[1].fetch_add(weighted(waits.floor_ns), Relaxed);
        }
    }

    /// Requests completed of one kind (other: TRIM, WRITE_ZEROES, FLUSH, CACHE,
    /// BLOCK_STATUS), read from the latency histogram that counts each one once.
    pub fn requests(&self, kind: OpKind) -> u64 {
        self.latency[kind as usize].count()
    }

    /// Requests completed of every kind (the divisor of the request-time totals
    /// `ceiling_wait_ns`, `floor_wait_ns` and the histograms' sums).
    pub fn total_ops(&self) -> u64 {
        self.latency.iter().map(Histogram::count).sum()
    }

    /// Operations completed of one kind in the node's accounting unit (whole operations,
    /// rounded down; equal to [`requests`](Self::requests) with `whole` accounting).
    pub fn ops(&self, kind: OpKind) -> u64 {
        self.counted_milli[kind as usize].load(Relaxed) / 1000
    }

    fn snapshot(&self, at: Instant) -> Snapshot {
        Snapshot {
            at,
            ops: std::array::from_fn(|i| self.counted_milli[i].load(Relaxed)),
            bytes: [
                self.read_bytes.load(Relaxed),
                self.write_bytes.load(Relaxed),
            ],
            lat_ns: std::array::from_fn(|i| self.op_latency_ns[i].load(Relaxed)),
            ceiling_ns: self.op_wait_ns[0].load(Relaxed),
            floor_ns: self.op_wait_ns[1].load(Relaxed),
        }
    }

    /// Take a sample (called by the sampler task every [`SAMPLE_EVERY`]); the rates are
    /// then computed over the most recent window of about [`RATE_WINDOW`].
    pub fn sample(&self, at: Instant) {
        let snap = self.snapshot(at);
        let mut s = locks::lock(&self.sampler);
        s.ring.push(snap);
        // Keep the newest sample at least RATE_WINDOW old, drop older ones.
        while s.ring.len() > 2 && at.duration_since(s.ring[1].at) >= RATE_WINDOW {
            s.ring.remove(0);
        }
        let first = s.ring[0];
        s.rates = if s.ring.len() >= 2 {
            Rates::between(&first, &snap)
        } else {
            Rates::default()
        };
    }

    /// Rates over the last second (as of the last sample).
    pub fn rates(&self) -> Rates {
        locks::lock(&self.sampler).rates
    }
}

/// How often the sampler samples.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// The window the reported rates cover.
pub const RATE_WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct Sampler {
    ring: Vec<Snapshot>,
    rates: Rates,
}

#[derive(Debug, Clone, Copy)]
struct Snapshot {
    at: Instant,
    /// Counted operations (thousandths) and the op-weighted latency and waits.
    ops: [u64; 3],
    bytes: [u64; 2],
    lat_ns: [u64; 3],
    ceiling_ns: u64,
    floor_ns: u64,
}

/// Per-second rates over the last window: ONTAP's `metric` block.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    /// IOPS in the node's accounting unit: read, write, other.
    pub iops: [f64; 3],
    /// Bytes/s: read, write.
    pub throughput: [f64; 2],
    /// Mean latency per counted operation, µs: read, write, other, total.
    pub latency_us: [f64; 4],
    /// Mean time queued per counted operation, µs: by ceilings, by floors.
    pub qos_latency_us: [f64; 2],
}

impl Rates {
    fn between(a: &Snapshot, b: &Snapshot) -> Rates {
        let secs = b.at.duration_since(a.at).as_secs_f64();
        if secs <= 0.0 {
            return Rates::default();
        }
        // Counted operations, back from thousandths (fractional under a cost curve).
        let ops: [f64; 3] =
            std::array::from_fn(|i| b.ops[i].saturating_sub(a.ops[i]) as f64 / 1000.0);
        let lat: [u64; 3] = std::array::from_fn(|i| b.lat_ns[i].saturating_sub(a.lat_ns[i]));
        let mean_us = |ns: u64, n: f64| {
            if n <= 0.0 {
                0.0
            } else {
                ns as f64 / n / 1e3
            }
        };
        let total_ops: f64 = ops.iter().sum();
        let total_lat: u64 = lat.iter().sum();
        Rates {
            iops: std::array::from_fn(|i| ops[i] / secs),
            throughput: std::array::from_fn(|i| {
                b.bytes[i].saturating_sub(a.bytes[i]) as f64 / secs
            }),
            latency_us: [
                mean_us(lat[0], ops[0]),
                mean_us(lat[1], ops[1]),
                mean_us(lat[2], ops[2]),
                mean_us(total_lat, total_ops),
            ],
            qos_latency_us: [
                mean_us(b.ceiling_ns.saturating_sub(a.ceiling_ns), total_ops),
                mean_us(b.floor_ns.saturating_sub(a.floor_ns), total_ops),
            ],
        }
    }

    pub fn total_iops(&self) -> f64 {
        self.iops.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_inclusive_upper_bounds() {
        let h = Histogram::default();
        h.observe(0);
        h.observe(25_000);
        h.observe(25_001);
        h.observe(u64::MAX / 4);
        let c = h.counts();
        assert_eq!(c[0], 2);
        assert_eq!(c[1], 1);
        assert_eq!(c[NBUCKETS - 1], 1);
        assert_eq!(h.count(), 4);
    }

    #[test]
    fn rates_over_the_window() {
        let s = VolumeStats::default();
        let t0 = Instant::now();
        s.sample(t0);
        for _ in 0..100 {
            s.record(
                OpKind::Read,
                4096,
                200_000,
                Waits {
                    ceiling_ns: 100_000,
                    floor_ns: 0,
                },
            );
        }
        s.sample(t0 + Duration::from_millis(500));
        let r = s.rates();
        assert!((r.iops[0] - 200.0).abs() < 1e-6, "{r:?}");
        assert!((r.throughput[0] - 819_200.0).abs() < 1e-3);
        assert!((r.latency_us[0] - 200.0).abs() < 1e-9);
        assert!((r.qos_latency_us[0] - 100.0).abs() < 1e-9);
        assert_eq!((s.requests(OpKind::Read), s.ops(OpKind::Read)), (100, 100));
        // Old samples fall out of the window.
        for i in 1..10 {
            s.sample(t0 + Duration::from_millis(500 + 250 * i));
        }
        assert_eq!(s.rates().total_iops(), 0.0);
    }
    #[test]
    fn counted_operations_weight_the_means() {
        // transfer:64KiB: a 1 MiB read counts 16 operations, a 4 KiB read one.
        let s = VolumeStats::default();
        let t0 = Instant::now();
        s.sample(t0);
        let w = |c| Waits {
            ceiling_ns: c,
            floor_ns: 0,
        };
        s.record_counted(OpKind::Read, 1 << 20, 16_000, 1_700_000, w(1_000_000));
        s.record_counted(OpKind::Read, 4096, 1000, 100_000, w(0));
        s.sample(t0 + Duration::from_secs(1));
        let r = s.rates();
        assert_eq!(r.iops[0], 17.0);
        assert_eq!((s.requests(OpKind::Read), s.ops(OpKind::Read)), (2, 17));
        // (16 x 1700 + 1 x 100) / 17 us; the 1 MiB read's 1 ms wait on each of its 16 ops.
        assert!((r.latency_us[0] - 1605.882).abs() < 1e-3, "{r:?}");
        assert!(
            (r.qos_latency_us[0] - 16_000.0 / 17.0).abs() < 1e-9,
            "{r:?}"
        );
        // Prometheus' request-time totals stay physical seconds.
        assert_eq!(s.ceiling_wait_ns.load(Relaxed), 1_000_000);
    }
}
