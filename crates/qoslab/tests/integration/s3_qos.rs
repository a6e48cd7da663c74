//! Buckets held to their QoS policies end to end: a bucket under a 200 ops/s policy (4 KiB
//! GETs) and one under 50 MiB/s (1 MiB PUTs), put under their policies with the REST API,
//! measured with curl's SigV4 client while an unlimited bucket beside them runs free.
//! Generous real-time bounds (+-10%); the exact accuracy is proven in virtual time
//! (storage-node's tests/bucket_flow.rs).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::api_util::Api;
use crate::s3_util::S3Node;
use crate::util::{heavy, run};

const CONFIG: &str = r#"
[[policy]]
name = "ops200"
fixed.max_throughput = "200iops"

[[policy]]
name = "mb50"
fixed.max_throughput = "50MB/s"
"#;

/// Run a curl transfer list; every transfer must succeed.
fn timed(mut c: Command, want: usize) {
    c.args(["-o", "/dev/null", "-w", "%{http_code}\\n"]);
    let out = run(&mut c, Duration::from_secs(120));
    let ok = out.stdout.lines().filter(|l| l.trim() == "200").count();
    assert_eq!(ok, want, "{out}");
}

/// (GETs on iops-200, bytes PUT on mibps-50, GETs on free) from the node's /metrics.
fn counters(api: &Api) -> (f64, f64, f64) {
    let m = api.get("/metrics").body;
    let get = |bucket: &str, metric: &str, op: &str| -> f64 {
        m.lines()
            .find(|l| {
                l.starts_with(metric)
                    && l.contains(&format!("bucket=\"{bucket}\""))
                    && l.contains(&format!("op=\"{op}\""))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {metric} for {bucket} in /metrics"))
    };
    (
        get("iops-200", "qoslab_bucket_ops_total", "read"),
        get("mibps-50", "qoslab_bucket_bytes_total", "write"),
        get("free", "qoslab_bucket_ops_total", "read"),
    )
}

#[test]
fn bucket_policies_hold_while_an_unlimited_bucket_runs_free() {
    let _g = heavy();
    let n = S3Node::start(CONFIG, &[]);
    let api = Api::new(&n.node.api_url());
    let svc = api.get_ok("/api/protocols/s3/services?fields=svm");
    let svm = svc["records"][0]["svm"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let buckets = format!("/api/protocols/s3/services/{svm}/buckets");
    let gold = api.create(
        &buckets,
        r#"{"name": "iops-200", "qos_policy": {"name": "ops200"}}"#,
    );
    assert_eq!(gold["qos_policy"]["max_throughput_iops"], 200, "{gold}");
    api.create(
        &buckets,
        r#"{"name": "mibps-50", "qos_policy": {"name": "mb50"}}"#,
    );
    // The unlimited bucket is made with S3 itself.
    let mut mk = n.curl();
    mk.args(["-X", "PUT", "-f", &n.url("free")]);
    run(&mut mk, Duration::from_secs(30)).ok();
    let small = n.node.scratch("4k");
    std::fs::write(&small, vec![7u8; 4096]).unwrap();
    let big = n.node.scratch("1m");
    std::fs::write(&big, vec![9u8; 1 << 20]).unwrap();
    for b in ["iops-200", "free"] {
        let mut c = n.curl();
        c.args([
            "-f",
            "-T",
            small.to_str().unwrap(),
            &n.url(&format!("{b}/obj")),
        ]);
        run(&mut c, Duration::from_secs(30)).ok();
    }

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let free = {
        let stop = stop.clone();
        let url = n.url("free/obj?i=[1-500]");
        let base = n.curl();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut c = Command::new(base.get_program());
                c.args(base.get_args());
                c.args(["--parallel", "--parallel-max", "4", &url]);
                timed(c, 500);
            }
        })
    };
    let gets = {
        let mut c = n.curl();
        c.args([
            "--parallel",
            "--parallel-max",
            "8",
            &n.url("iops-200/obj?i=[1-1400]"),
        ]);
        std::thread::spawn(move || timed(c, 1400))
    };
    let puts = {
        let mut c = n.curl();
        c.args([
            "--parallel",
            "--parallel-max",
            "4",
            "-T",
            big.to_str().unwrap(),
        ]);
        c.arg(n.url("mibps-50/p[1-350]"));
        std::thread::spawn(move || timed(c, 350))
    };
    // Rates as the node counts them, over 4 s of the 7 s run (warm-up and tail left out).
    std::thread::sleep(Duration::from_millis(1500));
    let (c0, t0) = (counters(&api), Instant::now());
    std::thread::sleep(Duration::from_secs(4));
    let (c1, secs) = (counters(&api), t0.elapsed().as_secs_f64());
    let iops = (c1.0 - c0.0) / secs;
    let mibps = (c1.1 - c0.1) / secs / 1048576.0;
    let free_rate = (c1.2 - c0.2) / secs;
    gets.join().unwrap();
    puts.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    free.join().unwrap();
    eprintln!("iops-200: {iops:.1} GET/s; mibps-50: {mibps:.1} MiB/s; free: {free_rate:.0} GET/s");
    assert!(
        (180.0..=220.0).contains(&iops),
        "200 ops/s bucket measured {iops:.1}"
    );
    assert!(
        (45.0..=55.0).contains(&mibps),
        "50 MiB/s bucket measured {mibps:.1}"
    );
    assert!(
        free_rate > 2.0 * 200.0,
        "the unlimited bucket ran at {free_rate:.0} GET/s: it must not be held to its neighbours' limits"
    );
    // The node counted every request against its bucket and the ceiling's queue time.
    let b: Value = api.get_ok(&format!("{buckets}/{}", gold["uuid"].as_str().unwrap()));
    assert!(
        b["statistics"]["iops_raw"]["read"].as_u64().unwrap() >= 1400,
        "{b}"
    );
    let m = api.get("/metrics").body;
    assert!(
        m.lines().any(|l| l
            .starts_with("qoslab_bucket_qos_wait_seconds_total{bucket=\"iops-200\"")
            && l.contains("limit=\"ceiling\"")
            && !l.ends_with(" 0")),
        "no ceiling wait for the 200 ops/s bucket in /metrics:\n{m}"
    );
}
