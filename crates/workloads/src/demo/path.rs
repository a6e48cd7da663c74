//! The client path: what fio over NBD to the embedded node adds, on this machine, to the
//! latency the node itself serves.
//!
//! Seed 000's latency cells are what its client saw: the array's service time plus the
//! client's own path to it (its NFS client, the network, its wake-ups). The demo's array
//! is declared with those client-side figures (`seed000::ARRAY`: 794/689 µs for 4 KiB at
//! QD4). The node serves exactly the declared service latency (its own counters say so),
//! and fio over NBD on this machine adds its path on top: 35-70 µs per 4 KiB request at
//! QD4 (a sleep and a wake-up on each side, the unix socket, libnbd), so fio would read
//! the seed's figure plus that.
//!
//! So the demo measures the path first, on a node of its own with the same array: 4 KiB
//! random reads, then writes, at QD4, and per direction fio's mean latency less the node's
//! mean over the same requests. The array it then runs serves the seed's latency less
//! that, and fio sees the seed's. The path is printed and kept in the stored plan;
//! `qoslab demo --raw-latency` skips it (the node serves the seed's figures, fio reads them
//! plus the path).

use fio::{Executor, JobFile, Section};
use harness::target::EmbeddedNode;
use harness::RunError;
use qos_core::Direction;
use storage_node::stats::OpKind;
use storage_node::NodeConfig;

use crate::dbench::seed000;

/// The probe's runtime and ramp per direction (s): ~5,000 requests, a mean to 1 µs.
const PROBE_RUNTIME: f64 = 1.5;
const PROBE_RAMP: f64 = 0.5;
/// A path longer than this share of the seed's latency is not taken off (the machine is
/// too busy for the figure to mean anything); the demo then says so.
const MAX_SHARE: f64 = 0.25;
/// The probe's volume.
const VOLUME: &str = "path-probe";

/// What the client path adds per 4 KiB request at QD4, µs (fio's mean less the node's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientPath {
    pub read_us: f64,
    pub write_us: f64,
    /// The seed's 4 KiB latencies `seed000::ARRAY` declares (µs): read, write.
    pub seed_us: [f64; 2],
}

/// The array's latency line, in `seed000::ARRAY`'s form.
fn latency_line([r, w]: [f64; 2]) -> String {
    format!("latency = {{ read = {{ fixed = \"{r}us\" }}, write = {{ fixed = \"{w}us\" }} }}")
}

/// Seed 000's array with the probe's volume, as a node configuration.
fn probe_config() -> Result<NodeConfig, RunError> {
    let toml = format!(
        "{}\n[[volume]]\nname = \"{VOLUME}\"\nsize = \"1GiB\"\n",
        seed000::ARRAY
    );
    NodeConfig::parse(&toml, "qoslab demo: the client path probe")
        .map_err(|e| RunError::Plan(e.to_string()))
}

/// The 4 KiB latencies (µs) the array of `cfg` serves: read, write.
fn seed_us(cfg: &NodeConfig) -> [f64; 2] {
    [Direction::Read, Direction::Write].map(|d| cfg.array.latency.at(d, 4096) as f64 / 1e3)
}

impl ClientPath {
    /// The latency the array serves so that fio sees the seed's (µs, whole): read, write.
    /// A path outside 0..25% of the seed's figure is not taken off.
    pub fn served_us(&self) -> [u64; 2] {
        let paths = [self.read_us, self.write_us];
        std::array::from_fn(|i| {
            let off = if self.taken()[i] { paths[i] } else { 0.0 };
            (self.seed_us[i] - off).round() as u64
        })
    }

    /// Whether each direction's path is taken off: read, write.
    fn taken(&self) -> [bool; 2] {
        let paths = [self.read_us, self.write_us];
        std::array::from_fn(|i| (0.0..=self.seed_us[i] * MAX_SHARE).contains(&paths[i]))
    }

    /// Seed 000's array serving [`served_us`](Self::served_us).
    pub fn array(&self) -> String {
        let [r, w] = self.served_us();
        let line = format!(
            "# The seed's {:.0}/{:.0} us less this machine's client path (fio over NBD: \
             +{:.0}/+{:.0} us measured), so fio sees the seed's.\n{}",
            self.seed_us[0],
            self.seed_us[1],
            self.read_us,
            self.write_us,
            latency_line([r as f64, w as f64])
        );
        seed000::ARRAY.replace(&latency_line(self.seed_us), &line)
    }

    /// One line for the terminal.
    pub fn describe(&self) -> String {
        let [r, w] = self.served_us();
        let mut s = format!(
            "Client path on this machine (fio over NBD to the embedded node, 4 KiB at QD4): \
             +{:.0} us per read, +{:.0} us per write over the node's own latency; the array \
             serves {r}/{w} us so that fio sees the seed's {:.0}/{:.0} (--raw-latency: the \
             seed's figures at the node).\n",
            self.read_us, self.write_us, self.seed_us[0], self.seed_us[1]
        );
        if self.taken() != [true, true] {
            s.push_str(&format!(
                "  (a path outside 0-{:.0}% of the seed's latency is not taken off: the \
                 machine was too busy for it to mean anything)\n",
                MAX_SHARE * 100.0
            ));
        }
        s
    }
}

/// Measure the client path on a node of its own with seed 000's array: 4 KiB random reads
/// then writes at QD4, each [`PROBE_RUNTIME`] after a [`PROBE_RAMP`].
pub fn measure(exec: &dyn Executor) -> Result<ClientPath, RunError> {
    let cfg = probe_config()?;
    let node = EmbeddedNode::start(&cfg.clone().into())?;
    let mut us = [0.0; 2];
    for (i, (rw, kind)) in [("randread", OpKind::Read), ("randwrite", OpKind::Write)]
        .into_iter()
        .enumerate()
    {
        let before = node_latency(&node, kind);
        let out = exec
            .run(&probe_job(&node, rw))
            .map_err(|e| RunError::Plan(format!("the client path probe ({rw}): {e}")))?;
        let after = node_latency(&node, kind);
        let r = out.job(rw).ok_or_else(|| {
            RunError::Plan(format!("the client path probe ({rw}): fio reported no job"))
        })?;
        let fio_ns = if kind == OpKind::Read {
            r.read.lat_mean_ns
        } else {
            r.write.lat_mean_ns
        };
        let n = after.1.saturating_sub(before.1);
        if n == 0 || fio_ns <= 0.0 {
            return Err(RunError::Plan(format!(
                "the client path probe ({rw}): no request completed"
            )));
        }
        let node_ns = after.0.saturating_sub(before.0) as f64 / n as f64;
        us[i] = (fio_ns - node_ns) / 1e3;
    }
    Ok(ClientPath {
        read_us: us[0],
        write_us: us[1],
        seed_us: seed_us(&cfg),
    })
}

/// The volume's (latency sum ns, requests) of `kind` so far.
fn node_latency(node: &EmbeddedNode, kind: OpKind) -> (u64, u64) {
    node.node()
        .volume(VOLUME)
        .map(|v| {
            let h = &v.stats.latency[kind as usize];
            (h.sum_ns(), h.count())
        })
        .unwrap_or_default()
}

fn probe_job(node: &EmbeddedNode, rw: &str) -> JobFile {
    let mut f = JobFile::new();
    for (k, v) in node.options(VOLUME) {
        f.global.set(&k, v);
    }
    f.global
        .set("bs", "4k")
        .set("iodepth", "4")
        .set("size", "256m")
        .set("time_based", "1")
        .set("runtime", fio::jobfile::fio_time(PROBE_RUNTIME))
        .set("ramp_time", fio::jobfile::fio_time(PROBE_RAMP));
    let mut j = Section::new(rw);
    j.set("rw", rw);
    f.jobs.push(j);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path measured on seed 000's array.
    fn path(read_us: f64, write_us: f64) -> ClientPath {
        ClientPath {
            read_us,
            write_us,
            seed_us: seed_us(&probe_config().unwrap()),
        }
    }

    #[test]
    fn the_seed_latency_line_is_the_arrays() {
        let cfg = probe_config().unwrap();
        assert!(seed000::ARRAY.contains(&latency_line(seed_us(&cfg))));
        let lat = &cfg.array.latency;
        assert_eq!(lat.at(qos_core::Direction::Read, 4096), 794_000);
        assert_eq!(lat.at(qos_core::Direction::Write, 4096), 689_000);
    }

    #[test]
    fn the_array_serves_the_seeds_latency_less_the_path() {
        let p = path(44.4, 45.6);
        assert_eq!(p.served_us(), [750, 643]);
        let text = p.array();
        assert!(!text.contains(&latency_line(p.seed_us)));
        assert!(text.contains("fixed = \"750us\""), "{text}");
        assert!(text.contains("fixed = \"643us\""), "{text}");
        assert!(text.contains("+44/+46 us measured"), "{text}");
        assert!(!p.describe().contains("not taken off"));
    }

    #[test]
    fn a_path_outside_a_quarter_of_the_seeds_latency_is_not_taken_off() {
        let p = path(250.0, -3.0);
        assert_eq!(p.served_us(), [794, 689]);
        assert!(p.describe().contains("not taken off"), "{}", p.describe());
        let half = path(40.0, 200.0);
        assert_eq!(half.served_us(), [754, 689]);
        assert!(half.describe().contains("not taken off"));
    }
}
