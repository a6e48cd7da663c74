//! Burst credits and the provisioned file system end to end: real fio through the real
//! binary, measured from fio's own per-I/O completion log.

use serde_json::Value;

use crate::api_util::Api;
use crate::util::{fio, heavy, Node, TempDir};

/// Completion times (ms since the job started) from a fio per-I/O latency log.
fn completions(path: &std::path::Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading fio log {}: {e}", path.display()));
    let mut t: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split(',').next()?.trim().parse().ok())
        .collect();
    t.sort_unstable();
    t
}

/// The end of the burst: the start of the first full second of 100 ms bins all below the
/// midpoint of the burst and baseline rates (a momentary dip on a busy machine is not the
/// end); in seconds.
fn burst_end(t: &[u64], burst: f64, base: f64) -> Option<f64> {
    let last = *t.last()?;
    let mid = (burst + base) / 2.0 / 10.0;
    let mut bins = vec![0u64; (last / 100 + 1) as usize];
    for &ms in t {
        bins[(ms / 100) as usize] += 1;
    }
    (1..bins.len().saturating_sub(10))
        .find(|&i| bins[i..i + 10].iter().all(|&n| (n as f64) < mid))
        .map(|i| i as f64 / 10.0)
}

fn count_between(t: &[u64], from_ms: u64, to_ms: u64) -> usize {
    t.partition_point(|&x| x < to_ms) - t.partition_point(|&x| x < from_ms)
}

/// EBS gp2 on 100 GiB with its 5.4 M-credit bucket scaled to 1/400 (13,500 credits): the
/// computed burst is 13,500 / (3,000 - 300) = 5 s at 3,000 IOPS, then 300 IOPS.
#[test]
fn gp2_preset_bursts_for_its_computed_time_then_holds_baseline() {
    let _g = heavy();
    let node = Node::start(
        r#"
[[policy]]
name = "gp2"
provisioned = { model = "ebs-gp2", bucket_scale = 0.0025 }

[[volume]]
name = "vol"
size = "100GiB"
snapshot_reserve_percent = 0
policy = "gp2"
"#,
    );
    assert!(
        node.ready_output()
            .iter()
            .any(|l| l.contains("ceiling 300 IOPS") && l.contains("burst 3000 IOPS on 13500")),
        "ready output names the baseline and the burst: {:?}",
        node.ready_output()
    );
    let api = Api::new(&node.api_url());
    let before = api.get_ok("/api/storage/volumes?name=vol&fields=burst");
    assert_eq!(before["records"][0]["burst"]["iops"]["balance"], 13_500);
    let dir = TempDir::new("gp2-log");
    let log = dir.join("gp2");
    let r = fio(
        &node.uri("vol"),
        &[
            "--rw=randread",
            "--bs=4k",
            "--iodepth=16",
            "--size=256MiB",
            "--time_based",
            "--runtime=15",
            &format!("--write_lat_log={}", log.display()),
        ],
    );
    let t = completions(&dir.join("gp2_lat.1.log"));
    assert_eq!(t.len() as u64, r.ios("read"), "one log line per I/O");
    let end = burst_end(&t, 3_000.0, 300.0).expect("the burst ends");
    let during = count_between(&t, 0, 4_000) as f64 / 4.0;
    let base_from = ((end + 1.0) * 1000.0) as u64;
    let base_to = *t.last().unwrap();
    let baseline =
        count_between(&t, base_from, base_to) as f64 / ((base_to - base_from) as f64 / 1e3);
    eprintln!(
        "gp2 100 GiB, bucket 13,500: burst {end:.2} s (computed 5.00 s) at {during:.0} IOPS, then {baseline:.1} IOPS (baseline 300)"
    );
    assert!(
        (end - 5.0).abs() <= 0.25,
        "burst lasted {end:.2} s, computed 5 s (±5%)"
    );
    assert!(
        (during - 3_000.0).abs() <= 60.0,
        "burst rate {during:.0} IOPS, want 3,000"
    );
    assert!(
        (baseline - 300.0).abs() <= 3.0,
        "after the burst {baseline:.1} IOPS, want 300 ±1%"
    );
    // The API and /metrics show the empty bucket.
    let after = api.get_ok("/api/storage/volumes?name=vol&fields=burst");
    let b = &after["records"][0]["burst"]["iops"];
    assert!(b["balance"].as_u64().unwrap() < 100, "{b}");
    let metrics = api.get("/metrics").body;
    assert!(
        metrics.contains("qoslab_volume_burst_balance{volume=\"vol\""),
        "{metrics}"
    );
}

fn mb_s(r: &crate::util::FioResult, dir: &str) -> f64 {
    r.json.at("jobs.0").at(dir).at("bw_bytes").f64() / 1e6
}

/// The FSx 128 MB/s preset at a tenth of its rates: cached reads are held to the
/// single-flow limit (62.5 MB/s) on one connection and reach the network burst (125 MB/s)
/// on four, both above the disk baseline (12.8 MB/s).
#[test]
fn fsx_preset_cached_reads_one_vs_four_connections() {
    let _g = heavy();
    let node = Node::start_with(
        r#"
[[volume]]
name = "vol"
size = "64MiB"
"#,
        &[
            "--provisioned",
            "fsx-ontap-128",
            "--provisioned-scale",
            "0.004",
            "--provisioned-rate-scale",
            "0.1",
        ],
    );
    assert!(
        node.ready_output()
            .iter()
            .any(|l| l.contains("provisioned file system fsx-ontap-128")),
        "{:?}",
        node.ready_output()
    );
    // 32 MiB of data (the seed's two 16 MiB files) fits the 64 MB memory cache.
    let w = fio(
        &node.uri("vol"),
        &["--rw=write", "--bs=1M", "--iodepth=8", "--size=32MiB"],
    );
    // One connection reads the 32 MiB; four read 8 MiB each (fio's nbd engine opens one
    // connection per job).
    let read = |jobs: u32| {
        fio(
            &node.uri("vol"),
            &[
                "--rw=read",
                "--bs=1M",
                "--iodepth=8",
                &format!("--size={}MiB", 32 / jobs),
                "--time_based",
                "--runtime=2",
                &format!("--numjobs={jobs}"),
                "--offset_increment=8MiB",
            ],
        )
    };
    let one = mb_s(&read(1), "read");
    let four = mb_s(&read(4), "read");
    eprintln!(
        "fsx-ontap-128 x0.1 rates: write {:.1} MB/s; cached read 1 connection {one:.1} MB/s, 4 connections {four:.1} MB/s",
        mb_s(&w, "write")
    );
    assert!(
        (one - 62.5).abs() <= 62.5 * 0.08,
        "1 connection: {one:.1} MB/s, want 62.5 (single-flow limit)"
    );
    assert!(
        (four - 125.0).abs() <= 125.0 * 0.08,
        "4 connections: {four:.1} MB/s, want 125 (network burst)"
    );
    let cluster: Value = Api::new(&node.api_url()).get_ok("/api/cluster");
    let fs = &cluster["provisioned"];
    assert_eq!(fs["model"], "fsx-ontap-128");
    assert_eq!(fs["cache"]["read_bytes"]["miss"], 0, "{fs}");
    assert!(
        fs["cache"]["read_bytes"]["memory"].as_u64().unwrap() > 0,
        "{fs}"
    );
}

fn cli(node: &Node, args: &[&str]) -> crate::util::Out {
    crate::util::run(
        std::process::Command::new(crate::util::QOSLAB)
            .args(args)
            .arg("--url")
            .arg(node.api_url()),
        std::time::Duration::from_secs(30),
    )
}

/// The CLI creates burst and provisioned policies, shows them, modifies only a burst, and
/// `qoslab stats` shows a volume's bucket and the file system's resources.
#[test]
fn cli_burst_and_provisioned_policies() {
    let node = Node::start_with(
        "",
        &[
            "--provisioned",
            "fsx-ontap-128",
            "--provisioned-scale",
            "0.001",
        ],
    );
    let ok = |args: &[&str]| {
        let out = cli(&node, args);
        assert!(out.status.success(), "{args:?}: {out}");
        out.stdout
    };
    ok(&[
        "policy",
        "create",
        "sf",
        "--min-throughput",
        "50iops",
        "--max-throughput",
        "1000iops",
        "--burst-throughput",
        "1500iops",
        "--burst-duration",
        "60s",
    ]);
    ok(&[
        "policy",
        "create",
        "gp2",
        "--model",
        "ebs-gp2",
        "--bucket-scale",
        "1/10",
    ]);
    let list = ok(&["policy", "list"]);
    assert!(
        list.contains("burst 1500iops (60s at full burst, starts 100%)"),
        "{list}"
    );
    assert!(
        list.contains("provisioned") && list.contains("model ebs-gp2 bucket x0.1"),
        "{list}"
    );
    // Only a burst flag: it goes into the policy's own kind.
    ok(&["policy", "modify", "sf", "--burst-initial-percent", "50"]);
    assert!(ok(&["policy", "show", "sf"]).contains("starts 50%"));
    ok(&["policy", "modify", "sf", "--no-burst"]);
    assert!(!ok(&["policy", "show", "sf"]).contains("burst"));
    // Mixing a model with fixed limits is refused before any request.
    let out = cli(
        &node,
        &[
            "policy",
            "create",
            "x",
            "--model",
            "ebs-gp2",
            "--max-throughput",
            "5iops",
        ],
    );
    assert!(
        !out.status.success() && out.stderr.contains("provisioned policy"),
        "{out}"
    );
    ok(&[
        "volume",
        "create",
        "v",
        "--size",
        "100GiB",
        "--qos-policy",
        "gp2",
    ]);
    let stats = ok(&["stats", "--iterations", "1"]);
    assert!(
        stats.contains("Burst") && stats.contains("iops 100% constant"),
        "{stats}"
    );
    assert!(
        stats.contains("Provisioned file system fsx-ontap-128"),
        "{stats}"
    );
    assert!(
        stats.contains("network") && stats.contains("150.0MB/s"),
        "{stats}"
    );
    let json = ok(&["stats", "--iterations", "1", "--output", "json"]);
    let v: Value = serde_json::from_str(&json).expect("stats JSON");
    assert_eq!(v["records"][0]["burst"]["iops"]["bucket"], 540_000);
    assert_eq!(v["provisioned"]["model"], "fsx-ontap-128");
}
