//! NAS bodies: a volume's `nas` block (`{"path": "/vol500", "export_policy": {"name":
//! "default"}, "unix_permissions": 755}`) and export policies (ONTAP's
//! `/api/protocols/nfs/export-policies`: `{"name", "svm", "rules": [{"clients": [{"match":
//! "10.0.0.0/8"}], "ro_rule": ["any"], "rw_rule": ["any"]}]}`), checked once.

use serde_json::{json, Map, Value};

use super::{boolean, code, object, only, string, uint, wrong_type, ApiError, Svm, R};
use crate::nas::export_rule::{policy_from, RuleText};

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
    /// `id`, an integer when given: the node assigns it (POST refuses one), and a PATCH may
    /// only repeat the policy's own (a record sent back whole).
    pub id: Option<u64>,
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
    "allow_suid",
    "chown_mode",
    "ntfs_unix_security",
    "allow_device_creation",
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

fn clients(o: &Map<String, Value>, t: &str) -> R<Vec<String>> {
    match o.get("clients") {
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
            .collect(),
        Some(v) => Err(wrong_type(
            &format!("{t}.clients"),
            v,
            "an array of {\"match\": ...}",
        )),
        None => Err(ApiError::bad(
            code::MISSING_FIELD,
            &format!("{t}.clients"),
            format!("{t}.clients is required, e.g. [{{\"match\": \"10.0.0.0/8\"}}]"),
        )),
    }
}

/// One rule of a body: ONTAP's fields, ONTAP's defaults for those not given
/// ([`RuleText::new`]), checked by the node's parser (an error targets the field).
fn rule(v: &Value, t: &str) -> R<RuleText> {
    let o = object(v, t)?;
    only(o, t, RULE_FIELDS)?;
    let d = RuleText::new(clients(o, t)?);
    let anonymous_user = match o.get("anonymous_user") {
        None => d.anonymous_user.clone(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(v) => {
            return Err(wrong_type(
                &format!("{t}.anonymous_user"),
                v,
                "a user id, e.g. \"65534\"",
            ))
        }
    };
    let r = RuleText {
        ro_rule: strings(o, t, "ro_rule")?.unwrap_or(d.ro_rule.clone()),
        rw_rule: strings(o, t, "rw_rule")?.unwrap_or(d.rw_rule.clone()),
        superuser: strings(o, t, "superuser")?.unwrap_or(d.superuser.clone()),
        anonymous_user,
        allow_suid: boolean(o, t, "allow_suid")?.unwrap_or(d.allow_suid),
        chown_mode: string(o, t, "chown_mode")?
            .map(str::to_string)
            .unwrap_or(d.chown_mode.clone()),
        ntfs_unix_security: string(o, t, "ntfs_unix_security")?
            .map(str::to_string)
            .unwrap_or(d.ntfs_unix_security.clone()),
        protocols: strings(o, t, "protocols")?.unwrap_or(d.protocols.clone()),
        allow_device_creation: boolean(o, t, "allow_device_creation")?
            .unwrap_or(d.allow_device_creation),
        clients: d.clients,
    };
    r.parse().map_err(|e| {
        let field = e.split_once(':').map(|(f, _)| f).unwrap_or("");
        let target = if RULE_FIELDS.contains(&field) && field != "clients" {
            format!("{t}.{field}")
        } else {
            t.to_string()
        };
        ApiError::bad(code::OUT_OF_RANGE, &target, format!("{t}: {e}"))
    })?;
    Ok(r)
}

/// A rule's `index`, when given: its position in `rules` counted from 1 (as ONTAP numbers
/// rules), nothing else; the order of the array is the rules' order.
fn rule_index(v: &Value, t: &str, position: usize) -> R<()> {
    let ti = format!("{t}.index");
    match v.get("index") {
        None => Ok(()),
        Some(x) if x.as_u64() == Some(position as u64) => Ok(()),
        Some(x) => Err(ApiError::bad(
            code::OUT_OF_RANGE,
            &ti,
            format!(
                "{ti} = {x}: a rule's index is its position in rules, counted from 1: \
                 allowed only {position} (or leave index out; to reorder rules, reorder the array)"
            ),
        )),
    }
}

/// An export policy body (POST or PATCH).
pub fn export_policy(m: &Map<String, Value>) -> R<ExportPolicyBody> {
    only(m, "", POLICY_FIELDS)?;
    let rules = match m.get("rules") {
        None => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .enumerate()
                .map(|(i, v)| {
                    let t = format!("rules[{i}]");
                    rule_index(v, &t, i + 1)?;
                    rule(v, &t)
                })
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
        id: uint(m, "", "id", u64::MAX >> 1)?,
        rules,
    })
}

/// One rule as ONTAP writes it in a body, every field (no `index`).
pub fn rule_json(r: &RuleText) -> Value {
    json!({
        "clients": r.clients.iter().map(|c| json!({"match": c})).collect::<Vec<_>>(),
        "ro_rule": r.ro_rule,
        "rw_rule": r.rw_rule,
        "superuser": r.superuser,
        "anonymous_user": r.anonymous_user,
        "allow_suid": r.allow_suid,
        "chown_mode": r.chown_mode,
        "ntfs_unix_security": r.ntfs_unix_security,
        "protocols": r.protocols,
        "allow_device_creation": r.allow_device_creation,
    })
}

/// Rules as ONTAP renders them (index from 1), every field.
pub fn rules_json(rules: &[RuleText]) -> Value {
    Value::Array(
        rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut v = rule_json(r);
                v["index"] = json!(i + 1);
                v
            })
            .collect(),
    )
}

/// Rules stored as [`rules_json`] wrote them, read back (the database's text was written
/// by this code; a row that no longer parses is reported, not trusted). Rules stored
/// before `superuser` was enforced say `["any"]` (root was never squashed then): they keep
/// that meaning.
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
            r#"{"name": "k8s", "rules": [{"clients": [{"match": "10.0.0.0/8"}], "ro_rule": ["sys"], "rw_rule": ["never"], "superuser": ["sys"], "anonymous_user": "1001", "allow_suid": false, "chown_mode": "unrestricted", "ntfs_unix_security": "ignore", "protocols": ["nfs3"], "allow_device_creation": false}]}"#,
        ))
        .unwrap();
        let rules = p.rules.unwrap();
        let r = &rules[0];
        assert_eq!(r.ro_rule, vec!["sys"]);
        assert_eq!(
            (r.superuser.clone(), r.anonymous_user.as_str()),
            (vec!["sys".to_string()], "1001")
        );
        assert!(!r.allow_suid && !r.allow_device_creation);
        assert_eq!(
            (r.chown_mode.as_str(), r.ntfs_unix_security.as_str()),
            ("unrestricted", "ignore")
        );
        let text = rules_json(&rules).to_string();
        assert_eq!(stored_rules(&text).unwrap(), rules);
        // ONTAP's defaults for what is not given; a number is a user id too.
        let d = export_policy(&body(
            r#"{"name": "d", "rules": [{"clients": [{"match": "::1"}], "anonymous_user": 65535}]}"#,
        ))
        .unwrap()
        .rules
        .unwrap();
        assert_eq!(
            d[0],
            RuleText {
                anonymous_user: "65535".into(),
                ..RuleText::new(vec!["::1".into()])
            }
        );
        assert_eq!(rules_json(&d)[0]["superuser"], json!(["none"]));
        for (b, target) in [
            (r#"{"name": "k", "rules": [{}]}"#, "rules[0].clients"),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "nfs.example"}]}]}"#,
                "rules[0]",
            ),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "::1"}], "rw_rule": ["krb5"]}]}"#,
                "rules[0].rw_rule",
            ),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "::1"}], "superuser": ["ntlm"]}]}"#,
                "rules[0].superuser",
            ),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "::1"}], "anonymous_user": "pcuser"}]}"#,
                "rules[0].anonymous_user",
            ),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "::1"}], "chown_mode": "all"}]}"#,
                "rules[0].chown_mode",
            ),
            (
                r#"{"name": "k", "rules": [{"clients": [{"match": "::1"}], "allow_suid": "yes"}]}"#,
                "rules[0].allow_suid",
            ),
            (r#"{"name": "k", "rules": 1}"#, "rules"),
            // `id` was accepted, whatever it held, and ignored.
            (r#"{"name": "k", "id": "seven"}"#, "id"),
            (r#"{"name": "k", "id": -1}"#, "id"),
        ] {
            assert_eq!(export_policy(&body(b)).unwrap_err().target, target, "{b}");
        }
    }

    /// A rule's `index` was accepted with any type and value and ignored: it is its position
    /// (from 1, as ONTAP numbers rules) or a 400 naming `rules[i].index`, its value and that.
    #[test]
    fn a_rule_index_is_its_position_or_a_400() {
        let r = r#"{"clients": [{"match": "::1"}]"#;
        let ok =
            format!(r#"{{"name": "k", "rules": [{r}, "index": 1}}, {r}}}, {r}, "index": 3}}]}}"#);
        assert_eq!(export_policy(&body(&ok)).unwrap().rules.unwrap().len(), 3);
        for (index, says) in [
            ("1", "= 1"),
            ("3", "= 3"),
            ("0", "= 0"),
            ("\"1\"", "\"1\""),
            ("1.5", "1.5"),
            ("null", "null"),
        ] {
            let b = format!(r#"{{"name": "k", "rules": [{r}}}, {r}, "index": {index}}}]}}"#);
            let e = export_policy(&body(&b)).unwrap_err();
            assert_eq!(
                (e.status, e.target.as_str()),
                (400, "rules[1].index"),
                "{b}"
            );
            assert!(
                e.message.contains(says) && e.message.contains("2"),
                "{}",
                e.message
            );
            assert!(e.message.contains("position"), "{}", e.message);
        }
    }
}
