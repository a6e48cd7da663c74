//! `qoslab volume create|list|show|modify|delete` over the REST API.

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use qos_core::parse_size;
use serde_json::{json, Map, Value};

use crate::http_client::{print_json, print_records, text, ApiArgs, Client, ConnArgs, Output};

const VOLUMES: &str = "/api/storage/volumes";

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab volume create vol500 --size 100GB --qos-policy QoS_500iops
  qoslab volume create nas500 --size 100GB --qos-policy QoS_500iops --nas-path /nas500
  qoslab volume modify nas500 --export-policy k8s
  qoslab volume modify vol500 --qos-policy aQoS
  qoslab volume modify vol500 --size 200GB --snapshot-reserve 0
  qoslab volume modify vol500 --qos-policy none
  qoslab volume list
  qoslab volume delete vol500")]
pub struct VolumeArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    cmd: VolumeCmd,
}

#[derive(Subcommand)]
enum VolumeCmd {
    /// Create a volume: a block volume (a sparse file, served over NBD at once), or with
    /// --nas-path a NAS volume (a directory tree served over NFS at that junction path
    /// by `qoslab serve --listen-nfs`).
    Create {
        name: String,
        /// Size: bytes, or 100GB, 1TiB, ... (KB..TB powers of 1000, KiB..TiB of 1024).
        #[arg(long)]
        size: String,
        #[command(flatten)]
        fields: Fields,
        /// SVM name to record with the volume.
        #[arg(long)]
        svm: Option<String>,
        /// A NAS volume at this junction path (ONTAP's nas.path), e.g. /vol500: clients
        /// mount HOST:/vol500. Its size is a quota (NFS3ERR_NOSPC past it).
        #[arg(long, value_name = "PATH")]
        nas_path: Option<String>,
        /// The NAS volume's export policy (default: `default`, loopback only).
        #[arg(long, value_name = "NAME", requires = "nas_path")]
        export_policy: Option<String>,
        /// The NAS volume's root directory mode, octal (default 755).
        #[arg(long, value_name = "MODE", requires = "nas_path")]
        unix_permissions: Option<String>,
    },
    /// List volumes with size, policy and current IOPS.
    List,
    /// Show one volume by name or uuid.
    Show { volume: String },
    /// Grow a volume, change its reserve, or move it to another policy (`none` removes it).
    Modify {
        volume: String,
        #[arg(long)]
        size: Option<String>,
        #[command(flatten)]
        fields: Fields,
        /// A NAS volume's export policy.
        #[arg(long, value_name = "NAME")]
        export_policy: Option<String>,
    },
    /// Delete a volume and its data (connected clients are disconnected).
    Delete { volume: String },
}

/// The settings `create` and `modify` share.
#[derive(Args)]
struct Fields {
    /// QoS policy name (`none` on modify removes it).
    #[arg(long)]
    qos_policy: Option<String>,
    /// Snapshot reserve, percent (0-90, default 5).
    #[arg(long)]
    snapshot_reserve: Option<u8>,
    /// Free-text comment.
    #[arg(long)]
    comment: Option<String>,
}

/// A `--size` value in bytes (the error names the flag and the value).
pub(crate) fn size_bytes(s: &str) -> anyhow::Result<u64> {
    parse_size(s).map_err(|e| anyhow!("--size: {e}"))
}

fn resolve(c: &Client, key: &str) -> anyhow::Result<String> {
    c.resolve(VOLUMES, key, "volume", "qoslab volume list")
}

pub fn run(args: VolumeArgs) -> anyhow::Result<()> {
    let c = Client::connect(&args.api, &args.conn)?;
    let out = args.api.output;
    match args.cmd {
        VolumeCmd::Create {
            name,
            size,
            fields,
            svm,
            nas_path,
            export_policy,
            unix_permissions,
        } => {
            let mut b = Map::new();
            b.insert("name".into(), json!(name));
            b.insert("size".into(), json!(size_bytes(&size)?));
            common_fields(&mut b, fields);
            if let Some(s) = svm {
                b.insert("svm".into(), json!({ "name": s }));
            }
            if let Some(p) = nas_path {
                let mut nas = json!({ "path": p });
                if let Some(e) = export_policy {
                    nas["export_policy"] = json!({ "name": e });
                }
                if let Some(m) = unix_permissions {
                    nas["unix_permissions"] = json!(m);
                }
                b.insert("nas".into(), nas);
            }
            let r = c.call("POST", VOLUMES, Some(&Value::Object(b)))?;
            show(&r, out);
        }
        VolumeCmd::List => print_records(
            &c,
            "/api/storage/volumes?fields=size,qos,space,metric,limits",
            out,
            &["Name", "Size", "Used", "Policy", "Ceiling", "IOPS", "UUID"],
            |v| {
                vec![
                    v["name"].as_str().unwrap_or("").to_string(),
                    v["size"].to_string(),
                    v["space"]["used"].to_string(),
                    v["qos"]["policy"]["name"]
                        .as_str()
                        .unwrap_or("-")
                        .to_string(),
                    ceiling(v),
                    v["metric"]["iops"]["total"].to_string(),
                    v["uuid"].as_str().unwrap_or("").to_string(),
                ]
            },
        )?,
        VolumeCmd::Show { volume } => show(&c.get(VOLUMES, &resolve(&c, &volume)?)?, out),
        VolumeCmd::Modify {
            volume,
            size,
            fields,
            export_policy,
        } => {
            let u = resolve(&c, &volume)?;
            let mut b = Map::new();
            if let Some(s) = size {
                b.insert("size".into(), json!(size_bytes(&s)?));
            }
            common_fields(&mut b, fields);
            if let Some(e) = export_policy {
                b.insert("nas".into(), json!({"export_policy": {"name": e}}));
            }
            if b.is_empty() {
                bail!(
                    "nothing to change: give --size, --qos-policy, --snapshot-reserve, --comment or --export-policy"
                );
            }
            let r = c.call("PATCH", &format!("{VOLUMES}/{u}"), Some(&Value::Object(b)))?;
            show(&r, out);
        }
        VolumeCmd::Delete { volume } => {
            let u = resolve(&c, &volume)?;
            c.delete(VOLUMES, &u, "volume", &volume, out)?;
        }
    }
    Ok(())
}

fn ceiling(v: &Value) -> String {
    let l = &v["limits"];
    let iops = l["max_throughput_iops"].as_u64().unwrap_or(0);
    let bps = l["max_throughput_bytes_per_sec"].as_u64().unwrap_or(0);
    match (iops, bps) {
        (0, 0) => "-".into(),
        (i, 0) => format!("{i}iops"),
        (0, b) => format!("{:.1}MB/s", b as f64 / 1048576.0),
        (i, b) => format!("{i}iops,{:.1}MB/s", b as f64 / 1048576.0),
    }
}

fn show(v: &Value, out: Output) {
    if out == Output::Json {
        print_json(v);
        return;
    }
    let s = text;
    println!("     Volume Name: {}", s(&v["name"]));
    println!("            UUID: {}", s(&v["uuid"]));
    println!("            Size: {} bytes", s(&v["size"]));
    println!("            Used: {} bytes", s(&v["space"]["used"]));
    println!("       Available: {} bytes", s(&v["space"]["available"]));
    println!(
        "Snapshot Reserve: {}%",
        s(&v["space"]["snapshot"]["reserve_percent"])
    );
    println!(
        "      QoS Policy: {}",
        v["qos"]["policy"]["name"].as_str().unwrap_or("-")
    );
    if let Some(p) = v["nas"]["path"].as_str() {
        println!("   Junction Path: {p} (NAS volume, NFSv3)");
        println!(
            "   Export Policy: {}",
            v["nas"]["export_policy"]["name"].as_str().unwrap_or("-")
        );
        if let Some(u) = v["nfs"]["url"].as_str() {
            println!("       libnfs URL: {u}");
        }
    }
    println!("         Ceiling: {}", ceiling(v));
    let m = &v["metric"];
    println!(
        "            IOPS: {} (read {}, write {}, other {})",
        s(&m["iops"]["total"]),
        s(&m["iops"]["read"]),
        s(&m["iops"]["write"]),
        s(&m["iops"]["other"])
    );
    println!(
        "         Latency: {}us (QoS ceiling {}us, floor {}us)",
        s(&m["latency"]["total"]),
        s(&m["qos_latency"]["ceiling"]),
        s(&m["qos_latency"]["floor"])
    );
}

/// The fields `create` and `modify` share: the QoS policy, the snapshot reserve, the comment.
fn common_fields(b: &mut Map<String, Value>, f: Fields) {
    if let Some(p) = f.qos_policy {
        b.insert("qos".into(), json!({"policy": {"name": p}}));
    }
    if let Some(r) = f.snapshot_reserve {
        b.insert("space".into(), json!({"snapshot": {"reserve_percent": r}}));
    }
    if let Some(cm) = f.comment {
        b.insert("comment".into(), json!(cm));
    }
}
