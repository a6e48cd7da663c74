//! The API's burst extensions: `fixed.burst` / `adaptive.burst` objects and `provisioned`
//! policies (qoslab extensions of ONTAP's policy shapes), parsed once here and rendered in
//! the same shape they are given.

use qos_core::{parse_seconds, BurstPolicy, Model, ProvisionedPolicy};
use serde_json::{json, Map, Value};

use super::{code, object, only, uint, weight, wrong_type, ApiError, R};

const BURST_FIELDS: &[&str] = &[
    "max_throughput_iops",
    "max_throughput_mbps",
    "bucket_iops",
    "bucket_mb",
    "duration",
    "initial_percent",
];

/// `"<kind>.burst"`: an object (merged into `current`) or `null` (no burst).
pub(super) fn apply_burst(
    current: Option<BurstPolicy>,
    v: &Value,
    kind: &str,
) -> R<Option<BurstPolicy>> {
    let t = format!("{kind}.burst");
    if v.is_null() {
        return Ok(None);
    }
    let m = object(v, &t)?;
    only(m, &t, BURST_FIELDS)?;
    let mut b = current.unwrap_or_default();
    let big = u64::MAX >> 1;
    if let Some(x) = uint(m, &t, "max_throughput_iops", big)? {
        b.max_iops = x;
    }
    if let Some(x) = uint(m, &t, "max_throughput_mbps", big)? {
        b.max_mbps = x;
    }
    if let Some(x) = uint(m, &t, "bucket_iops", big)? {
        b.bucket_iops = x;
        b.seconds = 0;
    }
    if let Some(x) = uint(m, &t, "bucket_mb", big)? {
        b.bucket_mb = x;
        b.seconds = 0;
    }
    if let Some(d) = m.get("duration") {
        let f = format!("{t}.duration");
        b.seconds = match d {
            Value::Number(_) => uint(m, &t, "duration", big)?.unwrap_or(0),
            Value::String(s) => parse_seconds(s)
                .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, &f, format!("{f}: {e}")))?,
            other => {
                return Err(wrong_type(
                    &f,
                    other,
                    "a number of seconds or a string such as \"30min\"",
                ))
            }
        };
        if b.seconds > 0 {
            b.bucket_iops = 0;
            b.bucket_mb = 0;
        }
    }
    if let Some(x) = uint(m, &t, "initial_percent", 255)? {
        b.initial_percent = x as u8;
    }
    Ok(Some(b))
}

/// The `burst` object as stored and shown.
pub(super) fn burst_json(b: &BurstPolicy) -> Value {
    let mut m = Map::new();
    m.insert("max_throughput_iops".into(), json!(b.max_iops));
    m.insert("max_throughput_mbps".into(), json!(b.max_mbps));
    if b.seconds > 0 {
        m.insert("duration".into(), json!(b.seconds));
    } else {
        m.insert("bucket_iops".into(), json!(b.bucket_iops));
        m.insert("bucket_mb".into(), json!(b.bucket_mb));
    }
    m.insert("initial_percent".into(), json!(b.initial_percent));
    Value::Object(m)
}

const PROVISIONED_FIELDS: &[&str] = &["model", "bucket_scale", "initial_percent", "weight"];

/// A `provisioned` object merged into `base` (`None`: creating; `model` is then required).
pub(super) fn apply_provisioned(
    base: Option<ProvisionedPolicy>,
    v: &Value,
) -> R<ProvisionedPolicy> {
    let t = "provisioned";
    let m = object(v, t)?;
    only(m, t, PROVISIONED_FIELDS)?;
    let model =
        match m.get("model") {
            None => None,
            Some(Value::String(s)) => Some(s.parse::<Model>().map_err(|e| {
                ApiError::bad(code::OUT_OF_RANGE, "provisioned.model", e.to_string())
            })?),
            Some(other) => {
                return Err(wrong_type(
                    "provisioned.model",
                    other,
                    "a string such as \"ebs-gp2\"",
                ))
            }
        };
    let mut p = match (base, model) {
        (Some(b), Some(m)) => ProvisionedPolicy { model: m, ..b },
        (Some(b), None) => b,
        (None, Some(m)) => ProvisionedPolicy::new(m),
        (None, None) => return Err(ApiError::bad(
            code::MISSING_FIELD,
            "provisioned.model",
            "provisioned.model is required: one of ebs-gp2, ebs-st1, ebs-sc1, azure-premium-ssd",
        )),
    };
    match m.get("bucket_scale") {
        None => {}
        Some(Value::Number(n)) => p.bucket_scale = n.as_f64().unwrap_or(f64::NAN),
        Some(other) => {
            return Err(wrong_type(
                "provisioned.bucket_scale",
                other,
                "a number such as 0.1",
            ))
        }
    }
    if let Some(x) = uint(m, t, "initial_percent", 255)? {
        p.initial_percent = x as u8;
    }
    if let Some(w) = weight(m, t)? {
        p.weight = w;
    }
    Ok(p)
}

/// The `provisioned` object as stored and shown.
pub(super) fn provisioned_json(p: &ProvisionedPolicy) -> Value {
    let mut m = Map::new();
    m.insert("model".into(), json!(p.model.name()));
    m.insert("bucket_scale".into(), json!(p.bucket_scale));
    m.insert("initial_percent".into(), json!(p.initial_percent));
    if p.weight > 0 {
        m.insert("weight".into(), json!(p.weight));
    }
    Value::Object(m)
}
