//! The `ramp` profile: GenIO's RampRun.pl on qoslab's own generator ([`crate::genio`]).
//!
//! Each "system" (one volume) ramps its target IOPS over `runs` runs: run k (0-based)
//! targets `min + (max - min) × k / (runs - 1)`. Every system of a plan runs at once, run k of
//! each starting together; each run is judged (longest write cycle below the limit, effective
//! write latency below the limit, no I/O errors) and stored as it finishes: one job with its
//! verdicts per system and run, and one `kind = "ramp"` summary table per system, rewritten
//! after every run (a crash loses at most the runs in flight).
//!
//! ```toml
//! [ramp]                        # shared by every system; all keys optional
//! runs = 10
//! runtime = "320s"              # per run (before --scale)
//! scale = 0.05                  # shrinks cycle, runtime and the write-cycle limit together
//! cycle = "80s"                 # the write daemon's period
//! max_write_cycle = "45s"       # default 45/80 of the cycle
//! max_write_latency = "1ms"     # not scaled
//! read_pct = 75                 # share of the target rate that is reads (by I/O count)
//! block_size = "8KiB"
//!
//! [[system]]
//! name = "epic-rhel1"
//! volume = "epic1"              # a volume of the embedded node, or:
//! # target = "nbd://10.0.0.5/epic1"   (a URI or path of its own)
//! min_iops = 1000
//! max_iops = 2000
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::genio::{self, IoError, IoTarget, RunStats, Workload};
use crate::plan::{parse_duration, Plan, PlanError};
use crate::result::{DirStats, FioOutput, JobResult};
use crate::run::RunError;
use crate::store::{Env, NewRun, Store, SummaryTable};
use crate::target::{EmbeddedNode, Target, TargetError};
use crate::verdict::Verdict;

/// The profile's name.
pub const NAME: &str = "ramp";
/// The summary table's `kind` in the results store.
pub const KIND: &str = "ramp";
/// The stored table's columns.
pub const COLUMNS: [&str; 12] = [
    "Run",
    "Target IOPS",
    "Read IOPS",
    "Write IOPS",
    "Total IOPS",
    "Longest WIJ time (sec)",
    "Longest write cycle (sec)",
    "Effective write latency (ms)",
    "Randread average (ms)",
    "Pass",
    // The criteria the run was judged by (scaled), so a report draws the right lines.
    "Write cycle limit (sec)",
    "Write latency limit (ms)",
];
/// summary.csv's header (RampRun.pl's columns).
pub const CSV_HEADER: &str = "Run,Read IOPS,Write IOPS,Total IOPS,Longest WIJ time (sec),Longest write cycle (sec),Effective write latency (ms),Randread average (ms),Pass";

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

// ---- plan parsing (called by plan.rs) ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRamp {
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
pub(crate) struct RawSystem {
    name: Option<String>,
    volume: Option<String>,
    target: Option<String>,
    min_iops: Option<Spanned<i64>>,
    max_iops: Option<Spanned<i64>>,
}

fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn size(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        toml::Value::String(s) => qos_core::parse_size(s).map_err(|e| e.to_string()),
        _ => Err("expected a size like \"8KiB\" or a number of bytes".into()),
    }
}

/// Parse a plan's `[ramp]` and `[[system]]` tables. `at(offset)` renders "file:line";
/// `volumes` are the embedded node's.
pub(crate) fn parse(
    ramp: Option<&Spanned<RawRamp>>,
    systems: &[Spanned<RawSystem>],
    at: &dyn Fn(usize) -> String,
    volumes: &[String],
) -> Result<RampPlan, PlanError> {
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
                    number(x.get_ref())
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
        let sat = at(sys.span().start);
        let r = sys.get_ref();
        let name = r.name.clone().unwrap_or_else(|| format!("system{}", i + 1));
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(PlanError(format!(
                "{sat}: system.name = {name:?}: allowed 1-64 of A-Z a-z 0-9 _ - ."
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
            Target::parse(t).map_err(|e| PlanError(format!("{sat}: {ctx}{e}")))?;
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
        out.push(system);
    }
    Ok(RampPlan {
        settings: s,
        systems: out,
    })
}

/// The plan `--profile ramp` makes: one system named "system" on the target (on the
/// embedded node, an unlimited 100 GB volume named "bench"). min/max come from the
/// command line ([`RampPlan::apply`]).
pub fn profile_plan(embedded: bool) -> Result<Plan, PlanError> {
    let text = format!(
        "{}[[system]]\nname = \"system\"\nmin_iops = 1\nmax_iops = 1\n",
        if embedded {
            "[[volume]]\nname = \"bench\"\nsize = \"100GB\"\n\n"
        } else {
            ""
        }
    );
    let mut p = Plan::parse(&text, "--profile ramp")?;
    p.name = NAME.into();
    Ok(p)
}

// ---- results ----

/// One run of one system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// 1-based.
    pub run: u32,
    pub target_iops: u64,
    pub dirty_blocks: u64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub total_iops: f64,
    pub longest_wij_s: f64,
    pub longest_cycle_s: f64,
    /// The longest cycle's parts: burst (last write's reply) and the final FLUSH.
    pub longest_burst_s: f64,
    pub longest_flush_s: f64,
    pub write_lat_ms: f64,
    pub read_lat_ms: f64,
    pub cycles: usize,
    /// Cycles an overrun pushed past the end of the run.
    pub cycles_skipped: u64,
    /// Reads that waited for an in-flight slot (the target fell behind the arrival rate).
    pub reads_delayed: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub pass: bool,
}

impl Row {
    pub fn new(run: u32, target: u64, w: &Workload, s: &RunStats, set: &Settings) -> Row {
        let longest = s.longest_cycle();
        let mut r = Row {
            run,
            target_iops: target,
            dirty_blocks: w.dirty_blocks,
            read_iops: s.read_iops(),
            write_iops: s.write_iops(),
            total_iops: s.read_iops() + s.write_iops(),
            longest_wij_s: s.longest_wij_s(),
            longest_cycle_s: s.longest_cycle_s(),
            longest_burst_s: longest.map(|c| c.burst_s).unwrap_or(0.0),
            longest_flush_s: longest.map(|c| c.cycle_s - c.burst_s).unwrap_or(0.0),
            write_lat_ms: s.write_lat_mean_s() * 1e3,
            read_lat_ms: s.read_lat_mean_s * 1e3,
            cycles: s.cycles.len(),
            cycles_skipped: s.cycles_skipped,
            reads_delayed: s.reads_delayed,
            errors: s.errors,
            first_error: s.first_error.clone(),
            pass: false,
        };
        r.pass = verdicts(&r, set).iter().all(|v| v.passed);
        r
    }
}

/// Seconds for a label: "2.25 s", "1.125 s", "45 s", "500 ms".
fn secs(s: f64) -> String {
    let trim = |t: String| t.trim_end_matches('0').trim_end_matches('.').to_string();
    if s < 1.0 {
        format!("{} ms", trim(format!("{:.3}", s * 1e3)))
    } else {
        format!("{} s", trim(format!("{s:.3}")))
    }
}

/// The run's verdicts: the write-cycle and write-latency criteria, and no I/O errors.
pub fn verdicts(r: &Row, s: &Settings) -> Vec<Verdict> {
    let limit = s.cycle_limit_s();
    let lat = s.max_write_latency * 1e3;
    let mut v = vec![
        Verdict {
            expectation: format!("longest write cycle < {}", secs(limit)),
            measured: r.longest_cycle_s,
            bound: format!("< {limit}"),
            passed: r.longest_cycle_s < limit && r.cycles_skipped == 0,
            detail: format!(
                "longest write cycle {:.3} s (burst {:.3} s + FLUSH {:.3} s, {} dirty blocks), want < {limit:.3} s{}",
                r.longest_cycle_s,
                r.longest_burst_s,
                r.longest_flush_s,
                r.dirty_blocks,
                if r.cycles_skipped > 0 {
                    format!(
                        "; {} cycle(s) could not start before the run ended",
                        r.cycles_skipped
                    )
                } else {
                    String::new()
                }
            ),
        },
        Verdict {
            expectation: format!("effective write latency < {lat} ms"),
            measured: r.write_lat_ms,
            bound: format!("< {lat}"),
            passed: r.write_lat_ms < lat,
            detail: format!(
                "effective write latency {:.3} ms, want < {lat} ms",
                r.write_lat_ms
            ),
        },
    ];
    if r.errors > 0 {
        v.push(Verdict {
            expectation: "no I/O errors".into(),
            measured: r.errors as f64,
            bound: "= 0".into(),
            passed: false,
            detail: format!(
                "{} I/O error(s); first: {}",
                r.errors,
                r.first_error.as_deref().unwrap_or("?")
            ),
        });
    }
    v
}

fn round(v: f64, places: i32) -> serde_json::Value {
    let m = 10f64.powi(places);
    serde_json::json!((v * m).round() / m)
}

/// The stored table of one system.
pub fn table(system: &str, rows: &[Row], s: &Settings) -> SummaryTable {
    SummaryTable {
        kind: KIND.into(),
        name: system.into(),
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.run.into(),
                    r.target_iops.into(),
                    round(r.read_iops, 1),
                    round(r.write_iops, 1),
                    round(r.total_iops, 1),
                    round(r.longest_wij_s, 3),
                    round(r.longest_cycle_s, 3),
                    round(r.write_lat_ms, 3),
                    round(r.read_lat_ms, 3),
                    r.pass.into(),
                    round(s.cycle_limit_s(), 3),
                    round(s.max_write_latency * 1e3, 3),
                ]
            })
            .collect(),
    }
}

/// summary.csv: RampRun.pl's columns, one line per run.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in rows {
        out.push_str(&format!(
            "{},{:.0},{:.0},{:.0},{:.3},{:.3},{:.3},{:.3},{}\n",
            r.run,
            r.read_iops,
            r.write_iops,
            r.total_iops,
            r.longest_wij_s,
            r.longest_cycle_s,
            r.write_lat_ms,
            r.read_lat_ms,
            if r.pass { "PASS" } else { "FAIL" }
        ));
    }
    out
}

/// The highest target that passed.
pub fn highest_pass(rows: &[Row]) -> Option<&Row> {
    rows.iter().filter(|r| r.pass).max_by_key(|r| r.target_iops)
}

fn thousands(v: u64) -> String {
    let digits: Vec<char> = v.to_string().chars().rev().collect();
    let groups: Vec<String> = digits
        .chunks(3)
        .map(|c| c.iter().rev().collect())
        .rev()
        .collect();
    groups.join(",")
}

/// One line for a finished run (progress).
pub fn run_line(system: &str, runs: u32, r: &Row) -> String {
    format!(
        "[run {}/{runs}] {system}: target {} IOPS: read {:.0}, write {:.0}, total {:.0} IOPS; WIJ {:.2} s, write cycle {:.2} s, write latency {:.3} ms, read latency {:.3} ms: {}{}",
        r.run,
        thousands(r.target_iops),
        r.read_iops,
        r.write_iops,
        r.total_iops,
        r.longest_wij_s,
        r.longest_cycle_s,
        r.write_lat_ms,
        r.read_lat_ms,
        if r.pass { "PASS" } else { "FAIL" },
        {
            let mut notes = Vec::new();
            if r.cycles_skipped > 0 {
                notes.push(format!(
                    "{} cycle(s) skipped: an overrun pushed them past the run",
                    r.cycles_skipped
                ));
            }
            if r.reads_delayed > 0 {
                notes.push(format!(
                    "{} read(s) waited for one of the in-flight slots",
                    r.reads_delayed
                ));
            }
            if r.errors > 0 {
                notes.push(format!(
                    "{} I/O error(s), first: {}",
                    r.errors,
                    r.first_error.as_deref().unwrap_or("?")
                ));
            }
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        }
    )
}

/// The human table of one system, with the criteria and the highest passing target.
pub fn render(system: &System, where_: &str, rows: &[Row], s: &Settings) -> String {
    let mut out = format!(
        "{} on {where_}: ramp {} → {} IOPS, {} run(s) × {:.1} s, write cycle every {:.2} s; pass: longest write cycle < {:.3} s and effective write latency < {} ms\n",
        system.name,
        thousands(system.min_iops),
        thousands(system.max_iops),
        s.runs,
        s.runtime_s(),
        s.cycle_s(),
        s.cycle_limit_s(),
        s.max_write_latency * 1e3
    );
    out.push_str(&format!(
        "{:>3}  {:>8}  {:>9}  {:>10}  {:>10}  {:>7}  {:>15}  {:>14}  {:>13}  {}\n",
        "Run",
        "Target",
        "Read IOPS",
        "Write IOPS",
        "Total IOPS",
        "WIJ (s)",
        "Write cycle (s)",
        "Write lat (ms)",
        "Read lat (ms)",
        "Pass"
    ));
    for r in rows {
        out.push_str(&format!(
            "{:>3}  {:>8}  {:>9.0}  {:>10.0}  {:>10.0}  {:>7.2}  {:>15.2}  {:>14.3}  {:>13.3}  {}\n",
            r.run,
            r.target_iops,
            r.read_iops,
            r.write_iops,
            r.total_iops,
            r.longest_wij_s,
            r.longest_cycle_s,
            r.write_lat_ms,
            r.read_lat_ms,
            if r.pass { "PASS" } else { "FAIL" }
        ));
    }
    match highest_pass(rows) {
        Some(r) => out.push_str(&format!(
            "highest passing target: {} IOPS (run {})\n",
            thousands(r.target_iops),
            r.run
        )),
        None => out.push_str("highest passing target: none (no run passed)\n"),
    }
    out
}

// ---- running ----

/// Told about each run as the ramp goes.
pub trait Observer {
    /// Every system's volume is being prefilled (`bytes` each at most).
    fn prefilling(&mut self, _bytes: u64) {}
    /// Run `k` (0-based) of every system starts.
    fn run_started(&mut self, _k: u32, _runs: u32) {}
    /// A system finished a run; `rows` holds every run so far (the new one last).
    fn run_finished(&mut self, _system: &System, _rows: &[Row]) {}
}

/// What a finished ramp amounts to.
#[derive(Debug)]
pub struct Outcome {
    pub run_id: i64,
    /// Per system (plan order): where it ran and its rows.
    pub systems: Vec<(System, String, Vec<Row>)>,
    pub status: String,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.status == "passed"
    }
}

fn ramp_err(m: String) -> RunError {
    RunError::Plan(m)
}

/// Where each system's I/O goes.
fn addresses(
    plan: &Plan,
    rp: &RampPlan,
    target: &Target,
    node: Option<&EmbeddedNode>,
) -> Result<Vec<String>, RunError> {
    let mut out = Vec::new();
    for s in &rp.systems {
        let a = match (&s.target, target, node) {
            (Some(t), _, _) => t.clone(),
            (None, Target::Embedded, Some(n)) => {
                let v = s.volume.as_deref().ok_or_else(|| {
                    ramp_err(format!(
                        "{}: system {:?}: no volume (the embedded node needs volume = NAME)",
                        plan.origin, s.name
                    ))
                })?;
                n.uri(v)
            }
            (None, Target::Nbd(u), _) | (None, Target::NodeVolume { uri: u, .. }, _) => u.clone(),
            (None, Target::Path(p), _) => p.display().to_string(),
            (None, Target::Embedded, None) => {
                return Err(ramp_err(format!(
                    "{}: the embedded node needs at least one [[volume]] in the plan (or pass --target URI|PATH)",
                    plan.origin
                )))
            }
        };
        out.push(a);
    }
    let shared = out.len() > 1
        && rp
            .systems
            .iter()
            .any(|s| s.target.is_none() && s.volume.is_none());
    if shared {
        return Err(ramp_err(format!(
            "{}: several systems would share the target {}: give each [[system]] its own volume (embedded node) or target = URI|PATH",
            plan.origin,
            target.describe()
        )));
    }
    Ok(out)
}

/// The generator's workload for system `i` of `n`, run `k`, on a target of `size` bytes.
pub fn workload(
    s: &Settings,
    system: &System,
    i: usize,
    n: usize,
    k: u32,
    size: u64,
) -> Result<Workload, String> {
    let bs = u64::from(s.block_size);
    let target = system.target_iops(k, s.runs);
    let journal_max = s.dirty_blocks_at(system.max_iops) * bs;
    let journal_max = journal_max.div_ceil(4096) * 4096;
    let want_span = s.span / bs * bs;
    let span = if size >= want_span + journal_max {
        want_span
    } else {
        size.saturating_sub(journal_max) / bs * bs
    };
    if span < bs * 16 {
        return Err(format!(
            "system {:?}: the target has {size} bytes, too small for a journal of {journal_max} bytes (dirty blocks × block size at {} IOPS) and at least 16 blocks of data",
            system.name, system.max_iops
        ));
    }
    let cycle = Duration::from_secs_f64(s.cycle_s());
    let offset = if s.stagger && n > 1 {
        cycle * i as u32 / n as u32
    } else {
        Duration::ZERO
    };
    Ok(Workload {
        read_iops: target as f64 * s.read_pct / 100.0,
        block_size: s.block_size,
        dirty_blocks: s.dirty_blocks_at(target),
        cycle,
        cycle_offset: offset,
        runtime: Duration::from_secs_f64(s.runtime_s()),
        write_qd: s.write_qd,
        wij_block: s.wij_block,
        wij_qd: s.wij_qd,
        read_inflight: s.read_inflight,
        span,
        journal_offset: span,
        seed: 0x9e37_79b9 ^ ((i as u64) << 32) ^ u64::from(k),
    })
}

/// The job's description stored in `jobs.jobfile` (the generator has no job file).
fn describe_job(system: &System, addr: &str, w: &Workload, target: u64) -> String {
    format!(
        "# qoslab genio (the ramp profile), not fio\nsystem = {:?}\naddress = {:?}\ntarget_iops = {target}\nworkload = {}\n",
        system.name,
        addr,
        serde_json::to_string(w).unwrap_or_default()
    )
}

fn dir_stats(ios: u64, window_s: f64, lat_s: f64, bytes_per_io: u64) -> DirStats {
    let iops = if window_s > 0.0 {
        ios as f64 / window_s
    } else {
        0.0
    };
    DirStats {
        iops,
        iops_mean: iops,
        bw_bytes: (iops * bytes_per_io as f64) as u64,
        bw_mean_bytes: iops * bytes_per_io as f64,
        io_bytes: ios * bytes_per_io,
        total_ios: ios,
        runtime_ms: (window_s * 1e3).round() as u64,
        lat_mean_ns: lat_s * 1e9,
        clat_mean_ns: lat_s * 1e9,
        ..Default::default()
    }
}

/// Run a ramp plan on `target`, storing as it goes.
pub fn run_ramp(
    plan: &Plan,
    target: &Target,
    store: &mut Store,
    env: &Env,
    observer: &mut dyn Observer,
) -> Result<Outcome, RunError> {
    let rp = plan
        .ramp_plan
        .as_ref()
        .ok_or_else(|| ramp_err(format!("{}: no [[system]] to ramp", plan.origin)))?;
    let s = &rp.settings;
    let node = match (target, &plan.node) {
        (Target::Embedded, Some(cfg)) => Some(EmbeddedNode::start(cfg)?),
        _ => None,
    };
    let addrs = addresses(plan, rp, target, node.as_ref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Target(TargetError::Node(format!("runtime: {e}"))))?;
    let bs = u64::from(s.block_size);
    let targets: Vec<Arc<dyn IoTarget>> = rt.block_on(async {
        let mut v = Vec::new();
        for (sys, a) in rp.systems.iter().zip(&addrs) {
            let need = s.span + s.dirty_blocks_at(sys.max_iops) * bs + 4096;
            let t = genio::open(a, need).await.map_err(|e| {
                RunError::Target(TargetError::Invalid(
                    a.clone(),
                    format!("system {:?}: {e}", sys.name),
                ))
            })?;
            v.push(t);
        }
        Ok::<_, RunError>(v)
    })?;
    // Check every run's layout before anything is stored.
    let n = rp.systems.len();
    let mut ends = Vec::new();
    for (i, (sys, t)) in rp.systems.iter().zip(&targets).enumerate() {
        let w = workload(s, sys, i, n, 0, t.size()).map_err(ramp_err)?;
        ends.push((w.journal_offset + s.dirty_blocks_at(sys.max_iops) * bs).min(t.size()));
    }
    if s.prefill {
        observer.prefilling(ends.iter().copied().max().unwrap_or(0));
        rt.block_on(async {
            let handles: Vec<_> = targets
                .iter()
                .zip(&ends)
                .map(|(t, end)| tokio::spawn(genio::prefill(t.clone(), *end, 1 << 20, 8)))
                .collect();
            for (h, a) in handles.into_iter().zip(&addrs) {
                h.await
                    .map_err(|e| IoError::Io(e.to_string()))
                    .and_then(|r| r)
                    .map_err(|e| {
                        RunError::Target(TargetError::Invalid(a.clone(), e.to_string()))
                    })?;
            }
            Ok::<_, RunError>(())
        })?;
    }
    let describe = if n == 1 {
        targets[0].describe()
    } else {
        targets
            .iter()
            .zip(&rp.systems)
            .map(|(t, s)| format!("{}: {}", s.name, t.describe()))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let run = store.begin_run(&NewRun {
        name: &plan.name,
        plan_origin: &plan.origin,
        plan_text: &plan.text,
        target: &describe,
        executor: "qoslab genio (ramp profile)",
        runtime_s: s.runtime_s(),
        ramp_s: 0.0,
        env,
    })?;
    crate::run::record_setup(store, run, node.as_ref(), plan.node.as_ref(), target)?;
    let mut rows: Vec<Vec<Row>> = vec![Vec::new(); n];
    let mut errors = false;
    let mut seq = 0u32;
    for k in 0..s.runs {
        observer.run_started(k, s.runs);
        let mut jobs = Vec::new();
        let mut loads = Vec::new();
        for (i, (sys, t)) in rp.systems.iter().zip(&targets).enumerate() {
            let w = workload(s, sys, i, n, k, t.size()).map_err(ramp_err)?;
            seq += 1;
            let tgt = sys.target_iops(k, s.runs);
            jobs.push(store.begin_job(
                run,
                seq,
                &sys.name,
                &format!("run{:02}", k + 1),
                sys.volume.as_deref(),
                k + 1,
                &describe_job(sys, &addrs[i], &w, tgt),
            )?);
            loads.push(w);
        }
        let stats: Vec<RunStats> = rt.block_on(async {
            let handles: Vec<_> = targets
                .iter()
                .zip(&loads)
                .map(|(t, w)| {
                    let (t, w) = (t.clone(), w.clone());
                    tokio::spawn(async move { genio::run_once(t, &w).await })
                })
                .collect();
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.unwrap_or_else(|e| RunStats {
                    errors: 1,
                    first_error: Some(format!("generator task: {e}")),
                    ..Default::default()
                }));
            }
            out
        });
        for (i, sys) in rp.systems.iter().enumerate() {
            let (w, st) = (&loads[i], &stats[i]);
            let row = Row::new(k + 1, sys.target_iops(k, s.runs), w, st, s);
            errors |= row.errors > 0;
            let v = verdicts(&row, s);
            let raw = serde_json::json!({
                "schema": "qoslab.genio.run/1",
                "system": sys.name,
                "workload": w,
                "stats": st,
                "row": row,
            });
            let out = FioOutput {
                fio_version: "qoslab genio".into(),
                jobs: vec![JobResult {
                    jobname: format!("run{:02}", k + 1),
                    client: None,
                    error: if st.errors > 0 { 5 } else { 0 },
                    read: dir_stats(st.reads, st.window_s, st.read_lat_mean_s, bs),
                    write: dir_stats(
                        st.cycles.iter().map(|c| c.writes).sum(),
                        st.window_s,
                        st.write_lat_mean_s(),
                        bs,
                    ),
                }],
                raw: raw.to_string(),
            };
            store.finish_job(jobs[i], Ok(&out), &v)?;
            rows[i].push(row);
            store.put_table(run, &table(&sys.name, &rows[i], s))?;
            observer.run_finished(sys, &rows[i]);
        }
    }
    drop(targets);
    let all_pass = rows.iter().flatten().all(|r| r.pass);
    let status = if errors {
        "error"
    } else if all_pass {
        "passed"
    } else {
        "failed"
    };
    store.finish_run(run, status)?;
    // Let the connections say goodbye before the node stops.
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
    drop(rt);
    if let Some(nd) = node {
        nd.stop();
    }
    Ok(Outcome {
        run_id: run,
        systems: rp
            .systems
            .iter()
            .cloned()
            .zip(addrs)
            .zip(rows)
            .map(|((s, a), r)| (s, a, r))
            .collect(),
        status: status.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run: u32, target: u64, cycle: f64, lat: f64) -> Row {
        let s = Settings {
            scale: 0.05,
            ..Settings::default()
        };
        let mut r = Row {
            run,
            target_iops: target,
            dirty_blocks: 100,
            read_iops: target as f64 * 0.75,
            write_iops: target as f64 * 0.25,
            total_iops: target as f64,
            longest_wij_s: 0.1,
            longest_cycle_s: cycle,
            longest_burst_s: cycle - 0.05,
            longest_flush_s: 0.05,
            write_lat_ms: lat,
            read_lat_ms: 0.2,
            cycles: 4,
            cycles_skipped: 0,
            reads_delayed: 0,
            errors: 0,
            first_error: None,
            pass: false,
        };
        r.pass = verdicts(&r, &s).iter().all(|v| v.passed);
        r
    }

    #[test]
    fn targets_step_as_rampruns() {
        let s = System {
            name: "a".into(),
            volume: None,
            target: None,
            min_iops: 75000,
            max_iops: 110000,
        };
        let t: Vec<u64> = (0..10).map(|k| s.target_iops(k, 10)).collect();
        assert_eq!(t[0], 75000);
        assert_eq!(t[9], 110000);
        assert_eq!(t[1], 78889);
        assert_eq!(s.target_iops(0, 1), 75000);
    }

    #[test]
    fn scale_shrinks_cycle_runtime_and_the_cycle_limit() {
        let s = Settings {
            scale: 0.05,
            ..Settings::default()
        };
        assert!((s.cycle_s() - 4.0).abs() < 1e-9);
        assert!((s.cycle_limit_s() - 2.25).abs() < 1e-9);
        assert!((s.runtime_s() - 16.0).abs() < 1e-9);
        // 1000 IOPS, 25% writes, 4 s cycles: 1000 dirty blocks.
        assert_eq!(s.dirty_blocks_at(1000), 1000);
        assert_eq!(s.max_write_latency, 0.001);
    }

    #[test]
    fn verdicts_and_pass() {
        assert!(row(1, 1000, 1.0, 0.5).pass);
        assert!(!row(2, 2000, 2.3, 0.5).pass);
        assert!(!row(3, 3000, 1.0, 1.5).pass);
        let v = verdicts(
            &row(2, 2000, 2.3, 0.5),
            &Settings {
                scale: 0.05,
                ..Settings::default()
            },
        );
        assert_eq!(v[0].expectation, "longest write cycle < 2.25 s");
        assert!(!v[0].passed);
        assert!(
            v[0].detail.contains("burst 2.250 s + FLUSH 0.050 s"),
            "{}",
            v[0].detail
        );
        assert!(v[1].passed);
    }

    #[test]
    fn summary_csv_has_rampruns_header_and_parses() {
        let rows = vec![row(1, 1000, 1.0, 0.5), row(2, 2000, 2.3, 0.5)];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 3);
        for l in &lines {
            assert_eq!(l.split(',').count(), 9, "{l}");
        }
        assert_eq!(lines[1], "1,750,250,1000,0.100,1.000,0.500,0.200,PASS");
        assert!(lines[2].ends_with(",FAIL"));
        assert_eq!(highest_pass(&rows).unwrap().target_iops, 1000);
        let t = table("sys", &rows, &Settings::default());
        assert_eq!(t.columns, COLUMNS);
        assert_eq!(t.rows[1][t.column("Pass").unwrap()], false);
        assert_eq!(t.rows[0][t.column("Target IOPS").unwrap()], 1000);
        let sys = System {
            name: "sys".into(),
            volume: None,
            target: None,
            min_iops: 1000,
            max_iops: 2000,
        };
        let h = render(
            &sys,
            "x",
            &rows,
            &Settings {
                scale: 0.05,
                ..Settings::default()
            },
        );
        assert!(
            h.contains("highest passing target: 1,000 IOPS (run 1)"),
            "{h}"
        );
        assert!(h.contains("longest write cycle < 2.250 s"), "{h}");
    }

    #[test]
    fn layout_puts_the_journal_after_the_span_and_refuses_small_targets() {
        let s = Settings {
            scale: 0.05,
            span: 64 << 20,
            ..Settings::default()
        };
        let sys = System {
            name: "a".into(),
            volume: None,
            target: None,
            min_iops: 1000,
            max_iops: 2000,
        };
        let w = workload(&s, &sys, 1, 2, 9, 1 << 30).unwrap();
        assert_eq!(w.span, 64 << 20);
        assert_eq!(w.journal_offset, 64 << 20);
        assert_eq!(w.dirty_blocks, 2000);
        assert_eq!(w.read_iops, 1500.0);
        assert_eq!(w.cycle_offset, Duration::from_secs(2));
        // 2000 × 8 KiB journal: a 20 MiB target leaves ~4 MiB of span.
        let w = workload(&s, &sys, 0, 1, 0, 20 << 20).unwrap();
        assert!(w.span + w.journal_bytes() <= 20 << 20);
        let e = workload(&s, &sys, 0, 1, 0, 16_384_000 + 8192).unwrap_err();
        assert!(e.contains("too small for a journal"), "{e}");
    }

    #[test]
    fn the_example_ramp_plans_are_valid() {
        let load = |f: &str| {
            let p = format!("{}/../../examples/{f}", env!("CARGO_MANIFEST_DIR"));
            Plan::load(std::path::Path::new(&p)).unwrap()
        };
        let p = load("seed001-ramp.toml");
        let r = p.ramp_plan.as_ref().unwrap();
        assert_eq!(r.systems.len(), 3);
        assert_eq!((r.systems[2].min_iops, r.systems[2].max_iops), (900, 1800));
        assert!((r.settings.cycle_limit_s() - 1.125).abs() < 1e-9);
        assert_eq!(p.node.as_ref().unwrap().capacity.unwrap().iops, 3500);
        assert!(p.workloads.is_empty() && p.jobs().is_empty());
        let r = load("ramp-cycle-2000.toml").ramp_plan.unwrap();
        assert_eq!(r.settings.dirty_blocks, Some(4000));
        assert_eq!(r.settings.read_pct, 0.0);
        let r = load("ramp-controller.toml").ramp_plan.unwrap();
        assert_eq!(r.systems[0].target_iops(9, r.settings.runs), 4000);
    }

    #[test]
    fn plan_errors_name_the_line_and_key() {
        let e = |t: &str| Plan::parse(t, "p.toml").unwrap_err().0;
        let v = "[[volume]]\nname = \"a\"\nsize = \"1GB\"\n";
        for (bad, want) in [
            (format!("{v}[ramp]\nruns = 3\n"), "p.toml:4: [ramp] without any [[system]]"),
            (format!("{v}[[system]]\nname = \"s\"\nmax_iops = 5\n"), "p.toml:4: system \"s\": min_iops is required"),
            (format!("{v}[[system]]\nmin_iops = 0\nmax_iops = 5\n"), "p.toml:5: system \"system1\": min_iops = 0: allowed 1 .. 100000000"),
            (format!("{v}[ramp]\ncycle = \"x\"\n[[system]]\nmin_iops = 1\nmax_iops = 5\n"), "p.toml:5: ramp.cycle: invalid duration"),
            (format!("{v}[ramp]\nrunz = 3\n"), "unknown field `runz`"),
            (format!("{v}[[system]]\nmin_iops = 1\nmax_iops = 5\n[[workload]]\nfio = {{ rw = \"read\" }}\n"), "not both"),
            (format!("{v}[[system]]\nvolume = \"a\"\ntarget = \"/tmp\"\nmin_iops = 1\nmax_iops = 5\n"), "not both"),
        ] {
            let got = e(&bad);
            assert!(got.contains(want), "for:\n{bad}\ngot: {got}\nwant: {want}");
        }
    }

    #[test]
    fn overrides_apply_and_validate() {
        let mut p = profile_plan(true).unwrap().ramp_plan.unwrap();
        p.apply(&Overrides {
            min_iops: Some(1000),
            max_iops: Some(10000),
            scale: Some(0.05),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.systems[0].volume.as_deref(), Some("bench"));
        assert_eq!(
            (p.systems[0].min_iops, p.systems[0].max_iops),
            (1000, 10000)
        );
        for (o, want) in [
            (
                Overrides {
                    max_iops: Some(10),
                    ..Default::default()
                },
                "max_iops (--max-iops) = 10: allowed min_iops (1000)",
            ),
            (
                Overrides {
                    runs: Some(0),
                    ..Default::default()
                },
                "runs (--runs) = 0: allowed 1 .. 1000",
            ),
            (
                Overrides {
                    scale: Some(0.0),
                    ..Default::default()
                },
                "scale (--scale) = 0",
            ),
            (
                Overrides {
                    read_pct: Some(101.0),
                    ..Default::default()
                },
                "read_pct (--read-pct) = 101 %: allowed 0 .. 100 %",
            ),
            (
                Overrides {
                    runtime: Some(10.0),
                    ..Default::default()
                },
                "shorter than one write cycle",
            ),
            (
                Overrides {
                    block_size: Some(1000),
                    ..Default::default()
                },
                "block_size (--block-size) = 1000 bytes",
            ),
        ] {
            let e = p.clone().apply(&o).unwrap_err();
            assert!(e.contains(want), "{e}\nwant: {want}");
        }
    }
}
