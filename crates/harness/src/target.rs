//! Targets: where fio's I/O goes.
//!
//! - the embedded node (default): a storage node started in-process for the run, on a unix
//!   socket in a fresh temporary data directory, stopped (and the directory removed) after;
//! - an `nbd://` or `nbd+unix://` URI: fio's nbd engine;
//! - an `nfs://` URL: fio's nfs engine ([`crate::nfs`]);
//! - an `iscsi://HOST[:PORT]/IQN/LUN` URL: fio's libiscsi engine ([`crate::iscsi`]);
//! - a file, directory (`DIR/fiotest`, as dbench does) or block device: libaio, direct=1.
//!
//! - a volume on a running qoslab node (`--node URL --volume NAME`): [`node_volume`] reads
//!   its NBD address and effective limits from the node's REST API ([`crate::node_api`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use storage_node::builder::NodeThread;
use storage_node::{Node, NodeConfig};

use crate::node_spec::NodeSpec;

use crate::node_api::NodeHandle;
use crate::verdict::Limits;

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("embedded node: {0}")]
    Node(String),
    #[error("target {0:?}: {1}")]
    Invalid(String, String),
    /// A `--node` lookup failed.
    #[error("{0}")]
    Remote(String),
}

/// Where the I/O goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Embedded,
    Nbd(String),
    /// An NFSv3 export through fio's nfs engine (libnfs): `nfs://HOST/PATH[?...]`.
    Nfs(String),
    /// A LUN through fio's libiscsi engine: `iscsi://HOST[:PORT]/IQN/LUN`.
    Iscsi(String),
    Path(PathBuf),
    /// A volume on a running qoslab node, resolved through its REST API: its NBD URI and
    /// the effective limits expectations like `policy.ceiling` refer to.
    NodeVolume {
        node: NodeHandle,
        volume: String,
        uri: String,
        limits: Limits,
        /// Size, snapshot reserve and policy as the node reported them (for the store).
        size: u64,
        snapshot_reserve_percent: u8,
        policy: Option<String>,
    },
    /// A running qoslab node without a named volume (`--node URL` alone): for families
    /// that create their own volumes through its API (the tenants family).
    Node(NodeHandle),
    /// Several volumes of a running node, by name (`--node URL` with a plan: each
    /// workload's volume, looked up there after the plan's missing policies and volumes
    /// were created: `workloads::node_setup`).
    NodeVolumes {
        node: NodeHandle,
        volumes: Vec<VolumeOnNode>,
    },
    /// Block devices, one per unit of a family that takes several (the tenants family's
    /// `--target /dev/X,/dev/Y`: a device per tenant).
    Devices(Vec<PathBuf>),
}

/// A volume of a running node as its API reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeOnNode {
    pub name: String,
    /// Its NBD URI (the unix socket when reachable from here, else TCP).
    pub uri: String,
    pub limits: Limits,
    pub size: u64,
    pub snapshot_reserve_percent: u8,
    pub policy: Option<String>,
    /// The LUN of this volume fio drives over iSCSI instead of its NBD export (a plan's
    /// `[[iscsi.lun]]` volume on `--node`: `workloads::node_setup::lun`).
    pub lun: Option<LunOnNode>,
}

/// A LUN of a running node a plan's volume is driven through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LunOnNode {
    /// Its path, `/vol/VOL/LUN`.
    pub path: String,
    /// The node's block volume serving it, `VOL:LUN`: the name of its samples.
    pub node_name: String,
    /// fio's libiscsi URL, `iscsi://HOST:PORT/IQN/NUMBER`.
    pub url: String,
    /// The node had it before the run (its data is someone's: written only with
    /// `--overwrite`); else the run made it.
    pub existing: bool,
}

impl Target {
    /// The file fio writes on a path target (DIR/fiotest, or the file itself); None for
    /// devices and every other target (`target_files` sizes and removes it).
    pub fn written_file(&self) -> Option<PathBuf> {
        match self {
            Target::Path(p) => crate::target_files::file_of(p),
            _ => None,
        }
    }

    /// "embedded", an `nbd://`/`nbd+unix://` URI, an `nfs://` or `iscsi://` URL, or a path (which must exist, except a
    /// file in an existing directory, which fio creates).
    pub fn parse(s: &str) -> Result<Target, TargetError> {
        if s == "embedded" {
            return Ok(Target::Embedded);
        }
        if s.starts_with("nbd://") || s.starts_with("nbd+unix://") {
            if !fio::jobfile::valid_value(s) {
                return Err(TargetError::Invalid(
                    s.into(),
                    "must be one line without ';' or '#'".into(),
                ));
            }
            return Ok(Target::Nbd(s.into()));
        }
        if s.starts_with("nfs://") {
            crate::nfs::check_url(s).map_err(|e| TargetError::Invalid(s.into(), e))?;
            return Ok(Target::Nfs(s.into()));
        }
        if s.starts_with("iscsi://") {
            crate::iscsi::check_url(s)
                .map_err(|e| TargetError::Invalid(crate::iscsi::shown(s), e))?;
            return Ok(Target::Iscsi(s.into()));
        }
        if s.contains("://") {
            return Err(TargetError::Invalid(
                s.into(),
                "allowed: embedded, nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH, nfs://HOST/PATH[?nfsport=P&mountport=P], iscsi://HOST[:PORT]/IQN/LUN, or a file, directory or block device path".into(),
            ));
        }
        let p = PathBuf::from(s);
        if s.ends_with('/') && !p.is_dir() {
            return Err(TargetError::Invalid(
                s.into(),
                if p.exists() {
                    "not a directory (a trailing / names a directory that exists)".into()
                } else {
                    "no such directory (a trailing / names a directory that exists: make it \
                     first, or drop the / and give --create for a new file)"
                        .into()
                },
            ));
        }
        let parent_ok = p
            .parent()
            .map(|d| d.as_os_str().is_empty() || d.is_dir())
            .unwrap_or(false);
        if !p.exists() && !parent_ok {
            return Err(TargetError::Invalid(
                s.into(),
                "no such file or directory".into(),
            ));
        }
        if !fio::jobfile::valid_value(s) || s.contains(':') {
            return Err(TargetError::Invalid(
                s.into(),
                "fio cannot take this path (':' ';' '#' or newline)".into(),
            ));
        }
        Ok(Target::Path(p))
    }

    /// `DEV[,DEV...]`: block devices (each must exist and be one; no duplicates).
    pub fn parse_devices(s: &str) -> Result<Target, TargetError> {
        use std::os::unix::fs::FileTypeExt;
        let mut out: Vec<PathBuf> = Vec::new();
        for d in s.split(',').map(str::trim) {
            let p = PathBuf::from(d);
            match std::fs::metadata(&p) {
                Ok(m) if m.file_type().is_block_device() => {}
                Ok(_) => return Err(TargetError::Invalid(d.into(), "not a block device".into())),
                Err(e) => return Err(TargetError::Invalid(d.into(), e.to_string())),
            }
            if !fio::jobfile::valid_value(d) || d.contains(':') {
                return Err(TargetError::Invalid(
                    d.into(),
                    "fio cannot take this path (':' ';' '#' or newline)".into(),
                ));
            }
            if out.contains(&p) {
                return Err(TargetError::Invalid(d.into(), "listed twice".into()));
            }
            out.push(p);
        }
        Ok(Target::Devices(out))
    }

    /// Whether `s` names block devices (a list, or one block device).
    pub fn names_devices(s: &str) -> bool {
        use std::os::unix::fs::FileTypeExt;
        s.contains(',') || std::fs::metadata(s).is_ok_and(|m| m.file_type().is_block_device())
    }

    pub fn describe(&self) -> String {
        match self {
            Target::Embedded => "embedded node".into(),
            Target::Nbd(u) | Target::Nfs(u) | Target::Iscsi(u) => u.clone(),
            Target::Path(p) => p.display().to_string(),
            Target::NodeVolume {
                node, volume, uri, ..
            } => {
                format!("volume {volume} on node {} ({uri})", node.url())
            }
            Target::Node(node) => format!("node {}", node.url()),
            Target::NodeVolumes { node, volumes } => format!(
                "volumes {} on node {}",
                volumes
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                node.url()
            ),
            Target::Devices(d) => format!(
                "block devices {}",
                d.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// What a job ran on, for its line: the volume's name on a node, else the URI, path or
    /// devices (never a bare "target").
    pub fn short(&self) -> String {
        match self {
            Target::Embedded => "the embedded node".into(),
            Target::Nbd(u) | Target::Nfs(u) | Target::Iscsi(u) => u.clone(),
            Target::Path(p) => p.display().to_string(),
            Target::NodeVolume { volume, .. } => volume.clone(),
            Target::Node(n) | Target::NodeVolumes { node: n, .. } => n.url().to_string(),
            Target::Devices(d) => d
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// Effective limits of the volume under test, when the target knows them.
    pub fn limits(&self) -> Option<Limits> {
        self.limits_for(None)
    }

    /// The node volume `volume` names (the only one when `None`).
    fn volume_on_node(&self, volume: Option<&str>) -> Option<&VolumeOnNode> {
        let Target::NodeVolumes { volumes, .. } = self else {
            return None;
        };
        match volume {
            Some(v) => volumes.iter().find(|x| x.name == v),
            None if volumes.len() == 1 => volumes.first(),
            None => None,
        }
    }

    /// Effective limits of `volume` (a job's volume; `None`: the target's only one).
    pub fn limits_for(&self, volume: Option<&str>) -> Option<Limits> {
        match self {
            Target::NodeVolume { limits, .. } => Some(*limits),
            Target::NodeVolumes { .. } => self.volume_on_node(volume).map(|v| v.limits),
            _ => None,
        }
    }

    /// The name the node's samples of `volume` (a job's volume) carry: its LUN's block
    /// volume (`VOL:LUN`) when the job reaches it over iSCSI, else the volume's own.
    pub fn sampled_volume<'a>(&'a self, volume: Option<&'a str>) -> Option<&'a str> {
        match self.volume_on_node(volume).and_then(|v| v.lun.as_ref()) {
            Some(l) => Some(&l.node_name),
            None => volume,
        }
    }

    /// The LUNs the target's volumes are driven through.
    pub fn luns_on_node(&self) -> Vec<LunOnNode> {
        match self {
            Target::NodeVolumes { volumes, .. } => {
                volumes.iter().filter_map(|v| v.lun.clone()).collect()
            }
            _ => Vec::new(),
        }
    }

    /// fio options reaching `volume` (a job's volume) on this target: a node volume's LUN
    /// (fio's libiscsi engine) or URI, else [`options`](Self::options).
    pub fn options_for(&self, volume: Option<&str>) -> Vec<(String, String)> {
        match self.volume_on_node(volume) {
            Some(VolumeOnNode { lun: Some(l), .. }) => crate::iscsi::options(&l.url),
            Some(v) => vec![
                ("ioengine".into(), "nbd".into()),
                ("uri".into(), v.uri.clone()),
            ],
            None => self.options(),
        }
    }

    /// fio options for the target (non-embedded targets; see [`EmbeddedNode::options`]).
    pub fn options(&self) -> Vec<(String, String)> {
        match self {
            Target::Embedded | Target::Node(_) | Target::Devices(_) => Vec::new(),
            Target::Nbd(u) | Target::NodeVolume { uri: u, .. } if u.starts_with("nfs://") => {
                crate::nfs::options(u)
            }
            Target::Nfs(u) => crate::nfs::options(u),
            Target::Iscsi(u) => crate::iscsi::options(u),
            Target::NodeVolumes { .. } => match self.volume_on_node(None) {
                Some(_) => self.options_for(None),
                None => Vec::new(),
            },
            Target::Nbd(u) | Target::NodeVolume { uri: u, .. } => {
                vec![("ioengine".into(), "nbd".into()), ("uri".into(), u.clone())]
            }
            Target::Path(p) => {
                let file = if p.is_dir() {
                    p.join("fiotest")
                } else {
                    p.clone()
                };
                let mut o = vec![
                    ("ioengine".into(), "libaio".into()),
                    ("direct".into(), "1".into()),
                    ("filename".into(), file.display().to_string()),
                ];
                // A file to create needs a size: one that fits (a job's own size wins).
                if self.written_file().is_some() {
                    if let Ok(Some(size)) = crate::target_files::default_size(&file) {
                        o.push(("size".into(), size.to_string()));
                    }
                }
                o
            }
        }
    }
}

/// Resolve `volume` on the node behind `node`: its NBD URI (the unix socket when it is
/// reachable from here, else TCP) and its effective limits.
pub fn node_volume(node: &NodeHandle, volume: &str) -> Result<Target, TargetError> {
    let v = lookup_volume(node, volume)?.ok_or_else(|| {
        TargetError::Remote(format!(
            "--volume {volume:?}: no such volume on {} (`qoslab volume list` shows them)",
            node.url()
        ))
    })?;
    Ok(Target::NodeVolume {
        node: node.clone(),
        volume: v.name,
        uri: v.uri,
        limits: v.limits,
        size: v.size,
        snapshot_reserve_percent: v.snapshot_reserve_percent,
        policy: v.policy,
    })
}

/// `volume` on the node as its API reports it (None: the node has no such volume).
pub fn lookup_volume(node: &NodeHandle, volume: &str) -> Result<Option<VolumeOnNode>, TargetError> {
    let url = node.url();
    let list = node
        .get(
            &format!(
                "/api/storage/volumes?name={}&fields=*",
                crate::node_api::query_value(volume)
            ),
            std::time::Duration::from_secs(30),
        )
        .map_err(|e| {
            TargetError::Remote(format!(
                "--node {url}: {e} (is `qoslab serve` running with its API there?)"
            ))
        })?;
    let Some(rec) = list["records"].as_array().and_then(|r| r.first()) else {
        return Ok(None);
    };
    let unix = rec["nbd"]["unix_uri"].as_str().filter(|u| {
        u.split_once("?socket=")
            .is_some_and(|(_, p)| Path::new(p).exists())
    });
    let uri = unix
        .or_else(|| rec["nbd"]["uri"].as_str())
        .or_else(|| rec["nfs"]["url"].as_str())
        .ok_or_else(|| {
            TargetError::Remote(format!(
                "{url} reports no NBD address for volume {volume:?}"
            ))
        })?
        .to_string();
    let l = &rec["limits"];
    Ok(Some(VolumeOnNode {
        name: volume.to_string(),
        uri,
        limits: Limits {
            ceiling_iops: l["max_throughput_iops"].as_u64().unwrap_or(0),
            ceiling_bps: l["max_throughput_bytes_per_sec"].as_u64().unwrap_or(0),
            floor_iops: l["min_throughput_iops"].as_u64().unwrap_or(0),
            floor_bps: l["min_throughput_bytes_per_sec"].as_u64().unwrap_or(0),
        },
        size: rec["size"].as_u64().unwrap_or(0),
        snapshot_reserve_percent: rec["space"]["snapshot"]["reserve_percent"]
            .as_u64()
            .unwrap_or(0)
            .min(100) as u8,
        policy: rec["qos"]["policy"]["name"].as_str().map(str::to_string),
        lun: None,
    }))
}

pub use crate::tempdirs::temp_dir;

/// A storage node running in this process, on a unix socket in a temp dir.
pub struct EmbeddedNode {
    dir: PathBuf,
    socket: PathBuf,
    /// Where its NFS front end listens, when it has NAS volumes.
    nfs: Option<std::net::SocketAddr>,
    /// Where its iSCSI target listens (loopback, a port of its own) and its name, when it
    /// has LUNs (`[[iscsi.lun]]`); the LUNs' numbers by volume.
    iscsi: Option<(std::net::SocketAddr, String)>,
    luns: Vec<(String, u16)>,
    node: Arc<Node>,
    running: Option<NodeThread>,
    /// Its directory goes on a signal too (the lifecycle's local phase).
    _on_signal: lifecycle::Guard,
}

impl EmbeddedNode {
    pub fn start(spec: &NodeSpec) -> Result<EmbeddedNode, TargetError> {
        let cfg: &NodeConfig = spec;
        let dir = temp_dir("bench").map_err(|e| TargetError::Node(format!("temp dir: {e}")))?;
        let socket = dir.join("nbd.sock");
        let on_signal = {
            let dir = dir.clone();
            lifecycle::register(lifecycle::Phase::Local, move || {
                let _ = std::fs::remove_dir_all(&dir);
            })
        };
        let fail = |e: String| {
            let _ = std::fs::remove_dir_all(&dir);
            TargetError::Node(e)
        };
        // NAS volumes are served over NFS on a loopback port of its own. Run by a user
        // other than root, the harness's own fio (libnfs) cannot bind a reserved port:
        // MOUNT is not limited to them then (the node is this user's, on loopback).
        let (builder, nfs) = if cfg.volumes.iter().any(|v| v.nas.is_some()) {
            // A plan's node has no `[nfs]`: the defaults.
            let mut nfs = nfs_server::NfsSettings::default();
            // SAFETY: plain syscall.
            if unsafe { libc::geteuid() } != 0 {
                nfs.mount_rootonly = false;
            }
            let node = Node::open(cfg, &dir.join("data")).map_err(|e| fail(e.to_string()))?;
            let fe = nfs_server::NfsFrontEnd::bind(([127, 0, 0, 1], 0).into(), &node, &nfs)
                .map_err(|e| fail(format!("NFS listener: {e}")))?;
            let addr = fe.local_addr();
            (Node::builder_for(node).front_end(fe), Some(addr))
        } else {
            (Node::builder(cfg.clone(), &dir.join("data")), None)
        };
        // LUNs are served over iSCSI on a loopback port of their own, every initiator
        // logging in without a secret (the node is this user's, on loopback); a LUN's
        // masking (`initiators`) holds as on any node.
        let (builder, iscsi) = if spec.iscsi.luns.is_empty() {
            (builder, None)
        } else {
            let fe = iscsi_server::IscsiFrontEnd::bind(([127, 0, 0, 1], 0).into(), &spec.iscsi)
                .map_err(|e| fail(format!("iSCSI listener: {e}")))?;
            let at = (fe.local_addr(), spec.iscsi.iqn.clone());
            (builder.front_end(fe), Some(at))
        };
        // Every thread of the node is named toolsets::NODE_THREADS: the tool sets count
        // them as the node, the rest of this process as the harness.
        let nbd = nbd_server::NbdFrontEnd::bind(
            Some(&socket),
            None,
            // A plan's node has no `[node]` (nor NBD's keys): the defaults.
            nbd_server::NbdSettings::default(),
        )
        .map_err(|e| fail(e.to_string()))?;
        let running = builder
            .front_end(nbd)
            .spawn_thread(toolsets::NODE_THREADS, 2)
            .map_err(|e| fail(e.to_string()))?;
        Ok(EmbeddedNode {
            dir,
            socket,
            nfs,
            iscsi,
            luns: spec
                .iscsi
                .luns
                .iter()
                .map(|l| (l.volume.clone(), l.number))
                .collect(),
            node: running.node().clone(),
            running: Some(running),
            _on_signal: on_signal,
        })
    }

    /// The node's data directory (its volumes' files).
    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// fio's nbd URI of `volume`.
    pub fn uri(&self, volume: &str) -> String {
        format!("nbd+unix:///{volume}?socket={}", self.socket.display())
    }

    /// The libnfs URL of NAS volume `volume` (`None`: not a NAS volume).
    pub fn nfs_url(&self, volume: &str) -> Option<String> {
        let addr = self.nfs?;
        let v = self.node.volume(volume)?;
        let path = &v.nas.as_ref()?.path;
        Some(format!(
            "nfs://{}{path}?nfsport={p}&mountport={p}",
            addr.ip(),
            p = addr.port()
        ))
    }

    /// The libiscsi URL of the LUN serving `volume` (`None`: the volume is no LUN):
    /// `iscsi://127.0.0.1:PORT/IQN/LUN`.
    pub fn iscsi_url(&self, volume: &str) -> Option<String> {
        let (addr, iqn) = self.iscsi.as_ref()?;
        let (_, lun) = self.luns.iter().find(|(v, _)| v == volume)?;
        Some(format!("iscsi://{addr}/{iqn}/{lun}"))
    }

    /// fio options reaching `volume`: fio's nfs engine for a NAS volume, its libiscsi
    /// engine for a LUN, else its nbd engine.
    pub fn options(&self, volume: &str) -> Vec<(String, String)> {
        if let Some(url) = self.nfs_url(volume) {
            return crate::nfs::options(&url);
        }
        if let Some(url) = self.iscsi_url(volume) {
            return crate::iscsi::options(&url);
        }
        vec![
            ("ioengine".into(), "nbd".into()),
            ("uri".into(), self.uri(volume)),
        ]
    }

    /// The effective limits of `volume` right now.
    pub fn limits(&self, volume: &str) -> Option<Limits> {
        self.node.volume(volume).map(|v| v.limits().into())
    }

    /// Stop the node (graceful: in-flight requests finish) and remove its data.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl std::fmt::Debug for EmbeddedNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedNode")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

impl Drop for EmbeddedNode {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        assert_eq!(Target::parse("embedded").unwrap(), Target::Embedded);
        assert!(matches!(
            Target::parse("nbd://127.0.0.1:10809/v").unwrap(),
            Target::Nbd(_)
        ));
        let o = Target::parse("nbd+unix:///v?socket=/tmp/s")
            .unwrap()
            .options();
        assert_eq!(o[0], ("ioengine".to_string(), "nbd".to_string()));
        let d = std::env::temp_dir();
        let o = Target::parse(d.to_str().unwrap()).unwrap().options();
        assert!(o.contains(&("direct".into(), "1".into())));
        assert!(o[2].1.ends_with("/fiotest"));
        assert!(Target::parse("http://x")
            .unwrap_err()
            .to_string()
            .contains("allowed"));
        assert!(Target::parse("/no/such/dir/file").is_err());
        let lun = "iscsi://127.0.0.1:3261/iqn.2026-01.lab.qoslab:n/0";
        let t = Target::parse(lun).unwrap();
        assert_eq!(t, Target::Iscsi(lun.into()));
        assert_eq!((t.describe(), t.short()), (lun.into(), lun.into()));
        assert_eq!(t.options(), crate::iscsi::options(lun));
        assert_eq!(t.options_for(Some("v")), crate::iscsi::options(lun));
        let e = Target::parse("iscsi://127.0.0.1/iqn.2026-01.lab.qoslab:n/99999")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "target \"iscsi://127.0.0.1/iqn.2026-01.lab.qoslab:n/99999\": \
             iscsi://HOST[:PORT]/IQN/LUN: LUN \"99999\" is not a number from 0 to 16383"
        );
        let e = Target::parse("iscsi://u%pw@h/iqn.2026-01.lab.qoslab:n/0")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "target \"iscsi://(hidden)@h/iqn.2026-01.lab.qoslab:n/0\": a user and secret"
            ),
            "{e}"
        );
        assert!(!e.contains("pw"), "{e}");
        let e = Target::parse("iscsci://h/x").unwrap_err().to_string();
        assert!(e.contains("iscsi://HOST[:PORT]/IQN/LUN"), "{e}");
        let missing = d.join(format!("qoslab-no-such-{}/", std::process::id()));
        let e = Target::parse(missing.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such directory (a trailing / names"), "{e}");
        assert!(Target::parse(&format!("{}/", d.display())).is_ok());
    }

    #[test]
    fn a_node_volume_with_a_lun_is_driven_over_iscsi_and_sampled_as_its_block_volume() {
        struct NoApi;
        impl crate::node_api::NodeApi for NoApi {
            fn get(&self, p: &str, _: std::time::Duration) -> Result<serde_json::Value, String> {
                Err(p.into())
            }
        }
        let url = "iscsi://127.0.0.1:3261/iqn.2026-01.lab.qoslab:n/2";
        let vol = |name: &str, lun: bool| VolumeOnNode {
            name: name.into(),
            uri: format!("nbd://127.0.0.1:10809/{name}"),
            limits: Limits::default(),
            size: 1 << 30,
            snapshot_reserve_percent: 0,
            policy: None,
            lun: lun.then(|| LunOnNode {
                path: format!("/vol/{name}/bench"),
                node_name: format!("{name}:bench"),
                url: url.into(),
                existing: false,
            }),
        };
        let t = Target::NodeVolumes {
            node: NodeHandle::new("http://n", Arc::new(NoApi)),
            volumes: vec![vol("db", true), vol("logs", false)],
        };
        assert_eq!(t.options_for(Some("db")), crate::iscsi::options(url));
        assert_eq!(t.options_for(Some("logs"))[0].1, "nbd");
        assert_eq!(t.sampled_volume(Some("db")), Some("db:bench"));
        assert_eq!(t.sampled_volume(Some("logs")), Some("logs"));
        assert_eq!(t.sampled_volume(None), None);
        let luns = t.luns_on_node();
        assert_eq!(luns.len(), 1);
        assert_eq!(
            (luns[0].path.as_str(), luns[0].node_name.as_str()),
            ("/vol/db/bench", "db:bench")
        );
        // One volume alone: its LUN's options without naming it.
        let one = Target::NodeVolumes {
            node: NodeHandle::new("http://n", Arc::new(NoApi)),
            volumes: vec![vol("db", true)],
        };
        assert_eq!(one.options(), crate::iscsi::options(url));
    }

    #[test]
    fn embedded_node_starts_reports_limits_and_stops() {
        let cfg = NodeConfig::parse(
            "[[policy]]\nname = \"p\"\nfixed = { max_throughput_iops = 500 }\n\
             [[volume]]\nname = \"v\"\nsize = \"1GB\"\npolicy = \"p\"\n",
            "t.toml",
        )
        .unwrap();
        let n = EmbeddedNode::start(&cfg.into()).unwrap();
        assert!(n.socket().exists());
        assert_eq!(n.limits("v").unwrap().ceiling_iops, 500);
        assert!(n.uri("v").starts_with("nbd+unix:///v?socket=/"));
        let dir = n.dir.clone();
        n.stop();
        assert!(!dir.exists());
    }

    #[test]
    fn an_embedded_nodes_luns_are_served_on_loopback_each_command_one_op() {
        let cfg = NodeSpec::parse(
            "[[volume]]\nname = \"db\"\nsize = \"64MiB\"\n\
             [[volume]]\nname = \"logs\"\nsize = \"64MiB\"\n\
             [[volume]]\nname = \"plain\"\nsize = \"64MiB\"\n\
             [[iscsi.lun]]\nvolume = \"logs\"\nlun = 3\n\
             [[iscsi.lun]]\nvolume = \"db\"\n",
            "t.toml",
        )
        .unwrap();
        let n = EmbeddedNode::start(&cfg).unwrap();
        let url = n.iscsi_url("logs").unwrap();
        let u = crate::iscsi::IscsiUrl::parse(&url).unwrap();
        assert_eq!((u.host.as_str(), u.lun), ("127.0.0.1", 3), "{url}");
        assert_eq!(u.iqn, iscsi_server::config::DEFAULT_IQN);
        assert_eq!(
            n.iscsi_url("db").unwrap(),
            format!("iscsi://{}/{}/0", u.portal(), u.iqn)
        );
        assert_eq!(n.iscsi_url("plain"), None);
        assert_eq!(
            n.options("db"),
            crate::iscsi::options(&n.iscsi_url("db").unwrap())
        );
        assert_eq!(n.options("plain")[0].1, "nbd");
        // The harness's initiator logs in and reads a block of LUN 3: one operation in
        // the books of volume logs, none in db's.
        let addr: std::net::SocketAddr = u.portal().parse().unwrap();
        let ops = |v: &str| n.node().volume(v).unwrap().stats.total_ops();
        let before = (ops("logs"), ops("db"));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let resp = rt.block_on(async {
            let mut c = iscsi_server::client::Client::connect(addr, crate::iscsi::INITIATOR)
                .await
                .unwrap();
            assert_eq!(c.login(&u.iqn, &[]).await, (0, 0));
            c.command(3, &iscsi_server::client::read10(0, 1), 512, &[])
                .await
        });
        assert_eq!((resp.status, resp.data.len()), (0, 512));
        assert_eq!((ops("logs"), ops("db")), (before.0 + 1, before.1));
        n.stop();
    }
}
