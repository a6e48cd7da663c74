//! A small raw NBD client (fixed newstyle) speaking bytes over a unix socket, written
//! from the protocol document, independent of the server's own codec (only the protocol's
//! named numbers come from `nbd-proto`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

// The protocol's numbers, from the codec crate: the bytes this client writes and the
// checks it makes are its own, and real clients (nbdinfo, qemu-img, nbdfuse, fio) check
// the numbers against the server in the interop tests.
/// The option reply magic (`REPLY_MAGIC` in the codec).
pub use nbd_proto::REPLY_MAGIC as OPT_REPLY_MAGIC;
pub use nbd_proto::{
    CMD_BLOCK_STATUS, CMD_CACHE, CMD_DISC, CMD_FLAG_DF, CMD_FLAG_FUA, CMD_FLAG_NO_HOLE,
    CMD_FLAG_REQ_ONE, CMD_FLUSH, CMD_READ, CMD_TRIM, CMD_WRITE, CMD_WRITE_ZEROES, EINVAL, ENOSPC,
    EOVERFLOW, EPERM, FLAG_CAN_MULTI_CONN, FLAG_HAS_FLAGS, FLAG_READ_ONLY, FLAG_SEND_CACHE,
    FLAG_SEND_DF, FLAG_SEND_FAST_ZERO, FLAG_SEND_FLUSH, FLAG_SEND_FUA, FLAG_SEND_TRIM,
    FLAG_SEND_WRITE_ZEROES, IHAVEOPT, INFO_BLOCK_SIZE, INFO_DESCRIPTION, INFO_EXPORT, INFO_NAME,
    NBDMAGIC, OPT_ABORT, OPT_EXPORT_NAME, OPT_GO, OPT_INFO, OPT_LIST, OPT_SET_META_CONTEXT,
    OPT_STARTTLS, OPT_STRUCTURED_REPLY, REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, REPLY_TYPE_ERROR,
    REPLY_TYPE_NONE, REPLY_TYPE_OFFSET_DATA, REPLY_TYPE_OFFSET_HOLE, REP_ACK, REP_ERR_INVALID,
    REP_ERR_TLS_REQD, REP_ERR_UNKNOWN, REP_ERR_UNSUP, REP_INFO, REP_META_CONTEXT, REP_SERVER,
    REQUEST_MAGIC, SIMPLE_REPLY_MAGIC, STRUCTURED_REPLY_MAGIC,
};

/// Socket read timeout: a server that stops answering fails the test instead of hanging it.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}
fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

fn read_n(s: &mut UnixStream, n: usize, what: &str) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b)
        .unwrap_or_else(|e| panic!("reading {what} ({n} bytes): {e}"));
    b
}

/// Connect and read the 18-byte greeting, checking it. Returns the raw stream.
pub fn connect_greeted(socket: &Path) -> UnixStream {
    let mut s =
        UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    let g = read_n(&mut s, 18, "greeting");
    assert_eq!(be64(&g[0..8]), NBDMAGIC, "greeting: NBDMAGIC");
    assert_eq!(be64(&g[8..16]), IHAVEOPT, "greeting: IHAVEOPT");
    assert_eq!(
        be16(&g[16..18]),
        3,
        "handshake flags: FIXED_NEWSTYLE|NO_ZEROES"
    );
    s
}

/// Read until the peer closes the connection, failing if that takes longer than `within`.
/// Returns whatever bytes arrived before the close.
pub fn expect_closed(s: &mut UnixStream, within: Duration, what: &str) -> Vec<u8> {
    let deadline = Instant::now() + within;
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                return got
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => panic!("{what}: unexpected error while waiting for close: {e}"),
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the server did not close the connection within {within:?} (received {} bytes)",
            got.len()
        );
    }
}

/// One option reply.
#[derive(Debug, Clone)]
pub struct OptReply {
    pub option: u32,
    pub ty: u32,
    pub data: Vec<u8>,
}

impl OptReply {
    pub fn is_err(&self) -> bool {
        self.ty & 0x8000_0000 != 0
    }
}

/// What INFO/GO reported about an export.
#[derive(Debug, Clone, Default)]
pub struct ExportInfo {
    pub size: u64,
    pub flags: u16,
    pub name: Option<String>,
    pub description: Option<String>,
    pub block_size: Option<(u32, u32, u32)>,
}

/// The option (negotiation) phase.
pub struct Handshake {
    pub s: UnixStream,
    structured: bool,
    meta_selected: bool,
}

impl Handshake {
    /// Connect, check the greeting, send client flags FIXED_NEWSTYLE|NO_ZEROES.
    pub fn start(socket: &Path) -> Handshake {
        let mut s = connect_greeted(socket);
        s.write_all(&3u32.to_be_bytes())
            .expect("sending client flags");
        Handshake {
            s,
            structured: false,
            meta_selected: false,
        }
    }

    pub fn send_option(&mut self, option: u32, data: &[u8]) {
        let mut b = Vec::with_capacity(16 + data.len());
        b.extend_from_slice(&IHAVEOPT.to_be_bytes());
        b.extend_from_slice(&option.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        self.s.write_all(&b).expect("sending option");
    }

    pub fn reply(&mut self) -> OptReply {
        let h = read_n(&mut self.s, 20, "option reply header");
        assert_eq!(be64(&h[0..8]), OPT_REPLY_MAGIC, "option reply magic");
        let option = be32(&h[8..12]);
        let ty = be32(&h[12..16]);
        let len = be32(&h[16..20]) as usize;
        assert!(len <= 1 << 20, "option reply length {len} is absurd");
        let data = read_n(&mut self.s, len, "option reply data");
        OptReply { option, ty, data }
    }

    /// Send an option and read replies up to and including the final one (ACK or error).
    pub fn option(&mut self, option: u32, data: &[u8]) -> Vec<OptReply> {
        self.send_option(option, data);
        let mut v = Vec::new();
        loop {
            let r = self.reply();
            assert_eq!(
                r.option, option,
                "reply is for option {} not {option}",
                r.option
            );
            let last = r.ty == REP_ACK || r.is_err();
            v.push(r);
            if last {
                return v;
            }
        }
    }

    pub fn structured_replies(&mut self) {
        let r = self.option(OPT_STRUCTURED_REPLY, &[]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].ty, REP_ACK, "STRUCTURED_REPLY: {r:?}");
        self.structured = true;
    }

    /// SET_META_CONTEXT for `export` with `queries`; returns (id, name) of selected contexts.
    pub fn set_meta_context(&mut self, export: &str, queries: &[&str]) -> Vec<(u32, String)> {
        let mut d = Vec::new();
        d.extend_from_slice(&(export.len() as u32).to_be_bytes());
        d.extend_from_slice(export.as_bytes());
        d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
        for q in queries {
            d.extend_from_slice(&(q.len() as u32).to_be_bytes());
            d.extend_from_slice(q.as_bytes());
        }
        let replies = self.option(OPT_SET_META_CONTEXT, &d);
        let last = replies.last().unwrap();
        assert_eq!(last.ty, REP_ACK, "SET_META_CONTEXT failed: {replies:?}");
        let ctx: Vec<(u32, String)> = replies
            .iter()
            .filter(|r| r.ty == REP_META_CONTEXT)
            .map(|r| {
                (
                    be32(&r.data[0..4]),
                    String::from_utf8_lossy(&r.data[4..]).into_owned(),
                )
            })
            .collect();
        self.meta_selected = !ctx.is_empty();
        ctx
    }

    /// INFO or GO payload: name and info requests.
    pub fn info_payload(name: &str, requests: &[u16]) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(&(name.len() as u32).to_be_bytes());
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(requests.len() as u16).to_be_bytes());
        for r in requests {
            d.extend_from_slice(&r.to_be_bytes());
        }
        d
    }

    /// INFO (opt = OPT_INFO) or GO: Ok(info) on ACK, Err(the error reply) otherwise.
    pub fn info_or_go(
        &mut self,
        opt: u32,
        name: &str,
        requests: &[u16],
    ) -> Result<ExportInfo, OptReply> {
        let replies = self.option(opt, &Self::info_payload(name, requests));
        let last = replies.last().unwrap().clone();
        if last.is_err() {
            return Err(last);
        }
        let mut info = ExportInfo::default();
        let mut saw_export = false;
        for r in &replies[..replies.len() - 1] {
            assert_eq!(
                r.ty, REP_INFO,
                "unexpected reply type {:#x} to INFO/GO",
                r.ty
            );
            match be16(&r.data[0..2]) {
                INFO_EXPORT => {
                    assert_eq!(r.data.len(), 12, "NBD_INFO_EXPORT length");
                    info.size = be64(&r.data[2..10]);
                    info.flags = be16(&r.data[10..12]);
                    saw_export = true;
                }
                INFO_NAME => info.name = Some(String::from_utf8_lossy(&r.data[2..]).into_owned()),
                INFO_DESCRIPTION => {
                    info.description = Some(String::from_utf8_lossy(&r.data[2..]).into_owned())
                }
                INFO_BLOCK_SIZE => {
                    assert_eq!(r.data.len(), 14, "NBD_INFO_BLOCK_SIZE length");
                    info.block_size = Some((
                        be32(&r.data[2..6]),
                        be32(&r.data[6..10]),
                        be32(&r.data[10..14]),
                    ));
                }
                _ => {}
            }
        }
        assert!(
            saw_export,
            "INFO/GO acknowledged without NBD_INFO_EXPORT: {replies:?}"
        );
        Ok(info)
    }

    /// GO; on success the connection is in transmission.
    pub fn go(mut self, name: &str) -> Client {
        match self.info_or_go(OPT_GO, name, &[]) {
            Ok(info) => Client::new(self.s, info, self.structured, self.meta_selected),
            Err(r) => panic!(
                "GO {name:?} failed: type {:#x} {:?}",
                r.ty,
                String::from_utf8_lossy(&r.data)
            ),
        }
    }
}

/// One structured reply chunk.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub flags: u16,
    pub ty: u16,
    pub payload: Vec<u8>,
}

/// A complete reply to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub cookie: u64,
    /// 0 on success; the errno otherwise (simple reply error field or ERROR chunk).
    pub error: u32,
    /// READ data (assembled from OFFSET_DATA/OFFSET_HOLE chunks when structured).
    pub data: Vec<u8>,
    /// Structured chunks, in arrival order (empty for simple replies).
    pub chunks: Vec<Chunk>,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    cmd: u16,
    offset: u64,
    length: u32,
}

/// The transmission phase.
pub struct Client {
    pub s: UnixStream,
    pub info: ExportInfo,
    pub structured: bool,
    pub meta: bool,
    next_cookie: u64,
    pending: HashMap<u64, Pending>,
    partial: HashMap<u64, Reply>,
}

impl Client {
    fn new(s: UnixStream, info: ExportInfo, structured: bool, meta: bool) -> Client {
        Client {
            s,
            info,
            structured,
            meta,
            next_cookie: 1,
            pending: HashMap::new(),
            partial: HashMap::new(),
        }
    }

    /// Handshake with GO and simple replies.
    pub fn open(socket: &Path, vol: &str) -> Client {
        Handshake::start(socket).go(vol)
    }

    /// Handshake with structured replies and `base:allocation`, then GO.
    pub fn open_structured(socket: &Path, vol: &str) -> Client {
        let mut h = Handshake::start(socket);
        h.structured_replies();
        let ctx = h.set_meta_context(vol, &["base:allocation"]);
        assert_eq!(
            ctx,
            vec![(1, "base:allocation".to_string())],
            "base:allocation context"
        );
        h.go(vol)
    }

    pub fn size(&self) -> u64 {
        self.info.size
    }

    /// Encode a request header (no payload).
    pub fn header(flags: u16, cmd: u16, cookie: u64, offset: u64, length: u32) -> [u8; 28] {
        let mut h = [0u8; 28];
        h[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        h[4..6].copy_from_slice(&flags.to_be_bytes());
        h[6..8].copy_from_slice(&cmd.to_be_bytes());
        h[8..16].copy_from_slice(&cookie.to_be_bytes());
        h[16..24].copy_from_slice(&offset.to_be_bytes());
        h[24..28].copy_from_slice(&length.to_be_bytes());
        h
    }

    /// Queue a request (header + payload) into `out` and remember it; returns its cookie.
    pub fn encode(
        &mut self,
        out: &mut Vec<u8>,
        flags: u16,
        cmd: u16,
        offset: u64,
        length: u32,
        payload: &[u8],
    ) -> u64 {
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        out.extend_from_slice(&Self::header(flags, cmd, cookie, offset, length));
        out.extend_from_slice(payload);
        if cmd != CMD_DISC {
            self.pending.insert(
                cookie,
                Pending {
                    cmd,
                    offset,
                    length,
                },
            );
        }
        cookie
    }

    /// Send one request; returns its cookie.
    pub fn send(&mut self, flags: u16, cmd: u16, offset: u64, length: u32, payload: &[u8]) -> u64 {
        let mut b = Vec::with_capacity(28 + payload.len());
        let c = self.encode(&mut b, flags, cmd, offset, length, payload);
        self.s.write_all(&b).expect("sending request");
        c
    }

    /// Send raw bytes (for malformed traffic).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("sending raw bytes");
    }

    /// Read the next complete reply (any cookie).
    pub fn recv(&mut self) -> Reply {
        loop {
            let mut m = [0u8; 4];
            self.s
                .read_exact(&mut m)
                .unwrap_or_else(|e| panic!("reading reply magic: {e}"));
            match u32::from_be_bytes(m) {
                SIMPLE_REPLY_MAGIC => {
                    let h = read_n(&mut self.s, 12, "simple reply");
                    let error = be32(&h[0..4]);
                    let cookie = be64(&h[4..12]);
                    let p = self.pending.remove(&cookie).unwrap_or_else(|| {
                        panic!("simple reply for unknown cookie {cookie:#x} (error {error})")
                    });
                    let data = if p.cmd == CMD_READ && error == 0 {
                        read_n(&mut self.s, p.length as usize, "READ data")
                    } else {
                        Vec::new()
                    };
                    return Reply {
                        cookie,
                        error,
                        data,
                        chunks: Vec::new(),
                    };
                }
                STRUCTURED_REPLY_MAGIC => {
                    assert!(
                        self.structured,
                        "structured reply without NBD_OPT_STRUCTURED_REPLY"
                    );
                    let h = read_n(&mut self.s, 16, "structured chunk header");
                    let flags = be16(&h[0..2]);
                    let ty = be16(&h[2..4]);
                    let cookie = be64(&h[4..12]);
                    let len = be32(&h[12..16]) as usize;
                    let payload = read_n(&mut self.s, len, "structured chunk payload");
                    let p = *self.pending.get(&cookie).unwrap_or_else(|| {
                        panic!("structured chunk type {ty} for unknown cookie {cookie:#x}")
                    });
                    let r = self.partial.entry(cookie).or_insert_with(|| Reply {
                        cookie,
                        error: 0,
                        data: if p.cmd == CMD_READ {
                            vec![0; p.length as usize]
                        } else {
                            Vec::new()
                        },
                        chunks: Vec::new(),
                    });
                    match ty {
                        REPLY_TYPE_OFFSET_DATA => {
                            let off = be64(&payload[0..8]);
                            let d = &payload[8..];
                            let at = off
                                .checked_sub(p.offset)
                                .expect("OFFSET_DATA before the request")
                                as usize;
                            assert!(at + d.len() <= r.data.len(), "OFFSET_DATA past the request");
                            r.data[at..at + d.len()].copy_from_slice(d);
                        }
                        REPLY_TYPE_OFFSET_HOLE => {
                            let off = be64(&payload[0..8]);
                            let n = be32(&payload[8..12]) as usize;
                            let at = (off - p.offset) as usize;
                            r.data[at..at + n].fill(0);
                        }
                        t if t & 0x8000 != 0 => {
                            r.error = be32(&payload[0..4]);
                        }
                        _ => {}
                    }
                    r.chunks.push(Chunk { flags, ty, payload });
                    if flags & REPLY_FLAG_DONE != 0 {
                        self.pending.remove(&cookie);
                        return self.partial.remove(&cookie).unwrap();
                    }
                }
                other => panic!("bad reply magic {other:#x}"),
            }
        }
    }

    /// Send one request and wait for its reply (which must be the next one).
    pub fn request(
        &mut self,
        flags: u16,
        cmd: u16,
        offset: u64,
        length: u32,
        payload: &[u8],
    ) -> Reply {
        let c = self.send(flags, cmd, offset, length, payload);
        let r = self.recv();
        assert_eq!(r.cookie, c, "reply cookie");
        r
    }

    pub fn read(&mut self, offset: u64, length: u32) -> Vec<u8> {
        let r = self.request(0, CMD_READ, offset, length, &[]);
        assert_eq!(
            r.error, 0,
            "READ at {offset} length {length} failed with errno {}",
            r.error
        );
        r.data
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) {
        let r = self.request(0, CMD_WRITE, offset, data.len() as u32, data);
        assert_eq!(
            r.error,
            0,
            "WRITE at {offset} length {} failed with errno {}",
            data.len(),
            r.error
        );
    }

    pub fn flush(&mut self) {
        let r = self.request(0, CMD_FLUSH, 0, 0, &[]);
        assert_eq!(r.error, 0, "FLUSH failed with errno {}", r.error);
    }

    /// Send NBD_CMD_DISC and expect the server to close.
    pub fn disconnect(mut self) {
        let h = Self::header(0, CMD_DISC, 0, 0, 0);
        self.s.write_all(&h).expect("sending DISC");
        let rest = expect_closed(&mut self.s, Duration::from_secs(10), "after DISC");
        assert!(
            rest.is_empty(),
            "server replied {} bytes to DISC",
            rest.len()
        );
    }
}
