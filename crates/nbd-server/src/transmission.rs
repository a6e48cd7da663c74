//! The transmission phase: one task per connection reads requests in batches, decodes and
//! validates each once, asks the admission core ([`storage_node::admission`]) when it may run,
//! does the I/O of those it lets through, and writes all replies of a batch with one
//! socket write. Replies go out of order; cookies match them up. QoS lives in the core:
//! this file knows NBD and sockets, nothing of ceilings, grants or service latency.

use std::io;
use std::os::unix::io::RawFd;
use std::sync::Arc;
use std::time::Duration;

use nbd_proto::*;
use qos_core::{Direction, Nanos};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use crate::handshake::Session;
use crate::spin::{spin_recv, SpinPolicy};
use storage_node::admission::{Admission, Driver, Op, Submitted, Work};
use storage_node::node::Node;
use storage_node::volume::Volume;

mod execute;
mod read_buf;

use execute::{encode_error, Held, Synced};
use read_buf::{ReadBuf, RBUF_INITIAL};

/// Replies are written out as soon as this many bytes are pending, so large reads stream
/// instead of piling up (and the buffer never regrows per batch).
const WBUF_FLUSH: usize = 256 * 1024;
/// A reply buffer grown past this (by a huge read) is given back after it is written.
const WBUF_KEEP: usize = 8 << 20;
/// How long a shutdown waits for requests queued in the controller before answering
/// ESHUTDOWN.
const SHUTDOWN_GRACE_NS: Nanos = 5_000_000_000;

/// A request the admission core holds: its header and its payload.
struct Pending {
    req: Request,
    payload: Vec<u8>,
}

/// Per-connection state (everything but the socket and the read buffer).
struct Conn {
    node: Arc<Node>,
    vol: Arc<Volume>,
    structured: bool,
    meta_context: Option<u32>,
    wbuf: Vec<u8>,
    /// The admission core: requests waiting for QoS, replies waiting for the array.
    adm: Admission<Pending, Held>,
    /// Its driver: grants, timers.
    driver: Driver,
    /// Replies produced by blocking-pool work (fdatasync).
    done_tx: mpsc::UnboundedSender<Synced>,
    in_blocking: usize,
    /// Buffers of replies the array held, kept for the next ones.
    spare: Vec<Vec<u8>>,
}

impl Drop for Conn {
    /// However the connection ends (the client leaves, an error, a deleted volume, the
    /// node stops), the ceilings' reservations its held requests still had are given back,
    /// as a closed NFS or S3 connection's [`Gate`](storage_node::admission::Gate) does.
    fn drop(&mut self) {
        self.adm.abandon(self.node.clock.now());
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
    let (adm, driver) = Driver::new(node.gates(), node.clock);
    let mut c = Conn {
        vol: session.volume,
        structured: session.structured,
        meta_context: session.meta_context,
        wbuf: Vec::with_capacity(RBUF_INITIAL),
        adm,
        driver,
        done_tx,
        in_blocking: 0,
        spare: Vec::new(),
        node,
    };
    let mut rb = ReadBuf::new();
    let mut reading = true;
    let mut shutdown_at: Option<Nanos> = None;
    let mut spin = SpinPolicy::default();
    let clock = c.node.clock;

    loop {
        if shutdown_at.is_none() && *shutdown.borrow() {
            // Whatever is already buffered gets the spec's answer; nothing new is read.
            shutdown_at = Some(clock.now());
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
                    c.turn(shutdown_at);
                    c.flush(stream).await?;
                    continue;
                }
            }
        }
        // Requests still waiting for the controller get ESHUTDOWN after the grace.
        let give_up = shutdown_at
            .filter(|_| c.adm.parked() > 0)
            .map(|t| t + SHUTDOWN_GRACE_NS);
        tokio::select! {
            Some(s) = done_rx.recv(), if c.in_blocking > 0 => {
                c.in_blocking -= 1;
                c.synced(s);
                while let Ok(s) = done_rx.try_recv() {
                    c.in_blocking -= 1;
                    c.synced(s);
                }
            }
            _ = c.driver.wait(give_up) => {}
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
        c.turn(shutdown_at);
        c.flush(stream).await?;
    }
    stream.flush().await?;
    Ok(())
}

/// What a request does, as the admission core counts it.
fn work(req: &Request) -> Work {
    let len = u64::from(req.length);
    match req.command {
        CMD_READ => Work::Read(len),
        CMD_WRITE => Work::Write(len),
        // Counted as a write of nothing moved.
        CMD_TRIM | CMD_WRITE_ZEROES => Work::Meta(Direction::Write),
        // FLUSH, CACHE, BLOCK_STATUS: free, and one "other" operation in the books.
        _ => Work::Free,
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

    /// Validate at the edge, then ask the admission core: run now, or leave it there.
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
        let op = self.op(&req);
        let pending = || Pending {
            req,
            payload: payload.to_vec(),
        };
        if let Submitted::Now(started) = self.adm.submit_with(op, now, pending) {
            self.execute(req, payload, started);
        }
    }

    /// The admission core's view of a request: its flow, what it does, where.
    fn op(&self, req: &Request) -> Op {
        Op::new(self.vol.flow(), work(req)).at(self.vol.id, req.offset)
    }

    /// Nothing in flight: nothing held by the admission core, nothing syncing.
    fn idle(&self) -> bool {
        self.adm.is_idle() && self.in_blocking == 0
    }

    /// After a batch or a wake-up: the driver brings the core up to now (grants, pump),
    /// every request it releases runs, every reply whose service latency has passed goes
    /// out; after the shutdown grace, those still waiting get ESHUTDOWN.
    fn turn(&mut self, shutdown_at: Option<Nanos>) {
        let now = self.driver.turn(&mut self.adm);
        while let Some(r) = self.adm.take_ready(now) {
            self.execute(r.token.req, &r.token.payload, r.started);
            self.recycle(r.token.payload);
        }
        if shutdown_at.is_some_and(|t| now >= t + SHUTDOWN_GRACE_NS) {
            let mut cookies: Vec<u64> = self
                .adm
                .give_up()
                .into_iter()
                .map(|p| p.req.cookie)
                .collect();
            cookies.sort_unstable();
            for cookie in cookies {
                self.error(cookie, ESHUTDOWN, "node is shutting down");
            }
        }
        let now = self.driver.now();
        while let Some((held, done)) = self.adm.take_reply(now) {
            self.wbuf.extend_from_slice(&held.buf);
            if let Some(work) = held.work {
                self.adm.gates().record(&done, &self.vol.stats, work);
            }
            self.recycle(held.buf);
        }
        self.driver.arm(&self.adm);
    }

    /// Reply with an error, structured when negotiated.
    fn error(&mut self, cookie: u64, errno: u32, msg: &str) {
        encode_error(&mut self.wbuf, self.structured, cookie, errno, msg);
    }

    /// A buffer for a reply the array holds.
    fn spare_buf(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Keep a buffer for later replies (a few, none huge).
    fn recycle(&mut self, mut b: Vec<u8>) {
        if self.spare.len() < 64 && b.capacity() <= 1 << 20 && b.capacity() > 0 {
            b.clear();
            self.spare.push(b);
        }
    }
}
