//! NAS volumes: a volume whose data is a directory tree (`DATA_DIR/nas/NAME/`) served over
//! NFS at a junction path (ONTAP's `nas.path`), instead of one sparse file served over NBD.
//!
//! The node owns what QoS and the control plane need of it: the tree's root, its space
//! ([`NasSpace`]: the quota and the bytes the tree allocates, shared with the NFS front end
//! that keeps it up to date on every WRITE, CREATE, REMOVE...), and the export policy
//! its clients are checked against ([`export_policy`]). The NFS front end (crate
//! `nfs-server`) serves it; NBD never does.
//!
//! **Space, as ONTAP's:** the quota is the volume's allocated space (its size less the
//! snapshot reserve), what `df` on a client shows as the file system's size; used space
//! is the bytes the tree's files, directories and symlinks allocate (`st_blocks`, each
//! inode once), so used-space adaptive policies follow what clients write.

pub mod export_policy;
pub mod export_rule;

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use crate::backend::{Backend, Extent};
use crate::locks;
pub use export_policy::Policy as ExportPolicy;

/// The default mode of a new NAS volume's root directory (ONTAP's default
/// `unix_permissions` for a new volume, `---rwxr-xr-x`). Nobody on the host reaches it:
/// `DATA_DIR/nas` is 0700.
pub const DEFAULT_ROOT_MODE: u32 = 0o755;

/// The name of the built-in export policy every NAS volume gets unless told otherwise.
pub const DEFAULT_EXPORT_POLICY: &str = "default";

/// A NAS volume's quota and the bytes its tree allocates, shared by the node (used space,
/// adaptive limits, statistics) and the NFS front end (which reserves before it writes).
#[derive(Debug)]
pub struct NasSpace {
    /// Bytes the tree may allocate (`u64::MAX`: no quota).
    quota: AtomicU64,
    used: AtomicU64,
}

impl NasSpace {
    pub fn new(quota: Option<u64>) -> NasSpace {
        NasSpace {
            quota: AtomicU64::new(quota.unwrap_or(u64::MAX)),
            used: AtomicU64::new(0),
        }
    }

    /// The quota, `None` when there is none.
    pub fn quota(&self) -> Option<u64> {
        Some(self.quota.load(Relaxed)).filter(|q| *q != u64::MAX)
    }

    pub fn set_quota(&self, bytes: u64) {
        self.quota.store(bytes, Relaxed);
    }

    /// Bytes the tree allocates.
    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }

    /// Set after a count of the whole tree.
    pub fn set_used(&self, bytes: u64) {
        self.used.store(bytes, Relaxed);
    }

    /// Add a change in allocation (bytes, may be negative).
    pub fn add(&self, delta: i64) {
        if delta >= 0 {
            self.used.fetch_add(delta as u64, Relaxed);
        } else {
            let d = delta.unsigned_abs();
            let _ = self
                .used
                .fetch_update(Relaxed, Relaxed, |u| Some(u.saturating_sub(d)));
        }
    }

    /// Reserve `bytes` of the quota for a write about to allocate them; false when the
    /// tree would exceed it.
    pub fn reserve(&self, bytes: u64) -> bool {
        let q = self.quota.load(Relaxed);
        self.used
            .fetch_update(Relaxed, Relaxed, |u| {
                u.checked_add(bytes).filter(|n| *n <= q)
            })
            .is_ok()
    }
}

/// A NAS volume's storage: its root directory and space. As a [`Backend`] it answers what
/// the node asks of every volume (used space, size, sync); block I/O is refused (NBD
/// never reaches a NAS volume: the handshake does not offer it).
pub struct NasStore {
    root: PathBuf,
    space: Arc<NasSpace>,
    /// When the tree was last counted and how long that took.
    counted: Mutex<(std::time::Instant, std::time::Duration)>,
}

/// How often a NAS volume's tree is counted again, so used space follows files put in or
/// removed outside NFS: every 30 s, or twenty times as long as the last count took if
/// that is longer (a count never takes more than a twentieth of a core).
pub const RECOUNT_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl NasStore {
    /// Open the tree at `root` (creating the directory with [`DEFAULT_ROOT_MODE`] if
    /// missing) with `quota` bytes, and count what it allocates.
    pub fn open(root: &Path, quota: u64) -> io::Result<NasStore> {
        match std::fs::symlink_metadata(root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a directory", root.display()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => create_root(root, None)?,
            Err(e) => return Err(e),
        }
        let space = Arc::new(NasSpace::new(Some(quota)));
        let t0 = std::time::Instant::now();
        space.set_used(allocated_bytes(root)?);
        Ok(NasStore {
            root: root.to_path_buf(),
            space,
            counted: Mutex::new((std::time::Instant::now(), t0.elapsed())),
        })
    }

    /// Count the tree again if it is due ([`RECOUNT_EVERY`]); `Ok(true)` when counted.
    /// Blocking (a walk of the tree): not on a runtime worker.
    pub fn recount_if_due(&self) -> io::Result<bool> {
        let (at, took) = *locks::lock(&self.counted);
        if at.elapsed() < RECOUNT_EVERY.max(took * 20) {
            return Ok(false);
        }
        let t0 = std::time::Instant::now();
        let used = allocated_bytes(&self.root)?;
        self.space.set_used(used);
        *locks::lock(&self.counted) = (std::time::Instant::now(), t0.elapsed());
        Ok(true)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn space(&self) -> &Arc<NasSpace> {
        &self.space
    }
}

/// Create a NAS volume's root directory: `mode` (default [`DEFAULT_ROOT_MODE`]) whatever
/// the umask, and the directory it is in synced. An existing one is an error.
pub fn create_root(root: &Path, mode: Option<u32>) -> io::Result<()> {
    let mode = mode.unwrap_or(DEFAULT_ROOT_MODE);
    std::fs::DirBuilder::new().mode(mode).create(root)?;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(mode))?;
    if let Some(parent) = root.parent() {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// The bytes a tree allocates: `st_blocks` of every file, directory and symlink beneath
/// `root` (the root included), each inode once, without following symlinks or entering
/// other file systems.
pub fn allocated_bytes(root: &Path) -> io::Result<u64> {
    let top = std::fs::symlink_metadata(root)?;
    let dev = top.dev();
    let mut seen = HashSet::new();
    seen.insert(top.ino());
    let mut used = top.blocks() * 512;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.dev() != dev || !seen.insert(m.ino()) {
                continue;
            }
            used += m.blocks() * 512;
            if m.is_dir() {
                dirs.push(e.path());
            }
        }
    }
    Ok(used)
}

fn not_block(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what}: a NAS volume is served over NFS, not as a block device"),
    )
}

impl Backend for NasStore {
    fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<()> {
        Err(not_block("read"))
    }
    fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(not_block("write"))
    }
    fn trim(&self, _: u64, _: u64) -> io::Result<()> {
        Err(not_block("trim"))
    }
    fn zero(&self, _: u64, _: u64, _: bool, _: bool) -> io::Result<()> {
        Err(not_block("zero"))
    }
    /// Everything written to the tree's file system reaches stable storage (`syncfs`).
    fn flush(&self) -> io::Result<()> {
        use std::os::unix::io::AsRawFd;
        let d = std::fs::File::open(&self.root)?;
        // SAFETY: syncfs on a descriptor we own.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    fn cache(&self, _: u64, _: u64) -> io::Result<()> {
        Ok(())
    }
    fn extents(&self, _: u64, _: u64, _: usize) -> io::Result<Vec<Extent>> {
        Err(not_block("block status"))
    }
    fn allocated_bytes(&self) -> io::Result<u64> {
        Ok(self.space.used())
    }
    fn byte_len(&self) -> io::Result<u64> {
        Ok(self.space.quota().unwrap_or(0))
    }
    /// The quota follows the volume's size ([`crate::Node::resize_volume`]); nothing to
    /// grow on disk.
    fn grow(&self, _: u64) -> io::Result<()> {
        Ok(())
    }
    // A tree has no blocks: it declares so (and refuses the calls above if made).
    fn can_write(&self) -> bool {
        false
    }
    fn can_trim(&self) -> bool {
        false
    }
    fn can_zero(&self) -> bool {
        false
    }
    fn can_fast_zero(&self) -> bool {
        false
    }
    fn can_extents(&self) -> bool {
        false
    }
}

/// What a volume's declaration says of its NAS side.
#[derive(Clone, PartialEq, Eq)]
pub struct NasSpec {
    /// The junction path clients mount (`/vol500`).
    pub path: String,
    /// The export policy's name ([`DEFAULT_EXPORT_POLICY`] when not given).
    pub export_policy: String,
    /// The export id its file handles carry: assigned once and stored by the control
    /// plane (never derived from the name, never reused). `None`: the node assigns one for
    /// the life of the process (a node without a state database: tests, tenants).
    pub export_id: Option<u32>,
}

/// Written without `export_id`: the state database fingerprints declarations with this
/// text, and a declaration made before export ids existed must keep its fingerprint.
impl std::fmt::Debug for NasSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NasSpec")
            .field("path", &self.path)
            .field("export_policy", &self.export_policy)
            .finish()
    }
}

/// The NAS side of a served volume.
pub struct NasVolume {
    /// The junction path.
    pub path: String,
    /// The export id its file handles carry.
    pub export_id: u32,
    pub store: Arc<NasStore>,
    /// The export policy's name.
    policy_name: Mutex<String>,
    /// Its rules, shared with the NFS front end's export (changed in place, so a new
    /// policy holds for mounted clients at their next call).
    pub rules: Arc<RwLock<export_policy::Policy>>,
}

impl NasVolume {
    pub(crate) fn new(
        path: String,
        export_id: u32,
        store: Arc<NasStore>,
        policy: export_policy::Policy,
    ) -> Self {
        NasVolume {
            path,
            export_id,
            store,
            policy_name: Mutex::new(policy.name.clone()),
            rules: Arc::new(RwLock::new(policy)),
        }
    }

    pub fn policy_name(&self) -> String {
        locks::lock(&self.policy_name).clone()
    }

    /// Put the volume under `policy` (its rules replace the current ones at once).
    pub(crate) fn set_policy(&self, policy: export_policy::Policy) {
        *locks::lock(&self.policy_name) = policy.name.clone();
        *locks::write(&self.rules) = policy;
    }
}

/// A junction path must be absolute, normalised and printable: `/name[/name...]`.
pub fn valid_junction(path: &str) -> Result<(), String> {
    let ok = path.starts_with('/')
        && path.len() > 1
        && path.len() <= 1024
        && !path.ends_with('/')
        && path[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
        && path.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(format!("junction path {path:?} must be /NAME[/NAME...] (printable ASCII, no . or .. components, no trailing /)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_reserves_within_the_quota() {
        let s = NasSpace::new(Some(100));
        assert!(s.reserve(60));
        assert!(!s.reserve(41));
        assert!(s.reserve(40));
        s.add(-150);
        assert_eq!(s.used(), 0);
        assert_eq!(NasSpace::new(None).quota(), None);
    }

    #[test]
    fn a_store_counts_its_tree_once_per_inode_and_refuses_block_io() {
        let dir = test_support::TestDir::new("nas-store");
        let root = dir.join("v");
        let s = NasStore::open(&root, 1 << 30).unwrap();
        let empty = s.allocated_bytes().unwrap();
        std::fs::write(root.join("a"), vec![1u8; 64 << 10]).unwrap();
        std::fs::hard_link(root.join("a"), root.join("b")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("l")).unwrap();
        let counted = allocated_bytes(&root).unwrap();
        assert!(counted >= empty + (64 << 10), "{counted}");
        assert!(
            counted < empty + (128 << 10),
            "a hard link counts once: {counted}"
        );
        let m = std::fs::metadata(&root).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, DEFAULT_ROOT_MODE);
        assert!(s.read_at(&mut [0u8; 1], 0).is_err());
        s.flush().unwrap();
        assert_eq!(s.byte_len().unwrap(), 1 << 30);
        // Files put in outside NFS: counted at the next recount (due every 30 s).
        assert!(!s.recount_if_due().unwrap(), "not due yet");
        std::fs::write(root.join("outside"), vec![2u8; 256 << 10]).unwrap();
        s.counted.lock().unwrap().0 -= RECOUNT_EVERY;
        assert!(s.recount_if_due().unwrap());
        assert!(
            s.space().used() >= counted + (256 << 10),
            "{}",
            s.space().used()
        );
        // A file where the tree should be is refused.
        std::fs::write(dir.join("f"), b"").unwrap();
        assert!(NasStore::open(&dir.join("f"), 1).is_err());
    }
}
