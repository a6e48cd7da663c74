//! `qoslab igroup create|list|show|add|remove|delete` over the REST API
//! (`/api/protocols/san/igroups`): ONTAP's initiator groups, the iSCSI initiators that see
//! the LUNs mapped to the group (`qoslab lun map`).

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::http_client::{
    enc, print_done, print_json, print_records, text, ApiArgs, Client, ConnArgs, Output,
};
use crate::lun_cmd::{list_text, maps_text, resolve_igroup, IGROUPS};

#[derive(Args)]
#[command(after_help = "\
An igroup names iSCSI initiators (iqn./eui./naa. names, case-insensitive); each sees the
LUNs mapped to the igroup (`qoslab lun map`), at once, sessions already logged in included.
iSCSI only: this node has no Fibre Channel. Beyond loopback, an initiator that would see a
LUN must log in with CHAP (docs/ISCSI.md, \"Logins\"), or the change is refused.

EXAMPLES:
  qoslab igroup create dbhosts --os-type linux --initiator iqn.1993-08.org.debian:01:dbhost
  qoslab igroup create esx --os-type vmware --initiator iqn.1998-01.com.vmware:esx1,iqn.1998-01.com.vmware:esx2
  qoslab igroup add dbhosts iqn.1993-08.org.debian:01:dbhost2
  qoslab igroup remove dbhosts iqn.1993-08.org.debian:01:dbhost     # loses its LUNs at once
  qoslab igroup list --output json
  qoslab lun map /vol/db/lun1 dbhosts
  qoslab igroup delete esx                                          # refused while mapped")]
pub struct IgroupArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    cmd: IgroupCmd,
}

#[derive(Subcommand)]
enum IgroupCmd {
    /// Create an iSCSI igroup, with its initiators.
    Create {
        name: String,
        /// The hosts' OS (ONTAP's -ostype): linux, windows, vmware, aix, hpux, hyper_v,
        /// netware, openvms, solaris, xen.
        #[arg(long, value_name = "OS")]
        os_type: String,
        /// Initiator names, comma-separated or the flag repeated (none: add them later).
        #[arg(long = "initiator", value_name = "IQN", value_delimiter = ',')]
        initiators: Vec<String>,
        /// Free-text comment.
        #[arg(long)]
        comment: Option<String>,
    },
    /// List igroups: name, OS type, initiators, the LUNs mapped (path=number).
    List,
    /// Show one igroup by name or uuid.
    Show { igroup: String },
    /// Add initiators to an igroup (they see its LUNs at once).
    Add {
        igroup: String,
        #[arg(required = true, value_name = "IQN")]
        initiators: Vec<String>,
    },
    /// Remove initiators from an igroup (they lose its LUNs at once).
    Remove {
        igroup: String,
        #[arg(required = true, value_name = "IQN")]
        initiators: Vec<String>,
    },
    /// Delete an igroup (refused while LUNs are mapped to it).
    Delete { igroup: String },
}

pub fn run(args: IgroupArgs) -> anyhow::Result<()> {
    let c = Client::connect(&args.api, &args.conn)?;
    let out = args.api.output;
    match args.cmd {
        IgroupCmd::Create {
            name,
            os_type,
            initiators,
            comment,
        } => {
            let mut b = json!({
                "name": name, "protocol": "iscsi", "os_type": os_type,
                "initiators": names(&initiators),
            });
            if let Some(cm) = comment {
                b["comment"] = json!(cm);
            }
            let r = c.call("POST", IGROUPS, Some(&b))?;
            show(&r, out);
        }
        IgroupCmd::List => print_records(
            &c,
            &format!("{IGROUPS}?fields=os_type,protocol,initiators,lun_maps"),
            out,
            &["Name", "Protocol", "OS Type", "Initiators", "LUNs", "UUID"],
            |v| {
                vec![
                    text(&v["name"]),
                    text(&v["protocol"]),
                    text(&v["os_type"]),
                    initiators(v),
                    maps_text(v, "lun"),
                    text(&v["uuid"]),
                ]
            },
        )?,
        IgroupCmd::Show { igroup } => show(&c.get(IGROUPS, &resolve_igroup(&c, &igroup)?)?, out),
        IgroupCmd::Add { igroup, initiators } => {
            let u = resolve_igroup(&c, &igroup)?;
            let b = json!({ "records": names(&initiators) });
            let r = c.call("POST", &format!("{IGROUPS}/{u}/initiators"), Some(&b))?;
            let said = format!("added to igroup {igroup}: {}", initiators.join(", "));
            print_done(out, &r, &said);
        }
        IgroupCmd::Remove { igroup, initiators } => {
            let u = resolve_igroup(&c, &igroup)?;
            for i in &initiators {
                c.call(
                    "DELETE",
                    &format!("{IGROUPS}/{u}/initiators/{}", enc(i)),
                    None,
                )?;
            }
            let said = format!("removed from igroup {igroup}: {}", initiators.join(", "));
            print_done(out, &json!({}), &said);
        }
        IgroupCmd::Delete { igroup } => {
            let u = resolve_igroup(&c, &igroup)?;
            c.delete(IGROUPS, &u, "igroup", &igroup, out)?;
        }
    }
    Ok(())
}

/// `[{"name": IQN}, ...]`, blanks dropped.
fn names(list: &[String]) -> Vec<Value> {
    list.iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| json!({ "name": s }))
        .collect()
}

/// The initiators' names, comma-separated; `-` without any.
fn initiators(v: &Value) -> String {
    list_text(
        v["initiators"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| text(&i["name"])),
    )
}

fn show(v: &Value, out: Output) {
    if out == Output::Json {
        print_json(v);
        return;
    }
    let v = v["records"].get(0).unwrap_or(v);
    if v["name"].is_null() {
        // Nothing to show (an empty reply): never print a record of dashes.
        return;
    }
    println!("      Igroup: {}", text(&v["name"]));
    println!("        UUID: {}", text(&v["uuid"]));
    println!("    Protocol: {}", text(&v["protocol"]));
    println!("     OS Type: {}", text(&v["os_type"]));
    println!("  Initiators: {}", initiators(v));
    println!("  LUNs (map): {}", maps_text(v, "lun"));
}
