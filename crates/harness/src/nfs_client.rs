//! Just enough of an NFSv3 client to account for the file a run writes in an export
//! (`--target nfs://HOST/PATH`): whether `PATH/NAME` is there and how big (LOOKUP), and
//! removing it (REMOVE). fio's nfs engine writes it through libnfs; libnfs's tools have
//! no `rm`, so the harness speaks the protocol itself, over `nfs-proto`'s encoders.
//! Ports come from the URL (`nfsport`, `mountport`), else the portmapper on port 111.
//! AUTH_SYS with this process's uid and gid; run as root, from a reserved port (below
//! 1024) as the kernel client and root's libnfs (fio's nfs engine) connect, since servers
//! limit MOUNT to them by default (ONTAP's `-mount-rootonly`, nfsd's `secure`, the node's
//! `mount_rootonly`); otherwise from a port the kernel picks (such a server then answers
//! MNT3ERR_ACCES, reported as such).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use nfs_proto::rpc::{self, AuthSys, Cred};
use nfs_proto::xdr::{put_opaque, put_u32, Reader};
use nfs_proto::{mount, nfs3, record};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A file in an export, as a URL names it: `nfs://HOST/EXPORT?nfsport=P&mountport=P`
/// and the file's name in the export's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NfsFile {
    pub url: String,
    pub name: String,
}

/// What LOOKUP says of a file: its size and modification time (seconds, nanoseconds).
pub type Attrs = (u64, (u32, u32));

struct Conn {
    s: TcpStream,
    xid: u32,
}

impl Conn {
    fn open(host: &str, port: u16) -> Result<Conn, String> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .map_err(|e| format!("{host}:{port}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host}: no address"))?;
        // SAFETY: plain syscall.
        let s = if unsafe { libc::geteuid() } == 0 {
            connect_reserved(addr)?
        } else {
            TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| format!("{addr}: {e}"))?
        };
        s.set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        Ok(Conn { s, xid: 0 })
    }

    /// One call; the reply's body (after an accepted, successful RPC header).
    fn call(&mut self, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> Result<Vec<u8>, String> {
        self.xid += 1;
        let cred = Cred::Sys(AuthSys {
            stamp: 0,
            machine: b"qoslab".to_vec(),
            // SAFETY: getuid/getgid cannot fail.
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
            gids: Vec::new(),
        });
        let mut out = Vec::new();
        let at = record::begin(&mut out);
        rpc::encode_call(&mut out, self.xid, prog, vers, proc_, &cred, args);
        record::finish(&mut out, at);
        self.s.write_all(&out).map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        loop {
            if let Some((rec, _)) =
                record::next_record(&buf, 1 << 20).map_err(|e| format!("{e:?}"))?
            {
                let rec = rec.into_owned();
                let mut r = Reader::new(&rec);
                let bad = |e| format!("a malformed reply: {e:?}");
                let xid = r.u32("xid").map_err(bad)?;
                let _mtype = r.u32("mtype").map_err(bad)?;
                let stat = r.u32("reply_stat").map_err(bad)?;
                if xid != self.xid || stat != 0 {
                    return Err(format!("the call was denied (reply_stat {stat})"));
                }
                r.u32("verf flavor").map_err(bad)?;
                r.opaque(400, "verf").map_err(bad)?;
                let accept = r.u32("accept_stat").map_err(bad)?;
                if accept != 0 {
                    return Err(format!("the call was not accepted (accept_stat {accept})"));
                }
                return Ok(r.remaining().to_vec());
            }
            let mut chunk = [0u8; 8192];
            let n = self.s.read(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// A connection to `addr` from a reserved port, as root's NFS clients make: the ports
/// 600..1023 from a start that differs per process (parallel runs rarely collide), the
/// next on a port in use or still in TIME_WAIT towards `addr`.
fn connect_reserved(addr: std::net::SocketAddr) -> Result<TcpStream, String> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let start = (std::process::id() % 424) as u16;
    let mut last = String::from("no port tried");
    for i in 0..424u16 {
        let port = 600 + (start + i) % 424;
        let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)
            .map_err(|e| format!("a socket: {e}"))?;
        let from = std::net::SocketAddr::new(
            if addr.is_ipv4() {
                std::net::Ipv4Addr::UNSPECIFIED.into()
            } else {
                std::net::Ipv6Addr::UNSPECIFIED.into()
            },
            port,
        );
        if let Err(e) = s.bind(&SockAddr::from(from)) {
            last = format!("binding port {port}: {e}");
            continue;
        }
        match s.connect_timeout(&SockAddr::from(addr), TIMEOUT) {
            Ok(()) => return Ok(s.into()),
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    || e.raw_os_error() == Some(libc::EADDRNOTAVAIL) =>
            {
                last = format!("from port {port}: {e}");
            }
            Err(e) => return Err(format!("{addr} (from reserved port {port}): {e}")),
        }
    }
    Err(format!("{addr}: no reserved port free ({last})"))
}

/// (host, export path, nfs port, mount port) of a URL; ports from the portmapper when the
/// URL does not give them.
fn parse(url: &str) -> Result<(String, String, u16, u16), String> {
    crate::nfs::check_url(url)?;
    let rest = url.trim_start_matches("nfs://");
    let (hp, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = hp.split_once('/').unwrap_or((hp, ""));
    let port = |k: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse::<u16>().ok())
    };
    let (nfs, mnt) = match (port("nfsport"), port("mountport")) {
        (Some(n), Some(m)) => (n, m),
        (n, m) => {
            let mut pm = Conn::open(host, 111)?;
            let mut get = |prog: u32, vers: u32| -> Result<u16, String> {
                let mut a = Vec::new();
                for v in [prog, vers, 6 /* TCP */, 0] {
                    put_u32(&mut a, v);
                }
                let body = pm.call(100000, 2, 3, &a)?;
                let p = Reader::new(&body)
                    .u32("port")
                    .map_err(|e| format!("{e:?}"))?;
                u16::try_from(p).map_err(|_| format!("portmapper port {p}"))
            };
            (
                n.map_or_else(|| get(nfs3::PROGRAM, 3), Ok)?,
                m.map_or_else(|| get(mount::PROGRAM, mount::VERSION), Ok)?,
            )
        }
    };
    Ok((host.to_string(), format!("/{path}"), nfs, mnt))
}

impl NfsFile {
    /// The export's root handle and a connection to its NFS service.
    fn root(&self) -> Result<(Conn, Vec<u8>), String> {
        let (host, path, nfs, mnt) = parse(&self.url)?;
        let mut m = Conn::open(&host, mnt)?;
        let mut a = Vec::new();
        put_opaque(&mut a, path.as_bytes());
        let body = m.call(mount::PROGRAM, mount::VERSION, mount::MNT, &a)?;
        let mut r = Reader::new(&body);
        let st = r.u32("mountstat").map_err(|e| format!("{e:?}"))?;
        if st != 0 {
            return Err(format!("MOUNT {path}: MNT3ERR {st}"));
        }
        let fh = r.opaque(64, "fh").map_err(|e| format!("{e:?}"))?.to_vec();
        Ok((Conn::open(&host, nfs)?, fh))
    }

    /// Its size and modification time, or `None` when it is not there.
    pub fn attrs(&self) -> Result<Option<Attrs>, String> {
        let (mut c, root) = self.root()?;
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, &root, self.name.as_bytes());
        let body = c.call(nfs3::PROGRAM, 3, nfs3::proc_::LOOKUP, &a)?;
        let mut r = Reader::new(&body);
        let e = |e| format!("LOOKUP {}: {e:?}", self.name);
        match r.u32("status").map_err(e)? {
            0 => {}
            2 => return Ok(None), // NFS3ERR_NOENT
            st => return Err(format!("LOOKUP {}: NFS3ERR {st}", self.name)),
        }
        r.opaque(64, "fh").map_err(e)?;
        if !r.bool("attrs follow").map_err(e)? {
            return Err(format!("LOOKUP {}: no attributes", self.name));
        }
        // fattr3: type mode nlink uid gid, size, used, rdev, fsid, fileid, atime, mtime.
        r.fixed(20, "type..gid").map_err(e)?;
        let size = r.u64("size").map_err(e)?;
        r.fixed(8 + 8 + 8 + 8 + 8, "used..atime").map_err(e)?;
        let mtime = (r.u32("mtime s").map_err(e)?, r.u32("mtime ns").map_err(e)?);
        Ok(Some((size, mtime)))
    }

    /// Remove it.
    pub fn remove(&self) -> Result<(), String> {
        let (mut c, root) = self.root()?;
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, &root, self.name.as_bytes());
        let body = c.call(nfs3::PROGRAM, 3, nfs3::proc_::REMOVE, &a)?;
        match Reader::new(&body)
            .u32("status")
            .map_err(|e| format!("{e:?}"))?
        {
            0 => Ok(()),
            st => Err(format!("REMOVE {}: NFS3ERR {st}", self.name)),
        }
    }

    /// `nfs://HOST/EXPORT/NAME` (without the ports), as the summary names it.
    pub fn display(&self) -> String {
        let base = self.url.split('?').next().unwrap_or(&self.url);
        format!("{}/{}", base.trim_end_matches('/'), self.name)
    }
}
