//! `burst = { ... }` sub-tables of fixed and adaptive policies, `provisioned = { ... }`
//! policies and the node's `ceiling_mode` (qoslab extensions of ONTAP's shapes).

use qos_core::{parse_seconds, parse_size, BurstPolicy, Model, ProvisionedPolicy};
use serde::Deserialize;

use super::NumOrStr;

/// How ceilings treat short bursts, node-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CeilingMode {
    /// qoslab's pacer: at most 5 ms of idle credit, never above the ceiling over longer
    /// windows.
    #[default]
    Strict,
    /// ONTAP's documented tolerance: tokens accumulate to 150 % and are spent up to 50 %
    /// above the ceiling ([`qos_core::ontap_tolerance`]). Policies with their own burst keep it.
    Ontap,
}

impl std::fmt::Display for CeilingMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CeilingMode::Strict => "strict",
            CeilingMode::Ontap => "ontap",
        })
    }
}

impl std::str::FromStr for CeilingMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "strict" => Ok(CeilingMode::Strict),
            "ontap" => Ok(CeilingMode::Ontap),
            other => Err(format!(
                "{other:?}: allowed values are \"strict\" (the default: ceilings never exceeded \
                 beyond 5 ms of idle credit) and \"ontap\" (ONTAP's tolerance: up to +50% in \
                 bursts, tokens accumulating to 150%)"
            )),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBurst {
    max_throughput_iops: Option<i64>,
    max_throughput_mbps: Option<i64>,
    /// ONTAP CLI form: "3000iops", "250MB/s", "3000iops,250MB/s".
    max_throughput: Option<String>,
    bucket_iops: Option<NumOrStr>,
    bucket_mb: Option<NumOrStr>,
    duration: Option<NumOrStr>,
    initial_percent: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProvisioned {
    model: String,
    bucket_scale: Option<NumOrStr>,
    initial_percent: Option<i64>,
    weight: Option<i64>,
}

fn count(field: &str, v: Option<i64>) -> Result<u64, String> {
    match v {
        None => Ok(0),
        Some(i) if i < 0 => Err(format!("{field} = {i}: must be 0 or positive")),
        Some(i) => Ok(i as u64),
    }
}

fn percent(field: &str, v: Option<i64>) -> Result<u8, String> {
    match v {
        None => Ok(100),
        Some(p @ 0..=100) => Ok(p as u8),
        Some(p) => Err(format!(
            "{field} = {p}: allowed range is 0 to 100 (percent of the bucket; default 100)"
        )),
    }
}

/// A whole number given as an integer, a whole float (`5.4e6`) or a string (`"5400000"`).
fn whole(field: &str, v: &NumOrStr) -> Result<u64, String> {
    let bad = || {
        format!(
            "{field} = {}: give a whole, non-negative number, e.g. 5400000",
            v.as_text()
        )
    };
    match v {
        NumOrStr::Int(i) if *i >= 0 => Ok(*i as u64),
        NumOrStr::Float(f) if *f >= 0.0 && f.fract() == 0.0 && *f < 1e19 => Ok(*f as u64),
        NumOrStr::Str(s) => s.trim().replace('_', "").parse().map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// A `burst = { ... }` table; `kind` is `fixed` or `adaptive` (for messages).
pub(super) fn burst(kind: &str, b: &RawBurst) -> Result<BurstPolicy, String> {
    let f = |name: &str| format!("{kind}.burst.{name}");
    let mut p = BurstPolicy {
        max_iops: count(&f("max_throughput_iops"), b.max_throughput_iops)?,
        max_mbps: count(&f("max_throughput_mbps"), b.max_throughput_mbps)?,
        initial_percent: percent(&f("initial_percent"), b.initial_percent)?,
        ..BurstPolicy::default()
    };
    super::throughput(
        &f("max_throughput"),
        &b.max_throughput,
        &mut p.max_iops,
        &mut p.max_mbps,
    )?;
    if let Some(v) = &b.bucket_iops {
        p.bucket_iops = whole(&f("bucket_iops"), v)?;
    }
    if let Some(v) = &b.bucket_mb {
        p.bucket_mb = match v {
            // A size: "1TiB" is 1,048,576 MB of credits (MB = 2^20 bytes).
            NumOrStr::Str(s) if s.trim().ends_with(|c: char| c.is_ascii_alphabetic()) => {
                let bytes = parse_size(s).map_err(|e| format!("{}: {e}", f("bucket_mb")))?;
                bytes.div_ceil(1 << 20)
            }
            other => whole(&f("bucket_mb"), other)?,
        };
    }
    if let Some(v) = &b.duration {
        p.seconds = match v {
            NumOrStr::Str(s) => parse_seconds(s).map_err(|e| format!("{}: {e}", f("duration")))?,
            other => whole(&f("duration"), other)?,
        };
    }
    Ok(p)
}

/// A `provisioned = { model = "ebs-gp2", ... }` policy.
pub(super) fn provisioned(r: &RawProvisioned) -> Result<ProvisionedPolicy, String> {
    let model: Model = r
        .model
        .parse()
        .map_err(|e| format!("provisioned.model: {e}"))?;
    let bucket_scale = match &r.bucket_scale {
        None => 1.0,
        Some(NumOrStr::Int(i)) => *i as f64,
        Some(NumOrStr::Float(x)) => *x,
        Some(NumOrStr::Str(s)) => parse_fraction(s).ok_or_else(|| {
            format!(
                "provisioned.bucket_scale = {s:?}: give a number such as 0.1 or a fraction such as \"1/10\""
            )
        })?,
    };
    Ok(ProvisionedPolicy {
        model,
        bucket_scale,
        initial_percent: percent("provisioned.initial_percent", r.initial_percent)?,
        weight: super::weight("provisioned.weight", r.weight)?,
    })
}

/// `"0.1"` or `"1/10"`.
pub fn parse_fraction(s: &str) -> Option<f64> {
    let s = s.trim();
    match s.split_once('/') {
        Some((a, b)) => {
            let (a, b): (f64, f64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (b != 0.0).then(|| a / b)
        }
        None => s.parse().ok(),
    }
}
