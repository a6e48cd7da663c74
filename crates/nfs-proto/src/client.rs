//! A raw NFSv3/MOUNT client for tests (feature `client`): every call encoded as a client
//! sends it, every reply decoded from its bytes. Sans-IO like the rest of the crate: it
//! talks through a [`Transport`] its user supplies (the NFS server's tests hand records to a
//! `Service` in process; the end-to-end tests write them to a TCP socket).
//!
//! It asserts on what a test takes for granted (a reply to every call, the xid it sent, a
//! handle where the status says one follows): it is a test tool, not a client library.

use crate::nfs3::{self, proc_, StableHow};
use crate::rpc::{self, AuthSys, Cred};
use crate::xdr::{put_bool, put_opaque, put_u32, put_u64, Reader};
use crate::{mount, record};

/// How call records reach a server and replies come back. Records are unframed (no
/// record mark): a stream transport frames them itself.
pub trait Transport {
    /// Sends one call record.
    fn send(&mut self, rec: &[u8]);
    /// The next reply record, or `None` when the server sent none.
    fn recv(&mut self) -> Option<Vec<u8>>;
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

    /// Err(accept) for a call not accepted, else a reader past an NFS status of 0
    /// (Err(status) for any other).
    fn ok(&self) -> Result<Reader<'_>, u32> {
        if self.accept != 0 {
            return Err(self.accept);
        }
        let mut rd = self.reader();
        match rd.u32("status").unwrap() {
            0 => Ok(rd),
            e => Err(e),
        }
    }
}

/// Decodes one reply record (panics on anything but a reply).
pub fn parse_reply(rec: &[u8]) -> Reply {
    let mut r = Reader::new(rec);
    let xid = r.u32("xid").unwrap();
    assert_eq!(r.u32("mtype").unwrap(), rpc::REPLY);
    let accept = match r.u32("reply_stat").unwrap() {
        0 => {
            r.u32("verf flavor").unwrap();
            r.opaque(400, "verf").unwrap();
            r.u32("accept").unwrap()
        }
        // MSG_DENIED: 100 + reject_stat (101: AUTH_ERROR), then its body
        _ => 100 + r.u32("reject").unwrap(),
    };
    Reply {
        xid,
        accept,
        body: r.remaining().to_vec(),
    }
}

/// AUTH_SYS from host `machine` for `uid`, `gid` and supplementary `gids`.
pub fn sys_cred(machine: &[u8], uid: u32, gid: u32, gids: &[u32]) -> Cred {
    Cred::Sys(AuthSys {
        stamp: 1,
        machine: machine.to_vec(),
        uid,
        gid,
        gids: gids.to_vec(),
    })
}

/// A `sattr3`: the fields to set (`None`: unchanged), times unchanged.
pub fn sattr(mode: Option<u32>, uid: Option<u32>, gid: Option<u32>, size: Option<u64>) -> Vec<u8> {
    let mut a = Vec::new();
    for v in [mode, uid, gid] {
        put_bool(&mut a, v.is_some());
        if let Some(v) = v {
            put_u32(&mut a, v);
        }
    }
    put_bool(&mut a, size.is_some());
    if let Some(s) = size {
        put_u64(&mut a, s);
    }
    put_u32(&mut a, 0); // atime: DONT_CHANGE
    put_u32(&mut a, 0); // mtime: DONT_CHANGE
    a
}

/// Skips a `post_op_attr`.
pub fn skip_post_op(rd: &mut Reader<'_>) {
    if rd.bool("attrs follow").unwrap() {
        rd.fixed(84, "fattr3").unwrap();
    }
}

/// Skips a `wcc_data`.
pub fn skip_wcc(rd: &mut Reader<'_>) {
    if rd.bool("pre").unwrap() {
        rd.fixed(24, "wcc_attr").unwrap();
    }
    skip_post_op(rd);
}

/// The arguments of the calls, one encoder each.
pub mod args {
    use super::*;

    pub fn diropargs(dir: &[u8], name: &str) -> Vec<u8> {
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, dir, name.as_bytes());
        a
    }

    /// A handle alone (GETATTR, ACCESS's first half, ...).
    pub fn handle(fh: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        put_opaque(&mut a, fh);
        a
    }

    /// MNT's directory path.
    pub fn path(path: &str) -> Vec<u8> {
        handle(path.as_bytes())
    }

    /// CREATE in mode `how` (0 UNCHECKED, 1 GUARDED: `attrs` is a `sattr3`; 2 EXCLUSIVE:
    /// `attrs` is the 8-byte verifier).
    pub fn create(dir: &[u8], name: &str, how: u32, attrs: &[u8]) -> Vec<u8> {
        let mut a = diropargs(dir, name);
        put_u32(&mut a, how);
        a.extend_from_slice(attrs);
        a
    }

    pub fn write(fh: &[u8], offset: u64, stable: StableHow, data: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        nfs3::encode_write(&mut a, fh, offset, stable, data);
        a
    }

    /// COMMIT of the whole file.
    pub fn commit(fh: &[u8]) -> Vec<u8> {
        let mut a = handle(fh);
        put_u64(&mut a, 0);
        put_u32(&mut a, 0);
        a
    }

    pub fn read(fh: &[u8], offset: u64, count: u32) -> Vec<u8> {
        let mut a = handle(fh);
        put_u64(&mut a, offset);
        put_u32(&mut a, count);
        a
    }

    /// READDIR, or READDIRPLUS (dircount 512) when `plus`; `count` is the reply's limit.
    pub fn readdir(dir: &[u8], plus: bool, cookie: u64, verf: [u8; 8], count: u32) -> Vec<u8> {
        let mut a = handle(dir);
        put_u64(&mut a, cookie);
        a.extend_from_slice(&verf);
        if plus {
            put_u32(&mut a, 512);
        }
        put_u32(&mut a, count);
        a
    }
}

/// One page of a listing: its names, the cookie to go on from, the cookie verifier.
pub struct DirPage {
    pub names: Vec<String>,
    pub cookie: u64,
    pub verf: [u8; 8],
    pub eof: bool,
}

/// The raw client: a transport, the credential its calls carry and the last xid.
pub struct Client<T> {
    pub transport: T,
    /// The credential calls carry (`Cred::None`: AUTH_NONE).
    pub cred: Cred,
    xid: u32,
}

impl<T: Transport> Client<T> {
    pub fn new(transport: T, cred: Cred) -> Client<T> {
        Client {
            transport,
            cred,
            xid: 0,
        }
    }

    /// Sends one call without waiting; returns its xid.
    pub fn send(&mut self, prog: u32, vers: u32, p: u32, args: &[u8]) -> u32 {
        self.xid += 1;
        let mut rec = Vec::new();
        rpc::encode_call(&mut rec, self.xid, prog, vers, p, &self.cred, args);
        self.transport.send(&rec);
        self.xid
    }

    /// The next reply.
    pub fn reply(&mut self) -> Reply {
        parse_reply(&self.transport.recv().expect("a reply"))
    }

    /// One call and its reply.
    pub fn call(&mut self, prog: u32, vers: u32, p: u32, args: &[u8]) -> Reply {
        let xid = self.send(prog, vers, p, args);
        let r = self.reply();
        assert_eq!(r.xid, xid);
        r
    }

    /// NFSv3 procedure `p`.
    pub fn nfs(&mut self, p: u32, args: &[u8]) -> Reply {
        self.call(nfs3::PROGRAM, nfs3::VERSION, p, args)
    }

    /// Sends NFSv3 procedure `p` without waiting; returns its xid.
    pub fn send_nfs(&mut self, p: u32, args: &[u8]) -> u32 {
        self.send(nfs3::PROGRAM, nfs3::VERSION, p, args)
    }

    /// MNT: Ok(root handle), Err(mountstat), or Err(100 + reject_stat) when the call is
    /// denied (`RPC_DENIED`: 101 is AUTH_ERROR).
    pub fn mnt(&mut self, path: &str) -> Result<Vec<u8>, u32> {
        let r = self.call(
            mount::PROGRAM,
            mount::VERSION,
            mount::MNT,
            &args::path(path),
        );
        Ok(r.ok()?.opaque(64, "fh").unwrap().to_vec())
    }

    /// LOOKUP: Ok(handle) or Err(status).
    pub fn lookup(&mut self, dir: &[u8], name: &str) -> Result<Vec<u8>, u32> {
        let r = self.nfs(proc_::LOOKUP, &args::diropargs(dir, name));
        Ok(r.ok()?.opaque(64, "fh").unwrap().to_vec())
    }

    /// GETATTR: Ok((type, size, used, fileid)) or Err(status).
    pub fn getattr(&mut self, fh: &[u8]) -> Result<(u32, u64, u64, u64), u32> {
        let r = self.nfs(proc_::GETATTR, &args::handle(fh));
        let mut rd = r.ok()?;
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

    /// CREATE or MKDIR (`p`) with these arguments: Ok(the new handle) or Err(status).
    fn make(&mut self, p: u32, a: &[u8]) -> Result<Vec<u8>, u32> {
        let r = self.nfs(p, a);
        let mut rd = r.ok()?;
        assert!(rd.bool("handle follows").unwrap());
        Ok(rd.opaque(64, "fh").unwrap().to_vec())
    }

    /// CREATE (UNCHECKED, mode 0644): Ok(handle) or Err(status).
    pub fn create(&mut self, dir: &[u8], name: &str) -> Result<Vec<u8>, u32> {
        self.create_how(dir, name, 0, [0; 8])
    }

    /// CREATE with an explicit mode: 0 UNCHECKED, 1 GUARDED (mode 0644), 2 EXCLUSIVE
    /// (verifier). Ok(handle) or Err(status).
    pub fn create_how(
        &mut self,
        dir: &[u8],
        name: &str,
        how: u32,
        verf: [u8; 8],
    ) -> Result<Vec<u8>, u32> {
        let attrs = match how {
            2 => verf.to_vec(),
            _ => sattr(Some(0o644), None, None, None),
        };
        self.create_with(dir, name, how, &attrs)
    }

    /// CREATE in mode `how` with `attrs` (see [`args::create`]).
    pub fn create_with(
        &mut self,
        dir: &[u8],
        name: &str,
        how: u32,
        attrs: &[u8],
    ) -> Result<Vec<u8>, u32> {
        self.make(proc_::CREATE, &args::create(dir, name, how, attrs))
    }

    /// MKDIR (mode 0755): Ok(handle) or Err(status).
    pub fn mkdir(&mut self, dir: &[u8], name: &str) -> Result<Vec<u8>, u32> {
        let mut a = args::diropargs(dir, name);
        a.extend_from_slice(&sattr(Some(0o755), None, None, None));
        self.make(proc_::MKDIR, &a)
    }

    /// Sends a WRITE without waiting; returns its xid.
    pub fn send_write(&mut self, fh: &[u8], offset: u64, stable: StableHow, data: &[u8]) -> u32 {
        self.send_nfs(proc_::WRITE, &args::write(fh, offset, stable, data))
    }

    /// Sends a COMMIT of the whole file without waiting; returns its xid.
    pub fn send_commit(&mut self, fh: &[u8]) -> u32 {
        self.send_nfs(proc_::COMMIT, &args::commit(fh))
    }

    /// WRITE: Ok((count, committed, verifier)) or Err(status).
    pub fn write(
        &mut self,
        fh: &[u8],
        offset: u64,
        stable: StableHow,
        data: &[u8],
    ) -> Result<(u32, u32, [u8; 8]), u32> {
        let r = self.nfs(proc_::WRITE, &args::write(fh, offset, stable, data));
        let mut rd = r.ok()?;
        skip_wcc(&mut rd);
        let count = rd.u32("count").unwrap();
        let committed = rd.u32("committed").unwrap();
        let v = rd.fixed(8, "verf").unwrap();
        Ok((count, committed, v.try_into().unwrap()))
    }

    /// COMMIT: Ok(verifier) or Err(status).
    pub fn commit(&mut self, fh: &[u8]) -> Result<[u8; 8], u32> {
        let r = self.nfs(proc_::COMMIT, &args::commit(fh));
        let mut rd = r.ok()?;
        skip_wcc(&mut rd);
        Ok(rd.fixed(8, "verf").unwrap().try_into().unwrap())
    }

    /// READ: Ok((data, eof)) or Err(status).
    pub fn read(&mut self, fh: &[u8], offset: u64, count: u32) -> Result<(Vec<u8>, bool), u32> {
        let r = self.nfs(proc_::READ, &args::read(fh, offset, count));
        let mut rd = r.ok()?;
        skip_post_op(&mut rd);
        let n = rd.u32("count").unwrap();
        let eof = rd.bool("eof").unwrap();
        let data = rd.opaque(1 << 24, "data").unwrap().to_vec();
        assert_eq!(n as usize, data.len());
        Ok((data, eof))
    }

    /// REMOVE or RMDIR: the status.
    pub fn remove(&mut self, dir: &[u8], name: &str, rmdir: bool) -> u32 {
        let p = if rmdir { proc_::RMDIR } else { proc_::REMOVE };
        self.nfs(p, &args::diropargs(dir, name)).status()
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
        let p = if plus {
            proc_::READDIRPLUS
        } else {
            proc_::READDIR
        };
        let r = self.nfs(p, &args::readdir(dir, plus, cookie, verf, count));
        let mut rd = r.ok()?;
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

/// Frames a call record for a stream (one fragment, last).
pub fn frame(rec: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rec.len() + 4);
    let at = record::begin(&mut out);
    out.extend_from_slice(rec);
    record::finish(&mut out, at);
    out
}
