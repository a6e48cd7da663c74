//! The node's own view while a job runs: per-volume rates sampled every
//! [`WINDOW_MS`](crate::series::WINDOW_MS) on a background thread.
//!
//! - [`EmbeddedProbe`]: the in-process node's counters (exact deltas per window: operations
//!   from the latency histograms, bytes, latency sums, time held by ceilings and floors).
//! - [`RestProbe`]: a running node's REST API ([`NodeHandle`]), `GET /api/storage/volumes?fields=name,metric`;
//!   its `metric` block holds the node's own rates over its last second (ONTAP's shape).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use storage_node::stats::OpKind;
use storage_node::Node;

use crate::node_api::NodeHandle;
use crate::series::{NodeSample, WINDOW_MS};

/// Something that reports per-volume rates (t_ms is filled in by the sampler).
pub trait NodeProbe: Send {
    /// Rates per volume over the interval since the previous call (the first call may
    /// only prime the probe and return nothing).
    fn poll(&mut self) -> Vec<NodeSample>;
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
}

impl EmbeddedProbe {
    pub fn new(node: Arc<Node>) -> EmbeddedProbe {
        EmbeddedProbe {
            node,
            prev: HashMap::new(),
        }
    }
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
                });
            }
        }
        out
    }
}

/// A running node's REST API (`--node URL`), through [`NodeHandle`].
pub struct RestProbe {
    node: NodeHandle,
    /// Per request; a slower node costs that sample, not the sampling schedule.
    pub timeout: Duration,
}

impl RestProbe {
    pub fn new(node: NodeHandle) -> RestProbe {
        RestProbe {
            node,
            timeout: Duration::from_millis(400),
        }
    }
}

impl NodeProbe for RestProbe {
    fn poll(&mut self) -> Vec<NodeSample> {
        let Ok(v) = self
            .node
            .get("/api/storage/volumes?fields=name,metric", self.timeout)
        else {
            return Vec::new();
        };
        let f = |m: &serde_json::Value, a: &str, b: &str| m[a][b].as_f64().unwrap_or(0.0);
        v["records"]
            .as_array()
            .map(|recs| {
                recs.iter()
                    .filter_map(|r| {
                        let m = &r["metric"];
                        Some(NodeSample {
                            t_ms: 0,
                            volume: r["name"].as_str()?.to_string(),
                            read_iops: f(m, "iops", "read"),
                            write_iops: f(m, "iops", "write"),
                            other_iops: f(m, "iops", "other"),
                            read_bps: f(m, "throughput", "read"),
                            write_bps: f(m, "throughput", "write"),
                            lat_mean_us: f(m, "latency", "total"),
                            ceiling_wait_us: f(m, "qos_latency", "ceiling"),
                            floor_wait_us: f(m, "qos_latency", "floor"),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A sampler thread running while one job runs.
pub struct Sampling {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<NodeSample>>,
}

/// Start sampling `probe` every [`WINDOW_MS`]. Times are placed on fio's log clock by
/// subtracting `ramp_ms` from the time since now; windows that end inside the ramp are
/// dropped.
pub fn start(mut probe: Box<dyn NodeProbe>, ramp_ms: u64) -> Sampling {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut out = Vec::new();
        probe.poll();
        let mut next = WINDOW_MS;
        while !flag.load(Ordering::Relaxed) {
            let due = t0 + Duration::from_millis(next);
            let now = Instant::now();
            if now < due {
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
                continue;
            }
            let t = next;
            next += WINDOW_MS;
            let samples = probe.poll();
            if t < ramp_ms + WINDOW_MS {
                continue;
            }
            for mut s in samples {
                s.t_ms = t - ramp_ms;
                out.push(s);
            }
        }
        out
    });
    Sampling { stop, handle }
}

impl Sampling {
    /// Stop and return the samples of volumes that saw any I/O.
    pub fn finish(self) -> Vec<NodeSample> {
        self.stop.store(true, Ordering::Relaxed);
        let all = self.handle.join().unwrap_or_default();
        let busy: Vec<String> = all
            .iter()
            .filter(|s| s.iops() > 0.0)
            .map(|s| s.volume.clone())
            .collect();
        all.into_iter()
            .filter(|s| busy.contains(&s.volume))
            .collect()
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
            };
            vec![s("busy", 500.0), s("idle", 0.0)]
        }
    }

    #[test]
    fn samples_on_fio_clock_after_the_ramp_and_drops_idle_volumes() {
        let s = start(Box::new(Fake(0)), 500);
        std::thread::sleep(Duration::from_millis(1700));
        let out = s.finish();
        // Ticks at 500 (inside the ramp: dropped), 1000 and 1500 -> t 500 and 1000.
        let t: Vec<u64> = out.iter().map(|s| s.t_ms).collect();
        assert_eq!(t, vec![500, 1000], "{out:?}");
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

    #[test]
    fn embedded_probe_reports_rates_from_counters() {
        let cfg =
            storage_node::NodeConfig::parse("[[volume]]\nname = \"v\"\nsize = \"1GB\"\n", "t.toml")
                .unwrap();
        let n = crate::target::EmbeddedNode::start(&cfg).unwrap();
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
