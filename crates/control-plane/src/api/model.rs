//! Request bodies → validated values, and values → ONTAP-shaped JSON. All API input is
//! checked here, once; handlers trust what comes out.

use qos_core::{
    parse_iops_per_capacity, parse_size, AdaptivePolicy, Allocation, BlockSize, FixedPolicy,
    IopsPerTb, Policy, PolicyError,
};
use serde_json::{json, Map, Value};

use crate::config::{valid_name, MAX_VOLUME_SIZE};

/// An API error: HTTP status plus ONTAP's `{"error": {"message", "code", "target"}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    pub target: String,
}

/// Error codes (ONTAP-style numeric strings; the values are qoslab's own and stable).
pub mod code {
    pub const UNKNOWN_FIELD: &str = "262179";
    pub const INVALID_TYPE: &str = "262185";
    pub const OUT_OF_RANGE: &str = "262186";
    pub const IMMUTABLE: &str = "262187";
    pub const CONFLICT_FIELDS: &str = "262188";
    pub const MISSING_FIELD: &str = "262190";
    pub const INVALID_JSON: &str = "262191";
    pub const DUPLICATE: &str = "1";
    pub const NOT_FOUND: &str = "4";
    pub const UNAUTHORIZED: &str = "6";
    pub const IN_USE: &str = "8454270";
    pub const READ_ONLY_OBJECT: &str = "8454271";
    pub const UNSUPPORTED: &str = "8454272";
    pub const METHOD: &str = "3";
    pub const TOO_LARGE: &str = "5";
    pub const INTERNAL: &str = "2";
    pub const OFFLINE: &str = "917536";
    pub const SVM_MISMATCH: &str = "2621462";
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, target: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            target: target.to_string(),
        }
    }
    pub fn bad(code: &'static str, target: &str, message: impl Into<String>) -> Self {
        Self::new(400, code, target, message)
    }
    pub fn not_found(target: &str, message: impl Into<String>) -> Self {
        Self::new(404, code::NOT_FOUND, target, message)
    }
    pub fn conflict(code: &'static str, target: &str, message: impl Into<String>) -> Self {
        Self::new(409, code, target, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, code::INTERNAL, "", message)
    }
    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "code": self.code, "target": self.target}})
    }
}

type R<T> = Result<T, ApiError>;

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong_type(target: &str, v: &Value, want: &str) -> ApiError {
    ApiError::bad(
        code::INVALID_TYPE,
        target,
        format!("field \"{target}\" must be {want}, not {}", type_name(v)),
    )
}

/// The body's top level must be an object.
pub fn parse_body(bytes: &[u8]) -> R<Map<String, Value>> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad(
            code::INVALID_JSON,
            "",
            "a JSON object is required in the request body",
        ));
    }
    let v: Value = super::strict_json::parse(bytes).map_err(|e| {
        ApiError::bad(
            code::INVALID_JSON,
            "",
            format!("request body is not valid JSON: {e}"),
        )
    })?;
    match v {
        Value::Object(m) => Ok(m),
        other => Err(wrong_type("body", &other, "a JSON object")),
    }
}

fn object<'a>(v: &'a Value, target: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| wrong_type(target, v, "an object"))
}

/// Refuse fields outside `allowed` (ONTAP: "Unexpected argument").
pub(super) fn only(m: &Map<String, Value>, prefix: &str, allowed: &[&str]) -> R<()> {
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            let t = join(prefix, k);
            return Err(ApiError::bad(
                code::UNKNOWN_FIELD,
                &t,
                format!(
                    "unexpected field \"{t}\"; allowed here: {}",
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Refuse a PATCH that gives a field which cannot change after creation: `fixed` lists
/// them with the message, and the first one given is named in an IMMUTABLE error.
pub(super) fn unchangeable(m: &Map<String, Value>, fixed: &[(&str, &str)]) -> R<()> {
    match fixed.iter().find(|(k, _)| m.contains_key(*k)) {
        Some(&(k, why)) => Err(ApiError::bad(code::IMMUTABLE, k, why)),
        None => Ok(()),
    }
}

fn uint(m: &Map<String, Value>, prefix: &str, key: &str, max: u64) -> R<Option<u64>> {
    let t = join(prefix, key);
    match m.get(key) {
        None => Ok(None),
        Some(v @ Value::Number(n)) => match (n.as_u64(), n.as_i64()) {
            (Some(x), _) if x <= max => Ok(Some(x)),
            (Some(x), _) => Err(out_of_range(&t, x, max)),
            (None, Some(x)) => Err(ApiError::bad(
                code::OUT_OF_RANGE,
                &t,
                format!("field \"{t}\" = {x} is out of range: allowed 0 to {max}"),
            )),
            _ => Err(wrong_type(&t, v, "an integer")),
        },
        Some(v) => Err(wrong_type(&t, v, "an integer")),
    }
}

fn out_of_range(t: &str, x: u64, max: u64) -> ApiError {
    ApiError::bad(
        code::OUT_OF_RANGE,
        t,
        format!("field \"{t}\" = {x} is out of range: allowed 0 to {max}"),
    )
}

fn boolean(m: &Map<String, Value>, prefix: &str, key: &str) -> R<Option<bool>> {
    let t = join(prefix, key);
    match m.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(wrong_type(&t, v, "true or false")),
    }
}

fn string<'a>(m: &'a Map<String, Value>, prefix: &str, key: &str) -> R<Option<&'a str>> {
    let t = join(prefix, key);
    match m.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(wrong_type(&t, v, "a string")),
    }
}

/// A reference object `{name, uuid}` at `target` (both optional strings, nothing else).
fn name_uuid(v: &Value, target: &str) -> R<(Option<String>, Option<String>)> {
    let o = object(v, target)?;
    only(o, target, &["name", "uuid"])?;
    Ok((
        string(o, target, "name")?.map(str::to_string),
        string(o, target, "uuid")?.map(str::to_string),
    ))
}

/// `name` when given, held to the object names' rule ([`valid_name`]); `refusal` words the
/// error for a name that breaks it.
fn checked_name(m: &Map<String, Value>, refusal: impl FnOnce(&str) -> String) -> R<Option<String>> {
    match string(m, "", "name")? {
        None => Ok(None),
        Some(n) if valid_name(n) => Ok(Some(n.to_string())),
        Some(n) => Err(ApiError::bad(code::OUT_OF_RANGE, "name", refusal(n))),
    }
}

fn name(m: &Map<String, Value>, what: &str) -> R<Option<String>> {
    checked_name(m, |n| {
        format!(
            "invalid {what} name {n:?}: names are 1 to 128 characters from A-Z a-z 0-9 _ - . \
             (not starting with - or .)"
        )
    })
}

/// `svm {name, uuid}`: stored as given (qoslab has one implicit SVM).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Svm {
    pub name: Option<String>,
    pub uuid: Option<String>,
}

fn svm(m: &Map<String, Value>) -> R<Option<Svm>> {
    let Some(v) = m.get("svm") else {
        return Ok(None);
    };
    let (name, uuid) = name_uuid(v, "svm")?;
    Ok(Some(Svm { name, uuid }))
}

fn policy_error(e: PolicyError) -> ApiError {
    let target = match &e {
        PolicyError::OutOfRange { field, .. } => field.to_string(),
        PolicyError::MinAboveMax { min_field, .. } => min_field.to_string(),
        PolicyError::MissingPeak => "adaptive.peak_iops".into(),
        PolicyError::InvalidAllocation { .. } => "adaptive".into(),
        PolicyError::InvalidBlockSize { .. } => "adaptive.block_size".into(),
        PolicyError::BurstIncomplete { field, .. } => field.to_string(),
    };
    ApiError::bad(code::OUT_OF_RANGE, &target, e.to_string())
}

const FIXED_FIELDS: &[&str] = &[
    "max_throughput_iops",
    "max_throughput_mbps",
    "min_throughput_iops",
    "min_throughput_mbps",
    "capacity_shared",
    "weight",
    "burst",
];
const ADAPTIVE_FIELDS: &[&str] = &[
    "expected_iops",
    "peak_iops",
    "absolute_min_iops",
    "expected_iops_allocation",
    "peak_iops_allocation",
    "block_size",
    "weight",
    "burst",
];

fn apply_fixed(mut p: FixedPolicy, v: &Value, creating: bool) -> R<FixedPolicy> {
    let m = object(v, "fixed")?;
    only(m, "fixed", FIXED_FIELDS)?;
    let big = u64::MAX >> 1;
    if let Some(x) = uint(m, "fixed", "max_throughput_iops", big)? {
        p.max_iops = x;
    }
    if let Some(x) = uint(m, "fixed", "max_throughput_mbps", big)? {
        p.max_mbps = x;
    }
    if let Some(x) = uint(m, "fixed", "min_throughput_iops", big)? {
        p.min_iops = x;
    }
    if let Some(x) = uint(m, "fixed", "min_throughput_mbps", big)? {
        p.min_mbps = x;
    }
    if let Some(b) = boolean(m, "fixed", "capacity_shared")? {
        if !creating && b != p.capacity_shared {
            return Err(ApiError::bad(
                code::IMMUTABLE,
                "fixed.capacity_shared",
                "fixed.capacity_shared cannot be changed after the policy is created \
                 (ONTAP's rule): create a new policy and move the volumes to it",
            ));
        }
        p.capacity_shared = b;
    }
    if let Some(w) = weight(m, "fixed")? {
        p.weight = w;
    }
    if let Some(b) = m.get("burst") {
        p.burst = burst::apply_burst(p.burst, b, "fixed")?;
    }
    Ok(p)
}

fn per_tb(m: &Map<String, Value>, key: &str) -> R<Option<IopsPerTb>> {
    let t = join("adaptive", key);
    match m.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x >= 0.0 && x.is_finite() => Ok(Some(IopsPerTb(x))),
            _ => Err(ApiError::bad(
                code::OUT_OF_RANGE,
                &t,
                format!("field \"{t}\" = {n} is out of range: must be 0 or more IOPS per TB"),
            )),
        },
        Some(Value::String(s)) => parse_iops_per_capacity(s)
            .map(Some)
            .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, &t, format!("{t}: {e}"))),
        Some(v) => Err(wrong_type(
            &t,
            v,
            "an integer (IOPS per TB) or a string such as \"5IOPS/GB\"",
        )),
    }
}

/// `weight`: 1 to 10,000 (share of spare capacity after floors; a qoslab extension).
fn weight(m: &Map<String, Value>, obj: &str) -> R<Option<u32>> {
    match uint(m, obj, "weight", u64::from(qos_core::MAX_WEIGHT))? {
        Some(0) => Err(ApiError::bad(
            code::OUT_OF_RANGE,
            &join(obj, "weight"),
            format!(
                "field \"{obj}.weight\" = 0 is out of range: allowed 1 to {}",
                qos_core::MAX_WEIGHT
            ),
        )),
        Some(w) => Ok(Some(w as u32)),
        None => Ok(None),
    }
}

fn apply_adaptive(mut p: AdaptivePolicy, v: &Value, creating: bool) -> R<AdaptivePolicy> {
    let m = object(v, "adaptive")?;
    only(m, "adaptive", ADAPTIVE_FIELDS)?;
    if creating && !m.contains_key("peak_iops") {
        return Err(ApiError::bad(
            code::MISSING_FIELD,
            "adaptive.peak_iops",
            "adaptive.peak_iops is required (IOPS per TB, e.g. 4096, or \"50IOPS/GB\")",
        ));
    }
    if let Some(x) = per_tb(m, "expected_iops")? {
        p.expected_iops = x;
    }
    if let Some(x) = per_tb(m, "peak_iops")? {
        p.peak_iops = x;
    }
    if let Some(x) = uint(m, "adaptive", "absolute_min_iops", u64::MAX >> 1)? {
        p.absolute_min_iops = x;
    }
    let alloc = |key: &str| -> R<Option<Allocation>> {
        let t = join("adaptive", key);
        match string(m, "adaptive", key)? {
            None => Ok(None),
            Some(s) => s
                .parse::<Allocation>()
                .map(Some)
                .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, &t, format!("{t}: {e}"))),
        }
    };
    if let Some(a) = alloc("expected_iops_allocation")? {
        p.expected_allocation = a;
    }
    if let Some(a) = alloc("peak_iops_allocation")? {
        p.peak_allocation = a;
    }
    if let Some(s) = string(m, "adaptive", "block_size")? {
        p.block_size = s.parse::<BlockSize>().map_err(|e| {
            ApiError::bad(
                code::OUT_OF_RANGE,
                "adaptive.block_size",
                format!("adaptive.block_size: {e}"),
            )
        })?;
    }
    if let Some(w) = weight(m, "adaptive")? {
        p.weight = w;
    }
    if let Some(b) = m.get("burst") {
        p.burst = burst::apply_burst(p.burst, b, "adaptive")?;
    }
    Ok(p)
}

/// A policy as given to POST.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPolicy {
    pub name: String,
    pub svm: Option<Svm>,
    pub policy: Policy,
}

const POLICY_FIELDS: &[&str] = &["name", "svm", "fixed", "adaptive", "provisioned"];

/// Validate a POST /api/storage/qos/policies body.
pub fn new_policy(m: &Map<String, Value>) -> R<NewPolicy> {
    only(m, "", POLICY_FIELDS)?;
    let name = name(m, "policy")?
        .ok_or_else(|| ApiError::bad(code::MISSING_FIELD, "name", "field \"name\" is required"))?;
    let svm = svm(m)?;
    let policy = policy_spec(m, None)?;
    Ok(NewPolicy { name, svm, policy })
}

/// The `fixed` / `adaptive` part of a body; `base` is the current policy for PATCH.
fn policy_spec(m: &Map<String, Value>, base: Option<&Policy>) -> R<Policy> {
    if let Some(p) = burst::provisioned_kind(m, base)? {
        p.validate().map_err(policy_error)?;
        return Ok(p);
    }
    let p = match (m.get("fixed"), m.get("adaptive"), base) {
        (Some(_), Some(_), _) => {
            return Err(ApiError::bad(
                code::CONFLICT_FIELDS,
                "fixed",
                "give exactly one of \"fixed\" or \"adaptive\", not both",
            ))
        }
        (None, None, None) => {
            return Err(ApiError::bad(
                code::MISSING_FIELD,
                "fixed",
                "one of \"fixed\" or \"adaptive\" is required",
            ))
        }
        (None, None, Some(b)) => *b,
        (Some(f), None, None) => Policy::Fixed(apply_fixed(FixedPolicy::default(), f, true)?),
        (None, Some(a), None) => Policy::Adaptive(apply_adaptive(
            AdaptivePolicy::new(IopsPerTb(0.0), IopsPerTb(0.0), 0),
            a,
            true,
        )?),
        (Some(f), None, Some(Policy::Fixed(b))) => Policy::Fixed(apply_fixed(*b, f, false)?),
        (None, Some(a), Some(Policy::Adaptive(b))) => {
            Policy::Adaptive(apply_adaptive(*b, a, false)?)
        }
        (Some(_), None, Some(_)) | (None, Some(_), Some(_)) => {
            return Err(ApiError::bad(
                code::IMMUTABLE,
                if m.contains_key("fixed") {
                    "fixed"
                } else {
                    "adaptive"
                },
                "a policy cannot change between fixed and adaptive; create a new policy",
            ))
        }
    };
    p.validate().map_err(policy_error)?;
    Ok(p)
}

/// A validated PATCH of a policy: the new name (if renamed) and the new definition.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyPatch {
    pub name: Option<String>,
    pub policy: Policy,
}

pub fn patch_policy(m: &Map<String, Value>, current: &Policy) -> R<PolicyPatch> {
    only(m, "", POLICY_FIELDS)?;
    unchangeable(
        m,
        &[("svm", "svm cannot be changed after the policy is created")],
    )?;
    Ok(PolicyPatch {
        name: name(m, "policy")?,
        policy: policy_spec(m, Some(current))?,
    })
}

fn per_tb_json(x: IopsPerTb) -> Value {
    if x.0.fract() == 0.0 && x.0.abs() < 9e15 {
        json!(x.0 as i64)
    } else {
        json!(x.0)
    }
}

/// The policy's `{"fixed": {...}}` or `{"adaptive": {...}}` (also its stored form).
pub fn policy_json(p: &Policy) -> Map<String, Value> {
    let mut m = Map::new();
    match p {
        Policy::Fixed(f) => {
            m.insert(
                "fixed".into(),
                json!({
                    "max_throughput_iops": f.max_iops,
                    "max_throughput_mbps": f.max_mbps,
                    "min_throughput_iops": f.min_iops,
                    "min_throughput_mbps": f.min_mbps,
                    "capacity_shared": f.capacity_shared,
                }),
            );
            put_weight(&mut m, "fixed", f.weight);
            put_burst(&mut m, "fixed", f.burst.as_ref());
        }
        Policy::Adaptive(a) => {
            m.insert(
                "adaptive".into(),
                json!({
                    "expected_iops": per_tb_json(a.expected_iops),
                    "peak_iops": per_tb_json(a.peak_iops),
                    "absolute_min_iops": a.absolute_min_iops,
                    "expected_iops_allocation": a.expected_allocation.to_string(),
                    "peak_iops_allocation": a.peak_allocation.to_string(),
                    "block_size": a.block_size.to_string().to_ascii_lowercase(),
                }),
            );
            put_weight(&mut m, "adaptive", a.weight);
            put_burst(&mut m, "adaptive", a.burst.as_ref());
        }
        Policy::Provisioned(p) => {
            m.insert("provisioned".into(), burst::provisioned_json(p));
        }
    }
    m
}

/// A burst is shown only when set.
fn put_burst(m: &mut Map<String, Value>, kind: &str, b: Option<&qos_core::BurstPolicy>) {
    if let (Some(b), Some(Value::Object(o))) = (b, m.get_mut(kind)) {
        o.insert("burst".into(), burst::burst_json(b));
    }
}

/// A weight is shown only when set (absent: the default, 1).
fn put_weight(m: &mut Map<String, Value>, kind: &str, w: u32) {
    if w > 0 {
        if let Some(Value::Object(o)) = m.get_mut(kind) {
            o.insert("weight".into(), json!(w));
        }
    }
}

/// Parse a stored policy spec (written by [`policy_json`]).
pub fn stored_policy(spec: &str) -> R<Policy> {
    let m = parse_body(spec.as_bytes())?;
    only(&m, "", &["fixed", "adaptive", "provisioned"])?;
    policy_spec(&m, None)
}

/// A `qos.policy` reference: by name and/or uuid; `None` removes the policy.
pub type PolicyRef = Ref;

/// A validated POST /api/storage/volumes body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVolume {
    pub name: String,
    pub size: u64,
    pub reserve_percent: u8,
    pub comment: String,
    pub svm: Option<Svm>,
    pub policy: Option<PolicyRef>,
    /// A NAS volume (`nas.path`, ...); `None`: a block volume.
    pub nas: Option<nas::NasBody>,
}

/// A validated PATCH of a volume.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumePatch {
    pub size: Option<u64>,
    pub reserve_percent: Option<u8>,
    pub comment: Option<String>,
    /// `Some(None)`: remove the policy.
    pub policy: Option<Option<PolicyRef>>,
    /// `state: "online"` was sent: an offline volume is brought back online.
    pub online: bool,
    /// `nas.export_policy`: a NAS volume's new export policy.
    pub export_policy: Option<nas::ExportPolicyRef>,
}

const VOLUME_FIELDS: &[&str] = &[
    "name",
    "size",
    "svm",
    "comment",
    "space",
    "qos",
    "state",
    "aggregates",
    "style",
    "type",
    "nas",
];

fn size(m: &Map<String, Value>) -> R<Option<u64>> {
    let s = match m.get("size") {
        None => return Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(x) => x,
            None => {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    "size",
                    format!("size = {n} is out of range: allowed 1 B to 1 PiB, in whole bytes"),
                ))
            }
        },
        Some(Value::String(s)) => parse_size(s)
            .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, "size", format!("size: {e}")))?,
        Some(v) => {
            return Err(wrong_type(
                "size",
                v,
                "an integer (bytes) or a string such as \"100GB\"",
            ))
        }
    };
    if s == 0 || s > MAX_VOLUME_SIZE {
        return Err(ApiError::bad(
            code::OUT_OF_RANGE,
            "size",
            format!("size = {s} is out of range: allowed 1 B to 1 PiB"),
        ));
    }
    Ok(Some(s))
}

fn reserve(m: &Map<String, Value>) -> R<Option<u8>> {
    let Some(sp) = m.get("space") else {
        return Ok(None);
    };
    let sp = object(sp, "space")?;
    only(sp, "space", &["snapshot"])?;
    let Some(sn) = sp.get("snapshot") else {
        return Ok(None);
    };
    let sn = object(sn, "space.snapshot")?;
    only(sn, "space.snapshot", &["reserve_percent"])?;
    Ok(uint(sn, "space.snapshot", "reserve_percent", 90)?.map(|x| x as u8))
}

fn qos(m: &Map<String, Value>) -> R<Option<Option<PolicyRef>>> {
    let Some(q) = m.get("qos") else {
        return Ok(None);
    };
    let q = object(q, "qos")?;
    only(q, "qos", &["policy"])?;
    match q.get("policy") {
        None => Ok(Some(None)),
        Some(p) => policy_ref(p, "qos.policy").map(Some),
    }
}

/// A policy reference `{name, uuid}` at `target` (a volume's `qos.policy`, a LUN's
/// `qos_policy`); `None` (null, `{}` or name "none"): no policy of its own.
fn policy_ref(v: &Value, target: &str) -> R<Option<PolicyRef>> {
    if v.is_null() {
        return Ok(None);
    }
    let (name, uuid) = name_uuid(v, target)?;
    let r = PolicyRef { name, uuid };
    match (&r.name, &r.uuid) {
        (None, None) => Ok(None),
        (Some(n), None) if n == "none" => Ok(None),
        _ => Ok(Some(r)),
    }
}

fn comment(m: &Map<String, Value>) -> R<Option<String>> {
    Ok(string(m, "", "comment")?.map(str::to_string))
}

/// Fields ONTAP clients send that have one possible value here: `state` (online),
/// `style` (flexvol), `type` (rw).
fn fixed_values(m: &Map<String, Value>) -> R<()> {
    for (key, only, why) in [
        (
            "state",
            "online",
            "a volume is taken offline only by the node, when its file and its state disagree",
        ),
        (
            "style",
            "flexvol",
            "volumes are single files (FlexVol-like)",
        ),
        ("type", "rw", "volumes created over the API are read-write"),
    ] {
        match string(m, "", key)? {
            None => {}
            Some(s) if s.eq_ignore_ascii_case(only) => {}
            Some(s) => {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    key,
                    format!("{key} {s:?} is not supported: {why} (\"{only}\")"),
                ))
            }
        }
    }
    Ok(())
}

/// `aggregates`: ONTAP requires them on a volume POST, so its scripts send them. qoslab has
/// no aggregates: the array is checked (objects with `name` and/or `uuid`) and not stored.
fn aggregates(m: &Map<String, Value>) -> R<()> {
    let Some(v) = m.get("aggregates") else {
        return Ok(());
    };
    let Value::Array(items) = v else {
        return Err(wrong_type(
            "aggregates",
            v,
            "an array of {\"name\": ...} objects",
        ));
    };
    for (i, a) in items.iter().enumerate() {
        name_uuid(a, &format!("aggregates[{i}]"))?;
    }
    Ok(())
}

pub fn new_volume(m: &Map<String, Value>) -> R<NewVolume> {
    only(m, "", VOLUME_FIELDS)?;
    let name = name(m, "volume")?
        .ok_or_else(|| ApiError::bad(code::MISSING_FIELD, "name", "field \"name\" is required"))?;
    let size = size(m)?.ok_or_else(|| {
        ApiError::bad(
            code::MISSING_FIELD,
            "size",
            "field \"size\" is required (bytes, or a string such as \"100GB\")",
        )
    })?;
    fixed_values(m)?;
    aggregates(m)?;
    Ok(NewVolume {
        name,
        size,
        reserve_percent: reserve(m)?.unwrap_or(5),
        comment: comment(m)?.unwrap_or_default(),
        svm: svm(m)?,
        policy: qos(m)?.flatten(),
        nas: nas::new_nas(m)?,
    })
}

pub fn patch_volume(m: &Map<String, Value>) -> R<VolumePatch> {
    only(m, "", VOLUME_FIELDS)?;
    unchangeable(
        m,
        &[
            (
                "name",
                "renaming a volume is not supported: the name is its NBD export name",
            ),
            ("svm", "svm cannot be changed after the volume is created"),
            (
                "aggregates",
                "aggregates cannot be changed: qoslab has no aggregates to move a volume between",
            ),
        ],
    )?;
    fixed_values(m)?;
    Ok(VolumePatch {
        size: size(m)?,
        reserve_percent: reserve(m)?,
        comment: comment(m)?,
        policy: qos(m)?,
        online: m.contains_key("state"),
        export_policy: nas::patch_nas(m)?,
    })
}

mod burst;
pub mod nas;
mod reference;
pub mod san;

pub use reference::Ref;

#[cfg(test)]
mod tests;
