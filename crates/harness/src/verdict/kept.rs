//! The promise judged where it is kept (docs/DIAGNOSIS.md, "Where a promise is judged"):
//! when the target is a qoslab node (embedded or `--node`), a throughput check on a volume
//! is judged on the node's own per-volume counters over the judged window, and fio's figure
//! for the same window is the cross-check (`assess::crosscheck`).
//!
//! Both sides are read over the same span of fio's clock: the windows whose middle lies in
//! the judged window less one window at each end, so a sample the node took a little before
//! fio started measuring (the two clocks start a few milliseconds, on a busy host a few
//! hundred, apart) or after it stopped is not counted on one side only.

use assess::crosscheck::{agreement, Agreement};
use assess::Check;

use crate::series::{FioSample, NodeSample, WINDOW_MS};
use crate::verdict::{self, Evidence, Expectation, Kind, Metric, Operand, Verdict};

/// Which requests a figure counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    /// Reads and writes (never the node's "other" operations: flushes, trims, which fio
    /// does not count as I/Os).
    Both,
}

/// A volume's node windows as (end of window on fio's clock in ms, rate, seconds it
/// covered), in time order: requests per second, or bytes per second with `bw`. Each
/// window covers the time since the sample before it (the first one [`WINDOW_MS`]).
pub fn node_rates(
    node: &[NodeSample],
    volume: Option<&str>,
    dir: Dir,
    bw: bool,
) -> Vec<(u64, f64, f64)> {
    let mut prev: Option<u64> = None;
    node.iter()
        .filter(|n| volume.is_none_or(|v| n.volume == v))
        .map(|n| {
            let rate = match (dir, bw) {
                (Dir::Read, false) => n.read_iops,
                (Dir::Write, false) => n.write_iops,
                (Dir::Both, false) => n.read_iops + n.write_iops,
                (Dir::Read, true) => n.read_bps,
                (Dir::Write, true) => n.write_bps,
                (Dir::Both, true) => n.bps(),
            };
            let secs = match prev {
                Some(p) if n.t_ms > p => (n.t_ms - p) as f64 / 1000.0,
                _ => WINDOW_MS as f64 / 1000.0,
            };
            prev = Some(n.t_ms);
            (n.t_ms, rate, secs)
        })
        .collect()
}

/// fio's windows as (end in ms, rate), both directions summed per window for [`Dir::Both`];
/// each covers the time since the one before it.
pub fn client_rates(fio: &[FioSample], dir: Dir, bw: bool) -> Vec<(u64, f64)> {
    let mut by_t: std::collections::BTreeMap<u64, f64> = std::collections::BTreeMap::new();
    for s in fio {
        let wanted = match dir {
            Dir::Read => s.direction == "read",
            Dir::Write => s.direction == "write",
            Dir::Both => s.direction == "read" || s.direction == "write",
        };
        if wanted {
            *by_t.entry(s.t_ms).or_default() += if bw { s.bw_bytes } else { s.iops };
        }
    }
    by_t.into_iter().collect()
}

/// The node's figure over a judged window and the cross-check with the client's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeSide {
    /// The node's mean rate over the span (its windows weighted by the time they covered;
    /// the client's in `agreement` likewise).
    pub mean: f64,
    /// The median of its windows (a rate one late window cannot move: the `_steady`
    /// metrics).
    pub median: f64,
    /// The node's mean against the client's over the same span.
    pub agreement: Agreement,
}

/// The node's side of the window `[from_ms, to_ms]` of fio's clock, from both sides'
/// windows (`node`: [`node_rates`]; `client`: [`client_rates`]); `quantum` is one request
/// in the rate's unit. None when either side has fewer than two windows in the span.
pub fn node_side(
    node: &[(u64, f64, f64)],
    client: &[(u64, f64)],
    from_ms: u64,
    to_ms: u64,
    quantum: f64,
) -> Option<NodeSide> {
    let w = WINDOW_MS as f64;
    let inside = |mid: f64| mid >= (from_ms as f64 + w) && mid <= (to_ms as f64 - w);
    let n: Vec<(f64, f64)> = node
        .iter()
        .filter(|(t, _, secs)| inside(*t as f64 - secs * 500.0))
        .map(|(_, r, secs)| (*r, *secs))
        .collect();
    // fio stamps a window when it closes it, over the time since the one before (late on a
    // starved client): each covers the gap to its predecessor.
    let mut prev: Option<u64> = None;
    let c: Vec<(f64, f64)> = client
        .iter()
        .map(|(t, r)| {
            let secs = match prev {
                Some(p) if *t > p => (*t - p) as f64 / 1000.0,
                _ => w / 1000.0,
            };
            prev = Some(*t);
            (*t, *r, secs)
        })
        .filter(|(t, _, secs)| inside(*t as f64 - secs * 500.0))
        .map(|(_, r, secs)| (r, secs))
        .collect();
    if n.len() < 2 || c.len() < 2 {
        return None;
    }
    let weighted = |v: &[(f64, f64)]| {
        v.iter().map(|(r, s)| r * s).sum::<f64>() / v.iter().map(|x| x.1).sum::<f64>()
    };
    let mean = weighted(&n);
    let rates: Vec<f64> = n.iter().map(|x| x.0).collect();
    let client_mean = weighted(&c);
    let c: Vec<f64> = c.iter().map(|x| x.0).collect();
    Some(NodeSide {
        mean,
        median: assess::stats::median(&rates)?,
        agreement: agreement(mean, client_mean, &rates, &c, w / 1000.0, quantum)?,
    })
}

/// `e`'s verdict judged on the node's count of the job's volume, fio's verdict `client`
/// (`check`: what it measured and against what) being the cross-check; None for a latency,
/// or when the evidence holds no node samples of the volume over the window.
pub fn judged_on_node(
    e: &Expectation,
    client: &Verdict,
    check: &Check,
    ev: &Evidence,
) -> Option<Verdict> {
    if e.metric.kind() == Kind::Lat || ev.node.is_empty() || ev.span_ms == 0 {
        return None;
    }
    let dir = match e.dir {
        verdict::Dir::Read => Dir::Read,
        verdict::Dir::Write => Dir::Write,
        verdict::Dir::Both => Dir::Both,
    };
    let bw = e.metric.kind() == Kind::Bw;
    let node = node_rates(ev.node, ev.volume, dir, bw);
    // One request in the rate's unit: a request's mean bytes for a bandwidth.
    let quantum = if bw {
        let ops: f64 = node_rates(ev.node, ev.volume, dir, false)
            .iter()
            .map(|x| x.1 * x.2)
            .sum();
        let bytes: f64 = node.iter().map(|x| x.1 * x.2).sum();
        if ops > 0.0 {
            bytes / ops
        } else {
            1.0
        }
    } else {
        1.0
    };
    let side = node_side(
        &node,
        &client_rates(ev.fio, dir, bw),
        0,
        ev.span_ms,
        quantum,
    )?;
    let value = match e.metric {
        Metric::IopsSteady | Metric::BwSteady => side.median,
        _ => side.mean,
    };
    let name = e
        .text
        .split(|c: char| c.is_whitespace() || "<>~=".contains(c))
        .next()
        .unwrap_or("");
    let derived = e.factor != 1.0 || !matches!(e.operand, Operand::Number(_));
    let on_node = verdict::judge(
        &e.text,
        name,
        value,
        e.op,
        check.target,
        e.tolerance,
        derived,
    );
    let show = |x: f64| verdict::shown(name, x);
    let j = assess::judge_kept(
        &Check {
            passed: on_node.passed,
            measured: value,
            ..*check
        },
        Some(&assess::ClientSide {
            passed: client.passed,
            agreement: side.agreement,
        }),
        ev.diagnosis,
        &show,
    );
    let detail = on_node.detail.replacen(
        ", want",
        &format!(" at the node (fio {}), want", show(check.measured)),
        1,
    );
    Some(Verdict::new(e.text.clone(), value, on_node.bound, detail, j.outcome).because(j.reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(t_ms: u64, read_iops: f64) -> NodeSample {
        NodeSample {
            t_ms,
            volume: "v".into(),
            read_iops,
            read_bps: read_iops * 4096.0,
            other_iops: 7.0,
            ..Default::default()
        }
    }

    #[test]
    fn both_sides_over_the_same_trimmed_span() {
        // The node's sampler ran 40 ms ahead of fio's clock and once 300 ms late; a sample
        // of another volume and one after fio stopped (nothing served) are not the job's.
        let mut ns = vec![node(40, 900.0)];
        for t in [540, 1040, 1840, 2040, 2540, 3040, 3540, 4040, 4540] {
            ns.push(node(t, 300.0));
        }
        ns.push(NodeSample {
            volume: "other".into(),
            ..node(2540, 5000.0)
        });
        ns.push(node(5540, 0.0));
        let rates = node_rates(&ns, Some("v"), Dir::Read, false);
        assert_eq!(rates.len(), 11);
        assert_eq!(
            rates[3],
            (1840, 300.0, 0.8),
            "the late sample covered 800 ms"
        );
        assert_eq!(rates[1].1, 300.0, "flushes are not I/Os");
        let fio: Vec<FioSample> = (1..=10)
            .map(|k| FioSample {
                t_ms: k * 500,
                direction: "read".into(),
                iops: if k == 1 { 950.0 } else { 294.0 },
                bw_bytes: 0.0,
                lat_mean_ns: 0.0,
                p50_ns: 0,
                p99_ns: 0,
            })
            .collect();
        let client = client_rates(&fio, Dir::Both, false);
        let side = node_side(&rates, &client, 0, 5000, 1.0).unwrap();
        // Windows with their middle in 500..4500: the node's from 1040 to 4540 (the burst
        // at 40 and the idle 5540 left out), fio's 1000..4500.
        assert!((side.mean - 300.0).abs() < 1e-9, "{side:?}");
        assert!((side.agreement.client - 294.0).abs() < 1e-9, "{side:?}");
        assert_eq!(
            side.agreement.lagging(),
            Some(assess::crosscheck::Side::Client)
        );
        assert_eq!(node_side(&rates, &client, 0, 1000, 1.0), None);
        let bw = node_rates(&ns, Some("v"), Dir::Both, true);
        assert_eq!(bw[1].1, 300.0 * 4096.0);
    }

    fn fio_windows(iops: &[f64]) -> Vec<FioSample> {
        iops.iter()
            .enumerate()
            .map(|(k, v)| FioSample {
                t_ms: (k as u64 + 1) * 500,
                direction: "read".into(),
                iops: *v,
                bw_bytes: v * 4096.0,
                lat_mean_ns: 0.0,
                p50_ns: 0,
                p99_ns: 0,
            })
            .collect()
    }

    #[test]
    fn a_check_on_a_node_volume_is_judged_on_the_node_s_count() {
        let e = Expectation::parse("iops >= policy.floor").unwrap();
        let limits = crate::verdict::Limits {
            floor_iops: 300,
            ..Default::default()
        };
        let nodes: Vec<NodeSample> = (1..=10).map(|k| node(k * 500 + 20, 300.0)).collect();
        let result = |iops: f64| fio::JobResult {
            read: fio::DirStats {
                iops,
                total_ios: 100,
                ..Default::default()
            },
            ..Default::default()
        };
        let judged = |fio_iops: f64, fio: &[FioSample]| {
            e.check_with(
                &result(fio_iops),
                Some(&limits),
                &Evidence {
                    fio,
                    node: &nodes,
                    volume: Some("v"),
                    span_ms: 5000,
                    ..Default::default()
                },
            )
        };
        // fio 2% short of the floor the node served: the client lagged, inconclusive.
        let v = judged(294.0, &fio_windows(&[294.0; 10]));
        assert_eq!(v.outcome, assess::Outcome::Inconclusive, "{v:?}");
        assert_eq!(v.measured, 300.0);
        assert_eq!(
            v.detail,
            "iops = 300 at the node (fio 294), want >= 300 (from 300)"
        );
        assert!(v.reason.unwrap().contains("the client (fio) lagged"));
        // Both at the floor: a pass, on the node's figure.
        let v = judged(300.0, &fio_windows(&[300.0; 10]));
        assert_eq!(v.outcome, assess::Outcome::Pass, "{v:?}");
        // No node samples of this volume: fio's figure, as for any other target.
        let v = e.check_with(
            &result(294.0),
            Some(&limits),
            &Evidence {
                fio: &fio_windows(&[294.0; 10]),
                node: &nodes,
                volume: Some("another"),
                span_ms: 5000,
                ..Default::default()
            },
        );
        assert_eq!((v.outcome, v.measured), (assess::Outcome::Fail, 294.0));
    }
}
