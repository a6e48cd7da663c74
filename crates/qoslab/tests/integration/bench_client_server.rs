//! fio's client/server mode for real: two `fio --server` processes on loopback ports, one
//! plan, per-client and merged ("All clients") results stored.

use std::process::Output;
use std::time::Duration;

use crate::bench_util::{export, plan_500, qoslab, succeeded, text, usage_error, Dir, FioServer};

/// `qoslab bench p.toml --db r.db` in `d`, with a `--client` for each of `clients` and
/// then `more`; 60 s at the most.
fn bench_clients(d: &Dir, clients: &[&str], more: &[&str]) -> Output {
    let mut args = vec!["bench", "p.toml", "--db", "r.db"];
    for c in clients {
        args.extend(["--client", c]);
    }
    args.extend(more);
    qoslab(d, &args, Duration::from_secs(60))
}

#[test]
fn two_fio_servers_per_client_and_merged_results_are_stored() {
    let (a, b) = (FioServer::start(), FioServer::start());
    let d = Dir::new("cs");
    // Both clients share the volume's 500 IOPS: the merged rate is what the ceiling holds.
    d.write("p.toml", &plan_500(&["iops <= 500 +-5%", "iops >= 300"]));
    // The load generators' host, sampled through the ssh transport's scripts (`localhost`
    // runs them without ssh; tests/suites.rs covers ssh itself).
    let o = bench_clients(
        &d,
        &[&a.client_arg(), &b.client_arg()],
        &["--hosts", "localhost"],
    );
    succeeded(&o);
    let o = export(&d, "last", "csv", Duration::from_secs(20));
    let (csv, _) = text(&o);
    for client in [
        format!("127.0.0.1:{}", a.port),
        format!("127.0.0.1:{}", b.port),
        "All clients".to_string(),
    ] {
        assert!(
            csv.lines()
                .any(|l| l.contains(&format!(",done,{client},read,"))),
            "no row for {client}:\n{csv}"
        );
    }
    let o = export(&d, "last", "json", Duration::from_secs(20));
    let (json, _) = text(&o);
    assert!(
        json.contains("\"executor\": \"fio clients 127.0.0.1,"),
        "{json}"
    );
    // Tool sets of this machine and of the load generators' host, each with fio's servers.
    let run: serde_json::Value = serde_json::from_str(&json).unwrap();
    let hosts: Vec<String> = run["series"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["hosts"].as_array().into_iter().flatten())
        .filter(|h| h["samples"].as_array().is_some_and(|a| !a.is_empty()))
        .filter_map(|h| h["host"].as_str().map(str::to_string))
        .collect();
    assert!(hosts.iter().any(|h| h == "local"), "{hosts:?}");
    assert!(hosts.iter().any(|h| h == "localhost"), "{hosts:?}");
}

#[test]
fn hosts_without_a_client_or_unreachable_are_refused_before_any_job() {
    let d = Dir::new("cs-hosts");
    d.write("p.toml", &plan_500(&["iops <= 500 +-5%"]));
    let err = usage_error(
        &d,
        &["bench", "p.toml", "--db", "r.db", "--hosts", "localhost"],
        Duration::from_secs(30),
    );
    assert!(err.contains("give --client too"), "{err}");
    // A host ssh cannot reach is named, and nothing runs.
    let o = bench_clients(
        &d,
        &["127.0.0.1,1"],
        &["--hosts", "nohost.invalid", "--ssh-opt=-oConnectTimeout=2"],
    );
    let (out, err) = text(&o);
    assert_ne!(o.status.code(), Some(0), "{out}{err}");
    assert!(err.contains("nohost.invalid"), "{err}");
    assert!(
        !d.path().join("r.db").exists() || !out.contains("randread"),
        "{out}"
    );
}
