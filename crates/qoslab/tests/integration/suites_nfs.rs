//! Seed 002's NFS suite against a qoslab export, on namespace hosts: the node serves a NAS
//! volume under a QoS ceiling on the bed's coordinator address; each load generator (a
//! network namespace with sshd) runs `fio --server`, and the coordinator drives them all at
//! once through fio's client/server mode, each generator's fio reaching the export with its
//! `nfs` ioengine (libnfs). This machine's kernel has no NFS client, so this is the
//! translation of the seed's kernel mount on every load generator (docs/NFS.md).
//!
//! - the export's policy is the default (loopback only): the suite refuses before any load,
//!   naming the host and MNT3ERR_ACCES;
//! - `qoslab export-policy create` admits the bed's subnet: the prepare step writes each
//!   generator's own file into the volume's tree, and the random read and write jobs run
//!   on both generators at once, per client and "All clients";
//! - the volume's ceiling is one budget for both generators: All clients' IOPS is the
//!   ceiling.

use std::time::Instant;

use serde_json::Value;
use testbed::{Spec, Testbed};

use crate::api_util::Api;
use crate::bench_util::Dir;
use crate::nfs_node::nfs_port;
use crate::suites::{bench, last_run, per_client};
use crate::util::{heavy, require_tool, Node, Out};

/// The volume's ceiling, shared by both load generators.
const CEILING: f64 = 400.0;

fn cli(node: &Node, args: &[&str]) -> Out {
    crate::api_cli::cli(node, args).ok()
}

/// `--suite nfs` on h0 and h1, every generator on the export at `url`, 8 MiB per job.
pub(crate) fn suite_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    suite_args_on("nfs", "h0,h1", url, extra)
}

/// `--suite SUITE` on `hosts`, every generator on the target `url`, one iteration of one
/// 8 MiB job each; then `extra`.
pub(crate) fn suite_args_on<'a>(
    suite: &'a str,
    hosts: &'a str,
    url: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut a = vec![
        "--suite",
        suite,
        "--hosts",
        hosts,
        "--targets",
        url,
        "--iterations",
        "1",
        "--numjobs",
        "1",
        "--size",
        "8MiB",
    ];
    a.extend_from_slice(extra);
    a
}

/// A node serving the NAS volume `suite` (256 MiB at `/suite`, no snapshot reserve) under
/// a `ceiling` IOPS policy over NFS on the bed's coordinator address; and the export's port.
pub(crate) fn node_for_the_bed(bed: &Testbed, ceiling: f64) -> (Node, u16) {
    let listen = format!("{}:0", bed.coordinator_addr);
    let node = Node::start_with("", &["--listen-nfs", &listen]);
    let (policy, iops) = (format!("lg{ceiling}"), format!("{ceiling}iops"));
    cli(
        &node,
        &["policy", "create", &policy, "--max-throughput", &iops],
    );
    cli(
        &node,
        &[
            "volume",
            "create",
            "suite",
            "--size",
            "256MiB",
            "--qos-policy",
            &policy,
            "--nas-path",
            "/suite",
            "--snapshot-reserve",
            "0",
        ],
    );
    let port = nfs_port(&node);
    (node, port)
}

/// The volume's tree is still empty (a refused suite wrote nothing).
pub(crate) fn nothing_written(node: &Node) {
    assert!(
        std::fs::read_dir(node.data_dir().join("nas/suite"))
            .unwrap()
            .next()
            .is_none(),
        "nothing written"
    );
}

/// Admit the bed's subnet to the volume's export (a new export policy `bed`), its root as
/// root (the load generators' fio runs as root and writes into the volume's root-owned
/// 0755 tree: ONTAP's default `superuser none` would map it to 65534 and refuse).
pub(crate) fn admit_the_bed(node: &Node, bed: &Testbed) {
    let addr = &bed.coordinator_addr;
    let subnet = format!("{}.0/24", addr.rsplit_once('.').unwrap().0);
    cli(
        node,
        &[
            "export-policy",
            "create",
            "bed",
            "--clients",
            &subnet,
            "--superuser",
            "sys",
        ],
    );
    cli(
        node,
        &["volume", "modify", "suite", "--export-policy", "bed"],
    );
}

/// Each load generator's (h0, h1) file of the prepare step, 8 MiB, in the volume `suite`'s
/// tree on `node`; `ctx` is added to a failure.
pub(crate) fn prepared_files_in_the_volume(node: &Node, ctx: &str) {
    for h in ["h0", "h1"] {
        let f = node.data_dir().join(format!("nas/suite/qoslab.{h}.0"));
        let len = std::fs::metadata(&f)
            .unwrap_or_else(|e| panic!("{}: {e}{ctx}", f.display()))
            .len();
        assert_eq!(len, 8 << 20, "{}", f.display());
    }
}

/// The nfs suite's two measured jobs of `run` on h0 and h1, each with its "All clients"
/// IOPS (reads and writes); every client measured some.
pub(crate) fn all_clients_iops(run: &Value, ceiling: f64) -> Vec<(&Value, f64)> {
    let measured = per_client(run, "nfs", &["h0", "h1"]);
    assert_eq!(measured.len(), 2, "{}", run["jobs"]);
    let iops =
        |x: &Value| x["read"]["iops"].as_f64().unwrap() + x["write"]["iops"].as_f64().unwrap();
    measured
        .into_iter()
        .map(|(j, res)| {
            for x in res {
                assert!(iops(x) > 0.0, "{x}");
            }
            let merged = res.iter().find(|x| x["client"] == "All clients").unwrap();
            let all = iops(merged);
            eprintln!(
                "{}: All clients {all:.1} IOPS (ceiling {ceiling})",
                j["name"]
            );
            (j, all)
        })
        .collect()
}

#[test]
fn seed002_nfs_suite_on_namespace_hosts_against_a_nas_volume() {
    let _g = heavy();
    require_tool("fio");
    let bed = Testbed::build(&Spec {
        hosts: 2,
        link_mbit: 1000,
        slow_pairs: Vec::new(),
        disks_per_host: 0,
        disk_bytes: 0,
        vm_hosts: 0,
        vm_iscsi: false,
    })
    .unwrap();
    let addr = bed.coordinator_addr.clone();
    let (node, p) = node_for_the_bed(&bed, CEILING);
    let url = format!("nfs://{addr}/suite?nfsport={p}&mountport={p}");
    let d = Dir::new("suites-nfs");
    // The default export policy admits loopback only: both hosts refused before any load
    // (their connections closed at accept: no export admits them).
    let (code, out, err) = bench(&d, &bed, &suite_args(&url, &["--runtime", "1s"]));
    assert_eq!(code, Some(2), "{out}{err}");
    for h in ["h0", "h1"] {
        assert!(
            err.contains(&format!("{h}: {url}: fio's nfs engine could not mount"))
                && err.contains("nfs_service failed"),
            "{h} refused: {err}"
        );
    }
    nothing_written(&node);
    admit_the_bed(&node, &bed);

    let started = Instant::now();
    let (code, out, err) = bench(
        &d,
        &bed,
        &suite_args(
            &url,
            &[
                "--jobs",
                "fio.read.random,fio.write.random",
                "--runtime",
                "4s",
                "--ramp",
                "1s",
            ],
        ),
    );
    eprintln!(
        "nfs suite on 2 load generators: {:?}\n{out}",
        started.elapsed()
    );
    // 0: every verdict held; 3: a steady-state verdict inconclusive (4 s is short).
    assert!(matches!(code, Some(0 | 3)), "{out}{err}");
    assert!(
        out.contains("fio's nfs engine") && out.contains("capacity unknown"),
        "{out}"
    );
    let place = format!("h0+h1:nfs://{addr}/suite+nfs://{addr}/suite");
    assert!(
        out.lines()
            .any(|l| l.contains("fio.read.random") && l.contains(&place)),
        "{place}: {out}"
    );
    // The prepare step: each load generator's own file, 8 MiB, in the volume's tree.
    prepared_files_in_the_volume(&node, "");
    for (j, all) in all_clients_iops(&last_run(&d), CEILING) {
        // One ceiling for both generators: the pacer spaces the volume's requests exactly,
        // and 2 x 32 requests queued are 160 ms of backlog at 400 IOPS, so the merged rate
        // is the ceiling (+-5%: fio's windows start and end within a request or two of the
        // ramp's end on each client, and the clients' clocks start apart by the ssh round
        // trips, a few ms).
        assert!(
            all <= CEILING * 1.05,
            "{}: All clients {all:.1} IOPS above the ceiling {CEILING}",
            j["name"]
        );
        // Below it only when the clients could not keep the queue full: a starved client
        // (this machine busy beside the test) shows as a job not in steady state, and the
        // run says so itself (an inconclusive verdict): the lower bound is then its call.
        let steady = j["verdicts"]
            .as_array()
            .is_none_or(|v| v.iter().all(|v| v["outcome"] != "inconclusive"));
        if steady {
            assert!(
                all >= CEILING * 0.95,
                "{}: All clients {all:.1} IOPS, ceiling {CEILING}, steady",
                j["name"]
            );
        } else {
            eprintln!("{}: not steady by the run's own verdict", j["name"]);
        }
    }
    // The node counted the load generators' I/O on the volume (the prepare's writes, the
    // jobs' reads and writes).
    let v =
        Api::new(&node.api_url()).get_ok("/api/storage/volumes?name=suite&fields=statistics,nas");
    let v = &v["records"][0];
    assert_eq!(v["nas"]["export_policy"]["name"], "bed", "{v}");
    let ops = &v["statistics"]["iops_raw"];
    assert!(
        ops["read"].as_u64().unwrap_or(0) > 0 && ops["write"].as_u64().unwrap_or(0) > 0,
        "{v}"
    );
    drop(node);
    drop(bed);
}
