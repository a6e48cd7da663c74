//! Virtual-time accuracy tests for the pacer (no sleeping, no clock).
//!
//! Closed-loop clients (queue depth QD, block size B, fixed service time S) are
//! simulated for 10 s of virtual time against every ceiling in the matrix.
//!
//! Reachability rule (computed, not hand-picked): a closed-loop client cannot
//! exceed `QD / S` requests per second on its own. When that is below the
//! ceiling (in requests per second: IOPS, or bytes/s ÷ B), the client, not the
//! pacer, is the bottleneck; such combinations are not skipped but checked to
//! run at the client's own rate, i.e. the pacer adds no delay. With S = 0 every
//! combination is reachable.

use qos_core::sim::{ClosedLoop, Trace};
use qos_core::{Nanos, Pacer, Rate, BURST_WINDOW};

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;
const SEC: Nanos = 1_000_000_000;
const MIB: u64 = 1 << 20;
const DURATION: Nanos = 10 * SEC;

const QUEUE_DEPTHS: [usize; 4] = [1, 4, 16, 64];
const SERVICE_TIMES: [Nanos; 2] = [20 * US, 0];

fn iops(n: u64) -> Rate {
    Rate {
        iops: n,
        bytes_per_sec: 0,
    }
}

fn mibps(n: u64) -> Rate {
    Rate {
        iops: 0,
        bytes_per_sec: n * MIB,
    }
}

/// The ceiling in requests per second for requests of `block` bytes (whichever limit is lower).
fn limit_rps(ceiling: Rate, block: u64) -> f64 {
    let by_ops = if ceiling.iops > 0 {
        ceiling.iops as f64
    } else {
        f64::INFINITY
    };
    let by_bytes = if ceiling.bytes_per_sec > 0 {
        ceiling.bytes_per_sec as f64 / block as f64
    } else {
        f64::INFINITY
    };
    by_ops.min(by_bytes)
}

fn simulate(ceiling: Rate, client: ClosedLoop) -> Trace {
    let mut pacer = Pacer::new(ceiling);
    client.run(0, DURATION, |now, ops, bytes| {
        let at = pacer.admit(now, ops, bytes);
        assert!(at >= now);
        at
    })
}

/// Runs one matrix cell and checks the acceptance criteria.
fn check_case(ceiling: Rate, client: ClosedLoop) {
    let limit = limit_rps(ceiling, client.block_size);
    let client_max = client.max_requests_per_sec().unwrap_or(f64::INFINITY);
    let reachable = client_max >= limit;
    let expected = limit.min(client_max);
    let trace = simulate(ceiling, client);

    let achieved = trace.ops_between(0, DURATION) as f64 / (DURATION / SEC) as f64;
    let err = (achieved - expected).abs() / expected;
    assert!(
        err <= 0.01,
        "{ceiling:?} {client:?} (reachable: {reachable}): achieved {achieved:.1} req/s, expected {expected:.1}"
    );

    // Never above the ceiling by more than 5% in any 1 s window after the first second.
    let (max_ops, max_bytes) = trace.max_in_window(SEC, SEC);
    assert!(
        max_ops as f64 <= limit * 1.05,
        "{ceiling:?} {client:?}: {max_ops} requests in a 1 s window, limit {limit:.1}"
    );
    assert_eq!(max_bytes, max_ops * client.block_size);
}

fn check_ceiling(ceiling: Rate, block: u64, service_times: &[Nanos]) {
    for &qd in &QUEUE_DEPTHS {
        for &service_time in service_times {
            check_case(
                ceiling,
                ClosedLoop {
                    queue_depth: qd,
                    block_size: block,
                    service_time,
                },
            );
        }
    }
}

/// One test per (ceiling, block size) — per service time too for the heaviest cell — so
/// the matrix runs in parallel and each test stays short in debug builds.
macro_rules! matrix {
    ($($name:ident: $ceiling:expr, $block:expr $(, $service:expr)?;)*) => {
        $(
            #[test]
            fn $name() {
                #[allow(unused_variables)]
                let services: &[Nanos] = &SERVICE_TIMES;
                $(let services: &[Nanos] = &[$service];)?
                check_ceiling($ceiling, $block, services);
            }
        )*
    };
}

matrix! {
    iops_100_4k: iops(100), 4096;
    iops_100_64k: iops(100), 64 << 10;
    iops_100_1m: iops(100), MIB;
    iops_500_4k: iops(500), 4096;
    iops_500_64k: iops(500), 64 << 10;
    iops_500_1m: iops(500), MIB;
    iops_5000_4k: iops(5_000), 4096;
    iops_5000_64k: iops(5_000), 64 << 10;
    iops_5000_1m: iops(5_000), MIB;
    iops_50000_4k: iops(50_000), 4096;
    iops_50000_64k: iops(50_000), 64 << 10;
    iops_50000_1m: iops(50_000), MIB;
    mibps_10_4k: mibps(10), 4096;
    mibps_10_64k: mibps(10), 64 << 10;
    mibps_10_1m: mibps(10), MIB;
    mibps_100_4k: mibps(100), 4096;
    mibps_100_64k: mibps(100), 64 << 10;
    mibps_100_1m: mibps(100), MIB;
    mibps_1000_4k_20us: mibps(1_000), 4096, 20 * US;
    mibps_1000_4k_0us: mibps(1_000), 4096, 0;
    mibps_1000_64k: mibps(1_000), 64 << 10;
    mibps_1000_1m: mibps(1_000), MIB;
}

#[test]
fn both_limits_whichever_first() {
    // 5000 IOPS and 100 MiB/s: 4k is IOPS-bound (5000/s), 64k and 1M are byte-bound
    // (1600/s and 100/s). Also a pair where the crossover sits between 4k and 64k.
    let cases = [
        (
            Rate {
                iops: 5_000,
                bytes_per_sec: 100 * MIB,
            },
            [(4096, 5_000.0), (64 << 10, 1_600.0), (MIB, 100.0)],
        ),
        (
            Rate {
                iops: 20_000,
                bytes_per_sec: 200 * MIB,
            },
            [(4096, 20_000.0), (64 << 10, 3_200.0), (MIB, 200.0)],
        ),
    ];
    for (ceiling, blocks) in cases {
        for (block, want) in blocks {
            assert_eq!(limit_rps(ceiling, block), want);
            for qd in [1, 16] {
                check_case(
                    ceiling,
                    ClosedLoop {
                        queue_depth: qd,
                        block_size: block,
                        service_time: 20 * US,
                    },
                );
            }
        }
    }
}

/// Runs a QD16 4k client and changes the ceiling at the first arrival at or after 5 s.
/// Returns the trace and the change time.
fn run_with_change(from: Rate, to: Rate) -> (Trace, Nanos) {
    let mut pacer = Pacer::new(from);
    let mut changed_at = None;
    let client = ClosedLoop {
        queue_depth: 16,
        block_size: 4096,
        service_time: 20 * US,
    };
    let trace = client.run(0, DURATION, |now, ops, bytes| {
        if now >= 5 * SEC && changed_at.is_none() {
            pacer.set_ceiling(to, now);
            changed_at = Some(now);
        }
        pacer.admit(now, ops, bytes)
    });
    let changed_at = changed_at.expect("the change happened");
    assert!(changed_at < 5 * SEC + MS);
    (trace, changed_at)
}

#[test]
fn live_change_down_takes_effect_without_burst_or_stall() {
    let (trace, t) = run_with_change(iops(5_000), iops(1_000));
    // Before: 5000/s.
    let before = trace.ops_between(SEC, 5 * SEC) as f64 / 4.0;
    assert!((before - 5_000.0).abs() <= 50.0, "{before}");
    // Within one second the rate is the new one, and stays there.
    for k in 1..4 {
        let n = trace.ops_between(t + k * SEC, t + (k + 1) * SEC);
        assert!((990..=1_010).contains(&n), "second {k} after change: {n}");
    }
    // No burst: never faster than the old rate; the first second after the change holds
    // at most the already-granted backlog (QD) and the burst allowance on top of 1000.
    let (max10ms, _) = trace.max_in_window(t, 10 * MS);
    assert!(max10ms <= 50, "{max10ms} in 10 ms");
    let (max1s, _) = trace.max_in_window(t, SEC);
    assert!(max1s <= 1_000 + 16 + 5 + 1, "{max1s} in 1 s");
    // No stall: the flow keeps moving at (at least) the new pace.
    assert!(
        trace.max_gap(t, DURATION) <= MS,
        "{}",
        trace.max_gap(t, DURATION)
    );
}

#[test]
fn live_change_up_takes_effect_without_burst_or_stall() {
    let (trace, t) = run_with_change(iops(1_000), iops(5_000));
    for k in 1..4 {
        let n = trace.ops_between(t + k * SEC, t + (k + 1) * SEC);
        assert!((4_950..=5_050).contains(&n), "second {k} after change: {n}");
    }
    let (max1s, _) = trace.max_in_window(t, SEC);
    assert!(max1s as f64 <= 5_000.0 * 1.05, "{max1s} in 1 s");
    let (max1ms, _) = trace.max_in_window(t, MS);
    assert!(max1ms <= 5 + 25 + 1, "{max1ms} in 1 ms"); // rate·W + 5 ms allowance + 1
    assert!(trace.max_gap(t, DURATION) <= MS);
}

/// Burst capacity in requests: `BURST_WINDOW` worth of the rate, at least one request.
fn capacity_requests(limit_rps: f64) -> f64 {
    (limit_rps * BURST_WINDOW as f64 / SEC as f64).max(1.0)
}

#[test]
fn idle_then_return_gets_no_burst_beyond_tolerance() {
    let cases = [
        (iops(1_000), 4096),
        (iops(100), 4096),
        (iops(50_000), 4096),
        (mibps(10), MIB),
        (mibps(1_000), 4096),
    ];
    for (ceiling, block) in cases {
        let limit = limit_rps(ceiling, block);
        let cap = capacity_requests(limit);
        let mut pacer = Pacer::new(ceiling);
        let client = ClosedLoop {
            queue_depth: 64,
            block_size: block,
            service_time: 20 * US,
        };
        let mut admit = |now, ops, bytes| pacer.admit(now, ops, bytes);
        let mut trace = client.run(0, 2 * SEC, &mut admit);
        // Idle from 2 s (the last admitted requests finish) to 5 s, then return.
        let back = 5 * SEC;
        trace.extend(client.run(back, 7 * SEC, &mut admit));
        // At the instant of return only the burst allowance goes out.
        let instant = trace.ops_between(back, back + 1);
        assert!(
            instant as f64 <= cap.floor().max(1.0),
            "{ceiling:?}: {instant} at once, capacity {cap}"
        );
        // And in any window after the return: rate·W + tolerance + 1.
        for w in [US, 100 * US, MS, 10 * MS, 100 * MS, SEC] {
            let (n, _) = trace.max_in_window(back, w);
            let bound = limit * w as f64 / SEC as f64 + cap + 1.0;
            assert!(n as f64 <= bound, "{ceiling:?} W={w}: {n} > {bound}");
        }
    }
}

/// xorshift64* — a tiny deterministic PRNG so the test needs no dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Largest `cost·1e9 − rate·(t_k − t_j)` over all windows `[t_j, t_k]` of the
/// time-sorted dispatches, in units of `1/rate` ns; O(n).
fn max_window_excess(dispatches: &[(Nanos, u64)], rate: u64) -> i128 {
    let rate = i128::from(rate);
    let (mut prefix, mut best, mut min_b) = (0i128, i128::MIN, i128::MAX);
    for &(t, cost) in dispatches {
        let t = i128::from(t);
        // B_j = P_{j-1}·1e9 − rate·t_j, A_k = P_k·1e9 − rate·t_k.
        min_b = min_b.min(prefix * 1_000_000_000 - rate * t);
        prefix += i128::from(cost);
        best = best.max(prefix * 1_000_000_000 - rate * t - min_b);
    }
    best
}

#[test]
fn randomised_arrivals_respect_the_window_invariant() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for trial in 0..300 {
        let ceiling = Rate {
            iops: [0, 50, 1_000, 7_777, 100_000][rng.below(5) as usize],
            bytes_per_sec: [0, MIB, 10 * MIB + 3, 333 * MIB][rng.below(4) as usize],
        };
        if ceiling.iops == 0 && ceiling.bytes_per_sec == 0 {
            continue;
        }
        let mut pacer = Pacer::new(ceiling);
        let mut now: Nanos = rng.below(SEC);
        let mut out: Vec<(Nanos, u64)> = Vec::new();
        let mut max_bytes = 1;
        for _ in 0..rng.below(400) + 50 {
            // Gaps: mostly short, sometimes a long idle period.
            now += match rng.below(10) {
                0 => rng.below(2 * SEC),
                1..=3 => 0,
                _ => rng.below(2 * MS),
            };
            for _ in 0..rng.below(32) + 1 {
                let bytes = match rng.below(5) {
                    0 => 512,
                    1 => 4096,
                    2 => 64 << 10,
                    3 => MIB,
                    _ => rng.below(2 * MIB) + 1,
                };
                max_bytes = max_bytes.max(bytes);
                let at = pacer.admit(now, 1, bytes);
                assert!(at >= now);
                out.push((at, bytes));
            }
        }
        out.sort_by_key(|&(t, _)| t);
        // ops and bytes in any window of length W <= rate·W + tolerance + 1, where the
        // tolerance is BURST_WINDOW worth of rate but at least one request.
        for (rate, costs) in [
            (
                ceiling.iops,
                out.iter().map(|&(t, _)| (t, 1)).collect::<Vec<_>>(),
            ),
            (ceiling.bytes_per_sec, out.clone()),
        ] {
            if rate == 0 {
                continue;
            }
            let max_cost = costs.iter().map(|&(_, c)| c).max().unwrap_or(0);
            let r = i128::from(rate);
            let tolerance =
                (i128::from(BURST_WINDOW) * r).max(i128::from(max_cost) * 1_000_000_000);
            let one = 1_000_000_000i128.max(r); // "+1": one unit, or 1 ns worth if larger
            let excess = max_window_excess(&costs, rate);
            assert!(
                excess <= tolerance + one,
                "trial {trial} {ceiling:?} rate {rate}: excess {excess} > {}",
                tolerance + one
            );
        }
    }
}
