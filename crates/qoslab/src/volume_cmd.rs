//! `qoslab volume create|list|show|modify|delete` over the REST API.

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use qos_core::parse_size;
use serde_json::{json, Map, Value};

use crate::http_client::{print_json, print_table, text, ApiArgs, Client, ConnArgs, Output};

const VOLUMES: &str = "/api/storage/volumes";

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab volume create vol500 --size 100GB --qos-policy QoS_500iops
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
    /// Create a volume (a sparse file, served over NBD at once).
    Create {
        name: String,
        /// Size: bytes, or 100GB, 1TiB, ... (KB..TB powers of 1000, KiB..TiB of 1024).
        #[arg(long)]
        size: String,
        /// QoS policy name.
        #[arg(long)]
        qos_policy: Option<String>,
        /// Snapshot reserve, percent (0-90, default 5).
        #[arg(long)]
        snapshot_reserve: Option<u8>,
        /// Free-text comment.
        #[arg(long)]
        comment: Option<String>,
        /// SVM name to record with the volume.
        #[arg(long)]
        svm: Option<String>,
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
        #[arg(long)]
        qos_policy: Option<String>,
        #[arg(long)]
        snapshot_reserve: Option<u8>,
        #[arg(long)]
        comment: Option<String>,
    },
    /// Delete a volume and its data (connected clients are disconnected).
    Delete { volume: String },
}

fn size_bytes(s: &str) -> anyhow::Result<u64> {
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
            qos_policy,
            snapshot_reserve,
            comment,
            svm,
        } => {
            let mut b = Map::new();
            b.insert("name".into(), json!(name));
            b.insert("size".into(), json!(size_bytes(&size)?));
            if let Some(p) = qos_policy {
                b.insert("qos".into(), json!({"policy": {"name": p}}));
            }
            if let Some(r) = snapshot_reserve {
                b.insert("space".into(), json!({"snapshot": {"reserve_percent": r}}));
            }
            if let Some(cm) = comment {
                b.insert("comment".into(), json!(cm));
            }
            if let Some(s) = svm {
                b.insert("svm".into(), json!({ "name": s }));
            }
            let r = c.call("POST", VOLUMES, Some(&Value::Object(b)))?;
            show(&r, out);
        }
        VolumeCmd::List => {
            let r = c.call(
                "GET",
                "/api/storage/volumes?fields=size,qos,space,metric,limits",
                None,
            )?;
            if out == Output::Json {
                print_json(&r);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = r["records"]
                .as_array()
                .map(|a| a.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|v| {
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
                })
                .collect();
            print_table(
                &["Name", "Size", "Used", "Policy", "Ceiling", "IOPS", "UUID"],
                &rows,
            );
        }
        VolumeCmd::Show { volume } => {
            let u = resolve(&c, &volume)?;
            let r = c.call("GET", &format!("{VOLUMES}/{u}"), None)?;
            show(&r, out);
        }
        VolumeCmd::Modify {
            volume,
            size,
            qos_policy,
            snapshot_reserve,
            comment,
        } => {
            let u = resolve(&c, &volume)?;
            let mut b = Map::new();
            if let Some(s) = size {
                b.insert("size".into(), json!(size_bytes(&s)?));
            }
            if let Some(p) = qos_policy {
                b.insert("qos".into(), json!({"policy": {"name": p}}));
            }
            if let Some(r) = snapshot_reserve {
                b.insert("space".into(), json!({"snapshot": {"reserve_percent": r}}));
            }
            if let Some(cm) = comment {
                b.insert("comment".into(), json!(cm));
            }
            if b.is_empty() {
                bail!(
                    "nothing to change: give --size, --qos-policy, --snapshot-reserve or --comment"
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
