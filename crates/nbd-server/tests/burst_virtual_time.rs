//! Burst credits and the provisioned file system through the real connection code
//! (handshake, transmission loop, scheduler, file backend), with tokio's clock paused.

use std::sync::Arc;
use std::time::Duration;

use nbd_proto::*;
use storage_node::Node;

mod common;
use common::connect;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// One connection keeping `qd` requests (`cmd`, `bs` bytes, sequential over `span` bytes from
/// `base`) in flight for `secs`; completions per second.
async fn conn(
    node: Arc<Node>,
    cmd: u16,
    qd: usize,
    bs: u32,
    base: u64,
    span: u64,
    secs: u64,
) -> Vec<u64> {
    let (mut client, _) = connect(&node, "v", 8 << 20).await;
    let start = Instant::now();
    let mut per_sec = vec![0u64; secs as usize];
    let mut n = 0u64;
    let payload = vec![0x5au8; bs as usize];
    let send = |out: &mut Vec<u8>, n: &mut u64| {
        *n += 1;
        let offset = base + (*n * bs as u64) % span;
        encode_request(
            out,
            &Request {
                flags: 0,
                command: cmd,
                cookie: *n,
                offset,
                length: bs,
            },
        );
        if cmd == CMD_WRITE {
            out.extend_from_slice(&payload);
        }
    };
    let mut out = Vec::new();
    for _ in 0..qd {
        send(&mut out, &mut n);
    }
    client.write_all(&out).await.unwrap();
    let mut data = vec![0u8; bs as usize];
    loop {
        let mut hdr = [0u8; 16];
        client.read_exact(&mut hdr).await.unwrap();
        assert_eq!(
            u32::from_be_bytes(hdr[4..8].try_into().unwrap()),
            0,
            "I/O failed"
        );
        if cmd == CMD_READ {
            client.read_exact(&mut data).await.unwrap();
        }
        let t = start.elapsed();
        if t >= Duration::from_secs(secs) {
            return per_sec;
        }
        per_sec[t.as_secs() as usize] += 1;
        out.clear();
        send(&mut out, &mut n);
        client.write_all(&out).await.unwrap();
    }
}

/// `conns` connections at once, each on its own part of `span`; completions per second, summed.
async fn drive(
    node: &Arc<Node>,
    conns: usize,
    cmd: u16,
    qd: usize,
    bs: u32,
    span: u64,
    secs: u64,
) -> Vec<u64> {
    let part = span / conns as u64;
    let tasks: Vec<_> = (0..conns)
        .map(|i| tokio::spawn(conn(node.clone(), cmd, qd, bs, i as u64 * part, part, secs)))
        .collect();
    let mut total = vec![0u64; secs as usize];
    for t in tasks {
        for (s, n) in total.iter_mut().zip(t.await.unwrap()) {
            *s += n;
        }
    }
    total
}

#[track_caller]
fn near(what: &str, got: f64, want: f64, tol: f64) {
    let err = (got - want) / want;
    assert!(
        err.abs() <= tol,
        "{what}: got {got:.1}, want {want:.1} ({:+.2}%)",
        err * 100.0
    );
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

/// gp2 on 100 GiB, bucket 1/1000 (5,400 credits): 2 s at 3,000 IOPS, then 300.
const GP2: &str = "[[policy]]\nname = \"p\"\nprovisioned = { model = \"ebs-gp2\", bucket_scale = 0.001 }\n[[volume]]\nname = \"v\"\nsize = \"100GiB\"\npolicy = \"p\"\n";

#[tokio::test(start_paused = true)]
async fn gp2_preset_bursts_then_settles_through_the_server() {
    let (n, _dir) = common::load::node(GP2, "gp2");
    let vol = n.volume("v").unwrap();
    let (iops, _) = n.scheduler.credits(vol.flow(), n.clock.now());
    assert_eq!(iops.unwrap().balance, 5_400);
    let per_sec = drive(&n, 1, CMD_READ, 16, 4096, 64 << 20, 12).await;
    // 5,400 credits over 2,700/s of net drain: 2 s at 3,000, then 300.
    near("burst seconds 0-1", mean(&per_sec[0..2]), 3_000.0, 0.01);
    near("baseline after", mean(&per_sec[3..]), 300.0, 0.01);
    let (iops, _) = n.scheduler.credits(vol.flow(), n.clock.now());
    assert!(iops.unwrap().balance < 10, "{iops:?}");
    // Idle 9 s refills 2,700 credits: one second at 3,000 again.
    tokio::time::sleep(Duration::from_secs(9)).await;
    let (iops, _) = n.scheduler.credits(vol.flow(), n.clock.now());
    near(
        "refill after 9 s idle",
        iops.unwrap().balance as f64,
        2_700.0,
        0.01,
    );
    let per_sec = drive(&n, 1, CMD_READ, 16, 4096, 64 << 20, 3).await;
    near("second burst", per_sec[0] as f64, 3_000.0, 0.01);
    near("then baseline", per_sec[2] as f64, 300.0, 0.02);
}

#[tokio::test(start_paused = true)]
async fn gp2_preset_bursts_under_the_emulated_controller() {
    let (n, _dir) = common::load::node(&format!("[capacity]\niops = 100000\n{GP2}"), "gp2-ctl");
    let per_sec = drive(&n, 1, CMD_READ, 16, 4096, 64 << 20, 8).await;
    near("burst (controller)", mean(&per_sec[0..2]), 3_000.0, 0.01);
    near("baseline (controller)", mean(&per_sec[3..]), 300.0, 0.01);
}

#[tokio::test(start_paused = true)]
async fn ontap_ceiling_mode_allows_plus_50_percent_briefly() {
    let toml = "[node]\nceiling_mode = \"ontap\"\n[[policy]]\nname = \"p\"\nfixed = { max_throughput_iops = 1000 }\n[[volume]]\nname = \"v\"\nsize = \"64MiB\"\npolicy = \"p\"\n";
    let (n, _dir) = common::load::node(toml, "ontap");
    let per_sec = drive(&n, 1, CMD_READ, 16, 4096, 32 << 20, 10).await;
    near("first second", per_sec[0] as f64, 1_500.0, 0.01);
    assert!(
        per_sec.iter().all(|&x| x as f64 <= 1_500.0 * 1.01),
        "{per_sec:?}"
    );
    near("after", mean(&per_sec[2..]), 1_000.0, 0.01);
    // Strict (default) mode: never above the ceiling.
    let (n, _dir) = common::load::node(&toml.replace("ontap", "strict"), "strict");
    let per_sec = drive(&n, 1, CMD_READ, 16, 4096, 32 << 20, 4).await;
    assert!(
        per_sec.iter().all(|&x| x as f64 <= 1_000.0 * 1.01),
        "{per_sec:?}"
    );
}

/// A small provisioned file system: network 100 MiB/s bursting to 400 (1 s of burst),
/// disk 10 MiB/s, 4 MiB memory cache, no NVMe, 1 MiB blocks, 200 MiB/s per connection.
const FS: &str = "[provisioned]\nnetwork = { baseline = \"100MB/s\", burst = \"400MB/s\" }\ndisk = { baseline = \"10MB/s\" }\ndisk_iops = { baseline = 1000 }\nburst_duration = 1\nmemory_cache = \"4MiB\"\ncache_block = \"1MiB\"\nper_connection = \"200MB/s\"\n[[volume]]\nname = \"v\"\nsize = \"64MiB\"\n";

#[tokio::test(start_paused = true)]
async fn provisioned_fs_cache_hits_connections_and_burst() {
    const MIB: f64 = 1_048_576.0;
    // Writes cost disk: 10 MiB/s.
    let (n, _dir) = common::load::node(FS, "fs-write");
    let w = drive(&n, 1, CMD_WRITE, 4, 1 << 20, 4 << 20, 3).await;
    near("writes at the disk baseline", mean(&w[1..]), 10.0, 0.1);
    // Now 4 MiB are in memory: cached reads from one connection are held to 200 MiB/s.
    let r1 = drive(&n, 1, CMD_READ, 8, 1 << 20, 4 << 20, 1).await;
    near("1 connection, cached", r1[0] as f64, 200.0, 0.03);
    // Four connections: the network's burst (400) while credits last, then its baseline.
    let (n, _dir) = common::load::node(FS, "fs-read4");
    drive(&n, 1, CMD_WRITE, 4, 1 << 20, 4 << 20, 1).await;
    tokio::time::sleep(Duration::from_secs(5)).await; // let the network bucket refill
    let r4 = drive(&n, 4, CMD_READ, 8, 1 << 20, 4 << 20, 6).await;
    near("4 connections, burst", r4[0] as f64, 400.0, 0.03);
    near("4 connections, then baseline", mean(&r4[2..]), 100.0, 0.02);
    let fs = n.provisioned().unwrap();
    let st = fs.status(n.clock.now());
    assert!(st.resources[0].credits.unwrap().balance < (2 << 20));
    assert_eq!(st.memory_blocks.1, 4);
    assert_eq!(
        fs.stats
            .read_miss_bytes
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    let vol = n.volume("v").unwrap();
    assert!(
        vol.stats
            .resource_wait_ns
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
    // Reads of a span larger than the cache miss and run at the disk's 10 MiB/s.
    let (n, _dir) = common::load::node(FS, "fs-miss");
    let m = drive(&n, 2, CMD_READ, 4, 1 << 20, 64 << 20, 3).await;
    near("misses at the disk baseline", mean(&m[1..]), 10.0, 0.1);
    let _ = MIB;
}
