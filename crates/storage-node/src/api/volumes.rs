//! `/api/storage/volumes`: volumes, one at a time or by query (ONTAP's PATCH/DELETE on a
//! collection), with their live `metric` rates and raw `statistics` counters.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::model::{self, code, ApiError, PolicyRef, VolumePatch};
use super::policies::{need_query, uuids_of};
use super::query::{self, Query};
use super::{db_err, svm_json, ControlPlane, Inner, Reply, R};
use crate::config::VolumeSpec;
use crate::state::{new_uuid, VolumeRow};
use crate::stats::OpKind;
use crate::volume::Volume;

pub const VOLUMES: &str = "/api/storage/volumes";

pub(super) const VOLUME_TOP: &[&str] = &[
    "uuid",
    "name",
    "svm",
    "size",
    "comment",
    "state",
    "type",
    "style",
    "space",
    "qos",
    "metric",
    "statistics",
    "limits",
    "nbd",
    "burst",
];

impl ControlPlane {
    pub(super) fn volume_json(&self, inner: &Inner, v: &VolumeRow) -> Value {
        let mut m = Map::new();
        m.insert("uuid".into(), json!(v.uuid));
        m.insert("name".into(), json!(v.name));
        m.insert("svm".into(), svm_json(inner, &v.svm_name, &v.svm_uuid));
        let live = self.node.volume(&v.name);
        let space = live.as_ref().map(|l| l.space());
        let size = space.map(|s| s.size).unwrap_or(v.size);
        let used = space.map(|s| s.used).unwrap_or(0);
        let allocated = space.map(|s| s.allocated()).unwrap_or(v.size);
        m.insert("size".into(), json!(size));
        m.insert("comment".into(), json!(v.comment));
        m.insert("state".into(), json!("online"));
        m.insert("style".into(), json!("flexvol"));
        if let Some(ep) = self.nbd.get() {
            m.insert("nbd".into(), ep.volume_json(&v.name));
        }
        m.insert("type".into(), json!(if v.read_only { "dp" } else { "rw" }));
        m.insert(
            "space".into(),
            json!({
                "size": size,
                "used": used,
                "available": allocated.saturating_sub(used),
                "snapshot": {"reserve_percent": v.reserve_percent},
            }),
        );
        let policy = v.policy_uuid.as_ref().and_then(|u| {
            inner
                .policies
                .iter()
                .find(|p| &p.row.uuid == u)
                .map(|p| json!({"name": p.row.name, "uuid": p.row.uuid}))
        });
        m.insert(
            "qos".into(),
            match policy {
                Some(p) => json!({"policy": p}),
                None => json!({}),
            },
        );
        if let Some(l) = &live {
            m.insert("metric".into(), metric_json(l));
            m.insert("statistics".into(), statistics_json(l));
            let lim = l.limits();
            m.insert(
                "limits".into(),
                json!({
                    "max_throughput_iops": lim.ceiling.iops,
                    "max_throughput_bytes_per_sec": lim.ceiling.bytes_per_sec,
                    "min_throughput_iops": lim.floor.iops,
                    "min_throughput_bytes_per_sec": lim.floor.bytes_per_sec,
                }),
            );
            let now = self.node.clock.now();
            if let Some(b) = crate::credits::volume_credits(&self.node, l, now).json() {
                m.insert("burst".into(), b);
            }
        }
        Value::Object(m)
    }

    fn selected_volumes(&self, inner: &Inner, q: &Query) -> R<Vec<Value>> {
        // Only compute the expensive parts when something beyond uuid/name is asked for.
        let cheap = q.fields.is_empty()
            && q.order_by.iter().all(|(k, _)| k == "name" || k == "uuid")
            && q.filters.iter().all(|(k, _)| k == "name" || k == "uuid");
        let all: Vec<Value> = inner
            .volumes
            .iter()
            .map(|v| {
                if cheap {
                    json!({"uuid": v.uuid, "name": v.name})
                } else {
                    self.volume_json(inner, v)
                }
            })
            .collect();
        query::select(all, q, VOLUME_TOP)
    }

    pub fn list_volumes(&self, q: &Query) -> R<Reply> {
        let inner = self.lock();
        let sel = self.selected_volumes(&inner, q)?;
        Ok(Reply::ok(query::page(sel, q, VOLUMES)?))
    }

    pub fn get_volume(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.lock();
        let v = &inner.volumes[volume_index(&inner, uuid)?];
        Ok(Reply::ok(super::single(self.volume_json(&inner, v), q)))
    }

    pub(super) fn resolve_policy(inner: &Inner, r: &PolicyRef) -> R<String> {
        let found = inner.policies.iter().find(|p| {
            !matches!(&r.uuid, Some(u) if u != &p.row.uuid)
                && !matches!(&r.name, Some(n) if n != &p.row.name)
        });
        match found {
            Some(p) => Ok(p.row.uuid.clone()),
            None => Err(ApiError::not_found(
                "qos.policy",
                format!(
                    "no QoS policy {}; GET /api/storage/qos/policies lists them",
                    match (&r.name, &r.uuid) {
                        (Some(n), Some(u)) => format!("named {n:?} with uuid {u}"),
                        (Some(n), None) => format!("named {n:?}"),
                        (None, Some(u)) => format!("with uuid {u}"),
                        (None, None) => String::new(),
                    }
                ),
            )),
        }
    }

    pub(super) fn policy_name_of(inner: &Inner, uuid: &Option<String>) -> Option<String> {
        uuid.as_ref().and_then(|u| {
            inner
                .policies
                .iter()
                .find(|p| &p.row.uuid == u)
                .map(|p| p.row.name.clone())
        })
    }

    pub fn create_volume(&self, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let nv = model::new_volume(&m)?;
        let mut inner = self.lock();
        if inner.volumes.iter().any(|v| v.name == nv.name) {
            return Err(ApiError::conflict(
                code::DUPLICATE,
                "name",
                format!("a volume named {:?} already exists", nv.name),
            ));
        }
        let policy_uuid = match &nv.policy {
            None => None,
            Some(r) => Some(Self::resolve_policy(&inner, r)?),
        };
        // A file of this name belongs to no volume (left by a crash between a delete's
        // commit and its unlink): remove it before committing, so the new volume starts
        // empty even if we crash right after the commit.
        let path = self.node.volume_path(&nv.name);
        if path.exists() {
            std::fs::remove_file(&path)
                .map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))?;
        }
        let svm = nv.svm.clone().unwrap_or_default();
        let row = VolumeRow {
            uuid: new_uuid(),
            name: nv.name.clone(),
            size: nv.size,
            reserve_percent: nv.reserve_percent,
            read_only: false,
            comment: nv.comment.clone(),
            svm_name: svm.name,
            svm_uuid: svm.uuid,
            policy_uuid,
        };
        inner.store.insert_volume(&row).map_err(db_err)?;
        let spec = VolumeSpec {
            name: row.name.clone(),
            size: row.size,
            snapshot_reserve_percent: row.reserve_percent,
            read_only: false,
            description: row.comment.clone(),
            policy: Self::policy_name_of(&inner, &row.policy_uuid),
        };
        if let Err(e) = self.node.add_volume(&spec) {
            let _ = inner.store.delete_volume(&row.uuid);
            return Err(ApiError::internal(format!("creating the volume: {e}")));
        }
        let location = format!("{VOLUMES}/{}", row.uuid);
        let body = self.volume_json(&inner, &row);
        inner.volumes.push(row);
        Ok(Reply {
            status: 201,
            body,
            location: Some(location),
        })
    }

    /// Check a patch against volume `i` and return its new row (nothing changes yet).
    fn checked_volume_patch(&self, inner: &Inner, i: usize, patch: &VolumePatch) -> R<VolumeRow> {
        let mut row = inner.volumes[i].clone();
        let vol = self.live(&row.name)?;
        if let Some(s) = patch.size {
            if s < vol.size() {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    "size",
                    format!(
                        "size = {s} is smaller than volume {:?}'s size {}: shrinking is not \
                         supported (it would discard data)",
                        row.name,
                        vol.size()
                    ),
                ));
            }
            row.size = s;
        }
        if let Some(r) = patch.reserve_percent {
            row.reserve_percent = r;
        }
        if let Some(c) = &patch.comment {
            row.comment = c.clone();
        }
        if let Some(p) = &patch.policy {
            row.policy_uuid = match p {
                None => None,
                Some(r) => Some(Self::resolve_policy(inner, r)?),
            };
        }
        Ok(row)
    }

    /// Commit a checked change to volume `i`, then put it in force for connected clients.
    fn apply_volume_patch(
        &self,
        inner: &mut Inner,
        i: usize,
        row: VolumeRow,
        patch: &VolumePatch,
    ) -> R<()> {
        let vol = self.live(&row.name)?;
        inner.store.update_volume(&row).map_err(db_err)?;
        if row.size != vol.size() {
            self.node
                .resize_volume(&vol, row.size)
                .map_err(|e| ApiError::internal(format!("growing the volume: {e}")))?;
        }
        if patch.reserve_percent.is_some() {
            self.node.set_snapshot_reserve(&vol, row.reserve_percent);
        }
        if patch.policy.is_some() {
            let name = Self::policy_name_of(inner, &row.policy_uuid);
            self.node
                .assign_policy(&vol, name)
                .map_err(|e| ApiError::internal(e.to_string()))?;
        }
        inner.volumes[i] = row;
        Ok(())
    }

    pub fn patch_volume(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let patch = model::patch_volume(&m)?;
        let mut inner = self.lock();
        let i = volume_index(&inner, uuid)?;
        let row = self.checked_volume_patch(&inner, i, &patch)?;
        self.apply_volume_patch(&mut inner, i, row, &patch)?;
        let body = self.volume_json(&inner, &inner.volumes[i]);
        Ok(Reply::ok(body))
    }

    /// `PATCH /api/storage/volumes?name=epic_*`: every matching volume, all checked
    /// before any changes.
    pub fn patch_volumes(&self, q: &Query, body: &[u8]) -> R<Reply> {
        need_query(q, "PATCH")?;
        let m = model::parse_body(body)?;
        let patch = model::patch_volume(&m)?;
        let mut inner = self.lock();
        let uuids = uuids_of(&self.selected_volumes(&inner, q)?);
        let mut rows = Vec::new();
        for u in &uuids {
            let i = volume_index(&inner, u)?;
            rows.push((i, self.checked_volume_patch(&inner, i, &patch)?));
        }
        for (i, row) in rows {
            self.apply_volume_patch(&mut inner, i, row, &patch)?;
        }
        Ok(Reply::ok(bulk_reply(&inner, &uuids)))
    }

    fn remove_volume(&self, inner: &mut Inner, uuid: &str) -> R<()> {
        let i = volume_index(inner, uuid)?;
        let name = inner.volumes[i].name.clone();
        inner.store.delete_volume(uuid).map_err(db_err)?;
        inner.volumes.remove(i);
        self.node.remove_volume(&name);
        let path = self.node.volume_path(&name);
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(volume = %name, "removing {}: {e}", path.display());
            }
        }
        Ok(())
    }

    pub fn delete_volume(&self, uuid: &str) -> R<Reply> {
        let mut inner = self.lock();
        self.remove_volume(&mut inner, uuid)?;
        Ok(Reply::ok(json!({})))
    }

    /// `DELETE /api/storage/volumes?QUERY`.
    pub fn delete_volumes(&self, q: &Query) -> R<Reply> {
        need_query(q, "DELETE")?;
        let mut inner = self.lock();
        let uuids = uuids_of(&self.selected_volumes(&inner, q)?);
        let body = bulk_reply(&inner, &uuids);
        for u in &uuids {
            self.remove_volume(&mut inner, u)?;
        }
        Ok(Reply::ok(body))
    }

    fn live(&self, name: &str) -> R<Arc<Volume>> {
        self.node
            .volume(name)
            .ok_or_else(|| ApiError::internal(format!("volume {name:?} is not in service")))
    }
}

fn bulk_reply(inner: &Inner, uuids: &[String]) -> Value {
    let records: Vec<Value> = uuids
        .iter()
        .filter_map(|u| inner.volumes.iter().find(|v| &v.uuid == u))
        .map(|v| json!({"uuid": v.uuid, "name": v.name}))
        .collect();
    json!({"num_records": records.len(), "records": records})
}

pub(super) fn volume_index(inner: &Inner, uuid: &str) -> R<usize> {
    inner
        .volumes
        .iter()
        .position(|v| v.uuid == uuid)
        .ok_or_else(|| ApiError::not_found("uuid", format!("no volume with uuid {uuid:?}")))
}

/// Rates over the last second. ONTAP's `metric` also carries `duration`, whose values
/// (PT15S, PT4M, ...) name windows of 15 s and longer; qoslab's window is 1 s, which has
/// no name in that set, so `duration` is omitted rather than misstated (docs/API.md).
fn metric_json(v: &Volume) -> Value {
    let r = v.stats.rates();
    let round = |x: f64| x.round() as u64;
    json!({
        "status": "ok",
        "iops": {
            "read": round(r.iops[0]),
            "write": round(r.iops[1]),
            "other": round(r.iops[2]),
            "total": round(r.total_iops()),
        },
        "throughput": {
            "read": round(r.throughput[0]),
            "write": round(r.throughput[1]),
            "other": 0,
            "total": round(r.throughput[0] + r.throughput[1]),
        },
        "latency": {
            "read": round(r.latency_us[0]),
            "write": round(r.latency_us[1]),
            "other": round(r.latency_us[2]),
            "total": round(r.latency_us[3]),
        },
        "qos_latency": {
            "ceiling": round(r.qos_latency_us[0]),
            "floor": round(r.qos_latency_us[1]),
        },
    })
}

/// ONTAP's raw cumulative counters (`statistics`): operations, bytes and latency sums in
/// microseconds since the node started, with the time they were read. Two readings give
/// rates over any interval.
fn statistics_json(v: &Volume) -> Value {
    let s = &v.stats;
    let ops = [OpKind::Read, OpKind::Write, OpKind::Other].map(|k| s.ops(k));
    let lat_us = [0, 1, 2].map(|i| s.latency[i].sum_ns() / 1000);
    let read = s.read_bytes.load(std::sync::atomic::Ordering::Relaxed);
    let write = s.write_bytes.load(std::sync::atomic::Ordering::Relaxed);
    json!({
        "timestamp": super::rfc3339_now(),
        "status": "ok",
        "iops_raw": {
            "read": ops[0], "write": ops[1], "other": ops[2],
            "total": ops.iter().sum::<u64>(),
        },
        "latency_raw": {
            "read": lat_us[0], "write": lat_us[1], "other": lat_us[2],
            "total": lat_us.iter().sum::<u64>(),
        },
        "throughput_raw": {
            "read": read, "write": write, "other": 0, "total": read + write,
        },
    })
}
