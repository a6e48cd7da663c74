//! A ramp plan: the settings every system shares and the systems, from a plan's `[ramp]`
//! and `[[system]]` tables (errors carry the plan's lines) or from the command line.

use crate::fio_plan::{valid_job_name, JOB_NAME_RULE};
use harness::plan::{parse_duration, PlanError, PlanSource};
use harness::target::Target;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// Settings every system of a ramp shares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub runs: u32,
    /// Seconds per run, before scaling.
    pub runtime: f64,
    pub scale: f64,
    /// The write daemon's period, seconds, before scaling.
    pub cycle: f64,
    /// Write-cycle limit, seconds, before scaling (None: 45/80 of the cycle).
    pub max_write_cycle: Option<f64>,
    /// Effective write latency limit, seconds (not scaled).
    pub max_write_latency: f64,
    /// Percent of the target rate that is reads.
    pub read_pct: f64,
    pub block_size: u32,
    pub write_qd: u32,
    pub wij_block: u32,
    pub wij_qd: u32,
    pub read_inflight: u32,
    /// Bytes the random reads and writes address.
    pub span: u64,
    /// A fixed number of dirty blocks per cycle instead of the write share of the target.
    pub dirty_blocks: Option<u64>,
    /// Start the systems' write cycles cycle/n apart (true) or together.
    pub stagger: bool,
    /// Write the span and the journal area once before the first run (GenIO's dgen.pl).
    pub prefill: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            runs: 10,
            runtime: 320.0,
            scale: 1.0,
            cycle: 80.0,
            max_write_cycle: None,
            max_write_latency: 0.001,
            read_pct: 75.0,
            block_size: 8192,
            write_qd: 32,
            wij_block: 256 * 1024,
            wij_qd: 8,
            read_inflight: 256,
            span: 1 << 30,
            dirty_blocks: None,
            stagger: true,
            prefill: true,
        }
    }
}

impl Settings {
    pub fn cycle_s(&self) -> f64 {
        self.cycle * self.scale
    }
    pub fn runtime_s(&self) -> f64 {
        self.runtime * self.scale
    }
    /// The write-cycle limit as applied (scaled).
    pub fn cycle_limit_s(&self) -> f64 {
        self.max_write_cycle.unwrap_or(self.cycle * 45.0 / 80.0) * self.scale
    }

    /// Check every field; errors name the key, the flag, the value and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        fn range<T: PartialOrd + std::fmt::Display>(
            key: &str,
            v: T,
            lo: T,
            hi: T,
            unit: &str,
        ) -> Result<(), String> {
            if v < lo || v > hi {
                return Err(format!("{key} = {v}{unit}: allowed {lo} .. {hi}{unit}"));
            }
            Ok(())
        }
        range("runs (--runs)", self.runs, 1, 1000, "")?;
        if !(self.scale > 0.0 && self.scale <= 100.0) {
            return Err(format!(
                "scale (--scale) = {}: allowed more than 0, at most 100",
                self.scale
            ));
        }
        range("read_pct (--read-pct)", self.read_pct, 0.0, 100.0, " %")?;
        if self.block_size & 511 != 0 || !(512..=1 << 20).contains(&self.block_size) {
            return Err(format!(
                "block_size (--block-size) = {} bytes: allowed a multiple of 512 from 512 to 1MiB",
                self.block_size
            ));
        }
        if self.wij_block & 511 != 0 || !(512..=32 << 20).contains(&self.wij_block) {
            return Err(format!(
                "wij_block = {} bytes: allowed a multiple of 512 from 512 to 32MiB",
                self.wij_block
            ));
        }
        range("write_qd (--write-qd)", self.write_qd, 1, 4096, "")?;
        range("wij_qd", self.wij_qd, 1, 4096, "")?;
        range("read_inflight", self.read_inflight, 1, 65536, "")?;
        let cycle = self.cycle_s();
        if cycle < 0.05 {
            return Err(format!(
                "cycle (--cycle) × scale = {cycle:.3} s: allowed at least 0.05 s"
            ));
        }
        if self.runtime_s() + 1e-9 < cycle {
            return Err(format!(
                "runtime (--runtime) × scale = {:.3} s is shorter than one write cycle ({cycle:.3} s): allowed at least one cycle",
                self.runtime_s()
            ));
        }
        if self.runtime_s() > 86400.0 {
            return Err(format!(
                "runtime (--runtime) × scale = {:.0} s: allowed at most 86400 s",
                self.runtime_s()
            ));
        }
        if let Some(m) = self.max_write_cycle {
            if m <= 0.0 {
                return Err(format!(
                    "max_write_cycle (--max-write-cycle) = {m} s: allowed more than 0"
                ));
            }
        }
        if self.max_write_latency <= 0.0 {
            return Err(format!(
                "max_write_latency (--max-write-latency) = {} s: allowed more than 0",
                self.max_write_latency
            ));
        }
        if self.span < u64::from(self.block_size) * 16 {
            return Err(format!(
                "span (--span) = {} bytes: allowed at least 16 blocks ({} bytes)",
                self.span,
                u64::from(self.block_size) * 16
            ));
        }
        if let Some(d) = self.dirty_blocks {
            range("dirty_blocks (--dirty-blocks)", d, 1, 100_000_000, "")?;
        }
        Ok(())
    }

    /// Dirty blocks per cycle at `target` IOPS.
    pub fn dirty_blocks_at(&self, target: u64) -> u64 {
        self.dirty_blocks.unwrap_or_else(|| {
            (target as f64 * (1.0 - self.read_pct / 100.0) * self.cycle_s()).round() as u64
        })
    }
}

/// One system: a volume ramping its target from `min_iops` to `max_iops`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct System {
    pub name: String,
    /// A volume of the embedded node.
    pub volume: Option<String>,
    /// A target of its own (URI or path), instead of the plan's.
    pub target: Option<String>,
    pub min_iops: u64,
    pub max_iops: u64,
}

impl System {
    /// Run k's target (0-based), as RampRun.pl: min + (max - min) × k / (runs - 1).
    pub fn target_iops(&self, k: u32, runs: u32) -> u64 {
        if runs <= 1 {
            return self.min_iops;
        }
        let span = self.max_iops as f64 - self.min_iops as f64;
        (self.min_iops as f64 + span * f64::from(k) / f64::from(runs - 1)).round() as u64
    }

    fn validate(&self) -> Result<(), String> {
        let ctx = format!("system {:?}: ", self.name);
        if !(1..=100_000_000).contains(&self.min_iops) {
            return Err(format!(
                "{ctx}min_iops (--min-iops) = {}: allowed 1 .. 100000000",
                self.min_iops
            ));
        }
        if self.max_iops < self.min_iops || self.max_iops > 100_000_000 {
            return Err(format!(
                "{ctx}max_iops (--max-iops) = {}: allowed min_iops ({}) .. 100000000",
                self.max_iops, self.min_iops
            ));
        }
        Ok(())
    }
}

/// A plan's ramp: settings and systems.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RampPlan {
    pub settings: Settings,
    pub systems: Vec<System>,
}

/// Command-line overrides (`None`: keep the plan's value).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub min_iops: Option<u64>,
    pub max_iops: Option<u64>,
    pub runs: Option<u32>,
    pub runtime: Option<f64>,
    pub scale: Option<f64>,
    pub cycle: Option<f64>,
    pub max_write_cycle: Option<f64>,
    pub max_write_latency: Option<f64>,
    pub read_pct: Option<f64>,
    pub block_size: Option<u32>,
    pub write_qd: Option<u32>,
    pub dirty_blocks: Option<u64>,
    pub span: Option<u64>,
    pub prefill: Option<bool>,
}

impl RampPlan {
    /// Apply command-line values and validate again. `--min-iops`/`--max-iops` apply to a
    /// plan with a single system only.
    pub fn apply(&mut self, o: &Overrides) -> Result<(), String> {
        let s = &mut self.settings;
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = o.$f { s.$f = v; } )* };
        }
        set!(
            runs,
            runtime,
            scale,
            cycle,
            max_write_latency,
            read_pct,
            block_size,
            write_qd,
            span
        );
        if o.max_write_cycle.is_some() {
            s.max_write_cycle = o.max_write_cycle;
        }
        if o.dirty_blocks.is_some() {
            s.dirty_blocks = o.dirty_blocks;
        }
        if let Some(v) = o.prefill {
            s.prefill = v;
        }
        if o.min_iops.is_some() || o.max_iops.is_some() {
            if self.systems.len() != 1 {
                return Err(format!(
                    "--min-iops/--max-iops apply to a single system; this plan has {} (set min_iops/max_iops per [[system]])",
                    self.systems.len()
                ));
            }
            let sys = &mut self.systems[0];
            if let Some(v) = o.min_iops {
                sys.min_iops = v;
                if o.max_iops.is_none() && sys.max_iops < v {
                    sys.max_iops = v;
                }
            }
            if let Some(v) = o.max_iops {
                sys.max_iops = v;
            }
        }
        self.validate()
    }

    pub fn validate(&self) -> Result<(), String> {
        self.settings.validate()?;
        for s in &self.systems {
            s.validate()?;
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRamp {
    runs: Option<Spanned<i64>>,
    runtime: Option<Spanned<toml::Value>>,
    scale: Option<Spanned<toml::Value>>,
    cycle: Option<Spanned<toml::Value>>,
    max_write_cycle: Option<Spanned<toml::Value>>,
    max_write_latency: Option<Spanned<toml::Value>>,
    read_pct: Option<Spanned<toml::Value>>,
    block_size: Option<Spanned<toml::Value>>,
    write_qd: Option<Spanned<i64>>,
    wij_block: Option<Spanned<toml::Value>>,
    wij_qd: Option<Spanned<i64>>,
    read_inflight: Option<Spanned<i64>>,
    span: Option<Spanned<toml::Value>>,
    dirty_blocks: Option<Spanned<i64>>,
    stagger: Option<bool>,
    prefill: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSystem {
    name: Option<String>,
    volume: Option<String>,
    target: Option<String>,
    min_iops: Option<Spanned<i64>>,
    max_iops: Option<Spanned<i64>>,
}

fn size(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        toml::Value::String(s) => qos_core::parse_size(s).map_err(|e| e.to_string()),
        _ => Err("expected a size like \"8KiB\" or a number of bytes".into()),
    }
}

#[derive(Deserialize)]
struct View {
    ramp: Option<Spanned<RawRamp>>,
    #[serde(default)]
    system: Vec<Spanned<RawSystem>>,
}

/// Parse a plan's `[ramp]` and `[[system]]` tables; `volumes` are the embedded node's.
pub fn parse(src: &PlanSource, volumes: &[String]) -> Result<RampPlan, PlanError> {
    let view: View = src.deserialize()?;
    let (ramp, systems) = (view.ramp.as_ref(), &view.system[..]);
    let at = |o: usize| src.at(o);
    let s = settings(src, ramp)?;
    let rat = ramp.map(|r| at(r.span().start));
    s.validate().map_err(|m| {
        PlanError(format!(
            "{}: ramp.{m}",
            rat.clone().unwrap_or_else(|| at(0))
        ))
    })?;
    if systems.is_empty() {
        return Err(PlanError(format!(
            "{}: [ramp] without any [[system]]: declare at least one (name, volume, min_iops, max_iops)",
            rat.unwrap_or_else(|| at(0))
        )));
    }
    let mut out = Vec::new();
    for (i, sys) in systems.iter().enumerate() {
        let system = system(src, (i, sys), volumes, &out)?;
        out.push(system);
    }
    Ok(RampPlan {
        settings: s,
        systems: out,
    })
}

/// `[ramp]` over the defaults (not yet validated as a whole).
fn settings(src: &PlanSource, ramp: Option<&Spanned<RawRamp>>) -> Result<Settings, PlanError> {
    let at = |o: usize| src.at(o);
    let mut s = Settings::default();
    let err = |span: std::ops::Range<usize>, key: &str, m: String| {
        PlanError(format!("{}: ramp.{key}: {m}", at(span.start)))
    };
    if let Some(r) = ramp {
        let r = r.get_ref();
        let int = |v: &Option<Spanned<i64>>, key: &str| -> Result<Option<i64>, PlanError> {
            match v {
                Some(x) if *x.get_ref() < 0 => {
                    Err(err(x.span(), key, format!("{} is negative", x.get_ref())))
                }
                Some(x) => Ok(Some(*x.get_ref())),
                None => Ok(None),
            }
        };
        let dur = |v: &Option<Spanned<toml::Value>>, key: &str| -> Result<Option<f64>, PlanError> {
            v.as_ref()
                .map(|x| parse_duration(x.get_ref()).map_err(|m| err(x.span(), key, m)))
                .transpose()
        };
        let sz = |v: &Option<Spanned<toml::Value>>, key: &str| -> Result<Option<u64>, PlanError> {
            v.as_ref()
                .map(|x| size(x.get_ref()).map_err(|m| err(x.span(), key, m)))
                .transpose()
        };
        let num = |v: &Option<Spanned<toml::Value>>, key: &str| -> Result<Option<f64>, PlanError> {
            v.as_ref()
                .map(|x| {
                    crate::toml_number(x.get_ref())
                        .ok_or_else(|| err(x.span(), key, "expected a number".into()))
                })
                .transpose()
        };
        let clamp32 = |v: i64| v.min(u32::MAX as i64) as u32;
        if let Some(v) = int(&r.runs, "runs")? {
            s.runs = clamp32(v);
        }
        if let Some(v) = dur(&r.runtime, "runtime")? {
            s.runtime = v;
        }
        if let Some(v) = num(&r.scale, "scale")? {
            s.scale = v;
        }
        if let Some(v) = dur(&r.cycle, "cycle")? {
            s.cycle = v;
        }
        s.max_write_cycle = dur(&r.max_write_cycle, "max_write_cycle")?;
        if let Some(v) = dur(&r.max_write_latency, "max_write_latency")? {
            s.max_write_latency = v;
        }
        if let Some(v) = num(&r.read_pct, "read_pct")? {
            s.read_pct = v;
        }
        if let Some(v) = sz(&r.block_size, "block_size")? {
            s.block_size = v.min(u32::MAX as u64) as u32;
        }
        if let Some(v) = int(&r.write_qd, "write_qd")? {
            s.write_qd = clamp32(v);
        }
        if let Some(v) = sz(&r.wij_block, "wij_block")? {
            s.wij_block = v.min(u32::MAX as u64) as u32;
        }
        if let Some(v) = int(&r.wij_qd, "wij_qd")? {
            s.wij_qd = clamp32(v);
        }
        if let Some(v) = int(&r.read_inflight, "read_inflight")? {
            s.read_inflight = clamp32(v);
        }
        if let Some(v) = sz(&r.span, "span")? {
            s.span = v;
        }
        s.dirty_blocks = int(&r.dirty_blocks, "dirty_blocks")?.map(|v| v as u64);
        if let Some(v) = r.stagger {
            s.stagger = v;
        }
        if let Some(v) = r.prefill {
            s.prefill = v;
        }
    }
    Ok(s)
}

/// The `i`th `[[system]]` (`out`: those before it), checked against the plan's volumes.
fn system(
    src: &PlanSource,
    (i, sys): (usize, &Spanned<RawSystem>),
    volumes: &[String],
    out: &[System],
) -> Result<System, PlanError> {
    let at = |o: usize| src.at(o);
    let sat = at(sys.span().start);
    let r = sys.get_ref();
    let name = r.name.clone().unwrap_or_else(|| format!("system{}", i + 1));
    if !valid_job_name(&name) {
        return Err(PlanError(format!(
            "{sat}: system.name = {name:?}: {JOB_NAME_RULE}"
        )));
    }
    if out.iter().any(|s: &System| s.name == name) {
        return Err(PlanError(format!(
            "{sat}: system.name = {name:?} is used twice"
        )));
    }
    let ctx = format!("system {name:?}: ");
    if r.volume.is_some() && r.target.is_some() {
        return Err(PlanError(format!(
            "{sat}: {ctx}set volume (a volume of the embedded node) or target (a URI or path), not both"
        )));
    }
    let volume = match &r.volume {
        Some(v) if !volumes.contains(v) => {
            return Err(PlanError(format!(
                "{sat}: {ctx}volume = {v:?} is not declared; declared volumes: {}",
                if volumes.is_empty() {
                    "none".to_string()
                } else {
                    volumes.join(", ")
                }
            )));
        }
        Some(v) => Some(v.clone()),
        None if r.target.is_none() && volumes.len() == 1 => volumes.first().cloned(),
        None if r.target.is_none() && volumes.len() > 1 => {
            return Err(PlanError(format!(
                "{sat}: {ctx}volume is required when the plan declares several volumes ({})",
                volumes.join(", ")
            )));
        }
        None => None,
    };
    if let Some(t) = &r.target {
        let parsed = Target::parse(t).map_err(|e| PlanError(format!("{sat}: {ctx}{e}")))?;
        if matches!(parsed, Target::Nfs(_) | Target::Iscsi(_)) {
            return Err(PlanError(format!(
                "{sat}: {ctx}target = {t:?}: the ramp's generator speaks NBD and files, not NFS \
                 or iSCSI (give an nbd:// URI, or a file, directory or block device)"
            )));
        }
    }
    let iops = |v: &Option<Spanned<i64>>, key: &str| -> Result<u64, PlanError> {
        match v {
            None => Err(PlanError(format!(
                "{sat}: {ctx}{key} is required (the target IOPS of the ramp's {} run)",
                if key == "min_iops" { "first" } else { "last" }
            ))),
            Some(x) if *x.get_ref() < 1 => Err(PlanError(format!(
                "{}: {ctx}{key} = {}: allowed 1 .. 100000000",
                at(x.span().start),
                x.get_ref()
            ))),
            Some(x) => Ok(*x.get_ref() as u64),
        }
    };
    let system = System {
        name: name.clone(),
        volume,
        target: r.target.clone(),
        min_iops: iops(&r.min_iops, "min_iops")?,
        max_iops: iops(&r.max_iops, "max_iops")?,
    };
    system
        .validate()
        .map_err(|m| PlanError(format!("{sat}: {m}")))?;
    Ok(system)
}
