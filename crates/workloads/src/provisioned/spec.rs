//! What the target promises: a provisioned file system (FSx for ONTAP's model: node.toml's
//! `[provisioned]` keys, parsed by the node's own config parser) or a volume under a
//! vendor's size-driven model (EBS gp2/st1/sc1, Azure Premium SSD). Validated once; the
//! same spec configures the embedded node and names the figures expectations compare with
//! (`spec.network.baseline`, `spec.iops.burst`, ...).

use harness::verdict::Kind;
use qos_core::{
    effective_limits, parse_size, EffectiveLimits, Model, Policy, ProvisionedPolicy, VolumeSpace,
};
use serde::Deserialize;
use storage_node::provisioned::{FsSpec, ResourceSpec};
use storage_node::NodeConfig;

/// The scale the embedded emulation runs at when none is given: AWS's rates, caches and
/// buckets ×0.005 (the 1,250 MB/s network burst of `fsx-ontap-128` lasts 9 s from full).
pub const DEFAULT_EMBEDDED_SCALE: f64 = 0.005;

const MIB: u64 = 1 << 20;

/// A number of MB/s (10^6 bytes/s, AWS's unit) from bytes/s: no decimals from 100 up, one
/// below.
pub fn mb(bytes_per_sec: f64) -> String {
    let v = bytes_per_sec / 1e6;
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A target's provisioned performance.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    Fs(FsTarget),
    Volume(VolumeModel),
}

/// A provisioned file system: the `[provisioned]` keys as given (what the embedded node is
/// started with) and what they mean.
#[derive(Debug, Clone, PartialEq)]
pub struct FsTarget {
    pub table: toml::Table,
    pub spec: FsSpec,
}

/// A volume under a vendor's model, sized `size`, its buckets × `bucket_scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeModel {
    pub model: Model,
    pub size: u64,
    pub bucket_scale: f64,
    pub initial_percent: u8,
    /// Baseline (the ceiling) and burst, as the model computes them for `size`.
    pub limits: EffectiveLimits,
}

/// `[provisioned]` for a volume model.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVolume {
    model: String,
    size: toml::Value,
    bucket_scale: Option<f64>,
    scale: Option<f64>,
    initial_percent: Option<i64>,
}

/// Keys of the node's `[provisioned]` table (docs/PROVISIONED.md), for messages.
const FS_KEYS: &str = "preset, scale, rate_scale, burst_duration, initial_percent, storage, ssd_iops, per_connection, cache_block, memory_cache, nvme_cache, network, disk, disk_iops";

impl Spec {
    /// Parse a `[provisioned]` table (`what` names it in messages: `plan.toml:3: provisioned`).
    /// With `model` it describes a volume; otherwise a file system in node.toml's keys.
    pub fn from_table(table: &toml::Table, what: &str) -> Result<Spec, String> {
        if table.contains_key("model") {
            return VolumeModel::from_table(table, what).map(Spec::Volume);
        }
        FsTarget::from_table(table.clone(), what).map(Spec::Fs)
    }

    /// The same spec with its sizes and buckets at `scale` (`--scale`).
    pub fn rescaled(&self, scale: f64, what: &str) -> Result<Spec, String> {
        if !(scale.is_finite() && scale > 0.0 && scale <= 1000.0) {
            return Err(format!(
                "--scale {scale}: allowed above 0, up to 1000 (1 = the vendor's sizes)"
            ));
        }
        match self {
            Spec::Fs(f) => {
                let mut t = f.table.clone();
                t.insert("scale".into(), toml::Value::Float(scale));
                FsTarget::from_table(t, what).map(Spec::Fs)
            }
            Spec::Volume(v) => {
                VolumeModel::new(v.model, v.size, scale, v.initial_percent).map(Spec::Volume)
            }
        }
    }

    /// The scale it runs at (FS: `scale`; volume: `bucket_scale`).
    pub fn scale(&self) -> f64 {
        match self {
            Spec::Fs(f) => f
                .table
                .get("scale")
                .and_then(crate::toml_number)
                .unwrap_or(1.0),
            Spec::Volume(v) => v.bucket_scale,
        }
    }

    /// One line: what it is.
    pub fn describe(&self) -> String {
        match self {
            Spec::Fs(f) => f.describe(),
            Spec::Volume(v) => v.describe(),
        }
    }

    /// The embedded node that emulates it (the volume the steps run on is [`Spec::volume`]).
    pub fn node_toml(&self) -> String {
        match self {
            Spec::Fs(f) => format!(
                "[provisioned]\n{}\n[[volume]]\nname = \"{}\"\nsize = {}\nsnapshot_reserve_percent = 0\n",
                toml_text(&f.table),
                self.volume(),
                f.volume_size()
            ),
            Spec::Volume(v) => format!(
                "[[policy]]\nname = \"{m}\"\nprovisioned = {{ model = \"{m}\", bucket_scale = {s}, initial_percent = {p} }}\n\n[[volume]]\nname = \"{vol}\"\nsize = {size}\nsnapshot_reserve_percent = 0\npolicy = \"{m}\"\n",
                m = v.model.name(),
                s = v.bucket_scale,
                p = v.initial_percent,
                vol = self.volume(),
                size = v.size
            ),
        }
    }

    /// [`Spec::node_toml`], its volume a NAS volume at `/NAME` when `nas` (served over NFS
    /// by the embedded node).
    pub fn node_toml_nas(&self, nas: bool) -> String {
        let mut t = self.node_toml();
        if nas {
            // The volume's table is the last one.
            t.push_str(&format!("nas_path = \"/{}\"\n", self.volume()));
        }
        t
    }

    /// The embedded node's volume.
    pub fn volume(&self) -> &'static str {
        match self {
            Spec::Fs(_) => "fs",
            Spec::Volume(_) => "vol",
        }
    }

    /// A figure of the spec by name (`spec.` stripped): the units are the expectation
    /// grammar's (bytes/s, IOPS, seconds). `None` for a name this kind of spec lacks.
    pub fn value(&self, name: &str) -> Option<f64> {
        match self {
            Spec::Fs(f) => f.value(name),
            Spec::Volume(v) => v.value(name),
        }
    }

    /// The names [`Spec::value`] knows, with what they count.
    pub fn names(&self) -> &'static [(&'static str, Kind)] {
        match self {
            Spec::Fs(_) => &[
                ("network.baseline", Kind::Bw),
                ("network.burst", Kind::Bw),
                ("disk.baseline", Kind::Bw),
                ("disk.burst", Kind::Bw),
                ("disk_iops.baseline", Kind::Iops),
                ("disk_iops.burst", Kind::Iops),
                ("ssd_iops", Kind::Iops),
                ("per_connection", Kind::Bw),
            ],
            Spec::Volume(_) => &[
                ("iops.baseline", Kind::Iops),
                ("iops.burst", Kind::Iops),
                ("bw.baseline", Kind::Bw),
                ("bw.burst", Kind::Bw),
            ],
        }
    }
}

/// A table's keys as TOML lines (`key = value`; nested tables inline).
fn toml_text(t: &toml::Table) -> String {
    t.iter()
        .map(|(k, v)| format!("{} = {}\n", toml_key(k), toml_value(v)))
        .collect()
}

fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_string(k)
    }
}

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.into()).to_string()
}

/// A value as TOML text.
fn toml_value(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => toml_string(s),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) if f.is_finite() => format!("{f:?}"),
        toml::Value::Float(f) => if f.is_nan() {
            "nan"
        } else if *f > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .into(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(a) => format!(
            "[{}]",
            a.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        toml::Value::Table(t) => format!(
            "{{ {} }}",
            t.iter()
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn resource_value(r: &ResourceSpec, what: &str) -> Option<f64> {
    match what {
        "baseline" => Some(r.baseline as f64),
        // A resource that does not burst: its burst is its baseline.
        "burst" => Some(r.burst.map_or(r.baseline, |b| b.rate) as f64),
        _ => None,
    }
}

impl FsTarget {
    fn from_table(table: toml::Table, what: &str) -> Result<FsTarget, String> {
        let text = format!("[provisioned]\n{}", toml_text(&table));
        let cfg = NodeConfig::parse(&text, "plan").map_err(|e| {
            // The node's parser names its own text ("plan:1: provisioned.scale = ..."):
            // name the plan's table instead.
            let m = e.to_string();
            match m.split_once(": provisioned") {
                Some((_, rest)) => format!("{what}{rest}"),
                None => format!("{what}: {}", m.split_once(": ").map_or(m.as_str(), |x| x.1)),
            }
        })?;
        let spec = cfg.provisioned.ok_or_else(|| {
            format!("{what}: give a preset or the file system's resources ({FS_KEYS}), or a volume model (model, size)")
        })?;
        if spec.memory_cache < 4 * MIB {
            return Err(format!(
                "{what}: the memory cache is {} bytes at this scale; the workshop needs at least 4 MiB (raise scale)",
                spec.memory_cache
            ));
        }
        Ok(FsTarget { table, spec })
    }

    fn describe(&self) -> String {
        let s = &self.spec;
        let mb = |x: u64| format!("{} MB/s", mb(x as f64));
        let res = |name: &str, r: &ResourceSpec, unit: &dyn Fn(u64) -> String| match r.burst {
            Some(b) => format!(
                "{name} {} (burst {} for {:.1} s)",
                unit(r.baseline),
                unit(b.rate),
                r.burst_seconds().unwrap_or(0.0)
            ),
            None => format!("{name} {}", unit(r.baseline)),
        };
        format!(
            "{} at scale {}: {}, {}, {}, provisioned SSD IOPS {}, memory cache {:.0} MB, NVMe cache {:.0} MB, single flow {}",
            s.name,
            self.table.get("scale").and_then(crate::toml_number).unwrap_or(1.0),
            res("network", &s.network, &mb),
            res("disk", &s.disk, &mb),
            res("disk IOPS", &s.disk_iops, &|x| x.to_string()),
            s.ssd_iops,
            s.memory_cache as f64 / 1e6,
            s.nvme_cache as f64 / 1e6,
            if s.per_connection > 0 {
                mb(s.per_connection)
            } else {
                "unlimited".into()
            }
        )
    }

    fn value(&self, name: &str) -> Option<f64> {
        let s = &self.spec;
        match name.split_once('.') {
            Some(("network", w)) => resource_value(&s.network, w),
            Some(("disk", w)) => resource_value(&s.disk, w),
            Some(("disk_iops", w)) => resource_value(&s.disk_iops, w),
            None if name == "ssd_iops" => Some(s.ssd_iops as f64),
            None if name == "per_connection" => Some(s.per_connection as f64),
            _ => None,
        }
    }

    /// Each file of the in-memory data set: the seed's 16 MiB, or a quarter of the memory
    /// cache when that is smaller (whole MiB).
    pub fn memory_file(&self) -> u64 {
        (16 * MIB)
            .min(self.spec.memory_cache / 4 / MIB * MIB)
            .max(MIB)
    }

    /// Each file of the NVMe data set: two of them hold twice the memory cache (the seed: 32
    /// GiB against 16 GB), so they cannot fit in memory and do fit in memory + NVMe.
    /// `None` when the NVMe cache cannot hold what memory evicts.
    pub fn nvme_file(&self) -> Option<u64> {
        let f = self.spec.memory_cache / MIB * MIB;
        (self.spec.nvme_cache >= f && f > 0).then_some(f)
    }

    /// The embedded volume's size: room for both data sets (sparse).
    fn volume_size(&self) -> u64 {
        (4 * self.spec.memory_cache).max(1 << 30).div_ceil(MIB) * MIB
    }
}

impl VolumeModel {
    fn from_table(table: &toml::Table, what: &str) -> Result<VolumeModel, String> {
        let raw: RawVolume = table
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| format!("{what}: {}", e.message()))?;
        let model: Model = raw
            .model
            .parse()
            .map_err(|e| format!("{what}.model: {e}"))?;
        let size = match &raw.size {
            toml::Value::String(s) => parse_size(s).map_err(|e| format!("{what}.size: {e}"))?,
            toml::Value::Integer(i) if *i > 0 => *i as u64,
            v => {
                return Err(format!(
                    "{what}.size = {}: give a size such as \"100GiB\"",
                    toml_value(v)
                ))
            }
        };
        if raw.bucket_scale.is_some() && raw.scale.is_some() {
            return Err(format!(
                "{what}: bucket_scale and scale are the same thing; give one"
            ));
        }
        let percent = match raw.initial_percent {
            None => 100,
            Some(p @ 0..=100) => p as u8,
            Some(p) => return Err(format!("{what}.initial_percent = {p}: allowed 0 to 100")),
        };
        VolumeModel::new(
            model,
            size,
            raw.bucket_scale.or(raw.scale).unwrap_or(1.0),
            percent,
        )
        .map_err(|e| format!("{what}: {e}"))
    }

    pub fn new(
        model: Model,
        size: u64,
        bucket_scale: f64,
        initial_percent: u8,
    ) -> Result<VolumeModel, String> {
        if size == 0 {
            return Err("size: must be above 0".into());
        }
        let p = ProvisionedPolicy {
            bucket_scale,
            initial_percent,
            ..ProvisionedPolicy::new(model)
        };
        p.validate().map_err(|e| e.to_string())?;
        let limits = effective_limits(
            &Policy::Provisioned(p),
            &VolumeSpace {
                size,
                snapshot_reserve_percent: 0,
                used: 0,
            },
        );
        Ok(VolumeModel {
            model,
            size,
            bucket_scale,
            initial_percent,
            limits,
        })
    }

    fn describe(&self) -> String {
        let l = &self.limits;
        let dim = |name: &str, base: u64, b: Option<qos_core::BurstShape>, unit: &str, div: f64| {
            match b {
                Some(b) => format!(
                    "{name} {:.0} {unit} (burst {:.0} for {:.1} s on {} credits)",
                    base as f64 / div,
                    b.rate as f64 / div,
                    b.burst_seconds(base).unwrap_or(0.0),
                    b.bucket
                ),
                None if base > 0 => format!("{name} {:.0} {unit}", base as f64 / div),
                None => format!("{name} unlimited"),
            }
        };
        format!(
            "{} {} GiB, buckets x{}: {}, {}",
            self.model.name(),
            self.size as f64 / (1u64 << 30) as f64,
            self.bucket_scale,
            dim("IOPS", l.ceiling.iops, l.burst.iops, "IOPS", 1.0),
            dim(
                "throughput",
                l.ceiling.bytes_per_sec,
                l.burst.bytes,
                "MiB/s",
                MIB as f64
            ),
        )
    }

    fn value(&self, name: &str) -> Option<f64> {
        let l = &self.limits;
        let (dim, what) = name.split_once('.')?;
        let (base, burst) = match dim {
            "iops" => (l.ceiling.iops, l.burst.iops),
            "bw" => (l.ceiling.bytes_per_sec, l.burst.bytes),
            _ => return None,
        };
        match what {
            "baseline" => Some(base as f64),
            // A dimension that does not burst: its burst is its baseline.
            "burst" => Some(burst.map_or(base, |b| b.rate) as f64),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        s.parse().unwrap()
    }

    #[test]
    fn fsx_preset_values_and_data_sets() {
        let s = Spec::from_table(
            &table("preset = \"fsx-ontap-128\"\nscale = 0.005\n"),
            "p:1: provisioned",
        )
        .unwrap();
        assert_eq!(s.value("network.baseline"), Some(150e6));
        assert_eq!(s.value("network.burst"), Some(1250e6));
        assert_eq!(s.value("disk.baseline"), Some(128e6));
        assert_eq!(s.value("ssd_iops"), Some(3072.0));
        assert_eq!(s.value("per_connection"), Some(625e6));
        assert_eq!(s.value("iops.baseline"), None);
        let Spec::Fs(f) = &s else { panic!() };
        // Memory cache 80 MB: the seed's 16 MiB files fit; the NVMe set is 2 x 76 MiB.
        assert_eq!(f.memory_file(), 16 * MIB);
        assert_eq!(f.nvme_file(), Some(76 * MIB));
        let cfg = NodeConfig::parse(&s.node_toml(), "t").unwrap();
        let nas = NodeConfig::parse(&s.node_toml_nas(true), "t").unwrap();
        assert!(nas.volumes[0].nas.is_some());
        assert_eq!(cfg.provisioned.unwrap(), f.spec);
        assert_eq!(cfg.volumes[0].name, "fs");
        assert!(
            s.describe().starts_with(
                "fsx-ontap-128 at scale 0.005: network 150 MB/s (burst 1250 MB/s for 9.0 s)"
            ),
            "{}",
            s.describe()
        );
        // --scale: caches and buckets shrink together.
        let t = s.rescaled(0.002, "--scale").unwrap();
        let Spec::Fs(f) = &t else { panic!() };
        assert_eq!(f.memory_file(), 7 * MIB, "a quarter of 32 MB, whole MiB");
        assert!((f.spec.network.burst_seconds().unwrap() - 3.6).abs() < 1e-9);
    }

    #[test]
    fn volume_models() {
        let s = Spec::from_table(
            &table("model = \"ebs-gp2\"\nsize = \"100GiB\"\nbucket_scale = 0.0025\n"),
            "p",
        )
        .unwrap();
        assert_eq!(s.value("iops.baseline"), Some(300.0));
        assert_eq!(s.value("iops.burst"), Some(3000.0));
        assert_eq!(s.value("bw.baseline"), Some(128.0 * MIB as f64));
        assert_eq!(
            s.value("bw.burst"),
            Some(128.0 * MIB as f64),
            "no throughput burst: its baseline"
        );
        let Spec::Volume(v) = &s else { panic!() };
        assert_eq!(v.limits.burst.iops.unwrap().bucket, 13_500);
        let cfg = NodeConfig::parse(&s.node_toml(), "t").unwrap();
        assert_eq!(cfg.volumes[0].size, 100 << 30);
        assert!(
            s.describe()
                .contains("IOPS 300 IOPS (burst 3000 for 5.0 s on 13500 credits)"),
            "{}",
            s.describe()
        );
        assert_eq!(s.rescaled(0.01, "x").unwrap().scale(), 0.01);
    }

    #[test]
    fn errors_name_the_table_and_the_field() {
        for (t, want) in [
            (
                "preset = \"fsx-ontap-100\"\n",
                "p:3: provisioned.preset = \"fsx-ontap-100\": allowed presets are fsx-ontap-128",
            ),
            (
                "preset = \"fsx-ontap-128\"\nscale = -1\n",
                "p:3: provisioned.scale = -1: allowed range",
            ),
            (
                "preset = \"fsx-ontap-128\"\nscale = 0.0001\n",
                "the workshop needs at least 4 MiB",
            ),
            (
                "model = \"ebs-gp9\"\nsize = \"1GiB\"\n",
                "p:3: provisioned.model: unknown provisioned-performance model",
            ),
            (
                "model = \"ebs-gp2\"\nsize = \"lots\"\n",
                "p:3: provisioned.size:",
            ),
            (
                "model = \"ebs-gp2\"\nsize = \"1GiB\"\npreset = \"x\"\n",
                "unknown field `preset`",
            ),
            (
                "model = \"ebs-gp2\"\nsize = \"1GiB\"\ninitial_percent = 101\n",
                "allowed 0 to 100",
            ),
        ] {
            let e = Spec::from_table(&table(t), "p:3: provisioned").unwrap_err();
            assert!(e.contains(want), "{t}: {e}");
        }
        assert!(
            Spec::from_table(&table("preset = \"fsx-ontap-128\"\n"), "p")
                .unwrap()
                .rescaled(0.0, "x")
                .unwrap_err()
                .contains("--scale 0")
        );
    }
}
