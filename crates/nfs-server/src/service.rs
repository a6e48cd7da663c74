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
use nfs_proto::{mount, portmap, record, XdrError};

pub use crate::call::{CallInfo, Decoded, Lane, OpKind};

use crate::export::{ExportSpec, Policy};
use crate::handle::Handle;
use crate::ops::{self, Ctx};
use crate::perm::Caller;
use crate::tree::Tree;
use crate::Config;
use storage_node::nas::export_policy::{Decision, Identity};

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

/// An NFSv3 call's decoded arguments ([`Decoded`]).
type NfsArgs<'a> = Result<Option<Args<'a>>, XdrError>;

/// Who sent a call.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub addr: IpAddr,
    /// The client's source port (below 1024: a reserved port, bound by root).
    pub port: u16,
    /// The TCP connection (unique for the life of the server).
    pub conn: u64,
}

impl Peer {
    /// Whether the client's port is reserved (only root binds ports below 1024).
    pub fn reserved_port(&self) -> bool {
        self.port < 1024
    }
}

/// Calls seen, per NFSv3 procedure, and the malformed ones.
#[derive(Default)]
pub struct Counters {
    pub nfs: [AtomicU64; 22],
    /// WRITEs asking DATA_SYNC or FILE_SYNC (the rest of WRITE are UNSTABLE).
    pub stable_writes: AtomicU64,
    pub garbage: AtomicU64,
    /// Records decoded ([`Service::decode`]): one a record received, however far its call
    /// travels (held by QoS, on the blocking pool).
    pub decodes: AtomicU64,
    /// Connections closed at accept: no export admits their address.
    pub unadmitted: AtomicU64,
}

pub struct Service {
    cfg: Config,
    /// Descriptors all exports' trees keep open together.
    budget: Arc<crate::tree::FdBudget>,
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
            budget: crate::tree::FdBudget::new(default_fd_budget()),
            by_id: RwLock::new(HashMap::new()),
            verifier: v.to_be_bytes(),
            port: AtomicU32::new(0),
            counters: Counters::default(),
        })
    }

    pub fn config(&self) -> Config {
        self.cfg
    }

    /// Set how many descriptors all exports' trees keep open together (the default is
    /// [`default_fd_budget`]).
    pub fn set_fd_budget(&self, n: usize) {
        self.budget.set_cap(n);
    }

    /// The descriptor budget (its cap and use).
    pub fn fd_budget(&self) -> &crate::tree::FdBudget {
        &self.budget
    }

    pub fn verifier(&self) -> [u8; 8] {
        self.verifier
    }

    /// The TCP port NFS and MOUNT listen on (what GETPORT answers).
    pub fn set_port(&self, port: u16) {
        self.port.store(port as u32, Ordering::Relaxed);
    }

    /// Adds (or replaces: same id, same junction path) an export; walks its tree once. An
    /// id or junction path another export has is refused.
    pub fn add_export(&self, spec: ExportSpec) -> io::Result<Arc<Export>> {
        let policy = Arc::new(RwLock::new(spec.policy.clone()));
        let tree = Tree::open(spec, self.budget.clone())?;
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
        let tree = Tree::open_with(spec, space, self.budget.clone())?;
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
        if let Some(other) = map
            .get(&ex.tree.spec.id)
            .filter(|e| e.tree.spec.path != ex.tree.spec.path)
        {
            // Never replaced silently: its clients' handles would name the new export.
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "export id {} is already {}'s",
                    ex.tree.spec.id, other.tree.spec.path
                ),
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

    /// Whether any export's policy admits `addr` (a client no policy admits is refused at
    /// accept, and gets no answer from MOUNT or the portmapper).
    pub fn admits(&self, addr: IpAddr) -> bool {
        self.by_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .any(|e| read(&e.policy).admits(addr))
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

    /// MNT: the root handle of an export, or of a directory beneath it, for a client whose
    /// export policy grants its call (`cred`; `None`: AUTH_NONE) at least read access.
    fn mnt(
        &self,
        peer: &Peer,
        cred: Option<&Identity>,
        path: &[u8],
    ) -> Result<[u8; crate::handle::LEN], mount::MountStat> {
        if self.cfg.mount_rootonly && !peer.reserved_port() {
            tracing::debug!(
                "nfs: MOUNT from {}:{} refused: not a reserved port (mount_rootonly)",
                peer.addr,
                peer.port
            );
            return Err(mount::MountStat::Acces);
        }
        let trimmed = if path.len() > 1 {
            path.strip_suffix(b"/").unwrap_or(path)
        } else {
            path
        };
        let (ex, rest) = self.by_path(trimmed).ok_or(mount::MountStat::NoEnt)?;
        if !matches!(
            read(&ex.policy).decide(peer.addr, cred),
            Decision::Granted(_)
        ) {
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
            Status::NameTooLong => mount::MountStat::NameTooLong,
            _ => mount::MountStat::Io,
        })?;
        Ok(ex.tree.handle_of(&st).encode())
    }

    /// Decode `record` once: what it is ([`Decoded::info`]) and, for
    /// [`handle_decoded`](Self::handle_decoded), its header and arguments. The one place a
    /// record is decoded (counted in [`Counters::decodes`]).
    pub fn decode<'a>(&self, record: &'a [u8]) -> Decoded<'a> {
        self.counters.decodes.fetch_add(1, Ordering::Relaxed);
        crate::call::decode(record, self.cfg.rtmax)
    }

    /// [`handle`](Self::handle) on a runtime worker: a call that would walk the export's
    /// tree is not answered (`false`, see [`handle_decoded`](Self::handle_decoded)).
    pub fn handle_inline(&self, peer: &Peer, rec: &[u8], out: &mut Vec<u8>) -> bool {
        self.handle_decoded(peer, &self.decode(rec), out, false)
    }

    /// Decodes and handles one record, appending one reply record to `out` (nothing for a
    /// record that is not a call or whose header is unreadable: there is no xid to
    /// answer). For callers with a record only (tests, fuzzers); a connection decodes
    /// once and answers with [`handle_decoded`](Self::handle_decoded).
    pub fn handle(&self, peer: &Peer, rec: &[u8], out: &mut Vec<u8>) {
        self.handle_decoded(peer, &self.decode(rec), out, true);
    }

    /// [`handle`](Self::handle) of a record already decoded. `may_walk` false (on a
    /// runtime worker): a call that would walk the export's tree (a handle the server
    /// does not know) is not answered — `false`, `out` unchanged — and must be run again
    /// with `may_walk` on the blocking pool.
    pub fn handle_decoded(
        &self,
        peer: &Peer,
        d: &Decoded<'_>,
        out: &mut Vec<u8>,
        may_walk: bool,
    ) -> bool {
        let at = record::begin(out);
        match &d.msg {
            Message::Call(c) => {
                if !self.call(peer, c, d.nfs.as_ref(), out, may_walk) {
                    out.truncate(at);
                    return false;
                }
            }
            Message::RpcMismatch { xid } => rpc::rpc_mismatch(out, *xid),
            Message::BadCred { xid } => rpc::auth_error(out, *xid, AuthStat::BadCred),
            Message::NotACall { .. } | Message::Garbage(_) => {
                self.counters.garbage.fetch_add(1, Ordering::Relaxed);
                out.truncate(at);
                return true;
            }
        }
        record::finish(out, at);
        true
    }

    /// `false`: the call needs a walk `may_walk` does not allow (nothing counted).
    fn call(
        &self,
        peer: &Peer,
        c: &rpc::Call<'_>,
        nfs: Option<&NfsArgs<'_>>,
        out: &mut Vec<u8>,
        may_walk: bool,
    ) -> bool {
        let versions = match c.prog {
            portmap::PROGRAM => (portmap::VERSION, portmap::VERSION),
            mount::PROGRAM => (mount::VERSION, mount::VERSION),
            nfs3::PROGRAM => (nfs3::VERSION, nfs3::VERSION),
            _ => {
                rpc::accepted(out, c.xid, Accept::ProgUnavail);
                return true;
            }
        };
        if c.vers != versions.0 {
            // NFSv4 (and v2) mounts are refused here: only version 3 is served.
            rpc::accepted(
                out,
                c.xid,
                Accept::ProgMismatch {
                    low: versions.0,
                    high: versions.1,
                },
            );
            return true;
        }
        // AUTH_NONE has no identity (the export policy maps it to its anonymous user);
        // other flavours only for NULL.
        let cred = match &c.cred {
            Cred::Sys(s) => Some(Identity {
                uid: s.uid,
                gid: s.gid,
                gids: s.gids.clone(),
            }),
            Cred::None => None,
            Cred::Other(_) if c.proc_ == 0 => None,
            Cred::Other(_) => {
                rpc::auth_error(out, c.xid, AuthStat::TooWeak);
                return true;
            }
        };
        if c.prog != nfs3::PROGRAM && c.proc_ != 0 && !self.admits(peer.addr) {
            // MOUNT and the portmapper answer only clients some export admits.
            rpc::auth_error(out, c.xid, AuthStat::TooWeak);
            return true;
        }
        match c.prog {
            portmap::PROGRAM => self.portmap(c, out),
            mount::PROGRAM => self.mount(peer, cred.as_ref(), c, out),
            _ => {
                let Some(args) = nfs else {
                    // decode() reads every NFSv3 call's arguments.
                    rpc::accepted(out, c.xid, Accept::SystemErr);
                    return true;
                };
                return self.nfs(peer, cred.as_ref(), c, args, out, may_walk);
            }
        }
        true
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

    fn mount(&self, peer: &Peer, cred: Option<&Identity>, c: &rpc::Call<'_>, out: &mut Vec<u8>) {
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
                // Only the exports this client is admitted to.
                let exports = self.exports();
                let groups: Vec<(String, Vec<String>)> = exports
                    .iter()
                    .filter_map(|e| {
                        let p = read(&e.policy);
                        p.admits(peer.addr)
                            .then(|| (e.tree.spec.path.clone(), p.groups()))
                    })
                    .collect();
                mount::put_exports(
                    out,
                    groups
                        .iter()
                        .map(|(p, g)| (p.as_bytes(), g.iter().map(|s| s.as_bytes()).collect())),
                );
            }
            mount::Args::Mnt { path } => match self.mnt(peer, cred, path) {
                Ok(fh) => mount::put_mnt_result(out, Ok((&fh, &[rpc::AUTH_SYS]))),
                Err(e) => mount::put_mnt_result(out, Err(e)),
            },
        }
    }

    /// `false`: the call needs a walk `may_walk` does not allow (nothing counted, nothing
    /// written).
    fn nfs(
        &self,
        peer: &Peer,
        cred: Option<&Identity>,
        c: &rpc::Call<'_>,
        args: &NfsArgs<'_>,
        out: &mut Vec<u8>,
        may_walk: bool,
    ) -> bool {
        let args = match args {
            Ok(Some(a)) => a,
            Ok(None) => {
                rpc::accepted(out, c.xid, Accept::ProcUnavail);
                return true;
            }
            Err(_) => {
                self.garbage(out, c.xid);
                return true;
            }
        };
        if self.cfg.nfs_rootonly && c.proc_ != 0 && !peer.reserved_port() {
            rpc::auth_error(out, c.xid, AuthStat::TooWeak);
            return true;
        }
        let start = out.len();
        rpc::accepted(out, c.xid, Accept::Success);
        let Some(fh) = args.handle() else {
            self.count(args, None, c.proc_);
            return true; // NULL
        };
        let body = out.len();
        let mut wants_walk = false;
        let mut export = None;
        let result = self.resolve(peer, cred, fh).and_then(|(ex, caller)| {
            export = Some(ex.clone());
            let cx = Ctx {
                tree: &ex.tree,
                caller: &caller,
                cfg: &self.cfg,
                verifier: &self.verifier,
                may_walk,
                wants_walk: std::cell::Cell::new(false),
            };
            let r = run(&cx, args, out);
            wants_walk = cx.wants_walk.get();
            r
        });
        if wants_walk {
            out.truncate(start);
            return false;
        }
        self.count(args, export.as_deref(), c.proc_);
        if let Err(status) = result {
            out.truncate(body);
            nfs3::put_status(out, status);
            fail_body(c.proc_, out);
        }
        true
    }

    /// Count a call answered: per procedure, and per export as ONTAP counts operations.
    fn count(&self, args: &Args<'_>, ex: Option<&Export>, proc_: u32) {
        if let Some(n) = self.counters.nfs.get(proc_ as usize) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        if matches!(args, Args::Write { stable, .. } if *stable != StableHow::Unstable) {
            self.counters.stable_writes.fetch_add(1, Ordering::Relaxed);
        }
        let Some(ex) = ex else { return };
        let st = &ex.stats;
        match args {
            Args::Read { count, .. } => {
                st.reads.fetch_add(1, Ordering::Relaxed);
                st.read_bytes
                    .fetch_add((*count).min(self.cfg.rtmax) as u64, Ordering::Relaxed);
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
    }

    /// The export a handle belongs to, and who the call acts as there (its policy's
    /// decision for this client and credential: NFS3ERR_ACCES when it grants nothing).
    fn resolve(
        &self,
        peer: &Peer,
        cred: Option<&Identity>,
        fh: &[u8],
    ) -> Result<(Arc<Export>, Caller), Status> {
        let h = Handle::decode(fh).ok_or(Status::BadHandle)?;
        let ex = self.export(h.export).ok_or(Status::Stale)?;
        let decision = read(&ex.policy).decide(peer.addr, cred);
        match decision {
            Decision::Granted(g) => Ok((ex, Caller::from_grant(g))),
            Decision::Unmatched | Decision::Refused => Err(Status::Acces),
        }
    }
}

/// Half of what the process may open (its soft RLIMIT_NOFILE), at least 64: the rest is for
/// connections, volumes and everything else. The node sets its own from its listeners'
/// caps ([`Service::set_fd_budget`]).
pub fn default_fd_budget() -> usize {
    (storage_node::conn_limit::nofile() / 2).max(64) as usize
}

fn read(p: &RwLock<Policy>) -> std::sync::RwLockReadGuard<'_, Policy> {
    p.read().unwrap_or_else(|p| p.into_inner())
}

fn run(cx: &Ctx, args: &Args<'_>, out: &mut Vec<u8>) -> Result<(), Status> {
    let r = run_proc(cx, args, out);
    if crate::call::changes_metadata(args) {
        // Whatever it changed (or began to change before failing), no attribute
        // remembered before is served again (crate::attr_cache's rule).
        crate::attr_cache::bump_epoch();
    }
    r
}

fn run_proc(cx: &Ctx, args: &Args<'_>, out: &mut Vec<u8>) -> Result<(), Status> {
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
            dir,
            cookie,
            verf,
            count,
        } => ops::readdir(cx, dir, cookie, verf, count, None, out),
        Args::ReadDirPlus {
            dir,
            cookie,
            verf,
            dircount,
            maxcount,
        } => ops::readdir(cx, dir, cookie, verf, maxcount, Some(dircount), out),
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
