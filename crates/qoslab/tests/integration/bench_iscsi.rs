//! Issue 34: `qoslab bench --target iscsi://HOST[:PORT]/IQN/LUN` drives fio's libiscsi
//! engine against a LUN, here a node's under a fixed 400 IOPS ceiling, masked to the
//! harness's initiator name (so the run sees it only by logging in as
//! `iqn.2026-01.lab.qoslab:bench`). A plan that writes is refused without `--overwrite`
//! (exit 2, the LUN named as docs/BENCH.md prints it, no write reaches the volume) and
//! runs with it; CHAP in the URL is refused without echoing the secret; a 4 KiB
//! random-read plan runs without `--overwrite`, at or under the ceiling, and the node's
//! process (found by its iSCSI port) is sampled as the node.
//!
//! Cost: ~7 s (a 1 s write job; a 3 s read job after a 1 s ramp). Light group: its
//! timed checks are the ceiling, an upper bound a neighbour cannot break, and a
//! shortfall, a real-time bound a starved host makes inconclusive (`RealTime`); 400
//! IOPS of fio and the node are less than the CPU hog every measuring test survives.

use std::time::{Duration, Instant};

use crate::api_util::Api;
use crate::bench_util::{json_run, qoslab, text, Dir};
use crate::iscsi_node::iscsi_port;
use crate::realtime::RealTime;
use crate::util::{heavy, require_tool, Node};

const IQN: &str = "iqn.2026-01.lab.qoslab:e2e-bench";
const LIMIT: Duration = Duration::from_secs(60);
const BENCH_MD: &str = include_str!("../../../../docs/BENCH.md");

fn node_config() -> String {
    format!(
        "[[policy]]\nname = \"iops400\"\nfixed = {{ max_throughput_iops = 400 }}\n\
         [[volume]]\nname = \"db\"\nsize = \"64MiB\"\npolicy = \"iops400\"\n\
         [iscsi]\niqn = \"{IQN}\"\n\
         [[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"iqn.2026-01.lab.qoslab:bench\"]\n"
    )
}

/// The plan: fio on line 6 (docs/BENCH.md's refusal names it there).
fn plan(fio: &str, expect: &str) -> String {
    format!(
        "[bench]\nruntime = \"3s\"\n\n[[workload]]\nname = \"w\"\nfio = {{ {fio} }}\n\
         expect = [\"{expect}\"]\n"
    )
}

/// The volume's operations of `dir` ("read", "write"), as the node counts them.
fn ops(api: &Api, dir: &str) -> u64 {
    let v = api.get_ok("/api/storage/volumes?name=db&fields=statistics");
    v["records"][0]["statistics"]["iops_raw"][dir]
        .as_u64()
        .unwrap_or_else(|| panic!("no statistics: {v}"))
}

#[test]
fn a_lun_is_benched_under_its_ceiling_and_written_only_with_overwrite() {
    require_tool("fio");
    let _g = heavy();
    let mut rt = RealTime::start();
    let node = Node::start_with(&node_config(), &["--listen-iscsi", "127.0.0.1:0"]);
    let port = iscsi_port(&node);
    let api = Api::new(&node.api_url());
    let url = format!("iscsi://127.0.0.1:{port}/{IQN}/0");
    let d = Dir::new("bench-iscsi");
    let bench = |args: &[&str]| {
        let mut all = vec!["bench", "p.toml", "--db", "r.db", "--target", &url];
        all.extend_from_slice(args);
        let o = qoslab(&d, &all, LIMIT);
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };

    // A plan that writes: refused before anything runs, the LUN named, nothing written.
    d.write(
        "p.toml",
        &plan("rw = \"randwrite\", bs = \"4k\", iodepth = 4", "iops >= 1"),
    );
    let (code, out, err) = bench(&["--no-tools"]);
    assert_eq!(code, Some(2), "stdout:\n{out}\nstderr:\n{err}");
    let refusal = format!(
        "qoslab: error: --target {url}: an iSCSI LUN (LUN 0 of {IQN} at 127.0.0.1:{port}): \
         the run writes to it (p.toml:6: workload \"w\") and its data will be destroyed. \
         Nothing was written. --overwrite allows that; a plan that only reads runs without it"
    );
    assert!(err.contains(&refusal), "{err}");
    assert!(
        BENCH_MD.contains(&refusal.replace(&format!(":{port}"), ":3260")),
        "docs/BENCH.md prints the refusal as qoslab does:\n{refusal}"
    );
    assert!(!d.path().join("r.db").exists(), "nothing is stored");
    assert_eq!(ops(&api, "write"), 0, "no write reached the volume");
    // With --overwrite it runs, and its writes reach the volume.
    let (code, out, err) = bench(&[
        "--no-tools",
        "--overwrite",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
    ]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(ops(&api, "write") > 0, "the writes reached the volume");
    std::fs::remove_file(d.path().join("r.db")).unwrap();

    // CHAP in the URL: refused, its secret never echoed.
    let chap = format!("iscsi://user%s3cret@127.0.0.1:{port}/{IQN}/0");
    let o = qoslab(&d, &["bench", "p.toml", "--target", &chap], LIMIT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains("CHAP from the harness is not supported yet") && !err.contains("s3cret"),
        "{err}"
    );

    // 4 KiB random reads: no --overwrite needed; held to the LUN's ceiling.
    d.write(
        "p.toml",
        &plan(
            "rw = \"randread\", bs = \"4k\", iodepth = 16",
            "iops_mean <= 400 +-2%",
        ),
    );
    let (code, out, err) = bench(&["--dry-run"]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    for line in [
        format!("  {url}  the LUN: only read, nothing written"),
        "initiator=iqn.2026-01.lab.qoslab:bench".into(),
        format!("filename=iscsi\\://127.0.0.1\\:{port}/iqn.2026-01.lab.qoslab\\:e2e-bench/0"),
    ] {
        assert!(out.contains(&line), "{line}\n{out}");
    }
    let reads_before = ops(&api, "read");
    let started = Instant::now();
    let (code, out, err) = bench(&["--ramp", "1s"]);
    let wall = started.elapsed();
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("PASS iops_mean <= 400 +-2%"), "{out}");
    assert!(out.contains(&url), "the run names its target:\n{out}");
    let run = json_run(&d, "r.db");
    assert_eq!(run["target"], url.as_str(), "{}", run["target"]);
    let r = &run["jobs"][0]["results"][0]["read"];
    let (iops, mean) = (
        r["iops"].as_f64().unwrap_or(0.0),
        r["iops_mean"].as_f64().unwrap_or(0.0),
    );
    eprintln!(
        "qoslab bench over iSCSI, LUN under 400 IOPS: iops {iops:.1}, iops_mean {mean:.1} \
         (bench {:.1} s)",
        wall.as_secs_f64()
    );
    assert!(
        mean <= 408.0,
        "iops_mean {mean:.1} above the 400 IOPS ceiling"
    );
    // Below it only a starved host may fall (fio's 16 reads in flight across the ends of
    // its 3 s window are 1.3%: iops reads that much low).
    if mean < 380.0 {
        rt.short(format!("iops_mean {mean:.1}, ceiling 400 (want >= 380)"));
    }
    assert!(
        ops(&api, "read") - reads_before >= r["total_ios"].as_u64().unwrap_or(u64::MAX),
        "the node counted every read fio made: {r}"
    );
    // The node's process, found by its iSCSI port, is sampled as the node (not as noise).
    let node_pid = i64::from(node.pid());
    let as_node = run["series"][0]["hosts"][0]["samples"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["procs"].as_array().into_iter().flatten())
        .any(|p| p["pid"] == node_pid && p["role"] == "node");
    assert!(
        as_node,
        "node pid {node_pid} sampled as the node: {}",
        run["series"]
    );
    rt.finish();
}
