//! One TCP connection: its login ([`crate::login`]), then the full feature phase. One
//! task reads PDUs, answers what needs no I/O (NOP, text, task management, logout),
//! starts a [`crate::task`] per SCSI command, feeds write commands their Data-Out and
//! sends their R2Ts, and sends every response in the order it assigns StatSNs. Command
//! tasks hand it their Data-In and answers through a channel.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use iscsi_proto::digest::{crc32c, wire};
use iscsi_proto::frame::{next_pdu, Digests, FrameError, RawPdu, BHS_LEN};
use iscsi_proto::pdu::target::{self as tpdu, reject, Seq};
use iscsi_proto::pdu::{self, DecodeError, Request, RESERVED_TAG};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::login::{Established, LoginState, Step};
use crate::session::{Admit, Session};
use crate::target::ConnInfo;
use crate::task::{Abort, Answer, DataOut, End, Event, Sink, TaskCtx, Wire};
use crate::writes::{R2tReq, Transfer, WriteState};
use crate::{Admission, Shared};

mod control;

/// Login PDUs carry at most this much data (RFC 7143's default MaxRecvDataSegmentLength).
const LOGIN_MAX_DATA: u32 = 8192;
/// Output above this goes out as its own buffer instead of being copied.
const COPY_LIMIT: usize = 64 * 1024;
/// Immediate SCSI commands one connection may have running (they are outside the
/// CmdSN window).
const MAX_IMMEDIATE: usize = 16;
/// After a protocol error the target stops serving, sends FIN and reads and discards
/// what the initiator still sends, for at most this long or [`LINGER_BYTES`], before it
/// closes. Closing with unread data would send a reset instead, and an initiator writing
/// its next PDU then gets EPIPE (libiscsi's tools die of SIGPIPE) rather than an orderly
/// end it can recover from.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);
const LINGER_BYTES: usize = 16 << 20;

/// Why a connection ends early.
type Close = io::Error;

fn protocol(why: impl Into<String>) -> Close {
    io::Error::new(io::ErrorKind::InvalidData, why.into())
}

/// Serves one accepted connection to its end.
pub async fn serve(
    shared: Arc<Shared>,
    stream: TcpStream,
    peer: SocketAddr,
    stop: watch::Receiver<bool>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let local = stream.local_addr()?;
    let (mut rd, mut wr) = stream.into_split();
    let (kill_tx, kill_rx) = watch::channel(false);
    let mut inbuf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let login = login(&shared, &mut rd, &mut wr, &mut inbuf, kill_tx, peer);
    let est = match tokio::time::timeout(shared.config.login_timeout, login).await {
        Ok(Ok(Some(e))) => e,
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => {
            if e.kind() == io::ErrorKind::InvalidData {
                close_gently(&mut rd, &mut wr, stop).await;
            }
            return Err(e);
        }
        Err(_) => {
            shared.stats.login_failures.fetch_add(1, Ordering::Relaxed);
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "login not finished within {:?}",
                    shared.config.login_timeout
                ),
            ));
        }
    };
    shared.stats.logins.fetch_add(1, Ordering::Relaxed);
    let session = est.session.clone();
    let cid = est.cid;
    tracing::debug!(
        "iscsi: {peer}: {} session {} (cid {cid}) of {}",
        if session.discovery {
            "discovery"
        } else {
            "normal"
        },
        session.tsih,
        session.initiator
    );
    let mut c = Conn::new(shared.clone(), est, local, peer);
    let r = c
        .run(&mut rd, &mut wr, &mut inbuf, stop.clone(), kill_rx)
        .await;
    c.end();
    if session.remove_conn(cid) {
        shared.sessions.remove(session.tsih);
        for (_, lu) in session.luns(&*shared.target).iter() {
            lu.nexus_lost(&session.nexus);
        }
    }
    if let Err(e) = &r {
        if e.kind() == io::ErrorKind::InvalidData {
            shared.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("iscsi: {peer}: {} ended: {e}", session.initiator);
            close_gently(&mut rd, &mut wr, stop).await;
        }
    }
    r
}

/// Ends a connection without a reset: FIN, then what arrives is read and dropped until
/// the initiator closes, [`LINGER`] passes, [`LINGER_BYTES`] have come or the target
/// stops.
async fn close_gently(
    rd: &mut OwnedReadHalf,
    wr: &mut OwnedWriteHalf,
    mut stop: watch::Receiver<bool>,
) {
    let _ = wr.shutdown().await;
    let mut sink = vec![0u8; 64 * 1024];
    let drain = async {
        let mut total = 0;
        while total < LINGER_BYTES {
            match rd.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    if *stop.borrow() {
        return;
    }
    tokio::select! {
        _ = tokio::time::timeout(LINGER, drain) => {}
        _ = stop.changed() => {}
    }
}

/// Reads until one whole PDU is in `inbuf`; returns its length (`None`: the peer closed).
async fn fill(
    rd: &mut OwnedReadHalf,
    inbuf: &mut Vec<u8>,
    d: Digests,
    max: u32,
) -> io::Result<Option<usize>> {
    loop {
        match next_pdu(inbuf, d, max) {
            Ok(Some((_, used))) => return Ok(Some(used)),
            Ok(None) => {}
            Err(e) => return Err(protocol(e.to_string())),
        }
        inbuf.reserve(16 * 1024);
        if rd.read_buf(inbuf).await? == 0 {
            return Ok(None);
        }
    }
}

async fn login(
    shared: &Arc<Shared>,
    rd: &mut OwnedReadHalf,
    wr: &mut OwnedWriteHalf,
    inbuf: &mut Vec<u8>,
    kill: watch::Sender<bool>,
    peer: SocketAddr,
) -> io::Result<Option<Established>> {
    let mut st = LoginState::new(
        shared.target.clone(),
        shared.sessions.clone(),
        shared.config.clone(),
        kill,
        peer,
    );
    loop {
        let Some(used) = fill(rd, inbuf, Digests::default(), LOGIN_MAX_DATA).await? else {
            return Ok(None);
        };
        let step = {
            let Ok(Some((p, _))) = next_pdu(inbuf, Digests::default(), LOGIN_MAX_DATA) else {
                return Err(protocol("login PDU vanished"));
            };
            match Request::decode(&p) {
                Ok(Request::Login(l)) => st.step(&l),
                _ => {
                    return Err(protocol(format!(
                        "opcode 0x{:02x} during login",
                        p.opcode()
                    )))
                }
            }
        };
        inbuf.drain(..used);
        match step {
            Step::Continue(b) => wr.write_all(&b).await?,
            Step::Fail(b, why) => {
                shared.stats.login_failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("iscsi: {peer}: login refused: {why}");
                wr.write_all(&b).await?;
                return Ok(None);
            }
            Step::Done(b, est) => {
                wr.write_all(&b).await?;
                return Ok(Some(est));
            }
        }
    }
}

/// A command of this connection.
struct Entry {
    lun: u64,
    counted: bool,
    immediate: bool,
    abort: Arc<Abort>,
    aborted: bool,
    write: Option<WriteState>,
    /// The answer, held until the write's Data-Out has all arrived.
    held: Option<Answer>,
}

/// A task management request waiting for the tasks it aborted to end.
struct PendingTmf {
    itt: u32,
    waiting: Vec<u32>,
    counted: bool,
}

struct PendingLogout {
    itt: u32,
    session: bool,
}

pub(crate) struct Conn {
    shared: Arc<Shared>,
    session: Arc<Session>,
    cid: u16,
    digests: Digests,
    /// Our MaxRecvDataSegmentLength.
    max_data: u32,
    wire: Wire,
    transfer: Transfer,
    statsn: u32,
    tasks: HashMap<u32, Entry>,
    tx: mpsc::UnboundedSender<Event>,
    rx: mpsc::UnboundedReceiver<Event>,
    out: Vec<u8>,
    segments: VecDeque<Vec<u8>>,
    next_ttt: u32,
    admission: Arc<dyn Admission>,
    tmfs: Vec<PendingTmf>,
    logout: Option<PendingLogout>,
    ping: Option<Instant>,
    last_rx: Instant,
    text: Vec<u8>,
    local: SocketAddr,
}

impl Conn {
    fn new(shared: Arc<Shared>, est: Established, local: SocketAddr, peer: SocketAddr) -> Conn {
        let s = &est.session.params;
        let (tx, rx) = mpsc::unbounded_channel();
        let digests = Digests {
            header: est.conn.header_digest,
            data: est.conn.data_digest,
        };
        let admission = shared.target.admission(&ConnInfo {
            initiator: est.session.initiator.clone(),
            isid: est.session.isid,
            tsih: est.session.tsih,
            cid: est.cid,
            peer,
        });
        Conn {
            digests,
            max_data: est.conn.target_mrdsl,
            wire: Wire {
                digests,
                mrdsl: est
                    .conn
                    .initiator_mrdsl
                    .min(shared.config.limits.max_recv_data_segment_length.max(8192)),
                max_burst: s.max_burst_length.max(512),
            },
            transfer: Transfer {
                initial_r2t: s.initial_r2t,
                immediate_data: s.immediate_data,
                first_burst: s.first_burst_length,
                max_burst: s.max_burst_length.max(512),
                max_outstanding_r2t: s.max_outstanding_r2t,
            },
            statsn: est.statsn,
            session: est.session,
            cid: est.cid,
            shared,
            tasks: HashMap::new(),
            tx,
            rx,
            out: Vec::with_capacity(64 * 1024),
            segments: VecDeque::new(),
            next_ttt: 0,
            admission,
            tmfs: Vec::new(),
            logout: None,
            ping: None,
            last_rx: Instant::now(),
            text: Vec::new(),
            local,
        }
    }

    fn seq(&self) -> Seq {
        self.session.seq(self.statsn)
    }

    fn ttt(next: &mut u32) -> u32 {
        *next = next.wrapping_add(1);
        if *next == RESERVED_TAG {
            *next = 1;
        }
        *next
    }

    /// Queues bytes for the socket, in order.
    fn emit(&mut self, bytes: Vec<u8>) {
        if bytes.len() <= COPY_LIMIT {
            self.out.extend_from_slice(&bytes);
        } else {
            if !self.out.is_empty() {
                let small = std::mem::replace(&mut self.out, Vec::with_capacity(64 * 1024));
                self.segments.push_back(small);
            }
            self.segments.push_back(bytes);
        }
    }

    async fn flush(&mut self, wr: &mut OwnedWriteHalf) -> io::Result<()> {
        while let Some(s) = self.segments.pop_front() {
            wr.write_all(&s).await?;
        }
        if !self.out.is_empty() {
            wr.write_all(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    fn reject(&mut self, reason: u8, bhs: &[u8; BHS_LEN]) {
        let seq = self.seq();
        tpdu::reject(&mut self.out, self.digests, reason, bhs, seq);
        self.statsn = self.statsn.wrapping_add(1);
    }

    /// Counts a non-immediate request in the session's window; `None`: ignore it.
    fn arrive(&self, immediate: bool, cmdsn: u32) -> Option<bool> {
        if immediate {
            return Some(false);
        }
        match self.session.arrive(cmdsn) {
            Admit::Run => Some(true),
            Admit::Ignore => None,
        }
    }

    async fn run(
        &mut self,
        rd: &mut OwnedReadHalf,
        wr: &mut OwnedWriteHalf,
        inbuf: &mut Vec<u8>,
        mut stop: watch::Receiver<bool>,
        mut kill: watch::Receiver<bool>,
    ) -> io::Result<()> {
        let cfg = self.shared.config.clone();
        let mut stopping = *stop.borrow();
        let mut eof = false;
        loop {
            let reading = !stopping && !eof && self.logout.is_none();
            let deadline = match self.ping {
                Some(sent) => sent + cfg.nop_timeout,
                None => self.last_rx + cfg.nop_interval,
            };
            tokio::select! {
                r = rd.read_buf(inbuf), if reading => {
                    if r? == 0 {
                        eof = true;
                    }
                    inbuf.reserve(16 * 1024);
                }
                Some(ev) = self.rx.recv() => {
                    self.event(ev)?;
                    while let Ok(ev) = self.rx.try_recv() {
                        self.event(ev)?;
                    }
                }
                _ = kill.changed() => return Ok(()),
                _ = stop.changed(), if !stopping => stopping = true,
                _ = tokio::time::sleep_until(deadline), if !eof => {
                    if self.ping.is_some() {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, format!(
                            "no PDU for {:?} after a NOP-In ping", cfg.nop_timeout)));
                    }
                    let ttt = Self::ttt(&mut self.next_ttt);
                    let seq = self.seq();
                    tpdu::nop_in(&mut self.out, self.digests, 0, RESERVED_TAG, ttt, seq, &[]);
                    self.ping = Some(Instant::now());
                }
            }
            let r = self.parse(inbuf);
            if let Err(e) = r {
                let _ = self.flush(wr).await;
                return Err(e);
            }
            if self.logout.is_some() && self.tasks.is_empty() {
                self.finish_logout();
                self.flush(wr).await?;
                return Ok(());
            }
            self.flush(wr).await?;
            if (stopping || eof) && self.tasks.is_empty() {
                return Ok(());
            }
        }
    }

    /// Handles every complete PDU in `inbuf`.
    fn parse(&mut self, inbuf: &mut Vec<u8>) -> io::Result<()> {
        let mut used = 0;
        let result = loop {
            match next_pdu(&inbuf[used..], self.digests, self.max_data) {
                Ok(Some((p, n))) => {
                    used += n;
                    self.last_rx = Instant::now();
                    self.ping = None;
                    if let Err(e) = self.pdu(&p) {
                        break Err(e);
                    }
                }
                Ok(None) => break Ok(()),
                Err(FrameError::DataDigest { bhs, .. }) => {
                    // The data cannot be trusted and, at error recovery level 0, not
                    // asked for again: reject it and end the connection.
                    self.reject(reject::DATA_DIGEST, &bhs);
                    break Err(protocol("data digest error"));
                }
                Err(e) => break Err(protocol(e.to_string())),
            }
        };
        inbuf.drain(..used);
        result
    }

    fn pdu(&mut self, p: &RawPdu<'_>) -> io::Result<()> {
        let req = match Request::decode(p) {
            Ok(r) => r,
            Err(DecodeError::UnknownOpcode(_)) => {
                self.reject(reject::COMMAND_NOT_SUPPORTED, p.bhs);
                return Ok(());
            }
            Err(e) => {
                self.reject(reject::PROTOCOL_ERROR, p.bhs);
                return Err(protocol(e.to_string()));
            }
        };
        match req {
            Request::ScsiCommand(c) => self.scsi(c, p.bhs),
            Request::DataOut(d) => self.data_out(d, p.bhs),
            Request::NopOut(n) => {
                self.nop(n);
                Ok(())
            }
            Request::TaskMgmt(t) => {
                self.tmf(t);
                Ok(())
            }
            Request::Text(t) => self.text(t, p.bhs),
            Request::Logout(l) => {
                self.logout(l);
                Ok(())
            }
            Request::Snack(_) => {
                self.reject(reject::SNACK_REJECT, p.bhs);
                Ok(())
            }
            Request::Login(_) => {
                self.reject(reject::PROTOCOL_ERROR, p.bhs);
                Err(protocol("Login PDU in the full feature phase"))
            }
        }
    }

    fn scsi(&mut self, c: pdu::ScsiCommand<'_>, bhs: &[u8; BHS_LEN]) -> io::Result<()> {
        if self.session.discovery {
            self.reject(reject::PROTOCOL_ERROR, bhs);
            return Err(protocol("SCSI command in a discovery session"));
        }
        let immediate_running = self.tasks.values().filter(|e| e.immediate).count();
        if c.immediate && immediate_running >= MAX_IMMEDIATE {
            self.reject(reject::IMMEDIATE_REJECTED, bhs);
            return Ok(());
        }
        let Some(counted) = self.arrive(c.immediate, c.cmdsn) else {
            return Ok(());
        };
        if self.tasks.contains_key(&c.itt) {
            self.reject(reject::TASK_IN_PROGRESS, bhs);
            if counted {
                self.session.done();
            }
            return Ok(());
        }
        self.shared.stats.commands.fetch_add(1, Ordering::Relaxed);
        let lun = iscsi_proto::scsi::lun::decode(c.lun);
        let lu = lun.and_then(|n| self.session.lu(&*self.shared.target, n));
        let (write, data_rx) = if c.write && c.edtl > 0 {
            let (tx, rx) = mpsc::unbounded_channel();
            match WriteState::new(&c, self.transfer, tx) {
                Ok(w) => (Some(w), Some(rx)),
                Err(why) => {
                    self.reject(reject::PROTOCOL_ERROR, bhs);
                    return Err(protocol(why));
                }
            }
        } else if !c.data.is_empty() {
            self.reject(reject::PROTOCOL_ERROR, bhs);
            return Err(protocol("data on a command without the W bit"));
        } else {
            (None, None)
        };
        let abort = Arc::new(Abort::default());
        let ctx = TaskCtx {
            shared: self.shared.clone(),
            session: self.session.clone(),
            admission: self.admission.clone(),
            lu,
            lun: lun.unwrap_or(u16::MAX),
            cdb: c.cdb,
            ext_cdb: !c.ext_cdb.is_empty(),
            edtl: c.edtl,
            read: c.read,
            sink: Sink {
                itt: c.itt,
                lun_field: c.lun,
                wire: self.wire,
                session: self.session.clone(),
                events: self.tx.clone(),
                datasn: 0,
                offset: 0,
            },
            data: DataOut::new(
                c.itt,
                data_rx,
                self.tx.clone(),
                abort.clone(),
                if c.write { c.edtl } else { 0 },
            ),
            abort: abort.clone(),
        };
        tokio::spawn(crate::dispatch::run(ctx));
        self.tasks.insert(
            c.itt,
            Entry {
                lun: c.lun,
                counted,
                immediate: c.immediate,
                abort,
                aborted: false,
                write,
                held: None,
            },
        );
        Ok(())
    }

    fn send_r2ts(&mut self, itt: u32, lun: u64, r2ts: Vec<R2tReq>) {
        for r in r2ts {
            let seq = self.seq();
            tpdu::r2t(
                &mut self.out,
                self.digests,
                &tpdu::R2t {
                    lun,
                    itt,
                    ttt: r.ttt,
                    r2tsn: r.r2tsn,
                    offset: r.offset,
                    len: r.len,
                    seq,
                },
            );
        }
    }

    fn data_out(&mut self, d: pdu::DataOut<'_>, bhs: &[u8; BHS_LEN]) -> io::Result<()> {
        let itt = d.itt;
        let Some(e) = self.tasks.get_mut(&itt) else {
            // A task that was aborted or has ended: its late data is dropped.
            return Ok(());
        };
        let Some(w) = e.write.as_mut() else {
            self.reject(reject::PROTOCOL_ERROR, bhs);
            return Err(protocol(format!(
                "Data-Out for task 0x{itt:x}, which takes no data"
            )));
        };
        if let Err(why) = w.data_out(&d) {
            self.reject(reject::PROTOCOL_ERROR, bhs);
            return Err(protocol(why));
        }
        let r2ts = w.issue(&mut || Self::ttt(&mut self.next_ttt));
        let (lun, quiet) = (e.lun, w.quiescent());
        self.send_r2ts(itt, lun, r2ts);
        if quiet {
            if let Some(a) = self.tasks.get_mut(&itt).and_then(|e| e.held.take()) {
                self.release(itt);
                self.answer(itt, a);
                self.resolve_tmfs(itt);
            }
        }
        Ok(())
    }

    fn event(&mut self, ev: Event) -> io::Result<()> {
        match ev {
            Event::Data { itt, bytes } => {
                if self.tasks.get(&itt).is_some_and(|e| !e.aborted) {
                    self.emit(bytes);
                }
            }
            Event::Ready { itt, want } => {
                let next = &mut self.next_ttt;
                if let Some(e) = self.tasks.get_mut(&itt) {
                    if let Some(w) = e.write.as_mut() {
                        let r = w.ready(want, &mut || Self::ttt(next));
                        let lun = e.lun;
                        self.send_r2ts(itt, lun, r);
                    }
                }
            }
            Event::More { itt } => {
                let next = &mut self.next_ttt;
                if let Some(e) = self.tasks.get_mut(&itt) {
                    if let Some(w) = e.write.as_mut() {
                        let r = w.more(&mut || Self::ttt(next));
                        let lun = e.lun;
                        self.send_r2ts(itt, lun, r);
                    }
                }
            }
            Event::Done { itt, end } => {
                let Some(e) = self.tasks.get_mut(&itt) else {
                    return Ok(());
                };
                match end {
                    End::Answer(a) if !e.aborted => {
                        if e.write.as_ref().is_some_and(|w| !w.quiescent()) {
                            e.held = Some(a);
                            return Ok(());
                        }
                        self.release(itt);
                        self.answer(itt, a);
                    }
                    _ => self.release(itt),
                }
                self.resolve_tmfs(itt);
            }
        }
        Ok(())
    }

    /// Sends a command's answer with the next StatSN.
    fn answer(&mut self, itt: u32, mut a: Answer) {
        let seq = self.seq();
        match a.collapsed_at {
            Some(at) => {
                let h = &mut a.bytes[at..at + BHS_LEN];
                h[24..28].copy_from_slice(&seq.statsn.to_be_bytes());
                h[28..32].copy_from_slice(&seq.exp_cmdsn.to_be_bytes());
                h[32..36].copy_from_slice(&seq.max_cmdsn.to_be_bytes());
                if self.digests.header {
                    let crc = crc32c(&[&a.bytes[at..at + BHS_LEN]]);
                    a.bytes[at + BHS_LEN..at + BHS_LEN + 4].copy_from_slice(&wire(crc));
                }
                self.emit(a.bytes);
            }
            None => {
                self.emit(a.bytes);
                let sense = a.sense.map(|s| s.fixed());
                tpdu::scsi_response(
                    &mut self.out,
                    self.digests,
                    &tpdu::ScsiResponse {
                        itt,
                        response: tpdu::RESPONSE_COMPLETED,
                        status: a.status,
                        residual: a.residual,
                        sense: sense.as_ref().map(|s| &s[..]).unwrap_or(&[]),
                        exp_datasn: a.datasn,
                        seq,
                    },
                );
            }
        }
        self.statsn = self.statsn.wrapping_add(1);
    }

    /// A task is gone (answered or aborted): its slot in the window opens before its
    /// answer is encoded, so the answer already carries the wider MaxCmdSN.
    fn release(&mut self, itt: u32) {
        if let Some(e) = self.tasks.remove(&itt) {
            if e.counted {
                self.session.done();
            }
        }
    }

    /// Task management requests waiting for `itt` to end may answer now.
    fn resolve_tmfs(&mut self, itt: u32) {
        let mut ready = Vec::new();
        self.tmfs.retain_mut(|t| {
            t.waiting.retain(|w| *w != itt);
            if t.waiting.is_empty() {
                ready.push((t.itt, t.counted));
                false
            } else {
                true
            }
        });
        for (tmf_itt, counted) in ready {
            self.tmf_response(tmf_itt, tpdu::tmf_response::COMPLETE, counted);
        }
    }

    /// The connection ends: its tasks stop at their next wait.
    fn end(&mut self) {
        for (_, e) in self.tasks.drain() {
            e.abort.abort();
            if e.counted {
                self.session.done();
            }
        }
    }
}
