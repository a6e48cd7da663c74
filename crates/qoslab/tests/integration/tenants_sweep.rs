//! The tenants family end to end through `qoslab bench` (seed 004), as root: git and redis
//! tenants on mounted ext4 file systems over the embedded node, swept over 1, 2 and 4
//! tenants per class, every table stored, the report's degradation curves drawn in
//! headless Chromium; and the gold/bronze story on an emulated controller.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::bench_util::{cell, json_run, qoslab, succeeded, table, text, Dir};
use crate::util::require_tool;

/// Chromium's DOM dump of a page (headless, 60 s limit).
fn chromium_dom(profile: &Path, page: &Path) -> String {
    let args = ["--virtual-time-budget=5000", "--dump-dom"];
    crate::report::chromium(profile, &args, &crate::report::url(page)).0
}

#[test]
fn a_1_2_4_sweep_with_git_and_redis_stores_every_table_and_draws_its_curves() {
    require_tool("chromium");
    let _h = crate::util::heavy();
    let dir = Dir::new("tenants-sweep");
    let plan = dir.write(
        "apps.toml",
        &format!(
            r#"
[bench]
name = "tenants-apps"

[[policy]]
name = "std"
fixed = {{ max_throughput_iops = 5000 }}

{tenants}
[[class]]
name = "git"
policy = "std"
size = "128MiB"
app = "git"
git = {{ files = 400, bytes = "6MiB", seed = 4 }}

[[class]]
name = "redis"
policy = "std"
size = "128MiB"
app = "redis"
redis = {{ records = 1000, operations = 2000, threads = 2 }}

# Too small for its repository: every iteration fails with ENOSPC, counted, the others pass.
[[class]]
name = "tiny"
size = "16MiB"
app = "git"
git = {{ files = 400, bytes = "24MiB", seed = 5 }}
"#,
            tenants = crate::tenants_util::tenants_table(&dir, "[1, 2, 4]", ""),
        ),
    );
    let plan = plan.to_str().unwrap();
    let out = succeeded(&qoslab(
        &dir,
        &["bench", plan, "--db", "r.db"],
        Duration::from_secs(600),
    ));
    for needle in [
        "| instance | total | failed | fail rate (%) |",
        "| instance\\throughput | load | run |",
        "| project | time |",
    ] {
        assert!(
            out.contains(needle),
            "{needle} missing from the summary:\n{out}"
        );
    }
    assert!(
        mounts::sys::mounts_under(dir.path()).is_empty(),
        "nothing stays mounted"
    );
    let run = json_run(&dir, "r.db");
    let s = table(&run, "tenants", "summary");
    let rows = s["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9, "3 points x 3 classes: {s}");
    for r in rows {
        if cell(s, r, "class") == "tiny" {
            assert_eq!(cell(s, r, "fail_rate_pct"), 100.0, "{r}");
            continue;
        }
        assert_eq!(cell(s, r, "failed"), 0, "{r}");
        assert!(cell(s, r, "mean").as_f64().unwrap() > 0.0, "{r}");
        assert!(
            cell(s, r, "host_cpu_pct").is_number() && cell(s, r, "node_cpu_pct").is_number(),
            "{r}"
        );
    }
    let four: Vec<&Value> = rows.iter().filter(|r| cell(s, r, "tenants") == 4).collect();
    assert_eq!(cell(s, four[0], "iterations"), 4);
    let t = table(&run, "tenants", "tenant iterations");
    let trows = t["rows"].as_array().unwrap();
    assert_eq!(trows.len(), 3 * (1 + 2 + 4));
    for r in trows.iter().filter(|r| cell(t, r, "class") == "tiny") {
        assert_eq!(cell(t, r, "failure"), "enospc", "{r}");
        assert!(
            cell(t, r, "message")
                .as_str()
                .unwrap()
                .contains("No space left on device"),
            "{r}"
        );
    }
    assert!(
        out.contains("| 4 | 4 | 4 | 100.0 |"),
        "tiny's failures in the seed's layout:\n{out}"
    );
    for name in [
        "git (git): failures",
        "git (git): time (s)",
        "redis (redis): failures",
        "redis (redis): throughput (ops/s)",
        "tiny (git): failures",
    ] {
        let t = table(&run, "tenants-seed", name);
        assert_eq!(t["rows"].as_array().unwrap().len(), 3, "{name}: {t}");
    }
    // The report: its degradation curves, rendered by a real browser.
    let o = qoslab(
        &dir,
        &["report", "1", "--db", "r.db", "-o", "report.html"],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let dom = chromium_dom(&dir.path().join("profile"), &dir.path().join("report.html"));
    for title in [
        "git: seconds per iteration vs tenants",
        "redis run-phase ops/s per tenant vs tenants",
        "Failed iterations (%) vs tenants",
    ] {
        assert!(
            dom.contains(title),
            "chart {title:?} missing from the rendered report"
        );
    }
    assert!(dom.matches("<svg").count() >= 5, "the charts are drawn");
}

#[test]
fn gold_holds_its_floor_while_bronze_per_tenant_throughput_falls() {
    let dir = Dir::new("tenants-gold");
    let plan = dir.write(
        "gb.toml",
        r#"
[[policy]]
name = "gold"
fixed = { min_throughput_iops = 100 }

[tenants]
capacity_iops = 2000
points = [1, 4, 16]
iterations = 1
runtime = "3s"
ramp = "1s"

[[class]]
name = "gold"
policy = "gold"
size = "64MiB"
app = "fio"
rate_iops = 100
expect_floor = 0.98

[[class]]
name = "bronze"
size = "64MiB"
app = "fio"
"#,
    );
    let _h = crate::util::heavy();
    // Exit 0: the floor verdicts pass.
    let plan = plan.to_str().unwrap();
    let out = succeeded(&qoslab(
        &dir,
        &["bench", plan, "--db", "r.db"],
        Duration::from_secs(300),
    ));
    let run = json_run(&dir, "r.db");
    let s = table(&run, "tenants", "summary");
    let rows = s["rows"].as_array().unwrap();
    let per = |class: &str, col: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| cell(s, r, "class") == class)
            .map(|r| cell(s, r, col).as_f64().unwrap())
            .collect()
    };
    for min in per("gold", "min") {
        assert!(min >= 98.0, "gold within 2% of its floor: {min}");
    }
    let bronze = per("bronze", "median");
    assert!(
        bronze[0] > 2.0 * bronze[1] && bronze[1] > 2.0 * bronze[2],
        "bronze per tenant falls: {bronze:?}"
    );
    assert_eq!(per("gold", "floor_iops"), [100.0, 100.0, 100.0]);
    // The tool sets' node and host load per point: the node's threads served 2000 IOPS
    // at every point; each point's host series is stored with its first job.
    for (n, node) in [1, 4, 16].iter().zip(per("gold", "node_cpu_pct")) {
        assert!(node > 0.0, "point {n}: the node's CPU: {s}");
    }
    assert!(per("gold", "host_cpu_pct").iter().all(|h| *h > 0.0));
    assert!(per("gold", "rss_peak_mib").iter().all(|m| *m > 1.0));
    let load = table(&run, "tenants-seed", "load (tool sets): node and host");
    assert_eq!(load["rows"].as_array().unwrap().len(), 3, "{load}");
    assert!(out.contains("load: node"), "{out}");
    assert!(out.contains("### load (tool sets): node and host"), "{out}");
    let jobs = run["jobs"].as_array().unwrap();
    for n in [1, 4, 16] {
        let job = jobs
            .iter()
            .find(|j| j["name"] == format!("n{n}/gold"))
            .unwrap_or_else(|| panic!("no job n{n}/gold"));
        // Each class job is diagnosed from the node's counters and the point's tool sets.
        let b = job["diagnosis"]["bottleneck"].as_str().unwrap_or_default();
        assert!(!b.is_empty() && b != "not-measured", "point {n}: {job}");
        let series = run["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["job_id"] == job["id"])
            .unwrap_or_else(|| panic!("no series for point {n}"));
        let samples = series["hosts"][0]["samples"].as_array().unwrap();
        assert!(samples.len() >= 3, "point {n}: {samples:?}");
        assert!(samples
            .iter()
            .flat_map(|x| x["procs"].as_array().unwrap())
            .any(|p| p["role"] == "node" && p["name"] == "qoslab-node threads"));
    }
}
