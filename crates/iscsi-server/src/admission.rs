//! The admission seam: called once per SCSI command, before its I/O, with what ONTAP
//! counts for a SAN operation (one op per command; its bytes toward MB/s). A command waits
//! for the future the hook returns (for writes, before the first R2T: QoS paces the
//! transfer, not only the disk write), then does its I/O, then tells the grant how it
//! ended; the grant may hold the response a little longer (an emulated service time).
//!
//! Nothing here blocks a runtime thread: the hook returns at once, and a held command is
//! a future the connection's runtime polls.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, for the hook's waits.
pub type Wait<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a command does, for its QoS accounting (ONTAP's SAN counters: reads, writes and
/// "other").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// READ (6, 10, 12, 16): its transfer length toward MB/s.
    Read,
    /// WRITE (6, 10, 12, 16), WRITE AND VERIFY, COMPARE AND WRITE: their transfer length.
    Write,
    /// Any other command that leaves the medium as it is (INQUIRY, TEST UNIT READY, READ
    /// CAPACITY, MODE SENSE, REPORT LUNS, VERIFY, GET LBA STATUS, ...): no bytes.
    Other,
    /// Any other command that may change the medium or the LU's state (UNMAP, WRITE SAME,
    /// SYNCHRONIZE CACHE, MODE SELECT, PERSISTENT RESERVE OUT, ...): no bytes.
    OtherWrite,
}

/// One SCSI command as admission sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// The LUN number the initiator addressed (its mapping decides the LU).
    pub lun: u16,
    pub kind: OpKind,
    /// Bytes moved to or from the medium (a read's or write's transfer length; 0 for
    /// the others).
    pub bytes: u64,
    /// Where a read or write starts on the LU, in bytes (0 for the others).
    pub offset: u64,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// GOOD status (false: CHECK CONDITION, RESERVATION CONFLICT, or aborted).
    pub ok: bool,
}

/// The permission to run one command; told how it ended.
pub trait Grant: Send {
    /// The command's I/O is done. A returned future holds the response until it
    /// completes (an emulated array's service latency); `None` answers at once.
    fn done(self: Box<Self>, outcome: Outcome) -> Option<Wait<()>>;
}

/// A command's admission: at once, or after a wait.
pub enum Admitted {
    Now(Option<Box<dyn Grant>>),
    Later(Wait<Option<Box<dyn Grant>>>),
}

/// The per-command hook. One is made for each connection ([`crate::Target::admission`]),
/// so a node can treat each connection as one flow, as its NFS front end does.
pub trait Admission: Send + Sync + 'static {
    fn admit(&self, op: &Op) -> Admitted;
}

/// No QoS: every command runs at once (the standalone `qoslab iscsi serve`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Unlimited;

impl Admission for Unlimited {
    fn admit(&self, _op: &Op) -> Admitted {
        Admitted::Now(None)
    }
}

/// Waits for admission; returns the grant to complete after the I/O.
pub async fn admit(a: &Arc<dyn Admission>, op: &Op) -> Option<Box<dyn Grant>> {
    match a.admit(op) {
        Admitted::Now(g) => g,
        Admitted::Later(w) => w.await,
    }
}

/// Tells the grant how the command ended and waits out what it holds.
pub async fn finish(grant: Option<Box<dyn Grant>>, outcome: Outcome) {
    if let Some(g) = grant {
        if let Some(w) = g.done(outcome) {
            w.await;
        }
    }
}
