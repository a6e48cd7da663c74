//! A running `qoslab nfs serve` or `qoslab iscsi serve` (the [`ServeProc`] guard) and the
//! raw NFS test client over TCP ([`Wire`]) for the front ends' end-to-end tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::ops::{Deref, DerefMut};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use nfs_proto::client::{self, Transport};
use nfs_proto::nfs3::StableHow;
use nfs_proto::record;
use nfs_proto::rpc::Cred;
use nfs_proto::xdr::Reader;

use crate::util::QOSLAB;

/// `qoslab PROTOCOL serve` on a loopback port; killed on drop.
pub struct ServeProc {
    child: Option<Child>,
    pub port: u16,
    /// The subcommand and its fixed options (`nfs serve`, `iscsi serve --iqn ...`).
    serve: Vec<String>,
    /// What its ready line says just before ` on ADDR`.
    ready: &'static str,
    args: Vec<String>,
    log: Arc<Mutex<Vec<String>>>,
}

/// The NFS server's guard (its `url` is NFS's).
pub type NfsProc = ServeProc;

impl ServeProc {
    /// `qoslab SERVE... ARGS... --listen 127.0.0.1:0`, ready when a stderr line holds
    /// `ready` followed by ` on ADDR`.
    pub fn start_serve(serve: &[&str], ready: &'static str, args: Vec<String>) -> ServeProc {
        let mut p = ServeProc {
            child: None,
            port: 0,
            serve: serve.iter().map(|s| s.to_string()).collect(),
            ready,
            args,
            log: Arc::default(),
        };
        p.spawn("127.0.0.1:0");
        p
    }

    /// Starts with these `--export` values on an ephemeral port.
    pub fn start(exports: &[String]) -> NfsProc {
        NfsProc::start_with(exports, &[])
    }

    /// [`start`](Self::start) with more options of `qoslab nfs serve`.
    pub fn start_with(exports: &[String], more: &[&str]) -> NfsProc {
        let mut args: Vec<String> = more.iter().map(|s| s.to_string()).collect();
        for e in exports {
            args.push("--export".to_string());
            args.push(e.clone());
        }
        ServeProc::start_serve(&["nfs", "serve"], "serving NFSv3", args)
    }

    fn spawn(&mut self, listen: &str) {
        let mut cmd = Command::new(QOSLAB);
        cmd.args(&self.serve)
            .args(["--listen", listen])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: prctl in the child before exec: the server dies with the test's thread.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let what = format!("qoslab {}", self.serve[..2].join(" "));
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what}: {e}"));
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let log = self.log.clone();
        let ready = self.ready;
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let after = line.split_once(ready).map(|(_, rest)| rest);
                if let Some(addr) = after.and_then(|r| r.split(" on ").nth(1)) {
                    let port = addr
                        .split_whitespace()
                        .next()
                        .and_then(|a| a.rsplit(':').next())
                        .and_then(|p| p.parse::<u16>().ok());
                    let _ = tx.send(port);
                }
                log.lock().unwrap().push(line);
            }
        });
        self.child = Some(child);
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Some(port)) => self.port = port,
            _ => panic!("{what} did not start; its log:\n{}", self.log()),
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// A libnfs URL for `path` (export path plus file) on this server.
    pub fn url(&self, path: &str) -> String {
        format!(
            "nfs://127.0.0.1{path}?nfsport={p}&mountport={p}",
            p = self.port
        )
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts again on the same port (after `kill9` or `stop`).
    pub fn restart(&mut self) {
        self.kill9();
        let listen = format!("127.0.0.1:{}", self.port);
        self.spawn(&listen);
    }

    /// SIGTERM and wait; returns the log (its last line has the call counts).
    pub fn stop(&mut self) -> String {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
        std::thread::sleep(Duration::from_millis(100));
        self.log()
    }
}

impl Drop for ServeProc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Call records over one TCP connection, framed (record marking) both ways.
pub struct Tcp {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Transport for Tcp {
    fn send(&mut self, rec: &[u8]) {
        self.s
            .write_all(&client::frame(rec))
            .expect("sending a call");
    }

    fn recv(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some((rec, used)) = record::next_record(&self.buf, 1 << 24).unwrap() {
                let rec = rec.into_owned();
                self.buf.drain(..used);
                return Some(rec);
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk).expect("reading a reply");
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The workspace's raw NFS client ([`nfs_proto::client::Client`]) on one TCP connection:
/// AUTH_SYS root unless told otherwise (its `cred`), from a reserved source port as the
/// kernel client (and root's libnfs) connects, or from any port ([`Wire::connect_from`]).
pub struct Wire(client::Client<Tcp>);

impl Deref for Wire {
    type Target = client::Client<Tcp>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Wire {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// AUTH_SYS for `uid`, `gid` and supplementary `gids`.
pub fn sys_cred(uid: u32, gid: u32, gids: &[u32]) -> Cred {
    client::sys_cred(b"it", uid, gid, gids)
}

/// A TCP connection to `to` from `from`'s address; from a reserved port (below 1024,
/// which needs root) when `reserved`, else from one the kernel picks.
pub fn connect_from(from: std::net::IpAddr, to: std::net::SocketAddr, reserved: bool) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let ports: Vec<u16> = if reserved {
        // a different start per process and call, so parallel tests rarely collide
        let start = (std::process::id() as u16).wrapping_mul(31) % 400;
        (0..400).map(|i| 600 + (start + i) % 400).collect()
    } else {
        vec![0]
    };
    let mut last = None;
    for p in ports {
        let s = Socket::new(Domain::for_address(to), Type::STREAM, None).expect("a socket");
        s.set_reuse_address(true).unwrap();
        if let Err(e) = s.bind(&std::net::SocketAddr::new(from, p).into()) {
            last = Some(e);
            continue;
        }
        match s.connect(&to.into()) {
            Ok(()) => return s.into(),
            Err(e) => last = Some(e),
        }
    }
    panic!("connecting to {to} from {from} (reserved port: {reserved}): {last:?}")
}

impl Wire {
    /// From a reserved port of 127.0.0.1, as root.
    pub fn connect(port: u16) -> Wire {
        Wire::connect_from("127.0.0.1".parse().unwrap(), port, true)
    }

    /// From `from` (a loopback address), a reserved port or not, as root.
    pub fn connect_from(from: std::net::IpAddr, port: u16, reserved: bool) -> Wire {
        let to = std::net::SocketAddr::new("127.0.0.1".parse().unwrap(), port);
        let s = connect_from(from, to, reserved);
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.set_nodelay(true).unwrap();
        let tcp = Tcp { s, buf: Vec::new() };
        Wire(client::Client::new(tcp, sys_cred(0, 0, &[])))
    }

    /// Sends raw bytes (framing included).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.0.transport.s.write_all(bytes).expect("sending bytes");
    }

    /// Sends as much of `bytes` as the server takes within `limit` (a client pipelining
    /// more than the server reads); returns how much went.
    pub fn send_all_within(&mut self, bytes: &[u8], limit: Duration) -> usize {
        let s = &mut self.0.transport.s;
        let deadline = std::time::Instant::now() + limit;
        let mut sent = 0;
        while sent < bytes.len() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            s.set_write_timeout(Some(left)).unwrap();
            match s.write(&bytes[sent..]) {
                Ok(n) if n > 0 => sent += n,
                _ => break,
            }
        }
        s.set_write_timeout(None).unwrap();
        sent
    }

    /// Close the connection with a reset (SO_LINGER 0): what the server sees of a client
    /// host that went away, whatever the client had queued.
    pub fn reset(self) {
        socket2::SockRef::from(&self.0.transport.s)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
    }

    /// Whether the server closed the connection (EOF within the read timeout).
    pub fn closed_by_server(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.0.transport.s.read(&mut b), Ok(0) | Err(_))
    }

    /// The next reply: (xid, accept_stat or 100 + reject_stat, body).
    pub fn recv(&mut self) -> (u32, u32, Vec<u8>) {
        let r = self.0.reply();
        (r.xid, r.accept, r.body)
    }

    /// One call, which must be accepted: its reply's body.
    pub fn call(&mut self, prog: u32, vers: u32, p: u32, args: &[u8]) -> Vec<u8> {
        let r = self.0.call(prog, vers, p, args);
        assert_eq!(r.accept, 0);
        r.body
    }

    /// NFSv3 procedure `p`: its status (Err: the call was not accepted, 100 + reject_stat
    /// for a denied one) and the body after it.
    pub fn nfs(&mut self, p: u32, args: &[u8]) -> Result<(u32, Vec<u8>), u32> {
        let r = self.0.nfs(p, args);
        if r.accept != 0 {
            return Err(r.accept);
        }
        let mut rd = r.reader();
        let st = rd.u32("status").unwrap();
        Ok((st, rd.remaining().to_vec()))
    }

    /// MNT: Ok(root handle) or Err(mountstat, or 100 + reject_stat when denied).
    pub fn try_mount(&mut self, path: &str) -> Result<Vec<u8>, u32> {
        self.0.mnt(path)
    }

    pub fn mount(&mut self, path: &str) -> Vec<u8> {
        self.0
            .mnt(path)
            .unwrap_or_else(|e| panic!("MNT {path}: {e}"))
    }

    /// CREATE (UNCHECKED, no attributes set): the new handle.
    pub fn create(&mut self, dir: &[u8], name: &str) -> Vec<u8> {
        let attrs = client::sattr(None, None, None, None);
        self.0
            .create_with(dir, name, 0, &attrs)
            .unwrap_or_else(|e| panic!("CREATE {name}: {e}"))
    }

    /// READ: (status, data).
    pub fn read(&mut self, fh: &[u8], offset: u64, count: u32) -> (u32, Vec<u8>) {
        match self.0.read(fh, offset, count) {
            Ok((data, _eof)) => (0, data),
            Err(st) => (st, Vec::new()),
        }
    }
}

pub use client::sattr;

/// The status and (for WRITE/COMMIT) the verifier in a WRITE or COMMIT reply body.
pub fn status_and_verifier(body: &[u8], write: bool) -> (u32, Option<[u8; 8]>) {
    let mut r = Reader::new(body);
    let st = r.u32("status").unwrap();
    if st != 0 {
        return (st, None);
    }
    client::skip_wcc(&mut r);
    if write {
        r.u32("count").unwrap();
        r.u32("committed").unwrap();
    }
    (0, Some(r.fixed(8, "verf").unwrap().try_into().unwrap()))
}

/// Write UNSTABLE + COMMIT through a raw client on `port` (export `junction`), SIGKILL the
/// server (`kill`) mid-stream, start it again (`restart`, which returns its NFS port):
/// every byte a COMMIT acknowledged reads back through the handle from before, and the
/// write verifier changed.
pub fn committed_writes_survive_kill9(
    port: u16,
    junction: &str,
    kill: impl FnOnce(),
    restart: impl FnOnce() -> u16,
    log: impl Fn() -> String,
) {
    use crate::util::{first_difference, pattern};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let mut w = Wire::connect(port);
    let root = w.mount(junction);
    let fh = w.create(&root, "journal");
    const BLOCK: usize = 65536;
    const ROUND: u64 = 8; // UNSTABLE writes per COMMIT
    let data = Arc::new(pattern(9, 64 << 20));
    let committed = Arc::new(AtomicU64::new(0));
    let verifier = Arc::new(std::sync::Mutex::new(None));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (data, committed, verifier, stop, fh) = (
            data.clone(),
            committed.clone(),
            verifier.clone(),
            stop.clone(),
            fh.clone(),
        );
        std::thread::spawn(move || {
            let mut off = 0u64;
            let go = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loop {
                if stop.load(Ordering::Relaxed)
                    || off as usize + ROUND as usize * BLOCK > data.len()
                {
                    return;
                }
                let end = off + ROUND * BLOCK as u64;
                let mut xids = Vec::new();
                for i in 0..ROUND {
                    let o = (off + i * BLOCK as u64) as usize;
                    xids.push(w.send_write(
                        &fh,
                        o as u64,
                        StableHow::Unstable,
                        &data[o..o + BLOCK],
                    ));
                }
                let cx = w.send_commit(&fh);
                for _ in 0..=ROUND {
                    let (xid, accept, body) = w.recv();
                    assert_eq!(accept, 0);
                    let (st, v) = status_and_verifier(&body, xid != cx);
                    assert_eq!(st, 0);
                    if xid == cx {
                        *verifier.lock().unwrap() = v;
                        committed.store(end, Ordering::SeqCst); // acknowledged: must survive
                    }
                }
                off = end;
            }));
            drop(go); // the connection dies with the server
        })
    };
    while committed.load(Ordering::SeqCst) < 4 << 20 {
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            !writer.is_finished(),
            "the writer stopped early; server log:\n{}",
            log()
        );
    }
    kill(); // SIGKILL while writes and COMMITs are in flight
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let acked = committed.load(Ordering::SeqCst);
    let v_before = verifier.lock().unwrap().expect("a COMMIT was acknowledged");
    let port = restart();
    let mut w = Wire::connect(port);
    // the handle from before the restart still names the file
    let mut got = Vec::with_capacity(acked as usize);
    while (got.len() as u64) < acked {
        let (st, chunk) = w.read(&fh, got.len() as u64, 65536);
        assert_eq!(st, 0, "READ after restart");
        assert!(
            !chunk.is_empty(),
            "file ends at {} but {acked} bytes were committed",
            got.len()
        );
        got.extend_from_slice(&chunk);
    }
    got.truncate(acked as usize);
    assert!(
        got[..] == data[..acked as usize],
        "committed data lost: {:?}",
        first_difference(&got, &data[..acked as usize])
    );
    let xid = w.send_write(&fh, acked, StableHow::Unstable, b"x");
    let (rx, _, body) = w.recv();
    assert_eq!(rx, xid);
    let (_, v_after) = status_and_verifier(&body, true);
    assert_ne!(
        v_after,
        Some(v_before),
        "a restarted server must show a new write verifier"
    );
}
