//! The analysis of a test's requests, warp's way (minio/warp's `analyze`, re-derived):
//!
//! - **the window**: measurement starts once every client (on every host) has completed a
//!   request and ends when the first client starts its last one, so neither the ramp-up
//!   nor the tail where clients drop out counts; `skip` (the plan's ramp) moves the start
//!   further;
//! - **throughput**: operations are counted where they end (an operation ending inside the
//!   window counts, whenever it started), bytes are shared out over the time each request
//!   was in flight (a 64 MiB PUT that straddles the window's edge counts with the part
//!   inside), both divided by the window's length;
//! - **latency** (start to end) and **TTFB** (GETs: start to the body's first byte): mean,
//!   min, p50, p90, p99, max of the successful requests that ended inside the window
//!   (nearest-rank percentiles over every request, no histogram);
//! - **segments** of 1 s from the test's start: per operation, ops/s, MiB/s, errors, mean,
//!   p50, p99 latency and mean TTFB of the requests ending in each; those wholly inside the
//!   window give the slowest, median and fastest segment;
//! - **errors** by code over the whole test (warm-up included: nothing is hidden);
//! - all of it per host and for all hosts together (`"All hosts"`), on one clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::driver::OpRecord;
use super::spec::Op;

/// The label of the merged results of several hosts.
pub const ALL_HOSTS: &str = "All hosts";

/// One host's requests (`host` is "" for a single local driver).
#[derive(Debug, Clone, Copy)]
pub struct HostRecords<'a> {
    pub host: &'a str,
    pub ops: &'a [OpRecord],
}

/// The measured window, ns since the test's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
    /// False when no client overlap existed (too few requests): the whole test is used.
    pub trimmed: bool,
}

impl Window {
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Latency statistics, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatStats {
    pub n: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl LatStats {
    /// Of `v` (sorted in place); None when empty.
    pub fn of(v: &mut [u64]) -> Option<LatStats> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let n = v.len();
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(LatStats {
            n: n as u64,
            mean_ns: v.iter().map(|&x| x as f64).sum::<f64>() / n as f64,
            min_ns: v[0],
            p50_ns: rank(0.50),
            p90_ns: rank(0.90),
            p99_ns: rank(0.99),
            max_ns: v[n - 1],
        })
    }
}

/// The slowest, median and fastest 1 s segment inside the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SegSpread {
    pub n: u32,
    pub ops_slowest: f64,
    pub ops_median: f64,
    pub ops_fastest: f64,
    pub bps_slowest: f64,
    pub bps_median: f64,
    pub bps_fastest: f64,
}

/// One operation's results on one host (or all hosts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    pub host: String,
    pub op: Op,
    /// Successful requests that ended inside the window.
    pub ops: u64,
    /// Bytes moved inside the window.
    pub bytes: f64,
    pub window_ns: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
    pub lat: LatStats,
    pub ttfb: Option<LatStats>,
    pub seg: SegSpread,
    /// Requests of the whole test (warm-up and tail included), and the failed ones by code.
    pub total: u64,
    pub errors: u64,
    pub error_codes: BTreeMap<String, u64>,
}

/// One segment of one operation on one host (or all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub host: String,
    pub op: Op,
    pub start_ns: u64,
    pub end_ns: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
    pub errors: u64,
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    /// Mean TTFB of the GETs ending here (0: none).
    pub ttfb_mean_ns: f64,
    pub in_window: bool,
}

/// A test's analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub window: Window,
    pub summaries: Vec<OpSummary>,
    pub segments: Vec<Segment>,
}

/// warp's active range: from the moment every client has finished a request to the moment
/// the first client started its last one.
pub fn window(hosts: &[HostRecords], skip_ns: u64) -> Window {
    let mut first_end: BTreeMap<(usize, u32), u64> = BTreeMap::new();
    let mut last_start: BTreeMap<(usize, u32), u64> = BTreeMap::new();
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for (h, hr) in hosts.iter().enumerate() {
        for r in hr.ops {
            let k = (h, r.client);
            let e = first_end.entry(k).or_insert(u64::MAX);
            *e = (*e).min(r.end_ns);
            let s = last_start.entry(k).or_insert(0);
            *s = (*s).max(r.start_ns);
            lo = lo.min(r.start_ns);
            hi = hi.max(r.end_ns);
        }
    }
    if first_end.is_empty() {
        return Window {
            start_ns: 0,
            end_ns: 0,
            trimmed: false,
        };
    }
    let start = first_end.values().copied().max().unwrap_or(0).max(skip_ns);
    let end = last_start.values().copied().min().unwrap_or(0);
    if start < end {
        Window {
            start_ns: start,
            end_ns: end,
            trimmed: true,
        }
    } else {
        // Everything: the last request's end included.
        Window {
            start_ns: lo,
            end_ns: hi.max(lo) + 1,
            trimmed: false,
        }
    }
}

/// The part of `[s, e]` inside `[a, b)`, as a fraction of `e - s`.
fn overlap(s: u64, e: u64, a: u64, b: u64) -> f64 {
    if e <= s {
        return if (a..b).contains(&e) { 1.0 } else { 0.0 };
    }
    let (lo, hi) = (s.max(a), e.min(b));
    if hi <= lo {
        0.0
    } else {
        (hi - lo) as f64 / (e - s) as f64
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

/// The spread of the whole segments inside the window (their ops/s and bytes/s).
fn spread(mut in_ops: Vec<f64>, mut in_bps: Vec<f64>) -> SegSpread {
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    if in_ops.is_empty() {
        SegSpread::default()
    } else {
        SegSpread {
            n: in_ops.len() as u32,
            ops_slowest: min(&in_ops),
            ops_fastest: max(&in_ops),
            bps_slowest: min(&in_bps),
            bps_fastest: max(&in_bps),
            ops_median: median(&mut in_ops),
            bps_median: median(&mut in_bps),
        }
    }
}

/// Analyse one set of requests (one host, or all hosts) for one operation.
fn one(
    host: &str,
    op: Op,
    recs: &[&OpRecord],
    w: Window,
    seg_ns: u64,
    last_ns: u64,
    segments: &mut Vec<Segment>,
) -> OpSummary {
    let wlen = w.len_ns().max(1) as f64 / 1e9;
    let mut lat = Vec::new();
    let mut ttfb = Vec::new();
    let mut bytes = 0.0;
    let mut error_codes: BTreeMap<String, u64> = BTreeMap::new();
    for r in recs {
        if let Some(code) = &r.error {
            *error_codes.entry(code.clone()).or_default() += 1;
            continue;
        }
        bytes += r.bytes as f64 * overlap(r.start_ns, r.end_ns, w.start_ns, w.end_ns);
        if (w.start_ns..w.end_ns).contains(&r.end_ns) {
            lat.push(r.end_ns - r.start_ns);
            if r.ttfb_ns > 0 {
                ttfb.push(r.ttfb_ns);
            }
        }
    }
    let ops = lat.len() as u64;
    // Whole segments from the test's start (a last, partial one would show a rate over a
    // few milliseconds: warp leaves it out too).
    let nseg = (last_ns / seg_ns.max(1)).max(1) as usize;
    let mut seg_lat: Vec<Vec<u64>> = vec![Vec::new(); nseg];
    let mut seg_ttfb: Vec<(f64, u64)> = vec![(0.0, 0); nseg];
    let mut seg_bytes = vec![0.0f64; nseg];
    let mut seg_err = vec![0u64; nseg];
    for r in recs {
        // Counted in the segment they end in (if it is a whole one); bytes shared over
        // every whole segment the request overlaps.
        let k = (r.end_ns / seg_ns) as usize;
        if r.error.is_some() {
            if k < nseg {
                seg_err[k] += 1;
            }
            continue;
        }
        if k < nseg {
            seg_lat[k].push(r.end_ns - r.start_ns);
            if r.ttfb_ns > 0 {
                seg_ttfb[k].0 += r.ttfb_ns as f64;
                seg_ttfb[k].1 += 1;
            }
        }
        if r.bytes > 0 {
            let first = (r.start_ns / seg_ns) as usize;
            for (j, b) in seg_bytes
                .iter_mut()
                .enumerate()
                .take(k.min(nseg - 1) + 1)
                .skip(first)
            {
                let a = j as u64 * seg_ns;
                *b += r.bytes as f64 * overlap(r.start_ns, r.end_ns, a, a + seg_ns);
            }
        }
    }
    let (mut in_ops, mut in_bps) = (Vec::new(), Vec::new());
    for (k, mut l) in seg_lat.into_iter().enumerate() {
        let start = k as u64 * seg_ns;
        let end = start + seg_ns;
        let dur = (end - start) as f64 / 1e9;
        let st = LatStats::of(&mut l).unwrap_or_default();
        let in_window = start >= w.start_ns && end <= w.end_ns;
        let s = Segment {
            host: host.to_string(),
            op,
            start_ns: start,
            end_ns: end,
            ops_per_s: st.n as f64 / dur,
            bytes_per_s: seg_bytes[k] / dur,
            errors: seg_err[k],
            lat_mean_ns: st.mean_ns,
            lat_p50_ns: st.p50_ns,
            lat_p99_ns: st.p99_ns,
            ttfb_mean_ns: if seg_ttfb[k].1 > 0 {
                seg_ttfb[k].0 / seg_ttfb[k].1 as f64
            } else {
                0.0
            },
            in_window,
        };
        if in_window {
            in_ops.push(s.ops_per_s);
            in_bps.push(s.bytes_per_s);
        }
        segments.push(s);
    }
    let seg = spread(in_ops, in_bps);
    OpSummary {
        host: host.to_string(),
        op,
        ops,
        bytes,
        window_ns: w.len_ns(),
        ops_per_s: ops as f64 / wlen,
        bytes_per_s: bytes / wlen,
        lat: LatStats::of(&mut lat).unwrap_or_default(),
        ttfb: LatStats::of(&mut ttfb),
        seg,
        total: recs.len() as u64,
        errors: error_codes.values().sum(),
        error_codes,
    }
}

/// Analyse a test: per operation, per host (when there are several) and for all hosts.
/// `skip_ns` moves the window's start (the ramp); `seg_ns` is the segment length.
pub fn analyze(hosts: &[HostRecords], skip_ns: u64, seg_ns: u64) -> Analysis {
    let w = window(hosts, skip_ns);
    let last_ns = hosts
        .iter()
        .flat_map(|h| h.ops.iter().map(|r| r.end_ns))
        .max()
        .unwrap_or(0);
    let mut labels: Vec<(String, Vec<&OpRecord>)> = Vec::new();
    if hosts.len() == 1 {
        labels.push((hosts[0].host.to_string(), hosts[0].ops.iter().collect()));
    } else {
        for h in hosts {
            labels.push((h.host.to_string(), h.ops.iter().collect()));
        }
        labels.push((
            ALL_HOSTS.to_string(),
            hosts.iter().flat_map(|h| h.ops.iter()).collect(),
        ));
    }
    let mut summaries = Vec::new();
    let mut segments = Vec::new();
    for op in Op::ALL {
        for (host, recs) in &labels {
            let of_op: Vec<&OpRecord> = recs.iter().copied().filter(|r| r.op == op).collect();
            if of_op.is_empty() {
                continue;
            }
            summaries.push(one(host, op, &of_op, w, seg_ns, last_ns, &mut segments));
        }
    }
    Analysis {
        window: w,
        summaries,
        segments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn rec(op: Op, client: u32, start: u64, end: u64, bytes: u64) -> OpRecord {
        OpRecord {
            op,
            client,
            start_ns: start,
            end_ns: end,
            ttfb_ns: if op == Op::Get { (end - start) / 2 } else { 0 },
            bytes,
            error: None,
        }
    }

    /// Two clients: client 0 runs 100 ms GETs from 0 s to 10 s, client 1 starts at 1 s and
    /// stops at 9 s. The window is [1.1 s, 8.9 s) (client 1's first end, its last start).
    #[test]
    fn the_window_is_where_every_client_runs() {
        let mut ops = Vec::new();
        for i in 0..100 {
            ops.push(rec(Op::Get, 0, i * S / 10, (i + 1) * S / 10, 4096));
        }
        for i in 10..90 {
            ops.push(rec(Op::Get, 1, i * S / 10, (i + 1) * S / 10, 4096));
        }
        let h = [HostRecords {
            host: "",
            ops: &ops,
        }];
        let w = window(&h, 0);
        assert_eq!(
            (w.start_ns, w.end_ns, w.trimmed),
            (11 * S / 10, 89 * S / 10, true)
        );
        let a = analyze(&h, 0, S);
        let g = &a.summaries[0];
        assert_eq!((g.host.as_str(), g.op), ("", Op::Get));
        // Ends in [1.1, 8.9): 1.1 .. 8.8 for each client, 78 each: 20 ops/s.
        assert_eq!(g.ops, 156);
        assert!((g.ops_per_s - 20.0).abs() < 1e-9, "{}", g.ops_per_s);
        // Bytes: both clients stream 4096 B per 100 ms through the whole window.
        assert!(
            (g.bytes_per_s - 2.0 * 40960.0).abs() < 1e-6,
            "{}",
            g.bytes_per_s
        );
        assert_eq!(g.lat.p50_ns, S / 10);
        assert_eq!(g.ttfb.unwrap().p99_ns, S / 20);
        assert_eq!(g.total, 180);
        // Segments 2..8 are wholly inside: 20 ops/s each.
        assert_eq!(g.seg.n, 6);
        assert_eq!(g.seg.ops_median, 20.0);
        // A skip moves the start.
        assert_eq!(window(&h, 3 * S).start_ns, 3 * S);
    }

    #[test]
    fn percentiles_errors_and_hosts() {
        let mut a_ops: Vec<OpRecord> = (1..=100)
            .map(|i| rec(Op::Put, 0, i * 1_000_000, i * 1_000_000 + i * 1000, 1 << 20))
            .collect();
        a_ops.push(OpRecord {
            error: Some("SlowDown".into()),
            ..rec(Op::Put, 0, 0, 5, 0)
        });
        let b_ops: Vec<OpRecord> = (1..=100)
            .map(|i| rec(Op::Delete, 0, i * 1_000_000, i * 1_000_000 + 500, 0))
            .collect();
        let hosts = [
            HostRecords {
                host: "h0",
                ops: &a_ops,
            },
            HostRecords {
                host: "h1",
                ops: &b_ops,
            },
        ];
        let a = analyze(&hosts, 0, S);
        let labels: Vec<(String, Op)> =
            a.summaries.iter().map(|s| (s.host.clone(), s.op)).collect();
        assert_eq!(
            labels,
            [
                ("h0".to_string(), Op::Put),
                (ALL_HOSTS.to_string(), Op::Put),
                ("h1".to_string(), Op::Delete),
                (ALL_HOSTS.to_string(), Op::Delete)
            ]
        );
        let put = &a.summaries[1];
        assert_eq!(put.errors, 1);
        assert_eq!(put.error_codes["SlowDown"], 1);
        let mut lat: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        let st = LatStats::of(&mut lat).unwrap();
        assert_eq!(
            (st.p50_ns, st.p90_ns, st.p99_ns, st.max_ns),
            (50_000, 90_000, 99_000, 100_000)
        );
        assert!(put.ttfb.is_none());
        assert!(LatStats::of(&mut []).is_none());
    }

    #[test]
    fn bytes_are_shared_over_the_segments_a_request_spans() {
        // A 3 MiB PUT from 0.5 s to 3.5 s, and a 1 MiB one from 3.5 s to 4.5 s.
        let ops = [
            rec(Op::Put, 0, S / 2, 7 * S / 2, 3 << 20),
            rec(Op::Put, 0, 7 * S / 2, 9 * S / 2, 1 << 20),
        ];
        let a = analyze(
            &[HostRecords {
                host: "",
                ops: &ops,
            }],
            0,
            S,
        );
        let bps: Vec<f64> = a.segments.iter().map(|s| s.bytes_per_s).collect();
        // Whole segments only: [0,1) .. [3,4); the half second after 4 s is left out.
        assert_eq!(bps.len(), 4);
        assert!((bps[0] - f64::from(1 << 19)).abs() < 1.0, "{bps:?}");
        assert!((bps[1] - f64::from(1 << 20)).abs() < 1.0, "{bps:?}");
        assert!((bps[3] - f64::from(1 << 20)).abs() < 1.0, "{bps:?}");
        assert!(!a.window.trimmed);
        assert_eq!(a.segments[3].ops_per_s, 1.0, "the first PUT ends in [3, 4)");
        assert_eq!(a.summaries[0].ops, 2, "the summary counts every request");
    }
}
