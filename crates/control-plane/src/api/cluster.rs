//! `GET /api/cluster`: the node itself — its emulated controller (capacity, discipline),
//! the floors it has promised, and whether they are overcommitted.

use serde_json::{json, Value};

use super::{ControlPlane, Reply, R};
use crate::config::array::describe;
use crate::config::{ArraySpec, Discipline};
use qos_core::ServiceLatency;

impl ControlPlane {
    pub fn cluster(&self) -> R<Reply> {
        Ok(Reply::ok(cluster_json(self)))
    }
}

fn cluster_json(cp: &ControlPlane) -> Value {
    let mut qos = match cp.node.scheduler.status() {
        None => json!({
            "controller": "none",
            "floors_enforced": false,
            "note": "no [capacity] declared: the node runs at the backend's real speed and \
                     floors are reported but not enforced",
        }),
        Some(s) => json!({
            "controller": "emulated",
            "discipline": s.capacity.discipline.to_string(),
            "floors_enforced": s.capacity.discipline == Discipline::Mclock,
            "capacity": {
                "iops": s.capacity.iops,
                "mbps": s.capacity.mbps,
                "cost_unit": s.capacity.cost_unit,
            },
            "floors": {
                "iops": s.reserved.iops,
                "bytes_per_sec": s.reserved.bytes_per_sec,
            },
            "overcommitted": s.overcommit.is_some(),
            "floor_scale": s.overcommit.unwrap_or(1.0),
            "queued": s.queued,
        }),
    };
    if let Value::Object(m) = &mut qos {
        m.extend(array_json(cp.node.scheduler.array()));
    }
    let mut out = json!({
        "name": "qoslab",
        "version": { "full": concat!("qoslab ", env!("CARGO_PKG_VERSION")) },
        "volumes": cp.node.volumes().len(),
        "qos": qos,
        "ceiling_mode": cp.node.ceiling_mode().to_string(),
    });
    if let Some(fs) = crate::credits::fs_json(&cp.node) {
        out["provisioned"] = fs;
    }
    out
}

/// The emulated array's settings (docs/CONFIG.md, "I/O-size accounting" and "An emulated
/// array"): how requests are counted, what they cost, how long they take.
fn array_json(a: &ArraySpec) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("io_accounting".into(), json!(a.accounting.to_string()));
    m.insert(
        "mbps_ceiling_with_floor".into(),
        json!(a.mbps_ceiling_with_floor.to_string()),
    );
    if let Some(model) = &a.model {
        let points = |c| {
            describe(c)
                .into_iter()
                .map(|(size, rate)| (size, json!(rate)))
                .collect::<serde_json::Map<_, _>>()
        };
        m.insert(
            "array".into(),
            json!({ "read": points(&model.read), "write": points(&model.write) }),
        );
    }
    if !a.latency.is_zero() {
        let l = |s: ServiceLatency| json!({ "fixed_us": s.fixed_ns as f64 / 1e3, "per_kib_us": s.per_kib_ns as f64 / 1e3 });
        m.insert(
            "service_latency".into(),
            json!({ "read": l(a.latency.read), "write": l(a.latency.write) }),
        );
    }
    m
}
