//! `node.toml`: the declarative node configuration (policies and volumes).
//!
//! Validation happens here, once, at the edge: everything past [`NodeConfig`] is trusted.
//! Every error names the file, the line, the field and the value, and what is allowed.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use qos_core::{
    default_adaptive_groups, parse_iops_per_capacity, parse_size, parse_throughput, AdaptivePolicy,
    Allocation, BlockSize, FixedPolicy, Policy,
};
use serde::Deserialize;
use toml::Spanned;

pub mod array;
mod backend;
mod burst;
pub mod nfs;
mod provisioned;
mod values;

use values::{adaptive, fixed, volume_size, weight};

use crate::backend::layers::LayerSpec;
use crate::provisioned::FsSpec;
pub use array::{ArraySpec, MbpsCeilingWithFloor};
pub use burst::CeilingMode;
pub use nfs::{ExportPolicySpec, NfsSettings};

/// Default busy-poll budget per connection, microseconds.
pub const DEFAULT_BUSY_POLL_US: u64 = 50;

/// Largest volume we accept: 1 PiB (sparse files beyond this are a typo, not a plan).
pub const MAX_VOLUME_SIZE: u64 = 1 << 50;

/// Default cost unit of the emulated controller: a request costs max(1, bytes / 32 KiB) ops.
pub const DEFAULT_COST_UNIT: u64 = 32 * 1024;

/// Largest emulated capacity: 100 million ops/s, 1 TiB/s.
pub const MAX_CAPACITY_IOPS: u64 = 100_000_000;
pub const MAX_CAPACITY_MBPS: u64 = 1 << 20;

/// The emulated controller (`[capacity]`): what the whole node can do, shared by all
/// volumes, so contention is reproducible on any machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Node-wide operations per second, in cost units (0: not limited in ops).
    pub iops: u64,
    /// Node-wide MiB/s (0: not limited in bytes).
    pub mbps: u64,
    /// A request costs max(1, bytes / cost_unit) ops.
    pub cost_unit: u64,
    /// How the capacity is shared.
    pub discipline: Discipline,
}

/// How an emulated controller shares its capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discipline {
    /// mClock: floors first, then shares of what is left by weight; ceilings always.
    #[default]
    Mclock,
    /// Arrival order across volumes, floors ignored, ceilings held: an array without
    /// floor QoS (the isolation scenario's control run).
    Fifo,
}

impl std::fmt::Display for Discipline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Discipline::Mclock => "mclock",
            Discipline::Fifo => "fifo",
        })
    }
}

impl std::str::FromStr for Discipline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mclock" => Ok(Discipline::Mclock),
            "fifo" => Ok(Discipline::Fifo),
            other => Err(format!(
                "{other:?}: allowed values are \"mclock\" (floors, weights, ceilings) and \"fifo\" (arrival order, ceilings only)"
            )),
        }
    }
}

impl Default for Capacity {
    fn default() -> Self {
        Capacity {
            iops: 0,
            mbps: 0,
            cost_unit: DEFAULT_COST_UNIT,
            discipline: Discipline::Mclock,
        }
    }
}

impl Capacity {
    /// Does it limit anything?
    pub fn is_set(&self) -> bool {
        self.iops > 0 || self.mbps > 0
    }

    /// As a rate (MiB/s to bytes/s).
    pub fn rate(&self) -> qos_core::Rate {
        qos_core::Rate {
            iops: self.iops,
            bytes_per_sec: self.mbps << 20,
        }
    }

    /// Check ranges (`what` names the source in messages, e.g. `node.toml:12: capacity`).
    pub fn validate(&self, what: &str) -> Result<(), ConfigError> {
        if self.iops > MAX_CAPACITY_IOPS {
            return Err(ConfigError(format!(
                "{what}.iops = {}: allowed range is 0 (not limited) to {MAX_CAPACITY_IOPS}",
                self.iops
            )));
        }
        if self.mbps > MAX_CAPACITY_MBPS {
            return Err(ConfigError(format!(
                "{what}.mbps = {}: allowed range is 0 (not limited) to {MAX_CAPACITY_MBPS}",
                self.mbps
            )));
        }
        if !(512..=(64 << 20)).contains(&self.cost_unit) {
            return Err(ConfigError(format!(
                "{what}.cost_unit = {}: allowed range is 512 B to 64 MiB",
                self.cost_unit
            )));
        }
        Ok(())
    }
}

/// A validated node configuration.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub data_dir: Option<PathBuf>,
    pub listen_unix: Option<PathBuf>,
    pub listen_tcp: Option<SocketAddr>,
    /// Address of the REST API and `/metrics` (HTTP).
    pub listen_http: Option<SocketAddr>,
    /// Export served when a client asks for the empty name.
    pub default_export: Option<String>,
    /// Serve reads from a shared read-only mapping of each volume file (default false:
    /// pread). Faster only while the file is hot in the page cache; see ARCHITECTURE.md.
    pub mmap_reads: bool,
    /// Microseconds a connection spins for its next request before parking (0: never).
    pub busy_poll_us: u64,
    /// The emulated controller; `None`: the backend's real speed, floors not enforced.
    pub capacity: Option<Capacity>,
    /// Measure the backend at start and use that as the capacity (`[capacity] calibrate`).
    pub calibrate: bool,
    /// How ceilings treat bursts (`[node] ceiling_mode`): strict (default) or ONTAP's +50 %.
    pub ceiling_mode: CeilingMode,
    /// An emulated provisioned file system between QoS and the backend (`[provisioned]`).
    pub provisioned: Option<FsSpec>,
    /// The emulated array's accounting, cost model and service latency (`[capacity]`).
    pub array: ArraySpec,
    /// Layers over every volume's file (`[backend]`: a slower device).
    pub layers: LayerSpec,
    /// User-declared policies (the default adaptive groups are added by the node).
    pub policies: Vec<PolicySpec>,
    pub volumes: Vec<VolumeSpec>,
    /// Where each `[node]` key was set (`"node.listen_unix"` → `"node.toml:5"`), so a
    /// setting that fails later (a socket that cannot be bound) names its source.
    pub sources: std::collections::BTreeMap<String, String>,
    /// The NFS front end (`[nfs]`): address and transfer sizes.
    pub nfs: NfsSettings,
    /// Export policies (`[[export_policy]]`; `default`, loopback only, is built in).
    pub export_policies: Vec<ExportPolicySpec>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            data_dir: None,
            listen_unix: None,
            listen_tcp: None,
            listen_http: None,
            default_export: None,
            mmap_reads: false,
            busy_poll_us: DEFAULT_BUSY_POLL_US,
            capacity: None,
            calibrate: false,
            ceiling_mode: CeilingMode::Strict,
            provisioned: None,
            array: ArraySpec::default(),
            layers: LayerSpec::default(),
            policies: Vec::new(),
            volumes: Vec::new(),
            sources: Default::default(),
            nfs: NfsSettings::default(),
            export_policies: Vec::new(),
        }
    }
}

/// A named QoS policy.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    pub name: String,
    pub policy: Policy,
}

/// A volume declaration.
#[derive(Clone, PartialEq, Eq)]
pub struct VolumeSpec {
    pub name: String,
    pub size: u64,
    pub snapshot_reserve_percent: u8,
    pub read_only: bool,
    pub description: String,
    pub policy: Option<String>,
    /// A NAS volume (a tree served over NFS at this junction path); `None`: a block
    /// volume (one sparse file served over NBD).
    pub nas: Option<crate::nas::NasSpec>,
}

/// Written as the derived form would, leaving `nas` out when it is `None`: the state
/// database fingerprints declarations with this text, and block volumes declared before
/// NAS volumes existed must keep their fingerprints (or a restart would re-apply them over
/// changes made through the API).
impl std::fmt::Debug for VolumeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("VolumeSpec");
        d.field("name", &self.name)
            .field("size", &self.size)
            .field("snapshot_reserve_percent", &self.snapshot_reserve_percent)
            .field("read_only", &self.read_only)
            .field("description", &self.description)
            .field("policy", &self.policy);
        if let Some(n) = &self.nas {
            d.field("nas", n);
        }
        d.finish()
    }
}

/// A configuration error, already phrased for a human.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    node: Option<RawNode>,
    // Not `Spanned`: toml cannot span a table made implicitly by a dotted header
    // (`[capacity.latency]` alone); [`table_line`] finds the line instead.
    capacity: Option<RawCapacity>,
    provisioned: Option<provisioned::RawFs>,
    backend: Option<backend::RawBackend>,
    nfs: Option<Spanned<nfs::RawNfs>>,
    #[serde(default)]
    export_policy: Vec<Spanned<nfs::RawExportPolicy>>,
    #[serde(default)]
    policy: Vec<Spanned<RawPolicy>>,
    #[serde(default)]
    volume: Vec<Spanned<RawVolume>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    data_dir: Option<Spanned<PathBuf>>,
    listen_unix: Option<Spanned<PathBuf>>,
    listen_tcp: Option<Spanned<String>>,
    listen_http: Option<Spanned<String>>,
    default_export: Option<Spanned<String>>,
    mmap_reads: Option<bool>,
    busy_poll_us: Option<Spanned<u64>>,
    ceiling_mode: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapacity {
    iops: Option<i64>,
    mbps: Option<i64>,
    cost_unit: Option<NumOrStr>,
    calibrate: Option<bool>,
    discipline: Option<String>,
    // The array's keys (config/array.rs).
    io_accounting: Option<String>,
    mbps_ceiling_with_floor: Option<String>,
    read: Option<std::collections::BTreeMap<String, String>>,
    write: Option<std::collections::BTreeMap<String, String>>,
    latency: Option<array::RawLatency>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    name: Spanned<String>,
    // Not `Spanned`: a dotted key (`fixed.max_throughput = "200iops"`) makes the table
    // implicitly, and toml cannot span it; [`key_offset`] finds the key's line instead.
    fixed: Option<RawFixed>,
    adaptive: Option<RawAdaptive>,
    provisioned: Option<burst::RawProvisioned>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFixed {
    max_throughput_iops: Option<i64>,
    max_throughput_mbps: Option<i64>,
    min_throughput_iops: Option<i64>,
    min_throughput_mbps: Option<i64>,
    /// ONTAP CLI form: "500iops", "100MB/s", "500iops,100MB/s".
    max_throughput: Option<String>,
    min_throughput: Option<String>,
    capacity_shared: Option<bool>,
    weight: Option<i64>,
    burst: Option<burst::RawBurst>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdaptive {
    expected_iops: Option<NumOrStr>,
    peak_iops: Option<NumOrStr>,
    absolute_min_iops: Option<i64>,
    expected_iops_allocation: Option<String>,
    peak_iops_allocation: Option<String>,
    block_size: Option<String>,
    weight: Option<i64>,
    burst: Option<burst::RawBurst>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVolume {
    name: Spanned<String>,
    size: Spanned<NumOrStr>,
    snapshot_reserve_percent: Option<Spanned<i64>>,
    read_only: Option<bool>,
    description: Option<String>,
    policy: Option<Spanned<String>>,
    /// A NAS volume's junction path (ONTAP's `nas.path`).
    nas_path: Option<String>,
    /// A NAS volume's export policy (default: `default`, loopback only).
    export_policy: Option<String>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
}

impl NumOrStr {
    fn as_text(&self) -> String {
        match self {
            NumOrStr::Int(i) => i.to_string(),
            NumOrStr::Float(f) => f.to_string(),
            NumOrStr::Str(s) => s.clone(),
        }
    }
}

/// Is `name` acceptable as a volume or policy name (and NBD export name)?
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !name.starts_with(['-', '.'])
}

const NAME_RULE: &str = "1 to 128 characters from A-Z a-z 0-9 _ - . (not starting with - or .)";

impl NodeConfig {
    /// Read and validate a config file.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: cannot read: {e}", path.display())))?;
        NodeConfig::parse(&text, &path.display().to_string())
    }

    /// Parse and validate config text; `origin` names the file in messages.
    pub fn parse(text: &str, origin: &str) -> Result<NodeConfig, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| format!(":{}", line_of(text, s.start)))
                .unwrap_or_default();
            ConfigError(format!("{origin}{line}: {}", e.message()))
        })?;
        let mut cfg = NodeConfig::default();
        let at = |offset: usize| format!("{origin}:{}", line_of(text, offset));
        if let Some(node) = raw.node {
            let mut note = |key: &str, offset: usize| {
                cfg.sources.insert(format!("node.{key}"), at(offset));
            };
            if let Some(d) = &node.data_dir {
                note("data_dir", d.span().start);
            }
            if let Some(u) = &node.listen_unix {
                note("listen_unix", u.span().start);
            }
            cfg.data_dir = node.data_dir.map(Spanned::into_inner);
            cfg.listen_unix = node.listen_unix.map(Spanned::into_inner);
            if let Some(t) = node.listen_tcp {
                let addr = t.get_ref().parse::<SocketAddr>().map_err(|_| {
                    ConfigError(format!(
                        "{}: node.listen_tcp = {:?}: expected HOST:PORT with an IP address, e.g. 127.0.0.1:10809",
                        at(t.span().start),
                        t.get_ref()
                    ))
                })?;
                cfg.sources
                    .insert("node.listen_tcp".into(), at(t.span().start));
                cfg.listen_tcp = Some(addr);
            }
            if let Some(t) = node.listen_http {
                let addr = t.get_ref().parse::<SocketAddr>().map_err(|_| {
                    ConfigError(format!(
                        "{}: node.listen_http = {:?}: expected HOST:PORT with an IP address, e.g. 127.0.0.1:8080",
                        at(t.span().start),
                        t.get_ref()
                    ))
                })?;
                cfg.sources
                    .insert("node.listen_http".into(), at(t.span().start));
                cfg.listen_http = Some(addr);
            }
            if let Some(d) = &node.default_export {
                cfg.sources
                    .insert("node.default_export".into(), at(d.span().start));
            }
            cfg.default_export = node.default_export.map(Spanned::into_inner);
            cfg.mmap_reads = node.mmap_reads.unwrap_or(false);
            cfg.busy_poll_us = match &node.busy_poll_us {
                None => DEFAULT_BUSY_POLL_US,
                Some(v) if *v.get_ref() <= 10_000 => *v.get_ref(),
                Some(v) => {
                    return Err(ConfigError(format!(
                        "{}: node.busy_poll_us = {}: allowed range is 0 (off) to 10000",
                        at(v.span().start),
                        v.get_ref()
                    )))
                }
            };
            if let Some(m) = &node.ceiling_mode {
                cfg.ceiling_mode = m.get_ref().parse().map_err(|e| {
                    ConfigError(format!("{}: node.ceiling_mode = {e}", at(m.span().start)))
                })?;
            }
        }

        if let Some(sb) = &raw.backend {
            let what = format!("{origin}:{}: backend", table_line(text, "backend"));
            cfg.layers = backend::parse(&what, sb)?;
        }

        if let Some(sn) = &raw.nfs {
            let what = format!("{origin}:{}: nfs", line_of(text, sn.span().start));
            cfg.nfs = nfs::parse(&what, sn.get_ref())?;
        }
        let mut export_names = BTreeSet::from([crate::nas::DEFAULT_EXPORT_POLICY.to_string()]);
        for se in &raw.export_policy {
            let e = se.get_ref();
            let what = format!(
                "{origin}:{}: export_policy {:?}",
                line_of(text, se.span().start),
                e.name
            );
            if !valid_name(&e.name) {
                return Err(ConfigError(format!(
                    "{what}: invalid name; names are {NAME_RULE}"
                )));
            }
            let spec = nfs::export_policy(&what, e)?;
            if e.name == crate::nas::DEFAULT_EXPORT_POLICY {
                // Declaring `default` replaces the built-in loopback rule.
                cfg.export_policies.retain(|p| p.name() != e.name);
            } else if !export_names.insert(e.name.clone()) {
                return Err(ConfigError(format!("{what}: duplicate export policy name")));
            }
            cfg.export_policies.push(spec);
        }

        if let Some(sp) = &raw.provisioned {
            let what = format!("{origin}:{}: provisioned", table_line(text, "provisioned"));
            cfg.provisioned = Some(provisioned::parse(&what, sp)?);
        }

        if let Some(mut c) = raw.capacity {
            let what = format!("{origin}:{}: capacity", table_line(text, "capacity"));
            cfg.array = array::parse(
                &what,
                array::RawArray {
                    io_accounting: c.io_accounting.take(),
                    mbps_ceiling_with_floor: c.mbps_ceiling_with_floor.take(),
                    read: c.read.take(),
                    write: c.write.take(),
                    latency: c.latency.take(),
                },
            )?;
            let c = &c;
            let count = |field: &str, v: Option<i64>| match v {
                Some(i) if i < 0 => Err(ConfigError(format!(
                    "{what}.{field} = {i}: must be 0 (not limited) or positive"
                ))),
                v => Ok(v.unwrap_or(0) as u64),
            };
            let cap = Capacity {
                iops: count("iops", c.iops)?,
                mbps: count("mbps", c.mbps)?,
                cost_unit: match &c.cost_unit {
                    None => DEFAULT_COST_UNIT,
                    Some(NumOrStr::Int(i)) if *i >= 0 => *i as u64,
                    Some(NumOrStr::Str(s)) => parse_size(s)
                        .map_err(|e| ConfigError(format!("{what}.cost_unit: {e}")))?,
                    Some(v) => {
                        return Err(ConfigError(format!(
                            "{what}.cost_unit = {}: give bytes as an integer or a size such as \"32KiB\"",
                            v.as_text()
                        )))
                    }
                },
                discipline: match &c.discipline {
                    None => Discipline::Mclock,
                    Some(d) => d
                        .parse()
                        .map_err(|e| ConfigError(format!("{what}.discipline = {e}")))?,
                },
            };
            cap.validate(&what)?;
            cfg.calibrate = c.calibrate.unwrap_or(false);
            if cap.is_set() && cfg.calibrate {
                return Err(ConfigError(format!(
                    "{what}: give either iops/mbps or calibrate = true, not both"
                )));
            }
            if cfg.array.model.is_some() && (cap.is_set() || cfg.calibrate) {
                return Err(ConfigError(format!(
                    "{what}: give either iops/mbps (a budget of ops and bytes), read/write (an \
                     array's measured points) or calibrate = true, not two of them"
                )));
            }
            if c.cost_unit.is_some() && !cfg.array.accounting.is_whole() {
                return Err(ConfigError(format!(
                    "{what}: cost_unit applies to io_accounting = \"whole\" only; with {} the \
                     controller counts the same operations as ceilings and floors",
                    cfg.array.accounting
                )));
            }
            cfg.capacity = Some(cap);
        }

        let mut names: BTreeSet<String> = default_adaptive_groups()
            .into_iter()
            .map(|(n, _)| n.to_string())
            .collect();
        for sp in &raw.policy {
            let p = sp.get_ref();
            let name = p.name.get_ref();
            // Errors point at the key that is wrong: the name's line, or the kind's table.
            let ctx_at = |offset: usize| {
                let where_ = at(offset);
                move |msg: String| ConfigError(format!("{where_}: policy {name:?}: {msg}"))
            };
            let ctx = ctx_at(p.name.span().start);
            if !valid_name(name) {
                return Err(ctx(format!("invalid name; names are {NAME_RULE}")));
            }
            if !names.insert(name.clone()) {
                return Err(ctx(
                    "duplicate policy name (extreme, performance and value are built in)".into(),
                ));
            }
            let policy = match (&p.fixed, &p.adaptive, &p.provisioned) {
                (Some(f), None, None) => {
                    let ctx = ctx_at(key_offset(text, sp.span().start, "fixed"));
                    let pol = Policy::Fixed(fixed(f).map_err(&ctx)?);
                    pol.validate().map_err(|e| ctx(e.to_string()))?;
                    pol
                }
                (None, Some(a), None) => {
                    let ctx = ctx_at(key_offset(text, sp.span().start, "adaptive"));
                    let pol = Policy::Adaptive(adaptive(a).map_err(&ctx)?);
                    pol.validate().map_err(|e| ctx(e.to_string()))?;
                    pol
                }
                (None, None, Some(v)) => {
                    let ctx = ctx_at(key_offset(text, sp.span().start, "provisioned"));
                    let pol = Policy::Provisioned(burst::provisioned(v).map_err(&ctx)?);
                    pol.validate().map_err(|e| ctx(e.to_string()))?;
                    pol
                }
                _ => {
                    return Err(ctx_at(sp.span().start)(
                        "exactly one of `fixed`, `adaptive` or `provisioned` must be given".into(),
                    ))
                }
            };
            cfg.policies.push(PolicySpec {
                name: name.clone(),
                policy,
            });
        }

        let mut vol_names = BTreeSet::new();
        for sv in &raw.volume {
            let v = sv.get_ref();
            let name = v.name.get_ref();
            let ctx_at = |offset: usize| {
                let where_ = at(offset);
                move |msg: String| ConfigError(format!("{where_}: volume {name:?}: {msg}"))
            };
            let ctx = ctx_at(v.name.span().start);
            if !valid_name(name) {
                return Err(ctx(format!("invalid name; names are {NAME_RULE}")));
            }
            if !vol_names.insert(name.clone()) {
                return Err(ctx("duplicate volume name".into()));
            }
            let size = volume_size(v.size.get_ref()).map_err(ctx_at(v.size.span().start))?;
            let reserve = match &v.snapshot_reserve_percent {
                None => 5,
                Some(r) if (0..=90).contains(r.get_ref()) => *r.get_ref() as u8,
                Some(r) => {
                    return Err(ctx_at(r.span().start)(format!(
                        "snapshot_reserve_percent = {}: allowed range is 0 to 90",
                        r.get_ref()
                    )))
                }
            };
            if let Some(pn) = &v.policy {
                if !names.contains(pn.get_ref()) {
                    let known: Vec<&str> = names.iter().map(String::as_str).collect();
                    return Err(ctx_at(pn.span().start)(format!(
                        "policy = {:?} is not defined; defined policies: {}",
                        pn.get_ref(),
                        known.join(", ")
                    )));
                }
            }
            let nas = match (&v.nas_path, &v.export_policy) {
                (None, None) => None,
                (None, Some(_)) => {
                    return Err(ctx(
                        "export_policy applies to NAS volumes only: give nas_path too".into(),
                    ))
                }
                (Some(p), e) => {
                    crate::nas::valid_junction(p).map_err(|m| ctx(format!("nas_path: {m}")))?;
                    if let Some(other) = cfg
                        .volumes
                        .iter()
                        .find(|o| o.nas.as_ref().is_some_and(|n| &n.path == p))
                    {
                        return Err(ctx(format!(
                            "nas_path = {p:?} is already volume {:?}'s junction path",
                            other.name
                        )));
                    }
                    let e = e
                        .clone()
                        .unwrap_or_else(|| crate::nas::DEFAULT_EXPORT_POLICY.to_string());
                    if !export_names.contains(&e) {
                        let known: Vec<&str> = export_names.iter().map(String::as_str).collect();
                        return Err(ctx(format!(
                            "export_policy = {e:?} is not defined; defined export policies: {}",
                            known.join(", ")
                        )));
                    }
                    Some(crate::nas::NasSpec {
                        path: p.clone(),
                        export_policy: e,
                        export_id: None,
                    })
                }
            };
            cfg.volumes.push(VolumeSpec {
                name: name.clone(),
                size,
                snapshot_reserve_percent: reserve,
                read_only: v.read_only.unwrap_or(false),
                description: v.description.clone().unwrap_or_default(),
                policy: v.policy.as_ref().map(|p| p.get_ref().clone()),
                nas,
            });
        }
        if let Some(d) = &cfg.default_export {
            if !vol_names.contains(d) {
                let at = cfg
                    .sources
                    .get("node.default_export")
                    .cloned()
                    .unwrap_or_else(|| origin.to_string());
                return Err(ConfigError(format!(
                    "{at}: node.default_export = {d:?} is not a declared volume"
                )));
            }
        }
        Ok(cfg)
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

/// The offset of the first line at or after `from` that sets `key` (`key = ...` or
/// `key.field = ...`), else `from`.
fn key_offset(text: &str, from: usize, key: &str) -> usize {
    let mut off = from;
    for line in text.get(from..).unwrap_or("").split_inclusive('\n') {
        let t = line.trim_start();
        if t.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with(['=', '.']))
        {
            return off + (line.len() - t.len());
        }
        off += line.len();
    }
    from
}

/// The line where top-level table `name` is first declared: a `[name]` or `[name.sub]`
/// header, or a `name = {...}` / `name.key = ...` key (1 when not found).
fn table_line(text: &str, name: &str) -> usize {
    text.lines()
        .position(|l| {
            let t = l.trim_start();
            let key = t
                .strip_prefix('[')
                .map(|h| h.trim_start())
                .unwrap_or(t)
                .trim_start_matches('"');
            key.strip_prefix(name).is_some_and(|rest| {
                let rest = rest.trim_start_matches('"').trim_start();
                rest.starts_with(']') || rest.starts_with('.') || rest.starts_with('=')
            })
        })
        .map_or(1, |i| i + 1)
}

#[cfg(test)]
mod tests;
