//! `qoslab lun create|list|show|modify|delete|map|unmap` over the REST API
//! (`/api/storage/luns`, `/api/protocols/san/lun-maps`): ONTAP's LUNs, each a block file
//! of its own inside a volume, served over iSCSI to the igroups it is mapped to.

use anyhow::bail;
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use crate::http_client::{
    print_done, print_json, print_records, text, ApiArgs, Client, ConnArgs, Output,
};
use crate::volume_cmd::size_bytes;

pub const LUNS: &str = "/api/storage/luns";
pub const IGROUPS: &str = "/api/protocols/san/igroups";
const LUN_MAPS: &str = "/api/protocols/san/lun-maps";

#[derive(Args)]
#[command(after_help = "\
A LUN is named by its path, /vol/VOLUME/LUN: a sparse file of its own inside block volume
VOLUME, under its own --qos-policy or, without one, its volume's. An initiator sees it once
the LUN is mapped to an igroup that names the initiator (`qoslab igroup`); the map is in
force at once for sessions already logged in. docs/ISCSI.md, \"LUNs, igroups and maps\".

EXAMPLES:
  qoslab volume create db --size 100GiB --qos-policy gold
  qoslab lun create /vol/db/lun1 --size 10GiB --os-type linux
  qoslab lun create /vol/db/lun2 --size 10GiB --os-type linux --qos-policy QoS_500iops
  qoslab igroup create dbhosts --os-type linux --initiator iqn.1993-08.org.debian:01:dbhost
  qoslab lun map /vol/db/lun1 dbhosts                 # at the next free number
  qoslab lun map /vol/db/lun2 dbhosts --lun-id 7
  qoslab lun list
  qoslab lun show /vol/db/lun1 --output json
  qoslab lun modify /vol/db/lun1 --size 20GiB         # grows; sessions are told
  qoslab lun unmap /vol/db/lun1 dbhosts
  qoslab lun delete /vol/db/lun1                      # refused while mapped")]
pub struct LunArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    cmd: LunCmd,
}

#[derive(Subcommand)]
enum LunCmd {
    /// Create a LUN in a block volume (thin: its file is sparse).
    Create {
        /// The LUN's path, /vol/VOLUME/LUN.
        path: String,
        /// Size: bytes, or 10GiB, 1TB, ...: a multiple of 512 from 4 KiB to 128 TiB.
        #[arg(long)]
        size: String,
        /// The host's OS (ONTAP's -ostype): linux, windows, vmware, aix, hpux, hyper_v,
        /// netware, openvms, solaris, solaris_efi, windows_2008, windows_gpt, xen.
        #[arg(long, value_name = "OS")]
        os_type: String,
        /// Its own QoS policy (default: its volume's, followed when that changes).
        #[arg(long, value_name = "NAME")]
        qos_policy: Option<String>,
        /// Free-text comment.
        #[arg(long)]
        comment: Option<String>,
    },
    /// List LUNs: path, size, OS type, policy, maps (igroup=number), serial number.
    List,
    /// Show one LUN by path or uuid.
    Show { lun: String },
    /// Grow a LUN (never shrink), change its policy (`none`: its volume's) or comment.
    Modify {
        lun: String,
        #[arg(long)]
        size: Option<String>,
        #[arg(long, value_name = "NAME")]
        qos_policy: Option<String>,
        #[arg(long)]
        comment: Option<String>,
    },
    /// Delete a LUN and its data (refused while it is mapped: unmap first).
    Delete { lun: String },
    /// Map a LUN to an igroup: its initiators see it at once.
    Map {
        /// The LUN's path (or uuid).
        lun: String,
        /// The igroup's name (or uuid).
        igroup: String,
        /// The LUN number its initiators see it at, 0 to 16383 (default: the smallest
        /// none of them sees yet).
        #[arg(long, value_name = "N")]
        lun_id: Option<u16>,
    },
    /// Unmap a LUN from an igroup: its initiators lose it at once.
    Unmap { lun: String, igroup: String },
}

/// The uuid of the LUN whose path (or uuid) is `key`.
pub fn resolve_lun(c: &Client, key: &str) -> anyhow::Result<String> {
    c.resolve(LUNS, key, "LUN", "qoslab lun list")
}

/// The uuid of the igroup whose name (or uuid) is `key`.
pub fn resolve_igroup(c: &Client, key: &str) -> anyhow::Result<String> {
    c.resolve(IGROUPS, key, "igroup", "qoslab igroup list")
}

pub fn run(args: LunArgs) -> anyhow::Result<()> {
    let c = Client::connect(&args.api, &args.conn)?;
    let out = args.api.output;
    match args.cmd {
        LunCmd::Create {
            path,
            size,
            os_type,
            qos_policy,
            comment,
        } => {
            let mut b = Map::new();
            b.insert("name".into(), json!(path));
            b.insert("os_type".into(), json!(os_type));
            b.insert("space".into(), json!({"size": size_bytes(&size)?}));
            if let Some(p) = qos_policy {
                b.insert("qos_policy".into(), json!({"name": p}));
            }
            if let Some(cm) = comment {
                b.insert("comment".into(), json!(cm));
            }
            let r = c.call("POST", LUNS, Some(&Value::Object(b)))?;
            show(&r, out);
        }
        LunCmd::List => print_records(
            &c,
            &format!("{LUNS}?fields=space,os_type,qos_policy,lun_maps,serial_number,status"),
            out,
            &[
                "Path", "Size", "OS Type", "Policy", "Maps", "State", "Serial",
            ],
            |v| {
                vec![
                    text(&v["name"]),
                    text(&v["space"]["size"]),
                    text(&v["os_type"]),
                    policy(v),
                    maps_text(v, "igroup"),
                    text(&v["status"]["state"]),
                    text(&v["serial_number"]),
                ]
            },
        )?,
        LunCmd::Show { lun } => show(&c.get(LUNS, &resolve_lun(&c, &lun)?)?, out),
        LunCmd::Modify {
            lun,
            size,
            qos_policy,
            comment,
        } => {
            let mut b = Map::new();
            if let Some(s) = size {
                b.insert("space".into(), json!({"size": size_bytes(&s)?}));
            }
            if let Some(p) = qos_policy {
                b.insert("qos_policy".into(), json!({"name": p}));
            }
            if let Some(cm) = comment {
                b.insert("comment".into(), json!(cm));
            }
            if b.is_empty() {
                bail!("nothing to change: give --size, --qos-policy or --comment");
            }
            let u = resolve_lun(&c, &lun)?;
            let r = c.call("PATCH", &format!("{LUNS}/{u}"), Some(&Value::Object(b)))?;
            show(&r, out);
        }
        LunCmd::Delete { lun } => {
            let u = resolve_lun(&c, &lun)?;
            c.delete(LUNS, &u, "LUN", &lun, out)?;
        }
        LunCmd::Map {
            lun,
            igroup,
            lun_id,
        } => {
            let l = resolve_lun(&c, &lun)?;
            let g = resolve_igroup(&c, &igroup)?;
            let mut b = json!({"lun": {"uuid": l}, "igroup": {"uuid": g}});
            if let Some(n) = lun_id {
                b["logical_unit_number"] = json!(n);
            }
            let r = c.call("POST", LUN_MAPS, Some(&b))?;
            let m = r["records"].get(0).unwrap_or(&r);
            let said = format!(
                "mapped LUN {} to igroup {} at LUN number {}",
                text(&m["lun"]["name"]),
                text(&m["igroup"]["name"]),
                text(&m["logical_unit_number"])
            );
            print_done(out, &r, &said);
        }
        LunCmd::Unmap { lun, igroup } => {
            let l = resolve_lun(&c, &lun)?;
            let g = resolve_igroup(&c, &igroup)?;
            c.call("DELETE", &format!("{LUN_MAPS}/{l}/{g}"), None)?;
            print_done(
                out,
                &json!({}),
                &format!("unmapped LUN {lun} from igroup {igroup}"),
            );
        }
    }
    Ok(())
}

/// `POLICY` or `POLICY (volume's)`, `-` without one.
fn policy(v: &Value) -> String {
    let q = &v["qos_policy"];
    match q["name"].as_str() {
        None => "-".into(),
        Some(n) if q["inherited_from_volume"] == json!(true) => format!("{n} (volume's)"),
        Some(n) => n.into(),
    }
}

/// `v`'s `lun_maps` as `NAME=N,...`, NAME the map's `other` end (`igroup` for a LUN,
/// `lun` for an igroup); `-` when unmapped.
pub fn maps_text(v: &Value, other: &str) -> String {
    list_text(v["lun_maps"].as_array().into_iter().flatten().map(|m| {
        format!(
            "{}={}",
            text(&m[other]["name"]),
            text(&m["logical_unit_number"])
        )
    }))
}

/// `items` comma-separated, `-` when there are none.
pub fn list_text(items: impl Iterator<Item = String>) -> String {
    let l: Vec<String> = items.collect();
    if l.is_empty() {
        "-".into()
    } else {
        l.join(",")
    }
}

fn show(v: &Value, out: Output) {
    if out == Output::Json {
        print_json(v);
        return;
    }
    let v = v["records"].get(0).unwrap_or(v);
    let s = text;
    println!("       LUN Path: {}", s(&v["name"]));
    println!("           UUID: {}", s(&v["uuid"]));
    println!("         Volume: {}", s(&v["location"]["volume"]["name"]));
    println!("           Size: {} bytes", s(&v["space"]["size"]));
    println!("           Used: {} bytes", s(&v["space"]["used"]));
    println!("        OS Type: {}", s(&v["os_type"]));
    println!("     QoS Policy: {}", policy(v));
    println!("  Serial Number: {}", s(&v["serial_number"]));
    println!("          State: {}", s(&v["status"]["state"]));
    println!("         Mapped: {}", maps_text(v, "igroup"));
    if let Some(c) = v["comment"].as_str().filter(|c| !c.is_empty()) {
        println!("        Comment: {c}");
    }
}
