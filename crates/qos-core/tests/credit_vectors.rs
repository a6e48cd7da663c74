//! The vendors' own burst figures, reproduced in virtual time (no sleeping, no clock).
//!
//! A closed-loop client that always wants more than the burst rate runs against a
//! [`Pacer`] carrying a vendor model's limits; the burst ends at the first gap between
//! dispatches that the burst rate would not leave. Each run checks, within 1 %:
//! the burst duration (AWS's / Microsoft's / NetApp's published figure), the rate afterwards
//! (the baseline), and the refill time from empty (the bucket's balance in virtual time, and
//! a second burst after the refill).
//!
//! To keep debug-build runs short, each simulated request carries `batch` I/Os (or bytes):
//! the buckets count units, so this changes the granularity (one batch), not the arithmetic.

use qos_core::credit::{ontap_tolerance, Burst, BurstShape};
use qos_core::presets::{solidfire_burst, Model, AZURE_PREMIUM_TIERS};
use qos_core::sim::{ClosedLoop, Trace};
use qos_core::{Nanos, Pacer, Rate};

const SEC: Nanos = 1_000_000_000;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// Which dimension a run exercises.
#[derive(Clone, Copy, Debug)]
enum Dim {
    Iops,
    Bytes,
}

/// One dimension of a model's limits, the other left unlimited (each dimension has its own
/// bucket; this isolates the one under test).
fn one_dim(ceiling: Rate, burst: Burst, dim: Dim) -> (Rate, Burst, u64, BurstShape) {
    match dim {
        Dim::Iops => {
            let s = burst.iops.expect("bursts in IOPS");
            (
                Rate {
                    iops: ceiling.iops,
                    bytes_per_sec: 0,
                },
                Burst {
                    iops: Some(s),
                    bytes: None,
                },
                ceiling.iops,
                s,
            )
        }
        Dim::Bytes => {
            let s = burst.bytes.expect("bursts in bytes");
            (
                Rate {
                    iops: 0,
                    bytes_per_sec: ceiling.bytes_per_sec,
                },
                Burst {
                    iops: None,
                    bytes: Some(s),
                },
                ceiling.bytes_per_sec,
                s,
            )
        }
    }
}

/// Runs a saturating client on `pacer` from `start` to `until`; each request costs `batch`
/// units of `dim`.
fn run(pacer: &mut Pacer, dim: Dim, batch: u64, start: Nanos, until: Nanos) -> Trace {
    let client = ClosedLoop {
        queue_depth: 8,
        block_size: batch,
        service_time: 0,
    };
    client.run(start, until, |now, _, units| match dim {
        Dim::Iops => pacer.admit(now, units, 0),
        Dim::Bytes => pacer.admit(now, 1, units),
    })
}

/// The end of the burst: the last dispatch before the first gap longer than halfway between
/// the burst spacing and the baseline spacing (`None`: it never stopped bursting).
fn burst_end(t: &Trace, batch: u64, burst: u64, base: u64) -> Option<Nanos> {
    let gap_burst = batch as f64 * 1e9 / burst as f64;
    let gap_base = batch as f64 * 1e9 / base as f64;
    let threshold = (gap_burst + gap_base) / 2.0;
    t.dispatches()
        .windows(2)
        .find(|w| (w[1].at - w[0].at) as f64 > threshold)
        .map(|w| w[0].at)
}

fn units_between(t: &Trace, dim: Dim, batch: u64, from: Nanos, to: Nanos) -> f64 {
    match dim {
        Dim::Iops => (t.ops_between(from, to) * batch) as f64,
        Dim::Bytes => t.bytes_between(from, to) as f64,
    }
}

#[track_caller]
fn within(what: &str, got: f64, want: f64, tol: f64) {
    let err = (got - want) / want;
    assert!(
        err.abs() <= tol,
        "{what}: got {got:.3}, want {want:.3} ({:+.3}%)",
        err * 100.0
    );
}

/// What a run measured.
struct Measured {
    burst_s: f64,
    baseline: f64,
}

/// Full bucket → burst until empty → baseline for a while. Checks and returns the burst
/// duration and the rate after it.
fn burst_then_baseline(
    what: &str,
    ceiling: Rate,
    burst: Burst,
    dim: Dim,
    batch: u64,
    want_burst_s: f64,
) -> (Pacer, Measured, Nanos) {
    let (ceiling, burst, base, shape) = one_dim(ceiling, burst, dim);
    let mut pacer = Pacer::with_burst(ceiling, burst, 0);
    let settle = (want_burst_s * 0.05).clamp(20.0, 200.0);
    let until = ((want_burst_s * 1.02 + settle + 5.0) * 1e9) as Nanos;
    let t = run(&mut pacer, dim, batch, 0, until);
    let end = burst_end(&t, batch, shape.rate, base)
        .unwrap_or_else(|| panic!("{what}: never left the burst rate"));
    let burst_s = end as f64 / 1e9;
    within(
        &format!("{what}: burst duration (s)"),
        burst_s,
        want_burst_s,
        0.01,
    );
    // The rate while bursting (skip the first second) and after (skip 5 s).
    let during = units_between(&t, dim, batch, SEC, end) / (burst_s - 1.0);
    within(
        &format!("{what}: rate while bursting"),
        during,
        shape.rate as f64,
        0.01,
    );
    let from = end + 5 * SEC;
    let baseline = units_between(&t, dim, batch, from, until) / ((until - from) as f64 / 1e9);
    within(
        &format!("{what}: rate after the burst"),
        baseline,
        base as f64,
        0.01,
    );
    println!(
        "{what}: burst {burst_s:.1} s (want {want_burst_s}), at {during:.1}/s (burst {}), then {baseline:.2}/s (baseline {base})",
        shape.rate
    );
    (pacer, Measured { burst_s, baseline }, until)
}

/// From empty (the client just stopped at `empty_at`), the bucket is full after `want_s`.
fn refill(what: &str, pacer: &Pacer, dim: Dim, empty_at: Nanos, want_s: f64) {
    let status = |at: Nanos| {
        let (o, b) = pacer.credit_status(at);
        match dim {
            Dim::Iops => o,
            Dim::Bytes => b,
        }
        .expect("bucket")
    };
    let bucket = status(empty_at).bucket;
    assert!(
        status(empty_at).balance as f64 <= bucket as f64 * 0.001,
        "{what}: not empty after the burst: {:?}",
        status(empty_at)
    );
    // First instant (to 1 ms) at which the bucket is full again.
    let (mut lo, mut hi) = (empty_at, empty_at + ((want_s * 2.0 + 10.0) * 1e9) as Nanos);
    while hi - lo > 1_000_000 {
        let mid = lo + (hi - lo) / 2;
        if status(mid).balance >= bucket {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let got = (hi - empty_at) as f64 / 1e9;
    within(&format!("{what}: refill from empty (s)"), got, want_s, 0.01);
    println!("{what}: refill {got:.1} s (want {want_s})");
}

/// AWS's gp2 table: (GiB, baseline IOPS, burst seconds at 3,000 IOPS, refill seconds).
const GP2_VECTORS: [(u64, u64, f64, f64); 4] = [
    (1, 100, 1_862.0, 54_000.0),
    (100, 300, 2_000.0, 18_000.0),
    (334, 1_002, 2_703.0, 5_389.0),
    (750, 2_250, 7_200.0, 2_400.0),
];

#[test]
fn ebs_gp2_burst_durations_and_refill_times() {
    for (gib, base, burst_s, refill_s) in GP2_VECTORS {
        let what = format!("gp2 {gib} GiB");
        let l = Model::EbsGp2.limits(gib * GIB);
        assert_eq!(l.ceiling.iops, base, "{what}");
        let (pacer, m, until) =
            burst_then_baseline(&what, l.ceiling, l.burst, Dim::Iops, 30, burst_s);
        assert!(m.burst_s > 0.0 && m.baseline > 0.0);
        refill(&what, &pacer, Dim::Iops, until, refill_s);
    }
}

#[test]
fn ebs_gp2_large_volumes_do_not_burst() {
    for gib in [1_000u64, 2_000, 5_334, 16_384] {
        let l = Model::EbsGp2.limits(gib * GIB);
        assert!(l.burst.is_none(), "{gib} GiB");
        assert!(l.ceiling.iops >= 3_000);
        let ceiling = Rate {
            iops: l.ceiling.iops,
            bytes_per_sec: 0,
        };
        let mut pacer = Pacer::with_burst(ceiling, l.burst, 0);
        let t = run(&mut pacer, Dim::Iops, 30, 0, 20 * SEC);
        let rate = units_between(&t, Dim::Iops, 30, SEC, 20 * SEC) / 19.0;
        within(&format!("gp2 {gib} GiB"), rate, l.ceiling.iops as f64, 0.01);
    }
}

#[test]
fn ebs_gp2_refilled_bucket_bursts_again() {
    // 100 GiB: empty after 2,000 s; idle 18,000 s refills it; the next burst lasts 2,000 s
    // again. Idle only 9,000 s: half a bucket, a 1,000 s burst.
    let l = Model::EbsGp2.limits(100 * GIB);
    for (idle, want) in [(18_000.0, 2_000.0), (9_000.0, 1_000.0)] {
        let (mut pacer, _, stop) =
            burst_then_baseline("gp2 100 GiB", l.ceiling, l.burst, Dim::Iops, 30, 2_000.0);
        let again = stop + (idle * 1e9) as Nanos;
        let t = run(
            &mut pacer,
            Dim::Iops,
            30,
            again,
            again + ((want + 60.0) * 1e9) as Nanos,
        );
        let end = burst_end(&t, 30, 3_000, 300).expect("burst ends");
        let got = (end - again) as f64 / 1e9;
        within(&format!("gp2 100 GiB after {idle} s idle"), got, want, 0.01);
        println!("gp2 100 GiB after {idle} s idle: burst {got:.1} s (want {want})");
    }
}

#[test]
fn ebs_st1_and_sc1_throughput_credits() {
    // 1 TiB: st1 bursts 250 MiB/s on a 1 TiB bucket over a 40 MiB/s baseline
    // (1 TiB / 210 MiB/s = 4,993 s), refills in 1 TiB / 40 MiB/s = 26,214 s. sc1: 80 over 12.
    let tib = 1024 * GIB;
    for (model, base, burst) in [(Model::EbsSt1, 40u64, 250u64), (Model::EbsSc1, 12, 80)] {
        let what = format!("{model} 1 TiB");
        let l = model.limits(tib);
        let want_burst = tib as f64 / ((burst - base) * MIB) as f64;
        let (pacer, _, until) =
            burst_then_baseline(&what, l.ceiling, l.burst, Dim::Bytes, 4 * MIB, want_burst);
        refill(
            &what,
            &pacer,
            Dim::Bytes,
            until,
            tib as f64 / (base * MIB) as f64,
        );
    }
}

#[test]
fn azure_premium_ssd_p20_and_smaller_burst_30_minutes() {
    for (name, gib, iops, mbps) in AZURE_PREMIUM_TIERS.into_iter().filter(|t| t.1 <= 512) {
        let l = Model::AzurePremiumSsd.limits(gib * GIB);
        assert_eq!(
            (l.ceiling.iops, l.ceiling.bytes_per_sec),
            (iops, mbps * MIB)
        );
        burst_then_baseline(
            &format!("Azure {name} IOPS"),
            l.ceiling,
            l.burst,
            Dim::Iops,
            35,
            1_800.0,
        );
        burst_then_baseline(
            &format!("Azure {name} MB/s"),
            l.ceiling,
            l.burst,
            Dim::Bytes,
            4 * MIB,
            1_800.0,
        );
    }
    assert!(Model::AzurePremiumSsd.limits(1024 * GIB).burst.is_none());
}

#[test]
fn solidfire_bursts_sixty_seconds() {
    // NetApp KB: maxIOPS 1000, burstIOPS 1500 -> 30,000 credits, 60 s at 1500.
    let ceiling = Rate {
        iops: 1_000,
        bytes_per_sec: 0,
    };
    burst_then_baseline(
        "SolidFire 1000/1500",
        ceiling,
        solidfire_burst(1_000, 1_500),
        Dim::Iops,
        5,
        60.0,
    );
}

#[test]
fn ontap_tolerance_bounds() {
    // Tokens up to 150 %: at most +50 % above the ceiling, for at most one second after
    // idleness; the long-run rate is the ceiling.
    for (ceiling, dim, batch) in [
        (
            Rate {
                iops: 1_000,
                bytes_per_sec: 0,
            },
            Dim::Iops,
            1,
        ),
        (
            Rate {
                iops: 0,
                bytes_per_sec: 100 * MIB,
            },
            Dim::Bytes,
            256 << 10,
        ),
    ] {
        let c = match dim {
            Dim::Iops => ceiling.iops,
            Dim::Bytes => ceiling.bytes_per_sec,
        } as f64;
        let mut pacer = Pacer::with_burst(ceiling, ontap_tolerance(ceiling), 0);
        let t = run(&mut pacer, dim, batch, 0, 60 * SEC);
        // +50 % while tokens last: one second at 1.5x (the pacer's 5 ms window on top).
        let first = units_between(&t, dim, batch, 0, SEC);
        within(&format!("{dim:?} first second"), first, 1.5 * c, 0.01);
        let end = burst_end(&t, batch, (1.5 * c) as u64, c as u64).expect("burst ends");
        within(
            &format!("{dim:?} burst length"),
            end as f64 / 1e9,
            1.0,
            0.02,
        );
        // Never above +50 % in any 100 ms window, never above the ceiling + half a second
        // of it in any 10 s window.
        let (ops, bytes) = t.max_in_window(0, SEC / 10);
        let peak = match dim {
            Dim::Iops => (ops * batch) as f64,
            Dim::Bytes => bytes as f64,
        };
        assert!(
            peak <= 0.15 * c + batch as f64 + 0.005 * 1.5 * c,
            "{dim:?}: {peak} in 100 ms"
        );
        let ten = units_between(&t, dim, batch, 0, 10 * SEC);
        assert!(ten <= 10.0 * c + 0.5 * c + 0.005 * 1.5 * c + batch as f64);
        // Afterwards: the ceiling, within 1 %.
        let rest = units_between(&t, dim, batch, 5 * SEC, 60 * SEC) / 55.0;
        within(&format!("{dim:?} after the burst"), rest, c, 0.01);
        println!(
            "ONTAP tolerance {dim:?}: first second {:.3}x the ceiling, burst {:.3} s, peak 100 ms {:.3}x, first 10 s {:.4}x, then {:.4}x",
            first / c,
            end as f64 / 1e9,
            peak / (0.1 * c),
            ten / (10.0 * c),
            rest / c
        );
        // Idle half a second refills the 50 %: the next second runs at +50 % again.
        let again = 60 * SEC + SEC / 2;
        let t = run(&mut pacer, dim, batch, again, again + 3 * SEC);
        within(
            &format!("{dim:?} after idling"),
            units_between(&t, dim, batch, again, again + SEC),
            1.5 * c,
            0.02,
        );
    }
}

/// gp2 100 GiB's IOPS burst with a 1/100 bucket (54,000 credits), full: 20 s at 3,000
/// IOPS, then 300.
fn gp2_100gib_small_bucket() -> BurstShape {
    let mut shape = Model::EbsGp2.limits(100 * GIB).burst.iops.unwrap();
    shape.bucket /= 100;
    shape.initial = shape.bucket;
    shape
}

#[test]
fn mclock_limits_burst_like_the_pacer() {
    use qos_core::{FlowSpec, MClock};
    let shape = gp2_100gib_small_bucket();
    let mut mc: MClock<u64> = MClock::new(Rate::UNLIMITED, 0);
    let flow = mc.add_flow(
        FlowSpec {
            reservation: Rate::UNLIMITED,
            limit: Rate {
                iops: 300,
                bytes_per_sec: 0,
            },
            weight: 1,
        },
        0,
    );
    mc.set_burst(
        flow,
        Burst {
            iops: Some(shape),
            bytes: None,
        },
        0,
    );
    let client = ClosedLoop {
        queue_depth: 4,
        block_size: 4096,
        service_time: 0,
    };
    let mut token = 0u64;
    let t = client.run(0, 60 * SEC, |now, _, bytes| {
        token += 1;
        mc.enqueue(flow, token, bytes, now).expect("flow exists");
        let at = mc.next_wakeup(now).expect("queued");
        let d = mc.dequeue(at).expect("due at its wake-up");
        assert_eq!(d.token, token);
        at
    });
    let end = burst_end(&t, 1, 3_000, 300).expect("burst ends");
    within("mClock burst (s)", end as f64 / 1e9, 20.0, 0.01);
    println!(
        "mClock gp2 100 GiB, bucket 1/100: burst {:.2} s (want 20), then {:.2} IOPS",
        end as f64 / 1e9,
        t.ops_between(30 * SEC, 60 * SEC) as f64 / 30.0
    );
    within(
        "mClock after the burst",
        t.ops_between(30 * SEC, 60 * SEC) as f64 / 30.0,
        300.0,
        0.01,
    );
    let (ops, _) = mc.credit_status(flow, 60 * SEC);
    assert!(ops.expect("bucket").balance < 10);
}

/// With I/O-size accounting a request counts several operations (or a fraction of one):
/// the buckets spend what it counts, in the thousandths the node's pacers count in
/// ([`Burst::in_milliops`]), so the burst lasts its computed time in *operations*.
#[test]
fn credits_spend_the_operations_the_accounting_counts() {
    use qos_core::{Accounting, Charge, FlowSpec, MClock, MILLI};
    let shape = gp2_100gib_small_bucket();
    let burst = Burst {
        iops: Some(shape),
        bytes: None,
    };
    let ceiling = Rate {
        iops: 300,
        bytes_per_sec: 0,
    };
    // ONTAP over NFS: a 256 KiB request is four 64 KiB transfers, so 750 requests per
    // second while bursting and 75 after.
    let acc: Accounting = "transfer:64KiB".parse().unwrap();
    let bs: u64 = 256 << 10;
    let milliops = acc.milliops(bs);
    assert_eq!(milliops, 4 * MILLI);
    let client = ClosedLoop {
        queue_depth: 8,
        block_size: bs,
        service_time: 0,
    };

    // The pacer as the node runs it: rates and buckets in thousandths of an operation.
    let milli = |r: Rate| Rate {
        iops: r.iops * MILLI,
        bytes_per_sec: r.bytes_per_sec,
    };
    let mut pacer = Pacer::with_burst(milli(ceiling), burst.in_milliops(), 0);
    let t = client.run(0, 40 * SEC, |now, _, _| pacer.admit(now, milliops, 0));
    let end = burst_end(&t, 1, 750, 75).expect("burst ends");
    within(
        "pacer, 4 ops per request: burst (s)",
        end as f64 / 1e9,
        20.0,
        0.01,
    );
    let after = t.ops_between(25 * SEC, 40 * SEC) as f64 / 15.0;
    within(
        "pacer, 4 ops per request: requests/s after",
        after,
        75.0,
        0.01,
    );
    let (o, _) = pacer.credit_status(40 * SEC);
    let o = o.expect("bucket").from_milliops();
    assert_eq!((o.bucket, o.baseline, o.burst), (54_000, 300, 3_000));

    // mClock, charged the request's counted operations.
    let mut mc: MClock<u64> = MClock::new(Rate::UNLIMITED, 0);
    let flow = mc.add_flow(
        FlowSpec {
            reservation: Rate::UNLIMITED,
            limit: ceiling,
            weight: 1,
        },
        0,
    );
    mc.set_burst(flow, burst, 0);
    let mut token = 0u64;
    let t = client.run(0, 40 * SEC, |now, _, bytes| {
        token += 1;
        let charge = Charge {
            ops: acc.ops(bytes),
            bytes,
            cost: acc.ops(bytes),
        };
        mc.enqueue_charged(flow, token, charge, now)
            .expect("flow exists");
        let at = mc.next_wakeup(now).expect("queued");
        let d = mc.dequeue(at).expect("due at its wake-up");
        assert_eq!(d.token, token);
        at
    });
    let end = burst_end(&t, 1, 750, 75).expect("burst ends");
    within(
        "mClock, 4 ops per request: burst (s)",
        end as f64 / 1e9,
        20.0,
        0.01,
    );
    let after = t.ops_between(25 * SEC, 40 * SEC) as f64 / 15.0;
    within(
        "mClock, 4 ops per request: requests/s after",
        after,
        75.0,
        0.01,
    );
    let (o, _) = mc.credit_status(flow, 40 * SEC);
    assert_eq!(o.expect("bucket").bucket, 54_000);
}
