//! One RPC record in, one reply record out: the portmapper, MOUNT v3 and NFSv3 programs,
//! the export policy check and the failure bodies. Synchronous (the connection decides
//! what runs on the blocking pool: [`Service::lane`]).

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use nfs_proto::nfs3::{self, proc_, Args, StableHow, Status};
use nfs_proto::rpc::{self, Accept, AuthStat, Cred, Message};
use nfs_proto::{mount, portmap, record};

use crate::attr::Caller;
use crate::export::{Access, ExportSpec, Policy};
use crate::handle::Handle;
use crate::ops::{self, Ctx};
use crate::tree::Tree;
use crate::Config;

/// An export: its tree, its (changeable) policy and what it served.
pub struct Export {
    pub tree: Tree,
    /// Its export policy (shared with the node's volume, which changes it in place).
    pub policy: Arc<RwLock<Policy>>,
    pub stats: ExportStats,
}

/// Calls answered for one export, counted as ONTAP counts NFS operations: READ and WRITE
/// one operation each with their bytes, every other procedure (metadata) one operation.
#[derive(Default)]
pub struct ExportStats {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub other: AtomicU64,
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
}

/// What a call is, known before it runs: where it runs, which export it is for (by its
/// handle), and how it counts. The seam for admission per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallInfo {
    pub lane: Lane,
    pub export: Option<u32>,
    pub kind: OpKind,
    /// READ: the bytes asked for (at most rtmax); WRITE: the payload.
    pub bytes: u64,
    /// The object the handle names (its inode) and, for READ and WRITE, the offset:
    /// where the bytes are, for a provisioned file system's caches.
    pub ino: u64,
    pub offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
    /// Any other NFSv3 procedure except NULL that only reads (GETATTR, LOOKUP, ACCESS,
    /// READLINK, READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF): metadata.
    Other,
    /// A procedure that changes the tree or makes it durable (SETATTR, CREATE, MKDIR,
    /// SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK, COMMIT): metadata, counted as ONTAP
    /// counts it ("other"), charged as a write of nothing by the emulated array.
    OtherWrite,
    /// NULL, MOUNT, the portmapper, or a call that does not decode: not an operation on a
    /// volume.
    None,
}

/// Where a call runs: on the connection's task (page-cache work of microseconds), or on
/// the blocking pool (anything that syncs to stable storage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Inline,
    Blocking,
}

/// Who sent a call.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub addr: IpAddr,
    /// The TCP connection (unique for the life of the server).
    pub conn: u64,
}

/// Calls seen, per NFSv3 procedure, and the malformed ones.
#[derive(Default)]
pub struct Counters {
    pub nfs: [AtomicU64; 22],
    /// WRITEs asking DATA_SYNC or FILE_SYNC (the rest of WRITE are UNSTABLE).
    pub stable_writes: AtomicU64,
    pub garbage: AtomicU64,
}

pub struct Service {
    cfg: Config,
    by_id: RwLock<HashMap<u32, Arc<Export>>>,
    verifier: [u8; 8],
    port: AtomicU32,
    pub counters: Counters,
}

impl Service {
    /// A service with no exports. The write verifier is new on every start (nanoseconds
    /// since the epoch and the process id), so clients resend unstable writes after a
    /// restart.
    pub fn new(cfg: Config) -> Result<Service, String> {
        cfg.validate()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let v = now ^ ((std::process::id() as u64) << 40);
        Ok(Service {
            cfg,
            by_id: RwLock::new(HashMap::new()),
            verifier: v.to_be_bytes(),
            port: AtomicU32::new(0),
            counters: Counters::default(),
        })
    }

    pub fn config(&self) -> Config {
        self.cfg
    }

    pub fn verifier(&self) -> [u8; 8] {
        self.verifier
    }

    /// The TCP port NFS and MOUNT listen on (what GETPORT answers).
    pub fn set_port(&self, port: u16) {
        self.port.store(port as u32, Ordering::Relaxed);
    }

    /// Adds (or replaces) an export; walks its tree once.
    pub fn add_export(&self, spec: ExportSpec) -> io::Result<Arc<Export>> {
        let policy = Arc::new(RwLock::new(spec.policy.clone()));
        let tree = Tree::open(spec)?;
        self.insert(tree, policy)
    }

    /// Adds (or replaces) the export of a node's NAS volume: its space and its policy are
    /// the volume's, shared (the node changes them in place).
    pub fn add_shared_export(
        &self,
        spec: ExportSpec,
        space: Arc<storage_node::nas::NasSpace>,
        policy: Arc<RwLock<Policy>>,
    ) -> io::Result<Arc<Export>> {
        let tree = Tree::open_with(spec, space)?;
        self.insert(tree, policy)
    }

    fn insert(&self, tree: Tree, policy: Arc<RwLock<Policy>>) -> io::Result<Arc<Export>> {
        let ex = Arc::new(Export {
            tree,
            policy,
            stats: ExportStats::default(),
        });
        let mut map = self.by_id.write().unwrap_or_else(|p| p.into_inner());
        if let Some(clash) = map
            .values()
            .find(|e| e.tree.spec.path == ex.tree.spec.path && e.tree.spec.id != ex.tree.spec.id)
        {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("junction path {} is already exported", clash.tree.spec.path),
            ));
        }
        map.insert(ex.tree.spec.id, ex.clone());
        Ok(ex)
    }

    /// Removes an export: its handles become STALE.
    pub fn remove_export(&self, id: u32) -> bool {
        self.by_id
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id)
            .is_some()
    }

    pub fn export(&self, id: u32) -> Option<Arc<Export>> {
        self.by_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    pub fn exports(&self) -> Vec<Arc<Export>> {
        let mut v: Vec<_> = self
            .by_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        v.sort_by(|a, b| a.tree.spec.path.cmp(&b.tree.spec.path));
        v
    }

    /// The export whose junction path is the longest whole-component prefix of `path`,
    /// and the rest of the path beneath it.
    fn by_path<'p>(&self, path: &'p [u8]) -> Option<(Arc<Export>, &'p [u8])> {
        let map = self.by_id.read().unwrap_or_else(|p| p.into_inner());
        map.values()
            .filter_map(|e| {
                let j = e.tree.spec.path.as_bytes();
                let rest = path.strip_prefix(j)?;
                (rest.is_empty() || rest[0] == b'/').then(|| (e.clone(), rest))
            })
            .max_by_key(|(e, _)| e.tree.spec.path.len())
    }

    /// MNT: the root handle of an export, or of a directory beneath it.
    fn mnt(&self, peer: &Peer, path: &[u8]) -> Result<[u8; crate::handle::LEN], mount::MountStat> {
        let trimmed = if path.len() > 1 {
            path.strip_suffix(b"/").unwrap_or(path)
        } else {
            path
        };
        let (ex, rest) = self.by_path(trimmed).ok_or(mount::MountStat::NoEnt)?;
        if ex
            .policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .access(peer.addr)
            .is_none()
        {
            return Err(mount::MountStat::Acces);
        }
        if rest.is_empty() {
            return Ok(ex.tree.root_handle().encode());
        }
        let st = ex.tree.subdir(rest).map_err(|s| match s {
            Status::NotDir => mount::MountStat::NotDir,
            Status::NoEnt => mount::MountStat::NoEnt,
            Status::Inval => mount::MountStat::Inval,
            Status::Acces => mount::MountStat::Acces,
            _ => mount::MountStat::Io,
        })?;
        Ok(ex.tree.handle_of(&st).encode())
    }

    /// What `record` is (never fails: an undecodable record is an inline non-operation,
    /// it only gets an error reply).
    pub fn peek(&self, record: &[u8]) -> CallInfo {
        let none = CallInfo {
            lane: Lane::Inline,
            export: None,
            kind: OpKind::None,
            bytes: 0,
            ino: 0,
            offset: 0,
        };
        let Message::Call(c) = rpc::decode(record) else {
            return none;
        };
        match (c.prog, c.vers) {
            (nfs3::PROGRAM, nfs3::VERSION) => {
                let Ok(Some(a)) = nfs3::decode_args(c.proc_, c.args) else {
                    return none;
                };
                let h = a.handle().and_then(Handle::decode);
                let (export, ino) = h.map_or((None, 0), |h| (Some(h.export), h.ino));
                let (kind, bytes, offset) = match a {
                    Args::Null => (OpKind::None, 0, 0),
                    Args::Read { count, offset, .. } => {
                        (OpKind::Read, count.min(self.cfg.rtmax) as u64, offset)
                    }
                    Args::Write { data, offset, .. } => (OpKind::Write, data.len() as u64, offset),
                    Args::SetAttr { .. }
                    | Args::Create { .. }
                    | Args::Mkdir { .. }
                    | Args::Symlink { .. }
                    | Args::Mknod { .. }
                    | Args::Remove { .. }
                    | Args::Rmdir { .. }
                    | Args::Rename { .. }
                    | Args::Link { .. }
                    | Args::Commit { .. } => (OpKind::OtherWrite, 0, 0),
                    _ => (OpKind::Other, 0, 0),
                };
                let blocking = match a {
                    Args::Write { stable, .. } => stable != StableHow::Unstable,
                    Args::Commit { .. }
                    | Args::Create { .. }
                    | Args::Mkdir { .. }
                    | Args::Symlink { .. }
                    | Args::Remove { .. }
                    | Args::Rmdir { .. }
                    | Args::Rename { .. }
                    | Args::Link { .. }
                    | Args::SetAttr { .. } => true,
                    _ => false,
                };
                CallInfo {
                    lane: if blocking {
                        Lane::Blocking
                    } else {
                        Lane::Inline
                    },
                    export,
                    kind,
                    bytes,
                    ino,
                    offset,
                }
            }
            (mount::PROGRAM, _) if c.proc_ == mount::MNT => CallInfo {
                lane: Lane::Blocking,
                ..none
            },
            _ => none,
        }
    }

    /// Handles one record, appending one reply record to `out` (nothing for a record that
    /// is not a call or whose header is unreadable: there is no xid to answer).
    pub fn handle(&self, peer: &Peer, rec: &[u8], out: &mut Vec<u8>) {
        let at = record::begin(out);
        match rpc::decode(rec) {
            Message::Call(c) => self.call(peer, &c, out),
            Message::RpcMismatch { xid } => rpc::rpc_mismatch(out, xid),
            Message::BadCred { xid } => rpc::auth_error(out, xid, AuthStat::BadCred),
            Message::NotACall { .. } | Message::Garbage(_) => {
                self.counters.garbage.fetch_add(1, Ordering::Relaxed);
                out.truncate(at);
                return;
            }
        }
        record::finish(out, at);
    }

    fn call(&self, peer: &Peer, c: &rpc::Call<'_>, out: &mut Vec<u8>) {
        let versions = match c.prog {
            portmap::PROGRAM => (portmap::VERSION, portmap::VERSION),
            mount::PROGRAM => (mount::VERSION, mount::VERSION),
            nfs3::PROGRAM => (nfs3::VERSION, nfs3::VERSION),
            _ => return rpc::accepted(out, c.xid, Accept::ProgUnavail),
        };
        if c.vers != versions.0 {
            // NFSv4 (and v2) mounts are refused here: only version 3 is served.
            return rpc::accepted(
                out,
                c.xid,
                Accept::ProgMismatch {
                    low: versions.0,
                    high: versions.1,
                },
            );
        }
        let caller = match &c.cred {
            Cred::Sys(s) => Caller {
                uid: s.uid,
                gid: s.gid,
                gids: s.gids.clone(),
            },
            Cred::None => Caller {
                uid: Caller::ANON,
                gid: Caller::ANON,
                gids: vec![],
            },
            Cred::Other(_) if c.proc_ == 0 => Caller {
                uid: Caller::ANON,
                gid: Caller::ANON,
                gids: vec![],
            },
            Cred::Other(_) => return rpc::auth_error(out, c.xid, AuthStat::TooWeak),
        };
        match c.prog {
            portmap::PROGRAM => self.portmap(c, out),
            mount::PROGRAM => self.mount(peer, c, out),
            _ => self.nfs(peer, &caller, c, out),
        }
    }

    fn garbage(&self, out: &mut Vec<u8>, xid: u32) {
        self.counters.garbage.fetch_add(1, Ordering::Relaxed);
        rpc::accepted(out, xid, Accept::GarbageArgs);
    }

    fn portmap(&self, c: &rpc::Call<'_>, out: &mut Vec<u8>) {
        let args = match portmap::decode_args(c.proc_, c.args) {
            Ok(Some(a)) => a,
            Ok(None) => return rpc::accepted(out, c.xid, Accept::ProcUnavail),
            Err(_) => return self.garbage(out, c.xid),
        };
        rpc::accepted(out, c.xid, Accept::Success);
        let port = self.port.load(Ordering::Relaxed);
        let ours = [
            portmap::Mapping {
                prog: portmap::PROGRAM,
                vers: portmap::VERSION,
                prot: portmap::IPPROTO_TCP,
                port,
            },
            portmap::Mapping {
                prog: mount::PROGRAM,
                vers: mount::VERSION,
                prot: portmap::IPPROTO_TCP,
                port,
            },
            portmap::Mapping {
                prog: nfs3::PROGRAM,
                vers: nfs3::VERSION,
                prot: portmap::IPPROTO_TCP,
                port,
            },
        ];
        match args {
            portmap::Args::Null => {}
            // Registrations by other servers are refused: this portmapper only knows its own.
            portmap::Args::Set(_) | portmap::Args::Unset(_) => nfs_proto::xdr::put_bool(out, false),
            portmap::Args::GetPort(m) => {
                let p = ours
                    .iter()
                    .find(|o| o.prog == m.prog && o.vers == m.vers && o.prot == m.prot)
                    .map(|o| o.port)
                    .unwrap_or(0);
                nfs_proto::xdr::put_u32(out, p);
            }
            portmap::Args::Dump => portmap::put_dump(out, &ours),
        }
    }

    fn mount(&self, peer: &Peer, c: &rpc::Call<'_>, out: &mut Vec<u8>) {
        let args = match mount::decode_args(c.proc_, c.args) {
            Ok(Some(a)) => a,
            Ok(None) => return rpc::accepted(out, c.xid, Accept::ProcUnavail),
            Err(_) => return self.garbage(out, c.xid),
        };
        rpc::accepted(out, c.xid, Accept::Success);
        match args {
            mount::Args::Null | mount::Args::Umnt { .. } | mount::Args::UmntAll => {}
            mount::Args::Dump => mount::put_empty_dump(out),
            mount::Args::Export => {
                let exports = self.exports();
                let groups: Vec<(String, Vec<String>)> = exports
                    .iter()
                    .map(|e| {
                        (
                            e.tree.spec.path.clone(),
                            e.policy.read().unwrap_or_else(|p| p.into_inner()).groups(),
                        )
                    })
                    .collect();
                mount::put_exports(
                    out,
                    groups
                        .iter()
                        .map(|(p, g)| (p.as_bytes(), g.iter().map(|s| s.as_bytes()).collect())),
                );
            }
            mount::Args::Mnt { path } => match self.mnt(peer, path) {
                Ok(fh) => mount::put_mnt_result(out, Ok((&fh, &[rpc::AUTH_SYS]))),
                Err(e) => mount::put_mnt_result(out, Err(e)),
            },
        }
    }

    fn nfs(&self, peer: &Peer, caller: &Caller, c: &rpc::Call<'_>, out: &mut Vec<u8>) {
        let args = match nfs3::decode_args(c.proc_, c.args) {
            Ok(Some(a)) => a,
            Ok(None) => return rpc::accepted(out, c.xid, Accept::ProcUnavail),
            Err(_) => return self.garbage(out, c.xid),
        };
        if let Some(n) = self.counters.nfs.get(c.proc_ as usize) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        if matches!(args, Args::Write { stable, .. } if stable != StableHow::Unstable) {
            self.counters.stable_writes.fetch_add(1, Ordering::Relaxed);
        }
        rpc::accepted(out, c.xid, Accept::Success);
        let Some(fh) = args.handle() else { return }; // NULL
        let body = out.len();
        let result = self.resolve(peer, fh).and_then(|(ex, read_only)| {
            let st = &ex.stats;
            match args {
                Args::Read { count, .. } => {
                    st.reads.fetch_add(1, Ordering::Relaxed);
                    st.read_bytes
                        .fetch_add(count.min(self.cfg.rtmax) as u64, Ordering::Relaxed);
                }
                Args::Write { data, .. } => {
                    st.writes.fetch_add(1, Ordering::Relaxed);
                    st.write_bytes
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                }
                _ => {
                    st.other.fetch_add(1, Ordering::Relaxed);
                }
            }
            let cx = Ctx {
                tree: &ex.tree,
                caller,
                read_only,
                cfg: &self.cfg,
                verifier: &self.verifier,
            };
            run(&cx, &args, out)
        });
        if let Err(status) = result {
            out.truncate(body);
            nfs3::put_status(out, status);
            fail_body(c.proc_, out);
        }
    }

    /// The export a handle belongs to, and whether the caller may only read it.
    fn resolve(&self, peer: &Peer, fh: &[u8]) -> Result<(Arc<Export>, bool), Status> {
        let h = Handle::decode(fh).ok_or(Status::BadHandle)?;
        let ex = self.export(h.export).ok_or(Status::Stale)?;
        let access = ex
            .policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .access(peer.addr);
        match access {
            None => Err(Status::Acces),
            Some(a) => Ok((ex, a == Access::ReadOnly)),
        }
    }
}

fn run(cx: &Ctx, args: &Args<'_>, out: &mut Vec<u8>) -> Result<(), Status> {
    match *args {
        Args::Null => Ok(()),
        Args::GetAttr { fh } => ops::getattr(cx, fh, out),
        Args::SetAttr {
            fh,
            ref attr,
            guard,
        } => ops::setattr(cx, fh, attr, guard, out),
        Args::Lookup { dir, name } => ops::lookup(cx, dir, name, out),
        Args::Access { fh, access } => ops::access(cx, fh, access, out),
        Args::ReadLink { fh } => ops::readlink(cx, fh, out),
        Args::Read { fh, offset, count } => ops::read(cx, fh, offset, count, out),
        Args::Write {
            fh,
            offset,
            stable,
            data,
        } => ops::write(cx, fh, offset, stable, data, out),
        Args::Create { dir, name, ref how } => ops::create(cx, dir, name, how, out),
        Args::Mkdir {
            dir,
            name,
            ref attr,
        } => ops::mkdir(cx, dir, name, attr, out),
        Args::Symlink {
            dir, name, target, ..
        } => ops::symlink(cx, dir, name, target, out),
        Args::Mknod { dir, name, .. } => ops::mknod(cx, dir, name),
        Args::Remove { dir, name } => ops::remove(cx, dir, name, false, out),
        Args::Rmdir { dir, name } => ops::remove(cx, dir, name, true, out),
        Args::Rename {
            from_dir,
            from_name,
            to_dir,
            to_name,
        } => ops::rename(cx, from_dir, from_name, to_dir, to_name, out),
        Args::Link { fh, dir, name } => ops::link(cx, fh, dir, name, out),
        Args::ReadDir {
            dir, cookie, count, ..
        } => ops::readdir(cx, dir, cookie, count, None, out),
        Args::ReadDirPlus {
            dir,
            cookie,
            dircount,
            maxcount,
            ..
        } => ops::readdir(cx, dir, cookie, maxcount, Some(dircount), out),
        Args::FsStat { fh } => ops::fsstat(cx, fh, out),
        Args::FsInfo { fh } => ops::fsinfo(cx, fh, out),
        Args::PathConf { fh } => ops::pathconf(cx, fh, out),
        Args::Commit { fh, .. } => ops::commit(cx, fh, out),
    }
}

/// What follows the status of a failed procedure (RFC 1813's `*resfail`), without
/// attributes: an empty `post_op_attr` or `wcc_data`.
fn fail_body(proc_: u32, out: &mut Vec<u8>) {
    use proc_::*;
    let (attrs, wccs) = match proc_ {
        GETATTR => (0, 0),
        LOOKUP | ACCESS | READLINK | READ | READDIR | READDIRPLUS | FSSTAT | FSINFO | PATHCONF => {
            (1, 0)
        }
        SETATTR | WRITE | CREATE | MKDIR | SYMLINK | MKNOD | REMOVE | RMDIR | COMMIT => (0, 1),
        RENAME => (0, 2),
        LINK => (1, 1),
        _ => (0, 0),
    };
    for _ in 0..attrs + 2 * wccs {
        nfs_proto::xdr::put_bool(out, false);
    }
}
