//! `node.toml`: the declarative node configuration (policies and volumes).
//!
//! Validation happens here, once, at the edge: everything past [`NodeConfig`] is trusted.
//! Every error names the file, the line, the field and the value, and what is allowed.
//! The front ends' keys (`[nfs]`, `[iscsi]`, NBD's `[node] default_export` and
//! `busy_poll_us`) are each front end's own (their `config` modules), read from the same
//! text with [`Src`] against the parsed `NodeConfig`; this parser only knows their names.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use qos_core::{
    parse_iops_per_capacity, parse_size, parse_throughput, AdaptivePolicy, Allocation, BlockSize,
    FixedPolicy, Policy,
};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use toml::Spanned;

pub mod array;
mod backend;
mod burst;
pub mod nfs;
mod provisioned;
pub mod san;
mod sections;
mod values;

use values::weight;

use crate::backend::layers::LayerSpec;
use crate::provisioned::FsSpec;
pub use array::{ArraySpec, MbpsCeilingWithFloor};
pub use burst::CeilingMode;
pub use nfs::ExportPolicySpec;

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
    /// Serve reads from a shared read-only mapping of each volume file (default false:
    /// pread). Faster only while the file is hot in the page cache; see docs/BENCHMARKS.md.
    pub mmap_reads: bool,
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
    /// Export policies (`[[export_policy]]`; `default`, loopback only, is built in).
    pub export_policies: Vec<ExportPolicySpec>,
    /// ONTAP's SAN objects (`[[lun]]`, `[[igroup]]`, `[[lun_map]]`), applied by the
    /// control plane at start when new or edited.
    pub san: san::SanDecls,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            data_dir: None,
            listen_unix: None,
            listen_tcp: None,
            listen_http: None,
            mmap_reads: false,
            capacity: None,
            calibrate: false,
            ceiling_mode: CeilingMode::Strict,
            provisioned: None,
            array: ArraySpec::default(),
            layers: LayerSpec::default(),
            policies: Vec::new(),
            volumes: Vec::new(),
            sources: Default::default(),
            export_policies: Vec::new(),
            san: san::SanDecls::default(),
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
    // The front ends' sections are parsed and checked by each (their `config` modules);
    // named here, in the order written, so an unknown key's message lists every one.
    #[serde(rename = "nfs")]
    _nfs: Option<IgnoredAny>,
    #[serde(default)]
    export_policy: Vec<Spanned<nfs::RawExportPolicy>>,
    #[serde(rename = "iscsi")]
    _iscsi: Option<IgnoredAny>,
    #[serde(default)]
    policy: Vec<Spanned<RawPolicy>>,
    #[serde(default)]
    volume: Vec<Spanned<RawVolume>>,
    #[serde(default)]
    lun: Vec<Spanned<san::RawLun>>,
    #[serde(default)]
    igroup: Vec<Spanned<san::RawIgroup>>,
    #[serde(default)]
    lun_map: Vec<Spanned<san::RawLunMap>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    data_dir: Option<Spanned<PathBuf>>,
    listen_unix: Option<Spanned<PathBuf>>,
    listen_tcp: Option<Spanned<String>>,
    listen_http: Option<Spanned<String>>,
    // NBD's keys are parsed and checked by its front end (nbd-server's `config`); named
    // here, in the order written, so an unknown key's message lists every allowed one.
    #[serde(rename = "default_export")]
    _default_export: Option<IgnoredAny>,
    mmap_reads: Option<bool>,
    #[serde(rename = "busy_poll_us")]
    _busy_poll_us: Option<IgnoredAny>,
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

/// A number or a string (`size = 4096` or `size = "4KiB"`), as written.
#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
pub enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
}

impl NumOrStr {
    /// As written.
    pub fn as_text(&self) -> String {
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

/// What [`valid_name`] allows, for error messages.
pub const NAME_RULE: &str = "1 to 128 characters from A-Z a-z 0-9 _ - . (not starting with - or .)";

impl NodeConfig {
    /// Read and validate a config file.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        NodeConfig::parse(&read(path)?, &path.display().to_string())
    }

    /// Parse and validate config text; `origin` names the file in messages.
    pub fn parse(text: &str, origin: &str) -> Result<NodeConfig, ConfigError> {
        let src = Src { text, origin };
        let raw: RawConfig = src.deserialize()?;
        let mut cfg = NodeConfig::default();
        if let Some(node) = raw.node {
            sections::node(&src, node, &mut cfg)?;
        }
        if let Some(sb) = &raw.backend {
            let what = format!("{origin}:{}: backend", table_line(text, "backend"));
            cfg.layers = backend::parse(&what, sb)?;
        }
        let export_names = sections::export_policies(&src, &raw.export_policy, &mut cfg)?;
        if let Some(sp) = &raw.provisioned {
            let what = format!("{origin}:{}: provisioned", table_line(text, "provisioned"));
            cfg.provisioned = Some(provisioned::parse(&what, sp)?);
        }
        if let Some(c) = raw.capacity {
            sections::capacity(&src, c, &mut cfg)?;
        }
        let names = sections::policies(&src, &raw.policy, &mut cfg)?;
        sections::volumes(&src, &raw.volume, &names, &export_names, &mut cfg)?;
        let raw_san = san::RawSan {
            luns: &raw.lun,
            igroups: &raw.igroup,
            maps: &raw.lun_map,
        };
        cfg.san = san::parse(&src, raw_san, &cfg.volumes, &names)?;
        Ok(cfg)
    }
}

/// A config file's text (its name in messages: `path.display()`), for
/// [`NodeConfig::parse`] and each front end's section.
pub fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("{}: cannot read: {e}", path.display())))
}

/// A config's text and where it came from, for messages (`file:line`): what
/// [`NodeConfig::parse`] reads its sections from, and what each front end reads its own
/// section from (with [`Src::deserialize`]), so every message is made the same way.
#[derive(Debug, Clone, Copy)]
pub struct Src<'a> {
    pub text: &'a str,
    /// The file's name in messages.
    pub origin: &'a str,
}

impl<'a> Src<'a> {
    pub fn new(text: &'a str, origin: &'a str) -> Src<'a> {
        Src { text, origin }
    }

    /// `file:line` of a byte offset.
    pub fn at(&self, offset: usize) -> String {
        format!("{}:{}", self.origin, line_of(self.text, offset))
    }

    /// The line of a byte offset.
    pub fn line(&self, offset: usize) -> usize {
        line_of(self.text, offset)
    }

    /// The whole text as `T`: a section's view of the file (its own top-level keys, the
    /// others ignored), spans and all; toml's errors as `file:line: message`.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        toml::from_str(self.text).map_err(|e| {
            let line = e
                .span()
                .map(|s| format!(":{}", line_of(self.text, s.start)))
                .unwrap_or_default();
            ConfigError(format!("{}{line}: {}", self.origin, e.message()))
        })
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

/// `FIELD` (ONTAP's "500iops,100MB/s": `fixed.max_throughput`, `fixed.burst.max_throughput`
/// ...) into the IOPS and MB/s limits it sets, which must not also be given as
/// `FIELD_iops`/`_mbps`.
fn throughput(
    field: &str,
    given: &Option<String>,
    iops: &mut u64,
    mbps: &mut u64,
) -> Result<(), String> {
    let Some(s) = given else {
        return Ok(());
    };
    if *iops != 0 || *mbps != 0 {
        return Err(format!(
            "give either {field} or {field}_iops/_mbps, not both"
        ));
    }
    let t = parse_throughput(s).map_err(|e| format!("{field}: {e}"))?;
    *iops = t.iops;
    *mbps = t.mbps;
    Ok(())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_san;
