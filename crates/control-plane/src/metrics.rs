//! Prometheus text exposition (`GET /metrics`) and the per-second sampler.
//!
//! The request path only bumps relaxed atomics ([`crate::stats`]); this module reads them
//! when scraped and never holds a lock the request path takes.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::credits::header;
use crate::front_end::ServerStats;
use crate::node::Node;
use crate::stats::{OpKind, VolumeStats, LATENCY_BUCKETS_NS, SAMPLE_EVERY};
use crate::volume::Volume;

mod buckets;

/// Sample every volume's counters every [`SAMPLE_EVERY`] (rates for the API's `metric`).
pub fn spawn_sampler(node: Arc<Node>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let now = std::time::Instant::now();
            for v in node.volumes() {
                v.stats.sample(now);
            }
            for b in node.buckets() {
                b.stats.sample(now);
            }
            if let Some(fs) = node.provisioned() {
                fs.stats.sample(now);
            }
        }
    })
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The `op` label of each kind of request.
const OPS: [(&str, OpKind); 3] = [
    ("op=\"read\"", OpKind::Read),
    ("op=\"write\"", OpKind::Write),
    ("op=\"other\"", OpKind::Other),
];

/// A volume's or a bucket's bytes transferred, by direction.
fn bytes_by_op(s: &VolumeStats) -> [(&'static str, u64); 2] {
    [
        ("op=\"read\"", s.read_bytes.load(Relaxed)),
        ("op=\"write\"", s.write_bytes.load(Relaxed)),
    ]
}

/// One metric family: its header, then for each subject (with its labels) one sample per
/// extra label (`op="read"`; empty for none) that `samples` gives.
fn family<T, V: std::fmt::Display, const N: usize>(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    subjects: &[(T, String)],
    samples: impl Fn(&T) -> [(&'static str, V); N],
) {
    header(out, name, kind, help);
    for (s, l) in subjects {
        for (extra, v) in samples(s) {
            let _ = if extra.is_empty() {
                writeln!(out, "{name}{{{l}}} {v}")
            } else {
                writeln!(out, "{name}{{{l},{extra}}} {v}")
            };
        }
    }
}

/// The effective QoS limits (ceiling and floor) of volumes or buckets, in `unit`s per
/// second and in bytes per second: `{prefix}_limit_iops`, `{prefix}_limit_bytes_per_second`.
fn limit_families<T>(
    out: &mut String,
    prefix: &str,
    unit: &str,
    subjects: &[(T, String)],
    limits: impl Fn(&T) -> qos_core::EffectiveLimits,
) {
    family(
        out,
        &format!("{prefix}_limit_iops"),
        "gauge",
        &format!("Effective QoS limit in {unit} (0: not enforced)."),
        subjects,
        |s| {
            let lim = limits(s);
            [
                ("limit=\"ceiling\"", lim.ceiling.iops),
                ("limit=\"floor\"", lim.floor.iops),
            ]
        },
    );
    family(
        out,
        &format!("{prefix}_limit_bytes_per_second"),
        "gauge",
        "Effective QoS limit in bytes per second (0: not enforced).",
        subjects,
        |s| {
            let lim = limits(s);
            [
                ("limit=\"ceiling\"", lim.ceiling.bytes_per_sec),
                ("limit=\"floor\"", lim.floor.bytes_per_sec),
            ]
        },
    );
}

/// Render all metrics in Prometheus text format 0.0.4: the node's volumes (labelled with
/// the uuids the control plane gave them, `(name, uuid)`) and the NBD server's counters.
pub fn render(node: &Node, uuids: &[(String, String)], s: &ServerStats) -> String {
    let vols: Vec<_> = node
        .volumes()
        .into_iter()
        .map(|v| {
            let uuid = uuids
                .iter()
                .find(|(n, _)| n == &v.name)
                .map(|(_, u)| u.clone())
                .unwrap_or_default();
            let labels = format!("volume=\"{}\",uuid=\"{}\"", esc(&v.name), esc(&uuid));
            (v, labels)
        })
        .collect();
    let mut o = String::with_capacity(4096 + vols.len() * 4096);
    connection_counts(&mut o, s);
    controller(&mut o, node);
    connection_errors(&mut o, s, vols.len());
    volume_counts(&mut o, node, &vols);
    volume_latency(&mut o, &vols);
    volume_waits(&mut o, &vols);
    volume_space(&mut o, &vols);
    volume_nas(&mut o, &vols);
    buckets::render(node, &mut o);
    crate::credits::render_metrics(&mut o, node, &vols);
    o
}

/// NBD's connection counters: accepted and open.
fn connection_counts(o: &mut String, s: &ServerStats) {
    header(
        o,
        "qoslab_connections_total",
        "counter",
        "NBD connections accepted.",
    );
    let _ = writeln!(
        o,
        "qoslab_connections_total {}",
        s.connections_total.load(Relaxed)
    );
    header(
        o,
        "qoslab_connections_open",
        "gauge",
        "NBD connections open now.",
    );
    let _ = writeln!(
        o,
        "qoslab_connections_open {}",
        s.connections_open.load(Relaxed)
    );
}

/// The emulated controller's capacity, floors and queue (when the node has one).
fn controller(o: &mut String, node: &Node) {
    if let Some(c) = node.scheduler.status() {
        for (name, help, v) in [
            (
                "qoslab_controller_capacity_iops",
                "Emulated controller capacity, ops/s in cost units ([capacity] iops; with read/write points, 4 KiB reads per second).",
                c.capacity.iops as f64,
            ),
            (
                "qoslab_controller_capacity_bytes_per_second",
                "Emulated controller capacity in bytes/s ([capacity] mbps).",
                (c.capacity.mbps << 20) as f64,
            ),
            (
                "qoslab_controller_floors_iops",
                "Sum of all floors (min IOPS) promised on this node.",
                c.reserved.iops as f64,
            ),
            (
                "qoslab_controller_floor_scale",
                "1 when floors fit the capacity; below 1, the factor every floor is scaled by (overcommit).",
                c.overcommit.unwrap_or(1.0),
            ),
            (
                "qoslab_controller_queued_requests",
                "Requests waiting in the emulated controller.",
                c.queued as f64,
            ),
        ] {
            header(o, name, "gauge", help);
            let _ = writeln!(o, "{name} {v}");
        }
    }
}

/// NBD connections that ended with an error, and the volumes in service.
fn connection_errors(o: &mut String, s: &ServerStats, volumes: usize) {
    header(
        o,
        "qoslab_connection_errors_total",
        "counter",
        "NBD connections that ended with an error.",
    );
    let _ = writeln!(
        o,
        "qoslab_connection_errors_total {}",
        s.connection_errors.load(Relaxed)
    );
    header(o, "qoslab_volumes", "gauge", "Volumes in service.");
    let _ = writeln!(o, "qoslab_volumes {}", volumes);
}

/// Per volume: operations (as the node's accounting counts them), requests, bytes, errors.
fn volume_counts(o: &mut String, node: &Node, vols: &[(Arc<Volume>, String)]) {
    let accounting = node.scheduler.array().accounting.to_string();
    family(
        o,
        "qoslab_volume_ops_total",
        "counter",
        &format!(
            "Operations completed in the node's I/O-size accounting unit (io_accounting = \
             {accounting}), by direction (other: trim, zero, flush, cache, block status)."
        ),
        vols,
        |v| {
            OPS.map(|(op, k)| {
                (
                    op,
                    v.stats.counted_milli[k as usize].load(Relaxed) as f64 / 1000.0,
                )
            })
        },
    );
    family(
        o,
        "qoslab_volume_requests_total",
        "counter",
        "NBD requests completed, by direction (one each, whatever their size).",
        vols,
        |v| OPS.map(|(op, k)| (op, v.stats.requests(k))),
    );
    family(
        o,
        "qoslab_volume_bytes_total",
        "counter",
        "Bytes transferred, by direction.",
        vols,
        |v| bytes_by_op(&v.stats),
    );
    family(
        o,
        "qoslab_volume_errors_total",
        "counter",
        "Requests that failed with an I/O error.",
        vols,
        |v| [("", v.stats.errors.load(Relaxed))],
    );
}

/// Per volume and direction: the latency histogram.
fn volume_latency(o: &mut String, vols: &[(Arc<Volume>, String)]) {
    header(
        o,
        "qoslab_volume_latency_seconds",
        "histogram",
        "Request latency from arrival to reply, including time queued by QoS.",
    );
    for (v, l) in vols {
        for (i, op) in ["read", "write", "other"].iter().enumerate() {
            let h = &v.stats.latency[i];
            let counts = h.counts();
            let mut cum = 0u64;
            for (b, le) in LATENCY_BUCKETS_NS.iter().enumerate() {
                cum += counts[b];
                let _ = writeln!(
                    o,
                    "qoslab_volume_latency_seconds_bucket{{{l},op=\"{op}\",le=\"{}\"}} {cum}",
                    *le as f64 / 1e9
                );
            }
            cum += counts[LATENCY_BUCKETS_NS.len()];
            let _ = writeln!(
                o,
                "qoslab_volume_latency_seconds_bucket{{{l},op=\"{op}\",le=\"+Inf\"}} {cum}"
            );
            let _ = writeln!(
                o,
                "qoslab_volume_latency_seconds_sum{{{l},op=\"{op}\"}} {}",
                h.sum_ns() as f64 / 1e9
            );
            let _ = writeln!(
                o,
                "qoslab_volume_latency_seconds_count{{{l},op=\"{op}\"}} {cum}"
            );
        }
    }
}

/// Per volume: time queued by QoS, and service overruns.
fn volume_waits(o: &mut String, vols: &[(Arc<Volume>, String)]) {
    family(
        o,
        "qoslab_volume_qos_wait_seconds_total",
        "counter",
        "Time requests spent queued by QoS: by the volume's ceiling (ONTAP \"QoS Max\") or \
         behind other volumes' floors (\"QoS Min\"), or for the provisioned file system's \
         resources (\"resource\").",
        vols,
        |v| {
            [
                ("limit=\"ceiling\"", &v.stats.ceiling_wait_ns),
                ("limit=\"floor\"", &v.stats.floor_wait_ns),
                ("limit=\"resource\"", &v.stats.resource_wait_ns),
            ]
            .map(|(limit, ns)| (limit, ns.load(Relaxed) as f64 / 1e9))
        },
    );
    family(
        o,
        "qoslab_volume_service_overruns_total",
        "counter",
        "Requests whose host I/O alone outlasted the emulated array's service latency: \
         their replies left when the I/O finished, late.",
        vols,
        |v| [("", v.stats.service_overruns.load(Relaxed))],
    );
    family(
        o,
        "qoslab_volume_service_overrun_seconds_total",
        "counter",
        "How far those replies were late, in total.",
        vols,
        |v| [("", v.stats.service_overrun_ns.load(Relaxed) as f64 / 1e9)],
    );
}

/// Per volume: limits, size and used space.
fn volume_space(o: &mut String, vols: &[(Arc<Volume>, String)]) {
    limit_families(o, "qoslab_volume", "IOPS", vols, |v| v.limits());
    family(
        o,
        "qoslab_volume_size_bytes",
        "gauge",
        "Volume size.",
        vols,
        |v| [("", v.size())],
    );
    family(
        o,
        "qoslab_volume_used_bytes",
        "gauge",
        "Space actually allocated (written, not trimmed), refreshed while written.",
        vols,
        |v| [("", v.space().used)],
    );
}

/// NAS volumes' junction paths and export policies.
fn volume_nas(o: &mut String, vols: &[(Arc<Volume>, String)]) {
    let nas: Vec<_> = vols.iter().filter(|(v, _)| v.is_nas()).collect();
    if !nas.is_empty() {
        header(
            o,
            "qoslab_volume_nas_info",
            "gauge",
            "NAS volumes (served over NFS): junction path and export policy; always 1.",
        );
        for (v, l) in nas {
            if let Some(n) = &v.nas {
                let _ = writeln!(
                    o,
                    "qoslab_volume_nas_info{{{l},path=\"{}\",export_policy=\"{}\"}} 1",
                    esc(&n.path),
                    esc(&n.policy_name())
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::front_end::ServerStats;
    use storage_node::testing::TestNode;

    /// Every family, in order, with its type: what dashboards and alerts are written
    /// against (a node with a controller, a block volume under a policy, a NAS volume).
    #[test]
    fn the_families_in_order() {
        let (node, _d) = TestNode::open(
            "[capacity]\niops = 1000\n\
             [[policy]]\nname = \"p\"\nfixed.max_throughput = \"100iops\"\n\
             [[volume]]\nname = \"blk\"\nsize = \"1MiB\"\npolicy = \"p\"\n\
             [[volume]]\nname = \"tree\"\nsize = \"1GiB\"\nnas_path = \"/tree\"\n",
            "metrics",
        )
        .split();
        let uuids = [("blk".to_string(), "u-1".to_string())];
        let text = super::render(&node, &uuids, &Arc::new(ServerStats::default()));
        let families = storage_node::testing::metric_families(&text);
        assert_eq!(
            families,
            [
                "qoslab_connections_total counter",
                "qoslab_connections_open gauge",
                "qoslab_controller_capacity_iops gauge",
                "qoslab_controller_capacity_bytes_per_second gauge",
                "qoslab_controller_floors_iops gauge",
                "qoslab_controller_floor_scale gauge",
                "qoslab_controller_queued_requests gauge",
                "qoslab_connection_errors_total counter",
                "qoslab_volumes gauge",
                "qoslab_volume_ops_total counter",
                "qoslab_volume_requests_total counter",
                "qoslab_volume_bytes_total counter",
                "qoslab_volume_errors_total counter",
                "qoslab_volume_latency_seconds histogram",
                "qoslab_volume_qos_wait_seconds_total counter",
                "qoslab_volume_service_overruns_total counter",
                "qoslab_volume_service_overrun_seconds_total counter",
                "qoslab_volume_limit_iops gauge",
                "qoslab_volume_limit_bytes_per_second gauge",
                "qoslab_volume_size_bytes gauge",
                "qoslab_volume_used_bytes gauge",
                "qoslab_volume_nas_info gauge",
                "qoslab_buckets gauge",
                "qoslab_bucket_ops_total counter",
                "qoslab_bucket_bytes_total counter",
                "qoslab_bucket_errors_total counter",
                "qoslab_bucket_qos_wait_seconds_total counter",
                "qoslab_bucket_limit_iops gauge",
                "qoslab_bucket_limit_bytes_per_second gauge",
                "qoslab_bucket_used_bytes gauge",
                "qoslab_bucket_objects gauge",
            ],
            "{text}"
        );
        assert!(text.contains("volume=\"blk\",uuid=\"u-1\""), "{text}");
    }
}
