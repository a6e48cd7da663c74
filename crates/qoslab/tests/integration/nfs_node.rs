//! NAS volumes on the node (`qoslab serve --listen-nfs`) with real NFS clients: the REST
//! API's life cycle of a NAS volume and its export policy with libnfs's utilities, seed
//! 000's QoS rows over NFS with fio's nfs engine (and `qoslab stats` showing the NAS
//! volume mid-run), seed 003's single-flow limit against
//! several connections on the emulated FSx, and kill -9 during COMMITted writes.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::api_util::Api;
use crate::json::Json;
use crate::nfs_util::committed_writes_survive_kill9;
use crate::realtime::RealTime;
use crate::util::{heavy, pattern, run, Node, TempDir, QOSLAB};

/// The node's NFS port, from its `qoslab: nfs: ADDR` line.
pub fn nfs_port(n: &Node) -> u16 {
    n.listener_port("nfs")
}

/// A libnfs URL for `path` on the node.
pub fn nfs_url(n: &Node, path: &str) -> String {
    format!(
        "nfs://127.0.0.1{path}?nfsport={p}&mountport={p}",
        p = nfs_port(n)
    )
}

const NFS: &[&str] = &["--listen-nfs", "127.0.0.1:0"];

/// fio's nfs engine on `url` (JSON report, every job's error checked); `args` are job
/// options. Jobs report as a group.
pub fn fio_nfs(url: &str, args: &[&str]) -> Json {
    fio_json(&["--ioengine=nfs", &format!("--nfs_url={url}")], args)
}

/// fio with `target` (its engine and what it reaches) and job options `args`: its JSON
/// report, fio's exit status and every job's error checked. Jobs report as a group.
pub fn fio_json(target: &[&str], args: &[&str]) -> Json {
    let mut c = Command::new("fio");
    c.args([
        "--name=job",
        "--output-format=json",
        "--group_reporting",
        "--verify_state_save=0",
    ])
    .args(target)
    .args(args)
    .current_dir(std::env::temp_dir());
    let out = run(&mut c, Duration::from_secs(180));
    let json = Json::parse_from_first_brace(&out.stdout)
        .unwrap_or_else(|e| panic!("fio printed no JSON report ({e})\n{out}"));
    assert!(out.status.success(), "{out}");
    for job in json.at("jobs").arr() {
        assert_eq!(job.at("error").u64(), 0, "{out}");
    }
    json
}

/// Lay out `file` (`size`) on the export at `url` at QD1: fio's nfs engine cannot lay out a
/// file it is about to read, and ends a sized job early at iodepth > 1 (docs/NFS.md).
pub fn prefill(url: &str, file: &str, size: &str) {
    fio_nfs(
        url,
        &[
            &format!("--filename={file}"),
            &format!("--size={size}"),
            "--bs=1M",
            "--rw=write",
            "--iodepth=1",
        ],
    );
}

/// `got` within `pct` of `want`: above it fails the test (a limit exceeded); below it is a
/// shortfall a starved host may explain (`rt` decides at the test's end).
pub fn within(rt: &mut RealTime, what: &str, got: f64, want: f64, pct: f64) {
    assert!(
        got <= want * (1.0 + pct / 100.0),
        "{what}: {got:.2}, want {want} +-{pct}%"
    );
    if got < want * (1.0 - pct / 100.0) {
        rt.short(format!("{what}: {got:.2}, want {want} +-{pct}%"));
    }
}

const SEED000: &str = r#"
[[policy]]
name = "QoS_500iops"
fixed = { max_throughput_iops = 500 }

[[policy]]
name = "QoS_100MBps"
fixed = { max_throughput_mbps = 100 }

[[volume]]
name = "vol500"
size = "10GB"
policy = "QoS_500iops"
nas_path = "/vol500"

[[volume]]
name = "vol100m"
size = "10GB"
policy = "QoS_100MBps"
nas_path = "/vol100m"
"#;

/// Seed 000's QoS_500iops row on an NFS volume: 4 KiB random reads at 500 IOPS, 128 KiB
/// random reads at 31.25 MiB/s with `whole` accounting (the client splits each at the
/// node's 64 KiB rtmax: 500 READs/s of 64 KiB), and QoS_100MBps at 100 MiB/s.
///
/// Bounds: the pacer spaces a backlogged flow exactly, so fio's 6 s window counts the
/// rate's completions within one request at each edge (1/3000 at 500 IOPS), plus the
/// pacer's 5 ms of burst after the ramp (0.08%). The one thing that can lose rate is the
/// backlog running dry: the pacer keeps no credit for an idle flow beyond 5 ms, so a
/// client that stalls longer than the queue it keeps ahead loses that time. At QD64 the
/// queue is 128 ms at 500 IOPS (256 ms for the split 128 KiB reads, 80 ms at 100 MiB/s
/// of 128 KiB): a CPU hog beside the run does not stall fio that long, a release build on
/// both cores did (QD16, 32 ms: 487 IOPS). ±2% (±3% for the split reads, as the
/// acceptance says) is many times the edges.
#[test]
fn seed000_qos_rows_hold_over_nfs() {
    let _g = heavy();
    let mut rt = RealTime::start();
    let node = Node::start_with(SEED000, NFS);
    for (vol, size) in [("/vol500", "32M"), ("/vol100m", "256M")] {
        prefill(&nfs_url(&node, vol), "fiotest", size);
    }
    let api = Api::new(&node.api_url());
    let reads_before = read_ops(&api, "vol500");
    let timed = [
        "--time_based",
        "--runtime=6",
        "--ramp_time=1",
        "--iodepth=64",
    ];
    let run_on = |vol: &str, size: &str, bs: &str, rw: &str| {
        let mut a = vec!["--filename=fiotest".to_string(), format!("--size={size}")];
        a.push(format!("--bs={bs}"));
        a.push(format!("--rw={rw}"));
        a.extend(timed.iter().map(|s| s.to_string()));
        let args: Vec<&str> = a.iter().map(String::as_str).collect();
        fio_nfs(&nfs_url(&node, vol), &args)
    };
    // `qoslab stats` in the middle of the 4 KiB reads: the NAS volume is a row like any.
    let stats = {
        let url = node.api_url();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(4));
            let out = run(
                Command::new(QOSLAB)
                    .args(["stats", "--iterations", "1", "--output", "json", "--url"])
                    .arg(&url),
                Duration::from_secs(30),
            )
            .ok();
            let table = run(
                Command::new(QOSLAB)
                    .args(["stats", "--iterations", "1", "--url"])
                    .arg(&url),
                Duration::from_secs(30),
            )
            .ok();
            (out.stdout, table.stdout)
        })
    };
    let r4k = run_on("/vol500", "32M", "4k", "randread");
    within(
        &mut rt,
        "4 KiB random reads, IOPS",
        r4k.at("jobs.0.read.iops").f64(),
        500.0,
        2.0,
    );
    let (json, table) = stats.join().unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).expect("stats JSON");
    let row = v["records"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "vol500"))
        .unwrap_or_else(|| panic!("no vol500 in qoslab stats: {v}"));
    assert_eq!(row["qos"]["policy"]["name"], "QoS_500iops", "{row}");
    // The sampler's rate is over the last second by its own clock (the window's measured
    // length divides): what it can be off by is the requests in flight at its edges, 16
    // of 500 (3.2%); 10% leaves room for a busy machine.
    let iops = row["metric"]["iops"]["read"].as_f64().unwrap_or(0.0);
    within(
        &mut rt,
        "qoslab stats: vol500 read IOPS mid-run",
        iops,
        500.0,
        10.0,
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("vol500") && l.contains("QoS_500iops")),
        "{table}"
    );
    let w4k = run_on("/vol500", "32M", "4k", "randwrite");
    within(
        &mut rt,
        "4 KiB random writes, IOPS",
        w4k.at("jobs.0.write.iops").f64(),
        500.0,
        2.0,
    );
    let r128 = run_on("/vol500", "32M", "128k", "randread");
    let mib = r128.at("jobs.0.read.bw").f64() / 1024.0;
    within(
        &mut rt,
        "128 KiB random reads at 500 IOPS, MiB/s",
        mib,
        31.25,
        3.0,
    );
    // The node counted two READs per 128 KiB read: the client split them, not qoslab.
    let counted = read_ops(&api, "vol500") - reads_before;
    let fio_reads =
        r4k.at("jobs.0.read.total_ios").u64() + 2 * r128.at("jobs.0.read.total_ios").u64();
    assert!(
        counted >= fio_reads,
        "the node counted {counted} READs, fio issued {fio_reads} 64 KiB-or-smaller reads"
    );
    let r100 = run_on("/vol100m", "256M", "128k", "randread");
    let mib100 = r100.at("jobs.0.read.bw").f64() / 1024.0;
    eprintln!(
        "seed 000 over NFS: QoS_500iops 4k randread {:.1} IOPS, 4k randwrite {:.1} IOPS, \
         128k randread {mib:.2} MiB/s ({counted} READs counted for {fio_reads}); \
         QoS_100MBps 128k randread {mib100:.2} MiB/s; qoslab stats mid-run {iops:.0} IOPS",
        r4k.at("jobs.0.read.iops").f64(),
        w4k.at("jobs.0.write.iops").f64(),
    );
    within(
        &mut rt,
        "128 KiB random reads under 100 MB/s, MiB/s",
        mib100,
        100.0,
        2.0,
    );
    rt.finish();
}

pub fn read_ops(api: &Api, vol: &str) -> u64 {
    let v = api.get_ok(&format!(
        "/api/storage/volumes?name={vol}&fields=statistics"
    ));
    v["records"][0]["statistics"]["iops_raw"]["read"]
        .as_u64()
        .unwrap_or_else(|| panic!("no statistics: {v}"))
}

/// libnfs's utility `tool` (nfs-ls, nfs-cp, ...) with `args`, a minute at most.
pub fn nfs_tool(tool: &str, args: &[&str]) -> crate::util::Out {
    run(Command::new(tool).args(args), Duration::from_secs(60))
}

/// A NAS volume made over the REST API is mountable at once; its used space and its
/// operations (READ/WRITE and "other") show in the API and /metrics; its size is a quota;
/// its export policy decides who may mount, changed live; deleting it removes its tree
/// and makes its junction path unknown.
#[test]
fn a_nas_volume_over_the_api_with_libnfs() {
    let node = Node::start_with("", NFS);
    let api = Api::new(&node.api_url());
    let v = api.create(
        "/api/storage/volumes",
        r#"{"name": "nas1", "size": "8MiB", "space": {"snapshot": {"reserve_percent": 0}}, "nas": {"path": "/nas1"}}"#,
    );
    assert_eq!(v["nas"]["path"], "/nas1", "{v}");
    assert_eq!(v["nas"]["export_policy"]["name"], "default", "{v}");
    assert!(
        v.get("nbd").is_none(),
        "a NAS volume has no NBD address: {v}"
    );
    let uuid = v["uuid"].as_str().unwrap().to_string();
    let dir = TempDir::new("nfs-node-api");
    let local = dir.join("one.bin");
    std::fs::write(&local, pattern(3, 3 << 20)).unwrap();
    nfs_tool(
        "nfs-cp",
        &[local.to_str().unwrap(), &nfs_url(&node, "/nas1/one.bin")],
    )
    .ok();
    // Used space follows the tree (refreshed by the node every second).
    let deadline = Instant::now() + Duration::from_secs(5);
    let got = loop {
        let g = api.get_ok(&format!("/api/storage/volumes/{uuid}"));
        if g["space"]["used"].as_u64().unwrap_or(0) >= 3 << 20 || Instant::now() > deadline {
            break g;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(got["space"]["used"].as_u64().unwrap() >= 3 << 20, "{got}");
    let st = &got["statistics"]["iops_raw"];
    assert!(
        st["write"].as_u64().unwrap() >= 48,
        "3 MiB in 64 KiB WRITEs: {got}"
    );
    assert!(
        st["other"].as_u64().unwrap() >= 2,
        "LOOKUP/CREATE/COMMIT: {got}"
    );
    assert_eq!(
        got["statistics"]["throughput_raw"]["write"].as_u64(),
        Some(3 << 20),
        "{got}"
    );
    // The quota: 8 MiB in all; another 6 MiB does not fit.
    let big = dir.join("big.bin");
    std::fs::write(&big, pattern(4, 6 << 20)).unwrap();
    let full = nfs_tool(
        "nfs-cp",
        &[big.to_str().unwrap(), &nfs_url(&node, "/nas1/big.bin")],
    );
    assert!(!full.status.success(), "past the quota: {full}");
    let metrics = api.get("/metrics").body;
    assert!(
        metrics.contains("qoslab_volume_nas_info{volume=\"nas1\"")
            && metrics.contains("path=\"/nas1\""),
        "{metrics}"
    );
    // An export policy that does not match loopback: refused at once for the next call.
    let p = api.create(
        "/api/protocols/nfs/export-policies",
        r#"{"name": "elsewhere", "rules": [{"clients": [{"match": "192.0.2.0/24"}], "ro_rule": ["sys"], "rw_rule": ["sys"]}]}"#,
    );
    assert!(p["id"].as_u64().is_some(), "{p}");
    api.patch_ok(
        &format!("/api/storage/volumes/{uuid}"),
        r#"{"nas": {"export_policy": {"name": "elsewhere"}}}"#,
    );
    let denied = nfs_tool("nfs-ls", &[&nfs_url(&node, "/nas1")]);
    assert!(!denied.status.success(), "{denied}");
    // The policy in use cannot be deleted; the default one never.
    let r = api.req(
        "DELETE",
        &format!("/api/protocols/nfs/export-policies/{}", p["id"]),
        None,
    );
    assert_eq!(r.status, 409, "{r:?}");
    api.patch_ok(
        &format!("/api/storage/volumes/{uuid}"),
        r#"{"nas": {"export_policy": {"name": "default"}}}"#,
    );
    let ls = nfs_tool("nfs-ls", &[&nfs_url(&node, "/nas1")]).ok();
    assert!(ls.stdout.contains("one.bin"), "{ls}");
    // Delete: the junction path is gone, and the tree with it (another volume keeps
    // loopback admitted: a node no export admits a client on closes its connections).
    api.create(
        "/api/storage/volumes",
        r#"{"name": "nas2", "size": "8MiB", "nas": {"path": "/nas2"}}"#,
    );
    let r = api.req("DELETE", &format!("/api/storage/volumes/{uuid}"), None);
    assert_eq!(r.status, 200, "{r:?}");
    let gone = nfs_tool("nfs-ls", &[&nfs_url(&node, "/nas1")]);
    assert!(
        !gone.status.success() && gone.stderr.contains("NOENT"),
        "{gone}"
    );
    assert!(!node.data_dir().join("nas/nas1").exists());
}

/// kill -9 of the node during UNSTABLE writes and COMMITs loses nothing a COMMIT
/// acknowledged; the handles from before the restart still work.
#[test]
fn committed_writes_survive_kill9_of_the_node() {
    let _g = heavy();
    let cfg = "[[volume]]\nname = \"j\"\nsize = \"1GB\"\nnas_path = \"/j\"\n";
    let node = std::cell::RefCell::new(Node::start_with(cfg, NFS));
    let port = nfs_port(&node.borrow());
    committed_writes_survive_kill9(
        port,
        "/j",
        || node.borrow_mut().kill9(),
        || {
            node.borrow_mut().start_again();
            nfs_port(&node.borrow())
        },
        || node.borrow().stderr(),
    );
}

/// Seed 003 on NFS: one TCP connection is held to the emulated FSx's single-flow limit;
/// sixteen (fio's nfs engine, one libnfs connection per job, standing in for the kernel's
/// `nconnect=16`: TCG is too slow to show it) get the file system's network throughput.
/// Here the single flow is 2 MiB/s (`per_connection = "200MB/s"`, qoslab's MB = 2^20,
/// times `rate_scale`) and the network 15 MB/s (FSx's 1,500 MB/s, decimal, times 0.01:
/// 14.3 MiB/s): 16 connections can read 7.15x one.
///
/// Bounds: both are pacers over 6 s runs of 64 KiB reads. One connection's ±5%: its
/// completions are spaced exactly (one 64 KiB read in 6 s is 0.5%), as long as its queue
/// (QD16: 0.5 s at 2 MB/s) does not run dry; at QD4 (131 ms) a release build on both cores
/// starved fio enough to lose 8%. The ratio (at least 4x, the acceptance's) leaves the
/// 7.15x room for anything a busy machine does to the 16 readers (beside a CPU hog
/// they read 13.1-13.2 MiB/s, 6.6x).
#[test]
fn nconnect_16_beats_one_connection_on_the_emulated_fsx() {
    let _g = heavy();
    let mut rt = RealTime::start();
    let cfg = r#"
[provisioned]
preset = "fsx-ontap-1024"
rate_scale = 0.01
per_connection = "200MB/s"

[[volume]]
name = "fsx"
size = "10GB"
nas_path = "/fsx"
"#;
    let node = Node::start_with(cfg, NFS);
    let url = nfs_url(&node, "/fsx");
    prefill(&url, "cached", "8M");
    let read = |jobs: &str| {
        let j = fio_nfs(
            &url,
            &[
                "--filename=cached",
                "--size=8M",
                "--bs=64k",
                "--rw=randread",
                "--iodepth=16",
                &format!("--numjobs={jobs}"),
                "--time_based",
                "--runtime=6",
                "--ramp_time=1",
            ],
        );
        j.at("jobs.0.read.bw").f64() / 1024.0
    };
    let one = read("1");
    let many = read("16");
    eprintln!("one connection {one:.2} MiB/s, 16 connections {many:.2} MiB/s");
    within(&mut rt, "one connection, MiB/s", one, 2.0, 5.0);
    if many < 4.0 * one {
        rt.short(format!("16 connections {many:.2} MiB/s vs one {one:.2}"));
    }
    rt.finish();
}
