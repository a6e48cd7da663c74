//! A record decoded once: its RPC header, an NFSv3 call's arguments, and what the call is
//! ([`CallInfo`]: where it runs, which export its handle names, how it counts). The
//! connection decides from the [`CallInfo`] and the service answers from the same
//! [`Decoded`] ([`Service::handle_decoded`](crate::service::Service::handle_decoded)). A
//! call that leaves its connection's task (held by QoS, or on the blocking pool) takes
//! its decoded form with it, moved onto its own copy of the record ([`HeldCall`]): no
//! record is decoded twice anywhere ([`Counters::decodes`](crate::service::Counters)
//! counts decodes).

use nfs_proto::mount;
use nfs_proto::moved::Moved;
use nfs_proto::nfs3::{self, Args, StableHow};
use nfs_proto::rpc::{self, Message};
use nfs_proto::xdr::XdrError;

use crate::handle::Handle;

/// What a call is, known before it runs: where it runs, which export it is for (by its
/// handle), and how it counts. The seam for admission per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallInfo {
    pub lane: Lane,
    pub export: Option<u32>,
    pub kind: OpKind,
    /// READ: the bytes asked for (at most rtmax); WRITE: the payload.
    pub bytes: u64,
    /// The object the handle names (its inode) and, for READ and WRITE, the offset:
    /// where the bytes are, for a provisioned file system's caches.
    pub ino: u64,
    pub offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
    /// Any other NFSv3 procedure except NULL that only reads (GETATTR, LOOKUP, ACCESS,
    /// READLINK, READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF): metadata.
    Other,
    /// A procedure that changes the tree or makes it durable (SETATTR, CREATE, MKDIR,
    /// SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK, COMMIT): metadata, counted as ONTAP
    /// counts it ("other"), charged as a write of nothing by the emulated array.
    OtherWrite,
    /// NULL, MOUNT, the portmapper, or a call that does not decode: not an operation on a
    /// volume.
    None,
}

/// Where a call runs: on the connection's task (page-cache work of microseconds), or on
/// the blocking pool (anything that syncs to stable storage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Inline,
    Blocking,
}

impl CallInfo {
    /// Not an operation on a volume, answered inline.
    const NONE: CallInfo = CallInfo {
        lane: Lane::Inline,
        export: None,
        kind: OpKind::None,
        bytes: 0,
        ino: 0,
        offset: 0,
    };
}

/// One record, decoded.
pub struct Decoded<'a> {
    pub(crate) msg: Message<'a>,
    /// An NFSv3 call's arguments (`None`: not an NFSv3 call; `Ok(None)`: an unknown
    /// procedure).
    pub(crate) nfs: Option<Result<Option<Args<'a>>, XdrError>>,
    pub info: CallInfo,
}

impl Decoded<'_> {
    /// This call, decoded from `m`'s record, borrowing from its copy instead.
    fn moved<'t>(&self, m: Moved<'_, 't>) -> Decoded<'t> {
        Decoded {
            msg: self.msg.moved(m),
            nfs: self.nfs.as_ref().map(|r| match r {
                Ok(a) => Ok(a.as_ref().map(|a| a.moved(m))),
                Err(e) => Err(*e),
            }),
            info: self.info,
        }
    }
}

self_cell::self_cell!(
    /// A call that leaves its connection's task (held by QoS, or run on the blocking
    /// pool): its own copy of the record and its decoded form, borrowing from that copy.
    pub struct HeldCall {
        owner: Vec<u8>,
        #[covariant]
        dependent: Decoded,
    }
);

impl HeldCall {
    /// `d`, decoded from `record`, held: the record copied once (what a held call keeps)
    /// and `d` moved onto the copy, not decoded again.
    pub fn hold(record: &[u8], d: Decoded<'_>) -> HeldCall {
        HeldCall::new(record.to_vec(), |copy| d.moved(Moved::new(record, copy)))
    }

    pub fn decoded(&self) -> &Decoded<'_> {
        self.borrow_dependent()
    }

    /// The record's length (what it weighs in the connection's bounds).
    pub fn record_len(&self) -> usize {
        self.borrow_owner().len()
    }
}

/// Decode `record` (never fails: an undecodable record is an inline non-operation, it
/// only gets an error reply). READs count at most `rtmax` bytes. Only through
/// [`Service::decode`](crate::service::Service::decode), which counts decodes.
pub(crate) fn decode(record: &[u8], rtmax: u32) -> Decoded<'_> {
    let msg = rpc::decode(record);
    let (nfs, info) = match &msg {
        Message::Call(c) if (c.prog, c.vers) == (nfs3::PROGRAM, nfs3::VERSION) => {
            let args = nfs3::decode_args(c.proc_, c.args);
            let info = match &args {
                Ok(Some(a)) => classify(a, rtmax),
                _ => CallInfo::NONE,
            };
            (Some(args), info)
        }
        Message::Call(c) if c.prog == mount::PROGRAM && c.proc_ == mount::MNT => (
            None,
            CallInfo {
                lane: Lane::Blocking,
                ..CallInfo::NONE
            },
        ),
        _ => (None, CallInfo::NONE),
    };
    Decoded { msg, nfs, info }
}

/// A procedure that may change attributes or names: counted as ONTAP's other writes, and
/// its end makes every remembered attribute stale (`crate::attr_cache`). WRITE changes
/// only its own file's, and marks that file itself.
pub(crate) fn changes_metadata(a: &Args<'_>) -> bool {
    matches!(
        a,
        Args::SetAttr { .. }
            | Args::Create { .. }
            | Args::Mkdir { .. }
            | Args::Symlink { .. }
            | Args::Mknod { .. }
            | Args::Remove { .. }
            | Args::Rmdir { .. }
            | Args::Rename { .. }
            | Args::Link { .. }
            | Args::Commit { .. }
    )
}

/// What an NFSv3 call is.
fn classify(a: &Args<'_>, rtmax: u32) -> CallInfo {
    let h = a.handle().and_then(Handle::decode);
    let (export, ino) = h.map_or((None, 0), |h| (Some(h.export), h.ino));
    let (kind, bytes, offset) = match *a {
        Args::Null => (OpKind::None, 0, 0),
        Args::Read { count, offset, .. } => (OpKind::Read, count.min(rtmax) as u64, offset),
        Args::Write { data, offset, .. } => (OpKind::Write, data.len() as u64, offset),
        _ if changes_metadata(a) => (OpKind::OtherWrite, 0, 0),
        _ => (OpKind::Other, 0, 0),
    };
    // What syncs runs on the blocking pool: a stable WRITE, and every tree change (MKNOD
    // is refused without touching the tree).
    let blocking = match *a {
        Args::Write { stable, .. } => stable != StableHow::Unstable,
        Args::Mknod { .. } => false,
        _ => kind == OpKind::OtherWrite,
    };
    CallInfo {
        lane: if blocking {
            Lane::Blocking
        } else {
            Lane::Inline
        },
        export,
        kind,
        bytes,
        ino,
        offset,
    }
}
