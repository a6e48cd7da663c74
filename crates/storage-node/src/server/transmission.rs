//! The transmission phase: one task per connection reads requests in batches, executes
//! what its QoS flow allows now, parks the rest in a timer heap, and writes all replies
//! of a batch with one socket write. Replies go out of order; cookies match them up.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::os::unix::io::RawFd;
use std::sync::Arc;
use std::time::Duration;

use nbd_proto::*;
use qos_core::{Direction, Nanos, MILLI};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::handshake::{Session, MAX_PAYLOAD};
use super::spin::{spin_recv, SpinPolicy};
use crate::errors::nbd_errno;
use crate::node::Node;
use crate::provisioned::{Access, ConnCap, ProvisionedFs};
use crate::scheduler::{Grant, Ticket, NO_FLOW};
use crate::stats::{OpKind, Waits};
use crate::timer::PreciseTimer;
use crate::volume::Volume;

use super::queued::{Deferred, Parked};

mod due;

const RBUF_INITIAL: usize = 256 * 1024;
/// Replies are written out as soon as this many bytes are pending, so large reads stream
/// instead of piling up (and the buffer never regrows per batch).
const WBUF_FLUSH: usize = 256 * 1024;
/// A reply buffer grown past this (by a huge read) is given back after it is written.
const WBUF_KEEP: usize = 8 << 20;

/// Most extents returned by one BLOCK_STATUS.
const MAX_EXTENTS: usize = 1024;
/// How long a shutdown waits for QoS-delayed requests before answering ESHUTDOWN.
const SHUTDOWN_GRACE_NS: Nanos = 5_000_000_000;
/// tokio's timers have millisecond resolution: a request whose QoS start time is less than
/// this far away is released now instead of sleeping to the next tick. Early by at most
/// 1 ms per request; the pacer's schedule (and so the rate) is unchanged. Without it, a
/// 50,000 IOPS ceiling at queue depth 16 measured 8% low: every request in flight could be
/// parked for a whole tick at once.
const TIMER_SLACK_NS: Nanos = 1_000_000;

/// Unregisters a connection from the controller however the connection ends.
struct Registration {
    node: Arc<Node>,
    id: u32,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.node.scheduler.unregister(self.id);
    }
}

/// Per-connection state (everything but the socket and the read buffer).
struct Conn {
    node: Arc<Node>,
    vol: Arc<Volume>,
    structured: bool,
    meta_context: Option<u32>,
    wbuf: Vec<u8>,
    deferred: BinaryHeap<Reverse<Deferred>>,
    /// Dispatched requests the emulated array is still serving (service latency).
    serving: BinaryHeap<Reverse<Deferred>>,
    seq: u64,
    /// Replies produced by blocking-pool work (fdatasync).
    done_tx: mpsc::UnboundedSender<Vec<u8>>,
    in_blocking: usize,
    /// Controller mode: this connection's id and its requests waiting for grants.
    ctl: Option<u32>,
    waiting: HashMap<u64, Parked>,
    /// Something was submitted since the last pump.
    submitted: bool,
    /// The node's provisioned file system and this connection's single-flow limit.
    fs: Option<(Arc<ProvisionedFs>, ConnCap)>,
}

/// The connection's read buffer: bytes in `buf[pos..end]` are received, not yet parsed.
struct ReadBuf {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl ReadBuf {
    fn new() -> ReadBuf {
        ReadBuf {
            buf: vec![0u8; RBUF_INITIAL],
            pos: 0,
            end: 0,
        }
    }

    /// Free space to read into (never empty).
    fn spare(&mut self) -> &mut [u8] {
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
        } else if self.buf.len() - self.end < 64 * 1024 && self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        &mut self.buf[self.end..]
    }

    /// The next complete request and the range of its payload, if a whole frame is
    /// buffered. Errors are protocol violations that end the connection.
    fn next_frame(&mut self) -> io::Result<Option<(Request, std::ops::Range<usize>)>> {
        if self.end - self.pos < REQUEST_HEADER_LEN {
            return Ok(None);
        }
        let req = decode_request(&self.buf[self.pos..self.pos + REQUEST_HEADER_LEN])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let mut frame = REQUEST_HEADER_LEN;
        if req.command == CMD_WRITE {
            if req.length > MAX_PAYLOAD {
                // The spec lets a server hang up on payloads this large rather than read
                // them: it is the only answer that bounds memory.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "WRITE of {} bytes exceeds the maximum payload {MAX_PAYLOAD}",
                        req.length
                    ),
                ));
            }
            frame += req.length as usize;
            if self.end - self.pos < frame {
                if self.buf.len() - self.pos < frame {
                    self.buf.copy_within(self.pos..self.end, 0);
                    self.end -= self.pos;
                    self.pos = 0;
                    if self.buf.len() < frame {
                        self.buf.resize(frame.next_power_of_two(), 0);
                    }
                }
                return Ok(None);
            }
        }
        let payload = self.pos + REQUEST_HEADER_LEN..self.pos + frame;
        self.pos += frame;
        Ok(Some((req, payload)))
    }
}

/// Serve requests until the client disconnects or the node shuts down.
///
/// `busy_poll`: the socket's fd and how long to spin on a non-blocking `recv` after a
/// batch before parking in epoll (0 disables). A client at queue depth 1 usually sends its
/// next request within microseconds; catching it while spinning saves a sleep and a
/// wake-up, which dominate QD1 latency. Idle connections never spin.
pub async fn run<S>(
    stream: &mut S,
    node: Arc<Node>,
    session: Session,
    mut shutdown: watch::Receiver<bool>,
    busy_poll: Option<(RawFd, Duration)>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let (ctl, mut grants) = match node.scheduler.register() {
        Some((id, rx)) => (Some(id), Some(rx)),
        None => (None, None),
    };
    let _registration = ctl.map(|id| Registration {
        node: node.clone(),
        id,
    });
    let fs = node.provisioned().map(|fs| (fs.clone(), fs.connection()));
    let mut c = Conn {
        vol: session.volume,
        structured: session.structured,
        meta_context: session.meta_context,
        node,
        wbuf: Vec::with_capacity(RBUF_INITIAL),
        deferred: BinaryHeap::new(),
        serving: BinaryHeap::new(),
        seq: 0,
        done_tx,
        in_blocking: 0,
        ctl,
        waiting: HashMap::new(),
        submitted: false,
        fs,
    };
    let mut rb = ReadBuf::new();
    let mut reading = true;
    let mut shutdown_at: Option<Nanos> = None;
    let mut spin = SpinPolicy::default();
    let mut service_timer = PreciseTimer::compensating(c.node.scheduler.precise_timers());

    loop {
        if shutdown_at.is_none() && *shutdown.borrow() {
            // Whatever is already buffered gets the spec's answer; nothing new is read.
            shutdown_at = Some(c.node.clock.now());
            while reading {
                match rb.next_frame()? {
                    None => break,
                    Some((req, _)) if req.command == CMD_DISC => reading = false,
                    Some((req, _)) => c.error(req.cookie, ESHUTDOWN, "node is shutting down"),
                }
            }
            reading = false;
        }
        if !reading && c.idle() {
            if !c.wbuf.is_empty() {
                stream.write_all(&c.wbuf).await?;
            }
            break;
        }
        if let Some((fd, budget)) = busy_poll.filter(|_| reading && spin.should_spin()) {
            if c.idle() {
                let n = spin_recv(fd, rb.spare(), budget);
                if n > 0 {
                    rb.end += n;
                    let (more, handled) = c.handle_frames(&mut rb, stream).await?;
                    reading = more;
                    spin.spun(handled);
                    c.pump(&mut grants);
                    c.flush(stream).await?;
                    continue;
                }
            }
        }
        // Wake a timer tick early: run_due releases what is due within the slack.
        let mut next_at = c
            .deferred
            .peek()
            .map(|d| c.node.clock.instant(d.0.at.saturating_sub(TIMER_SLACK_NS)));
        if let Some(t) = shutdown_at.filter(|_| !c.waiting.is_empty()) {
            // Requests still waiting for the controller get ESHUTDOWN after the grace.
            let give_up = c.node.clock.instant(t + SHUTDOWN_GRACE_NS);
            next_at = Some(next_at.map_or(give_up, |n| n.min(give_up)));
        }
        let served_at = c.serving.peek().map(|d| d.0.at);
        let clock = c.node.clock;
        tokio::select! {
            Some(reply) = done_rx.recv(), if c.in_blocking > 0 => {
                c.in_blocking -= 1;
                c.wbuf.extend_from_slice(&reply);
                while let Ok(reply) = done_rx.try_recv() {
                    c.in_blocking -= 1;
                    c.wbuf.extend_from_slice(&reply);
                }
            }
            Some(g) = recv_opt(&mut grants), if !c.waiting.is_empty() => {
                c.granted(g);
            }
            _ = sleep_opt(next_at), if next_at.is_some() => {}
            _ = service_timer.wait_until(clock, served_at.unwrap_or(0)), if served_at.is_some() => {}
            _ = shutdown.changed(), if shutdown_at.is_none() => {}
            r = stream.read(rb.spare()), if reading => {
                match r {
                    // Client went away: nothing more can be replied.
                    Ok(0) => return Ok(()),
                    Ok(n) => rb.end += n,
                    Err(e) => return Err(e),
                }
                let (more, handled) = c.handle_frames(&mut rb, stream).await?;
                reading = more;
                spin.woke(handled);
            }
        }
        c.pump(&mut grants);
        c.run_due(shutdown_at);
        c.run_served(service_timer.advance());
        c.flush(stream).await?;
    }
    stream.flush().await?;
    Ok(())
}

async fn recv_opt(rx: &mut Option<mpsc::UnboundedReceiver<Grant>>) -> Option<Grant> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_opt(at: Option<tokio::time::Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

/// Allowed flag bits per command (FUA is accepted everywhere, as the spec requires once
/// NBD_FLAG_SEND_FUA is advertised).
fn allowed_flags(cmd: u16) -> u16 {
    CMD_FLAG_FUA
        | match cmd {
            CMD_READ => CMD_FLAG_DF,
            CMD_WRITE_ZEROES => CMD_FLAG_NO_HOLE | CMD_FLAG_FAST_ZERO,
            CMD_BLOCK_STATUS => CMD_FLAG_REQ_ONE,
            _ => 0,
        }
}

impl Conn {
    /// Handle every complete request in the read buffer. Returns whether to keep reading
    /// (false once DISC arrived) and how many requests were handled.
    async fn handle_frames<S>(
        &mut self,
        rb: &mut ReadBuf,
        stream: &mut S,
    ) -> io::Result<(bool, usize)>
    where
        S: AsyncWrite + Unpin,
    {
        let mut handled = 0;
        while let Some((req, payload)) = rb.next_frame()? {
            if req.command == CMD_DISC {
                return Ok((false, handled));
            }
            handled += 1;
            self.handle(req, &rb.buf[payload]);
            if self.wbuf.len() >= WBUF_FLUSH {
                stream.write_all(&self.wbuf).await?;
                stream.flush().await?;
                self.wbuf.clear();
            }
        }
        Ok((true, handled))
    }

    /// Write every pending reply.
    async fn flush<S>(&mut self, stream: &mut S) -> io::Result<()>
    where
        S: AsyncWrite + Unpin,
    {
        if !self.wbuf.is_empty() {
            stream.write_all(&self.wbuf).await?;
            // A TLS stream may hold encrypted records back when the socket is full; only
            // flush pushes them out (a no-op on plain sockets).
            stream.flush().await?;
            self.wbuf.clear();
            if self.wbuf.capacity() > WBUF_KEEP {
                self.wbuf.shrink_to(RBUF_INITIAL);
            }
        }
        Ok(())
    }

    /// Validate at the edge, charge QoS, then execute now or park until due.
    fn handle(&mut self, req: Request, payload: &[u8]) {
        let now = self.node.clock.now();
        if let Err((errno, msg)) = self.validate(&req) {
            self.vol
                .stats
                .errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.error(req.cookie, errno, &msg);
            return;
        }
        // Operations counted (thousandths; the node's I/O-size accounting) and bytes.
        let (ops, bytes) = match charged(&req) {
            Some((_, bytes)) => (self.node.scheduler.milliops(bytes), bytes),
            None => (0, 0),
        };
        if let Some(conn) = self.ctl.filter(|_| ops > 0) {
            let flow = self.vol.flow();
            self.seq += 1;
            let ticket = Ticket {
                conn,
                seq: self.seq,
            };
            let dir = charged(&req).map_or(Direction::Write, |c| c.0);
            if flow != NO_FLOW && self.node.scheduler.submit(flow, ticket, dir, bytes, now) {
                self.waiting.insert(
                    self.seq,
                    Parked {
                        arrival: now,
                        req,
                        payload: payload.to_vec(),
                    },
                );
                self.submitted = true;
            } else {
                // The volume is between flows (a policy change in progress).
                self.execute(req, payload, now, Waits::default());
            }
            return;
        }
        let qos_until = if ops > 0 {
            self.node.scheduler.admit(self.vol.flow(), now, ops, bytes)
        } else {
            now
        };
        let start = self.through_resources(&req, qos_until);
        if start <= now + TIMER_SLACK_NS {
            self.execute(req, payload, now, Waits::default());
        } else {
            self.seq += 1;
            self.deferred.push(Reverse(Deferred {
                at: start,
                seq: self.seq,
                arrival: now,
                qos_until,
                req,
                payload: payload.to_vec(),
                waits: None,
            }));
        }
    }

    /// The provisioned file system's say on a request QoS released at `at`: when its
    /// resources allow it to start (`at` when the node has no such file system).
    fn through_resources(&mut self, req: &Request, at: Nanos) -> Nanos {
        let Some((fs, cap)) = &mut self.fs else {
            return at;
        };
        let access = match req.command {
            CMD_READ => Access::Read,
            CMD_WRITE => Access::Write,
            _ => Access::Other,
        };
        fs.admit(
            cap,
            self.vol.id,
            access,
            req.offset,
            u64::from(req.length),
            at,
        )
    }

    /// Nothing in flight: no parked, waiting, served or syncing requests.
    fn idle(&self) -> bool {
        self.deferred.is_empty()
            && self.waiting.is_empty()
            && self.serving.is_empty()
            && self.in_blocking == 0
    }

    /// Controller mode: dispatch what is due if this connection submitted anything, and
    /// execute this connection's grants at once (others' go to them by channel).
    fn pump(&mut self, grants: &mut Option<mpsc::UnboundedReceiver<Grant>>) {
        if !std::mem::take(&mut self.submitted) {
            return;
        }
        self.node.scheduler.pump(self.node.clock.now());
        if let Some(rx) = grants {
            while let Ok(g) = rx.try_recv() {
                self.granted(g);
            }
        }
    }

    /// Execute a request the controller dispatched (after the array's service latency,
    /// if any); its queue time is split at the moment its ceiling allowed it.
    fn granted(&mut self, g: Grant) {
        let Some(p) = self.waiting.remove(&g.seq) else {
            return;
        };
        let now = self.node.clock.now();
        let wait = now.saturating_sub(p.arrival);
        let ceiling_ns = g.limit_at.saturating_sub(p.arrival).min(wait);
        let waits = Waits {
            ceiling_ns,
            floor_ns: wait - ceiling_ns,
        };
        let start = self.through_resources(&p.req, now);
        if start > now + TIMER_SLACK_NS {
            self.seq += 1;
            self.deferred.push(Reverse(Deferred {
                at: start,
                seq: self.seq,
                arrival: p.arrival,
                qos_until: now,
                req: p.req,
                payload: p.payload,
                waits: Some(waits),
            }));
            return;
        }
        self.serve(p.req, p.payload, p.arrival, waits, g.seq);
    }

    fn validate(&self, req: &Request) -> Result<(), (u32, String)> {
        let cmd = req.command;
        let name = command_name(cmd);
        if !matches!(
            cmd,
            CMD_READ
                | CMD_WRITE
                | CMD_FLUSH
                | CMD_TRIM
                | CMD_CACHE
                | CMD_WRITE_ZEROES
                | CMD_BLOCK_STATUS
        ) {
            return Err((EINVAL, format!("unknown command {cmd}")));
        }
        if req.flags & !allowed_flags(cmd) != 0 {
            return Err((
                EINVAL,
                format!("{name}: unsupported flags 0x{:x}", req.flags),
            ));
        }
        if cmd == CMD_FLUSH {
            return Ok(());
        }
        let writes = matches!(cmd, CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES);
        if writes && self.vol.read_only {
            return Err((
                EPERM,
                format!("{name}: volume {} is read-only", self.vol.name),
            ));
        }
        let size = self.vol.size();
        let end = req.offset.checked_add(req.length as u64);
        if end.is_none_or(|e| e > size) {
            let errno = if matches!(cmd, CMD_WRITE | CMD_WRITE_ZEROES) {
                ENOSPC
            } else {
                EINVAL
            };
            return Err((
                errno,
                format!(
                    "{name} at offset {} length {} is beyond the end of the volume ({size} bytes)",
                    req.offset, req.length
                ),
            ));
        }
        match cmd {
            CMD_READ if req.length > MAX_PAYLOAD => Err((
                if self.structured { EOVERFLOW } else { EINVAL },
                format!(
                    "READ of {} bytes exceeds the maximum payload {MAX_PAYLOAD}",
                    req.length
                ),
            )),
            CMD_BLOCK_STATUS if self.meta_context.is_none() => Err((
                EINVAL,
                "BLOCK_STATUS needs base:allocation negotiated with NBD_OPT_SET_META_CONTEXT"
                    .into(),
            )),
            // The spec leaves a zero-length status query unspecified (the server SHOULD
            // NOT disconnect); a success would need a descriptor of nonzero length, which
            // REQ_ONE forbids, so the answer is an error and the session goes on.
            CMD_BLOCK_STATUS if req.length == 0 => Err((
                EINVAL,
                "BLOCK_STATUS of length 0: there is no range to describe".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Reply with an error, structured when negotiated.
    fn error(&mut self, cookie: u64, errno: u32, msg: &str) {
        encode_error(&mut self.wbuf, self.structured, cookie, errno, msg);
    }

    /// Execute a validated request whose QoS start time has come.
    fn execute(&mut self, req: Request, payload: &[u8], arrival: Nanos, wait: Waits) {
        let vol = &self.vol;
        let be = &vol.backend;
        let (off, len) = (req.offset, req.length as u64);
        let fua = req.flags & CMD_FLAG_FUA != 0;
        let (kind, result) = match req.command {
            // Zero bytes: nothing to send. A structured reply cannot carry an empty
            // OFFSET_DATA chunk (its length must be at least 9), so it is just NONE+DONE.
            CMD_READ if req.length == 0 => {
                encode_ok(&mut self.wbuf, self.structured, req.cookie);
                (OpKind::Read, Ok(true))
            }
            CMD_READ => {
                let mark = self.wbuf.len();
                if self.structured {
                    encode_read_chunk_header(&mut self.wbuf, req.cookie, off, req.length);
                } else {
                    encode_simple_reply(&mut self.wbuf, req.cookie, 0);
                }
                let r = be.read_append(&mut self.wbuf, off, req.length as usize);
                if r.is_err() {
                    self.wbuf.truncate(mark);
                }
                (OpKind::Read, r.map(|_| true))
            }
            CMD_WRITE => {
                vol.mark_dirty();
                (OpKind::Write, be.write_at(payload, off).map(|_| false))
            }
            CMD_TRIM => {
                vol.mark_dirty();
                (OpKind::Other, be.trim(off, len).map(|_| false))
            }
            CMD_WRITE_ZEROES => {
                vol.mark_dirty();
                let may_trim = req.flags & CMD_FLAG_NO_HOLE == 0;
                let fast = req.flags & CMD_FLAG_FAST_ZERO != 0;
                (
                    OpKind::Other,
                    be.zero(off, len, may_trim, fast).map(|_| false),
                )
            }
            CMD_CACHE => (OpKind::Other, be.cache(off, len).map(|_| false)),
            CMD_BLOCK_STATUS => {
                let max = if req.flags & CMD_FLAG_REQ_ONE != 0 {
                    1
                } else {
                    MAX_EXTENTS
                };
                match be.extents(off, len, max) {
                    Ok(ext) => {
                        let descs: Vec<(u32, u32)> = ext
                            .iter()
                            .map(|e| {
                                let st = if e.hole { STATE_HOLE | STATE_ZERO } else { 0 };
                                (e.length.min(u32::MAX as u64) as u32, st)
                            })
                            .collect();
                        let ctx = self.meta_context.unwrap_or(1);
                        encode_block_status(&mut self.wbuf, req.cookie, ctx, &descs);
                        (OpKind::Other, Ok(true))
                    }
                    Err(e) => (OpKind::Other, Err(e)),
                }
            }
            CMD_FLUSH => {
                self.blocking_sync(req.cookie, arrival, wait, OpKind::Other, 0);
                return;
            }
            _ => (
                OpKind::Other,
                Err(io::Error::from_raw_os_error(libc::EINVAL)),
            ),
        };
        match result {
            Ok(replied) => {
                let bytes = if matches!(kind, OpKind::Read | OpKind::Write) {
                    len
                } else {
                    0
                };
                if fua && matches!(req.command, CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES) {
                    self.blocking_sync(req.cookie, arrival, wait, kind, bytes);
                    return;
                }
                if !replied {
                    encode_ok(&mut self.wbuf, self.structured, req.cookie);
                }
                let lat = self.node.clock.now().saturating_sub(arrival);
                let ops = self.counted(kind, bytes);
                vol.stats.record_counted(kind, bytes, ops, lat, wait);
            }
            Err(e) => {
                vol.stats
                    .errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let msg = format!("{} failed: {e}", command_name(req.command));
                encode_error(
                    &mut self.wbuf,
                    self.structured,
                    req.cookie,
                    nbd_errno(&e),
                    &msg,
                );
            }
        }
    }

    /// Operations a completed request counts for in the statistics (thousandths): reads
    /// and writes by the node's accounting, everything else one.
    fn counted(&self, kind: OpKind, bytes: u64) -> u64 {
        match kind {
            OpKind::Read | OpKind::Write => self.node.scheduler.milliops(bytes),
            OpKind::Other => MILLI,
        }
    }

    /// fdatasync on the blocking pool; the reply is queued when it is durable.
    fn blocking_sync(
        &mut self,
        cookie: u64,
        arrival: Nanos,
        wait: Waits,
        kind: OpKind,
        bytes: u64,
    ) {
        let vol = self.vol.clone();
        let node = self.node.clone();
        let tx = self.done_tx.clone();
        let structured = self.structured;
        let ops = self.counted(kind, bytes);
        self.in_blocking += 1;
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(64);
            match vol.backend.flush() {
                Ok(()) => {
                    encode_ok(&mut out, structured, cookie);
                    let lat = node.clock.now().saturating_sub(arrival);
                    vol.stats.record_counted(kind, bytes, ops, lat, wait);
                }
                Err(e) => {
                    vol.stats
                        .errors
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    encode_error(
                        &mut out,
                        structured,
                        cookie,
                        nbd_errno(&e),
                        &format!("flush failed: {e}"),
                    );
                }
            }
            let _ = tx.send(out);
        });
    }
}

/// The direction and bytes a request is charged for by QoS: READ and WRITE their length,
/// TRIM and WRITE_ZEROES nothing moved (writes of 0 bytes); `None`: free (FLUSH, CACHE,
/// BLOCK_STATUS).
fn charged(req: &Request) -> Option<(Direction, u64)> {
    match req.command {
        CMD_READ => Some((Direction::Read, req.length as u64)),
        CMD_WRITE => Some((Direction::Write, req.length as u64)),
        CMD_TRIM | CMD_WRITE_ZEROES => Some((Direction::Write, 0)),
        _ => None,
    }
}

fn encode_ok(out: &mut Vec<u8>, structured: bool, cookie: u64) {
    if structured {
        encode_structured_done(out, cookie);
    } else {
        encode_simple_reply(out, cookie, 0);
    }
}

fn encode_error(out: &mut Vec<u8>, structured: bool, cookie: u64, errno: u32, msg: &str) {
    if structured {
        encode_structured_error(out, cookie, errno, msg);
    } else {
        encode_simple_reply(out, cookie, errno);
    }
}
