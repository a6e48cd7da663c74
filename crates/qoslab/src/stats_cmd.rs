//! `qoslab stats`: a refreshing top-N table like ONTAP's
//! `qos statistics volume performance show`.

use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use crate::http_client::{print_json, ApiArgs, Client, ConnArgs, Output};

#[derive(Args)]
#[command(after_help = "\
Columns: Workload (volume), Policy, IOPS, Throughput (MB = 2^20 bytes), Latency (mean, over
the last second), QoS Max / QoS Min (mean time queued by the ceiling / behind floors), Burst
(for volumes with burst credits: the bucket's balance in percent and the time until it is
empty at the current rate, or its state: accruing, constant).
Rows are sorted by IOPS; the first row is the total. A node emulating a provisioned file
system (serve --provisioned) also shows its resources: use, baseline, burst, balance.

EXAMPLES:
  qoslab stats                       # refresh every second until interrupted
  qoslab stats --iterations 5 --rows 10")]
pub struct StatsArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    /// Number of refreshes (0: until interrupted).
    #[arg(long, default_value_t = 0)]
    iterations: u64,
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Show at most this many volumes (the busiest).
    #[arg(long, default_value_t = 20)]
    rows: usize,
}

pub fn run(args: StatsArgs) -> anyhow::Result<()> {
    if !(args.interval > 0.0 && args.interval.is_finite()) {
        anyhow::bail!("--interval must be a positive number of seconds");
    }
    let c = Client::connect(&args.api, &args.conn)?;
    let mut i = 0u64;
    loop {
        let r = c.call("GET", "/api/storage/volumes?fields=metric,qos,burst", None)?;
        let fs = c.call("GET", "/api/cluster", None)?["provisioned"].clone();
        let mut recs: Vec<Value> = r["records"].as_array().cloned().unwrap_or_default();
        recs.sort_by(|a, b| {
            let f = |v: &Value| v["metric"]["iops"]["total"].as_u64().unwrap_or(0);
            f(b).cmp(&f(a)).then_with(|| {
                a["name"]
                    .as_str()
                    .unwrap_or("")
                    .cmp(b["name"].as_str().unwrap_or(""))
            })
        });
        let total = totals(&recs);
        recs.truncate(args.rows);
        if args.api.output == Output::Json {
            let mut out = json!({"total": total, "records": recs});
            if !fs.is_null() {
                out["provisioned"] = fs;
            }
            print_json(&out);
        } else {
            print!("{}", table(&total, &recs));
            if !fs.is_null() {
                print!("{}", fs_table(&fs));
            }
        }
        i += 1;
        if args.iterations != 0 && i >= args.iterations {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs_f64(args.interval));
    }
}

pub(crate) fn totals(recs: &[Value]) -> Value {
    let sum = |path: [&str; 3]| -> u64 {
        recs.iter()
            .map(|v| v[path[0]][path[1]][path[2]].as_u64().unwrap_or(0))
            .sum()
    };
    let iops = sum(["metric", "iops", "total"]);
    // Latency: IOPS-weighted mean.
    let weighted = |a: &str, b: &str| -> u64 {
        if iops == 0 {
            return 0;
        }
        let s: f64 = recs
            .iter()
            .map(|v| {
                v["metric"]["iops"]["total"].as_u64().unwrap_or(0) as f64
                    * v["metric"][a][b].as_u64().unwrap_or(0) as f64
            })
            .sum();
        (s / iops as f64).round() as u64
    };
    json!({
        "iops": iops,
        "throughput": sum(["metric", "throughput", "total"]),
        "latency": weighted("latency", "total"),
        "qos_ceiling": weighted("qos_latency", "ceiling"),
        "qos_floor": weighted("qos_latency", "floor"),
    })
}

fn us(x: u64) -> String {
    if x >= 1000 {
        format!("{:.2}ms", x as f64 / 1000.0)
    } else {
        format!("{x}us")
    }
}

fn mbs(bytes: u64) -> String {
    format!("{:.2}MB/s", bytes as f64 / 1048576.0)
}

fn table(total: &Value, recs: &[Value]) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "{:<24} {:<16} {:>9} {:>14} {:>10} {:>10} {:>10} {:>16}\n",
        "Workload", "Policy", "IOPS", "Throughput", "Latency", "QoS Max", "QoS Min", "Burst"
    ));
    o.push_str(&format!(
        "{} {} {} {} {} {} {} {}\n",
        "-".repeat(24),
        "-".repeat(16),
        "-".repeat(9),
        "-".repeat(14),
        "-".repeat(10),
        "-".repeat(10),
        "-".repeat(10),
        "-".repeat(16)
    ));
    let g = |v: &Value| v.as_u64().unwrap_or(0);
    o.push_str(&format!(
        "{:<24} {:<16} {:>9} {:>14} {:>10} {:>10} {:>10} {:>16}\n",
        "-total-",
        "-",
        g(&total["iops"]),
        mbs(g(&total["throughput"])),
        us(g(&total["latency"])),
        us(g(&total["qos_ceiling"])),
        us(g(&total["qos_floor"])),
        "-"
    ));
    for v in recs {
        let m = &v["metric"];
        o.push_str(&format!(
            "{:<24} {:<16} {:>9} {:>14} {:>10} {:>10} {:>10} {:>16}\n",
            v["name"].as_str().unwrap_or(""),
            v["qos"]["policy"]["name"].as_str().unwrap_or("-"),
            g(&m["iops"]["total"]),
            mbs(g(&m["throughput"]["total"])),
            us(g(&m["latency"]["total"])),
            us(g(&m["qos_latency"]["ceiling"])),
            us(g(&m["qos_latency"]["floor"])),
            burst_cell(&v["burst"])
        ));
    }
    o.push('\n');
    o
}

/// "iops 42% 120s", "bytes 100% accruing", or "-".
fn burst_cell(b: &Value) -> String {
    let Some(m) = b.as_object() else {
        return "-".into();
    };
    m.iter()
        .map(|(dim, d)| {
            let pct = d["percent"].as_f64().unwrap_or(0.0);
            let when = match d["time_to_empty_s"].as_f64() {
                Some(s) => secs(s),
                None => d["state"].as_str().unwrap_or("").to_string(),
            };
            format!("{dim} {pct:.0}% {when}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn secs(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1}h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.1}min", s / 60.0)
    } else {
        format!("{s:.1}s")
    }
}

fn rate(x: f64, unit: &str) -> String {
    if unit == "bytes" {
        format!("{:.1}MB/s", x / 1e6)
    } else {
        format!("{x:.0}iops")
    }
}

/// The provisioned file system's resources (rates in AWS's MB/s = 10^6 bytes, as its tables).
fn fs_table(fs: &Value) -> String {
    let mut o = format!(
        "Provisioned file system {} (MB = 10^6 bytes, as AWS's tables)\n{:<10} {:>12} {:>12} {:>12} {:>9} {:>12}\n",
        fs["model"].as_str().unwrap_or("?"),
        "Resource",
        "Use",
        "Baseline",
        "Burst",
        "Balance",
        "Empty in"
    );
    for r in fs["resources"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let unit = r["unit"].as_str().unwrap_or("");
        let c = &r["credits"];
        o.push_str(&format!(
            "{:<10} {:>12} {:>12} {:>12} {:>9} {:>12}\n",
            r["name"].as_str().unwrap_or(""),
            rate(r["use"].as_f64().unwrap_or(0.0), unit),
            rate(r["baseline"].as_f64().unwrap_or(0.0), unit),
            c["burst"].as_f64().map_or("-".into(), |b| rate(b, unit)),
            c["percent"]
                .as_f64()
                .map_or("-".into(), |p| format!("{p:.0}%")),
            match (c["time_to_empty_s"].as_f64(), c["state"].as_str()) {
                (Some(s), _) => secs(s),
                (None, Some(st)) => st.to_string(),
                _ => "-".into(),
            }
        ));
    }
    let rb = &fs["cache"]["read_bytes"];
    o.push_str(&format!(
        "cache reads: memory {:.1}MB, nvme {:.1}MB, miss {:.1}MB\n\n",
        rb["memory"].as_f64().unwrap_or(0.0) / 1e6,
        rb["nvme"].as_f64().unwrap_or(0.0) / 1e6,
        rb["miss"].as_f64().unwrap_or(0.0) / 1e6
    ));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_row_weights_latency_by_iops() {
        let recs = vec![
            json!({"name": "a", "metric": {"iops": {"total": 300}, "throughput": {"total": 10}, "latency": {"total": 100}, "qos_latency": {"ceiling": 0, "floor": 0}}}),
            json!({"name": "b", "metric": {"iops": {"total": 100}, "throughput": {"total": 5}, "latency": {"total": 500}, "qos_latency": {"ceiling": 400, "floor": 0}}}),
        ];
        let t = totals(&recs);
        assert_eq!(t["iops"], 400);
        assert_eq!(t["throughput"], 15);
        assert_eq!(t["latency"], 200);
        assert_eq!(t["qos_ceiling"], 100);
        let text = table(&t, &recs);
        assert!(
            text.lines().nth(2).unwrap().starts_with("-total-"),
            "{text}"
        );
    }

    #[test]
    fn burst_and_resources() {
        let b = json!({"iops": {"percent": 41.6, "time_to_empty_s": 125.0, "state": "bursting"}});
        assert_eq!(burst_cell(&b), "iops 42% 2.1min");
        let b = json!({"bytes": {"percent": 100.0, "time_to_empty_s": null, "state": "constant"}});
        assert_eq!(burst_cell(&b), "bytes 100% constant");
        assert_eq!(burst_cell(&Value::Null), "-");
        let fs = json!({"model": "fsx-ontap-128", "resources": [
            {"name": "network", "unit": "bytes", "baseline": 150000000, "use": 600000000.0,
             "credits": {"burst": 1250000000, "percent": 50.0, "time_to_empty_s": 30.0, "state": "bursting"}},
            {"name": "ssd_iops", "unit": "iops", "baseline": 3072, "use": 0.0, "credits": null}],
            "cache": {"read_bytes": {"memory": 1000000, "nvme": 0, "miss": 0}}});
        let t = fs_table(&fs);
        assert!(t.contains("network"), "{t}");
        assert!(
            t.contains("600.0MB/s") && t.contains("1250.0MB/s") && t.contains("30.0s"),
            "{t}"
        );
        assert!(t.contains("3072iops"), "{t}");
    }
}
