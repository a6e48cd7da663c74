//! What limited a class at a scale point, and its verdicts judged with it (docs/DIAGNOSIS.md),
//! so a tenants verdict missed because the machine was short of CPU or shared is
//! inconclusive, as any fio job's is.
//!
//! The inputs, adapted: the class's mean IOPS per tenant as the node counted it stands for
//! fio's rate (its volumes' ceiling is per volume), the node's per-operation latency and
//! ceiling/floor waits over the class's volumes, and the point's tool sets over its
//! iterations (the embedded node's threads are the node; the applications, fio included,
//! are this process's other threads and children).

use assess::{Check, Diagnosis, FioFigures, Inputs, NodeFigures, Quantity, Sense};
use harness::verdict::Verdict;
use toolsets::HostSeries;

use super::point::PointResult;
use super::verdicts::PointVerdict;

/// The diagnosis of `class` at point `p`. `devices`: those behind the node's data.
pub fn class(p: &PointResult, class: &str, devices: &[String]) -> Diagnosis {
    let vols: Vec<_> = p.volumes.iter().filter(|v| v.class == class).collect();
    let ops: u64 = vols.iter().map(|v| v.ops).sum();
    let per_op_us = |ns: u64| {
        if ops > 0 {
            ns as f64 / ops as f64 / 1000.0
        } else {
            0.0
        }
    };
    let per_tenant_iops = if vols.is_empty() {
        0.0
    } else {
        ops as f64 / p.secs.max(1e-9) / vols.len() as f64
    };
    assess::diagnose(&Inputs {
        fio: FioFigures {
            iops: per_tenant_iops,
            bw_bytes: 0.0,
        },
        // No volumes: a directory target, whose storage qoslab does not see (the tool
        // sets alone diagnose).
        node: (!vols.is_empty()).then(|| NodeFigures {
            ceiling_iops: vols.first().map(|v| v.ceiling_iops).unwrap_or(0),
            ceiling_bps: 0,
            lat_mean_us: per_op_us(vols.iter().map(|v| v.lat_ns).sum()),
            ceiling_wait_us: per_op_us(vols.iter().map(|v| v.ceiling_wait_ns).sum()),
            floor_wait_us: per_op_us(vols.iter().map(|v| v.floor_wait_ns).sum()),
            ..NodeFigures::default()
        }),
        hosts: hosts(&p.hosts, p.secs, devices),
    })
}

fn hosts(series: &[HostSeries], secs: f64, devices: &[String]) -> Vec<assess::HostFigures> {
    let to_ms = (secs * 1000.0) as u64;
    series
        .iter()
        .filter(|h| !h.samples.is_empty())
        .map(|h| assess::figures::summarize(h, 0, to_ms, devices))
        .collect()
}

/// A point verdict judged with its class's diagnosis: a floor missed (too little
/// throughput) under `client-cpu-bound` or `noisy-host` is inconclusive, as is a ceiling
/// missed from below; a ceiling exceeded, or a failed iteration (no figure), stays a
/// failure.
pub fn judged(v: Verdict, pv: &PointVerdict, target: f64, d: &Diagnosis) -> Verdict {
    let check = Check {
        passed: v.passed,
        quantity: Quantity::Throughput,
        sense: if pv.kind == "floor" {
            Sense::AtLeast
        } else {
            Sense::Around
        },
        measured: pv.worst,
        target,
        io_error: pv.worst.is_nan(),
    };
    v.judged(&check, Some(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenants::point::VolumeCounters;
    use assess::{Bottleneck, Outcome};

    fn point(ceiling: u64, ops: u64, ceiling_wait_ns: u64) -> PointResult {
        let volumes = (0..2)
            .map(|i| VolumeCounters {
                tenant: format!("c-n2-t{i}"),
                class: "c".into(),
                ops,
                ceiling_wait_ns,
                lat_ns: ceiling_wait_ns + ops * 100_000,
                ceiling_iops: ceiling,
                ..Default::default()
            })
            .collect();
        PointResult::of(2, vec![], volumes, 10.0)
    }

    fn pv(kind: &str, worst: f64) -> PointVerdict {
        PointVerdict {
            tenants: 2,
            class: "c".into(),
            kind: kind.into(),
            expected: String::new(),
            worst,
            worst_tenant: "c-n2-t0".into(),
            pass: false,
        }
    }

    #[test]
    fn tenants_at_their_ceilings_are_qos_bound_and_a_starved_floor_is_inconclusive() {
        // 1000 ops in 10 s per tenant at a 100 IOPS ceiling: the ceiling held them.
        let d = class(&point(100, 1000, 0), "c", &[]);
        assert_eq!(d.bottleneck, Bottleneck::QosBound, "{d:?}");
        // No tool sets and no limit reached: not measured.
        let d = class(&point(0, 500, 0), "c", &[]);
        assert_eq!(d.bottleneck, Bottleneck::NotMeasured, "{d:?}");
        // Waits dominate the node's latency: qos-bound by rule 8.
        let d = class(&point(0, 500, 500 * 10_000_000), "c", &[]);
        assert_eq!(d.bottleneck, Bottleneck::QosBound, "{}", d.reason);

        let noisy = Diagnosis {
            bottleneck: Bottleneck::NoisyHost,
            reason: "others".into(),
            figures: vec![],
        };
        let v = Verdict::plain("floor".into(), 90.0, ">= 98".into(), false, String::new());
        let j = judged(v.clone(), &pv("floor", 90.0), 98.0, &noisy);
        assert_eq!(j.outcome, Outcome::Inconclusive, "{j:?}");
        // A failed iteration (no figure) stays a failure.
        let j = judged(v.clone(), &pv("floor", f64::NAN), 98.0, &noisy);
        assert_eq!(j.outcome, Outcome::Fail);
        // A ceiling exceeded is never the machine's doing.
        let j = judged(v, &pv("ceiling", 120.0), 100.0, &noisy);
        assert_eq!(j.outcome, Outcome::Fail);
    }
}
