//! fio's client/server mode for real: two `fio --server` processes on loopback ports, one
//! plan, per-client and merged ("All clients") results stored.

use std::time::Duration;

use crate::bench_util::{plan_500, qoslab, text, Dir, FioServer};

#[test]
fn two_fio_servers_per_client_and_merged_results_are_stored() {
    let (a, b) = (FioServer::start(), FioServer::start());
    let d = Dir::new("cs");
    // Both clients share the volume's 500 IOPS: the merged rate is what the ceiling holds.
    d.write("p.toml", &plan_500(&["iops <= 500 +-5%", "iops >= 300"]));
    let o = qoslab(
        &d,
        &[
            "bench",
            "p.toml",
            "--db",
            "r.db",
            "--client",
            &a.client_arg(),
            "--client",
            &b.client_arg(),
        ],
        Duration::from_secs(60),
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    let o = qoslab(
        &d,
        &[
            "results", "export", "last", "--format", "csv", "--db", "r.db",
        ],
        Duration::from_secs(20),
    );
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
    let o = qoslab(
        &d,
        &[
            "results", "export", "last", "--format", "json", "--db", "r.db",
        ],
        Duration::from_secs(20),
    );
    let (json, _) = text(&o);
    assert!(
        json.contains("\"executor\": \"fio clients 127.0.0.1,"),
        "{json}"
    );
}
