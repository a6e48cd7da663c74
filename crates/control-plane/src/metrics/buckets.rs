//! Per-bucket metrics (S3): the volume metrics' shapes with a `bucket` label.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use super::{bytes_by_op, esc, family, header, limit_families, OPS};
use crate::node::Node;

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
    family(
        o,
        "qoslab_bucket_ops_total",
        "counter",
        "S3 requests completed on the bucket: read = GET, write = PUT and UploadPart, other = the rest.",
        &bs,
        |b| OPS.map(|(op, k)| (op, b.stats.ops(k))),
    );
    family(
        o,
        "qoslab_bucket_bytes_total",
        "counter",
        "Payload bytes, by direction.",
        &bs,
        |b| bytes_by_op(&b.stats),
    );
    family(
        o,
        "qoslab_bucket_errors_total",
        "counter",
        "S3 requests that failed after admission.",
        &bs,
        |b| [("", b.stats.errors.load(Relaxed))],
    );
    family(
        o,
        "qoslab_bucket_qos_wait_seconds_total",
        "counter",
        "Time S3 requests spent queued by QoS: by the bucket's ceiling or behind others' floors.",
        &bs,
        |b| {
            [
                ("limit=\"ceiling\"", &b.stats.ceiling_wait_ns),
                ("limit=\"floor\"", &b.stats.floor_wait_ns),
            ]
            .map(|(limit, ns)| (limit, ns.load(Relaxed) as f64 / 1e9))
        },
    );
    limit_families(o, "qoslab_bucket", "ops/s", &bs, |b| b.limits());
    family(
        o,
        "qoslab_bucket_used_bytes",
        "gauge",
        "Bytes stored (ONTAP's logical_used_size).",
        &bs,
        |b| [("", b.store.used())],
    );
    family(
        o,
        "qoslab_bucket_objects",
        "gauge",
        "Objects stored.",
        &bs,
        |b| [("", b.store.count())],
    );
}
