//! The API's burst extensions: `fixed.burst` / `adaptive.burst` objects and `provisioned`
//! policies (qoslab extensions of ONTAP's policy shapes), parsed once here and rendered in
//! the same shape they are given.

use qos_core::{parse_seconds, BurstPolicy, Model, Policy, ProvisionedPolicy};
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

/// A `provisioned` policy (created, or patched over a provisioned `base`); `None` when
/// neither the body nor the base is one.
pub(super) fn provisioned_kind(m: &Map<String, Value>, base: Option<&Policy>) -> R<Option<Policy>> {
    let given = m.get("provisioned");
    let other = m.contains_key("fixed") || m.contains_key("adaptive");
    if given.is_some() && other {
        return Err(ApiError::bad(
            code::CONFLICT_FIELDS,
            "provisioned",
            "give exactly one of \"fixed\", \"adaptive\" or \"provisioned\"",
        ));
    }
    let immutable = |target: &str| {
        ApiError::bad(
            code::IMMUTABLE,
            target,
            "a policy cannot change between fixed, adaptive and provisioned; create a new policy",
        )
    };
    match (given, base) {
        (Some(v), None) => Ok(Some(Policy::Provisioned(apply_provisioned(None, v)?))),
        (Some(v), Some(Policy::Provisioned(b))) => {
            Ok(Some(Policy::Provisioned(apply_provisioned(Some(*b), v)?)))
        }
        (Some(_), Some(_)) => Err(immutable("provisioned")),
        (None, Some(Policy::Provisioned(b))) if !other => Ok(Some(Policy::Provisioned(*b))),
        (None, Some(Policy::Provisioned(_))) => Err(immutable(if m.contains_key("fixed") {
            "fixed"
        } else {
            "adaptive"
        })),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{new_policy, parse_body, patch_policy, policy_json, stored_policy};
    use qos_core::{BurstPolicy, Model, Policy};
    use serde_json::Value;

    fn body(s: &str) -> serde_json::Map<String, Value> {
        parse_body(s.as_bytes()).expect("json")
    }

    #[test]
    fn fixed_burst_round_trips() {
        let p = new_policy(&body(
            r#"{"name":"gp2ish","fixed":{"max_throughput_iops":300,
                "burst":{"max_throughput_iops":3000,"bucket_iops":5400000}}}"#,
        ))
        .expect("valid")
        .policy;
        let Policy::Fixed(f) = p else { panic!("{p:?}") };
        assert_eq!(
            f.burst,
            Some(BurstPolicy {
                max_iops: 3_000,
                bucket_iops: 5_400_000,
                ..BurstPolicy::default()
            })
        );
        let stored = Value::Object(policy_json(&p)).to_string();
        assert_eq!(stored_policy(&stored).expect("stored form parses"), p);
        // PATCH: a duration replaces the bucket; null removes the burst.
        let q = patch_policy(&body(r#"{"fixed":{"burst":{"duration":"1min"}}}"#), &p)
            .expect("patch")
            .policy;
        let Policy::Fixed(g) = q else { panic!() };
        let b = g.burst.unwrap();
        assert_eq!((b.seconds, b.bucket_iops, b.max_iops), (60, 0, 3_000));
        let r = patch_policy(&body(r#"{"fixed":{"burst":null}}"#), &q).expect("patch");
        assert_eq!(
            r.policy,
            Policy::Fixed(super::super::FixedPolicy { burst: None, ..g })
        );
    }

    #[test]
    fn burst_errors_name_the_field() {
        for (b, target, text) in [
            (
                r#"{"max_throughput_iops":3000}"#,
                "fixed.burst.bucket_iops",
                "needs a bucket",
            ),
            (
                r#"{"max_throughput_iops":100,"bucket_iops":5}"#,
                "fixed.burst.max_throughput_iops",
                "above fixed.max_throughput_iops = 300",
            ),
            (r#"{"bucket":5}"#, "fixed.burst.bucket", "unexpected field"),
            (
                r#"{"max_throughput_iops":3000,"duration":"soon"}"#,
                "fixed.burst.duration",
                "invalid duration",
            ),
            (r#"[1]"#, "fixed.burst", "must be an object"),
        ] {
            let e = new_policy(&body(&format!(
                r#"{{"name":"p","fixed":{{"max_throughput_iops":300,"burst":{b}}}}}"#
            )))
            .expect_err(b);
            assert_eq!(e.status, 400, "{b}");
            assert_eq!(e.target, target, "{b}: {}", e.message);
            assert!(e.message.contains(text), "{b}: {}", e.message);
        }
    }

    #[test]
    fn provisioned_policies() {
        let p = new_policy(&body(
            r#"{"name":"gp2","provisioned":{"model":"ebs-gp2","bucket_scale":0.1}}"#,
        ))
        .expect("valid")
        .policy;
        let Policy::Provisioned(v) = p else {
            panic!("{p:?}")
        };
        assert_eq!(
            (v.model, v.bucket_scale, v.initial_percent),
            (Model::EbsGp2, 0.1, 100)
        );
        let stored = Value::Object(policy_json(&p)).to_string();
        assert_eq!(stored_policy(&stored).expect("stored"), p);
        let q = patch_policy(&body(r#"{"provisioned":{"initial_percent":0}}"#), &p)
            .expect("patch")
            .policy;
        assert!(
            matches!(q, Policy::Provisioned(x) if x.initial_percent == 0 && x.bucket_scale == 0.1)
        );
        // Renaming keeps it.
        assert_eq!(
            patch_policy(&body(r#"{"name":"x"}"#), &p).unwrap().policy,
            p
        );
        for (b, target) in [
            (r#"{"name":"p","provisioned":{}}"#, "provisioned.model"),
            (
                r#"{"name":"p","provisioned":{"model":"gp3"}}"#,
                "provisioned.model",
            ),
            (
                r#"{"name":"p","provisioned":{"model":"ebs-gp2","bucket_scale":0}}"#,
                "provisioned.bucket_scale",
            ),
            (
                r#"{"name":"p","provisioned":{"model":"ebs-gp2"},"fixed":{}}"#,
                "provisioned",
            ),
        ] {
            let e = new_policy(&body(b)).expect_err(b);
            assert_eq!(e.target, target, "{b}: {}", e.message);
        }
        // Kinds cannot change.
        let e = patch_policy(&body(r#"{"fixed":{"max_throughput_iops":5}}"#), &p).unwrap_err();
        assert_eq!(e.target, "fixed");
        let fixed = Policy::Fixed(Default::default());
        let e = patch_policy(&body(r#"{"provisioned":{"model":"ebs-gp2"}}"#), &fixed).unwrap_err();
        assert_eq!(e.target, "provisioned");
    }
}
