//! Per-bucket metrics (S3): the volume metrics' shapes with a `bucket` label.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use super::{esc, header};
use crate::node::Node;
use crate::stats::OpKind;

pub(super) fn render(node: &Node, o: &mut String) {
    let bs: Vec<_> = node
        .buckets()
        .into_iter()
        .map(|b| {
            let l = format!("bucket=\"{}\",uuid=\"{}\"", esc(&b.name), esc(&b.uuid));
            (b, l)
        })
        .collect();
    header(o, "qoslab_buckets", "gauge", "S3 buckets in service.");
    let _ = writeln!(o, "qoslab_buckets {}", bs.len());
    header(
        o,
        "qoslab_bucket_ops_total",
        "counter",
        "S3 requests completed on the bucket: read = GET, write = PUT and UploadPart, other = the rest.",
    );
    for (b, l) in &bs {
        for (op, k) in [
            ("read", OpKind::Read),
            ("write", OpKind::Write),
            ("other", OpKind::Other),
        ] {
            let _ = writeln!(
                o,
                "qoslab_bucket_ops_total{{{l},op=\"{op}\"}} {}",
                b.stats.ops(k)
            );
        }
    }
    header(
        o,
        "qoslab_bucket_bytes_total",
        "counter",
        "Payload bytes, by direction.",
    );
    for (b, l) in &bs {
        for (op, c) in [
            ("read", &b.stats.read_bytes),
            ("write", &b.stats.write_bytes),
        ] {
            let _ = writeln!(
                o,
                "qoslab_bucket_bytes_total{{{l},op=\"{op}\"}} {}",
                c.load(Relaxed)
            );
        }
    }
    header(
        o,
        "qoslab_bucket_errors_total",
        "counter",
        "S3 requests that failed after admission.",
    );
    for (b, l) in &bs {
        let _ = writeln!(
            o,
            "qoslab_bucket_errors_total{{{l}}} {}",
            b.stats.errors.load(Relaxed)
        );
    }
    header(
        o,
        "qoslab_bucket_qos_wait_seconds_total",
        "counter",
        "Time S3 requests spent queued by QoS: by the bucket's ceiling or behind others' floors.",
    );
    for (b, l) in &bs {
        let _ = writeln!(
            o,
            "qoslab_bucket_qos_wait_seconds_total{{{l},limit=\"ceiling\"}} {}",
            b.stats.ceiling_wait_ns.load(Relaxed) as f64 / 1e9
        );
        let _ = writeln!(
            o,
            "qoslab_bucket_qos_wait_seconds_total{{{l},limit=\"floor\"}} {}",
            b.stats.floor_wait_ns.load(Relaxed) as f64 / 1e9
        );
    }
    header(
        o,
        "qoslab_bucket_limit_iops",
        "gauge",
        "Effective QoS limit in ops/s (0: not enforced).",
    );
    for (b, l) in &bs {
        let lim = b.limits();
        let _ = writeln!(
            o,
            "qoslab_bucket_limit_iops{{{l},limit=\"ceiling\"}} {}",
            lim.ceiling.iops
        );
        let _ = writeln!(
            o,
            "qoslab_bucket_limit_iops{{{l},limit=\"floor\"}} {}",
            lim.floor.iops
        );
    }
    header(
        o,
        "qoslab_bucket_limit_bytes_per_second",
        "gauge",
        "Effective QoS limit in bytes per second (0: not enforced).",
    );
    for (b, l) in &bs {
        let lim = b.limits();
        let _ = writeln!(
            o,
            "qoslab_bucket_limit_bytes_per_second{{{l},limit=\"ceiling\"}} {}",
            lim.ceiling.bytes_per_sec
        );
        let _ = writeln!(
            o,
            "qoslab_bucket_limit_bytes_per_second{{{l},limit=\"floor\"}} {}",
            lim.floor.bytes_per_sec
        );
    }
    header(
        o,
        "qoslab_bucket_used_bytes",
        "gauge",
        "Bytes stored (ONTAP's logical_used_size).",
    );
    for (b, l) in &bs {
        let _ = writeln!(o, "qoslab_bucket_used_bytes{{{l}}} {}", b.store.used());
    }
    header(o, "qoslab_bucket_objects", "gauge", "Objects stored.");
    for (b, l) in &bs {
        let _ = writeln!(o, "qoslab_bucket_objects{{{l}}} {}", b.store.count());
    }
}
