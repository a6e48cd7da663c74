//! A volume: a named export with a size, a snapshot reserve, a backend and a QoS flow.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use qos_core::{EffectiveLimits, VolumeSpace};

use crate::backend::Backend;
use crate::locks::lock;
use crate::scheduler::NO_FLOW;
use crate::stats::VolumeStats;

/// A served volume. Shared by every connection to it; all mutable state is atomic or
/// behind short-lived locks that the request path does not take.
pub struct Volume {
    /// Unique for the life of the process (never reused): names blocks in the provisioned
    /// file system's caches.
    pub id: u64,
    pub name: String,
    pub description: String,
    pub read_only: bool,
    size: AtomicU64,
    reserve_percent: AtomicU8,
    used: AtomicU64,
    /// Set by writes/trims/zeroes; the used-space refresher clears it.
    dirty: AtomicBool,
    /// Scheduler flow carrying this volume's ceiling, or [`NO_FLOW`].
    flow: AtomicU32,
    policy: Mutex<Option<String>>,
    limits: Mutex<EffectiveLimits>,
    pub backend: Arc<dyn Backend>,
    pub stats: VolumeStats,
    /// Set when the volume is deleted: its connections close.
    removed: tokio::sync::watch::Sender<bool>,
    /// A NAS volume's tree, junction path and export policy (`None`: a block volume,
    /// served over NBD).
    pub nas: Option<crate::nas::NasVolume>,
}

impl Volume {
    pub fn new(
        name: String,
        description: String,
        read_only: bool,
        size: u64,
        reserve_percent: u8,
        backend: Arc<dyn Backend>,
    ) -> Volume {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let used = backend.allocated_bytes().unwrap_or(0);
        Volume {
            id: NEXT_ID.fetch_add(1, Relaxed),
            name,
            description,
            read_only,
            size: AtomicU64::new(size),
            reserve_percent: AtomicU8::new(reserve_percent),
            used: AtomicU64::new(used),
            dirty: AtomicBool::new(false),
            flow: AtomicU32::new(NO_FLOW),
            policy: Mutex::new(None),
            limits: Mutex::new(EffectiveLimits::default()),
            backend,
            stats: VolumeStats::default(),
            removed: tokio::sync::watch::channel(false).0,
            nas: None,
        }
    }

    /// The same volume, as a NAS volume.
    pub fn with_nas(mut self, nas: crate::nas::NasVolume) -> Volume {
        self.nas = Some(nas);
        self
    }

    /// Served over NFS (a tree), not NBD.
    pub fn is_nas(&self) -> bool {
        self.nas.is_some()
    }

    /// Whether the volume was deleted.
    pub fn is_removed(&self) -> bool {
        *self.removed.borrow()
    }

    pub fn size(&self) -> u64 {
        self.size.load(Relaxed)
    }

    pub fn space(&self) -> VolumeSpace {
        VolumeSpace {
            size: self.size(),
            snapshot_reserve_percent: self.reserve_percent.load(Relaxed),
            used: self.used.load(Relaxed),
        }
    }

    pub(crate) fn set_size(&self, size: u64) {
        self.size.store(size, Relaxed);
    }

    pub(crate) fn set_reserve_percent(&self, p: u8) {
        self.reserve_percent.store(p, Relaxed);
    }

    /// Mark the volume deleted: every connection to it is closed.
    pub(crate) fn mark_removed(&self) {
        self.removed.send_replace(true);
    }

    /// Changes to `true` once the volume is deleted.
    pub fn removed_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.removed.subscribe()
    }

    pub fn flow(&self) -> u32 {
        self.flow.load(Relaxed)
    }

    pub(crate) fn set_flow(&self, flow: u32) {
        self.flow.store(flow, Relaxed);
    }

    /// Note that allocation may have changed (cheap; called on the request path).
    pub fn mark_dirty(&self) {
        if !self.dirty.load(Relaxed) {
            self.dirty.store(true, Relaxed);
        }
    }

    /// Re-read used space if anything changed it; returns true when it moved.
    pub fn refresh_used(&self) -> bool {
        if !self.dirty.swap(false, Relaxed) {
            return false;
        }
        match self.backend.allocated_bytes() {
            Ok(u) => self.used.swap(u, Relaxed) != u,
            Err(_) => false,
        }
    }

    pub fn policy(&self) -> Option<String> {
        lock(&self.policy).clone()
    }

    pub(crate) fn set_policy(&self, p: Option<String>) {
        *lock(&self.policy) = p;
    }

    /// The limits currently in force (recomputed on every size/used/policy change).
    pub fn limits(&self) -> EffectiveLimits {
        *lock(&self.limits)
    }

    pub(crate) fn set_limits(&self, l: EffectiveLimits) {
        *lock(&self.limits) = l;
    }
}
