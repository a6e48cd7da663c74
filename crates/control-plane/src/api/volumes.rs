//! `/api/storage/volumes`: volumes, one at a time or by query (ONTAP's PATCH/DELETE on a
//! collection), with their live `metric` rates and raw `statistics` counters.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::model::{self, code, ApiError, VolumePatch};
use super::nas::{Nas, Storage};
use super::policies::{self, need_query, uuids_of};
use super::query::{self, Query};
use super::volume_files::{self, unchanged};
use super::{db_unchanged, file_error, svm_json, ControlPlane, Inner, Reply, R};
use crate::config::VolumeSpec;
use crate::state::{new_uuid, VolumeRow};

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
    "offline_reason",
    "nas",
    "nfs",
];

/// The volumes (`/api/storage/volumes`): one resource of the control plane
/// ([`ControlPlane::volumes`]).
pub struct Volumes<'a> {
    cp: &'a ControlPlane,
}

impl ControlPlane {
    /// The volumes.
    pub fn volumes(&self) -> Volumes<'_> {
        Volumes { cp: self }
    }
}

impl Volumes<'_> {
    fn json(&self, inner: &Inner, v: &VolumeRow) -> Value {
        let mut m = Map::new();
        m.insert("uuid".into(), json!(v.uuid));
        m.insert("name".into(), json!(v.name));
        m.insert("svm".into(), svm_json(inner, &v.svm_name, &v.svm_uuid));
        let live = self.cp.node.volume(&v.name);
        let space = live.as_ref().map(|l| l.space());
        let size = space.map(|s| s.size).unwrap_or(v.size);
        let used = space.map(|s| s.used).unwrap_or(0);
        let allocated = space.map(|s| s.allocated()).unwrap_or(v.size);
        m.insert("size".into(), json!(size));
        m.insert("comment".into(), json!(v.comment));
        match inner.offline.get(&v.uuid) {
            None => m.insert("state".into(), json!("online")),
            Some(why) => {
                m.insert("offline_reason".into(), json!(why));
                m.insert("state".into(), json!("offline"))
            }
        };
        m.insert("style".into(), json!("flexvol"));
        match self.cp.nas().volume_nas_json(inner, v) {
            Some(nas) => {
                m.insert("nas".into(), nas);
                if let Some(nfs) = self.cp.nas().volume_nfs_json(v) {
                    m.insert("nfs".into(), nfs);
                }
            }
            None => {
                if let Some(ep) = self.cp.nbd.get() {
                    m.insert("nbd".into(), ep.volume_json(&v.name));
                }
            }
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
        m.insert(
            "qos".into(),
            match policies::name_of(inner, &v.policy_uuid) {
                Some(n) => json!({"policy": {"name": n, "uuid": v.policy_uuid}}),
                None => json!({}),
            },
        );
        if let Some(l) = &live {
            m.insert("metric".into(), super::workload_stats::metric_json(l));
            m.insert(
                "statistics".into(),
                super::workload_stats::statistics_json(l),
            );
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
            let now = self.cp.node.clock.now();
            if let Some(b) = crate::credits::volume_credits(&self.cp.node, l, now).json() {
                m.insert("burst".into(), b);
            }
        }
        Value::Object(m)
    }

    fn selected(&self, inner: &Inner, q: &Query) -> R<Vec<Value>> {
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
                    self.json(inner, v)
                }
            })
            .collect();
        query::select(all, q, VOLUME_TOP)
    }

    pub fn list(&self, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let sel = self.selected(&inner, q)?;
        Ok(Reply::ok(query::page(sel, q, VOLUMES)?))
    }

    pub fn get(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let v = &inner.volumes[volume_index(&inner, uuid)?];
        super::single(self.json(&inner, v), q)
    }

    pub fn create(&self, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let nv = model::new_volume(&m)?;
        let mut inner = self.cp.lock();
        let taken = inner.volumes.iter().any(|v| v.name == nv.name);
        policies::refuse_taken(taken, "a volume", &nv.name)?;
        let policy_uuid = match &nv.policy {
            None => None,
            Some(r) => Some(policies::resolve(&inner, r)?),
        };
        let export_policy = match &nv.nas {
            None => {
                volume_files::check_file_size(&self.cp.fs, "size", "volume", nv.size)?;
                None
            }
            Some(nas) => {
                if let Some(o) = inner
                    .volumes
                    .iter()
                    .find(|v| v.nas_path.as_deref() == Some(nas.path.as_str()))
                {
                    return Err(ApiError::conflict(
                        code::DUPLICATE,
                        "nas.path",
                        format!("junction path {:?} is volume {:?}'s", nas.path, o.name),
                    ));
                }
                Some(match &nas.export_policy {
                    Some(r) => Nas::resolve_policy(&inner, r)?,
                    None => crate::nas::DEFAULT_EXPORT_POLICY.to_string(),
                })
            }
        };
        let svm = nv.svm.clone().unwrap_or_default();
        super::svms::check_svm(&inner, &svm.name, &svm.uuid)?;
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
            nas_path: nv.nas.as_ref().map(|n| n.path.clone()),
            export_policy,
        };
        // A NAS volume's export id is assigned first (never reused, even if what follows
        // fails).
        let spec = self.spec_of(&inner, &row).map_err(ApiError::internal)?;
        // A file (or tree) of this name belongs to no volume (left by a crash between a
        // create's file and its commit): remove it, so the new volume starts empty.
        let storage = Storage::of(&self.cp.node, &row);
        let path = storage.path().to_path_buf();
        storage
            .remove_stale()
            .map_err(|e| ApiError::internal(unchanged(&path.display().to_string(), e)))?;
        // The file first, then the row; a failed commit removes the file.
        let mode = nv.nas.as_ref().and_then(|n| n.unix_permissions);
        storage
            .create(row.size, mode)
            .map_err(|e| file_error("creating the volume's storage", &path, e))?;
        if let Err(e) = inner.store.insert_volume(&row) {
            storage.discard();
            return Err(db_unchanged(e));
        }
        if let Err(e) = self.cp.node.add_volume(&spec) {
            // Undo both; if the row cannot be removed the volume stays, offline.
            return Err(match inner.store.delete_volume(&row.uuid) {
                Ok(()) => {
                    storage.discard();
                    ApiError::internal(unchanged("serving the volume", e))
                }
                Err(db) => {
                    let why = format!("serving it failed ({e}) and undoing failed ({db})");
                    inner.offline.insert(row.uuid.clone(), why.clone());
                    inner.volumes.push(row);
                    ApiError::internal(format!("the volume was created but is offline: {why}"))
                }
            });
        }
        let location = format!("{VOLUMES}/{}", row.uuid);
        let body = self.json(&inner, &row);
        inner.volumes.push(row);
        Ok(Reply::created(body, location))
    }

    /// What the node serves for `row` (a NAS volume's export id read, or assigned now).
    fn spec_of(&self, inner: &Inner, row: &VolumeRow) -> Result<VolumeSpec, String> {
        let export_id = match &row.nas_path {
            Some(p) => Some(
                inner
                    .store
                    .export_id(&row.uuid, p)
                    .map_err(|e| format!("its NFS export id: {e}"))?,
            ),
            None => None,
        };
        Ok(VolumeSpec {
            name: row.name.clone(),
            size: row.size,
            snapshot_reserve_percent: row.reserve_percent,
            read_only: row.read_only,
            description: row.comment.clone(),
            policy: policies::name_of(inner, &row.policy_uuid),
            nas: row.nas_path.as_ref().map(|p| crate::nas::NasSpec {
                path: p.clone(),
                export_policy: super::nas::export_policy_of(row),
                export_id,
            }),
        })
    }

    /// Check a patch against volume `i` and return its new row (nothing changes yet).
    fn checked_patch(&self, inner: &Inner, i: usize, patch: &VolumePatch) -> R<VolumeRow> {
        let mut row = inner.volumes[i].clone();
        if let Some(s) = patch.size {
            // An offline volume may be set to any size its file's data fits in.
            let (current, what) = match self.cp.node.volume(&row.name) {
                Some(vol) => (vol.size(), "size"),
                None => (
                    std::fs::metadata(self.cp.node.volume_path(&row.name)).map_or(0, |m| m.len()),
                    "file's length",
                ),
            };
            if s < current {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    "size",
                    format!(
                        "size = {s} is smaller than volume {:?}'s {what} {current}: shrinking \
                         is not supported (it would discard data)",
                        row.name,
                    ),
                ));
            }
            // A NAS volume is a tree, not one file: its size is a quota, limited as at
            // creation (1 PiB), never by the file system's largest file.
            if row.nas_path.is_none() {
                volume_files::check_file_size(&self.cp.fs, "size", "volume", s)?;
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
                Some(r) => Some(policies::resolve(inner, r)?),
            };
        }
        if let Some(r) = &patch.export_policy {
            if row.nas_path.is_none() {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    "nas.export_policy",
                    format!(
                        "volume {:?} is a block volume: export policies apply to NAS volumes",
                        row.name
                    ),
                ));
            }
            row.export_policy = Some(Nas::resolve_policy(inner, r)?);
        }
        Ok(row)
    }

    /// Apply checked changes, all or nothing: grow the files of online volumes, commit
    /// every row in one transaction (undoing the grows if it fails), then put the
    /// changes in force; offline volumes that were given a size or `state: online` are
    /// then brought back ([`Self::bring_online`]).
    fn apply_patches(
        &self,
        inner: &mut Inner,
        changes: Vec<(usize, VolumeRow)>,
        patch: &VolumePatch,
    ) -> R<()> {
        let mut grown: Vec<(PathBuf, u64)> = Vec::new();
        let undo = |grown: &[(PathBuf, u64)]| {
            for (path, old) in grown.iter().rev() {
                if let Err(e) = volume_files::set_len(path, *old) {
                    tracing::error!("undoing the grow of {}: {e}", path.display());
                }
            }
        };
        for (_, row) in &changes {
            let Some(vol) = self.cp.node.volume(&row.name) else {
                continue;
            };
            if row.size != vol.size() && !vol.is_nas() {
                let path = self.cp.node.volume_path(&row.name);
                if let Err(e) = vol.backend.grow(row.size) {
                    undo(&grown);
                    return Err(file_error("growing the volume's file", &path, e));
                }
                grown.push((path, vol.size()));
            }
        }
        let rows: Vec<VolumeRow> = changes.iter().map(|(_, r)| r.clone()).collect();
        if let Err(e) = inner.store.update_volumes(&rows) {
            undo(&grown);
            return Err(db_unchanged(e));
        }
        let mut revive = Vec::new();
        for (i, row) in changes {
            let old_size = inner.volumes[i].size;
            inner.volumes[i] = row;
            let row = &inner.volumes[i];
            let Some(vol) = self.cp.node.volume(&row.name) else {
                if patch.online || patch.size.is_some() {
                    revive.push((i, old_size));
                }
                continue;
            };
            if row.size != vol.size() {
                // The file already has its size: this only moves the clients' bound.
                if let Err(e) = self.cp.node.resize_volume(&vol, row.size) {
                    tracing::error!(volume = %row.name, "resizing after the commit: {e}");
                }
            }
            if patch.reserve_percent.is_some() {
                self.cp.node.set_snapshot_reserve(&vol, row.reserve_percent);
            }
            if patch.policy.is_some() {
                let name = policies::name_of(inner, &row.policy_uuid);
                if let Err(e) = self.cp.node.assign_policy(&vol, name) {
                    tracing::error!(volume = %row.name, "assigning its policy: {e}");
                }
                super::san::follow_volume_policy(&self.cp.node, inner, row);
            }
            if patch.export_policy.is_some() {
                let name = super::nas::export_policy_of(row);
                if let Err(e) = self.cp.node.assign_export_policy(&vol, &name) {
                    tracing::error!(volume = %row.name, "assigning its export policy: {e}");
                }
            }
        }
        let mut failed = Vec::new();
        for (i, _) in revive {
            if let Err(e) = self.bring_online(inner, i) {
                failed.push(format!("{}: {}", inner.volumes[i].name, e));
            }
        }
        if !failed.is_empty() {
            return Err(ApiError::conflict(
                code::OFFLINE,
                "state",
                format!(
                    "the change was committed, but these volumes stay offline: {}",
                    failed.join("; ")
                ),
            ));
        }
        Ok(())
    }

    /// Bring offline volume `i` back into service at its (committed) row: repair its
    /// file as at start, size it, serve it. On failure it stays offline with the reason.
    fn bring_online(&self, inner: &mut Inner, i: usize) -> Result<(), String> {
        let row = inner.volumes[i].clone();
        let checked = if row.nas_path.is_some() {
            super::nas::reconcile_tree(&self.cp.node, &row.uuid, &row.name)
        } else {
            volume_files::reconcile(
                &self.cp.node,
                &row.uuid,
                &row.name,
                row.size,
                self.cp.fs.max_file_size,
            )
        };
        let r = checked
            .and_then(|()| self.spec_of(inner, &row))
            .and_then(|spec| {
                self.cp
                    .node
                    .add_volume(&spec)
                    .map(|_| ())
                    .map_err(|e| format!("opening its file: {e}"))
            });
        match &r {
            Ok(()) => {
                inner.offline.remove(&row.uuid);
                tracing::info!(volume = %row.name, "volume is back online");
            }
            Err(why) => {
                inner.offline.insert(row.uuid.clone(), why.clone());
            }
        }
        r
    }

    pub fn patch(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let patch = model::patch_volume(&m)?;
        let mut inner = self.cp.lock();
        let i = volume_index(&inner, uuid)?;
        let row = self.checked_patch(&inner, i, &patch)?;
        self.apply_patches(&mut inner, vec![(i, row)], &patch)?;
        let body = self.json(&inner, &inner.volumes[i]);
        Ok(Reply::ok(body))
    }

    /// `PATCH /api/storage/volumes?name=epic_*`: every matching volume, all checked
    /// before any changes, committed together.
    pub fn patch_where(&self, q: &Query, body: &[u8]) -> R<Reply> {
        need_query(q, "PATCH")?;
        let m = model::parse_body(body)?;
        let patch = model::patch_volume(&m)?;
        let mut inner = self.cp.lock();
        let uuids = uuids_of(&self.selected(&inner, q)?);
        let mut rows = Vec::new();
        for u in &uuids {
            let i = volume_index(&inner, u)?;
            rows.push((i, self.checked_patch(&inner, i, &patch)?));
        }
        if !rows.is_empty() {
            self.apply_patches(&mut inner, rows, &patch)?;
        }
        Ok(Reply::ok(volumes_reply(&inner, &uuids)))
    }

    /// Delete volumes, all or nothing: their files are renamed to tombstones, the rows
    /// deleted in one transaction (the renames undone if that fails), then the volumes
    /// leave service and the tombstones are removed.
    fn remove(&self, inner: &mut Inner, uuids: &[String]) -> R<()> {
        let luns = super::san::luns_in(inner, uuids);
        policies::refuse_in_use("uuid", &luns, |list| {
            format!(
                "the volume holds LUN(s) {list}: delete them first (DELETE \
                 /api/storage/luns/UUID, or `lun delete`)"
            )
        })?;
        let mut moved: Vec<(PathBuf, PathBuf)> = Vec::new();
        let undo = |moved: &[(PathBuf, PathBuf)]| {
            for (path, stone) in moved.iter().rev() {
                if let Err(e) = std::fs::rename(stone, path) {
                    tracing::error!("undoing the delete of {}: {e}", path.display());
                }
            }
        };
        for u in uuids {
            let i = volume_index(inner, u)?;
            let storage = Storage::of(&self.cp.node, &inner.volumes[i]);
            let path = storage.path().to_path_buf();
            let stone = storage.tombstone(u);
            match std::fs::rename(&path, &stone) {
                Ok(()) => moved.push((path, stone)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    undo(&moved);
                    return Err(file_error("moving the volume's file aside", &path, e));
                }
            }
        }
        for (path, _) in &moved {
            if let Err(e) = volume_files::sync_dir(path) {
                undo(&moved);
                return Err(file_error("syncing the volumes directory", path, e));
            }
        }
        if let Err(e) = inner.store.delete_volumes(uuids) {
            undo(&moved);
            return Err(db_unchanged(e));
        }
        for u in uuids {
            let i = volume_index(inner, u)?;
            let row = inner.volumes.remove(i);
            inner.offline.remove(u);
            self.cp.node.remove_volume(&row.name);
        }
        for (_, stone) in moved {
            if let Err(e) = Storage::remove_tombstone(&stone) {
                tracing::warn!("removing {} (done at the next start): {e}", stone.display());
            }
        }
        Ok(())
    }

    pub fn delete(&self, uuid: &str) -> R<Reply> {
        let mut inner = self.cp.lock();
        volume_index(&inner, uuid)?;
        self.remove(&mut inner, &[uuid.to_string()])?;
        Ok(Reply::ok(json!({})))
    }

    /// `DELETE /api/storage/volumes?QUERY`.
    pub fn delete_where(&self, q: &Query) -> R<Reply> {
        need_query(q, "DELETE")?;
        let mut inner = self.cp.lock();
        let uuids = uuids_of(&self.selected(&inner, q)?);
        let body = volumes_reply(&inner, &uuids);
        if !uuids.is_empty() {
            self.remove(&mut inner, &uuids)?;
        }
        Ok(Reply::ok(body))
    }
}

/// [`bulk_reply`](policies::bulk_reply) on the volumes.
fn volumes_reply(inner: &Inner, uuids: &[String]) -> Value {
    policies::bulk_reply(&inner.volumes, |v| (&v.uuid, &v.name), uuids)
}

pub(super) fn volume_index(inner: &Inner, uuid: &str) -> R<usize> {
    inner
        .volumes
        .iter()
        .position(|v| v.uuid == uuid)
        .ok_or_else(|| ApiError::not_found("uuid", format!("no volume with uuid {uuid:?}")))
}
