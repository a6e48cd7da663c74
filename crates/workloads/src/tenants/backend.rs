//! Where a point's tenants get their storage:
//!
//! - **the embedded node**: a volume per tenant added to the node under its class's policy,
//!   reached over the node's unix socket;
//! - **a running node** (`--node URL`): a volume per tenant created through its REST API
//!   ([`RemoteNode`]), reached at the NBD address the API reports;
//! - **a directory** (`--target DIR`, e.g. an NFS mount of a real array): a subdirectory per
//!   tenant under the run's own directory `DIR/qoslab-tenants-<pid>-<n>` (created here,
//!   removed at the end), which the applications use as they are: no volume, no mount, and
//!   no QoS qoslab enforces (the target's own, if any, applies);
//! - **block devices** (`--target /dev/X,/dev/Y`): the point's `i`-th tenant gets the
//!   `i`-th device (checked empty or named in `--destroy-data` before the run), no QoS
//!   qoslab enforces either.
//!
//! Volumes are mounted (nbdfuse -> loop -> mkfs -> mount) by the point for the classes
//! whose applications need a file system, block devices too (mkfs -> mount on the device);
//! a directory needs none.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness::series::NodeSample;
use storage_node::config::VolumeSpec;
use storage_node::stats::OpKind;
use storage_node::Node;

use super::remote::RemoteNode;
use super::spec::{ClassSpec, TenantsSpec};

/// Where a tenant's I/O goes once its storage exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A volume's NBD URI (mounted for applications that need a file system).
    Nbd(String),
    /// A directory used as it is.
    Dir(PathBuf),
    /// A block device fio writes directly.
    Block(PathBuf),
}

/// A tenant's volume as the node sees it over a point.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    pub ops: u64,
    pub ceiling_wait_ns: u64,
    pub floor_wait_ns: u64,
    pub lat_ns: u64,
}

/// The storage of one sweep.
pub enum Backend<'a> {
    Embedded {
        node: &'a Arc<Node>,
        /// The node's unix socket (NBD URIs).
        socket: &'a Path,
    },
    Remote(&'a RemoteNode),
    /// The run's directory under the target directory.
    Dir(&'a Path),
    /// Block devices, one per tenant of a point.
    Block(&'a [PathBuf]),
}

/// The text the results give for QoS a directory target does not let qoslab enforce.
pub const NOT_ENFORCED: &str = "not enforced by qoslab: the target's own";

impl Backend<'_> {
    /// Whether qoslab enforces the classes' policies here (a node does; a directory's QoS
    /// is the target's own, which qoslab neither knows nor judges).
    pub fn enforces(&self) -> bool {
        !matches!(self, Backend::Dir(_) | Backend::Block(_))
    }

    /// The step a tenant's failed setup is stored under (a tenant failed there has no
    /// storage to remove).
    pub fn setup_step(&self) -> &'static str {
        match self {
            Backend::Embedded { .. } | Backend::Remote(_) => "create volume",
            Backend::Dir(_) => "create directory",
            Backend::Block(_) => "block device",
        }
    }

    /// Create tenant `name`'s storage for class `c` at point `n` (`index`: the tenant's
    /// place among the point's tenants, all classes): its place and its effective
    /// (ceiling, floor) IOPS (0: none).
    pub fn create(
        &self,
        c: &ClassSpec,
        name: &str,
        n: usize,
        index: usize,
    ) -> Result<(Place, u64, u64), String> {
        match self {
            Backend::Block(devices) => match devices.get(index) {
                Some(d) => Ok((Place::Block(d.clone()), 0, 0)),
                None => Err(format!(
                    "no block device for tenant {name}: --target gave {} (one per tenant; this point has more tenants)",
                    devices.len()
                )),
            },
            Backend::Embedded { node, socket } => {
                let _ = std::fs::remove_file(node.volume_path(name));
                node.add_volume(&VolumeSpec {
                    name: name.to_string(),
                    size: c.size,
                    snapshot_reserve_percent: c.snapshot_reserve_percent,
                    read_only: false,
                    description: format!("tenants: class {}, point {n}", c.name),
                    policy: c.policy.clone(),
                    nas: None,
                })
                .map_err(|e| e.to_string())?;
                let l = node
                    .volumes()
                    .into_iter()
                    .find(|v| v.name == name)
                    .map(|v| v.limits());
                Ok((
                    Place::Nbd(format!("nbd+unix:///{name}?socket={}", socket.display())),
                    l.map(|l| l.ceiling.iops).unwrap_or(0),
                    l.map(|l| l.floor.iops).unwrap_or(0),
                ))
            }
            Backend::Remote(r) => {
                let v = r.create(c, name, n)?;
                Ok((Place::Nbd(v.uri), v.ceiling_iops, v.floor_iops))
            }
            Backend::Dir(root) => {
                let d = root.join(name);
                // A fresh directory: one left by an earlier point of this run is removed.
                let _ = std::fs::remove_dir_all(&d);
                std::fs::create_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
                Ok((Place::Dir(d), 0, 0))
            }
        }
    }

    /// The tenant's cumulative counters (a remote node's waits come from `samples`, the
    /// node sampler's windows: call with the samples after the point; zero before).
    pub fn counters(&self, name: &str, samples: &[NodeSample]) -> Counters {
        match self {
            Backend::Embedded { node, .. } => node
                .volumes()
                .into_iter()
                .find(|v| v.name == name)
                .map(|v| {
                    use std::sync::atomic::Ordering::Relaxed;
                    let s = &v.stats;
                    Counters {
                        ops: s.ops(OpKind::Read) + s.ops(OpKind::Write) + s.ops(OpKind::Other),
                        ceiling_wait_ns: s.ceiling_wait_ns.load(Relaxed),
                        floor_wait_ns: s.floor_wait_ns.load(Relaxed),
                        lat_ns: s.latency.iter().map(|h| h.sum_ns()).sum(),
                    }
                })
                .unwrap_or_default(),
            Backend::Remote(r) => {
                let raw = r.counters(name);
                let (c, f) = r.waits(name, samples);
                Counters {
                    ops: raw.ops,
                    ceiling_wait_ns: c,
                    floor_wait_ns: f,
                    lat_ns: raw.lat_ns,
                }
            }
            Backend::Dir(_) | Backend::Block(_) => Counters::default(),
        }
    }

    /// Remove the tenants' storage (after their file systems are detached); problems.
    /// The embedded node's volume files are removed by a few threads at once: on a host
    /// file system mounted with `discard`, each unlink of a written file waits for its
    /// discards (250 files took minutes one at a time).
    pub fn remove(&self, names: &[String]) -> Vec<String> {
        let mut errors = Vec::new();
        match self {
            Backend::Embedded { node, .. } => {
                let files: Vec<PathBuf> = names
                    .iter()
                    .filter(|n| node.remove_volume(n).is_some())
                    .map(|n| node.volume_path(n))
                    .collect();
                let chunk = files.len().div_ceil(8).max(1);
                std::thread::scope(|s| {
                    for part in files.chunks(chunk) {
                        s.spawn(move || {
                            for f in part {
                                let _ = std::fs::remove_file(f);
                            }
                        });
                    }
                });
            }
            Backend::Remote(r) => {
                for n in names {
                    if let Err(e) = r.remove(n) {
                        errors.push(e);
                    }
                }
            }
            // The devices stay as fio or the tenants' file systems left them (overwritten:
            // that was the agreement; unmounted before this).
            Backend::Block(_) => {}
            Backend::Dir(root) => {
                for n in names {
                    let d = root.join(n);
                    if let Err(e) = std::fs::remove_dir_all(&d) {
                        if e.kind() != std::io::ErrorKind::NotFound {
                            errors.push(format!("{}: {e}", d.display()));
                        }
                    }
                }
            }
        }
        errors
    }

    /// Who is who in the tool sets, and whether the node's CPU is on this host: the
    /// embedded node's threads; a `--node` serving from this host (its process, found by
    /// its API's port); none for a directory.
    pub fn roles(&self) -> (toolsets::Roles, bool) {
        match self {
            Backend::Embedded { .. } => (toolsets::Roles::embedded(), true),
            Backend::Remote(r) => {
                let pid =
                    harness::local_node::node_pid(&harness::target::Target::Node(r.api().clone()));
                (toolsets::Roles::harness_only(pid), pid.is_some())
            }
            Backend::Dir(_) | Backend::Block(_) => (toolsets::Roles::harness_only(None), false),
        }
    }

    /// The devices whose %util the load sampler and the diagnosis watch (empty: any).
    pub fn devices(&self) -> Vec<String> {
        match self {
            Backend::Embedded { node, .. } => toolsets::device::backing_devices(node.data_dir()),
            Backend::Remote(_) => Vec::new(),
            Backend::Dir(root) => toolsets::device::backing_devices(root),
            Backend::Block(devs) => devs
                .iter()
                .filter_map(|d| {
                    let p = std::fs::canonicalize(d).ok()?;
                    Some(p.file_name()?.to_string_lossy().into_owned())
                })
                .collect(),
        }
    }
}

/// The run's own directory under a target directory: a new, uniquely named directory
/// (never one that exists), removed by [`RunDir`]'s drop and on signals.
pub struct RunDir {
    pub path: PathBuf,
    _guard: lifecycle::Guard,
}

impl RunDir {
    pub fn create(target: &Path) -> Result<RunDir, String> {
        if !target.is_dir() {
            return Err(format!(
                "--target {}: the tenants family takes a directory (one subdirectory per tenant) or `embedded`; use --node URL for a running qoslab node",
                target.display()
            ));
        }
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let path = target.join(format!(
            "qoslab-tenants-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        std::fs::create_dir(&path).map_err(|e| format!("--target {}: {e}", path.display()))?;
        let p = path.clone();
        let guard = lifecycle::register(lifecycle::Phase::Local, move || {
            let _ = std::fs::remove_dir_all(&p);
        });
        Ok(RunDir {
            path,
            _guard: guard,
        })
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The kinds of storage a target gives the tenants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// Volumes on a qoslab node (embedded or `--node`).
    Volumes,
    /// A directory per tenant (`--target DIR`).
    Dir,
    /// A block device per tenant (`--target /dev/X,/dev/Y`).
    Block,
}

/// What a target allows: a directory or a block device has no volumes (no emulated
/// controller, and qoslab enforces no policy there); a volume or a block device has no
/// directory for fio's `small_files` mix (fio runs on the device; the applications get a
/// file system made on it). The error names the option and the class.
pub fn check_target(spec: &TenantsSpec, kind: TargetKind) -> Result<(), String> {
    use super::fio_mix::FioMix;
    use super::spec::AppSpec;
    let flag = match kind {
        TargetKind::Volumes => "",
        TargetKind::Dir => "--target DIR",
        TargetKind::Block => "--target /dev/X,/dev/Y",
    };
    if kind != TargetKind::Volumes && spec.capacity.is_some() {
        return Err(format!("[tenants] capacity_iops/capacity_mbps emulate a controller on the embedded node: not with {flag} (the target's storage is its own)"));
    }
    let small_files = |c: &&ClassSpec| {
        matches!(
            c.app,
            AppSpec::Fio {
                mix: FioMix::SmallFiles,
                ..
            }
        )
    };
    if let Some(c) = spec.classes.iter().find(small_files) {
        if kind != TargetKind::Dir {
            return Err(format!(
                "[[class]] {}: mix = \"small_files\" needs a directory target (--target DIR); on a volume or a block device fio runs on the device itself: use oltp, random or log_appender",
                c.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_dir_is_unique_and_removed() {
        let t = harness::target::temp_dir("tenants-backend-test").unwrap();
        let keep = t.join("keep");
        std::fs::write(&keep, "x").unwrap();
        let (a, b) = (RunDir::create(&t).unwrap(), RunDir::create(&t).unwrap());
        assert_ne!(a.path, b.path);
        let be = Backend::Dir(&a.path);
        assert!(!be.enforces());
        let (place, c, f) = be.create(&dummy_class(), "gold-n1-t0", 1, 0).unwrap();
        assert_eq!(place, Place::Dir(a.path.join("gold-n1-t0")));
        assert_eq!((c, f), (0, 0));
        std::fs::write(a.path.join("gold-n1-t0/f"), "x").unwrap();
        assert!(be.remove(&["gold-n1-t0".into()]).is_empty());
        assert!(!a.path.join("gold-n1-t0").exists());
        drop(a);
        drop(b);
        let left: Vec<_> = std::fs::read_dir(&t).unwrap().collect();
        assert_eq!(left.len(), 1, "only the file that was there before is left");
        assert!(keep.exists());
        let e = RunDir::create(&keep).err().unwrap();
        assert!(e.contains("--target"), "{e}");
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn each_target_refuses_what_it_cannot_do_naming_the_class_and_the_flag() {
        use super::super::spec::{RawClass, RawTenants};
        let spec = |app: &str, mix: Option<&str>, capacity: bool| {
            let t = RawTenants {
                capacity_iops: capacity.then_some(1000),
                ..RawTenants::default()
            };
            let c = RawClass {
                name: "c1".into(),
                app: app.into(),
                mix: mix.map(String::from),
                ..Default::default()
            };
            TenantsSpec::from_raw(&t, &[c]).unwrap()
        };
        let small = spec("fio", Some("small_files"), false);
        assert!(check_target(&small, TargetKind::Dir).is_ok());
        for k in [TargetKind::Volumes, TargetKind::Block] {
            let e = check_target(&small, k).unwrap_err();
            assert!(
                e.contains("[[class]] c1") && e.contains("--target DIR"),
                "{e}"
            );
        }
        let git = spec("git", None, false);
        assert!(check_target(&git, TargetKind::Dir).is_ok());
        assert!(check_target(&git, TargetKind::Volumes).is_ok());
        assert!(check_target(&git, TargetKind::Block).is_ok());
        let emulated = spec("fio", None, true);
        assert!(check_target(&emulated, TargetKind::Volumes).is_ok());
        let e = check_target(&emulated, TargetKind::Dir).unwrap_err();
        assert!(
            e.contains("capacity_iops") && e.contains("--target DIR"),
            "{e}"
        );
    }

    fn dummy_class() -> ClassSpec {
        let classes = vec![super::super::spec::RawClass {
            name: "gold".into(),
            app: "fio".into(),
            ..Default::default()
        }];
        super::super::spec::TenantsSpec::from_raw(&Default::default(), &classes)
            .unwrap()
            .classes
            .remove(0)
    }
}
