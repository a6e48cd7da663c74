//! `qos policy-group ...`, `qos adaptive-policy-group ...` and
//! `qos statistics volume performance show`.

use std::io::Write;

use qos_core::{parse_iops_per_capacity, parse_throughput};
use serde_json::{json, Map, Value};

use super::parse::{err, opt, params, req, Given, Param, ShellError};
use super::{entries, no_match, sub, table, Shell, R};
use crate::http_client::enc;

const POLICIES: &str = "/api/storage/qos/policies";
const DEFAULT_SVM: &str = "qoslab";

pub fn run(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    match sub(
        w,
        &["policy-group", "adaptive-policy-group", "statistics"],
        "qos",
    )? {
        "policy-group" => group(sh, &w[1..], out, false),
        "adaptive-policy-group" => group(sh, &w[1..], out, true),
        _ => statistics(sh, &w[1..], out),
    }
}

fn group(sh: &Shell, w: &[String], out: &mut dyn Write, adaptive: bool) -> R<()> {
    let ctx = if adaptive {
        "qos adaptive-policy-group"
    } else {
        "qos policy-group"
    };
    let verb = sub(w, &["create", "modify", "show", "delete", "rename"], ctx)?;
    let args = &w[1..];
    match verb {
        "create" => create(sh, args, adaptive),
        "modify" => modify(sh, args, out, adaptive),
        "show" => show(sh, args, out, adaptive),
        "delete" => delete(sh, args, out, adaptive),
        _ => rename(sh, args, adaptive),
    }
}

const FIXED_SPEC: &[Param] = &[
    req("policy-group"),
    opt("vserver"),
    opt("max-throughput"),
    opt("min-throughput"),
    opt("is-shared"),
];

const ADAPTIVE_SPEC: &[Param] = &[
    req("policy-group"),
    opt("vserver"),
    opt("expected-iops"),
    opt("peak-iops"),
    opt("absolute-min-iops"),
    opt("expected-iops-allocation"),
    opt("peak-iops-allocation"),
    opt("block-size"),
];

fn bad_value(param: &str, v: &str, e: impl std::fmt::Display) -> ShellError {
    ShellError(format!("invalid value \"{v}\" for \"-{param}\": {e}"))
}

fn boolean(param: &str, v: &str) -> R<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad_value(param, v, "expected true or false")),
    }
}

/// `<integer>[IOPS[/{GB|TB}]]` (default TB), as IOPS per TB.
fn density(param: &str, v: &str) -> R<f64> {
    let t = v.trim();
    let per_tb = t.len() > 4 && t[t.len() - 4..].eq_ignore_ascii_case("iops");
    let t = if per_tb { &t[..t.len() - 4] } else { t };
    parse_iops_per_capacity(t)
        .map(|d| d.0)
        .map_err(|e| bad_value(param, v, e))
}

/// The `fixed` or `adaptive` object from the given parameters.
fn spec(g: &Given, adaptive: bool, creating: bool) -> R<Map<String, Value>> {
    let mut m = Map::new();
    if adaptive {
        for (p, key) in [
            ("expected-iops", "expected_iops"),
            ("peak-iops", "peak_iops"),
        ] {
            match g.get(p) {
                Some(v) => {
                    m.insert(key.into(), json!(density(p, v)?));
                }
                None if creating => return err(format!("Missing required parameter \"-{p}\"")),
                None => {}
            }
        }
        if let Some(v) = g.get("absolute-min-iops") {
            let n = v
                .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .parse::<u64>()
                .map_err(|e| bad_value("absolute-min-iops", v, e))?;
            m.insert("absolute_min_iops".into(), json!(n));
        }
        for (p, key) in [
            ("expected-iops-allocation", "expected_iops_allocation"),
            ("peak-iops-allocation", "peak_iops_allocation"),
        ] {
            if let Some(v) = g.get(p) {
                let a: qos_core::Allocation = v.parse().map_err(|e| bad_value(p, v, e))?;
                m.insert(key.into(), json!(a.to_string()));
            }
        }
        if let Some(v) = g.get("block-size") {
            let b: qos_core::BlockSize = v.parse().map_err(|e| bad_value("block-size", v, e))?;
            m.insert(
                "block_size".into(),
                json!(b.to_string().to_ascii_lowercase()),
            );
        }
    } else {
        for (p, iops, mbps) in [
            (
                "max-throughput",
                "max_throughput_iops",
                "max_throughput_mbps",
            ),
            (
                "min-throughput",
                "min_throughput_iops",
                "min_throughput_mbps",
            ),
        ] {
            if let Some(v) = g.get(p) {
                let t = parse_throughput(v).map_err(|e| bad_value(p, v, e))?;
                m.insert(iops.into(), json!(t.iops));
                m.insert(mbps.into(), json!(t.mbps));
            }
        }
        match g.get("is-shared") {
            // ONTAP's default for a new policy group: shared.
            None if creating => {
                m.insert("capacity_shared".into(), json!(true));
            }
            None => {}
            Some(v) if creating => {
                m.insert("capacity_shared".into(), json!(boolean("is-shared", v)?));
            }
            Some(_) => return err("\"-is-shared\" cannot be modified; create a new policy group"),
        }
    }
    Ok(m)
}

fn kind(adaptive: bool) -> &'static str {
    if adaptive {
        "adaptive"
    } else {
        "fixed"
    }
}

fn create(sh: &Shell, args: &[String], adaptive: bool) -> R<()> {
    let g = params(args, if adaptive { ADAPTIVE_SPEC } else { FIXED_SPEC })?;
    let name = g.get("policy-group").unwrap_or_default();
    let mut body = Map::new();
    body.insert("name".into(), json!(name));
    if let Some(v) = g.get("vserver") {
        body.insert("svm".into(), json!({ "name": v }));
    }
    body.insert(
        kind(adaptive).into(),
        Value::Object(spec(&g, adaptive, true)?),
    );
    sh.call("POST", POLICIES, Some(&Value::Object(body)))?;
    Ok(())
}

/// The query selecting policy groups of one kind by `-policy-group` / `-vserver`.
fn selector(g: &Given, adaptive: bool) -> String {
    // A field only that kind has: ONTAP keeps the two kinds in separate command sets.
    let mut q = String::from(if adaptive {
        "adaptive.peak_iops=*"
    } else {
        "fixed.capacity_shared=*"
    });
    if let Some(n) = g.get("policy-group") {
        q.push_str(&format!("&name={}", enc(n)));
    }
    if let Some(v) = g.get("vserver") {
        q.push_str(&format!("&svm.name={}", enc(v)));
    }
    q
}

fn modify(sh: &Shell, args: &[String], out: &mut dyn Write, adaptive: bool) -> R<()> {
    let g = params(args, if adaptive { ADAPTIVE_SPEC } else { FIXED_SPEC })?;
    let m = spec(&g, adaptive, false)?;
    if m.is_empty() {
        return err("nothing to modify: give the limits to change");
    }
    let body = json!({ kind(adaptive): m });
    on_selected(sh, "PATCH", Some(&body), &g, adaptive, out, "modified")
}

fn delete(sh: &Shell, args: &[String], out: &mut dyn Write, adaptive: bool) -> R<()> {
    let spec = [req("policy-group"), opt("vserver"), opt("force")];
    let g = params(args, &spec)?;
    on_selected(sh, "DELETE", None, &g, adaptive, out, "deleted")
}

/// `method` (with `body`) on the policy groups `g` selects, then ONTAP's "N entries were
/// VERB" (its no-match error when none were).
fn on_selected(
    sh: &Shell,
    method: &str,
    body: Option<&Value>,
    g: &Given,
    adaptive: bool,
    out: &mut dyn Write,
    verb: &str,
) -> R<()> {
    let r = sh.call(
        method,
        &format!("{POLICIES}?{}", selector(g, adaptive)),
        body,
    )?;
    let n = r["num_records"].as_u64().unwrap_or(0) as usize;
    if n == 0 {
        return Err(no_match());
    }
    entries(out, n, verb);
    Ok(())
}

fn rename(sh: &Shell, args: &[String], adaptive: bool) -> R<()> {
    let spec = [req("policy-group"), req("new-name"), opt("vserver")];
    let g = params(args, &spec)?;
    let recs = sh.records(&format!("{POLICIES}?{}", selector(&g, adaptive)))?;
    let [one] = recs.as_slice() else {
        return Err(if recs.is_empty() {
            no_match()
        } else {
            ShellError("rename takes one policy group, not a query".into())
        });
    };
    let uuid = one["uuid"].as_str().unwrap_or_default();
    let body = json!({"name": g.get("new-name")});
    sh.call("PATCH", &format!("{POLICIES}/{uuid}"), Some(&body))?;
    Ok(())
}

/// `500IOPS`, `100MB/S`, `500IOPS,100MB/S`, `0` — ONTAP's throughput display.
fn throughput(iops: &Value, mbps: &Value) -> String {
    let (i, m) = (iops.as_u64().unwrap_or(0), mbps.as_u64().unwrap_or(0));
    match (i, m) {
        (0, 0) => "0".into(),
        (i, 0) => format!("{i}IOPS"),
        (0, m) => format!("{m}MB/S"),
        (i, m) => format!("{i}IOPS,{m}MB/S"),
    }
}

/// IOPS per TB as ONTAP shows densities: per GB when it is a whole number per GB.
fn density_text(v: &Value) -> String {
    let tb = v.as_f64().unwrap_or(0.0);
    if tb > 0.0 && (tb / 1000.0).fract() == 0.0 {
        format!("{}IOPS/GB", tb / 1000.0)
    } else if tb.fract() == 0.0 {
        format!("{tb}IOPS/TB")
    } else {
        format!("{tb:.2}IOPS/TB")
    }
}

fn svm_name(p: &Value) -> String {
    p["svm"]["name"].as_str().unwrap_or(DEFAULT_SVM).to_string()
}

/// The fields `qos policy-group show -fields` knows.
const FIXED_FIELDS: &[&str] = &[
    "policy-group",
    "vserver",
    "uuid",
    "class",
    "num-workloads",
    "max-throughput",
    "min-throughput",
    "is-shared",
];

/// The fields `qos adaptive-policy-group show -fields` knows.
const ADAPTIVE_FIELDS: &[&str] = &[
    "policy-group",
    "vserver",
    "uuid",
    "num-workloads",
    "expected-iops",
    "peak-iops",
    "absolute-min-iops",
    "expected-iops-allocation",
    "peak-iops-allocation",
];

/// A policy's fields by their clustershell names, as `-fields` prints them.
fn fields(p: &Value, adaptive: bool) -> Vec<(&'static str, String)> {
    let text = |v: &Value| v.as_str().unwrap_or("-").to_string();
    // The API's enum values (allocated_space) as the clustershell writes them.
    let word = |v: &Value| text(v).replace('_', "-");
    let mut f = vec![
        ("policy-group", text(&p["name"])),
        ("vserver", svm_name(p)),
        ("uuid", text(&p["uuid"])),
        (
            "num-workloads",
            p["object_count"].as_u64().unwrap_or(0).to_string(),
        ),
    ];
    if adaptive {
        let a = &p["adaptive"];
        f.extend([
            ("expected-iops", density_text(&a["expected_iops"])),
            ("peak-iops", density_text(&a["peak_iops"])),
            (
                "absolute-min-iops",
                format!("{}IOPS", a["absolute_min_iops"].as_u64().unwrap_or(0)),
            ),
            (
                "expected-iops-allocation",
                text(&a["expected_iops_allocation"]),
            ),
            ("peak-iops-allocation", word(&a["peak_iops_allocation"])),
        ]);
    } else {
        let x = &p["fixed"];
        let max = throughput(&x["max_throughput_iops"], &x["max_throughput_mbps"]);
        f.extend([
            ("class", "user-defined".to_string()),
            (
                "max-throughput",
                if max == "0" { "INF".into() } else { max },
            ),
            (
                "min-throughput",
                throughput(&x["min_throughput_iops"], &x["min_throughput_mbps"]),
            ),
            ("is-shared", (x["capacity_shared"] == true).to_string()),
        ]);
    }
    f
}

fn show(sh: &Shell, args: &[String], out: &mut dyn Write, adaptive: bool) -> R<()> {
    let spec = [opt("policy-group"), opt("vserver"), opt("fields")];
    let g = params(args, &spec)?;
    let recs = sh.records(&format!(
        "{POLICIES}?fields=*&order_by=name&{}",
        selector(&g, adaptive)
    ))?;
    if recs.is_empty() {
        return Err(no_match());
    }
    if let Some(wanted) = g.get("fields") {
        let rows: Vec<_> = recs.iter().map(|p| fields(p, adaptive)).collect();
        let known = if adaptive {
            ADAPTIVE_FIELDS
        } else {
            FIXED_FIELDS
        };
        return super::fields_table(out, &["policy-group"], known, wanted, &rows);
    }
    let count = |p: &Value| p["object_count"].as_u64().unwrap_or(0).to_string();
    if adaptive {
        let rows: Vec<Vec<String>> = recs
            .iter()
            .map(|p| {
                let a = &p["adaptive"];
                vec![
                    p["name"].as_str().unwrap_or("").to_string(),
                    svm_name(p),
                    count(p),
                    density_text(&a["expected_iops"]),
                    density_text(&a["peak_iops"]),
                ]
            })
            .collect();
        table(
            out,
            &["Name", "Vserver", "Wklds", "Expected IOPS", "Peak IOPS"],
            &rows,
        );
    } else {
        let rows: Vec<Vec<String>> = recs
            .iter()
            .map(|p| {
                let f = &p["fixed"];
                vec![
                    p["name"].as_str().unwrap_or("").to_string(),
                    svm_name(p),
                    "user-defined".into(),
                    count(p),
                    format!(
                        "{}-{}",
                        throughput(&f["min_throughput_iops"], &f["min_throughput_mbps"]),
                        match throughput(&f["max_throughput_iops"], &f["max_throughput_mbps"]) {
                            z if z == "0" => "INF".to_string(),
                            t => t,
                        }
                    ),
                    if f["capacity_shared"] == true {
                        "true"
                    } else {
                        "false"
                    }
                    .into(),
                ]
            })
            .collect();
        table(
            out,
            &[
                "Name",
                "Vserver",
                "Class",
                "Wklds",
                "Throughput",
                "Is Shared",
            ],
            &rows,
        );
    }
    Ok(())
}

fn us(x: u64) -> String {
    if x >= 1000 {
        format!("{:.2}ms", x as f64 / 1000.0)
    } else {
        format!("{x}.00us")
    }
}

/// `qos statistics volume performance show`: refreshes every second until interrupted,
/// or `-iterations` times, like ONTAP.
fn statistics(sh: &Shell, w: &[String], out: &mut dyn Write) -> R<()> {
    sub(w, &["volume"], "qos statistics")?;
    sub(&w[1..], &["performance"], "qos statistics volume")?;
    sub(&w[2..], &["show"], "qos statistics volume performance")?;
    let spec = [
        opt("vserver"),
        opt("volume"),
        opt("iterations"),
        opt("rows"),
        opt("refresh-display"),
    ];
    let g = params(&w[3..], &spec)?;
    let num = |p: &str, d: u64| -> R<u64> {
        g.get(p)
            .map(|v| v.parse::<u64>().map_err(|e| bad_value(p, v, e)))
            .unwrap_or(Ok(d))
    };
    let iterations = num("iterations", 0)?;
    let rows = num("rows", 10)? as usize;
    let mut q = String::from("fields=metric,svm&order_by=metric.iops.total%20desc,name");
    if let Some(v) = g.get("volume") {
        q.push_str(&format!("&name={}", enc(v)));
    }
    if let Some(v) = g.get("vserver") {
        q.push_str(&format!("&svm.name={}", enc(v)));
    }
    let mut i = 0;
    loop {
        let recs = sh.records(&format!("/api/storage/volumes?{q}"))?;
        let total = crate::stats_cmd::totals(&recs);
        let t = |k: &str| total[k].as_u64().unwrap_or(0);
        let line = |name: &str, iops: u64, bps: u64, lat: u64| {
            format!(
                "{name:<24} {:>6} {iops:>8} {:>16} {:>10}",
                "-",
                format!("{:.2}MB/s", bps as f64 / 1048576.0),
                us(lat)
            )
        };
        let mut text = format!(
            "{:<24} {:>6} {:>8} {:>16} {:>10}\n{} {} {} {} {}\n",
            "Workload",
            "ID",
            "IOPS",
            "Throughput",
            "Latency",
            "-".repeat(24),
            "-".repeat(6),
            "-".repeat(8),
            "-".repeat(16),
            "-".repeat(10)
        );
        text.push_str(&line("-total-", t("iops"), t("throughput"), t("latency")));
        text.push('\n');
        for v in recs.iter().take(rows) {
            let m = &v["metric"];
            let g = |a: &str| m[a]["total"].as_u64().unwrap_or(0);
            text.push_str(&line(
                v["name"].as_str().unwrap_or(""),
                g("iops"),
                g("throughput"),
                g("latency"),
            ));
            text.push('\n');
        }
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
        i += 1;
        if iterations != 0 && i >= iterations {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(density("x", "5IOPS/GB").unwrap(), 5000.0);
        assert_eq!(density("x", "5000").unwrap(), 5000.0);
        assert_eq!(density("x", "5000IOPS").unwrap(), 5000.0);
        assert!(density("x", "5IOPS/PB").unwrap_err().0.contains("\"-x\""));
        assert_eq!(density_text(&json!(50000)), "50IOPS/GB");
        assert_eq!(density_text(&json!(6144)), "6144IOPS/TB");
        assert_eq!(throughput(&json!(500), &json!(0)), "500IOPS");
        assert_eq!(throughput(&json!(500), &json!(100)), "500IOPS,100MB/S");
        assert_eq!(us(347), "347.00us");
        assert_eq!(us(1500), "1.50ms");
    }
}
