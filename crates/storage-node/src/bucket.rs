//! An S3 bucket on the node: its objects ([`ObjectStore`]) and, like a volume, a QoS
//! policy, the effective limits it yields and a scheduler flow. Each S3 request on the
//! bucket is one request of that flow (counted as the node's I/O-size accounting counts
//! it: one operation with the default `whole`); its payload bytes count against MB/s.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use qos_core::{EffectiveLimits, VolumeSpace};

use crate::locks::lock;
use crate::objstore::ObjectStore;
use crate::scheduler::NO_FLOW;
use crate::stats::VolumeStats;

/// ONTAP's default bucket size (800 GB) when none is given: the "allocated space" an
/// adaptive policy scales with.
pub const DEFAULT_BUCKET_SIZE: u64 = 800_000_000_000;

pub struct Bucket {
    pub name: String,
    pub uuid: String,
    pub store: ObjectStore,
    /// Declared size (ONTAP's `size`): an adaptive policy's allocated space.
    size: AtomicU64,
    /// Used bytes when the limits were last computed (adaptive used-space policies).
    used_seen: AtomicU64,
    flow: AtomicU32,
    policy: Mutex<Option<String>>,
    limits: Mutex<EffectiveLimits>,
    /// Per-bucket counters: GETs are reads, PUTs and parts writes, the rest other.
    pub stats: VolumeStats,
}

impl Bucket {
    pub fn new(name: String, uuid: String, size: u64, store: ObjectStore) -> Bucket {
        let used = store.used();
        Bucket {
            name,
            uuid,
            store,
            size: AtomicU64::new(size),
            used_seen: AtomicU64::new(used),
            flow: AtomicU32::new(NO_FLOW),
            policy: Mutex::new(None),
            limits: Mutex::new(EffectiveLimits::default()),
            stats: VolumeStats::default(),
        }
    }

    pub fn size(&self) -> u64 {
        self.size.load(Relaxed)
    }

    pub(crate) fn set_size(&self, size: u64) {
        self.size.store(size, Relaxed);
    }

    /// Allocated = the declared size (no snapshot reserve), used = bytes stored.
    pub fn space(&self) -> VolumeSpace {
        VolumeSpace {
            size: self.size(),
            snapshot_reserve_percent: 0,
            used: self.store.used(),
        }
    }

    /// Did the stored bytes change since the limits were computed? (Resets the mark.)
    pub(crate) fn used_moved(&self) -> bool {
        let now = self.store.used();
        self.used_seen.swap(now, Relaxed) != now
    }

    /// The scheduler flow of this bucket, or [`NO_FLOW`].
    pub fn flow(&self) -> u32 {
        self.flow.load(Relaxed)
    }

    pub(crate) fn set_flow(&self, f: u32) {
        self.flow.store(f, Relaxed);
    }

    pub fn policy(&self) -> Option<String> {
        lock(&self.policy).clone()
    }

    pub(crate) fn set_policy(&self, p: Option<String>) {
        *lock(&self.policy) = p;
    }

    pub fn limits(&self) -> EffectiveLimits {
        *lock(&self.limits)
    }

    pub(crate) fn set_limits(&self, l: EffectiveLimits) {
        *lock(&self.limits) = l;
    }
}
