//! The emulated array's part of `[capacity]`: how requests are counted
//! (`io_accounting`), what they cost (`read`/`write` measured points), how long the
//! array takes to serve them (`latency`), and ONTAP's MB/s-ceiling-with-a-floor rule.
//!
//! ```toml
//! [capacity]
//! io_accounting = "transfer:64KiB"          # whole | transfer[:SIZE] | solidfire | curve:SIZE=COST,...
//! mbps_ceiling_with_floor = "ignored"       # ONTAP: a policy with a floor does not enforce its MB/s ceiling
//! read  = { 4KiB = "15300iops", 128KiB = "195MB/s", 1MiB = "246MB/s" }
//! write = { 4KiB = "10900iops", 128KiB = "128MB/s", 1MiB = "136MB/s" }
//! latency = { read = { fixed = "785us" }, write = { fixed = "704us", per_kib = "0.5us" } }
//! ```

use std::collections::BTreeMap;

use qos_core::array::{parse_duration, parse_point, PointRate};
use qos_core::{Accounting, ArrayModel, Latency, ServiceCurve, ServiceLatency};
use serde::Deserialize;

use super::ConfigError;

/// Longest service latency accepted: 10 s (fixed), 1 s per KiB.
pub const MAX_FIXED_LATENCY_NS: u64 = 10_000_000_000;
pub const MAX_PER_KIB_LATENCY_NS: u64 = 1_000_000_000;

/// Whether a policy's MB/s ceiling is enforced when the policy also has a floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MbpsCeilingWithFloor {
    /// Both ceilings apply, whichever is reached first (qoslab's default).
    #[default]
    Enforced,
    /// Only the IOPS ceiling applies: NetApp's KB "Quality of Service limit is not
    /// enforced" ("when using a maximum (ceiling) limit of IOPS and throughput (MB/s), in
    /// addition to a minimum (floor) limit ... a higher limit of MB/s is allowed").
    Ignored,
}

impl std::fmt::Display for MbpsCeilingWithFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MbpsCeilingWithFloor::Enforced => "enforced",
            MbpsCeilingWithFloor::Ignored => "ignored",
        })
    }
}

/// The array settings of `[capacity]` (all optional; the default changes nothing).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArraySpec {
    /// How a request counts against ceilings, floors and the controller.
    pub accounting: Accounting,
    /// What a request costs the controller, per direction (`None`: `iops`/`mbps`).
    pub model: Option<ArrayModel>,
    /// How long the array takes to serve a request once dispatched.
    pub latency: Latency,
    pub mbps_ceiling_with_floor: MbpsCeilingWithFloor,
}

impl ArraySpec {
    /// Does it need an emulated controller (a cost model or a service latency)?
    pub fn needs_controller(&self) -> bool {
        self.model.is_some() || !self.latency.is_zero()
    }
}

/// `[capacity]`'s array keys, as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawArray {
    pub io_accounting: Option<String>,
    pub mbps_ceiling_with_floor: Option<String>,
    pub read: Option<BTreeMap<String, String>>,
    pub write: Option<BTreeMap<String, String>>,
    pub latency: Option<RawLatency>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLatency {
    read: Option<RawServiceLatency>,
    write: Option<RawServiceLatency>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServiceLatency {
    fixed: Option<String>,
    per_kib: Option<String>,
}

/// Validate the array keys; `what` names the table in messages (`node.toml:12: capacity`).
pub(super) fn parse(what: &str, raw: RawArray) -> Result<ArraySpec, ConfigError> {
    let err = |m: String| ConfigError(format!("{what}.{m}"));
    let accounting = match &raw.io_accounting {
        None => Accounting::Whole,
        Some(s) => s
            .parse::<Accounting>()
            .map_err(|e| err(format!("io_accounting = {}", e.0)))?,
    };
    let mbps_ceiling_with_floor = match raw.mbps_ceiling_with_floor.as_deref() {
        None | Some("enforced") => MbpsCeilingWithFloor::Enforced,
        Some("ignored") => MbpsCeilingWithFloor::Ignored,
        Some(other) => {
            return Err(err(format!(
            "mbps_ceiling_with_floor = {other:?}: allowed values are \"enforced\" (default) and \
                 \"ignored\" (ONTAP: a policy with a floor does not enforce its MB/s ceiling)"
        )))
        }
    };
    let curve = |dir: &str, m: &BTreeMap<String, String>| {
        let mut points = Vec::with_capacity(m.len());
        for (size, rate) in m {
            points
                .push(parse_point(size, rate).map_err(|e| err(format!("{dir}.{size}: {}", e.0)))?);
        }
        ServiceCurve::new(points).map_err(|e| err(format!("{dir}: {}", e.0)))
    };
    let model = match (&raw.read, &raw.write) {
        (None, None) => None,
        (Some(r), Some(w)) => Some(ArrayModel {
            read: curve("read", r)?,
            write: curve("write", w)?,
        }),
        _ => {
            return Err(ConfigError(format!(
                "{what}: give both read and write (what the array does when saturated, per \
                 request size), e.g. read = {{ 4KiB = \"15300iops\", 1MiB = \"246MB/s\" }}"
            )))
        }
    };
    let mut latency = Latency::default();
    if let Some(l) = raw.latency {
        for (dir, src, dst) in [
            ("read", l.read, &mut latency.read),
            ("write", l.write, &mut latency.write),
        ] {
            let Some(src) = src else { continue };
            *dst = ServiceLatency {
                fixed_ns: duration(&err, dir, "fixed", &src.fixed, MAX_FIXED_LATENCY_NS)?,
                per_kib_ns: duration(&err, dir, "per_kib", &src.per_kib, MAX_PER_KIB_LATENCY_NS)?,
            };
        }
    }
    Ok(ArraySpec {
        accounting,
        model,
        latency,
        mbps_ceiling_with_floor,
    })
}

fn duration(
    err: &impl Fn(String) -> ConfigError,
    dir: &str,
    field: &str,
    v: &Option<String>,
    max: u64,
) -> Result<u64, ConfigError> {
    let Some(s) = v else { return Ok(0) };
    let ns = parse_duration(s).map_err(|e| err(format!("latency.{dir}.{field} = {}", e.0)))?;
    if ns > max {
        return Err(err(format!(
            "latency.{dir}.{field} = {s:?}: allowed range is 0 to {} ms",
            max / 1_000_000
        )));
    }
    Ok(ns)
}

/// The points of a curve as config text (`4KiB = "15300iops"`), for messages and the API.
pub fn describe(c: &ServiceCurve) -> Vec<(String, String)> {
    c.declared()
        .iter()
        .map(|&(s, r)| {
            let rate = match r {
                PointRate::Iops(n) => format!("{n}iops"),
                PointRate::BytesPerSec(b) if b % (1 << 20) == 0 => format!("{}MB/s", b >> 20),
                PointRate::BytesPerSec(b) => format!("{b}B/s"),
            };
            (qos_core::format_size(s), rate)
        })
        .collect()
}
