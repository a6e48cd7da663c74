//! `lun create|show|modify|delete|map|unmap`, `lun mapping show|create|delete`,
//! `lun igroup create|add|remove|show|delete` (also as `igroup ...`) and `vserver iscsi
//! show`: ONTAP's SAN commands over `/api/storage/luns` and `/api/protocols/san/*`.

use std::io::Write;

use qos_core::parse_size;
use serde_json::{json, Map, Value};

use super::parse::{err, opt, params, req, Given, Param, ShellError};
use super::{size_text, sub, table, Shell, R};
use crate::http_client::{enc, text};

const LUNS: &str = "/api/storage/luns";
const IGROUPS: &str = "/api/protocols/san/igroups";
const LUN_MAPS: &str = "/api/protocols/san/lun-maps";

const VSERVER: Param = Param {
    name: "vserver",
    required: false,
    positional: true,
};

pub fn lun(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    let cmds = [
        "create", "show", "modify", "resize", "delete", "map", "unmap", "mapping", "igroup",
    ];
    let rest = &w[1..];
    match sub(w, &cmds, "lun")? {
        "create" => create(sh, rest, out),
        "show" => show(sh, rest, out),
        "modify" | "resize" => modify(sh, rest, out),
        "delete" => delete(sh, rest, out),
        "map" => map(sh, rest, out),
        "unmap" => unmap(sh, rest, out),
        "mapping" => match sub(rest, &["show", "create", "delete"], "lun mapping")? {
            "show" => mapping_show(sh, &rest[1..], out),
            "create" => map(sh, &rest[1..], out),
            _ => unmap(sh, &rest[1..], out),
        },
        _ => igroup(sh, rest, out),
    }
}

pub fn igroup(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    let rest = &w[1..];
    match sub(
        w,
        &["create", "add", "remove", "show", "delete"],
        "lun igroup",
    )? {
        "create" => igroup_create(sh, rest, out),
        "add" => igroup_add(sh, rest, out),
        "remove" => igroup_remove(sh, rest, out),
        "show" => igroup_show(sh, rest, out),
        _ => igroup_delete(sh, rest, out),
    }
}

/// A `-size`: ONTAP's `1g`, `512m` (k, m, g, t: powers of 1024), or any size qoslab
/// reads (`1GiB`, `100GB`, bytes).
fn size_arg(v: &str) -> R<u64> {
    let shift = match v.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => Some(10),
        Some('m') => Some(20),
        Some('g') => Some(30),
        Some('t') => Some(40),
        _ => None,
    };
    if let Some(shift) = shift {
        if let Ok(n) = v[..v.len() - 1].parse::<u64>() {
            return n.checked_mul(1 << shift).ok_or_else(|| {
                ShellError(format!("invalid value \"{v}\" for \"-size\": too large"))
            });
        }
    }
    parse_size(v).map_err(|e| ShellError(format!("invalid value \"{v}\" for \"-size\": {e}")))
}

fn qos_arg(b: &mut Map<String, Value>, g: &Given) {
    if let Some(p) = g.get("qos-policy-group") {
        b.insert("qos_policy".into(), json!({ "name": p }));
    }
}

/// The uuid of the LUN at `-path` (the vserver, when given, must be its).
fn lun_uuid(sh: &Shell, g: &Given) -> R<String> {
    let path = g.get("path").unwrap_or_default();
    sh.uuid_named(LUNS, "LUN", path, g.get("vserver"))
}

/// The uuid of the igroup `-igroup` names.
fn igroup_uuid(sh: &Shell, g: &Given) -> R<String> {
    let name = g.get("igroup").unwrap_or_default();
    sh.uuid_named(IGROUPS, "initiator group", name, None)
}

fn create(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let spec = [
        VSERVER,
        req("path"),
        req("size"),
        req("ostype"),
        opt("qos-policy-group"),
        opt("space-reserve"),
        opt("comment"),
    ];
    let g = params(args, &spec)?;
    let size = size_arg(g.get("size").unwrap_or_default())?;
    let mut b = Map::new();
    b.insert("name".into(), json!(g.get("path")));
    b.insert("os_type".into(), json!(g.get("ostype")));
    let reserve = match g.get("space-reserve") {
        None | Some("disabled") => false,
        Some("enabled") => true,
        Some(v) => {
            return err(format!(
                "invalid value \"{v}\" for \"-space-reserve\": enabled or disabled"
            ))
        }
    };
    b.insert(
        "space".into(),
        json!({"size": size, "guarantee": {"requested": reserve}}),
    );
    if let Some(v) = g.get("vserver") {
        b.insert("svm".into(), json!({ "name": v }));
    }
    if let Some(c) = g.get("comment") {
        b.insert("comment".into(), json!(c));
    }
    qos_arg(&mut b, &g);
    let r = sh.call("POST", LUNS, Some(&Value::Object(b)))?;
    let _ = writeln!(
        out,
        "Created a LUN of size {} ({})",
        g.get("size").unwrap_or_default(),
        r["space"]["size"].as_u64().unwrap_or(size)
    );
    Ok(())
}

fn modify(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let spec = [
        VSERVER,
        req("path"),
        opt("size"),
        opt("qos-policy-group"),
        opt("comment"),
    ];
    let g = params(args, &spec)?;
    let mut b = Map::new();
    if let Some(s) = g.get("size") {
        b.insert("space".into(), json!({ "size": size_arg(s)? }));
    }
    if let Some(c) = g.get("comment") {
        b.insert("comment".into(), json!(c));
    }
    qos_arg(&mut b, &g);
    if b.is_empty() {
        return err("nothing to modify: give -size, -qos-policy-group or -comment");
    }
    let uuid = lun_uuid(sh, &g)?;
    sh.call("PATCH", &format!("{LUNS}/{uuid}"), Some(&Value::Object(b)))?;
    let _ = writeln!(
        out,
        "LUN \"{}\" modified.",
        g.get("path").unwrap_or_default()
    );
    Ok(())
}

fn delete(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, req("path"), opt("force")])?;
    let uuid = lun_uuid(sh, &g)?;
    sh.call("DELETE", &format!("{LUNS}/{uuid}"), None)?;
    let _ = writeln!(
        out,
        "LUN \"{}\" deleted.",
        g.get("path").unwrap_or_default()
    );
    Ok(())
}

fn show(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, opt("path")])?;
    let filters = [("name", g.get("path")), ("svm.name", g.get("vserver"))];
    let recs = sh.show_records(LUNS, "name", &filters)?;
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|l| {
            let mapped = l["status"]["mapped"].as_bool().unwrap_or(false);
            vec![
                text(&l["svm"]["name"]),
                text(&l["name"]),
                text(&l["status"]["state"]),
                if mapped { "mapped" } else { "unmapped" }.into(),
                text(&l["os_type"]),
                size_text(l["space"]["size"].as_u64().unwrap_or(0)),
                text(&l["serial_number"]),
                text(&l["qos_policy"]["name"]),
            ]
        })
        .collect();
    table(
        out,
        &[
            "Vserver",
            "Path",
            "State",
            "Mapped",
            "Type",
            "Size",
            "Serial",
            "QoS Policy",
        ],
        &rows,
    );
    Ok(())
}

fn map(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, req("path"), req("igroup"), opt("lun-id")])?;
    let mut b = json!({
        "lun": {"name": g.get("path")},
        "igroup": {"name": g.get("igroup")},
    });
    if let Some(n) = g.get("lun-id") {
        let n: u16 = n.parse().map_err(|_| {
            ShellError(format!(
                "invalid value \"{n}\" for \"-lun-id\": expected 0 to 16383"
            ))
        })?;
        b["logical_unit_number"] = json!(n);
    }
    let r = sh.call("POST", LUN_MAPS, Some(&b))?;
    let _ = writeln!(
        out,
        "LUN \"{}\" mapped to initiator group \"{}\" with LUN ID {}.",
        g.get("path").unwrap_or_default(),
        g.get("igroup").unwrap_or_default(),
        r["logical_unit_number"]
    );
    Ok(())
}

fn unmap(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, req("path"), req("igroup")])?;
    let lun = lun_uuid(sh, &g)?;
    let igroup = igroup_uuid(sh, &g)?;
    sh.call("DELETE", &format!("{LUN_MAPS}/{lun}/{igroup}"), None)?;
    let _ = writeln!(
        out,
        "LUN \"{}\" unmapped from initiator group \"{}\".",
        g.get("path").unwrap_or_default(),
        g.get("igroup").unwrap_or_default()
    );
    Ok(())
}

fn mapping_show(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, opt("path"), opt("igroup")])?;
    let filters = [
        ("lun.name", g.get("path")),
        ("igroup.name", g.get("igroup")),
        ("svm.name", g.get("vserver")),
    ];
    let recs = sh.show_records(LUN_MAPS, "lun.name", &filters)?;
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|m| {
            vec![
                text(&m["svm"]["name"]),
                text(&m["lun"]["name"]),
                text(&m["igroup"]["name"]),
                m["logical_unit_number"].to_string(),
                "iscsi".into(),
            ]
        })
        .collect();
    table(
        out,
        &["Vserver", "Path", "Igroup", "LUN ID", "Protocol"],
        &rows,
    );
    Ok(())
}

/// `-initiator IQN[,IQN...]` as initiator objects.
fn initiators(g: &Given) -> Vec<Value> {
    g.get("initiator")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|n| json!({ "name": n }))
        .collect()
}

fn igroup_create(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let spec = [
        VSERVER,
        req("igroup"),
        opt("protocol"),
        req("ostype"),
        opt("initiator"),
        opt("comment"),
    ];
    let g = params(args, &spec)?;
    let mut b = json!({
        "name": g.get("igroup"),
        "protocol": g.get("protocol").unwrap_or("iscsi"),
        "os_type": g.get("ostype"),
        "initiators": initiators(&g),
    });
    if let Some(v) = g.get("vserver") {
        b["svm"] = json!({ "name": v });
    }
    if let Some(c) = g.get("comment") {
        b["comment"] = json!(c);
    }
    sh.call("POST", IGROUPS, Some(&b))?;
    let _ = writeln!(
        out,
        "Initiator group \"{}\" created.",
        g.get("igroup").unwrap_or_default()
    );
    Ok(())
}

fn igroup_add(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, req("igroup"), req("initiator")])?;
    let uuid = igroup_uuid(sh, &g)?;
    let b = json!({ "records": initiators(&g) });
    sh.call("POST", &format!("{IGROUPS}/{uuid}/initiators"), Some(&b))?;
    let _ = writeln!(
        out,
        "Initiator(s) {} added to initiator group \"{}\".",
        g.get("initiator").unwrap_or_default(),
        g.get("igroup").unwrap_or_default()
    );
    Ok(())
}

fn igroup_remove(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, req("igroup"), req("initiator")])?;
    let uuid = igroup_uuid(sh, &g)?;
    for i in initiators(&g) {
        let name = i["name"].as_str().unwrap_or_default();
        sh.call(
            "DELETE",
            &format!("{IGROUPS}/{uuid}/initiators/{}", enc(name)),
            None,
        )?;
    }
    let _ = writeln!(
        out,
        "Initiator(s) {} removed from initiator group \"{}\".",
        g.get("initiator").unwrap_or_default(),
        g.get("igroup").unwrap_or_default()
    );
    Ok(())
}

fn igroup_delete(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, req("igroup")])?;
    let uuid = igroup_uuid(sh, &g)?;
    sh.call("DELETE", &format!("{IGROUPS}/{uuid}"), None)?;
    let _ = writeln!(
        out,
        "Initiator group \"{}\" deleted.",
        g.get("igroup").unwrap_or_default()
    );
    Ok(())
}

fn igroup_show(sh: &Shell, args: &[String], out: &mut dyn Write) -> R<()> {
    let g = params(args, &[VSERVER, opt("igroup")])?;
    let filters = [("name", g.get("igroup")), ("svm.name", g.get("vserver"))];
    let recs = sh.show_records(IGROUPS, "name", &filters)?;
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|i| {
            let names: Vec<String> = i["initiators"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| text(&n["name"]))
                .collect();
            vec![
                text(&i["svm"]["name"]),
                text(&i["name"]),
                text(&i["protocol"]),
                text(&i["os_type"]),
                if names.is_empty() {
                    "-".into()
                } else {
                    names.join(", ")
                },
            ]
        })
        .collect();
    table(
        out,
        &["Vserver", "Igroup", "Protocol", "OS Type", "Initiators"],
        &rows,
    );
    Ok(())
}

/// `vserver iscsi show`: the node's iSCSI target.
pub fn iscsi_show(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    sub(w, &["show"], "vserver iscsi")?;
    params(&w[1..], &[VSERVER])?;
    let recs = sh.records("/api/protocols/san/iscsi/services?fields=*")?;
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|r| {
            let up = r["enabled"].as_bool().unwrap_or(false);
            vec![
                text(&r["svm"]["name"]),
                text(&r["target"]["name"]),
                text(&r["target"]["alias"]),
                if up { "up" } else { "down" }.into(),
            ]
        })
        .collect();
    table(
        out,
        &["Vserver", "Target Name", "Target Alias", "Status Admin"],
        &rows,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_as_ontap_writes_them() {
        assert_eq!(super::size_arg("1g").unwrap(), 1 << 30);
        assert_eq!(super::size_arg("4M").unwrap(), 4 << 20);
        assert_eq!(super::size_arg("1GiB").unwrap(), 1 << 30);
        assert_eq!(super::size_arg("4096").unwrap(), 4096);
        assert!(super::size_arg("lots").is_err());
    }
}
