//! I/O-size accounting and the array model, in virtual time: each accounting mode
//! (`whole`, `transfer:64KiB`, SolidFire's curve) at 4 KiB .. 1 MiB against IOPS
//! ceilings (the pacer, and mClock limits), floors (mClock reservations against a
//! bully) and the controller's capacity; and seed 000's array (its baseline row) from
//! its measured points.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use qos_core::array::parse_point;
use qos_core::sim::{ClosedLoop, Trace};
use qos_core::{
    Accounting, ArrayModel, Charge, Direction, FlowSpec, MClock, Nanos, Pacer, Rate, ServiceCurve,
    MILLI,
};

const S: Nanos = 1_000_000_000;
const K: u64 = 1024;
const SIZES: [u64; 7] = [4 * K, 8 * K, 16 * K, 64 * K, 128 * K, 256 * K, 1024 * K];

/// A flow with no floor and no ceiling.
const FREE: FlowSpec = FlowSpec {
    reservation: Rate::UNLIMITED,
    limit: Rate::UNLIMITED,
    weight: 1,
};

fn modes() -> Vec<Accounting> {
    ["whole", "transfer:64KiB", "solidfire"]
        .iter()
        .map(|m| m.parse().unwrap())
        .collect()
}

fn within(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= want * tol,
        "{what}: got {got:.2}, want {want:.2} ± {}%",
        tol * 100.0
    );
}

fn iops(n: u64) -> Rate {
    Rate {
        iops: n,
        bytes_per_sec: 0,
    }
}

#[test]
fn the_modes_count_what_the_vendors_document() {
    // (mode, bytes, operations): NFS transfers of 64 KiB; SolidFire's table.
    let t: Accounting = "transfer:64KiB".parse().unwrap();
    let sf: Accounting = "solidfire".parse().unwrap();
    for (b, transfer, solidfire) in [
        (4 * K, 1.0, 1.0),
        (8 * K, 1.0, 1.6),
        (16 * K, 1.0, 2.7),
        (64 * K, 1.0, 10.0),
        (128 * K, 2.0, 19.0),
        (256 * K, 4.0, 30.0),
        (1024 * K, 16.0, 150.0),
    ] {
        assert_eq!(Accounting::Whole.ops(b), 1.0);
        assert_eq!(t.ops(b), transfer, "{b}");
        assert_eq!(sf.ops(b), solidfire, "{b}");
    }
}

/// 40 s of one closed-loop client (`queue_depth` requests of `bytes`, each served in
/// `service_time`) under a 500 IOPS Pacer that counts requests as `mode` says.
fn under_500_iops(mode: &Accounting, queue_depth: usize, bytes: u64, service_time: Nanos) -> Trace {
    let mut p = Pacer::new(iops(500 * MILLI));
    let client = ClosedLoop {
        queue_depth,
        block_size: bytes,
        service_time,
    };
    client.run(0, 40 * S, |now, _, b| p.admit(now, mode.milliops(b), b))
}

/// Pacer (ceilings-only mode): a 500 IOPS ceiling lets 500 / ops(bytes) requests per
/// second through, i.e. exactly 500 counted operations, at every size and in every mode.
#[test]
fn pacer_ceilings_count_operations_in_each_mode() {
    for mode in modes() {
        for bytes in SIZES {
            let ops = mode.ops(bytes);
            let t = under_500_iops(&mode, 16, bytes, 200_000);
            let what = format!("{mode} {bytes} B");
            let req = t.ops_between(10 * S, 40 * S) as f64 / 30.0;
            within(req, 500.0 / ops, 0.005, &what);
            within(req * ops, 500.0, 0.005, &what);
        }
    }
    // Seed 000's columns under ONTAP's NFS view: 128 KiB and 1 MiB jobs at 500 IOPS
    // read 31.25 MiB/s (the seed: 31.4 and 30.1-31.8 MiB/s).
    let mode: Accounting = "transfer:64KiB".parse().unwrap();
    for bytes in [128 * K, 1024 * K] {
        let t = under_500_iops(&mode, 64, bytes, 100_000);
        let mibs = t.bytes_between(10 * S, 40 * S) as f64 / 30.0 / 1048576.0;
        within(mibs, 31.25, 0.005, &format!("{bytes} B under 500 IOPS"));
    }
}

/// One closed-loop client of an mClock scenario.
struct Client {
    spec: FlowSpec,
    qd: usize,
    dir: Direction,
    bytes: u64,
}

/// Dispatch counts per client over `[from, until)`, with each request charged by
/// `charge(dir, bytes)` and completing `service` after its dispatch.
fn run_mclock(
    mut m: MClock<usize>,
    clients: &[Client],
    charge: impl Fn(Direction, u64) -> Charge,
    service: Nanos,
    from: Nanos,
    until: Nanos,
) -> Vec<u64> {
    let ids: Vec<_> = clients.iter().map(|c| m.add_flow(c.spec, 0)).collect();
    for (i, c) in clients.iter().enumerate() {
        for _ in 0..c.qd {
            m.enqueue_charged(ids[i], i, charge(c.dir, c.bytes), 0)
                .unwrap();
        }
    }
    let mut done: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
    let mut counts = vec![0u64; clients.len()];
    let mut t = 0;
    while t < until {
        while let Some(&Reverse((ct, i))) = done.peek() {
            if ct > t {
                break;
            }
            done.pop();
            let c = &clients[i];
            m.enqueue_charged(ids[i], i, charge(c.dir, c.bytes), t)
                .unwrap();
        }
        while let Some(d) = m.dequeue(t) {
            if t >= from {
                counts[d.token] += 1;
            }
            done.push(Reverse((t + service, d.token)));
        }
        let mut next = m.next_wakeup(t).map_or(Nanos::MAX, |w| w.max(t + 1));
        if let Some(Reverse((ct, _))) = done.peek() {
            next = next.min(*ct);
        }
        t = next;
    }
    counts
}

/// mClock (the emulated controller): a floor of 2,000 counted IOPS holds against a bully,
/// a ceiling of 1,000 counted IOPS caps, and the capacity of 20,000 counted IOPS is the
/// node's whole budget — in every mode, at every size.
#[test]
fn mclock_floors_ceilings_and_capacity_count_operations_in_each_mode() {
    for mode in modes() {
        for bytes in SIZES {
            let ops = mode.ops(bytes);
            let charge = |_dir, b: u64| Charge {
                ops: mode.ops(b),
                bytes: b,
                cost: mode.ops(b),
            };
            let spec = |res: u64, lim: u64| FlowSpec {
                reservation: iops(res),
                limit: iops(lim),
                weight: 1,
            };
            let clients = [
                Client {
                    spec: spec(2_000, 0),
                    qd: 32,
                    dir: Direction::Read,
                    bytes,
                },
                Client {
                    spec: spec(0, 1_000),
                    qd: 32,
                    dir: Direction::Read,
                    bytes,
                },
                // The bully: 4 KiB at QD 256, no floor, no ceiling.
                Client {
                    spec: spec(0, 0),
                    qd: 256,
                    dir: Direction::Write,
                    bytes: 4 * K,
                },
            ];
            let m = MClock::new(iops(20_000), 0).with_reservation_lookahead(5_000_000);
            let c = run_mclock(m, &clients, charge, 100_000, 2 * S, 12 * S);
            let per_sec: Vec<f64> = c.iter().map(|&n| n as f64 / 10.0).collect();
            let what = format!("{mode} {bytes} B");
            // The floor, in counted operations (plus its share of what is left).
            assert!(
                per_sec[0] * ops >= 2_000.0 * 0.99,
                "{what}: floor flow {} ops/s",
                per_sec[0] * ops
            );
            within(per_sec[1] * ops, 1_000.0, 0.01, &format!("{what}: ceiling"));
            // The node's capacity is spent in counted operations, and all of it.
            let total = per_sec[0] * ops + per_sec[1] * ops + per_sec[2] * mode.ops(4 * K);
            within(total, 20_000.0, 0.01, &format!("{what}: capacity"));
        }
    }
}

/// Seed 000's array from its baseline row.
fn seed000() -> ArrayModel {
    let curve = |pts: [(&str, &str); 3]| {
        ServiceCurve::new(
            pts.iter()
                .map(|(s, r)| parse_point(s, r).unwrap())
                .collect(),
        )
        .unwrap()
    };
    ArrayModel {
        read: curve([
            ("4KiB", "15300iops"),
            ("128KiB", "195MB/s"),
            ("1MiB", "246MB/s"),
        ]),
        write: curve([
            ("4KiB", "10900iops"),
            ("128KiB", "128MB/s"),
            ("1MiB", "136MB/s"),
        ]),
    }
}

/// The array model as the controller's cost: a saturated client reproduces each measured
/// point, and a 75/25 mix of 4 KiB reads and writes shares one budget (the seed's mixed
/// job: 10.4k/3433).
#[test]
fn seed000_array_reproduces_its_baseline_row() {
    let a = seed000();
    let cap = a.capacity_iops();
    assert_eq!(cap, 15_300);
    let transfer: Accounting = "transfer:64KiB".parse().unwrap();
    let charge = |dir, b: u64| Charge {
        ops: transfer.ops(b),
        bytes: b,
        cost: a.cost_units(dir, b),
    };
    let one = |dir, bytes| {
        let c = [Client {
            spec: FREE,
            qd: 64,
            dir,
            bytes,
        }];
        let m = MClock::new(iops(cap), 0);
        run_mclock(m, &c, charge, 785_000, S, 11 * S)[0] as f64 / 10.0
    };
    let mib = |n: f64, b: u64| n * b as f64 / 1048576.0;
    within(one(Direction::Read, 4 * K), 15_300.0, 0.005, "4k read");
    within(one(Direction::Write, 4 * K), 10_900.0, 0.005, "4k write");
    within(
        mib(one(Direction::Read, 128 * K), 128 * K),
        195.0,
        0.005,
        "128k read",
    );
    within(
        mib(one(Direction::Write, 128 * K), 128 * K),
        128.0,
        0.005,
        "128k write",
    );
    within(
        mib(one(Direction::Read, 1 << 20), 1 << 20),
        246.0,
        0.005,
        "1M read",
    );
    within(
        mib(one(Direction::Write, 1 << 20), 1 << 20),
        136.0,
        0.005,
        "1M write",
    );
    // The mix: three readers per writer, one budget.
    let c = [
        Client {
            spec: FREE,
            qd: 48,
            dir: Direction::Read,
            bytes: 4 * K,
        },
        Client {
            spec: FREE,
            qd: 16,
            dir: Direction::Write,
            bytes: 4 * K,
        },
    ];
    let m = MClock::fifo(iops(cap), 0);
    let n = run_mclock(m, &c, charge, 785_000, S, 11 * S);
    let (r, w) = (n[0] as f64 / 10.0, n[1] as f64 / 10.0);
    within(r / (r + w), 0.75, 0.01, "read share");
    within(
        r + w,
        1e9 / (0.75 * 1e9 / 15_300.0 + 0.25 * 1e9 / 10_900.0),
        0.01,
        "mix",
    );
    within(r, 10_400.0, 0.02, "mixed reads");
    within(w, 3_433.0, 0.02, "mixed writes");
}

/// Service latency is pipelined: at queue depth 4 with 785 µs per request the client
/// sees 4 / 785 µs = 5,096 requests per second, below the array's 15.3k (the seed's
/// QD4 latency job), and at QD 64 the capacity binds instead.
#[test]
fn service_latency_bounds_low_queue_depths_only() {
    let a = seed000();
    let cap = a.capacity_iops();
    let charge = |dir, b: u64| Charge {
        ops: 1.0,
        bytes: b,
        cost: a.cost_units(dir, b),
    };
    for (qd, want) in [
        (1usize, 1e9 / 785_000.0),
        (4, 4e9 / 785_000.0),
        (64, 15_300.0),
    ] {
        let c = [Client {
            spec: FREE,
            qd,
            dir: Direction::Read,
            bytes: 4 * K,
        }];
        let n = run_mclock(MClock::new(iops(cap), 0), &c, charge, 785_000, S, 11 * S);
        within(n[0] as f64 / 10.0, want, 0.005, &format!("QD{qd}"));
    }
}

/// The controller's ceilings keep the pacer's burst window (the node sets
/// `with_limit_lookahead(BURST_WINDOW)`): requests arriving together below the ceiling go
/// at once, a backlogged flow stays within `rate × (W + 5 ms)`.
#[test]
fn mclock_limits_with_the_pacers_burst_window() {
    let spec = FlowSpec {
        reservation: Rate::UNLIMITED,
        limit: iops(1_000),
        weight: 1,
    };
    // (A flow's first tag is one interval after it was added: mClock's start.)
    for (lookahead, want) in [(0, vec![1, 2, 3, 4]), (5_000_000, vec![0, 0, 0, 0])] {
        let mut m: MClock<u32> = MClock::new(Rate::UNLIMITED, 0).with_limit_lookahead(lookahead);
        let f = m.add_flow(spec, 0);
        for k in 0..4 {
            m.enqueue(f, k, 4096, 0).unwrap();
        }
        let mut at = Vec::new();
        let mut t = 0;
        while at.len() < 4 {
            while let Some(_d) = m.dequeue(t) {
                at.push(t / 1_000_000);
            }
            t = m.next_wakeup(t).unwrap_or(t + 1).max(t + 1);
        }
        assert_eq!(at, want, "look-ahead {lookahead} ns: dispatch times in ms");
    }
    // Backlogged for 1 s at 1,000 IOPS: at most 1,000 + 5 ms worth + 1.
    let mut m: MClock<u32> = MClock::new(Rate::UNLIMITED, 0).with_limit_lookahead(5_000_000);
    let f = m.add_flow(spec, 0);
    for k in 0..2_000 {
        m.enqueue(f, k, 4096, 0).unwrap();
    }
    let (mut n, mut t) = (0, 0);
    while t < S {
        while m.dequeue(t).is_some() {
            n += 1;
        }
        t = m.next_wakeup(t).unwrap().max(t + 1);
    }
    assert!((1_000..=1_006).contains(&n), "{n} in 1 s");
}
