//! Per-volume counters, recorded on the request path with relaxed atomics only.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Monotonic counters for one volume. Readers take differences between snapshots.
#[derive(Debug, Default)]
pub struct VolumeStats {
    pub read_ops: AtomicU64,
    pub write_ops: AtomicU64,
    /// TRIM, WRITE_ZEROES, FLUSH, CACHE, BLOCK_STATUS.
    pub other_ops: AtomicU64,
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
    /// Sum of request latencies (arrival to reply queued), nanoseconds.
    pub latency_ns: AtomicU64,
    /// Sum of time requests waited for the ceiling (ONTAP's "QoS Max" part).
    pub ceiling_wait_ns: AtomicU64,
    /// Sum of time requests waited behind floors of others ("QoS Min"); mClock fills it.
    pub floor_wait_ns: AtomicU64,
    pub errors: AtomicU64,
}

/// The kind of operation, for accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
    Other,
}

impl VolumeStats {
    pub fn record(&self, kind: OpKind, bytes: u64, latency_ns: u64, ceiling_wait_ns: u64) {
        match kind {
            OpKind::Read => {
                self.read_ops.fetch_add(1, Relaxed);
                self.read_bytes.fetch_add(bytes, Relaxed);
            }
            OpKind::Write => {
                self.write_ops.fetch_add(1, Relaxed);
                self.write_bytes.fetch_add(bytes, Relaxed);
            }
            OpKind::Other => {
                self.other_ops.fetch_add(1, Relaxed);
            }
        }
        self.latency_ns.fetch_add(latency_ns, Relaxed);
        if ceiling_wait_ns > 0 {
            self.ceiling_wait_ns.fetch_add(ceiling_wait_ns, Relaxed);
        }
    }

    pub fn total_ops(&self) -> u64 {
        self.read_ops.load(Relaxed) + self.write_ops.load(Relaxed) + self.other_ops.load(Relaxed)
    }
}
