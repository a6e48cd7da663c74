//! The emulated array through the real connection code, on tokio's paused clock: service
//! latency at QD 1 and QD 4 (fixed and per-KiB parts, per direction), ceilings that stay
//! exact with it on, I/O-size accounting (`transfer:64KiB`) in both scheduler modes, and
//! seed 000's array model (its baseline row's 4 KiB IOPS and mixed job).
//!
//! Waits use tokio's timer here (`Scheduler::use_tokio_timers`: a timerfd would run on the
//! real clock), which ticks in milliseconds, so the latencies are whole milliseconds;
//! the precise timer is measured end to end with fio (integration test `array`).

use std::sync::atomic::Ordering::Relaxed;

use storage_node::stats::OpKind;

mod common;
use common::load::{load, node, Client};

#[track_caller]
fn within(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= want * tol,
        "{what}: got {got:.1}, want {want:.1} ± {}%",
        tol * 100.0
    );
}

/// A node config: `[capacity]` with `capacity`, and the volume `capped` (`size`) under a
/// 500 IOPS ceiling, `p500`.
fn capped_at_500(capacity: &str, size: &str) -> String {
    format!(
        "[capacity]\n{capacity}\n\n[[policy]]\nname = \"p500\"\n\
         fixed = {{ max_throughput_iops = 500 }}\n\n\
         [[volume]]\nname = \"capped\"\nsize = \"{size}\"\npolicy = \"p500\"\n"
    )
}

/// Reads take 3 ms, writes 2 ms + 15.625 us per KiB; a volume `free` beside `capped`.
fn latency() -> String {
    capped_at_500(
        r#"latency = { read = { fixed = "3ms" }, write = { fixed = "2ms", per_kib = "15.625us" } }"#,
        "64MiB",
    ) + "\n[[volume]]\nname = \"free\"\nsize = \"64MiB\"\n"
}

#[tokio::test(start_paused = true)]
async fn service_latency_at_qd1_and_qd4_is_the_configured_time() {
    let (n, _dir) = node(&latency(), "latency");
    // Reads: 3 ms fixed. Writes of 64 KiB: 2 ms + 64 x 15.625 us = 3 ms.
    for (qd, len, writes) in [(1, 4096, 0), (4, 4096, 0), (1, 65536, 1), (4, 65536, 1)] {
        let l = load(n.clone(), "free", Client::closed(qd, len, writes), 4).await;
        let what = format!(
            "QD{qd} {len} B {}",
            if writes == 1 { "writes" } else { "reads" }
        );
        within(l.mean_lat_ns, 3e6, 0.01, &format!("{what}: latency"));
        within(l.rate(1), qd as f64 / 3e-3, 0.01, &format!("{what}: IOPS"));
    }
    // Service time is the array's, not a QoS wait.
    let s = &n.volume("free").unwrap().stats;
    assert_eq!(s.ceiling_wait_ns.load(Relaxed), 0);
    assert_eq!(s.floor_wait_ns.load(Relaxed), 0);
}

#[tokio::test(start_paused = true)]
async fn ceilings_stay_exact_with_service_latency_on() {
    let (n, _dir) = node(&latency(), "ceiling");
    // QD 32 of 4 KiB reads under 500 IOPS with 3 ms per request: the ceiling binds
    // (32 / 3 ms = 10,667 offered); Little's law gives 64 ms per request.
    let l = load(n.clone(), "capped", Client::closed(32, 4096, 0), 10).await;
    within(
        l.rate(2),
        500.0,
        0.005,
        "500 IOPS ceiling with 3 ms service latency",
    );
    within(l.mean_lat_ns, 32.0 / 500.0 * 1e9, 0.02, "Little's law");
    // The queue time is the ceiling's; the 3 ms on top is the array's.
    let s = &n.volume("capped").unwrap().stats;
    let per_req = s.ceiling_wait_ns.load(Relaxed) as f64 / s.total_ops() as f64;
    within(per_req, 64e6 - 3e6, 0.03, "ceiling wait per request");
    assert_eq!(s.floor_wait_ns.load(Relaxed), 0);
}

/// Below its ceiling a client at QD 4 sees only the array's service time: requests that
/// arrive together are not spaced out by the ceiling (the controller keeps the pacer's
/// 5 ms burst window), as on seed 000's aQoS 200 GB volume (813/661 us at 9,500 IOPS).
#[tokio::test(start_paused = true)]
async fn a_ceiling_above_the_rate_adds_no_latency_at_qd4() {
    let (n, _dir) = node(
        &latency().replace("max_throughput_iops = 500", "max_throughput_iops = 9500"),
        "qd4",
    );
    let l = load(n.clone(), "capped", Client::closed(4, 4096, 0), 4).await;
    within(
        l.mean_lat_ns,
        3e6,
        0.01,
        "QD4 under a 9,500 IOPS ceiling, 3 ms service",
    );
    let s = &n.volume("capped").unwrap().stats;
    assert_eq!(
        s.ceiling_wait_ns.load(Relaxed),
        0,
        "no request waited for the ceiling"
    );
}

/// ONTAP's NFS view through the node: under 500 IOPS a 128 KiB request is 2 operations
/// and a 1 MiB one 16, in the pacer (ceilings only) and in the controller (with a
/// service latency), and the statistics count operations in that unit.
#[tokio::test(start_paused = true)]
async fn transfer_accounting_in_both_scheduler_modes() {
    for (mode, controller) in [
        ("pacer", ""),
        ("controller", "latency = { read = { fixed = \"1ms\" } }"),
    ] {
        let (n, _dir) = node(
            &capped_at_500(
                &format!("io_accounting = \"transfer:64KiB\"\n{controller}"),
                "256MiB",
            ),
            mode,
        );
        assert_eq!(n.scheduler.controls(), !controller.is_empty());
        for (len, ops) in [(4096u32, 1.0), (131_072, 2.0), (1 << 20, 16.0)] {
            let l = load(n.clone(), "capped", Client::closed(16, len, 0), 9).await;
            let what = format!("{mode}: {len} B reads");
            within(l.rate(2), 500.0 / ops, 0.01, &what);
        }
        let s = &n.volume("capped").unwrap().stats;
        let (req, counted) = (s.requests(OpKind::Read), s.ops(OpKind::Read));
        // 9 s at each size: 500 x 9 + 250 x 9 x 2 + 31.25 x 9 x 16 counted = 3 x 4500.
        within(
            counted as f64,
            13_500.0,
            0.02,
            &format!("{mode}: counted ops"),
        );
        assert!(req < counted, "{mode}: requests {req} vs ops {counted}");
    }
}

const SEED000: &str = r#"
[capacity]
io_accounting = "transfer:64KiB"
read = { 4KiB = "15300iops", 128KiB = "195MB/s", 1MiB = "246MB/s" }
write = { 4KiB = "10900iops", 128KiB = "128MB/s", 1MiB = "136MB/s" }

[[volume]]
name = "baseline"
size = "256MiB"
"#;

/// Seed 000's array: saturated 4 KiB reads and writes at QD 64 reproduce its baseline
/// row, and a 75/25 mix shares one budget (the seed: 10.4k/3433).
#[tokio::test(start_paused = true)]
async fn seed000_array_through_the_node() {
    let (n, _dir) = node(SEED000, "seed000");
    assert_eq!(n.scheduler.status().unwrap().capacity.iops, 15_300);
    let r = load(n.clone(), "baseline", Client::closed(64, 4096, 0), 4).await;
    within(r.rate(1), 15_300.0, 0.01, "4 KiB reads");
    let w = load(n.clone(), "baseline", Client::closed(64, 4096, 1), 4).await;
    within(w.rate(1), 10_900.0, 0.01, "4 KiB writes");
    let m = load(n.clone(), "baseline", Client::closed(64, 4096, 4), 4).await;
    within(m.rate(1), 10_400.0 + 3_433.0, 0.02, "75/25 mix");
}
