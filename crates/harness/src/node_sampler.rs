//! The node's own view while a job runs: per-volume rates sampled every
//! [`WINDOW_MS`](crate::series::WINDOW_MS) on a background thread.
//!
//! - [`EmbeddedProbe`]: the in-process node's counters (exact deltas per window: operations
//!   from the latency histograms, bytes, latency sums, time held by ceilings and floors).
//! - [`RestProbe`]: a running node's REST API ([`NodeHandle`]),
//!   `GET /api/storage/volumes?fields=name,metric,statistics,burst`: rates from the
//!   `statistics` block's raw cumulative counters (ONTAP's `iops_raw`, `throughput_raw`,
//!   `latency_raw`) between two polls, exact like the embedded probe's; the `metric` block
//!   (the node's rates over its last second) for the ceiling and floor waits, and for the
//!   rates when a node has no raw counters.
//!
//! Each sample is stamped with when it was taken (on fio's clock), not when it was due:
//! a sampler that ran late on a busy host says so, and a window's rate is over the time it
//! really covered. A REST rate is over the node's own interval between its two readings
//! (`statistics.timestamp`, when it is finer than a second): the answer's trip back varies
//! on a busy host, and its arrival time would stretch one window and shrink the next.
//!
//! Both also read each volume's burst buckets (balance at the end of the window) and, on a
//! node with an emulated provisioned file system, its resources ([`NodeProbe::poll_resources`]:
//! in-process from the file system's counters, or `GET /api/cluster`'s `provisioned` block).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use storage_node::credits::volume_credits;
use storage_node::stats::OpKind;
use storage_node::Node;

use crate::node_api::NodeHandle;
use crate::series::{CreditSample, NodeSample, ResourceSample, WINDOW_MS};

/// Something that reports per-volume rates (t_ms is filled in by the sampler).
pub trait NodeProbe: Send {
    /// Rates per volume over the interval since the previous call (the first call may
    /// only prime the probe and return nothing).
    fn poll(&mut self) -> Vec<NodeSample>;

    /// The node-wide resources (an emulated provisioned file system) over the same
    /// interval; called right after [`NodeProbe::poll`]. None by default.
    fn poll_resources(&mut self) -> Vec<ResourceSample> {
        Vec::new()
    }
}

#[derive(Clone, Copy)]
struct Counters {
    at: Instant,
    ops: [u64; 3],
    bytes: [u64; 2],
    lat_ns: [u64; 3],
    ceiling_ns: u64,
    floor_ns: u64,
}

/// The embedded node, read in-process.
pub struct EmbeddedProbe {
    node: Arc<Node>,
    prev: HashMap<String, Counters>,
    /// The file system's charged units per resource at the previous poll.
    prev_fs: Option<(Instant, [u64; 4])>,
}

impl EmbeddedProbe {
    pub fn new(node: Arc<Node>) -> EmbeddedProbe {
        EmbeddedProbe {
            node,
            prev: HashMap::new(),
            prev_fs: None,
        }
    }
}

/// A node bucket as a sample, its time to empty at `use_rate` (the window's use).
fn credit_sample(c: &qos_core::CreditStatus, use_rate: f64) -> CreditSample {
    CreditSample::at_use(
        c.balance as f64,
        c.bucket as f64,
        c.baseline as f64,
        c.burst as f64,
        use_rate,
    )
}

impl NodeProbe for EmbeddedProbe {
    fn poll(&mut self) -> Vec<NodeSample> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut out = Vec::new();
        let mut vols = self.node.volumes();
        vols.sort_by(|a, b| a.name.cmp(&b.name));
        for v in vols {
            let s = &v.stats;
            let now = Counters {
                at: Instant::now(),
                ops: [
                    s.ops(OpKind::Read),
                    s.ops(OpKind::Write),
                    s.ops(OpKind::Other),
                ],
                bytes: [s.read_bytes.load(Relaxed), s.write_bytes.load(Relaxed)],
                lat_ns: std::array::from_fn(|i| s.latency[i].sum_ns()),
                ceiling_ns: s.ceiling_wait_ns.load(Relaxed),
                floor_ns: s.floor_wait_ns.load(Relaxed),
            };
            if let Some(p) = self.prev.insert(v.name.clone(), now) {
                let secs = now.at.duration_since(p.at).as_secs_f64();
                if secs <= 0.0 {
                    continue;
                }
                let d = |a: u64, b: u64| a.saturating_sub(b);
                let ops: [u64; 3] = std::array::from_fn(|i| d(now.ops[i], p.ops[i]));
                let n: u64 = ops.iter().sum();
                let per_op_us = |ns: u64| {
                    if n == 0 {
                        0.0
                    } else {
                        ns as f64 / n as f64 / 1e3
                    }
                };
                let lat: u64 = (0..3).map(|i| d(now.lat_ns[i], p.lat_ns[i])).sum();
                let iops = n as f64 / secs;
                let bps = (d(now.bytes[0], p.bytes[0]) + d(now.bytes[1], p.bytes[1])) as f64 / secs;
                let credits = volume_credits(&self.node, &v, self.node.clock.now());
                out.push(NodeSample {
                    t_ms: 0,
                    volume: v.name.clone(),
                    read_iops: ops[0] as f64 / secs,
                    write_iops: ops[1] as f64 / secs,
                    other_iops: ops[2] as f64 / secs,
                    read_bps: d(now.bytes[0], p.bytes[0]) as f64 / secs,
                    write_bps: d(now.bytes[1], p.bytes[1]) as f64 / secs,
                    lat_mean_us: per_op_us(lat),
                    ceiling_wait_us: per_op_us(d(now.ceiling_ns, p.ceiling_ns)),
                    floor_wait_us: per_op_us(d(now.floor_ns, p.floor_ns)),
                    iops_credits: credits.iops.map(|b| credit_sample(&b.credits, iops)),
                    bytes_credits: credits.bytes.map(|b| credit_sample(&b.credits, bps)),
                });
            }
        }
        out
    }

    fn poll_resources(&mut self) -> Vec<ResourceSample> {
        let Some(fs) = self.node.provisioned() else {
            return Vec::new();
        };
        let at = Instant::now();
        let used: [u64; 4] = std::array::from_fn(|i| fs.stats.used[i].load(Ordering::Relaxed));
        let Some((t0, prev)) = self.prev_fs.replace((at, used)) else {
            return Vec::new();
        };
        let secs = at.duration_since(t0).as_secs_f64();
        if secs <= 0.0 {
            return Vec::new();
        }
        let st = fs.status(self.node.clock.now());
        st.resources
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let use_rate = used[i].saturating_sub(prev[i]) as f64 / secs;
                ResourceSample {
                    t_ms: 0,
                    resource: r.name.to_string(),
                    unit: r.unit.to_string(),
                    use_rate,
                    baseline: r.baseline as f64,
                    credits: r.credits.map(|c| credit_sample(&c, use_rate)),
                }
            })
            .collect()
    }
}

/// A bucket as the REST API shows it (`{balance, bucket, baseline, burst, time_to_empty_s}`).
fn rest_credit(b: &serde_json::Value) -> Option<CreditSample> {
    Some(CreditSample {
        balance: b["balance"].as_f64()?,
        bucket: b["bucket"].as_f64()?,
        baseline: b["baseline"].as_f64()?,
        burst: b["burst"].as_f64()?,
        time_to_empty_s: b["time_to_empty_s"].as_f64(),
    })
}

/// A volume's raw counters as the REST API's `statistics` block gives them: operations
/// (read, write, other), bytes (read, write), latency sums (µs), and when they were read.
#[derive(Clone, Copy)]
struct Raw {
    /// When the answer arrived (fio's clock).
    at: Instant,
    /// When the node read them, by its clock (see [`node_time`]).
    node_at: Option<SystemTime>,
    ops: [u64; 3],
    bytes: [u64; 2],
    lat_us: u64,
}

fn raw_counters(st: &serde_json::Value, at: Instant) -> Option<Raw> {
    let u = |a: &str, b: &str| st[a][b].as_u64();
    Some(Raw {
        at,
        node_at: node_time(st["timestamp"].as_str()),
        ops: [
            u("iops_raw", "read")?,
            u("iops_raw", "write")?,
            u("iops_raw", "other")?,
        ],
        bytes: [u("throughput_raw", "read")?, u("throughput_raw", "write")?],
        lat_us: u("latency_raw", "total")?,
    })
}

/// `statistics.timestamp` as a time, when it has a fraction of a second (qoslab's carry
/// microseconds; ONTAP's whole seconds would blur a one-second window more than the
/// answer's trip does).
fn node_time(ts: Option<&str>) -> Option<SystemTime> {
    ts.filter(|t| t.contains('.'))
        .and_then(|t| humantime::parse_rfc3339(t).ok())
}

/// Seconds between two readings of raw counters: by the node's clock when both carry its
/// time (and it moved forward), else by when the answers arrived.
fn interval_s(now: &Raw, prev: &Raw) -> f64 {
    now.node_at
        .zip(prev.node_at)
        .and_then(|(n, p)| n.duration_since(p).ok())
        .map(|d| d.as_secs_f64())
        .filter(|s| *s > 0.0)
        .unwrap_or_else(|| now.at.duration_since(prev.at).as_secs_f64())
}

/// A running node's REST API (`--node URL`), through [`NodeHandle`].
pub struct RestProbe {
    node: NodeHandle,
    /// Per request; a slower node costs that sample, not the sampling schedule.
    pub timeout: Duration,
    /// Whether the node has a provisioned file system (learnt from the first
    /// `GET /api/cluster`; a node without one is not asked again).
    has_fs: Option<bool>,
    /// Each volume's raw counters at the previous poll.
    prev: HashMap<String, Raw>,
    /// The LUNs sampled too, as (path, block volume name).
    luns: Vec<(String, String)>,
}

impl RestProbe {
    pub fn new(node: NodeHandle) -> RestProbe {
        RestProbe {
            node,
            timeout: Duration::from_millis(400),
            has_fs: None,
            prev: HashMap::new(),
            luns: Vec::new(),
        }
    }
}

impl RestProbe {
    /// Sample these LUNs too (`(path, block volume name)`): each one's samples carry the
    /// node's name of its block volume (`VOL:LUN`), from `GET /api/storage/luns` (a LUN's
    /// own books, which `/api/storage/volumes` does not list).
    pub fn with_luns(mut self, luns: Vec<(String, String)>) -> RestProbe {
        self.luns = luns;
        self
    }
}

/// The sample of one record (a volume's or a LUN's) named `name`; `prev` holds each
/// name's raw counters at the previous poll.
fn sample(
    prev: &mut HashMap<String, Raw>,
    r: &serde_json::Value,
    name: &str,
    at: Instant,
) -> NodeSample {
    let f = |m: &serde_json::Value, a: &str, b: &str| m[a][b].as_f64().unwrap_or(0.0);
    let m = &r["metric"];
    let mut s = NodeSample {
        t_ms: 0,
        volume: name.to_string(),
        read_iops: f(m, "iops", "read"),
        write_iops: f(m, "iops", "write"),
        other_iops: f(m, "iops", "other"),
        read_bps: f(m, "throughput", "read"),
        write_bps: f(m, "throughput", "write"),
        lat_mean_us: f(m, "latency", "total"),
        ceiling_wait_us: f(m, "qos_latency", "ceiling"),
        floor_wait_us: f(m, "qos_latency", "floor"),
        iops_credits: rest_credit(&r["burst"]["iops"]),
        bytes_credits: rest_credit(&r["burst"]["bytes"]),
    };
    // Exact rates between this poll's raw counters and the previous one's.
    if let Some(now) = raw_counters(&r["statistics"], at) {
        if let Some(p) = prev.insert(name.to_string(), now) {
            let secs = interval_s(&now, &p);
            if secs > 0.0 {
                let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
                let ops: f64 = (0..3).map(|i| d(now.ops[i], p.ops[i])).sum();
                s.read_iops = d(now.ops[0], p.ops[0]) / secs;
                s.write_iops = d(now.ops[1], p.ops[1]) / secs;
                s.other_iops = d(now.ops[2], p.ops[2]) / secs;
                s.read_bps = d(now.bytes[0], p.bytes[0]) / secs;
                s.write_bps = d(now.bytes[1], p.bytes[1]) / secs;
                s.lat_mean_us = if ops > 0.0 {
                    d(now.lat_us, p.lat_us) / ops
                } else {
                    0.0
                };
            }
        }
    }
    s
}

impl NodeProbe for RestProbe {
    fn poll(&mut self) -> Vec<NodeSample> {
        let Ok(v) = self.node.get(
            "/api/storage/volumes?fields=name,metric,statistics,burst",
            self.timeout,
        ) else {
            return Vec::new();
        };
        let at = Instant::now();
        let Some(recs) = v["records"].as_array() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for r in recs {
            if let Some(name) = r["name"].as_str() {
                out.push(sample(&mut self.prev, r, name, at));
            }
        }
        if self.luns.is_empty() {
            return out;
        }
        let Ok(v) = self.node.get(
            "/api/storage/luns?fields=name,metric,statistics",
            self.timeout,
        ) else {
            return out;
        };
        let at = Instant::now();
        for r in v["records"].as_array().into_iter().flatten() {
            let path = r["name"].as_str().unwrap_or_default();
            if let Some((_, name)) = self.luns.iter().find(|(p, _)| p == path) {
                out.push(sample(&mut self.prev, r, name, at));
            }
        }
        out
    }

    fn poll_resources(&mut self) -> Vec<ResourceSample> {
        if self.has_fs == Some(false) {
            return Vec::new();
        }
        let Ok(v) = self.node.get("/api/cluster", self.timeout) else {
            return Vec::new();
        };
        let fs = &v["provisioned"];
        self.has_fs = Some(fs.is_object());
        fs["resources"]
            .as_array()
            .map(|rs| {
                rs.iter()
                    .filter_map(|r| {
                        Some(ResourceSample {
                            t_ms: 0,
                            resource: r["name"].as_str()?.to_string(),
                            unit: r["unit"].as_str()?.to_string(),
                            use_rate: r["use"].as_f64().unwrap_or(0.0),
                            baseline: r["baseline"].as_f64().unwrap_or(0.0),
                            credits: rest_credit(&r["credits"]),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What the sampler thread collected.
type Collected = (Vec<NodeSample>, Vec<ResourceSample>);

/// A sampler thread running while one job runs.
pub struct Sampling {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Collected>,
}

/// Start sampling `probe` every [`WINDOW_MS`]. Times are placed on fio's log clock by
/// subtracting `ramp_ms` from the time since now; windows that end inside the ramp are
/// dropped.
pub fn start(mut probe: Box<dyn NodeProbe>, ramp_ms: u64) -> Sampling {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        let t0 = Instant::now();
        let (mut out, mut res) = (Vec::new(), Vec::new());
        probe.poll();
        probe.poll_resources();
        let mut next = WINDOW_MS;
        while !flag.load(Ordering::Relaxed) {
            let due = t0 + Duration::from_millis(next);
            let now = Instant::now();
            if now < due {
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
                continue;
            }
            next += WINDOW_MS;
            let samples = probe.poll();
            let resources = probe.poll_resources();
            // When the counters were read (late on a busy host), not when they were due.
            let t = t0.elapsed().as_millis() as u64;
            if t < ramp_ms + WINDOW_MS {
                continue;
            }
            for mut s in samples {
                s.t_ms = t - ramp_ms;
                out.push(s);
            }
            for mut r in resources {
                r.t_ms = t - ramp_ms;
                res.push(r);
            }
        }
        (out, res)
    });
    Sampling { stop, handle }
}

impl Sampling {
    /// Stop and return the samples of volumes that saw any I/O.
    pub fn finish(self) -> Vec<NodeSample> {
        self.finish_all().0
    }

    /// Stop and return the samples of volumes that saw any I/O, and of the node's
    /// resources when any was used.
    pub fn finish_all(self) -> (Vec<NodeSample>, Vec<ResourceSample>) {
        self.stop.store(true, Ordering::Relaxed);
        let (all, res) = self.handle.join().unwrap_or_default();
        let busy: Vec<String> = all
            .iter()
            .filter(|s| s.iops() > 0.0)
            .map(|s| s.volume.clone())
            .collect();
        let used = res.iter().any(|r| r.use_rate > 0.0);
        (
            all.into_iter()
                .filter(|s| busy.contains(&s.volume))
                .collect(),
            if used { res } else { Vec::new() },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(u32);
    impl NodeProbe for Fake {
        fn poll(&mut self) -> Vec<NodeSample> {
            self.0 += 1;
            let s = |v: &str, iops: f64| NodeSample {
                t_ms: 0,
                volume: v.into(),
                read_iops: iops,
                write_iops: 0.0,
                other_iops: 0.0,
                read_bps: iops * 4096.0,
                write_bps: 0.0,
                lat_mean_us: 1.0,
                ceiling_wait_us: 0.0,
                floor_wait_us: 0.0,
                ..Default::default()
            };
            vec![s("busy", 500.0), s("idle", 0.0)]
        }
    }

    #[test]
    fn samples_on_fio_clock_after_the_ramp_and_drops_idle_volumes() {
        let s = start(Box::new(Fake(0)), 500);
        std::thread::sleep(Duration::from_millis(1700));
        let out = s.finish();
        // Ticks at 500 (inside the ramp: dropped), 1000 and 1500 -> t 500 and 1000, each
        // stamped when it was taken: a few ms after it was due (up to the 1.7 s sleep on a
        // busy host, which then leaves one of them out).
        let t: Vec<u64> = out.iter().map(|s| s.t_ms).collect();
        assert!(!t.is_empty() && t.len() <= 2, "{out:?}");
        assert!(
            t[0] >= 500 && t.windows(2).all(|w| w[1] >= w[0] + 250),
            "{t:?}"
        );
        assert!(out.iter().all(|s| s.volume == "busy"));
    }

    /// A node API that answers every GET with one canned body.
    struct Canned(serde_json::Value);
    impl crate::node_api::NodeApi for Canned {
        fn get(&self, _path: &str, _t: Duration) -> Result<serde_json::Value, String> {
            Ok(self.0.clone())
        }
    }

    #[test]
    fn rest_probe_reads_the_metric_block() {
        let body = r#"{"records":[{"name":"v","metric":{"iops":{"read":500,"write":2,"other":0},"throughput":{"read":2048000,"write":8192},"latency":{"total":31000},"qos_latency":{"ceiling":30000,"floor":0}}}]}"#;
        let api = Canned(serde_json::from_str(body).unwrap());
        let mut p = RestProbe::new(NodeHandle::new("http://node", std::sync::Arc::new(api)));
        p.timeout = Duration::from_secs(5);
        let s = p.poll();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].read_iops, s[0].write_iops), (500.0, 2.0));
        assert_eq!(s[0].ceiling_wait_us, 30000.0);
        assert_eq!(s[0].volume, "v");
    }

    /// A node API that answers each GET with the next of its bodies.
    struct Sequence(std::sync::Mutex<Vec<serde_json::Value>>);
    impl crate::node_api::NodeApi for Sequence {
        fn get(&self, _path: &str, _t: Duration) -> Result<serde_json::Value, String> {
            let mut v = self.0.lock().unwrap();
            Ok(if v.len() > 1 {
                v.remove(0)
            } else {
                v[0].clone()
            })
        }
    }

    #[test]
    fn rest_probe_rates_are_exact_between_raw_counters() {
        // The node's `metric` says 500 IOPS over its last second; its raw counters say 150
        // reads, 10 writes and 5 flushes more, 600 KiB read, in the ~100 ms between polls.
        let body = |reads: u64, writes: u64, other: u64, read_bytes: u64, lat: u64| {
            serde_json::json!({"records": [{"name": "v",
                "metric": {"iops": {"read": 500, "write": 0, "other": 0},
                           "throughput": {"read": 2048000, "write": 0},
                           "latency": {"total": 31000},
                           "qos_latency": {"ceiling": 30000, "floor": 0}},
                "statistics": {"iops_raw": {"read": reads, "write": writes, "other": other},
                               "throughput_raw": {"read": read_bytes, "write": 0},
                               "latency_raw": {"total": lat}}}]})
        };
        let api = Sequence(std::sync::Mutex::new(vec![
            body(1000, 0, 0, 4_096_000, 100_000),
            body(1150, 10, 5, 4_096_000 + 614_400, 100_000 + 165 * 200),
        ]));
        let mut p = RestProbe::new(NodeHandle::new("http://node", std::sync::Arc::new(api)));
        p.timeout = Duration::from_secs(5);
        let first = p.poll();
        assert_eq!(
            first[0].read_iops, 500.0,
            "no earlier counters: the metric block"
        );
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(100));
        let s = p.poll();
        let secs = t0.elapsed().as_secs_f64();
        // Between 100 ms and however long the test took: the rate over what really passed.
        let (lo, hi) = (150.0 / secs, 150.0 / 0.1);
        assert!((lo * 0.9..=hi).contains(&s[0].read_iops), "{s:?}");
        assert!(
            (s[0].read_bps / s[0].read_iops - 4096.0).abs() < 1e-6,
            "{s:?}"
        );
        assert!((s[0].write_iops / s[0].read_iops - 10.0 / 150.0).abs() < 1e-9);
        assert!((s[0].other_iops / s[0].read_iops - 5.0 / 150.0).abs() < 1e-9);
        assert!((s[0].lat_mean_us - 200.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s[0].ceiling_wait_us, 30000.0, "waits from the metric block");
    }

    #[test]
    fn rest_rates_are_over_the_nodes_own_interval_when_it_gives_its_time() {
        // The node read its counters 250 ms apart; the answers arrived nearly together
        // (the first one held up on the way back, as on a starved host).
        let body = |reads: u64, ts: &str| {
            serde_json::json!({"records": [{"name": "v", "metric": {},
                "statistics": {"timestamp": ts,
                               "iops_raw": {"read": reads, "write": 0, "other": 0},
                               "throughput_raw": {"read": reads * 4096, "write": 0},
                               "latency_raw": {"total": 0}}}]})
        };
        let api = Sequence(std::sync::Mutex::new(vec![
            body(1000, "2026-11-29T01:20:16.000000Z"),
            body(1100, "2026-11-29T01:20:16.250000Z"),
        ]));
        let mut p = RestProbe::new(NodeHandle::new("http://node", std::sync::Arc::new(api)));
        p.timeout = Duration::from_secs(5);
        p.poll();
        let s = p.poll();
        assert!((s[0].read_iops - 400.0).abs() < 1e-6, "{s:?}");
        assert!((s[0].read_bps - 400.0 * 4096.0).abs() < 1e-3, "{s:?}");
        // Whole seconds (ONTAP's form) or no time: the answers' arrival.
        assert_eq!(node_time(Some("2026-11-29T01:20:16Z")), None);
        assert_eq!(node_time(None), None);
        assert!(node_time(Some("2026-11-29T01:20:16.250000Z")).is_some());
    }

    /// A node API that answers by path prefix and counts the calls.
    struct Routed(
        Vec<(&'static str, serde_json::Value)>,
        std::sync::Mutex<usize>,
    );
    impl crate::node_api::NodeApi for Routed {
        fn get(&self, path: &str, _t: Duration) -> Result<serde_json::Value, String> {
            *self.1.lock().unwrap() += 1;
            self.0
                .iter()
                .find(|(p, _)| path.starts_with(p))
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("{path}: 404"))
        }
    }

    #[test]
    fn a_luns_samples_carry_its_block_volumes_name() {
        let vols = r#"{"records":[{"name":"db","metric":{"iops":{"read":7}}}]}"#;
        let luns = r#"{"records":[
            {"name":"/vol/db/bench","metric":{"iops":{"read":400,"write":0,"other":0}}},
            {"name":"/vol/db/other","metric":{"iops":{"read":9}}}]}"#;
        let routes = || {
            vec![
                ("/api/storage/volumes?", serde_json::from_str(vols).unwrap()),
                ("/api/storage/luns?", serde_json::from_str(luns).unwrap()),
            ]
        };
        let api = std::sync::Arc::new(Routed(routes(), Default::default()));
        let mut p = RestProbe::new(NodeHandle::new("http://node", api))
            .with_luns(vec![("/vol/db/bench".into(), "db:bench".into())]);
        let s = p.poll();
        let got: Vec<(&str, f64)> = s.iter().map(|s| (s.volume.as_str(), s.read_iops)).collect();
        assert_eq!(got, vec![("db", 7.0), ("db:bench", 400.0)]);
        // Without LUNs to sample, /api/storage/luns is never asked.
        let api = std::sync::Arc::new(Routed(routes(), Default::default()));
        let mut p = RestProbe::new(NodeHandle::new("http://node", api.clone()));
        assert_eq!(p.poll().len(), 1);
        assert_eq!(*api.1.lock().unwrap(), 1);
    }

    #[test]
    fn rest_probe_reads_burst_buckets_and_the_file_systems_resources() {
        let vols = r#"{"records":[{"name":"gp2","metric":{"iops":{"read":3000,"write":0,"other":0},"throughput":{"read":12288000,"write":0},"latency":{"total":5000},"qos_latency":{"ceiling":100,"floor":0}},
            "burst":{"iops":{"balance":9000,"bucket":13500,"percent":66.67,"baseline":300,"burst":3000,"use":3000,"state":"bursting","time_to_empty_s":3.3}}}]}"#;
        let cluster = r#"{"name":"qoslab","provisioned":{"model":"fsx-ontap-128","resources":[
            {"name":"network","unit":"bytes","baseline":150000000,"use":1250000000,"credits":{"balance":5000000,"bucket":9900000,"percent":50.5,"baseline":150000000,"burst":1250000000,"use":1250000000,"state":"bursting","time_to_empty_s":0.0}},
            {"name":"ssd_iops","unit":"iops","baseline":3072,"use":0,"credits":null}]}}"#;
        let api = Routed(
            vec![
                (
                    "/api/storage/volumes?fields=name,metric,statistics,burst",
                    serde_json::from_str(vols).unwrap(),
                ),
                ("/api/cluster", serde_json::from_str(cluster).unwrap()),
            ],
            Default::default(),
        );
        let mut p = RestProbe::new(NodeHandle::new("http://node", std::sync::Arc::new(api)));
        p.timeout = Duration::from_secs(5);
        let s = p.poll();
        assert_eq!(s.len(), 1);
        let c = s[0].iops_credits.expect("the volume's IOPS bucket");
        assert_eq!(
            (c.balance, c.bucket, c.baseline, c.burst),
            (9000.0, 13500.0, 300.0, 3000.0)
        );
        assert_eq!(c.time_to_empty_s, Some(3.3));
        assert_eq!(s[0].bytes_credits, None);
        let r = p.poll_resources();
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            (r[0].resource.as_str(), r[0].unit.as_str()),
            ("network", "bytes")
        );
        assert_eq!(r[0].use_rate, 1.25e9);
        assert_eq!(r[0].credits.unwrap().burst, 1.25e9);
        assert_eq!(r[1].credits, None);
        // A node without a file system is asked once.
        let api = std::sync::Arc::new(Routed(
            vec![("/api/cluster", serde_json::json!({"name": "n"}))],
            Default::default(),
        ));
        let mut p = RestProbe::new(NodeHandle::new("http://node", api.clone()));
        assert!(p.poll_resources().is_empty());
        assert_eq!(p.has_fs, Some(false));
        assert!(p.poll_resources().is_empty());
        assert_eq!(*api.1.lock().unwrap(), 1);
    }

    #[test]
    fn embedded_probe_reports_buckets_and_resources() {
        let cfg = storage_node::NodeConfig::parse(
            "[provisioned]\npreset = \"fsx-ontap-128\"\nscale = 0.001\n\n[[policy]]\nname = \"gp2\"\nprovisioned = { model = \"ebs-gp2\", bucket_scale = 0.0025 }\n\n[[volume]]\nname = \"v\"\nsize = \"100GiB\"\nsnapshot_reserve_percent = 0\npolicy = \"gp2\"\n",
            "t.toml",
        )
        .unwrap();
        let n = crate::target::EmbeddedNode::start(&cfg.into()).unwrap();
        let mut p = EmbeddedProbe::new(n.node().clone());
        assert!(
            p.poll().is_empty() && p.poll_resources().is_empty(),
            "the first poll primes"
        );
        let v = n.node().volume("v").unwrap();
        for _ in 0..100 {
            v.stats.record(
                OpKind::Read,
                4096,
                1000,
                storage_node::stats::Waits::default(),
            );
        }
        let fs = n.node().provisioned().unwrap();
        fs.stats.used[0].fetch_add(50_000_000, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(50));
        let s = p.poll();
        let c = s[0].iops_credits.expect("a gp2 volume's bucket");
        assert_eq!(
            (c.bucket, c.balance, c.baseline, c.burst),
            (13_500.0, 13_500.0, 300.0, 3_000.0)
        );
        // 100 I/Os in ~50 ms: above the baseline, so the bucket would drain, at most at
        // the burst rate.
        let tte = c.time_to_empty_s.expect("draining");
        assert!(tte >= 13_500.0 / 2_700.0 - 1e-9 && tte.is_finite(), "{tte}");
        assert_eq!(s[0].bytes_credits, None, "gp2 at 100 GiB: flat 128 MiB/s");
        let r = p.poll_resources();
        let names: Vec<&str> = r.iter().map(|r| r.resource.as_str()).collect();
        assert_eq!(names, ["network", "disk", "disk_iops", "ssd_iops"]);
        assert!(r[0].use_rate > 1e8, "{r:?}");
        assert_eq!(r[0].baseline, 150_000_000.0);
        let net = r[0].credits.expect("the network bursts");
        assert_eq!(net.burst, 1_250_000_000.0);
        assert!(net.time_to_empty_s.is_some());
        assert_eq!(r[3].credits, None, "provisioned SSD IOPS are flat");
        n.stop();
    }

    #[test]
    fn embedded_probe_reports_rates_from_counters() {
        let cfg =
            storage_node::NodeConfig::parse("[[volume]]\nname = \"v\"\nsize = \"1GB\"\n", "t.toml")
                .unwrap();
        let n = crate::target::EmbeddedNode::start(&cfg.into()).unwrap();
        let mut p = EmbeddedProbe::new(n.node().clone());
        assert!(p.poll().is_empty(), "the first poll primes");
        let v = n.node().volume("v").unwrap();
        for _ in 0..100 {
            v.stats.record(
                OpKind::Read,
                4096,
                2_000_000,
                storage_node::stats::Waits {
                    ceiling_ns: 1_000_000,
                    floor_ns: 0,
                },
            );
        }
        std::thread::sleep(Duration::from_millis(100));
        let s = p.poll();
        assert_eq!(s.len(), 1);
        assert!(s[0].read_iops > 300.0 && s[0].read_iops < 1001.0, "{s:?}");
        assert_eq!(s[0].read_bps, s[0].read_iops * 4096.0);
        assert!((s[0].lat_mean_us - 2000.0).abs() < 1e-6, "{s:?}");
        assert!((s[0].ceiling_wait_us - 1000.0).abs() < 1e-6, "{s:?}");
        n.stop();
    }
}
