//! A job's assessment: what limited it (the diagnosis, from the host tool sets, the node's
//! samples and fio's result) and whether it reached steady state (from fio's windows). Both
//! are computed once, right after the job, and stored with it (docs/DIAGNOSIS.md).

use std::path::Path;

use assess::figures::summarize;
use assess::steady::{self, SteadyState};
use assess::{Diagnosis, FioFigures, Inputs, NodeFigures};
use fio::JobResult;

use crate::series::JobSeries;
use crate::target::{EmbeddedNode, Target};
use crate::verdict::Limits;

/// The block devices behind the target: the embedded node's data directory, a path
/// target's file system or block device; none for NBD URIs and `--node` volumes (every
/// device then counts).
pub fn devices(node: Option<&EmbeddedNode>, target: &Target) -> Vec<String> {
    match (node, target) {
        (Some(n), _) => toolsets::device::backing_devices(n.data_dir()),
        (None, Target::Path(p)) => toolsets::device::backing_devices(p),
        (None, Target::Embedded) => Vec::new(),
        _ => Vec::new(),
    }
}

/// The node's view of `volume` over the job: effective ceilings (and burst ceilings while
/// its buckets had credits), the mean latency and its ceiling/floor waits, weighted by
/// each window's operations, and (given the job's window, ms) its own rate over it.
pub fn node_figures(
    s: &JobSeries,
    volume: Option<&str>,
    limits: Option<&Limits>,
    window_ms: Option<u64>,
) -> Option<NodeFigures> {
    let l = limits?;
    let mut f = NodeFigures {
        ceiling_iops: l.ceiling_iops,
        ceiling_bps: l.ceiling_bps,
        ..NodeFigures::default()
    };
    let mut ops = 0.0;
    for n in s
        .node
        .iter()
        .filter(|n| !matches!(volume, Some(v) if n.volume != v))
    {
        // A burst bucket with credits in a window: its burst rate was a ceiling that applied.
        let burst = |c: &Option<crate::series::CreditSample>| {
            c.filter(|c| c.balance > 0.0 && c.burst > 0.0)
                .map_or(0, |c| c.burst as u64)
        };
        f.burst_iops = f.burst_iops.max(burst(&n.iops_credits));
        f.burst_bps = f.burst_bps.max(burst(&n.bytes_credits));
        let w = n.iops();
        ops += w;
        f.lat_mean_us += n.lat_mean_us * w;
        f.ceiling_wait_us += n.ceiling_wait_us * w;
        f.floor_wait_us += n.floor_wait_us * w;
    }
    if ops > 0.0 {
        f.lat_mean_us /= ops;
        f.ceiling_wait_us /= ops;
        f.floor_wait_us /= ops;
    }
    // The node's own rate over the job's window (reads and writes, as fio counts them).
    if let Some(to_ms) = window_ms {
        use crate::kept::{node_rates, Dir};
        let mean = |bw: bool| {
            let w: Vec<(u64, f64, f64)> = node_rates(&s.node, volume, Dir::Both, bw)
                .into_iter()
                .filter(|(t, _, secs)| {
                    let mid = *t as f64 - secs * 500.0;
                    mid >= 0.0 && mid <= to_ms as f64
                })
                .collect();
            let time: f64 = w.iter().map(|x| x.2).sum();
            if time > 0.0 {
                w.iter().map(|x| x.1 * x.2).sum::<f64>() / time
            } else {
                0.0
            }
        };
        f.iops = mean(false);
        f.bps = mean(true);
    }
    Some(f)
}

/// What fio measured, as the diagnosis compares it with the ceiling: the mean of its
/// windows (`iops_mean`, `bw_mean`). Not the robust median: a job whose median sits on the
/// ceiling while starved windows pulled its mean down was limited by the machine in those
/// windows, and the host rules should say so.
pub fn fio_figures(_s: &JobSeries, r: &JobResult) -> FioFigures {
    FioFigures {
        iops: r.read.iops_mean + r.write.iops_mean,
        bw_bytes: r.read.bw_mean_bytes + r.write.bw_mean_bytes,
    }
}

/// The diagnosis of one job over its measured window (`runtime_s` after the ramp).
pub fn diagnose(
    s: &JobSeries,
    r: &JobResult,
    volume: Option<&str>,
    limits: Option<&Limits>,
    devices: &[String],
    runtime_s: f64,
) -> Diagnosis {
    let to_ms = (runtime_s * 1000.0) as u64;
    assess::diagnose(&Inputs {
        fio: fio_figures(s, r),
        node: node_figures(s, volume, limits, Some(to_ms)),
        hosts: s
            .hosts
            .iter()
            .filter(|h| !h.samples.is_empty())
            .map(|h| summarize(h, 0, to_ms, devices))
            .collect(),
    })
}

/// The SNIA-PTS check on the job's IOPS windows (all directions summed).
pub fn steady_state(s: &JobSeries) -> Option<SteadyState> {
    let iops: Vec<f64> = s.fio_totals().iter().map(|t| t.iops).collect();
    steady::check(&iops)
}

/// A path's devices (exposed for tests and callers with their own targets).
pub fn devices_of(path: &Path) -> Vec<String> {
    toolsets::device::backing_devices(path)
}
