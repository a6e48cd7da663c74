//! Buckets held to their QoS policies end to end, measured with qoslab's own S3 benchmark
//! (`qoslab bench --profile s3`, three runs at once against one node): a bucket under a
//! 200 ops/s policy (4 KiB GETs) measures 196-204 ops/s and one under 50 MiB/s (1 MiB PUTs)
//! 49-51 MiB/s, while an unlimited bucket beside them runs free. Buckets are put under
//! their policies with the REST API. The exact accuracy of the flows is proven in virtual
//! time (storage-node's tests/bucket_flow.rs); this is the real thing, end to end. The
//! node's data directory is on tmpfs: the test measures the QoS, not the fsync stalls of a
//! disk the other tests share (a second lost to one measured 47.9 MiB/s under load).

use std::time::Duration;

use serde_json::Value;

use crate::api_util::Api;
use crate::bench_util::{qoslab, text, Dir};
use crate::realtime::RealTime;
use crate::s3_util::{S3Node, ACCESS, SECRET};
use crate::util::heavy;

const CONFIG: &str = r#"
[[policy]]
name = "ops200"
fixed.max_throughput = "200iops"

[[policy]]
name = "mb50"
fixed.max_throughput = "50MB/s"
"#;

/// The merged result of operation `op` in a `qoslab bench --json` run.
fn op(run: &Value, op: &str) -> Value {
    run["jobs"][0]["ops"]
        .as_array()
        .and_then(|v| v.iter().find(|o| o["op"] == op))
        .cloned()
        .unwrap_or_else(|| panic!("no {op} results in {run}"))
}

#[test]
fn bucket_policies_hold_while_an_unlimited_bucket_runs_free() {
    let _g = heavy();
    let mut rt = RealTime::start();
    let n = S3Node::start_on_tmpfs(CONFIG, &[]);
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
    // Made here (no policy), so it outlives its benchmark and /metrics still shows it.
    api.create(&buckets, r#"{"name": "free"}"#);
    let dir = std::sync::Arc::new(Dir::new("s3qos"));
    dir.write("keys", &format!("root {ACCESS} {SECRET}\n"));
    // Three benchmark runs at once: each is a load generator of its own.
    let bench = |bucket: &str, mix: &str, size: &str, clients: &str, expect: &[&str]| {
        let more = [
            "--s3-bucket",
            bucket,
            "--s3-mix",
            mix,
            "--s3-size",
            size,
            "--s3-objects",
            "16",
            "--s3-clients",
            clients,
            "--runtime",
            "8",
            // Two seconds: the three runs' start-up (drivers, prepared objects) is over.
            "--ramp",
            "2",
            "--db",
            &format!("{bucket}.db"),
            "--json",
        ];
        let mut args: Vec<String> = n
            .bench_args()
            .into_iter()
            .chain(more)
            .map(String::from)
            .collect();
        for e in expect {
            args.push("--s3-expect".into());
            args.push(e.to_string());
        }
        let d = dir.clone();
        std::thread::spawn(move || {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            qoslab(&d, &a, Duration::from_secs(120))
        })
    };
    let gets = bench(
        "iops-200",
        "get=1",
        "4KiB",
        "16",
        &["GET.ops_per_s ~= 200 +-2%"],
    );
    // 16 writers keep ~15 PUTs queued at the ceiling (each waits ~300 ms for ~20 ms of
    // work): a stall of a few hundred ms on the shared machine leaves no gap in the queue.
    let puts = bench(
        "mibps-50",
        "put=1",
        "1MiB",
        "16",
        &["PUT.mib_per_s ~= 50 +-2%"],
    );
    let free = bench("free", "get=1", "4KiB", "2", &["ALL.errors <= 0"]);
    let parse = |h: std::thread::JoinHandle<std::process::Output>| -> Value {
        let o = h.join().unwrap();
        let (out, err) = text(&o);
        // Passed, or inconclusive (3) on a starved host: never failed.
        assert!(matches!(o.status.code(), Some(0 | 3)), "{out}\n{err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let (g, p, f) = (parse(gets), parse(puts), parse(free));
    let iops = op(&g, "GET")["ops_per_s"].as_f64().unwrap();
    let mibps = op(&p, "PUT")["bytes_per_s"].as_f64().unwrap() / 1048576.0;
    let free_rate = op(&f, "GET")["ops_per_s"].as_f64().unwrap();
    eprintln!("iops-200: {iops:.1} GET/s; mibps-50: {mibps:.2} MiB/s; free: {free_rate:.0} GET/s");
    // The ceilings hold whatever the machine does; reaching them is the run's own verdict,
    // which a starved host makes inconclusive (naming it), never failed.
    assert!(iops <= 204.0, "200 ops/s bucket measured {iops:.1}");
    assert!(mibps <= 51.0, "50 MiB/s bucket measured {mibps:.2}");
    for (r, figure, want) in [(&g, iops, 196.0..=204.0), (&p, mibps, 49.0..=51.0)] {
        match r["status"].as_str() {
            Some("passed") => assert!(want.contains(&figure), "{figure:.2}: {r}"),
            Some("inconclusive") => {
                let v = &r["jobs"][0]["verdicts"][0];
                assert!(
                    v["reason"]
                        .as_str()
                        .is_some_and(|x| x.starts_with("starved-host")),
                    "{v}"
                );
            }
            _ => panic!("{r}"),
        }
    }
    assert_eq!(f["status"], "passed", "{f}");
    // Not held to its neighbours' limits: faster than the 200 ops/s ceiling beside it
    // (held to it, it would read at most 204), and below, never once queued by a policy.
    // The rate is not asked to be a multiple of 200: it is what this shared machine's CPU
    // gives three benchmark processes and the node at once (464 to over 1,000 GET/s seen);
    // short of 1.25 x 200 on a starved host it is inconclusive.
    if free_rate <= 1.25 * 200.0 {
        rt.short(format!(
            "the unlimited bucket ran at {free_rate:.0} GET/s: it must not be held to its neighbours' limits (250)"
        ));
    }
    // The TTFB of the held GETs is the wait.
    let ttfb = op(&g, "GET")["ttfb"]["p50_ns"].as_f64().unwrap() / 1e6;
    assert!(
        ttfb > 20.0,
        "16 clients at 200 ops/s wait ~80 ms each; TTFB p50 {ttfb:.1} ms"
    );
    // The node counted every request against its bucket and the ceiling's queue time.
    let b: Value = api.get_ok(&format!("{buckets}/{}", gold["uuid"].as_str().unwrap()));
    // (8 s at 200 GETs per second; fewer when a starved host sent fewer.)
    if b["statistics"]["iops_raw"]["read"].as_u64().unwrap() < 1600 {
        rt.short(format!(
            "the 200 ops/s bucket counted fewer than 1,600 GETs: {b}"
        ));
    }
    let m = api.get("/metrics").body;
    assert!(
        m.lines().any(|l| l
            .starts_with("qoslab_bucket_qos_wait_seconds_total{bucket=\"iops-200\"")
            && l.contains("limit=\"ceiling\"")
            && !l.ends_with(" 0")),
        "no ceiling wait for the 200 ops/s bucket in /metrics:\n{m}"
    );
    let free_waits: Vec<&str> = m
        .lines()
        .filter(|l| l.starts_with("qoslab_bucket_qos_wait_seconds_total{bucket=\"free\""))
        .collect();
    assert!(
        !free_waits.is_empty() && free_waits.iter().all(|l| l.ends_with(" 0")),
        "the unlimited bucket waited in a QoS queue: {free_waits:?}"
    );
    // The benchmark removed its objects and kept the buckets it did not make.
    let listed = n.aws(&["s3api", "list-objects-v2", "--bucket", "iops-200"]);
    assert!(!listed.stdout.contains("\"Key\""), "{listed}");
    rt.finish();
}
