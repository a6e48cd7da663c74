//! `volume create|modify|show|delete` and `vserver show`.

use std::io::Write;

use qos_core::parse_size;
use serde_json::{json, Map, Value};

use super::parse::{err, opt, params, req, Given, Param, ShellError};
use super::{entries, no_match, size_text, sub, table, Shell, R};
use crate::http_client::enc;

const VOLUMES: &str = "/api/storage/volumes";

pub fn run(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    match sub(w, &["create", "modify", "show", "delete"], "volume")? {
        "create" => create(sh, &w[1..], out),
        "modify" => modify(sh, &w[1..], out),
        "show" => show(sh, &w[1..], out),
        _ => delete(sh, &w[1..], out),
    }
}

/// `-vserver` then `-volume`, as ONTAP lists them (both positional).
const SPEC: &[Param] = &[
    Param {
        name: "vserver",
        required: false,
        positional: true,
    },
    req("volume"),
    opt("size"),
    opt("aggregate"),
    opt("qos-policy-group"),
    opt("qos-adaptive-policy-group"),
    opt("percent-snapshot-space"),
    opt("comment"),
];

fn selector(g: &Given) -> String {
    let mut q = format!("name={}", enc(g.get("volume").unwrap_or("*")));
    if let Some(v) = g.get("vserver") {
        q.push_str(&format!("&svm.name={}", enc(v)));
    }
    q
}

/// The volume fields from the parameters; a QoS policy must be of the kind its parameter
/// names (`-qos-policy-group`: fixed, `-qos-adaptive-policy-group`: adaptive).
fn body(sh: &Shell, g: &Given) -> R<Map<String, Value>> {
    let mut b = Map::new();
    if let Some(v) = g.get("size") {
        let n = parse_size(v)
            .map_err(|e| ShellError(format!("invalid value \"{v}\" for \"-size\": {e}")))?;
        b.insert("size".into(), json!(n));
    }
    if let Some(v) = g.get("percent-snapshot-space") {
        let n: u8 = v.trim_end_matches('%').parse().map_err(|_| {
            ShellError(format!(
                "invalid value \"{v}\" for \"-percent-snapshot-space\": expected 0 to 90"
            ))
        })?;
        b.insert("space".into(), json!({"snapshot": {"reserve_percent": n}}));
    }
    if let Some(v) = g.get("comment") {
        b.insert("comment".into(), json!(v));
    }
    let fixed = g.get("qos-policy-group");
    let adaptive = g.get("qos-adaptive-policy-group");
    let (name, want_adaptive) =
        match (fixed, adaptive) {
            (Some(_), Some(_)) => return err(
                "\"-qos-policy-group\" and \"-qos-adaptive-policy-group\" are mutually exclusive",
            ),
            (Some(n), None) => (n, false),
            (None, Some(n)) => (n, true),
            (None, None) => return Ok(b),
        };
    if name == "none" {
        b.insert("qos".into(), json!({"policy": {"name": "none"}}));
        return Ok(b);
    }
    let recs = sh.records(&format!(
        "/api/storage/qos/policies?name={}&fields=adaptive",
        enc(name)
    ))?;
    let Some(p) = recs.first() else {
        let what = if want_adaptive {
            "adaptive policy group"
        } else {
            "policy group"
        };
        return err(format!(
            "command failed: QoS {what} \"{name}\" does not exist (qos {} show lists them)",
            if want_adaptive {
                "adaptive-policy-group"
            } else {
                "policy-group"
            }
        ));
    };
    if p.get("adaptive").is_some() != want_adaptive {
        return err(format!(
            "command failed: \"{name}\" is {}; use \"-{}\"",
            if want_adaptive {
                "a policy group, not an adaptive policy group"
            } else {
                "an adaptive policy group, not a policy group"
            },
            if want_adaptive {
                "qos-policy-group"
            } else {
                "qos-adaptive-policy-group"
            }
        ));
    }
    b.insert("qos".into(), json!({"policy": {"name": name}}));
    Ok(b)
}

fn create(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, SPEC)?;
    let mut b = body(sh, &g)?;
    let name = g.get("volume").unwrap_or_default();
    if !b.contains_key("size") {
        return err("Missing required parameter \"-size\"");
    }
    b.insert("name".into(), json!(name));
    if let Some(v) = g.get("vserver") {
        b.insert("svm".into(), json!({ "name": v }));
    }
    if let Some(a) = g.get("aggregate") {
        b.insert("aggregates".into(), json!([{ "name": a }]));
    }
    sh.call("POST", VOLUMES, Some(&Value::Object(b)))?;
    let _ = writeln!(out, "Volume \"{name}\" created.");
    Ok(())
}

fn modify(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, SPEC)?;
    if g.get("aggregate").is_some() {
        return err("\"-aggregate\" cannot be modified (qoslab has no aggregates)");
    }
    let b = body(sh, &g)?;
    if b.is_empty() {
        return err("nothing to modify: give -qos-policy-group, -qos-adaptive-policy-group, -size, -percent-snapshot-space or -comment");
    }
    let r = sh.call(
        "PATCH",
        &format!("{VOLUMES}?{}&fields=svm", selector(&g)),
        Some(&Value::Object(b)),
    )?;
    let recs = r["records"].as_array().cloned().unwrap_or_default();
    if recs.is_empty() {
        return Err(no_match());
    }
    let vserver = g.get("vserver").unwrap_or("qoslab");
    for v in &recs {
        let _ = writeln!(
            out,
            "Volume modify successful on volume {} of Vserver {vserver}.",
            v["name"].as_str().unwrap_or("")
        );
    }
    entries(out, recs.len(), "modified");
    Ok(())
}

fn delete(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let spec = [
        Param {
            name: "vserver",
            required: false,
            positional: true,
        },
        req("volume"),
        opt("force"),
    ];
    let g = params(args, &spec)?;
    let r = sh.call("DELETE", &format!("{VOLUMES}?{}", selector(&g)), None)?;
    let n = r["num_records"].as_u64().unwrap_or(0) as usize;
    if n == 0 {
        return Err(no_match());
    }
    for v in r["records"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "Volume \"{}\" deleted.",
            v["name"].as_str().unwrap_or("")
        );
    }
    entries(out, n, "deleted");
    Ok(())
}

/// The fields `volume show -fields` knows, in the default table's column order.
const FIELDS: &[&str] = &[
    "vserver",
    "volume",
    "aggregate",
    "state",
    "type",
    "size",
    "available",
    "percent-used",
    "qos-policy-group",
];

fn show(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let spec = [
        Param {
            name: "vserver",
            required: false,
            positional: true,
        },
        opt("volume"),
        opt("fields"),
    ];
    let g = params(args, &spec)?;
    let recs = sh.records(&format!(
        "{VOLUMES}?{}&fields=svm,size,space,state,type,qos&order_by=svm.name,name",
        selector(&g)
    ))?;
    if recs.is_empty() {
        return Err(no_match());
    }
    // Each volume's fields by their clustershell names, in the default table's order.
    let fields: Vec<Vec<(&'static str, String)>> = recs
        .iter()
        .map(|v| {
            let size = v["size"].as_u64().unwrap_or(0);
            let used = v["space"]["used"].as_u64().unwrap_or(0);
            let avail = v["space"]["available"].as_u64().unwrap_or(0);
            let values = [
                v["svm"]["name"].as_str().unwrap_or("qoslab").to_string(),
                v["name"].as_str().unwrap_or("").to_string(),
                "-".into(),
                v["state"].as_str().unwrap_or("").to_string(),
                v["type"].as_str().unwrap_or("").to_ascii_uppercase(),
                size_text(size),
                size_text(avail),
                format!("{}%", (used * 100).checked_div(size).unwrap_or(0)),
                v["qos"]["policy"]["name"]
                    .as_str()
                    .unwrap_or("-")
                    .to_string(),
            ];
            FIELDS.iter().copied().zip(values).collect()
        })
        .collect();
    if let Some(wanted) = g.get("fields") {
        return super::fields_table(out, &["vserver", "volume"], FIELDS, wanted, &fields);
    }
    let rows: Vec<Vec<String>> = fields
        .into_iter()
        .map(|r| r.into_iter().map(|(_, v)| v).collect())
        .collect();
    table(
        out,
        &[
            "Vserver",
            "Volume",
            "Aggregate",
            "State",
            "Type",
            "Size",
            "Available",
            "Used%",
            "QoS Policy",
        ],
        &rows,
    );
    Ok(())
}

/// `vserver show`: the SVMs the node knows.
pub fn vserver(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    match sub(w, &["show", "export-policy", "iscsi"], "vserver")? {
        "export-policy" => return super::export_policy::run(sh, &w[1..], out),
        "iscsi" => return super::san::iscsi_show(sh, &w[1..], out),
        _ => {}
    }
    let g = params(&w[1..], &[opt("vserver")])?;
    let recs = sh.show_records("/api/svm/svms", "name", &[("name", g.get("vserver"))])?;
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|s| {
            vec![
                s["name"].as_str().unwrap_or("").to_string(),
                "data".into(),
                s["subtype"].as_str().unwrap_or("").to_string(),
                s["state"].as_str().unwrap_or("").to_string(),
                s["uuid"].as_str().unwrap_or("").to_string(),
            ]
        })
        .collect();
    table(
        out,
        &["Vserver", "Type", "Subtype", "Admin State", "UUID"],
        &rows,
    );
    Ok(())
}
