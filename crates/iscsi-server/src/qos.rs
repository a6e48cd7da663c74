//! SCSI commands through the node's one admission core, counted as ONTAP counts SAN
//! operations: every command to a LUN is one operation of its volume; a READ's or a
//! WRITE's transfer length (WRITE AND VERIFY, COMPARE AND WRITE: theirs) goes toward
//! MB/s; every other command is an "other" operation with no bytes, which the emulated
//! array charges as a read of nothing when it leaves the medium as it is (INQUIRY,
//! READ CAPACITY, TEST UNIT READY, ...) and as a write of nothing when it may change it
//! (UNMAP, WRITE SAME, SYNCHRONIZE CACHE, ...). NBD, NFS and S3 go through the same
//! core, so a policy holds a LUN exactly as it holds the volume over NBD.
//!
//! This is the target's [`Admission`] seam bridged to the node: one [`Gate`] per iSCSI
//! connection (the provisioned file system's single-flow limit is per connection, as for
//! NFS); a command waits in `admit` (a ceiling's time, the controller's grant) before
//! its data is asked for, and its response waits out the emulated array's service
//! latency in the grant's `done`; the finished command goes in its volume's books.

use std::sync::Arc;

use qos_core::Direction;
use storage_node::admission::{Gate, Op as NodeOp, Started, Work};
use storage_node::volume::Volume;
use storage_node::Node;

use crate::admission::{Admission, Admitted, Grant, Op, OpKind, Outcome, Wait};

/// What a command does, as the node's QoS gates see it.
pub fn work(op: &Op) -> Work {
    match op.kind {
        OpKind::Read => Work::Read(op.bytes),
        OpKind::Write => Work::Write(op.bytes),
        OpKind::Other => Work::Meta(Direction::Read),
        OpKind::OtherWrite => Work::Meta(Direction::Write),
    }
}

/// The request the admission core sees: the volume's flow, the work, and for reads and
/// writes where their bytes are (the provisioned file system's caches).
pub fn node_op(vol: &Volume, op: &Op) -> NodeOp {
    let o = NodeOp::new(vol.flow(), work(op));
    match op.kind {
        OpKind::Read | OpKind::Write => o.at(vol.id, op.offset),
        OpKind::Other | OpKind::OtherWrite => o,
    }
}

/// Which volume a LUN number is, for one initiator (the target's mapping).
pub trait Volumes: Send + Sync + 'static {
    fn volume(&self, initiator: &str, lun: u16) -> Option<Arc<Volume>>;
}

/// One connection's admission: its gate on the node's core, and how its LUNs map.
pub struct NodeAdmission {
    gate: Arc<Gate>,
    volumes: Arc<dyn Volumes>,
    initiator: String,
}

impl NodeAdmission {
    /// A connection of `initiator` to `node` (inside the node's runtime: the gate's
    /// driver is a task).
    pub fn new(node: &Node, volumes: Arc<dyn Volumes>, initiator: String) -> NodeAdmission {
        NodeAdmission {
            gate: Arc::new(Gate::new(node.gates(), node.clock)),
            volumes,
            initiator,
        }
    }
}

impl Admission for NodeAdmission {
    fn admit(&self, op: &Op) -> Admitted {
        // The target admits only commands to the LUNs this initiator sees; a LUN whose
        // volume is gone runs unadmitted (and fails: its I/O refuses a deleted volume).
        let Some(vol) = self.volumes.volume(&self.initiator, op.lun) else {
            return Admitted::Now(None);
        };
        let request = node_op(&vol, op);
        let work = work(op);
        let gate = self.gate.clone();
        let grant = move |started: Started| -> Option<Box<dyn Grant>> {
            Some(Box::new(NodeGrant {
                gate,
                vol,
                work,
                started,
            }))
        };
        match self.gate.try_admit(request) {
            Ok(s) => Admitted::Now(grant(s)),
            Err(held) => Admitted::Later(Box::pin(async move { grant(held.wait().await) })),
        }
    }
}

/// A command the core let through: told when its I/O is done.
struct NodeGrant {
    gate: Arc<Gate>,
    vol: Arc<Volume>,
    work: Work,
    started: Started,
}

impl NodeGrant {
    fn record(&self, done: &storage_node::admission::Completed) {
        self.gate.record(done, &self.vol.stats, self.work);
    }
}

impl Grant for NodeGrant {
    fn done(self: Box<Self>, outcome: Outcome) -> Option<Wait<()>> {
        // A refused command (CHECK CONDITION) is an operation all the same, as ONTAP
        // counts it; only its error is counted apart.
        if !outcome.ok {
            self.vol
                .stats
                .errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        match self.gate.try_finish(self.started) {
            Ok(done) => {
                self.record(&done);
                None
            }
            Err(held) => Some(Box::pin(async move {
                let done = held.wait().await;
                self.record(&done);
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use iscsi_proto::scsi::cdb;

    use super::*;
    use crate::dispatch::op_of;

    /// What a CDB counts for on a 512-byte LUN.
    fn counted(bytes: &[u8]) -> (Work, u64) {
        let mut c = [0u8; 16];
        c[..bytes.len()].copy_from_slice(bytes);
        let cmd = cdb::decode(&c).unwrap_or_else(|s| panic!("{bytes:02x?}: {s:?}"));
        let op = op_of(&cmd, 0, 512);
        (work(&op), op.offset)
    }

    #[test]
    fn reads_and_writes_count_their_transfer_and_the_rest_is_other() {
        use Direction::{Read as R, Write as W};
        // READ(10) of 8 blocks at LBA 16; WRITE(16) of 2 blocks at LBA 1; WRITE AND
        // VERIFY(10), COMPARE AND WRITE: their data.
        assert_eq!(
            counted(&[0x28, 0, 0, 0, 0, 16, 0, 0, 8, 0]),
            (Work::Read(4096), 8192)
        );
        let w16 = [0x8a, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0];
        assert_eq!(counted(&w16), (Work::Write(1024), 512));
        assert_eq!(
            counted(&[0x2e, 0, 0, 0, 0, 0, 0, 0, 4, 0]).0,
            Work::Write(2048)
        );
        let caw = [0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0];
        assert_eq!(counted(&caw).0, Work::Write(512));
        // "Other", one operation and no bytes: charged as a read of nothing when it
        // leaves the medium as it is, a write of nothing when it may change it.
        for (name, cdb, want) in [
            ("INQUIRY", &[0x12u8, 0, 0, 0, 36, 0][..], R),
            ("TEST UNIT READY", &[0; 6][..], R),
            (
                "READ CAPACITY(10)",
                &[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
                R,
            ),
            (
                "REPORT LUNS",
                &[0xa0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0][..],
                R,
            ),
            ("VERIFY(10)", &[0x2f, 0, 0, 0, 0, 0, 0, 0, 8, 0][..], R),
            (
                "SYNCHRONIZE CACHE(10)",
                &[0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
                W,
            ),
            ("UNMAP", &[0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0][..], W),
            (
                "WRITE SAME(16) of 1 GiB with UNMAP",
                &[0x93, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0][..],
                W,
            ),
        ] {
            assert_eq!(counted(cdb), (Work::Meta(want), 0), "{name}");
        }
    }
}
