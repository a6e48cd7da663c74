//! Validation at the edge and the I/O of a request the admission core let through: its
//! reply goes straight into the reply buffer, or — while the emulated array's service
//! latency runs — into a buffer the core holds until it is due.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use nbd_proto::*;

use super::Conn;
use crate::errors::nbd_errno;
use crate::handshake::MAX_PAYLOAD;
use storage_node::admission::{Started, Work};
use storage_node::volume::Volume;

/// Most extents returned by one BLOCK_STATUS.
const MAX_EXTENTS: usize = 1024;

/// A finished reply the admission core holds for the array's service latency.
pub(super) struct Held {
    pub(super) buf: Vec<u8>,
    /// What it did, for the books; `None`: an error reply (already counted).
    pub(super) work: Option<Work>,
}

/// A reply produced on the blocking pool (fdatasync).
pub(super) struct Synced {
    buf: Vec<u8>,
    started: Started,
    work: Option<Work>,
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
    pub(super) fn validate(&self, req: &Request) -> Result<(), (u32, String)> {
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
        let be = &self.vol.backend;
        if cmd == CMD_FLUSH {
            return if be.can_flush() {
                Ok(())
            } else {
                Err((EINVAL, self.undeclared(name)))
            };
        }
        let writes = matches!(cmd, CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES);
        if writes && (self.vol.read_only || !be.can_write()) {
            return Err((
                EPERM,
                format!("{name}: volume {} is read-only", self.vol.name),
            ));
        }
        // Only what the transmission flags advertised (the backend's declarations).
        let declared = match cmd {
            CMD_TRIM => be.can_trim(),
            CMD_WRITE_ZEROES => {
                be.can_zero() && (req.flags & CMD_FLAG_FAST_ZERO == 0 || be.can_fast_zero())
            }
            CMD_CACHE => be.can_cache(),
            CMD_BLOCK_STATUS => be.can_extents(),
            _ => true,
        };
        if !declared {
            return Err((EINVAL, self.undeclared(name)));
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

    fn undeclared(&self, name: &str) -> String {
        format!(
            "{name}: volume {}'s storage does not offer it (not in the transmission flags)",
            self.vol.name
        )
    }

    /// Do the I/O of a validated request the admission core let through, and reply (now,
    /// or when its service latency has passed).
    pub(super) fn execute(&mut self, req: Request, payload: &[u8], started: Started) {
        if self.vol.backend.blocks() {
            return self.blocking_io(req, payload, started);
        }
        // A reply due now goes straight into the reply buffer; one the array holds gets a
        // buffer of its own.
        let direct = self.adm.done(&started, self.node.clock.now()).is_ok();
        let mut out = if direct {
            std::mem::take(&mut self.wbuf)
        } else {
            self.spare_buf()
        };
        match self.io(&req, payload, &mut out) {
            Ok(replied) => {
                let work = super::work(&req);
                if needs_sync(&req) {
                    self.put_back(out, direct);
                    self.blocking_sync(req.cookie, started, work);
                    return;
                }
                if !replied {
                    encode_ok(&mut out, self.structured, req.cookie);
                }
                self.reply(out, direct, started, Some(work));
            }
            Err(e) => {
                self.vol.stats.errors.fetch_add(1, Relaxed);
                let msg = format!("{} failed: {e}", command_name(req.command));
                encode_error(&mut out, self.structured, req.cookie, nbd_errno(&e), &msg);
                self.reply(out, direct, started, None);
            }
        }
    }

    /// The I/O itself ([`io`]).
    fn io(&self, req: &Request, payload: &[u8], out: &mut Vec<u8>) -> io::Result<bool> {
        io(
            &self.vol,
            self.structured,
            self.meta_context,
            req,
            payload,
            out,
        )
    }

    /// A request on a backend whose calls may block
    /// ([`Backend::blocks`](storage_node::backend::Backend::blocks): a delay layer):
    /// its I/O, and the sync FUA or FLUSH asks for, run on the blocking pool, so neither
    /// this connection's task nor the runtime worker it is on ever waits in one. The reply
    /// comes back like a sync's ([`synced`](Self::synced)).
    fn blocking_io(&mut self, req: Request, payload: &[u8], started: Started) {
        let (vol, tx) = (self.vol.clone(), self.done_tx.clone());
        let (structured, meta_context) = (self.structured, self.meta_context);
        let payload = payload.to_vec();
        self.in_blocking += 1;
        tokio::task::spawn_blocking(move || {
            let mut buf = Vec::new();
            let r = io(&vol, structured, meta_context, &req, &payload, &mut buf);
            let work = match r.and_then(|replied| {
                if needs_sync(&req) {
                    vol.backend.flush()?;
                }
                Ok(replied)
            }) {
                Ok(replied) => {
                    if !replied {
                        encode_ok(&mut buf, structured, req.cookie);
                    }
                    Some(super::work(&req))
                }
                Err(e) => {
                    vol.stats.errors.fetch_add(1, Relaxed);
                    buf.clear();
                    let msg = format!("{} failed: {e}", command_name(req.command));
                    encode_error(&mut buf, structured, req.cookie, nbd_errno(&e), &msg);
                    None
                }
            };
            let _ = tx.send(Synced { buf, started, work });
        });
    }

    /// A reply is complete: out now (recorded in the statistics), or held by the core
    /// until the array's service latency has passed.
    fn reply(&mut self, out: Vec<u8>, direct: bool, started: Started, work: Option<Work>) {
        let done = self.adm.done(&started, self.node.clock.now());
        if direct {
            // Due before the I/O, so due after it: `out` is the reply buffer itself.
            self.wbuf = out;
        } else if done.is_ok() {
            self.wbuf.extend_from_slice(&out);
            self.recycle(out);
        } else {
            self.adm.hold(started, Held { buf: out, work });
            return;
        }
        if let (Ok(done), Some(work)) = (done, work) {
            self.adm.gates().record(&done, &self.vol.stats, work);
        }
    }

    /// Give back the buffer `execute` wrote into when nothing is replied yet.
    fn put_back(&mut self, out: Vec<u8>, direct: bool) {
        if direct {
            self.wbuf = out;
        } else {
            self.recycle(out);
        }
    }

    /// A blocking-pool sync finished: its reply goes out or is held like any other.
    pub(super) fn synced(&mut self, s: Synced) {
        self.reply(s.buf, false, s.started, s.work);
    }

    /// fdatasync on the blocking pool; the reply is queued when it is durable.
    fn blocking_sync(&mut self, cookie: u64, started: Started, work: Work) {
        let vol = self.vol.clone();
        let tx = self.done_tx.clone();
        let structured = self.structured;
        self.in_blocking += 1;
        tokio::task::spawn_blocking(move || {
            let mut buf = Vec::with_capacity(64);
            let work = match vol.backend.flush() {
                Ok(()) => {
                    encode_ok(&mut buf, structured, cookie);
                    Some(work)
                }
                Err(e) => {
                    vol.stats.errors.fetch_add(1, Relaxed);
                    encode_error(
                        &mut buf,
                        structured,
                        cookie,
                        nbd_errno(&e),
                        &format!("flush failed: {e}"),
                    );
                    None
                }
            };
            let _ = tx.send(Synced { buf, started, work });
        });
    }
}

/// A request's I/O on `vol`; READ and BLOCK_STATUS append their replies to `out`.
/// Returns whether it replied.
fn io(
    vol: &Volume,
    structured: bool,
    meta_context: Option<u32>,
    req: &Request,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<bool> {
    let be = &vol.backend;
    let (off, len) = (req.offset, u64::from(req.length));
    match req.command {
        // Zero bytes: nothing to send. A structured reply cannot carry an empty
        // OFFSET_DATA chunk (its length must be at least 9), so it is just NONE+DONE.
        CMD_READ if req.length == 0 => {
            encode_ok(out, structured, req.cookie);
            Ok(true)
        }
        CMD_READ => {
            let mark = out.len();
            if structured {
                encode_read_chunk_header(out, req.cookie, off, req.length);
            } else {
                encode_simple_reply(out, req.cookie, 0);
            }
            let r = be.read_append(out, off, req.length as usize);
            if r.is_err() {
                out.truncate(mark);
            }
            r.map(|_| true)
        }
        CMD_WRITE => {
            vol.mark_dirty();
            be.write_at(payload, off).map(|_| false)
        }
        CMD_TRIM => {
            vol.mark_dirty();
            be.trim(off, len).map(|_| false)
        }
        CMD_WRITE_ZEROES => {
            vol.mark_dirty();
            let may_trim = req.flags & CMD_FLAG_NO_HOLE == 0;
            let fast = req.flags & CMD_FLAG_FAST_ZERO != 0;
            be.zero(off, len, may_trim, fast).map(|_| false)
        }
        CMD_CACHE => be.cache(off, len).map(|_| false),
        CMD_BLOCK_STATUS => {
            let max = if req.flags & CMD_FLAG_REQ_ONE != 0 {
                1
            } else {
                MAX_EXTENTS
            };
            let descs: Vec<(u32, u32)> = be
                .extents(off, len, max)?
                .iter()
                .map(|e| {
                    let st = if e.hole { STATE_HOLE | STATE_ZERO } else { 0 };
                    (e.length.min(u32::MAX as u64) as u32, st)
                })
                .collect();
            let ctx = meta_context.unwrap_or(1);
            encode_block_status(out, req.cookie, ctx, &descs);
            Ok(true)
        }
        // FLUSH: the sync runs on the blocking pool.
        CMD_FLUSH => Ok(false),
        _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

/// FLUSH, or a write-like request with FUA: durable before its reply.
fn needs_sync(req: &Request) -> bool {
    let fua = req.flags & CMD_FLAG_FUA != 0;
    req.command == CMD_FLUSH
        || (fua && matches!(req.command, CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES))
}

pub(super) fn encode_ok(out: &mut Vec<u8>, structured: bool, cookie: u64) {
    if structured {
        encode_structured_done(out, cookie);
    } else {
        encode_simple_reply(out, cookie, 0);
    }
}

pub(super) fn encode_error(
    out: &mut Vec<u8>,
    structured: bool,
    cookie: u64,
    errno: u32,
    msg: &str,
) {
    if structured {
        encode_structured_error(out, cookie, errno, msg);
    } else {
        encode_simple_reply(out, cookie, errno);
    }
}
