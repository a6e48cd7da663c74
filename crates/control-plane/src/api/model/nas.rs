//! NAS bodies: a volume's `nas` block (`{"path": "/vol500", "export_policy": {"name":
//! "default"}, "unix_permissions": 755}`) and export policies (ONTAP's
//! `/api/protocols/nfs/export-policies`: `{"name", "svm", "rules": [{"clients": [{"match":
//! "10.0.0.0/8"}], "ro_rule": ["any"], "rw_rule": ["any"]}]}`), checked once.

use serde_json::{json, Map, Value};

use super::{code, object, only, string, wrong_type, ApiError, Svm, R};
use crate::nas::export_policy::{policy_from, RuleText};

/// A reference to an export policy by name and/or id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportPolicyRef {
    pub name: Option<String>,
    pub id: Option<u64>,
}

/// A volume's `nas` block on POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NasBody {
    pub path: String,
    pub export_policy: Option<ExportPolicyRef>,
    /// The root directory's mode (ONTAP writes octal digits as a decimal number: 755).
    pub unix_permissions: Option<u32>,
}

fn policy_ref(v: &Value, t: &str) -> R<ExportPolicyRef> {
    let o = object(v, t)?;
    only(o, t, &["name", "id"])?;
    let id = match o.get("id") {
        None => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Some(v) => return Err(wrong_type(&format!("{t}.id"), v, "a positive integer")),
    };
    let r = ExportPolicyRef {
        name: string(o, t, "name")?.map(str::to_string),
        id,
    };
    if r.name.is_none() && r.id.is_none() {
        return Err(ApiError::bad(
            code::MISSING_FIELD,
            t,
            format!("{t} needs a name or an id"),
        ));
    }
    Ok(r)
}

fn unix_permissions(o: &Map<String, Value>) -> R<Option<u32>> {
    let t = "nas.unix_permissions";
    let Some(v) = o.get("unix_permissions") else {
        return Ok(None);
    };
    let digits = match v {
        Value::Number(n) if n.as_u64().is_some() => n.to_string(),
        Value::String(s) => s.clone(),
        v => return Err(wrong_type(t, v, "octal digits, e.g. 755 or \"0755\"")),
    };
    match u32::from_str_radix(&digits, 8) {
        Ok(m) if m <= 0o7777 => Ok(Some(m)),
        _ => Err(ApiError::bad(
            code::OUT_OF_RANGE,
            t,
            format!("{t} = {digits}: give octal permission digits 0 to 7777, e.g. 755"),
        )),
    }
}

/// The `nas` block of a new volume (`None`: a block volume).
pub fn new_nas(m: &Map<String, Value>) -> R<Option<NasBody>> {
    let Some(v) = m.get("nas") else {
        return Ok(None);
    };
    let o = object(v, "nas")?;
    only(
        o,
        "nas",
        &[
            "path",
            "export_policy",
            "unix_permissions",
            "security_style",
        ],
    )?;
    let path = string(o, "nas", "path")?.ok_or_else(|| {
        ApiError::bad(
            code::MISSING_FIELD,
            "nas.path",
            "field \"nas.path\" is required: the junction path clients mount, e.g. \"/vol500\"",
        )
    })?;
    crate::nas::valid_junction(path)
        .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, "nas.path", e))?;
    match string(o, "nas", "security_style")? {
        None | Some("unix") => {}
        Some(s) => {
            return Err(ApiError::bad(
                code::OUT_OF_RANGE,
                "nas.security_style",
                format!(
                    "nas.security_style {s:?} is not supported: NFSv3 with UNIX modes (\"unix\")"
                ),
            ))
        }
    }
    Ok(Some(NasBody {
        path: path.to_string(),
        export_policy: o
            .get("export_policy")
            .map(|v| policy_ref(v, "nas.export_policy"))
            .transpose()?,
        unix_permissions: unix_permissions(o)?,
    }))
}

/// The `nas` block of a PATCH: only the export policy may change.
pub fn patch_nas(m: &Map<String, Value>) -> R<Option<ExportPolicyRef>> {
    let Some(v) = m.get("nas") else {
        return Ok(None);
    };
    let o = object(v, "nas")?;
    for k in ["path", "unix_permissions", "security_style"] {
        if o.contains_key(k) {
            return Err(ApiError::bad(
                code::IMMUTABLE,
                &format!("nas.{k}"),
                format!("nas.{k} cannot be changed after the volume is created (only nas.export_policy can)"),
            ));
        }
    }
    only(o, "nas", &["export_policy"])?;
    o.get("export_policy")
        .map(|v| policy_ref(v, "nas.export_policy"))
        .transpose()
}

/// A validated export policy body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPolicyBody {
    pub name: Option<String>,
    pub svm: Option<Svm>,
    /// `None`: not given (POST: no rules; PATCH: unchanged).
    pub rules: Option<Vec<RuleText>>,
}

const POLICY_FIELDS: &[&str] = &["name", "svm", "rules", "id"];
const RULE_FIELDS: &[&str] = &[
    "clients",
    "ro_rule",
    "rw_rule",
    "index",
    "protocols",
    "superuser",
    "anonymous_user",
];

fn strings(o: &Map<String, Value>, t: &str, key: &str) -> R<Option<Vec<String>>> {
    let tk = format!("{t}.{key}");
    match o.get(key) {
        None => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| wrong_type(&tk, v, "an array of strings"))
            })
            .collect::<R<Vec<_>>>()
            .map(Some),
        Some(v) => Err(wrong_type(&tk, v, "an array of strings")),
    }
}

fn rule(v: &Value, t: &str) -> R<RuleText> {
    let o = object(v, t)?;
    only(o, t, RULE_FIELDS)?;
    let clients = match o.get("clients") {
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let ct = format!("{t}.clients[{i}]");
                let co = object(c, &ct)?;
                only(co, &ct, &["match"])?;
                string(co, &ct, "match")?
                    .map(str::to_string)
                    .ok_or_else(|| {
                        ApiError::bad(code::MISSING_FIELD, &ct, format!("{ct}.match is required"))
                    })
            })
            .collect::<R<Vec<_>>>()?,
        Some(v) => {
            return Err(wrong_type(
                &format!("{t}.clients"),
                v,
                "an array of {\"match\": ...}",
            ))
        }
        None => {
            return Err(ApiError::bad(
                code::MISSING_FIELD,
                &format!("{t}.clients"),
                format!("{t}.clients is required, e.g. [{{\"match\": \"10.0.0.0/8\"}}]"),
            ))
        }
    };
    // Accepted as ONTAP clients send them; qoslab serves NFSv3 over AUTH_SYS only and
    // never squashes root, so only the values that agree are taken.
    for (key, ok) in [
        ("protocols", &["any", "nfs", "nfs3"][..]),
        ("superuser", &["any", "sys"][..]),
    ] {
        if let Some(v) = strings(o, t, key)? {
            if let Some(bad) = v.iter().find(|x| !ok.contains(&x.as_str())) {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    &format!("{t}.{key}"),
                    format!("{t}.{key} {bad:?} is not supported here (allowed: {}): qoslab serves NFSv3 over AUTH_SYS and does not squash root", ok.join(", ")),
                ));
            }
        }
    }
    let r = RuleText {
        clients,
        ro_rule: strings(o, t, "ro_rule")?.unwrap_or_else(|| vec!["any".into()]),
        rw_rule: strings(o, t, "rw_rule")?.unwrap_or_else(|| vec!["any".into()]),
    };
    r.parse()
        .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, t, format!("{t}: {e}")))?;
    Ok(r)
}

/// An export policy body (POST or PATCH).
pub fn export_policy(m: &Map<String, Value>) -> R<ExportPolicyBody> {
    only(m, "", POLICY_FIELDS)?;
    let rules = match m.get("rules") {
        None => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .enumerate()
                .map(|(i, v)| rule(v, &format!("rules[{i}]")))
                .collect::<R<Vec<_>>>()?,
        ),
        Some(v) => return Err(wrong_type("rules", v, "an array of rules")),
    };
    let name = super::name(m, "export policy")?;
    if let (Some(n), Some(r)) = (&name, &rules) {
        policy_from(n, r).map_err(|e| ApiError::bad(code::OUT_OF_RANGE, "rules", e))?;
    }
    Ok(ExportPolicyBody {
        name,
        svm: super::svm(m)?,
        rules,
    })
}

/// Rules as ONTAP renders them (index from 1).
pub fn rules_json(rules: &[RuleText]) -> Value {
    Value::Array(
        rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                json!({
                    "index": i + 1,
                    "clients": r.clients.iter().map(|c| json!({"match": c})).collect::<Vec<_>>(),
                    "ro_rule": r.ro_rule,
                    "rw_rule": r.rw_rule,
                    "protocols": ["nfs3"],
                    "superuser": ["any"],
                })
            })
            .collect(),
    )
}

/// Rules stored as [`rules_json`] wrote them, read back (the database's text was written
/// by this code; a row that no longer parses is reported, not trusted).
pub fn stored_rules(text: &str) -> Result<Vec<RuleText>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let a = v.as_array().ok_or("not an array")?;
    a.iter()
        .enumerate()
        .map(|(i, r)| rule(r, &format!("rules[{i}]")).map_err(|e| e.message))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> Map<String, Value> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn nas_blocks() {
        let n = new_nas(&body(r#"{"nas": {"path": "/vol500", "export_policy": {"name": "k8s"}, "unix_permissions": 777}}"#))
            .unwrap()
            .unwrap();
        assert_eq!(n.path, "/vol500");
        assert_eq!(n.unix_permissions, Some(0o777));
        assert_eq!(n.export_policy.unwrap().name.as_deref(), Some("k8s"));
        assert_eq!(new_nas(&body("{}")).unwrap(), None);
        for (b, target) in [
            (r#"{"nas": {}}"#, "nas.path"),
            (r#"{"nas": {"path": "vol"}}"#, "nas.path"),
            (
                r#"{"nas": {"path": "/v", "unix_permissions": 789}}"#,
                "nas.unix_permissions",
            ),
            (
                r#"{"nas": {"path": "/v", "security_style": "ntfs"}}"#,
                "nas.security_style",
            ),
            (r#"{"nas": {"path": "/v", "junk": 1}}"#, "nas.junk"),
            (
                r#"{"nas": {"path": "/v", "export_policy": {}}}"#,
                "nas.export_policy",
            ),
        ] {
            assert_eq!(new_nas(&body(b)).unwrap_err().target, target, "{b}");
        }
        assert_eq!(
            patch_nas(&body(r#"{"nas": {"path": "/x"}}"#))
                .unwrap_err()
                .target,
            "nas.path"
        );
        assert_eq!(
            patch_nas(&body(r#"{"nas": {"export_policy": {"id": 3}}}"#)).unwrap(),
            Some(ExportPolicyRef {
                name: None,
                id: Some(3)
            })
        );
    }

    #[test]
    fn policies_round_trip_and_errors_name_the_rule() {
        let p = export_policy(&body(
            r#"{"name": "k8s", "rules": [{"clients": [{"match": "10.0.0.0/8"}], "ro_rule": ["sys"], "rw_rule": ["never"], "superuser": ["any"]}]}"#,
        ))
        .unwrap();
        let rules = p.rules.unwrap();
        assert_eq!(rules[0].ro_rule, vec!["sys"]);
        let text = rules_json(&rules).to_string();
        assert_eq!(stored_rules(&text).unwrap(), rules);
        for (b, target) in [
            (r#"{"name": "k", "rules": [{}]}"#, "rules[0].clients"),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "nfs.example"}]}]}"#,
                "rules[0]",
            ),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "::1"}], "rw_rule": ["krb5"]}]}"#,
                "rules[0]",
            ),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "::1"}], "superuser": ["none"]}]}"#,
                "rules[0].superuser",
            ),
            (r#"{"name": "k", "rules": 1}"#, "rules"),
        ] {
            assert_eq!(export_policy(&body(b)).unwrap_err().target, target, "{b}");
        }
    }
}
