//! A test client that speaks RPC records to a `Service` directly (no sockets): every
//! call is encoded as a client would send it, and every reply is decoded from bytes.

#![allow(dead_code)]

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use nfs_proto::nfs3::{self, proc_, StableHow};
use nfs_proto::rpc::{self, AuthSys, Cred};
use nfs_proto::xdr::{put_bool, put_opaque, put_u32, put_u64, Reader};
use nfs_proto::{mount, record};
use nfs_server::{Config, ExportSpec, Peer, Policy, Service};

pub struct Dir(pub PathBuf);
impl Dir {
    pub fn new(tag: &str) -> Dir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "nfs-server-test-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An export id for `junction`, the same for the life of the test process (as the control
/// plane stores one per volume).
pub fn export_id(junction: &str) -> u32 {
    static IDS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut ids = IDS.lock().unwrap();
    match ids.iter().position(|j| j == junction) {
        Some(i) => i as u32 + 1,
        None => {
            ids.push(junction.to_string());
            ids.len() as u32
        }
    }
}

pub fn spec(junction: &str, root: &Path, quota: Option<u64>) -> ExportSpec {
    ExportSpec {
        id: export_id(junction),
        path: junction.into(),
        root: root.to_path_buf(),
        quota,
        policy: Policy::default(),
    }
}

pub fn service() -> Arc<Service> {
    Arc::new(Service::new(Config::default()).unwrap())
}

/// A decoded reply: `accept` is RPC's accept_stat (0 = SUCCESS) or, for a denied
/// reply, 100 + reject_stat; `body` follows the header.
#[derive(Debug)]
pub struct Reply {
    pub xid: u32,
    pub accept: u32,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn reader(&self) -> Reader<'_> {
        Reader::new(&self.body)
    }
    /// The NFS/MOUNT status (first word of the body).
    pub fn status(&self) -> u32 {
        assert_eq!(self.accept, 0, "call not accepted: {self:?}");
        self.reader().u32("status").unwrap()
    }
}

pub fn parse_reply(rec: &[u8]) -> Reply {
    let mut r = Reader::new(rec);
    let xid = r.u32("xid").unwrap();
    assert_eq!(r.u32("mtype").unwrap(), rpc::REPLY);
    match r.u32("reply_stat").unwrap() {
        0 => {
            r.u32("verf flavor").unwrap();
            r.opaque(400, "verf").unwrap();
            let accept = r.u32("accept").unwrap();
            Reply {
                xid,
                accept,
                body: r.remaining().to_vec(),
            }
        }
        _ => {
            let reject = r.u32("reject").unwrap();
            Reply {
                xid,
                accept: 100 + reject,
                body: r.remaining().to_vec(),
            }
        }
    }
}

pub struct Client {
    pub svc: Arc<Service>,
    pub peer: Peer,
    pub cred: Cred,
    xid: u32,
}

pub fn root_cred() -> Cred {
    Cred::Sys(AuthSys {
        stamp: 1,
        machine: b"test".to_vec(),
        uid: 0,
        gid: 0,
        gids: vec![],
    })
}

impl Client {
    pub fn new(svc: Arc<Service>) -> Client {
        Client::from(svc, "127.0.0.1")
    }
    pub fn from(svc: Arc<Service>, addr: &str) -> Client {
        let addr: IpAddr = addr.parse().unwrap();
        Client {
            svc,
            // a reserved port, as the kernel client's and root's libnfs
            peer: Peer {
                addr,
                port: 700,
                conn: 1,
            },
            cred: root_cred(),
            xid: 0,
        }
    }

    /// Sends raw record bytes; returns the reply record if one came.
    pub fn raw(&self, rec: &[u8]) -> Option<Reply> {
        let mut out = Vec::new();
        self.svc.handle(&self.peer, rec, &mut out);
        if out.is_empty() {
            return None;
        }
        let (body, used) = record::next_record(&out, 1 << 24)
            .unwrap()
            .expect("a whole record");
        assert_eq!(used, out.len(), "exactly one reply record");
        Some(parse_reply(&body))
    }

    pub fn call(&mut self, prog: u32, vers: u32, p: u32, args: &[u8]) -> Reply {
        self.xid += 1;
        let mut rec = Vec::new();
        rpc::encode_call(&mut rec, self.xid, prog, vers, p, &self.cred, args);
        let r = self.raw(&rec).expect("a reply");
        assert_eq!(r.xid, self.xid);
        r
    }

    pub fn nfs(&mut self, p: u32, args: &[u8]) -> Reply {
        self.call(nfs3::PROGRAM, nfs3::VERSION, p, args)
    }

    /// MNT: Ok(root handle), Err(mountstat), or Err(100 + reject_stat) when the call is
    /// denied (`RPC_DENIED`: 101 is AUTH_ERROR).
    pub fn mnt(&mut self, path: &str) -> Result<Vec<u8>, u32> {
        let mut a = Vec::new();
        put_opaque(&mut a, path.as_bytes());
        let r = self.call(mount::PROGRAM, mount::VERSION, mount::MNT, &a);
        if r.accept >= 100 {
            return Err(r.accept);
        }
        let mut rd = r.reader();
        match rd.u32("mountstat").unwrap() {
            0 => Ok(rd.opaque(64, "fh").unwrap().to_vec()),
            e => Err(e),
        }
    }

    /// LOOKUP: Ok(handle) or Err(status).
    pub fn lookup(&mut self, dir: &[u8], name: &str) -> Result<Vec<u8>, u32> {
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, dir, name.as_bytes());
        let r = self.nfs(proc_::LOOKUP, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => Ok(rd.opaque(64, "fh").unwrap().to_vec()),
            e => Err(e),
        }
    }

    /// GETATTR: Ok((type, size, used, fileid)) or Err(status).
    pub fn getattr(&mut self, fh: &[u8]) -> Result<(u32, u64, u64, u64), u32> {
        let mut a = Vec::new();
        put_opaque(&mut a, fh);
        let r = self.nfs(proc_::GETATTR, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => {
                let kind = rd.u32("type").unwrap();
                for _ in 0..4 {
                    rd.u32("x").unwrap();
                }
                let size = rd.u64("size").unwrap();
                let used = rd.u64("used").unwrap();
                rd.u64("rdev").unwrap();
                rd.u64("fsid").unwrap();
                let fileid = rd.u64("fileid").unwrap();
                Ok((kind, size, used, fileid))
            }
            e => Err(e),
        }
    }

    /// CREATE (UNCHECKED, mode 0644): Ok(handle) or Err(status).
    pub fn create(&mut self, dir: &[u8], name: &str) -> Result<Vec<u8>, u32> {
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, dir, name.as_bytes());
        put_u32(&mut a, 0); // UNCHECKED
        sattr_mode(&mut a, 0o644);
        let r = self.nfs(proc_::CREATE, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => {
                assert!(rd.bool("handle follows").unwrap());
                Ok(rd.opaque(64, "fh").unwrap().to_vec())
            }
            e => Err(e),
        }
    }

    pub fn mkdir(&mut self, dir: &[u8], name: &str) -> Result<Vec<u8>, u32> {
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, dir, name.as_bytes());
        sattr_mode(&mut a, 0o755);
        let r = self.nfs(proc_::MKDIR, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => {
                assert!(rd.bool("handle follows").unwrap());
                Ok(rd.opaque(64, "fh").unwrap().to_vec())
            }
            e => Err(e),
        }
    }

    /// WRITE: Ok((count, committed, verifier)) or Err(status).
    pub fn write(
        &mut self,
        fh: &[u8],
        offset: u64,
        stable: StableHow,
        data: &[u8],
    ) -> Result<(u32, u32, [u8; 8]), u32> {
        let mut a = Vec::new();
        nfs3::encode_write(&mut a, fh, offset, stable, data);
        let r = self.nfs(proc_::WRITE, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => {
                skip_wcc(&mut rd);
                let count = rd.u32("count").unwrap();
                let committed = rd.u32("committed").unwrap();
                let v = rd.fixed(8, "verf").unwrap();
                Ok((count, committed, v.try_into().unwrap()))
            }
            e => Err(e),
        }
    }

    /// COMMIT: Ok(verifier) or Err(status).
    pub fn commit(&mut self, fh: &[u8]) -> Result<[u8; 8], u32> {
        let mut a = Vec::new();
        put_opaque(&mut a, fh);
        put_u64(&mut a, 0);
        put_u32(&mut a, 0);
        let r = self.nfs(proc_::COMMIT, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => {
                skip_wcc(&mut rd);
                Ok(rd.fixed(8, "verf").unwrap().try_into().unwrap())
            }
            e => Err(e),
        }
    }

    /// READ: Ok((data, eof)) or Err(status).
    pub fn read(&mut self, fh: &[u8], offset: u64, count: u32) -> Result<(Vec<u8>, bool), u32> {
        let mut a = Vec::new();
        put_opaque(&mut a, fh);
        put_u64(&mut a, offset);
        put_u32(&mut a, count);
        let r = self.nfs(proc_::READ, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => {
                skip_post_op(&mut rd);
                let n = rd.u32("count").unwrap();
                let eof = rd.bool("eof").unwrap();
                let data = rd.opaque(1 << 24, "data").unwrap().to_vec();
                assert_eq!(n as usize, data.len());
                Ok((data, eof))
            }
            e => Err(e),
        }
    }

    /// REMOVE or RMDIR: the status.
    pub fn remove(&mut self, dir: &[u8], name: &str, rmdir: bool) -> u32 {
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, dir, name.as_bytes());
        self.nfs(if rmdir { proc_::RMDIR } else { proc_::REMOVE }, &a)
            .status()
    }

    /// READDIR: the names, all pages.
    pub fn readdir(&mut self, dir: &[u8], plus: bool) -> Result<Vec<String>, u32> {
        let (mut names, mut cookie, mut verf) = (Vec::new(), 0u64, [0u8; 8]);
        loop {
            let page =
                self.readdir_page(dir, plus, cookie, verf, if plus { 4096 } else { 1024 })?;
            names.extend(page.names);
            (cookie, verf) = (page.cookie, page.verf);
            if page.eof {
                return Ok(names);
            }
        }
    }

    /// One READDIR (READDIRPLUS: dircount 512, maxcount `count`) page from `cookie`.
    pub fn readdir_page(
        &mut self,
        dir: &[u8],
        plus: bool,
        cookie: u64,
        verf: [u8; 8],
        count: u32,
    ) -> Result<DirPage, u32> {
        let mut a = Vec::new();
        put_opaque(&mut a, dir);
        put_u64(&mut a, cookie);
        a.extend_from_slice(&verf);
        if plus {
            put_u32(&mut a, 512);
        }
        put_u32(&mut a, count);
        let r = self.nfs(
            if plus {
                proc_::READDIRPLUS
            } else {
                proc_::READDIR
            },
            &a,
        );
        let mut rd = r.reader();
        let st = rd.u32("status").unwrap();
        if st != 0 {
            return Err(st);
        }
        skip_post_op(&mut rd);
        let mut page = DirPage {
            names: Vec::new(),
            cookie,
            verf: rd.fixed(8, "verf").unwrap().try_into().unwrap(),
            eof: false,
        };
        while rd.bool("entry").unwrap() {
            rd.u64("fileid").unwrap();
            page.names
                .push(String::from_utf8(rd.opaque(255, "name").unwrap().to_vec()).unwrap());
            page.cookie = rd.u64("cookie").unwrap();
            if plus {
                skip_post_op(&mut rd);
                if rd.bool("fh").unwrap() {
                    rd.opaque(64, "fh").unwrap();
                }
            }
        }
        page.eof = rd.bool("eof").unwrap();
        Ok(page)
    }
}

/// One page of a listing: its names, the cookie to go on from, the cookie verifier.
pub struct DirPage {
    pub names: Vec<String>,
    pub cookie: u64,
    pub verf: [u8; 8],
    pub eof: bool,
}

pub fn sattr_mode(a: &mut Vec<u8>, mode: u32) {
    put_bool(a, true);
    put_u32(a, mode);
    for _ in 0..3 {
        put_bool(a, false); // uid, gid, size
    }
    put_u32(a, 0); // atime DONT_CHANGE
    put_u32(a, 0); // mtime DONT_CHANGE
}

pub fn skip_post_op(rd: &mut Reader<'_>) {
    if rd.bool("attrs follow").unwrap() {
        rd.fixed(84, "fattr3").unwrap();
    }
}

pub fn skip_wcc(rd: &mut Reader<'_>) {
    if rd.bool("pre").unwrap() {
        rd.fixed(24, "wcc_attr").unwrap();
    }
    skip_post_op(rd);
}

impl Client {
    /// CREATE with an explicit mode: 0 UNCHECKED, 1 GUARDED (mode 0644), 2 EXCLUSIVE
    /// (verifier). Ok(handle) or Err(status).
    pub fn create_how(
        &mut self,
        dir: &[u8],
        name: &str,
        how: u32,
        verf: [u8; 8],
    ) -> Result<Vec<u8>, u32> {
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, dir, name.as_bytes());
        put_u32(&mut a, how);
        if how == 2 {
            a.extend_from_slice(&verf);
        } else {
            sattr_mode(&mut a, 0o644);
        }
        let r = self.nfs(proc_::CREATE, &a);
        let mut rd = r.reader();
        match rd.u32("status").unwrap() {
            0 => {
                assert!(rd.bool("handle follows").unwrap());
                Ok(rd.opaque(64, "fh").unwrap().to_vec())
            }
            e => Err(e),
        }
    }
}
