//! `[provisioned]`: the node emulates a provisioned file system (FSx for ONTAP's model).

use qos_core::{parse_seconds, parse_size, parse_throughput, BurstShape};
use serde::Deserialize;

use super::{ConfigError, NumOrStr};
use crate::provisioned::spec::{preset_names, FsSpec, PresetOptions, ResourceSpec};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFs {
    preset: Option<String>,
    scale: Option<NumOrStr>,
    rate_scale: Option<NumOrStr>,
    burst_duration: Option<NumOrStr>,
    initial_percent: Option<i64>,
    storage: Option<NumOrStr>,
    ssd_iops: Option<i64>,
    per_connection: Option<NumOrStr>,
    cache_block: Option<NumOrStr>,
    memory_cache: Option<NumOrStr>,
    nvme_cache: Option<NumOrStr>,
    network: Option<RawResource>,
    disk: Option<RawResource>,
    disk_iops: Option<RawResource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResource {
    baseline: NumOrStr,
    burst: Option<NumOrStr>,
}

fn factor(what: &str, field: &str, v: &Option<NumOrStr>) -> Result<f64, ConfigError> {
    let x = match v {
        None => return Ok(1.0),
        Some(NumOrStr::Int(i)) => *i as f64,
        Some(NumOrStr::Float(f)) => *f,
        Some(NumOrStr::Str(s)) => super::burst::parse_fraction(s).unwrap_or(f64::NAN),
    };
    if !(x.is_finite() && x > 0.0 && x <= 1000.0) {
        return Err(ConfigError(format!(
            "{what}.{field} = {}: allowed range is above 0 up to 1000 (a number such as 0.01 or \"1/100\")",
            v.as_ref().map_or(String::new(), NumOrStr::as_text)
        )));
    }
    Ok(x)
}

fn size(what: &str, field: &str, v: &NumOrStr) -> Result<u64, ConfigError> {
    match v {
        NumOrStr::Int(i) if *i >= 0 => Ok(*i as u64),
        NumOrStr::Str(s) => parse_size(s).map_err(|e| ConfigError(format!("{what}.{field}: {e}"))),
        other => Err(ConfigError(format!(
            "{what}.{field} = {}: give bytes as an integer or a size such as \"16GB\"",
            other.as_text()
        ))),
    }
}

/// Bytes per second: an integer, or qoslab's throughput form (`"150MB/s"`, MB = 2^20 bytes).
fn byte_rate(what: &str, field: &str, v: &NumOrStr) -> Result<u64, ConfigError> {
    match v {
        NumOrStr::Int(i) if *i >= 0 => Ok(*i as u64),
        NumOrStr::Str(s) => match parse_throughput(s) {
            Ok(t) if t.iops == 0 => Ok(t.bytes_per_sec()),
            _ => Err(ConfigError(format!(
                "{what}.{field} = {s:?}: give bytes per second as an integer or a throughput \
                 such as \"150MB/s\" (MB = 2^20 bytes)"
            ))),
        },
        other => Err(ConfigError(format!(
            "{what}.{field} = {}: give bytes per second as an integer or a throughput such as \"150MB/s\"",
            other.as_text()
        ))),
    }
}

fn ops_rate(what: &str, field: &str, v: &NumOrStr) -> Result<u64, ConfigError> {
    match v {
        NumOrStr::Int(i) if *i >= 0 => Ok(*i as u64),
        other => Err(ConfigError(format!(
            "{what}.{field} = {}: give I/Os per second as a non-negative integer",
            other.as_text()
        ))),
    }
}

/// Parse `[provisioned]` (`what` names it in messages, e.g. `node.toml:30: provisioned`).
pub(super) fn parse(what: &str, r: &RawFs) -> Result<FsSpec, ConfigError> {
    let o = options(what, r)?;
    let mut spec = base(what, r, &o)?;
    resources(what, r, &o, &mut spec)?;
    if let Some(v) = &r.memory_cache {
        spec.memory_cache = size(what, "memory_cache", v)?;
    }
    if let Some(v) = &r.nvme_cache {
        spec.nvme_cache = size(what, "nvme_cache", v)?;
    }
    Ok(spec)
}

/// What scales a preset: `scale`, `rate_scale`, `burst_duration`, `initial_percent`,
/// `storage`, `ssd_iops`, `per_connection`, `cache_block`.
fn options(what: &str, r: &RawFs) -> Result<PresetOptions, ConfigError> {
    let scale = factor(what, "scale", &r.scale)?;
    let rate_scale = factor(what, "rate_scale", &r.rate_scale)?;
    let burst_seconds = match &r.burst_duration {
        None => crate::provisioned::spec::DEFAULT_BURST_SECONDS,
        Some(NumOrStr::Int(i)) if *i > 0 => *i as u64,
        Some(NumOrStr::Str(s)) => parse_seconds(s)
            .ok()
            .filter(|&x| x > 0)
            .ok_or_else(|| {
                ConfigError(format!(
                    "{what}.burst_duration = {s:?}: give a positive duration such as \"30min\" or 1800 (seconds)"
                ))
            })?,
        Some(v) => {
            return Err(ConfigError(format!(
                "{what}.burst_duration = {}: give a positive duration such as \"30min\" or 1800 (seconds)",
                v.as_text()
            )))
        }
    };
    let initial_percent = match r.initial_percent {
        None => 100,
        Some(p @ 0..=100) => p as u8,
        Some(p) => {
            return Err(ConfigError(format!(
                "{what}.initial_percent = {p}: allowed range is 0 to 100"
            )))
        }
    };
    let mut o = PresetOptions {
        scale,
        rate_scale,
        burst_seconds,
        initial_percent,
        ..PresetOptions::default()
    };
    if let Some(v) = &r.storage {
        o.storage = size(what, "storage", v)?;
    }
    if let Some(i) = r.ssd_iops {
        o.ssd_iops = Some(u64::try_from(i).map_err(|_| {
            ConfigError(format!(
                "{what}.ssd_iops = {i}: must be 0 (not limited) or positive"
            ))
        })?);
    }
    if let Some(v) = &r.per_connection {
        o.per_connection = Some(byte_rate(what, "per_connection", v)?);
    }
    if let Some(v) = &r.cache_block {
        o.cache_block = size(what, "cache_block", v)?;
        if !(512..=(64 << 20)).contains(&o.cache_block) {
            return Err(ConfigError(format!(
                "{what}.cache_block = {}: allowed range is 512 B to 64 MiB",
                o.cache_block
            )));
        }
    }
    Ok(o)
}

/// The preset `preset` names, scaled by `o`, or a custom file system when `network` and
/// `disk` are given instead.
fn base(what: &str, r: &RawFs, o: &PresetOptions) -> Result<FsSpec, ConfigError> {
    Ok(match &r.preset {
        Some(p) => FsSpec::preset(p, o).ok_or_else(|| {
            ConfigError(format!(
                "{what}.preset = {p:?}: allowed presets are {}",
                preset_names().join(", ")
            ))
        })?,
        None => {
            if r.network.is_none() || r.disk.is_none() {
                return Err(ConfigError(format!(
                    "{what}: give a preset (one of {}) or at least network and disk",
                    preset_names().join(", ")
                )));
            }
            FsSpec {
                name: "custom".into(),
                network: ResourceSpec::default(),
                disk: ResourceSpec::default(),
                disk_iops: ResourceSpec::default(),
                ssd_iops: o.ssd_iops.unwrap_or(0),
                memory_cache: 0,
                nvme_cache: 0,
                cache_block: o.cache_block,
                per_connection: o.per_connection.unwrap_or(0),
            }
        }
    })
}

/// Explicit `network`, `disk` and `disk_iops` resources over the preset's.
fn resources(
    what: &str,
    r: &RawFs,
    o: &PresetOptions,
    spec: &mut FsSpec,
) -> Result<(), ConfigError> {
    let (scale, burst_seconds, initial_percent) = (o.scale, o.burst_seconds, o.initial_percent);
    // Explicit resources replace the preset's; their buckets follow burst_duration and
    // scale like a preset's (rates are taken as given).
    let bucket = |base: u64, rate: u64| {
        let b =
            (rate.saturating_sub(base).saturating_mul(burst_seconds) as f64 * scale).round() as u64;
        BurstShape {
            rate,
            bucket: b,
            initial: (b as f64 * f64::from(initial_percent) / 100.0).round() as u64,
        }
    };
    for (field, raw, slot, bytes) in [
        ("network", &r.network, &mut spec.network, true),
        ("disk", &r.disk, &mut spec.disk, true),
        ("disk_iops", &r.disk_iops, &mut spec.disk_iops, false),
    ] {
        let Some(raw) = raw else { continue };
        let rate = |f: &str, v: &NumOrStr| {
            if bytes {
                byte_rate(what, f, v)
            } else {
                ops_rate(what, f, v)
            }
        };
        let base = rate(&format!("{field}.baseline"), &raw.baseline)?;
        let burst = match &raw.burst {
            None => None,
            Some(v) => {
                let b = rate(&format!("{field}.burst"), v)?;
                if b <= base {
                    return Err(ConfigError(format!(
                        "{what}.{field}.burst = {b}: must be above {field}.baseline = {base} (or omit it: no burst)"
                    )));
                }
                Some(bucket(base, b))
            }
        };
        *slot = ResourceSpec {
            baseline: base,
            burst,
        };
    }
    Ok(())
}
