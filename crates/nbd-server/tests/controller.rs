//! The emulated controller (`[capacity]`, mClock) through the real connection code, with
//! tokio's clock paused: floors hold against a bully, the FIFO control lets the bully
//! crowd them out, queue time is split into ceiling and floor waits, and a volume moving
//! between policies keeps its queued requests.

use std::sync::Arc;
use std::time::Duration;

use storage_node::Node;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

mod common;
use common::load::{assign_policy_after, load, node, Client, Load};
use common::{connect, pipelined, reads_4k};

const ISOLATION: &str = r#"
[capacity]
iops = 20000
discipline = "DISCIPLINE"

[[policy]]
name = "protected"
fixed = { min_throughput_iops = 5000 }

[[volume]]
name = "a"
size = "64MiB"
policy = "protected"

[[volume]]
name = "b"
size = "64MiB"
policy = "protected"

[[volume]]
name = "bully"
size = "64MiB"
"#;

/// Two protected volumes offered 5,000 IOPS each (at most 16 outstanding) and an
/// unlimited bully at QD 64, on a 20,000 IOPS node.
async fn isolation(discipline: &str) -> (Load, Load, Load, Arc<Node>) {
    let (n, _dir) = node(&ISOLATION.replace("DISCIPLINE", discipline), discipline);
    let secs = 5;
    let a = tokio::spawn(load(n.clone(), "a", Client::reads(16, Some(5000)), secs));
    let b = tokio::spawn(load(n.clone(), "b", Client::reads(16, Some(5000)), secs));
    let bully = tokio::spawn(load(n.clone(), "bully", Client::reads(64, None), secs));
    (a.await.unwrap(), b.await.unwrap(), bully.await.unwrap(), n)
}

#[tokio::test(start_paused = true)]
async fn floors_hold_against_a_bully_and_fifo_lets_it_crowd_them_out() {
    let (a, b, bully, n) = isolation("mclock").await;
    for (name, l) in [("a", &a), ("b", &b)] {
        let got = l.rate(1);
        assert!(
            (4950.0..=5050.0).contains(&got),
            "mclock: protected {name} did {got:.0} IOPS, want 5,000 ±1%: {:?}",
            l.per_sec
        );
        assert!(
            l.mean_lat_ns < 1e6,
            "mclock: {name} mean latency {} ns",
            l.mean_lat_ns
        );
    }
    let total = a.rate(1) + b.rate(1) + bully.rate(1);
    assert!(
        (19_600.0..=20_200.0).contains(&total),
        "node capacity 20,000 IOPS, measured {total:.0}"
    );
    // The bully waited for the node (floors of others), not for a ceiling of its own.
    let bs = &n.volume("bully").unwrap().stats;
    let floor_wait = bs.floor_wait_ns.load(std::sync::atomic::Ordering::Relaxed);
    let ceiling_wait = bs
        .ceiling_wait_ns
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        floor_wait > 0 && ceiling_wait == 0,
        "bully waits: floor {floor_wait} ceiling {ceiling_wait}"
    );

    let (a, b, bully, _) = isolation("fifo").await;
    for (name, l) in [("a", &a), ("b", &b)] {
        let got = l.rate(1);
        // Arrival order shares the node by queue occupancy: a's 16 against the bully's
        // 64 (fewer while its replies are in flight) gives a ~4,000 IOPS, well short.
        assert!(
            got < 4500.0,
            "fifo: protected {name} did {got:.0} IOPS; the bully should crowd it out: {:?}",
            l.per_sec
        );
    }
    assert!(bully.rate(1) > 12_000.0, "fifo bully {:.0}", bully.rate(1));
}

#[tokio::test(start_paused = true)]
async fn ceilings_under_the_controller_count_as_ceiling_wait() {
    let (n, _dir) = node(
        "[capacity]\niops = 50000\n[[policy]]\nname = \"cap\"\nfixed = { max_throughput_iops = 1000 }\n[[volume]]\nname = \"c\"\nsize = \"64MiB\"\npolicy = \"cap\"\n",
        "ceiling",
    );
    let l = load(n.clone(), "c", Client::reads(8, None), 4).await;
    let got = l.rate(1);
    assert!((990.0..=1010.0).contains(&got), "{got} {:?}", l.per_sec);
    let s = &n.volume("c").unwrap().stats;
    let ceiling = s.ceiling_wait_ns.load(std::sync::atomic::Ordering::Relaxed);
    let floor = s.floor_wait_ns.load(std::sync::atomic::Ordering::Relaxed);
    assert!(ceiling > 0, "ceiling wait {ceiling}");
    assert!(
        floor < ceiling / 100,
        "an idle node adds no floor wait: {floor} vs {ceiling}"
    );
}

#[tokio::test(start_paused = true)]
async fn overcommitted_floors_are_scaled_and_reported() {
    let (n, _dir) = node(
        "[capacity]\niops = 10000\n[[policy]]\nname = \"p\"\nfixed = { min_throughput_iops = 8000 }\n[[volume]]\nname = \"x\"\nsize = \"64MiB\"\npolicy = \"p\"\n[[volume]]\nname = \"y\"\nsize = \"64MiB\"\npolicy = \"p\"\n",
        "overcommit",
    );
    let f = n
        .scheduler
        .overcommit()
        .expect("16,000 of floors on 10,000 IOPS");
    assert!((f - 0.625).abs() < 1e-9, "{f}");
    let x = tokio::spawn(load(n.clone(), "x", Client::reads(32, None), 4));
    let y = tokio::spawn(load(n.clone(), "y", Client::reads(32, None), 4));
    let (x, y) = (x.await.unwrap(), y.await.unwrap());
    for l in [&x, &y] {
        let got = l.rate(1);
        assert!((4950.0..=5050.0).contains(&got), "{got} {:?}", l.per_sec);
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_change_releases_queued_requests() {
    // A volume moved off its flow while requests wait in the controller: they complete.
    let (n, _dir) = node(
        "[capacity]\niops = 1000\n[[policy]]\nname = \"slow\"\nfixed = { max_throughput_iops = 10 }\n[[policy]]\nname = \"fast\"\nfixed = { max_throughput_iops = 900 }\n[[volume]]\nname = \"v\"\nsize = \"64MiB\"\npolicy = \"slow\"\n",
        "move",
    );
    assign_policy_after(&n, "v", "fast", Duration::from_millis(1500));
    let l = load(n.clone(), "v", Client::reads(32, None), 4).await;
    assert!(l.per_sec[0] <= 12, "slow first: {:?}", l.per_sec);
    assert!(l.rate(2) > 850.0, "then fast: {:?}", l.per_sec);
}

#[tokio::test(start_paused = true)]
async fn shared_and_adaptive_floors_hold_as_a_group_and_per_volume() {
    // A shared fixed policy's floor covers its two volumes together; an adaptive policy's
    // expected IOPS x allocated space is a per-volume floor (64 MiB x 100,000,000 IOPS/TB
    // = 6,710 IOPS, above its absolute minimum).
    let (n, _dir) = node(
        r#"
[capacity]
iops = 20000
[[policy]]
name = "group"
fixed = { min_throughput_iops = 6000, capacity_shared = true }
[[policy]]
name = "adaptive"
adaptive = { expected_iops = 100000000, peak_iops = 1000000000, absolute_min_iops = 10, peak_iops_allocation = "allocated_space" }
[[volume]]
name = "g1"
size = "64MiB"
policy = "group"
[[volume]]
name = "g2"
size = "64MiB"
policy = "group"
[[volume]]
name = "ad"
size = "64MiB"
snapshot_reserve_percent = 0
policy = "adaptive"
[[volume]]
name = "bully"
size = "64MiB"
"#,
        "group",
    );
    let ad_floor = n.volume("ad").unwrap().limits().floor.iops;
    assert_eq!(ad_floor, 6710);
    assert_eq!(n.scheduler.status().unwrap().reserved.iops, 6000 + 6710);
    let g1 = tokio::spawn(load(n.clone(), "g1", Client::reads(32, None), 4));
    let g2 = tokio::spawn(load(n.clone(), "g2", Client::reads(32, None), 4));
    let ad = tokio::spawn(load(n.clone(), "ad", Client::reads(32, None), 4));
    let bully = tokio::spawn(load(n.clone(), "bully", Client::reads(64, None), 4));
    let (g1, g2, ad, bully) = (
        g1.await.unwrap(),
        g2.await.unwrap(),
        ad.await.unwrap(),
        bully.await.unwrap(),
    );
    let group = g1.rate(1) + g2.rate(1);
    eprintln!(
        "group {group:.0} (g1 {:.0} g2 {:.0}), ad {:.0}, bully {:.0}",
        g1.rate(1),
        g2.rate(1),
        ad.rate(1),
        bully.rate(1)
    );
    // Floors first, then the rest shared equally by the three flows (group, ad, bully).
    let spare = (20000.0 - 6000.0 - 6710.0) / 3.0;
    for (what, got, want) in [
        ("group", group, 6000.0 + spare),
        ("adaptive", ad.rate(1), 6710.0 + spare),
        ("bully", bully.rate(1), spare),
    ] {
        assert!(
            (got - want).abs() <= want * 0.02,
            "{what}: {got:.0} IOPS, want {want:.0} ±2%"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_closed_connections_queued_requests_do_not_hold_back_the_next_client() {
    let (n, _dir) = node(
        "[capacity]\niops = 1000\n[[policy]]\nname = \"slow\"\nfixed = { max_throughput_iops = 10 }\n[[volume]]\nname = \"v\"\nsize = \"64MiB\"\npolicy = \"slow\"\n",
        "closed",
    );
    // Client A queues 8 reads at 10 IOPS and goes away after the first reply.
    let (mut a, conn_a) = pipelined(&n, 1..=8).await;
    let mut reply = vec![0u8; 16 + 4096];
    a.read_exact(&mut reply).await.unwrap();
    drop(a);
    let _ = conn_a.await;
    assert_eq!(
        n.scheduler.status().unwrap().queued,
        0,
        "A's tickets left with it"
    );
    // Client B's read goes at the flow's next slot, not behind A's seven.
    let (mut b, _) = connect(&n, "v", 1 << 20).await;
    let start = Instant::now();
    b.write_all(&reads_4k(1..=1)).await.unwrap();
    b.read_exact(&mut reply).await.unwrap();
    let waited = start.elapsed();
    assert!(
        waited <= Duration::from_millis(150),
        "B waited {waited:?} (A's 7 abandoned requests would be 700 ms)"
    );
}
