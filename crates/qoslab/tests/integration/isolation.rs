//! Floors under contention, end to end: the real binary as an emulated 10,000 IOPS
//! controller, real fio, two protected volumes at a 2,500 IOPS floor against an unlimited
//! bully at queue depth 64 — with floors (mClock) and without (FIFO). Then the
//! `isolation` bench profile itself, its verdicts in the results store and exports.
//!
//! The scale is set by what one free core can drive: beside a CPU hog on this 2-core
//! machine, fio's three jobs and the node share the other core, and at 20,000 IOPS a
//! protected job fell to 4,449-4,679 of its 5,000 IOPS in 2 of 10 stress rounds (fio and the
//! node short of CPU, not the floors). At 10,000 they need half of that CPU; the claim (a
//! floor holds within 2% against a QD64 bully, and falls without mClock) is the same.

use std::process::Command;
use std::time::Duration;

use crate::api_util::Api;
use crate::bench_util::{
    expecting, export, inconclusive_for_the_host, qoslab, text, verdicts, Dir,
};
use crate::json::Json;
use crate::realtime::RealTime;
use crate::util::{heavy, require_fio_nbd, run, Node};

const CONFIG: &str = r#"
[capacity]
iops = 10000
discipline = "DISCIPLINE"

[[policy]]
name = "protected"
fixed = { min_throughput_iops = 2500 }

[[volume]]
name = "a"
size = "1GiB"
policy = "protected"

[[volume]]
name = "b"
size = "1GiB"
policy = "protected"

[[volume]]
name = "bully"
size = "1GiB"
"#;

/// IOPS of jobs a, b and bully, run together in one fio process: a and b offered 2,500
/// IOPS each at iodepth 16, the bully unlimited at iodepth 64.
fn contend(node: &Node) -> (f64, f64, f64) {
    require_fio_nbd();
    let mut c = Command::new("fio");
    c.args([
        "--ioengine=nbd",
        "--rw=randread",
        "--bs=4k",
        "--time_based",
        "--runtime=5",
        "--ramp_time=1",
        "--output-format=json",
        "--verify_state_save=0",
    ])
    .current_dir(std::env::temp_dir());
    // No rate_iops at all for the bully: fio's `rate_iops=0` is not "unlimited" in
    // practice (the job then ran at about half the speed of one without the option).
    for (name, extra) in [
        ("a", &["--iodepth=16", "--rate_iops=2500"][..]),
        ("b", &["--iodepth=16", "--rate_iops=2500"][..]),
        ("bully", &["--iodepth=64"][..]),
    ] {
        c.arg(format!("--name={name}"))
            .arg(format!("--uri={}", node.uri(name)))
            .args(extra);
    }
    let out = run(&mut c, Duration::from_secs(90));
    assert!(out.status.success(), "{out}");
    let json = Json::parse_from_first_brace(&out.stdout)
        .unwrap_or_else(|e| panic!("fio printed no JSON ({e})\n{out}"));
    let iops = |name: &str| {
        json.at("jobs")
            .arr()
            .iter()
            .find(|j| j.at("jobname").str() == name)
            .map(|j| {
                assert_eq!(j.at("error").u64(), 0, "{name} failed\n{out}");
                j.at("read").at("iops").f64()
            })
            .unwrap_or_else(|| panic!("no job {name}\n{out}"))
    };
    (iops("a"), iops("b"), iops("bully"))
}

#[test]
fn floors_hold_against_a_qd64_bully_and_fall_without_them() {
    let _g = heavy();
    let mut rt = RealTime::start();
    let node = Node::start(&CONFIG.replace("DISCIPLINE", "mclock"));
    assert!(
        node.ready_output().iter().any(
            |l| l.contains("emulated controller: 10000 IOPS") && l.contains("floors 5000 IOPS")
        ),
        "{:?}",
        node.ready_output()
    );
    let cluster = Api::new(&node.api_url()).get_ok("/api/cluster");
    assert_eq!(cluster["qos"]["floors_enforced"], true, "{cluster}");
    assert_eq!(cluster["qos"]["floors"]["iops"], 5000, "{cluster}");
    let (a, b, bully) = contend(&node);
    eprintln!("floors (mClock): a {a:.0}, b {b:.0}, bully {bully:.0} IOPS");
    // The bully waited behind the floors: the API's latency split says so.
    let vols = Api::new(&node.api_url()).get_ok("/api/storage/volumes?fields=metric");
    let floor_us = vols["records"]
        .as_array()
        .and_then(|r| r.iter().find(|v| v["name"] == "bully"))
        .map(|v| v["metric"]["qos_latency"]["floor"].as_f64().unwrap_or(0.0));
    drop(node);

    let node = Node::start(&CONFIG.replace("DISCIPLINE", "fifo"));
    let (fa, fb, fbully) = contend(&node);
    eprintln!("control (FIFO): a {fa:.0}, b {fb:.0}, bully {fbully:.0} IOPS");

    // Holding a floor takes the CPU to serve it: a starved host's to explain.
    for (name, got) in [("a", a), ("b", b)] {
        if got < 2450.0 {
            rt.short(format!(
                "with floors, protected volume {name} held {got:.0} IOPS; want >= 2,450 (bully {bully:.0})"
            ));
        }
    }
    for (name, got) in [("a", fa), ("b", fb)] {
        assert!(
            got < 2250.0,
            "without floors, protected volume {name} still got {got:.0} IOPS; the bully at QD64 should take it below 2,250"
        );
    }
    let diff = a.min(b) - fa.max(fb);
    if diff < 250.0 {
        rt.short(format!("floors made only {diff:.0} IOPS of difference"));
    }
    assert!(
        a + b + bully <= 10_000.0 * 1.03,
        "the emulated controller gave {:.0} IOPS, over its 10,000",
        a + b + bully
    );
    assert!(
        floor_us.is_some(),
        "the bully's qos_latency.floor is reported: {vols}"
    );
    rt.finish();
}

#[test]
fn isolation_profile_stores_verdicts_and_the_step_table() {
    let _g = heavy();
    let d = Dir::new("isolation");
    let o = qoslab(
        &d,
        &[
            "bench",
            "--profile",
            "isolation",
            "--steps",
            "2",
            "--runtime",
            "3s",
            "--ramp",
            "1s",
            "--db",
            "r.db",
        ],
        Duration::from_secs(120),
    );
    let (out, err) = text(&o);
    let code = o.status.code();
    // 3: a p99 verdict inconclusive (this machine's CPU, not the node, explains it).
    assert!(
        matches!(code, Some(0 | 1 | 3)),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("with floors (mClock)"), "{out}");
    assert!(out.contains("control: no floors (FIFO)"), "{out}");

    let o = export(&d, "1", "json", Duration::from_secs(90));
    let (json, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON export");
    let jobs = v["jobs"].as_array().expect("jobs");
    // 2 modes x 2 steps x 3 volumes.
    assert_eq!(jobs.len(), 12, "{json}");
    let verdicts = verdicts(jobs);
    // Per protected volume: IOPS at both steps (4), p99 at step 2 (2), and the control's
    // own verdict (1).
    assert_eq!(verdicts.len(), 7, "{json}");
    let iops = expecting(&verdicts, "iops >= 5000 * 0.98");
    assert_eq!(iops.len(), 4, "{json}");
    // Every protected volume holds its floor: no floor verdict fails. On a machine busy
    // with other work one may be inconclusive, naming the machine as the reason.
    assert!(
        iops.iter()
            .all(|x| x["outcome"] == "pass" || inconclusive_for_the_host(x)),
        "every protected volume holds its floor: {json}"
    );
    let control = expecting(&verdicts, "control");
    assert_eq!(control.len(), 1, "{json}");
    assert_eq!(
        control[0]["passed"], true,
        "without floors the bully hurts: {json}"
    );
    // p99 within 2x of step 1 is judged from fio's measurement; on a shared 2-vCPU machine
    // (load generator and node on the same cores, a debug build) it is the tool's honest
    // verdict either way, and the exit status must agree with it.
    let p99 = expecting(&verdicts, "lat_p99_us <=");
    assert_eq!(p99.len(), 2, "{json}");
    // The exit status, the summary line and the stored outcomes say the same thing.
    let outcome = |o: &str| verdicts.iter().filter(|x| x["outcome"] == o).count();
    let (failed, inconclusive) = (outcome("fail"), outcome("inconclusive"));
    let (want_code, want_line) = match (failed, inconclusive) {
        (0, 0) => (0, "run 1: PASSED"),
        (0, _) => (3, "run 1: INCONCLUSIVE"),
        _ => (1, "run 1: FAILED"),
    };
    assert_eq!(code, Some(want_code), "exit status vs verdicts\n{out}");
    assert!(out.contains(want_line), "{out}");
    let table = &v["tables"][0];
    assert_eq!(table["kind"], "isolation");
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(12), "{table}");

    let o = export(&d, "1", "csv", Duration::from_secs(90));
    let (csv, _) = text(&o);
    let floors_rows = csv
        .lines()
        .filter(|l| l.contains(",isolation-floors,floors/step"))
        .count();
    assert_eq!(floors_rows, 6, "{csv}");

    let o = export(&d, "1", "md", Duration::from_secs(90));
    let (md, _) = text(&o);
    assert!(md.contains("iops >= 5000 * 0.98"), "{md}");
}

#[test]
fn serve_calibrate_measures_the_backend_and_uses_it_as_capacity() {
    let _g = heavy();
    let node = Node::start_with(
        "[[volume]]\nname = \"v\"\nsize = \"64MiB\"\n",
        &["--calibrate"],
    );
    let line = node
        .ready_output()
        .iter()
        .find(|l| l.starts_with("qoslab: calibrated:"))
        .cloned()
        .unwrap_or_else(|| panic!("{:?}", node.ready_output()));
    let measured: f64 = line
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no IOPS figure in {line:?}"));
    let cluster = Api::new(&node.api_url()).get_ok("/api/cluster");
    let cap = cluster["qos"]["capacity"]["iops"].as_f64().unwrap_or(0.0);
    assert!(measured > 1000.0, "{line}");
    assert!(
        (cap - measured).abs() <= 1.0,
        "capacity {cap} should be the measured {measured}: {cluster}"
    );
    assert_eq!(cluster["qos"]["floors_enforced"], true, "{cluster}");
}
