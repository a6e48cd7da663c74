//! The node's SAN maps: which block volumes the iSCSI target serves as LUNs to which
//! initiators, at which LUN numbers, beyond node.toml's `[[iscsi.lun]]`. The control
//! plane (ONTAP's LUNs, igroups and LUN maps over REST) replaces the table whole after
//! every change; the iSCSI front end reads it for every session's REPORT LUNS and
//! command, and re-reads a session's LUNs when [`SanMaps::generation`] moves.

use crate::locks::{read, write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// One LUN map as the target serves it: a block volume at a LUN number to the
/// initiators of one igroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SanMap {
    /// The block volume holding the LUN's blocks.
    pub volume: String,
    /// Its LUN number for these initiators.
    pub number: u16,
    /// The igroup's initiators (iSCSI names; compared without regard to case).
    pub initiators: Vec<String>,
    /// The LUN's serial number (VPD page 0x80), as the API reports it.
    pub serial: String,
}

/// The live table of [`SanMap`]s (empty until the control plane fills it).
#[derive(Debug, Default)]
pub struct SanMaps {
    maps: RwLock<Arc<Vec<SanMap>>>,
    generation: AtomicU64,
}

impl SanMaps {
    /// Replace the table; sessions re-read their LUNs (REPORTED LUNS DATA HAS CHANGED).
    pub fn set(&self, maps: Vec<SanMap>) {
        *write(&self.maps) = Arc::new(maps);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The table as it is now.
    pub fn all(&self) -> Arc<Vec<SanMap>> {
        read(&self.maps).clone()
    }

    /// The maps `initiator` sees, by LUN number.
    pub fn visible(&self, initiator: &str) -> Vec<SanMap> {
        let mut v: Vec<SanMap> = self
            .all()
            .iter()
            .filter(|m| {
                m.initiators
                    .iter()
                    .any(|i| i.eq_ignore_ascii_case(initiator))
            })
            .cloned()
            .collect();
        v.sort_by_key(|m| m.number);
        v
    }

    /// Whether block volume `name` is in any map.
    pub fn serves(&self, name: &str) -> bool {
        self.all().iter().any(|m| m.volume == name)
    }

    /// Moves on every [`set`](Self::set).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_initiator_sees_its_maps_by_number_and_the_generation_moves() {
        let s = SanMaps::default();
        assert!(s.visible("iqn.2026-01.x:a").is_empty());
        let g = s.generation();
        let m = |v: &str, n, i: &[&str]| SanMap {
            volume: v.into(),
            number: n,
            initiators: i.iter().map(|s| s.to_string()).collect(),
            serial: "s".into(),
        };
        s.set(vec![
            m("db:l2", 3, &["iqn.2026-01.x:a"]),
            m("db:l1", 0, &["IQN.2026-01.X:A", "iqn.2026-01.x:b"]),
        ]);
        assert!(s.generation() > g);
        let a: Vec<(u16, String)> = s
            .visible("iqn.2026-01.x:a")
            .into_iter()
            .map(|m| (m.number, m.volume))
            .collect();
        assert_eq!(a, [(0, "db:l1".to_string()), (3, "db:l2".to_string())]);
        assert_eq!(s.visible("iqn.2026-01.x:b").len(), 1);
        assert!(s.visible("iqn.2026-01.x:c").is_empty());
        assert!(s.serves("db:l2") && !s.serves("db"));
    }
}
