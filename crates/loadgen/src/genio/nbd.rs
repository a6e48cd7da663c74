//! An NBD client target: fixed-newstyle handshake with NBD_OPT_GO, then many requests in
//! flight on one connection, matched to replies by cookie (simple replies: structured
//! replies are not negotiated). Wire format from `nbd-proto`.
//!
//! URIs: `nbd+unix:///EXPORT?socket=PATH` and `nbd://HOST[:PORT]/EXPORT` (port 10809).
//!
//! One task writes (batching every queued request into one socket write), one reads replies.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nbd_proto as p;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::{IoError, IoFuture, IoTarget};

/// Where an NBD URI points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NbdAddr {
    Unix(String),
    Tcp(String),
}

/// Parse an NBD URI into (address, export name).
pub fn parse_uri(uri: &str) -> Result<(NbdAddr, String), IoError> {
    let bad = |why: &str| {
        IoError::Setup(format!(
            "NBD URI {uri:?}: {why}; allowed: nbd://HOST[:PORT]/EXPORT or nbd+unix:///EXPORT?socket=PATH"
        ))
    };
    if let Some(rest) = uri.strip_prefix("nbd+unix://") {
        let (path, query) = rest.split_once('?').ok_or_else(|| bad("no ?socket=PATH"))?;
        let export = path.strip_prefix('/').unwrap_or(path).to_string();
        let socket = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("socket="))
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("no socket=PATH"))?;
        Ok((NbdAddr::Unix(socket.to_string()), export))
    } else if let Some(rest) = uri.strip_prefix("nbd://") {
        let (hostport, export) = rest.split_once('/').unwrap_or((rest, ""));
        if hostport.is_empty() {
            return Err(bad("no host"));
        }
        let has_port = if let Some(after) = hostport.strip_prefix('[') {
            after
                .split_once(']')
                .is_some_and(|(_, r)| r.starts_with(':'))
        } else {
            hostport.contains(':')
        };
        let addr = if has_port {
            hostport.to_string()
        } else {
            format!("{hostport}:10809")
        };
        Ok((NbdAddr::Tcp(addr), export.to_string()))
    } else {
        Err(bad("unknown scheme"))
    }
}

type Reply = oneshot::Sender<Result<(), IoError>>;

#[derive(Default)]
struct Pending {
    /// cookie → (command, offset, bytes of READ data that follow a successful reply, waiter)
    map: HashMap<u64, (u16, u64, u32, Reply)>,
    closed: Option<String>,
}

impl Pending {
    fn close(&mut self, why: &str) {
        if self.closed.is_none() {
            self.closed = Some(why.to_string());
        }
        for (_, (_, _, _, tx)) in self.map.drain() {
            let _ = tx.send(Err(IoError::Closed(why.to_string())));
        }
    }
}

/// A connected NBD export.
pub struct NbdTarget {
    uri: String,
    size: u64,
    can_flush: bool,
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<Mutex<Pending>>,
    cookie: AtomicU64,
    pattern: Arc<Vec<u8>>,
}

const PATTERN: usize = 64 * 1024;

impl NbdTarget {
    pub async fn connect(uri: &str) -> Result<NbdTarget, IoError> {
        let (addr, export) = parse_uri(uri)?;
        let ctx = |e: std::io::Error| IoError::Setup(format!("connecting to {uri}: {e}"));
        match addr {
            NbdAddr::Unix(path) => {
                let s = tokio::net::UnixStream::connect(&path).await.map_err(ctx)?;
                NbdTarget::start(s, uri, &export).await
            }
            NbdAddr::Tcp(a) => {
                let s = tokio::net::TcpStream::connect(&a).await.map_err(ctx)?;
                let _ = s.set_nodelay(true);
                NbdTarget::start(s, uri, &export).await
            }
        }
    }

    async fn start<S>(mut s: S, uri: &str, export: &str) -> Result<NbdTarget, IoError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (size, flags) = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            handshake(&mut s, export),
        )
        .await
        .map_err(|_| IoError::Setup(format!("{uri}: the handshake took over 30 s")))?
        .map_err(|e| match e {
            IoError::Setup(m) => IoError::Setup(format!("{uri}: {m}")),
            e => IoError::Setup(format!("{uri}: handshake: {e}")),
        })?;
        if flags & p::FLAG_READ_ONLY != 0 {
            return Err(IoError::Setup(format!(
                "{uri}: the export is read-only; the ramp writes"
            )));
        }
        let (r, w) = tokio::io::split(s);
        let (tx, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(Mutex::new(Pending::default()));
        tokio::spawn(writer(w, rx, pending.clone()));
        tokio::spawn(reader(r, pending.clone()));
        let mut pattern = vec![0u8; PATTERN];
        let mut rng = super::Rng::new(0x0dd_ba11);
        for c in pattern.chunks_mut(8) {
            c.copy_from_slice(&rng.next_u64().to_le_bytes()[..c.len()]);
        }
        Ok(NbdTarget {
            uri: uri.to_string(),
            size,
            can_flush: flags & p::FLAG_SEND_FLUSH != 0,
            tx,
            pending,
            cookie: AtomicU64::new(1),
            pattern: Arc::new(pattern),
        })
    }

    fn submit(&self, command: u16, offset: u64, len: u32) -> IoFuture {
        let cookie = self.cookie.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let sent = (|| {
            let mut pend = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(why) = &pend.closed {
                return Err(IoError::Closed(why.clone()));
            }
            let data = if command == p::CMD_READ { len } else { 0 };
            pend.map.insert(cookie, (command, offset, data, tx));
            drop(pend);
            let payload = if command == p::CMD_WRITE {
                len as usize
            } else {
                0
            };
            let mut msg = Vec::with_capacity(p::REQUEST_HEADER_LEN + payload);
            p::encode_request(
                &mut msg,
                &p::Request {
                    flags: 0,
                    command,
                    cookie,
                    offset,
                    length: len,
                },
            );
            let mut left = payload;
            while left > 0 {
                let n = left.min(PATTERN);
                msg.extend_from_slice(&self.pattern[..n]);
                left -= n;
            }
            self.tx
                .send(msg)
                .map_err(|_| IoError::Closed("the writer task ended".into()))
        })();
        if let Err(e) = sent {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .map
                .remove(&cookie);
            return Box::pin(async move { Err(e) });
        }
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err(IoError::Closed("no reply".into())))
        })
    }
}

impl Drop for NbdTarget {
    fn drop(&mut self) {
        let mut msg = Vec::with_capacity(p::REQUEST_HEADER_LEN);
        p::encode_request(
            &mut msg,
            &p::Request {
                flags: 0,
                command: p::CMD_DISC,
                cookie: 0,
                offset: 0,
                length: 0,
            },
        );
        let _ = self.tx.send(msg);
    }
}

impl IoTarget for NbdTarget {
    fn size(&self) -> u64 {
        self.size
    }
    fn read(&self, offset: u64, len: u32) -> IoFuture {
        self.submit(p::CMD_READ, offset, len)
    }
    fn write(&self, offset: u64, len: u32) -> IoFuture {
        self.submit(p::CMD_WRITE, offset, len)
    }
    fn flush(&self) -> IoFuture {
        if !self.can_flush {
            return Box::pin(async { Ok(()) });
        }
        self.submit(p::CMD_FLUSH, 0, 0)
    }
    fn describe(&self) -> String {
        if self.can_flush {
            self.uri.clone()
        } else {
            format!("{} (no FLUSH: the server does not offer it)", self.uri)
        }
    }
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Fixed newstyle with NBD_OPT_GO; returns (export size, transmission flags).
async fn handshake<S>(s: &mut S, export: &str) -> Result<(u64, u16), IoError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let io = |e: std::io::Error| IoError::Setup(e.to_string());
    let mut g = [0u8; 18];
    s.read_exact(&mut g).await.map_err(io)?;
    if be64(&g[0..8]) != p::NBDMAGIC || be64(&g[8..16]) != p::IHAVEOPT {
        return Err(IoError::Setup(
            "not an NBD newstyle server (bad greeting)".into(),
        ));
    }
    let hflags = be16(&g[16..18]);
    if hflags & p::FLAG_FIXED_NEWSTYLE == 0 {
        return Err(IoError::Setup(
            "the server is not fixed-newstyle (required for NBD_OPT_GO)".into(),
        ));
    }
    let mut cflags = p::FLAG_C_FIXED_NEWSTYLE;
    if hflags & p::FLAG_NO_ZEROES != 0 {
        cflags |= p::FLAG_C_NO_ZEROES;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&cflags.to_be_bytes());
    let name = export.as_bytes();
    let mut data = Vec::with_capacity(6 + name.len());
    data.extend_from_slice(&(name.len() as u32).to_be_bytes());
    data.extend_from_slice(name);
    data.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&p::IHAVEOPT.to_be_bytes());
    out.extend_from_slice(&p::OPT_GO.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(&data);
    s.write_all(&out).await.map_err(io)?;
    let mut info: Option<(u64, u16)> = None;
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).await.map_err(io)?;
        if be64(&h[0..8]) != p::REPLY_MAGIC {
            return Err(IoError::Setup("bad option reply magic".into()));
        }
        let (ty, len) = (be32(&h[12..16]), be32(&h[16..20]));
        if len > 1 << 20 {
            return Err(IoError::Setup(format!("option reply of {len} bytes")));
        }
        let mut d = vec![0u8; len as usize];
        s.read_exact(&mut d).await.map_err(io)?;
        match ty {
            p::REP_ACK => break,
            p::REP_INFO if d.len() >= 12 && be16(&d[0..2]) == p::INFO_EXPORT => {
                info = Some((be64(&d[2..10]), be16(&d[10..12])));
            }
            p::REP_INFO => {}
            t if t & (1 << 31) != 0 => {
                let msg = String::from_utf8_lossy(&d).into_owned();
                let what = match t {
                    p::REP_ERR_UNKNOWN => format!("no export named {export:?}"),
                    p::REP_ERR_UNSUP => "the server does not support NBD_OPT_GO".into(),
                    _ => format!("NBD_OPT_GO refused (reply type 0x{t:x})"),
                };
                return Err(IoError::Setup(if msg.is_empty() {
                    what
                } else {
                    format!("{what}: {msg}")
                }));
            }
            t => return Err(IoError::Setup(format!("unexpected option reply type {t}"))),
        }
    }
    info.ok_or_else(|| IoError::Setup("the server acknowledged GO without export info".into()))
}

async fn writer<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Arc<Mutex<Pending>>,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(256 * 1024);
    while let Some(m) = rx.recv().await {
        buf.clear();
        buf.extend_from_slice(&m);
        while buf.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(m) => buf.extend_from_slice(&m),
                Err(_) => break,
            }
        }
        if let Err(e) = w.write_all(&buf).await {
            pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .close(&format!("writing to the server: {e}"));
            return;
        }
    }
    let _ = w.shutdown().await;
}

async fn reader<R: AsyncRead + Unpin>(r: R, pending: Arc<Mutex<Pending>>) {
    let why = read_replies(r, &pending).await;
    pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .close(&why);
}

async fn read_replies<R: AsyncRead + Unpin>(r: R, pending: &Mutex<Pending>) -> String {
    let mut r = BufReader::with_capacity(256 * 1024, r);
    let mut scratch = vec![0u8; 64 * 1024];
    loop {
        let mut h = [0u8; 16];
        if let Err(e) = r.read_exact(&mut h).await {
            return if e.kind() == std::io::ErrorKind::UnexpectedEof {
                "the server closed the connection".into()
            } else {
                format!("reading from the server: {e}")
            };
        }
        if be32(&h[0..4]) != p::SIMPLE_REPLY_MAGIC {
            return format!("bad reply magic 0x{:08x}", be32(&h[0..4]));
        }
        let (errno, cookie) = (be32(&h[4..8]), be64(&h[8..16]));
        let entry = pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .remove(&cookie);
        let Some((cmd, offset, data, tx)) = entry else {
            return format!("a reply for unknown cookie {cookie}");
        };
        if errno == 0 && data > 0 {
            let mut left = data as usize;
            while left > 0 {
                let n = left.min(scratch.len());
                if let Err(e) = r.read_exact(&mut scratch[..n]).await {
                    let _ = tx.send(Err(IoError::Closed(e.to_string())));
                    return format!("reading READ data: {e}");
                }
                left -= n;
            }
        }
        let _ = tx.send(if errno == 0 {
            Ok(())
        } else {
            Err(IoError::Nbd {
                op: p::command_name(cmd),
                offset,
                errno,
            })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn talks_to_the_embedded_node() {
        // A real storage node, served over NBD on a unix socket (the NBD node fixture).
        let node = nbd_server::testing::NbdTestNode::start(
            "[[volume]]\nname = \"v\"\nsize = \"64MiB\"\n",
            "loadgen-genio-nbd",
        );
        let uri = node.uri("v");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t = NbdTarget::connect(&uri).await.unwrap();
            assert_eq!(t.size(), 64 << 20);
            assert_eq!(t.describe(), uri);
            // Many in flight on one connection, replies matched by cookie.
            let futs: Vec<IoFuture> = (0..64)
                .map(|i| {
                    if i % 2 == 0 {
                        t.write(i * 8192, 8192)
                    } else {
                        t.read(i * 8192, 8192)
                    }
                })
                .collect();
            for f in futs {
                f.await.unwrap();
            }
            t.write(1 << 20, 1 << 20).await.unwrap();
            t.flush().await.unwrap();
            // The server's errors come back as errors, and the session goes on.
            let e = t.read(64 << 20, 8192).await.unwrap_err();
            assert!(
                matches!(
                    e,
                    IoError::Nbd {
                        op: "READ",
                        errno: p::EINVAL,
                        ..
                    }
                ),
                "{e:?}"
            );
            t.read(0, 4096).await.unwrap();
            let e = NbdTarget::connect(&uri.replace("///v?", "///nope?"))
                .await
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("no export named \"nope\""), "{e}");
            let e = NbdTarget::connect("nbd+unix:///v?socket=/nonexistent/s")
                .await
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("connecting to"), "{e}");
        });
        let data = std::fs::read(node.volume_path("v")).unwrap();
        assert_eq!(data.len(), 64 << 20);
        assert_ne!(
            &data[0..8192],
            &[0u8; 8192][..],
            "the writes reached the volume"
        );
    }

    #[test]
    fn uris() {
        assert_eq!(
            parse_uri("nbd+unix:///vol1?socket=/tmp/s.sock").unwrap(),
            (NbdAddr::Unix("/tmp/s.sock".into()), "vol1".into())
        );
        assert_eq!(
            parse_uri("nbd://10.0.0.2/epic").unwrap(),
            (NbdAddr::Tcp("10.0.0.2:10809".into()), "epic".into())
        );
        assert_eq!(
            parse_uri("nbd://h:1234/e").unwrap(),
            (NbdAddr::Tcp("h:1234".into()), "e".into())
        );
        assert_eq!(
            parse_uri("nbd://[::1]/e").unwrap().0,
            NbdAddr::Tcp("[::1]:10809".into())
        );
        for bad in [
            "nbd+unix:///v",
            "nbd:///v",
            "http://x/y",
            "nbd+unix:///v?x=1",
        ] {
            let e = parse_uri(bad).unwrap_err().to_string();
            assert!(e.contains("allowed: nbd://"), "{bad}: {e}");
        }
    }
}
