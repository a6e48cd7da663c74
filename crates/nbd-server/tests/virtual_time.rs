//! The real connection code (handshake, transmission loop, scheduler, file backend) driven
//! over an in-memory pipe with tokio's clock paused: ceilings measured in virtual time.

use std::sync::Arc;
use std::time::Duration;

use storage_node::Node;

mod common;
use common::load::{assign_policy_after, load, Client};
use common::{connect, pipelined, reads_4k, TestDir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A node with volume `v` under policy `p` (declared by `policy_toml`).
fn node(policy_toml: &str, tag: &str) -> (Arc<Node>, TestDir) {
    let text =
        format!("{policy_toml}\n[[volume]]\nname = \"v\"\nsize = \"64MiB\"\npolicy = \"p\"\n");
    common::load::node(&text, &format!("vt-{tag}"))
}

/// A node with volume `v` under the fixed policy `p` of `keys` (`max_throughput_iops = 100`).
fn fixed_node(keys: &str, tag: &str) -> (Arc<Node>, TestDir) {
    node(
        &format!("[[policy]]\nname = \"p\"\nfixed = {{ {keys} }}"),
        tag,
    )
}

/// Keep `qd` reads of `bs` bytes in flight on `v` for `secs` virtual seconds; return
/// completions per second.
async fn drive(node: Arc<Node>, qd: usize, bs: u32, secs: u64) -> Vec<u64> {
    load(node, "v", Client::closed(qd, bs, 0), secs)
        .await
        .per_sec
}

#[track_caller]
fn check_rate(per_sec: &[u64], limit: f64, what: &str) {
    let total: u64 = per_sec.iter().sum();
    let achieved = total as f64 / per_sec.len() as f64;
    let err = (achieved - limit) / limit;
    assert!(
        err.abs() <= 0.01,
        "{what}: achieved {achieved:.1}/s vs limit {limit} ({:+.2}%), per second {per_sec:?}",
        err * 100.0
    );
    for (i, &n) in per_sec.iter().enumerate().skip(1) {
        assert!(
            n as f64 <= limit * 1.05,
            "{what}: second {i} did {n} > limit x 1.05; {per_sec:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn iops_ceilings_hold_through_the_server() {
    for (limit, qd) in [
        (100u64, 1usize),
        (500, 16),
        (5000, 64),
        (5000, 4),
        (50_000, 16),
        (50_000, 64),
    ] {
        let (n, _dir) = fixed_node(
            &format!("max_throughput_iops = {limit}"),
            &format!("iops{limit}-{qd}"),
        );
        let per_sec = drive(n, qd, 4096, 10).await;
        check_rate(&per_sec, limit as f64, &format!("{limit} IOPS at QD{qd}"));
    }
}

#[tokio::test(start_paused = true)]
async fn bandwidth_ceilings_hold_through_the_server() {
    for (mbps, bs, qd) in [(10u64, 1u32 << 20, 8usize), (100, 128 << 10, 16)] {
        let (n, _dir) = fixed_node(
            &format!("max_throughput_mbps = {mbps}"),
            &format!("bw{mbps}"),
        );
        let per_sec = drive(n, qd, bs, 10).await;
        let limit_ops = (mbps << 20) as f64 / bs as f64;
        check_rate(
            &per_sec,
            limit_ops,
            &format!("{mbps} MiB/s at {bs} B QD{qd}"),
        );
    }
}

#[tokio::test(start_paused = true)]
async fn adaptive_seed_000_numbers() {
    // 50 IOPS/GB on 64 MiB with 5% reserve: 67,108,864 * 0.95 / 1e9 * 50 = 3.19 -> the
    // absolute minimum (200) applies.
    let (n, _dir) = node(
        "[[policy]]\nname = \"p\"\nadaptive = { peak_iops = \"50IOPS/GB\", absolute_min_iops = 200, peak_iops_allocation = \"allocated_space\", block_size = \"any\" }",
        "adaptive",
    );
    let v = n.volume("v").unwrap();
    assert_eq!(v.limits().ceiling.iops, 200);
    let per_sec = drive(n, 8, 4096, 5).await;
    check_rate(&per_sec, 200.0, "adaptive absolute minimum");
}

#[tokio::test(start_paused = true)]
async fn shutdown_finishes_in_flight_requests_then_closes() {
    let (n, _dir) = fixed_node("max_throughput_iops = 100", "shutdown");
    let (mut client, conn) = pipelined(&n, 1..=8).await;
    // Let the server read the batch (they are QoS-delayed: 100 IOPS), then shut down.
    tokio::time::sleep(Duration::from_millis(5)).await;
    n.begin_shutdown();
    let mut cookies = Vec::new();
    let mut buf = vec![0u8; 4096];
    for _ in 0..8 {
        let mut hdr = [0u8; 16];
        client.read_exact(&mut hdr).await.unwrap();
        assert_eq!(
            u32::from_be_bytes(hdr[4..8].try_into().unwrap()),
            0,
            "in-flight request must complete"
        );
        cookies.push(u64::from_be_bytes(hdr[8..16].try_into().unwrap()));
        client.read_exact(&mut buf).await.unwrap();
    }
    cookies.sort();
    assert_eq!(cookies, (1..=8).collect::<Vec<_>>());
    // Then the server hangs up.
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
    conn.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn moving_a_volume_to_another_policy_applies_to_connected_clients() {
    let (n, _dir) = node(
        "[[policy]]\nname = \"p\"\nfixed = { max_throughput_iops = 5000 }\n[[policy]]\nname = \"slow\"\nfixed = { max_throughput_iops = 1000 }",
        "live",
    );
    let vol = n.volume("v").unwrap();
    assign_policy_after(&n, "v", "slow", Duration::from_secs(3));
    let per_sec = drive(n, 32, 4096, 6).await;
    check_rate(&per_sec[1..3], 5000.0, "before the move");
    check_rate(&per_sec[4..], 1000.0, "after the move");
    assert_eq!(vol.limits().ceiling.iops, 1000);
}

#[tokio::test(start_paused = true)]
async fn used_space_policy_follows_writes_and_trims() {
    // 1,000,000 IOPS per TB of used space: 32 MiB used -> 33 IOPS; absolute min 10.
    let (n, _dir) = node(
        "[[policy]]\nname = \"p\"\nadaptive = { peak_iops = 1000000, absolute_min_iops = 10, peak_iops_allocation = \"used_space\", block_size = \"any\" }",
        "used",
    );
    let v = n.volume("v").unwrap();
    assert_eq!(
        v.limits().ceiling.iops,
        10,
        "nothing written: absolute minimum"
    );
    v.backend.write_at(&vec![1u8; 32 << 20], 0).unwrap();
    v.mark_dirty();
    n.refresh_used_space();
    assert_eq!(v.space().used, 32 << 20);
    assert_eq!(
        v.limits().ceiling.iops,
        (32u64 << 20) * 1_000_000 / 1_000_000_000_000
    );
    v.backend.trim(0, 32 << 20).unwrap();
    v.mark_dirty();
    n.refresh_used_space();
    assert_eq!(v.space().used, 0);
    assert_eq!(v.limits().ceiling.iops, 10);
}

/// A client that pipelined a backlog under a 2 IOPS ceiling and went away gives its
/// reservations back when its connection closes (as a closed NFS connection's gate does):
/// the next client on the volume is not held behind 199 requests nobody waits for.
#[tokio::test(start_paused = true)]
async fn a_closed_connection_gives_its_backlog_back() {
    let (n, _dir) = fixed_node("max_throughput_iops = 2", "abandon");
    let (gone, conn) = pipelined(&n, 1..=200).await;
    // The server reads the batch (one starts, 199 wait: 100 s of reservations), then the
    // client leaves without reading a reply.
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(gone);
    // Its connection ends at the client's EOF (nothing more can be replied).
    conn.await.unwrap().unwrap();
    let (mut next, _) = connect(&n, "v", 1 << 20).await;
    let t0 = tokio::time::Instant::now();
    let mut buf = vec![0u8; 16 + 4096];
    for cookie in 1..=2u64 {
        next.write_all(&reads_4k(cookie..=cookie)).await.unwrap();
        next.read_exact(&mut buf).await.unwrap();
    }
    // Two reads at 2 IOPS behind the last one that started: at most 1 s (two spacings);
    // behind the abandoned backlog they would have waited ~99 s.
    assert!(
        t0.elapsed() <= Duration::from_secs(1),
        "the next connection waited {:?}",
        t0.elapsed()
    );
}
