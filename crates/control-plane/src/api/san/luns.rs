//! `/api/storage/luns`: LUNs, each a block file of its own in a volume, served by the
//! node as block volume `VOLUME:LUN` under its own policy or its volume's.

use serde_json::{json, Value};

use super::super::model::san::{self as m, LunPatch};
use super::super::model::{self, code, ApiError};
use super::super::query::Query;
use super::super::{
    db_unchanged, file_error, listing, policies, single, svm_json, volume_files, Inner, Reply, R,
};
use super::{lun_node_name, lun_path, lun_spec, named, not_found, volume_of, San, LUNS};
use crate::state::{new_uuid, LunRow};

const LUN_TOP: &[&str] = &[
    "uuid",
    "name",
    "location",
    "os_type",
    "space",
    "qos_policy",
    "serial_number",
    "status",
    "svm",
    "comment",
    "lun_maps",
    "enabled",
    "class",
    "metric",
    "statistics",
];

/// The serial number characters (ONTAP's: 12 printable characters).
const SERIAL_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A new serial number: 12 characters from the OS's random source (via a v4 uuid).
fn new_serial() -> String {
    let u = uuid::Uuid::new_v4();
    u.as_bytes()[..12]
        .iter()
        .map(|b| SERIAL_CHARS[*b as usize % SERIAL_CHARS.len()] as char)
        .collect()
}

pub(super) fn lun_index(inner: &Inner, uuid: &str) -> R<usize> {
    inner
        .san
        .luns
        .iter()
        .position(|l| l.uuid == uuid)
        .ok_or_else(|| not_found("uuid", "LUN", format!("with uuid {uuid:?}"), LUNS))
}

impl San<'_> {
    fn lun_json(&self, inner: &Inner, l: &LunRow) -> Value {
        let vol = volume_of(inner, l);
        let live = self.cp.node.volume(&lun_node_name(inner, l));
        let used = live.as_ref().map_or(0, |v| v.space().used);
        let size = live.as_ref().map_or(l.size, |v| v.size());
        let maps: Vec<Value> = inner
            .san
            .maps
            .iter()
            .filter(|m| m.lun_uuid == l.uuid)
            .filter_map(|m| {
                let g = inner.san.igroups.iter().find(|g| g.uuid == m.igroup_uuid)?;
                Some(json!({
                    "logical_unit_number": m.number,
                    "igroup": named(&g.name, &g.uuid),
                }))
            })
            .collect();
        let state = match inner.san.offline.get(&l.uuid) {
            None => json!({"state": "online", "mapped": !maps.is_empty(), "read_only": false}),
            Some(why) => json!({
                "state": "offline", "mapped": !maps.is_empty(), "read_only": false,
                "offline_reason": why,
            }),
        };
        let own = l.policy_uuid.is_some();
        let policy_uuid = l
            .policy_uuid
            .clone()
            .or_else(|| vol.and_then(|v| v.policy_uuid.clone()));
        let qos = match policies::name_of(inner, &policy_uuid) {
            Some(n) => json!({
                "name": n,
                "uuid": policy_uuid,
                "inherited_from_volume": !own,
            }),
            None => json!({}),
        };
        let stats = live.as_ref().map(|v| {
            (
                super::super::workload_stats::metric_json(v),
                super::super::workload_stats::statistics_json(v),
            )
        });
        let (svm_name, svm_uuid) =
            vol.map_or((None, None), |v| (v.svm_name.clone(), v.svm_uuid.clone()));
        let mut j = json!({
            "uuid": l.uuid,
            "name": lun_path(inner, l),
            "location": {
                "logical_unit": l.name,
                "volume": vol.map(|v| named(&v.name, &v.uuid)),
            },
            "os_type": l.os_type,
            "class": "regular",
            "enabled": true,
            "serial_number": l.serial,
            "comment": l.comment,
            "space": {
                "size": size,
                "used": used,
                "guarantee": {"requested": false, "reserved": false},
            },
            "qos_policy": qos,
            "status": state,
            "lun_maps": maps,
            "svm": svm_json(inner, &svm_name, &svm_uuid),
        });
        if let Some((metric, statistics)) = stats {
            j["metric"] = metric;
            j["statistics"] = statistics;
        }
        j
    }

    pub fn list_luns(&self, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let all = inner
            .san
            .luns
            .iter()
            .map(|l| self.lun_json(&inner, l))
            .collect();
        listing(all, q, LUN_TOP, LUNS)
    }

    pub fn get_lun(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let i = lun_index(&inner, uuid)?;
        let body = self.lun_json(&inner, &inner.san.luns[i]);
        single(body, q)
    }

    pub fn create_lun(&self, body: &[u8]) -> R<Reply> {
        let nl = m::new_lun(&model::parse_body(body)?)?;
        let mut inner = self.cp.lock();
        let path = nl.path.text();
        let vol = inner
            .volumes
            .iter()
            .find(|v| v.name == nl.path.volume)
            .cloned()
            .ok_or_else(|| {
                ApiError::not_found(
                    "name",
                    format!(
                        "name = {path:?}: no volume named {:?}; GET /api/storage/volumes lists them",
                        nl.path.volume
                    ),
                )
            })?;
        if let Some(s) = &nl.svm {
            super::same_svm(
                &inner,
                s,
                &vol.svm_name,
                &vol.svm_uuid,
                &format!("volume {:?} (and so its LUNs)", vol.name),
            )?;
        }
        if inner
            .san
            .luns
            .iter()
            .any(|l| l.volume_uuid == vol.uuid && l.name == nl.path.lun)
        {
            return Err(ApiError::conflict(
                code::DUPLICATE,
                "name",
                format!("a LUN {path:?} already exists"),
            ));
        }
        if inner.offline.contains_key(&vol.uuid) {
            return Err(ApiError::conflict(
                code::OFFLINE,
                "name",
                format!("volume {:?} is offline: bring it online first", vol.name),
            ));
        }
        let policy_uuid = match &nl.policy {
            None => None,
            Some(r) => Some(policies::resolve(&inner, r).map_err(|mut e| {
                e.target = "qos_policy".into();
                e
            })?),
        };
        volume_files::check_file_size(&self.cp.fs, "space.size", "LUN", nl.size)?;
        let row = LunRow {
            uuid: new_uuid(),
            name: nl.path.lun.clone(),
            volume_uuid: vol.uuid.clone(),
            size: nl.size,
            os_type: nl.os_type,
            serial: new_serial(),
            policy_uuid,
            comment: nl.comment,
            svm_name: vol.svm_name.clone(),
            svm_uuid: vol.svm_uuid.clone(),
        };
        let spec = lun_spec(&inner, &row);
        let file = self.cp.node.volume_path(&spec.name);
        // A file of this name belongs to no LUN (a crash between a create's file and its
        // commit, or a delete's commit and its unlink): the new LUN starts empty.
        if file.exists() {
            std::fs::remove_file(&file)
                .map_err(|e| file_error("removing a stale LUN file", &file, e))?;
        }
        volume_files::create_file(&file, row.size)
            .map_err(|e| file_error("creating the LUN's file", &file, e))?;
        if let Err(e) = inner.store.insert_lun(&row) {
            let _ = std::fs::remove_file(&file);
            return Err(db_unchanged(e));
        }
        if let Err(e) = self.cp.node.add_volume(&spec) {
            // Undo both; if the row cannot be removed the LUN stays, offline.
            return Err(match inner.store.delete_lun(&row.uuid) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&file);
                    ApiError::internal(volume_files::unchanged("serving the LUN", e))
                }
                Err(db) => {
                    let why = format!("serving it failed ({e}) and undoing failed ({db})");
                    inner.san.offline.insert(row.uuid.clone(), why.clone());
                    inner.san.luns.push(row);
                    ApiError::internal(format!("LUN {path} was created but is offline: {why}"))
                }
            });
        }
        let body = self.lun_json(&inner, &row);
        let location = format!("{LUNS}/{}", row.uuid);
        inner.san.luns.push(row);
        Ok(Reply::created(body, location))
    }

    /// Grow `space.size`, set or clear `qos_policy`, change `comment`.
    pub fn patch_lun(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let p: LunPatch = m::patch_lun(&model::parse_body(body)?)?;
        let mut inner = self.cp.lock();
        let i = lun_index(&inner, uuid)?;
        let mut row = inner.san.luns[i].clone();
        let path = lun_path(&inner, &row);
        let vol = self.cp.node.volume(&lun_node_name(&inner, &row));
        if let Some(s) = p.size {
            let current = vol.as_ref().map_or(row.size, |v| v.size());
            if s < current {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    "space.size",
                    format!(
                        "space.size = {s} is smaller than LUN {path}'s size {current}: \
                         shrinking a LUN is not supported (it would discard data)"
                    ),
                ));
            }
            volume_files::check_file_size(&self.cp.fs, "space.size", "LUN", s)?;
            row.size = s;
        }
        if let Some(pol) = &p.policy {
            row.policy_uuid = match pol {
                None => None,
                Some(r) => Some(policies::resolve(&inner, r).map_err(|mut e| {
                    e.target = "qos_policy".into();
                    e
                })?),
            };
        }
        if let Some(c) = &p.comment {
            row.comment = c.clone();
        }
        let old_size = inner.san.luns[i].size;
        let file = self.cp.node.volume_path(&lun_node_name(&inner, &row));
        if let (Some(v), true) = (&vol, row.size != old_size) {
            v.backend
                .grow(row.size)
                .map_err(|e| file_error("growing the LUN's file", &file, e))?;
        }
        if let Err(e) = inner.store.update_lun(&row) {
            if vol.is_some() && row.size != old_size {
                if let Err(u) = volume_files::set_len(&file, old_size) {
                    tracing::error!("undoing the grow of {}: {u}", file.display());
                }
            }
            return Err(db_unchanged(e));
        }
        inner.san.luns[i] = row.clone();
        if let Some(v) = &vol {
            if row.size != v.size() {
                if let Err(e) = self.cp.node.resize_volume(v, row.size) {
                    tracing::error!(lun = %path, "resizing after the commit: {e}");
                }
            }
            if p.policy.is_some() {
                let name = lun_spec(&inner, &row).policy;
                if let Err(e) = self.cp.node.assign_policy(v, name) {
                    tracing::error!(lun = %path, "assigning its policy: {e}");
                }
            }
        }
        let body = self.lun_json(&inner, &inner.san.luns[i]);
        Ok(Reply::ok(body))
    }

    /// Delete an unmapped LUN: its row, then its node volume, then its file.
    pub fn delete_lun(&self, uuid: &str) -> R<Reply> {
        let mut inner = self.cp.lock();
        let i = lun_index(&inner, uuid)?;
        let row = inner.san.luns[i].clone();
        let path = lun_path(&inner, &row);
        let igroups: Vec<String> = inner
            .san
            .maps
            .iter()
            .filter(|m| m.lun_uuid == row.uuid)
            .filter_map(|m| inner.san.igroups.iter().find(|g| g.uuid == m.igroup_uuid))
            .map(|g| format!("{:?}", g.name))
            .collect();
        super::super::policies::refuse_in_use("uuid", &igroups, |list| {
            format!(
                "LUN {path} is mapped to igroup(s) {list}: unmap it first (DELETE \
                 /api/protocols/san/lun-maps/{}/IGROUP_UUID, or `lun unmap`)",
                row.uuid
            )
        })?;
        inner
            .store
            .delete_lun(&row.uuid)
            .map_err(super::super::db_err)?;
        let name = lun_node_name(&inner, &row);
        inner.san.luns.remove(i);
        inner.san.offline.remove(&row.uuid);
        self.cp.node.remove_volume(&name);
        let file = self.cp.node.volume_path(&name);
        if let Err(e) = std::fs::remove_file(&file) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(
                    "removing {} (a new LUN at this path removes it): {e}",
                    file.display()
                );
            }
        }
        Ok(Reply::ok(json!({})))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn serial_numbers_are_12_alphanumerics_and_differ() {
        let a = super::new_serial();
        assert_eq!(a.len(), 12);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, super::new_serial());
    }
}
