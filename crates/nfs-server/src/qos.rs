//! NFS operations on a node's volumes through its admission core, counted as ONTAP counts
//! NFS (NetApp KB "What operations are categorized under Other IOPS in ONTAP?": of the
//! NFSv3 procedures, READ and WRITE are read and write operations, every other one is an
//! "other" operation, and QoS counts them all):
//!
//! - READ: one read operation of the bytes asked for (at most rtmax), toward IOPS and MB/s;
//! - WRITE: one write operation of its payload;
//! - every other procedure on a volume's handle (GETATTR, LOOKUP, ACCESS, READLINK,
//!   READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF, SETATTR, CREATE, MKDIR, SYMLINK,
//!   MKNOD, REMOVE, RMDIR, RENAME, LINK, COMMIT): one operation and no bytes, reported as
//!   "other"; the emulated array charges those that change the tree as a write of nothing
//!   and the others as a read of nothing;
//! - NULL, MOUNT and the portmapper carry no volume handle: not counted, never held.
//!
//! Counted operations go through the node's I/O-size accounting like NBD's (`whole`: one
//! per call; the client already split large requests at rtmax/wtmax).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use qos_core::{Direction, MILLI};
use storage_node::admission::{Completed, Gate, Op, Work};
use storage_node::scheduler::NO_FLOW;
use storage_node::stats::{self, Waits};
use storage_node::volume::Volume;
use storage_node::Node;

use crate::service::{CallInfo, Lane, OpKind, Peer, Service};

/// The node the front end serves, and which volume each export id is.
pub struct NodeLink {
    pub node: Arc<Node>,
    volumes: RwLock<HashMap<u32, Arc<Volume>>>,
}

impl NodeLink {
    pub fn new(node: Arc<Node>) -> NodeLink {
        NodeLink {
            node,
            volumes: RwLock::new(HashMap::new()),
        }
    }

    /// The volume behind export `id`.
    pub fn volume(&self, id: u32) -> Option<Arc<Volume>> {
        self.volumes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    pub(crate) fn set(&self, id: u32, vol: Option<Arc<Volume>>) {
        let mut m = self.volumes.write().unwrap_or_else(|p| p.into_inner());
        match vol {
            Some(v) => m.insert(id, v),
            None => m.remove(&id),
        };
    }

    /// Nothing can hold a call of `vol` or delay its reply: no ceiling, no controller, no
    /// provisioned file system, no service latency. Such calls run inline, recorded.
    fn free(&self, vol: &Volume, info: &CallInfo) -> bool {
        let s = &self.node.scheduler;
        vol.flow() == NO_FLOW
            && !s.controls()
            && self.node.provisioned().is_none()
            && work(info)
                .charged()
                .is_none_or(|(d, b)| s.service_latency(d, b) == 0)
    }
}

/// Whether a call of this kind is an operation on a volume.
pub fn counted(kind: OpKind) -> bool {
    !matches!(kind, OpKind::None)
}

/// What a call does, as the QoS gates see it.
pub fn work(info: &CallInfo) -> Work {
    match info.kind {
        OpKind::Read => Work::Read(info.bytes),
        OpKind::Write => Work::Write(info.bytes),
        OpKind::Other => Work::Meta(Direction::Read),
        OpKind::OtherWrite => Work::Meta(Direction::Write),
        OpKind::None => Work::Free,
    }
}

/// The provisioned file system's name for the bytes of file `ino` of `vol` (unique in
/// the process: volume ids are never reused).
fn object(vol: &Volume, ino: u64) -> u64 {
    (vol.id << 44) ^ ino
}

fn op(vol: &Volume, info: &CallInfo) -> Op {
    let o = Op::new(vol.flow(), work(info));
    match info.kind {
        OpKind::Read | OpKind::Write => o.at(object(vol, info.ino), info.offset),
        _ => o,
    }
}

/// Record a finished call in its volume's statistics (and mark the volume's used space
/// for a refresh when the call may have changed it).
fn record(node: &Node, vol: &Volume, info: &CallInfo, done: &Completed) {
    let (kind, bytes, milli) = match info.kind {
        OpKind::Read => (
            stats::OpKind::Read,
            info.bytes,
            node.scheduler.milliops(info.bytes),
        ),
        OpKind::Write => (
            stats::OpKind::Write,
            info.bytes,
            node.scheduler.milliops(info.bytes),
        ),
        _ => (stats::OpKind::Other, 0, MILLI),
    };
    done.record(&vol.stats, kind, bytes, milli);
    if matches!(info.kind, OpKind::Write | OpKind::OtherWrite) {
        vol.mark_dirty();
    }
}

/// Answer a call on `vol` at once when nothing can hold it; `false`: it must go through
/// [`call`].
pub(crate) fn try_inline(
    svc: &Service,
    link: &NodeLink,
    vol: &Volume,
    peer: &Peer,
    rec: &[u8],
    info: &CallInfo,
    out: &mut Vec<u8>,
) -> bool {
    if info.lane != Lane::Inline || !link.free(vol, info) {
        return false;
    }
    let clock = link.node.clock;
    let arrival = clock.now();
    if !svc.handle_inline(peer, rec, out) {
        return false; // it must walk the tree: on the blocking pool
    }
    let done = Completed {
        latency_ns: clock.now().saturating_sub(arrival),
        waits: Waits::default(),
        resource_ns: 0,
        overrun_ns: None,
    };
    record(&link.node, vol, info, &done);
    true
}

/// One call on a volume: admitted by the connection's gate, run (inline or on the blocking
/// pool), held for the array's service latency, recorded. Returns the reply record.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call(
    svc: Arc<Service>,
    link: Arc<NodeLink>,
    gate: Arc<Gate>,
    vol: Arc<Volume>,
    peer: Peer,
    rec: Vec<u8>,
    info: CallInfo,
    lane: Lane,
) -> Vec<u8> {
    let started = gate.admit(op(&vol, &info)).await;
    let mut o = Vec::new();
    let reply = if lane == Lane::Inline && svc.handle_inline(&peer, &rec, &mut o) {
        o
    } else {
        tokio::task::spawn_blocking(move || {
            let mut o = Vec::new();
            svc.handle(&peer, &rec, &mut o);
            o
        })
        .await
        .unwrap_or_default()
    };
    let done = gate.finish(started).await;
    record(&link.node, &vol, &info, &done);
    reply
}
