//! `GET /api/cluster`: the node itself — its emulated controller (capacity, discipline),
//! the floors it has promised, and whether they are overcommitted.

use serde_json::{json, Value};

use super::{ControlPlane, Reply, R};
use crate::config::Discipline;

impl ControlPlane {
    pub fn cluster(&self) -> R<Reply> {
        Ok(Reply::ok(cluster_json(self)))
    }
}

fn cluster_json(cp: &ControlPlane) -> Value {
    let qos = match cp.node.scheduler.status() {
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
