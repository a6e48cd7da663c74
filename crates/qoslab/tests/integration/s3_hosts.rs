//! The S3 benchmark from two load generators: namespace hosts of the `testbed` crate (each
//! with its own sshd), the node serving S3 on the bed's coordinator address. The
//! coordinator copies the qoslab binary to the hosts over ssh, starts `qoslab s3-driver` on
//! each, and merges their records: per host and "All hosts", on one clock. Both hosts GET
//! from one bucket under a 200 ops/s policy, so the merged rate is the policy's and the
//! hosts share it.

use std::time::Duration;

use serde_json::Value;
use testbed::{Spec, Testbed};

use crate::api_util::Api;
use crate::bench_util::{qoslab, qoslab_pid, text, Dir};
use crate::realtime::RealTime;
use crate::s3_util::{S3Node, ACCESS, SECRET};
use crate::util::heavy;

const CONFIG: &str = r#"
[[policy]]
name = "ops200"
fixed.max_throughput = "200iops"
"#;

/// The hosts' copies of the binary (the namespace hosts share this machine's /tmp).
fn remove_driver_copies() {
    for e in std::fs::read_dir("/tmp").unwrap().flatten() {
        if e.file_name()
            .to_string_lossy()
            .starts_with("qoslab-driver-")
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn ops_of<'a>(run: &'a Value, client: &str, op: &str) -> &'a Value {
    run["jobs"][0]["ops"]
        .as_array()
        .and_then(|v| v.iter().find(|o| o["client"] == client && o["op"] == op))
        .unwrap_or_else(|| panic!("no {op} results for {client:?}: {}", run["jobs"][0]))
}

#[test]
fn two_load_generators_over_ssh_merge_per_host_and_all_hosts() {
    let _g = heavy();
    let bed = Testbed::build(&Spec {
        hosts: 2,
        ..Spec::default()
    })
    .expect("namespace test bed (needs root, ip netns, sshd)");
    let n = S3Node::start_on(CONFIG, &format!("{}:0", bed.coordinator_addr), &[]);
    let api = Api::new(&n.node.api_url());
    let svm = api.get_ok("/api/protocols/s3/services?fields=svm")["records"][0]["svm"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    api.create(
        &format!("/api/protocols/s3/services/{svm}/buckets"),
        r#"{"name": "shared-200", "qos_policy": {"name": "ops200"}}"#,
    );
    let dir = Dir::new("s3hosts");
    dir.write("keys", &format!("root {ACCESS} {SECRET}\n"));
    // The binary is copied afresh (a previous run's copy is removed first, and this one's
    // after).
    remove_driver_copies();
    struct Cleanup;
    impl Drop for Cleanup {
        fn drop(&mut self) {
            remove_driver_copies();
        }
    }
    let _cleanup = Cleanup;
    let cfg = bed.ssh_config.display().to_string();
    let hosts = bed.host_list();
    let ssh_config = format!("--s3-ssh-option={cfg}");
    let mut args = n.bench_args();
    args.extend([
        "--s3-hosts",
        &hosts,
        "--s3-ssh-option=-F",
        &ssh_config,
        "--s3-bucket",
        "shared-200",
        "--s3-mix",
        "get=1",
        "--s3-size",
        "4KiB",
        "--s3-objects",
        "16",
        "--s3-clients",
        "8",
        "--runtime",
        "6",
        "--ramp",
        "1",
        "--s3-expect",
        "GET.ops_per_s ~= 200 +-2%",
        "--db",
        "hosts.db",
    ]);
    let mut rt = RealTime::start();
    let (pid, o) = qoslab_pid(&dir, &args, Duration::from_secs(180));
    let (out, err) = text(&o);
    // A starved host makes the ceiling's check inconclusive (exit 3, `starved-host` named:
    // seen beside three builds, 175 of 200 GET/s), which the test's own starved-host rule
    // must confirm; anything else is exit 0.
    let inconclusive = o.status.code() == Some(3) && out.contains("INCONCLUSIVE GET.ops_per_s");
    if inconclusive {
        assert!(out.contains("starved-host"), "{out}\n{err}");
        rt.short("the bench's GET.ops_per_s check was inconclusive".into());
    } else {
        assert!(o.status.success(), "{out}\n{err}");
    }
    // The run closed its master connections and removed their control directory.
    let control = format!("/tmp/qoslab-ssh-{pid}");
    assert!(
        !std::path::Path::new(&control).exists(),
        "{control} left behind"
    );
    assert!(
        out.contains("load generator h0: copied qoslab to /tmp/qoslab-driver-"),
        "{out}"
    );
    let e = qoslab(
        &dir,
        &[
            "results", "export", "1", "--db", "hosts.db", "--format", "json",
        ],
        Duration::from_secs(30),
    );
    let run: Value = serde_json::from_slice(&e.stdout).unwrap();
    assert!(
        run["executor"]
            .as_str()
            .unwrap()
            .contains("2 load generator(s): h0, h1"),
        "{run}"
    );
    let all = ops_of(&run, "All hosts", "GET");
    let h0 = ops_of(&run, "h0", "GET");
    let h1 = ops_of(&run, "h1", "GET");
    let rate = |v: &Value| v["ops_per_s"].as_f64().unwrap();
    eprintln!(
        "All hosts {:.1}, h0 {:.1}, h1 {:.1} GET/s",
        rate(all),
        rate(h0),
        rate(h1)
    );
    // Above the ceiling's +2% the ceiling leaked: a plain failure. Below it, a shortfall
    // the starved-host rule judges.
    assert!(rate(all) <= 204.0, "{all}");
    if rate(all) < 196.0 {
        rt.short(format!("All hosts {:.1} GET/s, under 196", rate(all)));
    }
    // One clock and one window: the hosts' shares add up to the whole.
    assert!(
        (rate(h0) + rate(h1) - rate(all)).abs() < 0.5,
        "{h0} {h1} {all}"
    );
    assert_eq!(
        all["ops"].as_u64().unwrap(),
        h0["ops"].as_u64().unwrap() + h1["ops"].as_u64().unwrap()
    );
    for h in [h0, h1] {
        assert!(rate(h) > 60.0, "each host gets a share: {h}");
        assert!(h["ttfb"]["p50_ns"].as_u64().unwrap() > 0);
    }
    let status = if inconclusive {
        "inconclusive"
    } else {
        "passed"
    };
    assert_eq!(run["status"], status, "{run}");
    // Per-host and merged segments are stored; the report draws a chart per host.
    let series = &run["series"][0]["ops"];
    for c in ["h0", "h1", "All hosts"] {
        assert!(
            series.as_array().unwrap().iter().any(|s| s["client"] == c),
            "{c}"
        );
    }
    let html = qoslab(
        &dir,
        &["report", "1", "--db", "hosts.db", "-o", "r.html"],
        Duration::from_secs(30),
    );
    assert!(html.status.success());
    let page = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(page.contains("requests per second per load generator"));
    // The drivers are gone (namespaces share the process table: look at every process).
    // They stop as their ssh sessions close, which the kernel finishes after qoslab has
    // exited (ssh gets qoslab's parent-death signal): on a loaded machine that takes a
    // scheduling round or two, so they get 10 s; a driver left running is still caught.
    let drivers = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.split(' ').any(|a| a == "s3-driver"))
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !drivers().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = drivers();
    assert!(left.is_empty(), "{left:?}");
    rt.finish();
}
