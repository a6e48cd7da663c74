//! `qoslab policy create|list|show|modify|delete`: QoS policy groups over the REST API,
//! with ONTAP CLI value syntax (`500iops`, `100MB/s`, `500iops,100MB/s`, `5IOPS/GB`).

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use qos_core::{parse_iops_per_capacity, Allocation, BlockSize};
use serde_json::{json, Map, Value};

use crate::http_client::{print_json, print_records, text, ApiArgs, Client, ConnArgs, Output};
use crate::policy_burst::{burst_text, provisioned_text, put_throughput, BurstFlags};

const POLICIES: &str = "/api/storage/qos/policies";

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab policy create QoS_500iops --max-throughput 500iops
  qoslab policy create QoS_100MBps --max-throughput 100MB/s --svm nfs_svm
  qoslab policy create aQoS --expected-iops 5IOPS/GB --peak-iops 50IOPS/GB --peak-iops-allocation allocated-space
  qoslab policy modify QoS_500iops --max-throughput 1000iops
  qoslab policy create gp2ish --max-throughput 300iops --burst-throughput 3000iops --burst-bucket-iops 5400000
  qoslab policy create solidfire --min-throughput 50iops --max-throughput 1000iops --burst-throughput 1500iops --burst-duration 60s
  qoslab policy create gp2 --model ebs-gp2 --bucket-scale 1/10
  qoslab policy list
  qoslab policy delete aQoS")]
pub struct PolicyArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    cmd: PolicyCmd,
}

#[derive(Subcommand)]
enum PolicyCmd {
    /// Create a fixed policy (--max/--min-throughput) or an adaptive one (--peak-iops ...).
    Create {
        /// Policy group name.
        name: String,
        #[command(flatten)]
        spec: Spec,
        /// SVM name to record with the policy.
        #[arg(long)]
        svm: Option<String>,
    },
    /// List policies (name, uuid, kind, limits).
    List,
    /// Show one policy by name or uuid.
    Show { policy: String },
    /// Change a policy's limits or name (member volumes follow at once).
    Modify {
        /// Policy name or uuid.
        policy: String,
        #[command(flatten)]
        spec: Spec,
        /// Rename the policy.
        #[arg(long)]
        new_name: Option<String>,
    },
    /// Delete a policy (refused while volumes use it).
    Delete { policy: String },
}

#[derive(Args, Default)]
struct Spec {
    /// Fixed ceiling: 500iops, 100MB/s, or 500iops,100MB/s (MB = 2^20 bytes).
    #[arg(long)]
    max_throughput: Option<String>,
    /// Fixed floor, same syntax as --max-throughput.
    #[arg(long)]
    min_throughput: Option<String>,
    /// Fixed only: one budget shared by all member volumes (cannot change later).
    #[arg(long)]
    is_shared: Option<bool>,
    /// Adaptive floor density: 5IOPS/GB, 2048IOPS/TB, or a number per TB.
    #[arg(long)]
    expected_iops: Option<String>,
    /// Adaptive ceiling density: 50IOPS/GB, 4096IOPS/TB, or a number per TB.
    #[arg(long)]
    peak_iops: Option<String>,
    /// Adaptive: IOPS never computed below this.
    #[arg(long)]
    absolute_min_iops: Option<u64>,
    /// Adaptive: allocated-space or used-space.
    #[arg(long)]
    expected_iops_allocation: Option<String>,
    /// Adaptive: allocated-space or used-space.
    #[arg(long)]
    peak_iops_allocation: Option<String>,
    /// Adaptive: any, 4k, 8k, 16k, 32k, 64k, 128k.
    #[arg(long)]
    block_size: Option<String>,
    #[command(flatten)]
    burst: BurstFlags,
}

impl Spec {
    /// Turn CLI values into the API's `fixed` / `adaptive` objects, checking syntax here
    /// so typos get qos-core's messages naming the allowed forms.
    fn to_json(&self) -> anyhow::Result<Map<String, Value>> {
        self.to_json_for(None)
    }

    /// As [`Spec::to_json`]; `kind` (`fixed` or `adaptive`) says where burst flags go when no
    /// other flag decides it (modifying only a policy's burst).
    fn to_json_for(&self, kind: Option<&str>) -> anyhow::Result<Map<String, Value>> {
        let mut fixed = Map::new();
        if let Some(s) = &self.max_throughput {
            put_throughput(&mut fixed, "max_throughput", "max-throughput", s)?;
        }
        if let Some(s) = &self.min_throughput {
            put_throughput(&mut fixed, "min_throughput", "min-throughput", s)?;
        }
        if let Some(b) = self.is_shared {
            fixed.insert("capacity_shared".into(), json!(b));
        }
        let mut adaptive = Map::new();
        let density = |flag: &str, s: &Option<String>, key: &str, m: &mut Map<String, Value>| {
            if let Some(s) = s {
                let d = parse_iops_per_capacity(s).map_err(|e| anyhow!("--{flag}: {e}"))?;
                m.insert(key.into(), json!(d.0));
            }
            anyhow::Ok(())
        };
        density(
            "expected-iops",
            &self.expected_iops,
            "expected_iops",
            &mut adaptive,
        )?;
        density("peak-iops", &self.peak_iops, "peak_iops", &mut adaptive)?;
        if let Some(n) = self.absolute_min_iops {
            adaptive.insert("absolute_min_iops".into(), json!(n));
        }
        for (flag, v, key) in [
            (
                "expected-iops-allocation",
                &self.expected_iops_allocation,
                "expected_iops_allocation",
            ),
            (
                "peak-iops-allocation",
                &self.peak_iops_allocation,
                "peak_iops_allocation",
            ),
        ] {
            if let Some(s) = v {
                let a: Allocation = s.parse().map_err(|e| anyhow!("--{flag}: {e}"))?;
                adaptive.insert(key.into(), json!(a.to_string()));
            }
        }
        if let Some(s) = &self.block_size {
            let b: BlockSize = s.parse().map_err(|e| anyhow!("--block-size: {e}"))?;
            adaptive.insert(
                "block_size".into(),
                json!(b.to_string().to_ascii_lowercase()),
            );
        }
        let burst = self.burst.burst_json()?;
        if let Some(p) = self.burst.provisioned_json()? {
            if !fixed.is_empty() || !adaptive.is_empty() || burst.is_some() {
                bail!(
                    "a provisioned policy (--model, --bucket-scale, --initial-percent) takes its \
                     limits from the model: give no fixed, adaptive or --burst-* flags with it"
                );
            }
            let mut out = Map::new();
            out.insert("provisioned".into(), p);
            return Ok(out);
        }
        if let Some(b) = burst {
            if !adaptive.is_empty() || (fixed.is_empty() && kind == Some("adaptive")) {
                adaptive.insert("burst".into(), b);
            } else {
                fixed.insert("burst".into(), b);
            }
        }
        let mut out = Map::new();
        match (fixed.is_empty(), adaptive.is_empty()) {
            (false, false) => bail!(
                "give either fixed limits (--max-throughput, --min-throughput, --is-shared) or \
                 adaptive ones (--expected-iops, --peak-iops, ...), not both"
            ),
            (false, true) => {
                out.insert("fixed".into(), Value::Object(fixed));
            }
            (true, false) => {
                out.insert("adaptive".into(), Value::Object(adaptive));
            }
            (true, true) => {}
        }
        Ok(out)
    }
}

/// Find a policy's uuid by name (or accept a uuid as is).
pub fn resolve(c: &Client, key: &str) -> anyhow::Result<String> {
    c.resolve(POLICIES, key, "QoS policy", "qoslab policy list")
}

/// The policy's kind as the API shows it: fixed, adaptive or provisioned.
pub fn kind(p: &Value) -> &'static str {
    if p.get("fixed").is_some() {
        "fixed"
    } else if p.get("provisioned").is_some() {
        "provisioned"
    } else {
        "adaptive"
    }
}

pub fn limits_text(p: &Value) -> String {
    let base = limits_base(p);
    let burst = p
        .get("fixed")
        .or_else(|| p.get("adaptive"))
        .and_then(|k| k.get("burst"))
        .map(burst_text)
        .unwrap_or_default();
    format!("{base}{burst}")
}

fn limits_base(p: &Value) -> String {
    if let Some(v) = p.get("provisioned") {
        return provisioned_text(v);
    }
    if let Some(f) = p.get("fixed") {
        let part = |iops: &Value, mbps: &Value| {
            let mut v = Vec::new();
            if iops.as_u64().unwrap_or(0) > 0 {
                v.push(format!("{}iops", iops));
            }
            if mbps.as_u64().unwrap_or(0) > 0 {
                v.push(format!("{}MB/s", mbps));
            }
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(",")
            }
        };
        format!(
            "max {} min {}{}",
            part(&f["max_throughput_iops"], &f["max_throughput_mbps"]),
            part(&f["min_throughput_iops"], &f["min_throughput_mbps"]),
            if f["capacity_shared"].as_bool() == Some(true) {
                " shared"
            } else {
                ""
            }
        )
    } else if let Some(a) = p.get("adaptive") {
        format!(
            "expected {}IOPS/TB peak {}IOPS/TB ({}) min {}iops block {}",
            a["expected_iops"],
            a["peak_iops"],
            a["peak_iops_allocation"].as_str().unwrap_or(""),
            a["absolute_min_iops"],
            a["block_size"].as_str().unwrap_or("")
        )
    } else {
        String::new()
    }
}

pub fn run(args: PolicyArgs) -> anyhow::Result<()> {
    let c = Client::connect(&args.api, &args.conn)?;
    let out = args.api.output;
    match args.cmd {
        PolicyCmd::Create { name, spec, svm } => {
            let mut body = spec.to_json()?;
            if body.is_empty() {
                bail!("give the limits: --max-throughput/--min-throughput for a fixed policy, --peak-iops (and --expected-iops ...) for an adaptive one, or --model for a provisioned one");
            }
            body.insert("name".into(), json!(name));
            if let Some(s) = svm {
                body.insert("svm".into(), json!({ "name": s }));
            }
            let r = c.call("POST", POLICIES, Some(&Value::Object(body)))?;
            show(&r, out);
        }
        PolicyCmd::List => {
            let path = "/api/storage/qos/policies?fields=*";
            let headers = ["Name", "Type", "Volumes", "Limits", "UUID"];
            print_records(&c, path, out, &headers, |p| {
                vec![
                    p["name"].as_str().unwrap_or("").to_string(),
                    kind(p).to_string(),
                    p["object_count"].to_string(),
                    limits_text(p),
                    p["uuid"].as_str().unwrap_or("").to_string(),
                ]
            })?;
        }
        PolicyCmd::Show { policy } => show(&c.get(POLICIES, &resolve(&c, &policy)?)?, out),
        PolicyCmd::Modify {
            policy,
            spec,
            new_name,
        } => {
            let u = resolve(&c, &policy)?;
            let mut body = spec.to_json()?;
            if body.is_empty() && spec.burst.burst_json()?.is_some() {
                // Only burst flags: they go into the policy's own kind.
                let cur = c.get(POLICIES, &u)?;
                body = spec.to_json_for(Some(kind(&cur)))?;
            }
            if let Some(n) = new_name {
                body.insert("name".into(), json!(n));
            }
            if body.is_empty() {
                bail!("nothing to change: give new limits or --new-name");
            }
            let r = c.call(
                "PATCH",
                &format!("{POLICIES}/{u}"),
                Some(&Value::Object(body)),
            )?;
            show(&r, out);
        }
        PolicyCmd::Delete { policy } => {
            let u = resolve(&c, &policy)?;
            c.delete(POLICIES, &u, "policy", &policy, out)?;
        }
    }
    Ok(())
}

fn show(p: &Value, out: Output) {
    if out == Output::Json {
        print_json(p);
        return;
    }
    let field = |k: &str| text(&p[k]);
    println!("Policy Group Name: {}", field("name"));
    println!("             UUID: {}", field("uuid"));
    if let Some(s) = p["svm"]["name"].as_str() {
        println!("              SVM: {s}");
    }
    println!("             Type: {}", kind(p));
    println!("           Limits: {}", limits_text(p));
    println!("          Volumes: {}", field("object_count"));
}
