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

use qos_core::Direction;
use storage_node::admission::{Admitting, Completed, Finishing, Gate, Op, Started, Work};
use storage_node::volume::Volume;
use storage_node::Node;

use crate::call::{CallInfo, Decoded, HeldCall, Lane, OpKind};
use crate::service::{Peer, Service};

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

/// Record a finished call in its volume's books, as the core counts it (and mark the
/// volume's used space for a refresh when the call may have changed it).
fn record(gate: &Gate, vol: &Volume, info: &CallInfo, done: &Completed) {
    gate.record(done, &vol.stats, work(info));
    if matches!(info.kind, OpKind::Write | OpKind::OtherWrite) {
        vol.mark_dirty();
    }
}

/// A call on `vol`, on its connection's task, when nothing can hold it
/// ([`Gate::is_free`]) and it runs inline: answered into `out`, recorded — `true`.
/// `false`: it goes through [`start`] (held by a gate, on the blocking pool, or it must
/// walk the tree; then `walks` is set).
#[allow(clippy::too_many_arguments)]
pub(crate) fn try_free(
    svc: &Service,
    node: &Node,
    gate: &Gate,
    vol: &Volume,
    peer: &Peer,
    d: &Decoded<'_>,
    out: &mut Vec<u8>,
    walks: &mut bool,
) -> bool {
    let info = &d.info;
    if info.lane != Lane::Inline || !gate.is_free(&op(vol, info)) {
        return false;
    }
    let arrival = node.clock.now();
    if !svc.handle_decoded(peer, d, out, false) {
        *walks = true; // on the blocking pool
        return false;
    }
    record(
        gate,
        vol,
        info,
        &Completed::at_once(arrival, node.clock.now()),
    );
    true
}

/// Where a call on a volume that left its connection's task is.
pub(crate) enum Stage {
    /// Not run yet: it goes on from its decoded form ([`resume`]).
    Waiting(Waiting),
    /// Answered (this reply), held for the rest of the array's service latency
    /// ([`finish`]): its record is no longer needed.
    Finishing(Finishing, Vec<u8>),
}

/// A call that has not run yet.
pub(crate) enum Waiting {
    /// Held by a gate; then it runs inline (`true`) or on the blocking pool.
    Admitting(Admitting, bool),
    /// Admitted; it runs on the blocking pool.
    Started(Started),
}

/// A call on `vol` through its connection's gate, as far as it goes without waiting:
/// admitted at once, run inline and replied at once — answered into `out`, recorded,
/// `None` — or the [`Stage`] a task of its own goes on from ([`resume`] or [`finish`]).
/// `inline`: it may
/// run on a runtime worker (not on the blocking pool, no known walk).
pub(crate) fn start(
    svc: &Service,
    gate: &Gate,
    vol: &Volume,
    peer: &Peer,
    d: &Decoded<'_>,
    out: &mut Vec<u8>,
    inline: bool,
) -> Option<Stage> {
    let started = match gate.try_admit(op(vol, &d.info)) {
        Ok(s) => s,
        Err(w) => return Some(Stage::Waiting(Waiting::Admitting(w, inline))),
    };
    let mark = out.len();
    if !inline || !svc.handle_decoded(peer, d, out, false) {
        return Some(Stage::Waiting(Waiting::Started(started)));
    }
    match gate.try_finish(started) {
        Ok(done) => {
            record(gate, vol, &d.info, &done);
            None
        }
        Err(f) => Some(Stage::Finishing(f, out.split_off(mark))),
    }
}

/// The rest of a call [`start`] could not run, in a task of its own: wait for its gates,
/// run it (inline, else on the blocking pool), wait out the array's service latency,
/// record it. Returns the reply record. The call runs from the decoded form it left its
/// connection's task with (never decoded again).
pub(crate) async fn resume(
    svc: Arc<Service>,
    gate: Arc<Gate>,
    vol: Arc<Volume>,
    peer: Peer,
    call: HeldCall,
    waiting: Waiting,
) -> Vec<u8> {
    let (started, inline) = match waiting {
        Waiting::Admitting(w, inline) => (w.wait().await, inline),
        Waiting::Started(s) => (s, false),
    };
    let info = call.decoded().info;
    let mut o = Vec::new();
    let reply = if inline && svc.handle_decoded(&peer, call.decoded(), &mut o, false) {
        o
    } else {
        tokio::task::spawn_blocking(move || run_blocking(&svc, &peer, &call))
            .await
            .unwrap_or_default()
    };
    let done = gate.finish(started).await;
    record(&gate, &vol, &info, &done);
    reply
}

/// A call [`start`] answered (`reply`): wait out the rest of the array's service latency,
/// record it, and return the reply.
pub(crate) async fn finish(
    gate: Arc<Gate>,
    vol: Arc<Volume>,
    info: CallInfo,
    f: Finishing,
    reply: Vec<u8>,
) -> Vec<u8> {
    record(&gate, &vol, &info, &f.wait().await);
    reply
}

/// A held call's reply, on the blocking pool (where it may walk the tree).
pub(crate) fn run_blocking(svc: &Service, peer: &Peer, call: &HeldCall) -> Vec<u8> {
    let mut o = Vec::new();
    svc.handle_decoded(peer, call.decoded(), &mut o, true);
    o
}
