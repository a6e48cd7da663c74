//! One export's tree: the root directory descriptor, what we know of every object
//! (inode -> parent and name, so a handle from before a restart or a rename finds its
//! object again), open descriptors, and the space the tree allocates.
//!
//! Invariants: every path is opened with `openat2` beneath the root with no symlink
//! resolved (`sys::open_beneath`), so nothing outside the export is ever reached, whatever
//! the tree's symlinks or a concurrent local rename do; an object is served only when its
//! inode and birth time equal the handle's (else STALE); special files (FIFOs, devices)
//! are only ever opened `O_PATH`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use nfs_proto::nfs3::Status;

use crate::attr_cache::AttrCache;
use crate::errors::status_of;
use crate::export::ExportSpec;
use crate::handle::Handle;
use crate::sys::{self, Stat};
use storage_node::nas::NasSpace;

/// Descriptors the trees of one server keep open, all exports together: one budget below
/// the process's limit (RLIMIT_NOFILE), so a node with many exports never runs out of
/// descriptors for its connections, its volumes or a CREATE.
#[derive(Debug)]
pub struct FdBudget {
    cap: AtomicUsize,
    used: AtomicUsize,
}

impl FdBudget {
    pub fn new(cap: usize) -> Arc<FdBudget> {
        Arc::new(FdBudget {
            cap: AtomicUsize::new(cap.max(1)),
            used: AtomicUsize::new(0),
        })
    }

    /// Change the cap (descriptors kept beyond a lower one are given back as trees
    /// replace them).
    pub fn set_cap(&self, cap: usize) {
        self.cap.store(cap.max(1), Relaxed);
    }

    /// Take one descriptor of the budget; `false` when it is spent.
    fn take(&self) -> bool {
        let cap = self.cap.load(Relaxed);
        self.used
            .fetch_update(Relaxed, Relaxed, |u| (u < cap).then_some(u + 1))
            .is_ok()
    }

    /// Give `n` back.
    fn give(&self, n: usize) {
        let _ = self
            .used
            .fetch_update(Relaxed, Relaxed, |u| Some(u.saturating_sub(n)));
    }

    /// Descriptors kept now.
    pub fn used(&self) -> usize {
        self.used.load(Relaxed)
    }

    pub fn cap(&self) -> usize {
        self.cap.load(Relaxed)
    }
}
/// Deepest tree walked when building a path (a guard against a corrupt parent chain).
const MAX_DEPTH: usize = 4096;
/// Least time between two walks caused by unknown handles.
pub const MISS_RESCAN: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, Clone)]
struct Node {
    parent: u64,
    name: Vec<u8>,
}

/// What kind of descriptor an object holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file, opened read-write (or read-only when the file system refuses).
    File { writable: bool },
    /// A directory, opened for reading (listing, fsync).
    Dir,
    /// Anything else (symlink, FIFO, device, socket): an `O_PATH` descriptor.
    Other,
}

/// An open object of the tree.
#[derive(Debug)]
pub struct Obj {
    pub fd: OwnedFd,
    pub ino: u64,
    pub gen: u64,
    pub kind: Kind,
    /// Serialises a file's writes with their before/after allocation (space accounting).
    pub write_lock: Mutex<()>,
    /// Its last `fstat` ([`crate::attr_cache`]'s rule).
    attrs: AttrCache,
}

impl Obj {
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Its attributes now (an `fstat`, always true), remembered for [`attrs`](Self::attrs).
    pub fn stat(&self) -> Result<Stat, Status> {
        let stamp = self.attrs.begin();
        let st = sys::fstat(&self.fd).map_err(|e| status_of(&e))?;
        self.attrs.put(st, stamp);
        Ok(st)
    }

    /// Its attributes from the last `fstat` while [`crate::attr_cache`]'s rule holds (at
    /// most [`crate::attr_cache::ATTR_TTL`] old, nothing changed through this server
    /// since), else [`stat`](Self::stat). Only for READ and WRITE's pre-operation
    /// attributes.
    pub fn attrs(&self) -> Result<Stat, Status> {
        match self.attrs.get(crate::attr_cache::now()) {
            Some(st) => Ok(st),
            None => self.stat(),
        }
    }

    /// Its data or attributes were changed through this server: what was remembered
    /// before is not served again.
    pub fn changed(&self) {
        self.attrs.changed();
    }
}

pub struct Tree {
    pub spec: ExportSpec,
    root: OwnedFd,
    pub root_ino: u64,
    root_gen: u64,
    nodes: RwLock<HashMap<u64, Node>>,
    fds: Mutex<HashMap<u64, Arc<Obj>>>,
    /// Serialises walks; holds when the last walk for a miss ended and how long it took.
    scan: Mutex<Option<(std::time::Instant, std::time::Duration)>>,
    /// The quota and the bytes the tree allocates (shared with the node's volume).
    space: Arc<NasSpace>,
    /// The server's descriptor budget, shared by its trees.
    budget: Arc<FdBudget>,
    /// Whole-tree walks done (at open and for unknown handles).
    walks: std::sync::atomic::AtomicU64,
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.close_all();
    }
}

impl Tree {
    /// Opens the export's root directory and walks its tree once (known objects and the
    /// space they allocate).
    pub fn open(spec: ExportSpec, budget: Arc<FdBudget>) -> io::Result<Tree> {
        let space = Arc::new(NasSpace::new(spec.quota));
        Tree::open_with(spec, space, budget)
    }

    /// [`open`](Self::open) with the space shared with a node's NAS volume (the quota is
    /// the space's, `spec.quota` is not used).
    pub fn open_with(
        spec: ExportSpec,
        space: Arc<NasSpace>,
        budget: Arc<FdBudget>,
    ) -> io::Result<Tree> {
        let root = sys::open_root(&spec.root)?;
        let st = sys::fstat(&root)?;
        if !st.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a directory", spec.root.display()),
            ));
        }
        // openat2 exists since Linux 5.6: refuse to serve without it rather than serve unsafely.
        sys::open_beneath(root.as_raw_fd(), b".", libc::O_PATH, 0).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "openat2 on {}: {e} (Linux 5.6 or later is needed)",
                    spec.root.display()
                ),
            )
        })?;
        let tree = Tree {
            spec,
            root,
            root_ino: st.ino,
            root_gen: st.btime,
            nodes: RwLock::new(HashMap::new()),
            fds: Mutex::new(HashMap::new()),
            scan: Mutex::new(None),
            space,
            budget,
            walks: std::sync::atomic::AtomicU64::new(0),
        };
        tree.rescan()?;
        Ok(tree)
    }

    pub fn root_handle(&self) -> Handle {
        Handle {
            export: self.spec.id,
            ino: self.root_ino,
            gen: self.root_gen,
        }
    }

    pub fn handle_of(&self, st: &Stat) -> Handle {
        Handle {
            export: self.spec.id,
            ino: st.ino,
            gen: st.btime,
        }
    }

    /// Bytes the tree allocates (files, directories, symlinks; each inode once).
    pub fn used(&self) -> u64 {
        self.space.used()
    }

    /// The quota (`None`: the file system's own space).
    pub fn quota(&self) -> Option<u64> {
        self.space.quota()
    }

    /// Adds a change in allocation (bytes, may be negative).
    pub fn add_used(&self, delta: i64) {
        self.space.add(delta)
    }

    /// Reserves `bytes` of the quota for a write about to allocate them; false when the
    /// volume would exceed its size.
    pub fn reserve(&self, bytes: u64) -> bool {
        self.space.reserve(bytes)
    }

    /// Walks the whole tree (no symlink followed, other file systems not entered): learns
    /// every object and recounts the allocated space.
    pub fn rescan(&self) -> io::Result<()> {
        let _one = self.scan.lock().unwrap_or_else(|p| p.into_inner());
        self.walk()
    }

    /// A walk for a handle or name the map does not know (renamed or removed outside NFS),
    /// rate-limited: at most one per [`MISS_RESCAN`], and at most a tenth of the time (the
    /// next no sooner than ten times the last one took), so a client sending unknown
    /// handles cannot make the server walk its tree on every call. `Ok(false)`: not walked
    /// (too soon). Never on a runtime worker: `may_walk` false answers
    /// [`Status::Jukebox`] and the call is run again on the blocking pool.
    pub fn rescan_on_miss(&self, may_walk: bool) -> Result<bool, Status> {
        if !may_walk {
            return Err(Status::Jukebox);
        }
        let mut last = self.scan.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((ended, took)) = *last {
            if ended.elapsed() < MISS_RESCAN.max(took * 10) {
                return Ok(false);
            }
        }
        let t0 = std::time::Instant::now();
        self.walk().map_err(|e| status_of(&e))?;
        *last = Some((std::time::Instant::now(), t0.elapsed()));
        Ok(true)
    }

    /// Whole-tree walks done so far (at open and for unknown handles).
    pub fn walks(&self) -> u64 {
        self.walks.load(Relaxed)
    }

    fn walk(&self) -> io::Result<()> {
        self.walks.fetch_add(1, Relaxed);
        let root_st = sys::fstat(&self.root)?;
        let mut seen = HashSet::new();
        seen.insert(root_st.ino);
        let mut used = root_st.blocks * 512;
        let mut learned = Vec::new();
        let mut queue = VecDeque::from([(root_st.ino, Vec::<u8>::new())]);
        while let Some((ino, path)) = queue.pop_front() {
            let Ok(dir) = sys::open_beneath(
                self.root.as_raw_fd(),
                &path,
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
            ) else {
                continue;
            };
            let Ok(entries) = sys::list_dir(dir.as_raw_fd()) else {
                continue;
            };
            for e in entries {
                let Ok(st) = sys::stat_at(dir.as_raw_fd(), &e.name) else {
                    continue;
                };
                learned.push((
                    st.ino,
                    Node {
                        parent: ino,
                        name: e.name.clone(),
                    },
                ));
                if seen.insert(st.ino) {
                    used += st.blocks * 512;
                    if st.is_dir() && learned.len() < usize::MAX {
                        let mut p = path.clone();
                        if !p.is_empty() {
                            p.push(b'/');
                        }
                        p.extend_from_slice(&e.name);
                        queue.push_back((st.ino, p));
                    }
                }
            }
        }
        let mut nodes = self.nodes.write().unwrap_or_else(|p| p.into_inner());
        nodes.clear();
        nodes.extend(learned);
        self.space.set_used(used);
        Ok(())
    }

    /// Records that `parent/name` is the object `ino`.
    pub fn learn(&self, parent: u64, name: &[u8], ino: u64) {
        if ino == self.root_ino {
            return;
        }
        let mut nodes = self.nodes.write().unwrap_or_else(|p| p.into_inner());
        match nodes.get(&ino) {
            Some(n) if n.parent == parent && n.name == name => {}
            _ => {
                nodes.insert(
                    ino,
                    Node {
                        parent,
                        name: name.to_vec(),
                    },
                );
            }
        }
    }

    /// Forgets an object: its name (it may have another, found again by a rescan) and its
    /// descriptor.
    pub fn forget(&self, ino: u64) {
        self.nodes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ino);
        if self
            .fds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ino)
            .is_some()
        {
            self.budget.give(1);
        }
    }

    /// The parent directory's inode of a known object (the root is its own parent).
    pub fn parent_of(&self, ino: u64) -> Option<u64> {
        if ino == self.root_ino {
            return Some(ino);
        }
        self.nodes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&ino)
            .map(|n| n.parent)
    }

    /// The path of `ino` relative to the root, from the parent chain.
    fn path_of(&self, ino: u64) -> Option<Vec<u8>> {
        let nodes = self.nodes.read().unwrap_or_else(|p| p.into_inner());
        let mut parts = Vec::new();
        let mut cur = ino;
        while cur != self.root_ino {
            let n = nodes.get(&cur)?;
            parts.push(n.name.as_slice());
            cur = n.parent;
            if parts.len() > MAX_DEPTH {
                return None;
            }
        }
        let mut path = Vec::new();
        for (i, p) in parts.iter().rev().enumerate() {
            if i > 0 {
                path.push(b'/');
            }
            path.extend_from_slice(p);
        }
        Some(path)
    }

    /// The open object a handle names: from the descriptor cache, else opened by its path
    /// (after one rescan if the path is unknown, when `may_walk`; else
    /// [`Status::Jukebox`]). STALE when it is gone or is another object now.
    pub fn obj(&self, h: &Handle, may_walk: bool) -> Result<Arc<Obj>, Status> {
        if let Some(o) = self
            .fds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&h.ino)
        {
            if o.gen == h.gen {
                return Ok(o.clone());
            }
        }
        let path = match self.path_of(h.ino) {
            Some(p) => p,
            None => {
                self.rescan_on_miss(may_walk)?;
                self.path_of(h.ino).ok_or(Status::Stale)?
            }
        };
        let obj = match self.open_path(&path, h) {
            Ok(o) => o,
            Err(e)
                if e.raw_os_error() == Some(libc::ENOENT)
                    || e.raw_os_error() == Some(libc::ELOOP) =>
            {
                // renamed or replaced outside NFS: look once more from the top
                if !self.rescan_on_miss(may_walk)? {
                    self.forget(h.ino);
                    return Err(Status::Stale);
                }
                let path = self.path_of(h.ino).ok_or(Status::Stale)?;
                self.open_path(&path, h)
                    .map_err(|e| match e.raw_os_error() {
                        Some(libc::ENOENT) | Some(libc::ELOOP) => Status::Stale,
                        _ => status_of(&e),
                    })?
            }
            Err(e) => return Err(status_of(&e)),
        };
        let Some(obj) = obj else {
            self.forget(h.ino);
            return Err(Status::Stale);
        };
        let obj = Arc::new(obj);
        let mut fds = self.fds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = fds.remove(&h.ino) {
            drop(old); // another generation of the inode: its place is reused
        } else if !self.budget.take() {
            // The server's budget is spent: give up one of this tree's, or keep none.
            match fds.keys().next().copied() {
                Some(k) => {
                    fds.remove(&k);
                }
                None => return Ok(obj),
            }
        }
        fds.insert(h.ino, obj.clone());
        Ok(obj)
    }

    /// `Ok(None)`: the path now holds another object.
    fn open_path(&self, path: &[u8], h: &Handle) -> io::Result<Option<Obj>> {
        let root = self.root.as_raw_fd();
        let probe = sys::open_beneath(root, path, libc::O_PATH, 0)?;
        let st = sys::fstat(&probe)?;
        if st.ino != h.ino || st.btime != h.gen || st.nlink == 0 {
            return Ok(None);
        }
        let (fd, kind) = if st.is_reg() {
            match sys::open_beneath(root, path, libc::O_RDWR, 0) {
                Ok(fd) => (fd, Kind::File { writable: true }),
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EACCES) | Some(libc::EROFS) | Some(libc::EPERM)
                    ) =>
                {
                    (
                        sys::open_beneath(root, path, libc::O_RDONLY, 0)?,
                        Kind::File { writable: false },
                    )
                }
                Err(e) => return Err(e),
            }
        } else if st.is_dir() {
            (
                sys::open_beneath(root, path, libc::O_RDONLY | libc::O_DIRECTORY, 0)?,
                Kind::Dir,
            )
        } else {
            (probe, Kind::Other)
        };
        if kind != Kind::Other && sys::fstat(&fd)?.ino != h.ino {
            return Ok(None); // swapped between the two opens
        }
        Ok(Some(Obj {
            fd,
            ino: st.ino,
            gen: st.btime,
            kind,
            write_lock: Mutex::new(()),
            attrs: AttrCache::default(),
        }))
    }

    /// Renames in the map: `ino` is now `parent/name`.
    pub fn moved(&self, ino: u64, parent: u64, name: &[u8]) {
        self.nodes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                ino,
                Node {
                    parent,
                    name: name.to_vec(),
                },
            );
    }

    /// The parent directory and name of a known object (for LINK, which links by name).
    pub fn name_of(&self, ino: u64) -> Option<(u64, Vec<u8>)> {
        self.nodes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&ino)
            .map(|n| (n.parent, n.name.clone()))
    }

    /// Drops every cached descriptor (a volume going offline, tests).
    pub fn close_all(&self) {
        let mut fds = self.fds.lock().unwrap_or_else(|p| p.into_inner());
        self.budget.give(fds.len());
        fds.clear();
    }

    /// Descriptors this tree keeps open.
    pub fn cached(&self) -> usize {
        self.fds.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// `statvfs` of the file system holding the tree.
    pub fn statvfs(&self) -> io::Result<libc::statvfs> {
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor and out pointer.
        if unsafe { libc::fstatvfs(self.root.as_raw_fd(), &mut s) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(s)
    }
}

impl Tree {
    /// Attributes of a known object by inode (`..` in LOOKUP), without a handle.
    pub fn stat_ino(&self, ino: u64) -> Result<Stat, Status> {
        let path = self.path_of(ino).ok_or(Status::Stale)?;
        let fd =
            sys::open_beneath(self.root.as_raw_fd(), &path, libc::O_PATH, 0).map_err(
                |e| match e.raw_os_error() {
                    Some(libc::ENOENT) => Status::Stale,
                    _ => status_of(&e),
                },
            )?;
        sys::fstat(&fd).map_err(|e| status_of(&e))
    }

    /// Makes `dir/name` a hard link to the known object `ino` (linked by its current
    /// name, so no capability beyond the file system's own checks is needed).
    pub fn link(&self, ino: u64, dir: RawFd, name: &[u8]) -> Result<(), Status> {
        let (parent, old) = self.name_of(ino).ok_or(Status::Stale)?;
        let ppath = self.path_of(parent).ok_or(Status::Stale)?;
        let pfd = sys::open_beneath(
            self.root.as_raw_fd(),
            &ppath,
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )
        .map_err(|e| status_of(&e))?;
        let st = sys::stat_at(pfd.as_raw_fd(), &old).map_err(|e| status_of(&e))?;
        if st.ino != ino {
            return Err(Status::Stale);
        }
        let (a, b) = (
            std::ffi::CString::new(old).map_err(|_| Status::Inval)?,
            std::ffi::CString::new(name).map_err(|_| Status::Inval)?,
        );
        // SAFETY: valid C strings; flags 0 never follows a symlink.
        if unsafe { libc::linkat(pfd.as_raw_fd(), a.as_ptr(), dir, b.as_ptr(), 0) } < 0 {
            return Err(status_of(&io::Error::last_os_error()));
        }
        Ok(())
    }
}

impl Tree {
    /// The directory at `rel` (components separated by `/`) beneath the root, for MOUNT of
    /// a subdirectory; every component must be a directory (no symlink, no `..`).
    pub fn subdir(&self, rel: &[u8]) -> Result<Stat, Status> {
        let mut cur = sys::open_beneath(
            self.root.as_raw_fd(),
            b".",
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )
        .map_err(|e| status_of(&e))?;
        let mut st = sys::fstat(&cur).map_err(|e| status_of(&e))?;
        for comp in rel
            .split(|b| *b == b'/')
            .filter(|c| !c.is_empty() && *c != b".")
        {
            if comp == b".." {
                return Err(Status::Inval);
            }
            let next = sys::stat_at(cur.as_raw_fd(), comp).map_err(|e| status_of(&e))?;
            if !next.is_dir() {
                return Err(Status::NotDir);
            }
            self.learn(st.ino, comp, next.ino);
            cur = sys::open_beneath(cur.as_raw_fd(), comp, libc::O_PATH | libc::O_DIRECTORY, 0)
                .map_err(|e| status_of(&e))?;
            st = next;
        }
        Ok(st)
    }
}
