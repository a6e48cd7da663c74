//! `vserver export-policy create|show|rename|delete` and `vserver export-policy rule
//! create|show|modify|delete`: ONTAP's export policies and rules over the REST API
//! (`/api/protocols/nfs/export-policies`, a rule change being one PATCH of the policy's
//! rules), with ONTAP's parameter names: `-clientmatch -rorule -rwrule -superuser -anon
//! -allow-suid -chown-mode -ntfs-unix-security-ops -protocol -allow-dev -ruleindex`.

use std::io::Write;

use serde_json::{json, Map, Value};

use super::parse::{err, opt, params, req, Given, Param};
use super::{no_match, sub, table, Shell, R};
use crate::http_client::text;

const POLICIES: &str = "/api/protocols/nfs/export-policies";

/// `-vserver` (positional first, as ONTAP lists it) then `-policyname`.
const VSERVER: Param = Param {
    name: "vserver",
    required: false,
    positional: true,
};

pub fn run(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    let context = "vserver export-policy";
    match sub(w, &["create", "show", "rename", "delete", "rule"], context)? {
        "create" => {
            let g = params(&w[1..], &[VSERVER, req("policyname")])?;
            let mut b = Map::new();
            b.insert("name".into(), json!(g.get("policyname")));
            if let Some(v) = g.get("vserver") {
                b.insert("svm".into(), json!({ "name": v }));
            }
            sh.call("POST", POLICIES, Some(&Value::Object(b)))?;
            Ok(())
        }
        "show" => {
            let g = params(&w[1..], &[VSERVER, opt("policyname")])?;
            let rows: Vec<Vec<String>> = policies(sh, &g)?
                .iter()
                .map(|p| vec![svm(p), text(&p["name"])])
                .collect();
            table(out, &["Vserver", "Policy Name"], &rows);
            Ok(())
        }
        "rename" => {
            let g = params(&w[1..], &[VSERVER, req("policyname"), req("newpolicyname")])?;
            let p = one(sh, &g)?;
            let body = json!({ "name": g.get("newpolicyname") });
            sh.call("PATCH", &format!("{POLICIES}/{}", p["id"]), Some(&body))?;
            Ok(())
        }
        "delete" => {
            let g = params(&w[1..], &[VSERVER, req("policyname")])?;
            let p = one(sh, &g)?;
            sh.call("DELETE", &format!("{POLICIES}/{}", p["id"]), None)?;
            Ok(())
        }
        _ => rule(sh, &w[1..], out),
    }
}

/// The parameters of `rule create` and `rule modify` (ONTAP's names).
const RULE: &[Param] = &[
    VSERVER,
    req("policyname"),
    opt("ruleindex"),
    opt("clientmatch"),
    opt("rorule"),
    opt("rwrule"),
    opt("superuser"),
    opt("anon"),
    opt("allow-suid"),
    opt("chown-mode"),
    opt("ntfs-unix-security-ops"),
    opt("protocol"),
    opt("allow-dev"),
];

fn rule(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    let context = "vserver export-policy rule";
    match sub(w, &["create", "show", "modify", "delete"], context)? {
        "create" => {
            let g = params(&w[1..], RULE)?;
            for need in ["clientmatch", "rorule", "rwrule"] {
                if g.get(need).is_none() {
                    return err(format!("Missing required parameter \"-{need}\""));
                }
            }
            let p = one(sh, &g)?;
            let mut rules = rules(&p);
            let at = match g.get("ruleindex") {
                None => rules.len() + 1,
                Some(i) => index(i, rules.len() + 1)?,
            };
            let mut r = Map::new();
            set_fields(&mut r, &g)?;
            rules.insert(at - 1, Value::Object(r));
            patch(sh, &p, rules)
        }
        "modify" => {
            let g = params(&w[1..], RULE)?;
            let p = one(sh, &g)?;
            let mut rules = rules(&p);
            let i = index(
                g.get("ruleindex").ok_or_else(|| {
                    super::ShellError("Missing required parameter \"-ruleindex\"".into())
                })?,
                rules.len(),
            )?;
            let Some(r) = rules[i - 1].as_object_mut() else {
                return err("the rule is not an object");
            };
            set_fields(r, &g)?;
            patch(sh, &p, rules)
        }
        "delete" => {
            let g = params(&w[1..], &[VSERVER, req("policyname"), req("ruleindex")])?;
            let p = one(sh, &g)?;
            let mut rules = rules(&p);
            let i = index(g.get("ruleindex").unwrap_or("0"), rules.len())?;
            rules.remove(i - 1);
            patch(sh, &p, rules)
        }
        _ => {
            // `-instance` is a flag (no value), as in ONTAP's `show` commands.
            let instance = w[1..].iter().any(|a| a == "-instance");
            let rest: Vec<String> = w[1..]
                .iter()
                .filter(|a| *a != "-instance")
                .cloned()
                .collect();
            let g = params(&rest, &[VSERVER, opt("policyname"), opt("ruleindex")])?;
            let mut rows = Vec::new();
            let mut shown = 0;
            for p in policies(sh, &g)? {
                for (i, r) in p["rules"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                {
                    if g.get("ruleindex").is_some_and(|x| x != (i + 1).to_string()) {
                        continue;
                    }
                    shown += 1;
                    if instance {
                        show_instance(out, &p, i + 1, r);
                    } else {
                        rows.push(vec![
                            svm(&p),
                            text(&p["name"]),
                            (i + 1).to_string(),
                            words(&r["protocols"]),
                            clients(r),
                            words(&r["ro_rule"]),
                        ]);
                    }
                }
            }
            if shown == 0 {
                return Err(no_match());
            }
            if !rows.is_empty() {
                table(
                    out,
                    &[
                        "Vserver",
                        "Policy Name",
                        "Rule Index",
                        "Access Protocol",
                        "Client Match",
                        "RO Rule",
                    ],
                    &rows,
                );
            }
            Ok(())
        }
    }
}

/// `-instance`: every field of one rule, as ONTAP lists them.
fn show_instance(out: &mut dyn Write, p: &Value, index: usize, r: &Value) {
    let bool_text = |v: &Value| v.as_bool().map(|b| b.to_string()).unwrap_or_default();
    for (k, v) in [
        ("Vserver", svm(p)),
        ("Policy Name", text(&p["name"])),
        ("Rule Index", index.to_string()),
        ("Access Protocol", words(&r["protocols"])),
        (
            "Client Match Hostname, IP Address, Netgroup, or Domain",
            clients(r),
        ),
        ("RO Access Rule", words(&r["ro_rule"])),
        ("RW Access Rule", words(&r["rw_rule"])),
        (
            "User ID To Which Anonymous Users Are Mapped",
            text(&r["anonymous_user"]),
        ),
        ("Superuser Security Types", words(&r["superuser"])),
        ("Honor SetUID Bits in SETATTR", bool_text(&r["allow_suid"])),
        (
            "Allow Creation of Devices",
            bool_text(&r["allow_device_creation"]),
        ),
        ("NTFS Unix Security Options", text(&r["ntfs_unix_security"])),
        ("Change Ownership Mode", text(&r["chown_mode"])),
    ] {
        let _ = writeln!(out, "{k:>55}: {v}");
    }
    let _ = writeln!(out);
}

/// Put the rule parameters given in `g` into the REST rule `r`.
fn set_fields(r: &mut Map<String, Value>, g: &Given) -> R<()> {
    let list = |v: &str| -> Value {
        json!(v
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>())
    };
    let boolean = |name: &str, v: &str| -> R<Value> {
        match v {
            "true" => Ok(json!(true)),
            "false" => Ok(json!(false)),
            _ => err(format!(
                "\"{v}\" is not a valid value for \"-{name}\" (true, false)"
            )),
        }
    };
    if let Some(v) = g.get("clientmatch") {
        let m: Vec<Value> = list(v)
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|c| json!({ "match": c }))
            .collect();
        r.insert("clients".into(), Value::Array(m));
    }
    for (param, field) in [
        ("rorule", "ro_rule"),
        ("rwrule", "rw_rule"),
        ("superuser", "superuser"),
        ("protocol", "protocols"),
    ] {
        if let Some(v) = g.get(param) {
            r.insert(field.into(), list(v));
        }
    }
    for (param, field) in [
        ("anon", "anonymous_user"),
        ("chown-mode", "chown_mode"),
        ("ntfs-unix-security-ops", "ntfs_unix_security"),
    ] {
        if let Some(v) = g.get(param) {
            r.insert(field.into(), json!(v));
        }
    }
    for (param, field) in [
        ("allow-suid", "allow_suid"),
        ("allow-dev", "allow_device_creation"),
    ] {
        if let Some(v) = g.get(param) {
            r.insert(field.into(), boolean(param, v)?);
        }
    }
    Ok(())
}

/// The policies `-vserver`/`-policyname` select (all fields).
fn policies(sh: &Shell, g: &Given) -> R<Vec<Value>> {
    let filters = [
        ("name", g.get("policyname")),
        ("svm.name", g.get("vserver")),
    ];
    sh.select(POLICIES, "name", &filters)
}

/// The one policy `-policyname` names.
fn one(sh: &Shell, g: &Given) -> R<Value> {
    let name = g.get("policyname").unwrap_or_default();
    match policies(sh, g)?.into_iter().find(|p| p["name"] == name) {
        Some(p) => Ok(p),
        None => err(format!("export policy \"{name}\" does not exist")),
    }
}

/// A policy's rules as a PATCH takes them (`index` dropped: the node numbers them).
fn rules(p: &Value) -> Vec<Value> {
    p["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut r| {
            if let Some(o) = r.as_object_mut() {
                o.remove("index");
            }
            r
        })
        .collect()
}

fn patch(sh: &Shell, p: &Value, rules: Vec<Value>) -> R<()> {
    let body = json!({ "rules": rules });
    sh.call("PATCH", &format!("{POLICIES}/{}", p["id"]), Some(&body))?;
    Ok(())
}

/// `-ruleindex` as a position 1..=max.
fn index(v: &str, max: usize) -> R<usize> {
    match v.parse::<usize>() {
        Ok(i) if (1..=max).contains(&i) => Ok(i),
        _ => err(format!(
            "\"{v}\" is not a valid value for \"-ruleindex\" (1 to {max})"
        )),
    }
}

fn svm(p: &Value) -> String {
    p["svm"]["name"].as_str().unwrap_or("-").to_string()
}

fn words(v: &Value) -> String {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn clients(r: &Value) -> String {
    r["clients"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["match"].as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::parse::words as split;
    use super::*;

    #[test]
    fn rule_parameters_become_rest_fields() {
        let g = params(
            &split("-policyname k8s -clientmatch 10.0.0.0/8,::1 -rorule sys -rwrule sys,none -superuser sys -anon 1001 -allow-suid false -chown-mode unrestricted -protocol nfs3 -allow-dev true").unwrap(),
            RULE,
        )
        .unwrap();
        let mut r = Map::new();
        set_fields(&mut r, &g).unwrap();
        assert_eq!(
            Value::Object(r),
            json!({"clients": [{"match": "10.0.0.0/8"}, {"match": "::1"}],
                   "ro_rule": ["sys"], "rw_rule": ["sys", "none"], "superuser": ["sys"],
                   "anonymous_user": "1001", "allow_suid": false, "chown_mode": "unrestricted",
                   "protocols": ["nfs3"], "allow_device_creation": true})
        );
        let bad = params(&split("-policyname k -allow-suid maybe").unwrap(), RULE).unwrap();
        assert!(set_fields(&mut Map::new(), &bad)
            .unwrap_err()
            .0
            .contains("-allow-suid"));
        assert!(index("0", 3).is_err() && index("4", 3).is_err());
        assert_eq!(index("3", 3).unwrap(), 3);
    }
}
