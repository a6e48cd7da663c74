//! One SCSI command as a task of its own: its context, its events to the connection and
//! its abort flag (run by [`crate::dispatch`]). Reads stream Data-In PDUs (encoded here, so a
//! READ's data is read straight into the send buffer); writes take Data-Out from the
//! connection a burst at a time ([`DataOut`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iscsi_proto::frame::{finish_deferred, Digests};
use iscsi_proto::pdu::target::{data_in_deferred, DataIn, Residual, Seq};
use iscsi_proto::scsi::sense::Sense;
use tokio::sync::{mpsc, Notify};

use crate::admission::Admission;
use crate::lu::LogicalUnit;
use crate::session::Session;
use crate::Shared;

/// The connection's side of a task: what it sends the connection.
pub enum Event {
    /// Data-In PDUs (no status) to send now.
    Data { itt: u32, bytes: Vec<u8> },
    /// Admitted and validated: the command takes `want` bytes of Data-Out in all
    /// (unsolicited data included); R2T the rest.
    Ready { itt: u32, want: u32 },
    /// A solicited burst was consumed; another R2T may go out.
    More { itt: u32 },
    /// The command ended.
    Done { itt: u32, end: End },
}

/// How a command ended.
pub enum End {
    Answer(Answer),
    /// Aborted by task management: no answer.
    Aborted,
}

/// A command's answer.
pub struct Answer {
    /// Data-In PDUs not yet sent (the last may carry the status, see `collapsed_at`).
    pub bytes: Vec<u8>,
    /// Where the header of the Data-In PDU carrying the status starts in `bytes`; its
    /// StatSN and window are filled in when it is sent. `None`: a SCSI Response follows.
    pub collapsed_at: Option<usize>,
    pub status: u8,
    pub sense: Option<Sense>,
    pub residual: Residual,
    /// Data-In PDUs sent in all (the response's ExpDataSN).
    pub datasn: u32,
}

/// A burst of Data-Out: `data` at byte `offset` of the command's transfer.
pub struct Chunk {
    pub offset: u32,
    pub data: Vec<u8>,
    /// Came in answer to an R2T (consuming it lets the connection send another).
    pub solicited: bool,
}

/// Set by task management; the task stops at its next wait.
#[derive(Default)]
pub struct Abort {
    flag: AtomicBool,
    notify: Notify,
}

impl Abort {
    pub fn abort(&self) {
        self.flag.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
    /// Completes when the task is aborted.
    pub async fn wait(&self) {
        loop {
            let n = self.notify.notified();
            if self.is_set() {
                return;
            }
            n.await;
        }
    }
}

/// The command was aborted while waiting.
#[derive(Debug)]
pub struct Aborted;

/// Connection parameters a task encodes with.
#[derive(Debug, Clone, Copy)]
pub struct Wire {
    pub digests: Digests,
    /// The initiator's MaxRecvDataSegmentLength: the largest Data-In data segment.
    pub mrdsl: u32,
    /// MaxBurstLength: a Data-In sequence's size (F ends each).
    pub max_burst: u32,
}

/// Where a task's Data-In goes.
pub struct Sink {
    pub itt: u32,
    pub lun_field: u64,
    pub wire: Wire,
    pub session: Arc<Session>,
    pub events: mpsc::UnboundedSender<Event>,
    pub datasn: u32,
    /// Bytes of Data-In produced so far (the next PDU's buffer offset).
    pub offset: u32,
}

impl Sink {
    /// Encodes `len` bytes of Data-In filled by `fill` (called once per PDU with the
    /// PDU's slice of the transfer: its offset from this call's start, and its buffer).
    /// With `status`, the last PDU carries it (its header position is returned).
    pub fn encode<E>(
        &mut self,
        out: &mut Vec<u8>,
        len: u32,
        status: Option<(u8, Residual)>,
        mut fill: impl FnMut(u32, &mut [u8]) -> Result<(), E>,
    ) -> Result<Option<usize>, E> {
        let mut done = 0u32;
        let mut at = None;
        let seq = self.session.seq(0);
        while done < len {
            let n = (len - done).min(self.wire.mrdsl);
            let burst_end = (self.offset / self.wire.max_burst + 1) * self.wire.max_burst;
            let last = done + n == len;
            let final_ = last || self.offset + n >= burst_end;
            let hdr = DataIn {
                lun: self.lun_field,
                itt: self.itt,
                final_,
                status: if last { status.map(|s| s.0) } else { None },
                residual: if last {
                    status.map(|s| s.1).unwrap_or_default()
                } else {
                    Residual::None
                },
                datasn: self.datasn,
                offset: self.offset,
                seq: Seq { statsn: 0, ..seq },
            };
            let hdr_at = out.len();
            let start = data_in_deferred(out, self.wire.digests, &hdr, n as usize);
            out.resize(start + n as usize, 0);
            if let Err(e) = fill(done, &mut out[start..]) {
                out.truncate(hdr_at);
                return Err(e);
            }
            finish_deferred(out, start, self.wire.digests);
            if last && status.is_some() {
                at = Some(hdr_at);
            }
            self.datasn += 1;
            self.offset += n;
            done += n;
        }
        Ok(at)
    }

    /// Sends Data-In PDUs now.
    pub fn send(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            let _ = self.events.send(Event::Data {
                itt: self.itt,
                bytes,
            });
        }
    }
}

/// Where a task's Data-Out comes from.
pub struct DataOut {
    pub itt: u32,
    pub rx: Option<mpsc::UnboundedReceiver<Chunk>>,
    pub events: mpsc::UnboundedSender<Event>,
    pub abort: Arc<Abort>,
    /// Bytes the initiator may send (the EDTL when W is set, else 0).
    pub available: u32,
    started: bool,
}

impl DataOut {
    pub fn new(
        itt: u32,
        rx: Option<mpsc::UnboundedReceiver<Chunk>>,
        events: mpsc::UnboundedSender<Event>,
        abort: Arc<Abort>,
        available: u32,
    ) -> DataOut {
        DataOut {
            itt,
            rx,
            events,
            abort,
            available,
            started: false,
        }
    }

    /// Asks for `want` bytes (at most what the initiator may send); the connection
    /// R2Ts what unsolicited data did not bring. Called once.
    pub fn start(&mut self, want: u32) -> u32 {
        let want = want.min(self.available);
        if !self.started {
            self.started = true;
            let _ = self.events.send(Event::Ready {
                itt: self.itt,
                want,
            });
        }
        want
    }

    /// The next burst, in offset order; `Ok(None)` when the connection has no more.
    pub async fn next(&mut self) -> Result<Option<Chunk>, Aborted> {
        let Some(rx) = self.rx.as_mut() else {
            return Ok(None);
        };
        let c = tokio::select! {
            c = rx.recv() => c,
            _ = self.abort.wait() => return Err(Aborted),
        };
        if let Some(c) = &c {
            if c.solicited {
                let _ = self.events.send(Event::More { itt: self.itt });
            }
        }
        Ok(c)
    }

    /// Collects `want` bytes into one buffer (parameter lists, COMPARE AND WRITE).
    pub async fn collect(&mut self, want: u32) -> Result<Vec<u8>, Aborted> {
        let want = self.start(want) as usize;
        let mut buf = vec![0u8; want];
        let mut got = 0usize;
        while got < want {
            let Some(c) = self.next().await? else { break };
            let at = c.offset as usize;
            if at < want {
                let n = c.data.len().min(want - at);
                buf[at..at + n].copy_from_slice(&c.data[..n]);
                got = got.max(at + n);
            }
        }
        buf.truncate(got);
        Ok(buf)
    }
}

/// Everything a task needs.
pub struct TaskCtx {
    pub shared: Arc<Shared>,
    pub session: Arc<Session>,
    pub admission: Arc<dyn Admission>,
    pub lu: Option<Arc<LogicalUnit>>,
    pub lun: u16,
    pub cdb: [u8; 16],
    pub ext_cdb: bool,
    pub edtl: u32,
    pub read: bool,
    pub sink: Sink,
    pub data: DataOut,
    pub abort: Arc<Abort>,
}
