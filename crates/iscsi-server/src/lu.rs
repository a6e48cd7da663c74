//! A logical unit as the target serves it: a [`Lun`]'s storage, the SCSI description
//! built from it, and the state SCSI keeps per LU across every session: reservations,
//! pending unit attentions per I_T nexus, and the lock that makes COMPARE AND WRITE
//! atomic.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use iscsi_proto::scsi::pr::Reservations;
use iscsi_proto::scsi::sense::{Asc, CAPACITY_DATA_CHANGED};
use iscsi_proto::scsi::{Limits, Unit};
use storage_node::locks::{self, lock};

use crate::lun::{Caps, Lun};

/// An I_T nexus: the initiator port (`iqn...,i,0xISID`); this target has one port.
pub type Nexus = Arc<str>;

/// Unit attentions kept per nexus; older ones are dropped past this (SAM-5 lets a
/// device server report one and lose others).
const MAX_PENDING_UAS: usize = 8;

/// Largest transfer of one command: 32 MiB (reads and writes stream through buffers of
/// at most a burst, so this bounds time, not memory).
pub const MAX_TRANSFER_BYTES: u64 = 32 << 20;
/// Largest WRITE SAME: 1 GiB (zeroes are a hole punch; a pattern is written 1 MiB at a time).
pub const MAX_WRITE_SAME_BYTES: u64 = 1 << 30;

/// One logical unit. Create it once per LUN and map the same `Arc` to every initiator
/// that may see the LUN, so they share its reservations.
pub struct LogicalUnit {
    pub(crate) lun: Arc<dyn Lun>,
    /// The description; replaced (its block count) when the storage grows.
    unit: RwLock<Arc<Unit>>,
    /// The logical block size and the limits (the unit's, which never change).
    pub(crate) block_size: u32,
    pub(crate) limits: Limits,
    pub(crate) caps: Caps,
    pr: Mutex<Reservations<Nexus>>,
    uas: Mutex<HashMap<Nexus, VecDeque<Asc>>>,
    /// COMPARE AND WRITE holds it exclusively; every other write shares it.
    pub(crate) atomic: tokio::sync::RwLock<()>,
}

impl LogicalUnit {
    pub fn new(lun: Arc<dyn Lun>) -> Arc<LogicalUnit> {
        let caps = lun.caps();
        let id = lun.identity();
        let bs = lun.block_size();
        let blocks_of = |bytes: u64| (bytes / bs as u64).min(u32::MAX as u64) as u32;
        let unit = Unit {
            vendor: "QOSLAB".into(),
            product: id.product,
            revision: "0001".into(),
            serial: id.serial,
            naa_id: id.naa_id,
            block_size: bs,
            blocks: lun.size() / bs as u64,
            lbppbe: lun.physical_exponent(),
            thin: caps.can_trim,
            lbprz: caps.can_trim,
            read_only: !caps.can_write,
            write_cache: caps.can_flush,
            limits: Limits {
                max_transfer: blocks_of(MAX_TRANSFER_BYTES),
                optimal_transfer: blocks_of(1 << 20),
                max_compare_and_write: 255,
                max_unmap_lba_count: u32::MAX,
                max_unmap_descriptors: 256,
                max_write_same: MAX_WRITE_SAME_BYTES / bs as u64,
            },
        };
        Arc::new(LogicalUnit {
            lun,
            block_size: unit.block_size,
            limits: unit.limits,
            unit: RwLock::new(Arc::new(unit)),
            caps,
            pr: Mutex::new(Reservations::default()),
            uas: Mutex::new(HashMap::new()),
            atomic: tokio::sync::RwLock::new(()),
        })
    }

    /// The unit as INQUIRY and READ CAPACITY describe it now.
    pub fn unit(&self) -> Arc<Unit> {
        locks::read(&self.unit).clone()
    }

    /// The number of logical blocks now.
    pub(crate) fn blocks(&self) -> u64 {
        locks::read(&self.unit).blocks
    }

    /// Follows the storage's size (a volume grown through the API): a new block count
    /// is the unit's from the next command on, and every nexus that used this LU is told
    /// CAPACITY DATA HAS CHANGED (SBC-4 §4.6), as an array tells its hosts, so
    /// initiators already logged in re-read the capacity (Linux rescans the disk).
    pub(crate) fn follow_size(&self) {
        let now = self.lun.size() / self.lun.block_size() as u64;
        if self.blocks() == now {
            return;
        }
        let mut unit = locks::write(&self.unit);
        if unit.blocks == now {
            return; // another command's check got here first
        }
        let mut grown = Unit::clone(&unit);
        grown.blocks = now;
        *unit = Arc::new(grown);
        drop(unit);
        let seen: Vec<Nexus> = lock(&self.uas).keys().cloned().collect();
        for n in seen {
            self.attention(&n, CAPACITY_DATA_CHANGED);
        }
    }

    pub(crate) fn pr(&self) -> MutexGuard<'_, Reservations<Nexus>> {
        lock(&self.pr)
    }

    /// Queues a unit attention for `nexus`.
    pub(crate) fn attention(&self, nexus: &Nexus, asc: Asc) {
        let mut uas = lock(&self.uas);
        let q = uas.entry(nexus.clone()).or_default();
        if !q.contains(&asc) {
            if q.len() >= MAX_PENDING_UAS {
                q.pop_front();
            }
            q.push_back(asc);
        }
    }

    /// Queues `asc` for every nexus this LU has seen except `but`.
    pub(crate) fn attention_others(&self, but: &Nexus, asc: Asc) {
        let seen: Vec<Nexus> = lock(&self.uas)
            .keys()
            .filter(|n| *n != but)
            .cloned()
            .collect();
        for n in seen {
            self.attention(&n, asc);
        }
    }

    /// Records that `nexus` uses this LU (so resets reach it), and takes its oldest
    /// pending unit attention.
    pub(crate) fn take_attention(&self, nexus: &Nexus) -> Option<Asc> {
        let mut uas = lock(&self.uas);
        match uas.get_mut(nexus) {
            Some(q) => q.pop_front(),
            None => {
                uas.insert(nexus.clone(), VecDeque::new());
                None
            }
        }
    }

    /// The nexus is gone: its SPC-2 reservation ends, its pending attentions go.
    pub(crate) fn nexus_lost(&self, nexus: &Nexus) {
        self.pr().nexus_lost(nexus);
        lock(&self.uas).remove(nexus);
    }
}
