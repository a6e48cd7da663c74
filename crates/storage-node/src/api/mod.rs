//! The control plane: ONTAP-shaped REST resources over the node and its durable state.
//!
//! [`ControlPlane`] owns the state database and the catalog (uuids, svm, stored specs) and
//! applies every change in the same order: validate ([`model`]), commit to SQLite
//! ([`crate::state`]), then change the live node. A 2xx reply therefore means "on disk and
//! in force". [`http`] is the HTTP front end and the one place errors become statuses.

mod cluster;
pub mod http;
pub mod model;
pub mod s3;

use std::path::Path;
use std::sync::{Arc, Mutex};

use qos_core::{default_adaptive_groups, Policy};
use serde_json::{json, Map, Value};

use crate::config::{NodeConfig, PolicySpec, VolumeSpec};
use crate::node::Node;
use crate::server::ServerStats;
use crate::state::{new_uuid, PolicyRow, Store, VolumeRow};
use crate::volume::Volume;
use model::{code, ApiError, PolicyRef};

type R<T> = Result<T, ApiError>;

struct PolicyRec {
    row: PolicyRow,
    policy: Policy,
}

struct Inner {
    store: Store,
    policies: Vec<PolicyRec>,
    volumes: Vec<VolumeRow>,
}

/// The node's control plane (REST resources, durable state, metrics).
pub struct ControlPlane {
    pub node: Arc<Node>,
    pub server_stats: Arc<ServerStats>,
    inner: Mutex<Inner>,
    /// Where NBD clients reach this node (set once the listeners are bound).
    nbd: std::sync::OnceLock<NbdEndpoints>,
    /// S3 users and buckets (api/s3.rs).
    s3: s3::S3State,
}

/// The node's NBD listening addresses, reported in each volume's `nbd` block so that
/// tools (e.g. `qoslab bench --node`) can find a volume from the API alone.
#[derive(Debug, Clone, Default)]
pub struct NbdEndpoints {
    pub tcp: Option<std::net::SocketAddr>,
    pub unix: Option<std::path::PathBuf>,
}

/// A successful reply: status, JSON body, and the Location of a created resource.
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub location: Option<String>,
}

impl Reply {
    fn ok(body: Value) -> Reply {
        Reply {
            status: 200,
            body,
            location: None,
        }
    }
}

/// Parsed query parameters of a GET.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pub fields: Vec<String>,
    /// Field-path filters (`name=vol*`, `qos.policy.name=gold`).
    pub filters: Vec<(String, String)>,
}

fn db_err(e: rusqlite::Error) -> ApiError {
    ApiError::internal(format!("state database: {e}"))
}

impl ControlPlane {
    /// Open `DATA_DIR/state.db` (seeding a new one from `cfg`), then open the node on the
    /// stored policies and volumes. Afterwards the database is the source of truth.
    pub fn open(
        cfg: &NodeConfig,
        data_dir: &Path,
        server_stats: Arc<ServerStats>,
    ) -> Result<Arc<ControlPlane>, String> {
        std::fs::create_dir_all(data_dir)
            .map_err(|e| format!("data directory {}: {e}", data_dir.display()))?;
        let db = data_dir.join("state.db");
        let (mut store, seeded) = Store::open(&db).map_err(|e| format!("{}: {e}", db.display()))?;
        if !seeded {
            let (p, v) = seed_rows(cfg);
            store
                .seed(&p, &v)
                .map_err(|e| format!("{}: seeding: {e}", db.display()))?;
            tracing::info!(
                policies = cfg.policies.len(),
                volumes = cfg.volumes.len(),
                "new state database seeded from the configuration"
            );
        }
        apply_changed_declarations(&mut store, cfg)
            .map_err(|e| format!("{}: applying the configuration: {e}", db.display()))?;
        let rows = store.policies().map_err(|e| e.to_string())?;
        let volumes = store.volumes().map_err(|e| e.to_string())?;
        let mut policies = Vec::new();
        for row in rows {
            let policy = model::stored_policy(&row.spec).map_err(|e| {
                format!(
                    "{}: policy {:?}: stored definition is invalid: {}",
                    db.display(),
                    row.name,
                    e.message
                )
            })?;
            policies.push(PolicyRec { row, policy });
        }
        let mut node_cfg = cfg.clone();
        node_cfg.policies = policies
            .iter()
            .filter(|p| !p.row.builtin)
            .map(|p| PolicySpec {
                name: p.row.name.clone(),
                policy: p.policy,
            })
            .collect();
        let policy_name = |uuid: &Option<String>| {
            uuid.as_ref().and_then(|u| {
                policies
                    .iter()
                    .find(|p| &p.row.uuid == u)
                    .map(|p| p.row.name.clone())
            })
        };
        node_cfg.volumes = volumes
            .iter()
            .map(|v| VolumeSpec {
                name: v.name.clone(),
                size: v.size,
                snapshot_reserve_percent: v.reserve_percent,
                read_only: v.read_only,
                description: v.comment.clone(),
                policy: policy_name(&v.policy_uuid),
            })
            .collect();
        if let Some(d) = &node_cfg.default_export {
            if !volumes.iter().any(|v| &v.name == d) {
                tracing::warn!(volume = %d, "default_export names no volume in the state database; ignored");
                node_cfg.default_export = None;
            }
        }
        let node = Node::open(&node_cfg, data_dir).map_err(|e| e.to_string())?;
        let s3 = s3::S3State::load(&store, &node, &policies, None)
            .map_err(|e| format!("{}: S3 buckets: {e}", db.display()))?;
        Ok(Arc::new(ControlPlane {
            node,
            server_stats,
            inner: Mutex::new(Inner {
                store,
                policies,
                volumes,
            }),
            nbd: std::sync::OnceLock::new(),
            s3,
        }))
    }

    /// Record where NBD clients reach the node (once, after the listeners are bound).
    pub fn set_nbd_endpoints(&self, endpoints: NbdEndpoints) {
        let _ = self.nbd.set(endpoints);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    // ---- policies ----

    fn policy_json(&self, inner: &Inner, p: &PolicyRec) -> Value {
        let mut m = Map::new();
        m.insert("uuid".into(), json!(p.row.uuid));
        m.insert("name".into(), json!(p.row.name));
        if p.row.svm_name.is_some() || p.row.svm_uuid.is_some() {
            let mut s = Map::new();
            if let Some(n) = &p.row.svm_name {
                s.insert("name".into(), json!(n));
            }
            if let Some(u) = &p.row.svm_uuid {
                s.insert("uuid".into(), json!(u));
            }
            m.insert("svm".into(), Value::Object(s));
        }
        m.extend(model::policy_json(&p.policy));
        let members = inner
            .volumes
            .iter()
            .filter(|v| v.policy_uuid.as_deref() == Some(p.row.uuid.as_str()))
            .count();
        m.insert("object_count".into(), json!(members));
        m.insert("builtin".into(), json!(p.row.builtin));
        Value::Object(m)
    }

    pub fn list_policies(&self, q: &Query) -> R<Reply> {
        let inner = self.lock();
        let all: Vec<Value> = inner
            .policies
            .iter()
            .map(|p| self.policy_json(&inner, p))
            .collect();
        list(all, q, POLICY_TOP)
    }

    pub fn get_policy(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.lock();
        let p = find_policy(&inner, uuid)?;
        Ok(Reply::ok(single(self.policy_json(&inner, p), q)))
    }

    pub fn create_policy(&self, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let np = model::new_policy(&m)?;
        let mut inner = self.lock();
        if inner.policies.iter().any(|p| p.row.name == np.name) {
            return Err(ApiError::conflict(
                code::DUPLICATE,
                "name",
                format!("a policy named {:?} already exists", np.name),
            ));
        }
        let svm = np.svm.unwrap_or_default();
        let row = PolicyRow {
            uuid: new_uuid(),
            name: np.name.clone(),
            svm_name: svm.name,
            svm_uuid: svm.uuid,
            builtin: false,
            spec: Value::Object(model::policy_json(&np.policy)).to_string(),
        };
        inner.store.insert_policy(&row).map_err(db_err)?;
        self.node.put_policy(&row.name, np.policy);
        let rec = PolicyRec {
            row,
            policy: np.policy,
        };
        let body = self.policy_json(&inner, &rec);
        let location = format!("/api/storage/qos/policies/{}", rec.row.uuid);
        inner.policies.push(rec);
        Ok(Reply {
            status: 201,
            body,
            location: Some(location),
        })
    }

    pub fn patch_policy(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let mut inner = self.lock();
        let i = policy_index(&inner, uuid)?;
        let cur = &inner.policies[i];
        if cur.row.builtin {
            return Err(read_only_policy(&cur.row.name));
        }
        let patch = model::patch_policy(&m, &cur.policy)?;
        let old_name = cur.row.name.clone();
        if let Some(n) = &patch.name {
            if n != &old_name && inner.policies.iter().any(|p| &p.row.name == n) {
                return Err(ApiError::conflict(
                    code::DUPLICATE,
                    "name",
                    format!("a policy named {n:?} already exists"),
                ));
            }
        }
        let mut row = inner.policies[i].row.clone();
        if let Some(n) = &patch.name {
            row.name = n.clone();
        }
        row.spec = Value::Object(model::policy_json(&patch.policy)).to_string();
        inner.store.update_policy(&row).map_err(db_err)?;
        if row.name != old_name {
            self.node.rename_policy(&old_name, &row.name);
        }
        // Recomputes every member volume: connected clients see the new limits at once.
        self.node.put_policy(&row.name, patch.policy);
        inner.policies[i] = PolicyRec {
            row,
            policy: patch.policy,
        };
        let body = self.policy_json(&inner, &inner.policies[i]);
        Ok(Reply::ok(body))
    }

    pub fn delete_policy(&self, uuid: &str) -> R<Reply> {
        let mut inner = self.lock();
        let i = policy_index(&inner, uuid)?;
        let row = inner.policies[i].row.clone();
        if row.builtin {
            return Err(read_only_policy(&row.name));
        }
        let mut users: Vec<&str> = inner
            .volumes
            .iter()
            .filter(|v| v.policy_uuid.as_deref() == Some(uuid))
            .map(|v| v.name.as_str())
            .collect();
        let buckets = self.s3.buckets_using(uuid);
        users.extend(buckets.iter().map(|b| b.as_str()));
        if !users.is_empty() {
            return Err(ApiError::conflict(
                code::IN_USE,
                "uuid",
                format!(
                    "policy {:?} is in use by {} volume(s) or bucket(s): {}; move them to \
                     another policy (or none) first",
                    row.name,
                    users.len(),
                    users.join(", ")
                ),
            ));
        }
        inner.store.delete_policy(uuid).map_err(db_err)?;
        self.node.remove_policy(&row.name);
        inner.policies.remove(i);
        Ok(Reply::ok(json!({})))
    }

    // ---- volumes ----

    fn volume_json(&self, inner: &Inner, v: &VolumeRow) -> Value {
        let mut m = Map::new();
        m.insert("uuid".into(), json!(v.uuid));
        m.insert("name".into(), json!(v.name));
        if v.svm_name.is_some() || v.svm_uuid.is_some() {
            let mut s = Map::new();
            if let Some(n) = &v.svm_name {
                s.insert("name".into(), json!(n));
            }
            if let Some(u) = &v.svm_uuid {
                s.insert("uuid".into(), json!(u));
            }
            m.insert("svm".into(), Value::Object(s));
        }
        let live = self.node.volume(&v.name);
        let space = live.as_ref().map(|l| l.space());
        let size = space.map(|s| s.size).unwrap_or(v.size);
        let used = space.map(|s| s.used).unwrap_or(0);
        let allocated = space.map(|s| s.allocated()).unwrap_or(v.size);
        m.insert("size".into(), json!(size));
        m.insert("comment".into(), json!(v.comment));
        m.insert("state".into(), json!("online"));
        if let Some(ep) = self.nbd.get() {
            let mut nbd = serde_json::Map::new();
            if let Some(a) = ep.tcp {
                nbd.insert("uri".into(), json!(format!("nbd://{a}/{}", v.name)));
            }
            if let Some(p) = &ep.unix {
                nbd.insert(
                    "unix_uri".into(),
                    json!(format!("nbd+unix:///{}?socket={}", v.name, p.display())),
                );
            }
            m.insert("nbd".into(), Value::Object(nbd));
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
        }
        Value::Object(m)
    }

    pub fn list_volumes(&self, q: &Query) -> R<Reply> {
        let inner = self.lock();
        // Only compute the expensive parts when something beyond uuid/name is asked for.
        let all: Vec<Value> = if q.fields.is_empty() && q.filters.iter().all(|(k, _)| k == "name") {
            inner
                .volumes
                .iter()
                .map(|v| json!({"uuid": v.uuid, "name": v.name}))
                .collect()
        } else {
            inner
                .volumes
                .iter()
                .map(|v| self.volume_json(&inner, v))
                .collect()
        };
        list(all, q, VOLUME_TOP)
    }

    pub fn get_volume(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.lock();
        let v = find_volume(&inner, uuid)?;
        Ok(Reply::ok(single(self.volume_json(&inner, v), q)))
    }

    fn resolve_policy(inner: &Inner, r: &PolicyRef) -> R<String> {
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

    fn policy_name_of(inner: &Inner, uuid: &Option<String>) -> Option<String> {
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
        let location = format!("/api/storage/volumes/{}", row.uuid);
        let body = self.volume_json(&inner, &row);
        inner.volumes.push(row);
        Ok(Reply {
            status: 201,
            body,
            location: Some(location),
        })
    }

    pub fn patch_volume(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let patch = model::patch_volume(&m)?;
        let mut inner = self.lock();
        let i = volume_index(&inner, uuid)?;
        let mut row = inner.volumes[i].clone();
        let vol = self.live(&row.name)?;
        if let Some(s) = patch.size {
            if s < vol.size() {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    "size",
                    format!(
                        "size = {s} is smaller than the volume's size {}: shrinking is not \
                         supported (it would discard data)",
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
                Some(r) => Some(Self::resolve_policy(&inner, r)?),
            };
        }
        inner.store.update_volume(&row).map_err(db_err)?;
        // In force for connected clients from here on (no reconnect needed).
        if row.size != vol.size() {
            self.node
                .resize_volume(&vol, row.size)
                .map_err(|e| ApiError::internal(format!("growing the volume: {e}")))?;
        }
        if patch.reserve_percent.is_some() {
            self.node.set_snapshot_reserve(&vol, row.reserve_percent);
        }
        if patch.policy.is_some() {
            let name = Self::policy_name_of(&inner, &row.policy_uuid);
            self.node
                .assign_policy(&vol, name)
                .map_err(|e| ApiError::internal(e.to_string()))?;
        }
        inner.volumes[i] = row;
        let body = self.volume_json(&inner, &inner.volumes[i]);
        Ok(Reply::ok(body))
    }

    pub fn delete_volume(&self, uuid: &str) -> R<Reply> {
        let mut inner = self.lock();
        let i = volume_index(&inner, uuid)?;
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
        Ok(Reply::ok(json!({})))
    }

    fn live(&self, name: &str) -> R<Arc<Volume>> {
        self.node
            .volume(name)
            .ok_or_else(|| ApiError::internal(format!("volume {name:?} is not in service")))
    }

    /// uuid → name of every volume (for metrics labels).
    pub fn volume_uuids(&self) -> Vec<(String, String)> {
        self.lock()
            .volumes
            .iter()
            .map(|v| (v.name.clone(), v.uuid.clone()))
            .collect()
    }
}

const POLICY_TOP: &[&str] = &[
    "uuid",
    "name",
    "svm",
    "fixed",
    "adaptive",
    "object_count",
    "builtin",
];
const VOLUME_TOP: &[&str] = &[
    "uuid", "name", "svm", "size", "comment", "state", "type", "space", "qos", "metric", "limits",
    "nbd",
];

fn metric_json(v: &Volume) -> Value {
    let r = v.stats.rates();
    let round = |x: f64| x.round() as u64;
    json!({
        "duration": "PT1S",
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

fn check_query(q: &Query, top: &[&str]) -> R<()> {
    for (k, _) in &q.filters {
        let first = k.split('.').next().unwrap_or("");
        if !top.contains(&first) {
            return Err(ApiError::bad(
                code::UNKNOWN_FIELD,
                k,
                format!(
                    "unknown query parameter {k:?}: filter by a field ({}) or use fields=",
                    top.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn list(all: Vec<Value>, q: &Query, top: &[&str]) -> R<Reply> {
    check_query(q, top)?;
    let records: Vec<Value> = all
        .into_iter()
        .filter(|r| {
            q.filters.iter().all(|(k, pat)| {
                model::path_text(r, k).is_some_and(|t| model::query_matches(pat, &t))
            })
        })
        .map(|r| model::project(&r, &q.fields))
        .collect();
    let n = records.len();
    Ok(Reply::ok(json!({"records": records, "num_records": n})))
}

fn single(full: Value, q: &Query) -> Value {
    if q.fields.is_empty() {
        full
    } else {
        model::project(&full, &q.fields)
    }
}

fn policy_index(inner: &Inner, uuid: &str) -> R<usize> {
    inner
        .policies
        .iter()
        .position(|p| p.row.uuid == uuid)
        .ok_or_else(|| ApiError::not_found("uuid", format!("no QoS policy with uuid {uuid:?}")))
}

fn find_policy<'a>(inner: &'a Inner, uuid: &str) -> R<&'a PolicyRec> {
    Ok(&inner.policies[policy_index(inner, uuid)?])
}

fn volume_index(inner: &Inner, uuid: &str) -> R<usize> {
    inner
        .volumes
        .iter()
        .position(|v| v.uuid == uuid)
        .ok_or_else(|| ApiError::not_found("uuid", format!("no volume with uuid {uuid:?}")))
}

fn find_volume<'a>(inner: &'a Inner, uuid: &str) -> R<&'a VolumeRow> {
    Ok(&inner.volumes[volume_index(inner, uuid)?])
}

fn read_only_policy(name: &str) -> ApiError {
    ApiError::conflict(
        code::READ_ONLY_OBJECT,
        "uuid",
        format!(
            "policy {name:?} is a built-in adaptive policy group and cannot be changed or deleted"
        ),
    )
}

/// Apply the config's policy and volume declarations that are new or changed since they
/// were last applied (a fingerprint per declaration is kept in the state database).
/// Unchanged declarations leave the stored state alone, so changes made through the API
/// survive restarts with the same config, while editing node.toml and restarting applies
/// the edit. Objects the config does not declare are never touched.
fn apply_changed_declarations(store: &mut Store, cfg: &NodeConfig) -> rusqlite::Result<()> {
    let stored_p = store.policies()?;
    let stored_v = store.volumes()?;
    let mut fps = Vec::new();
    let mut pol_rows: Vec<(PolicyRow, bool)> = Vec::new();
    for p in &cfg.policies {
        let key = format!("config.policy.{}", p.name);
        let fp = format!("{:?}", p.policy);
        if store.applied(&key)?.as_deref() == Some(fp.as_str()) {
            continue;
        }
        let existing = stored_p.iter().find(|r| r.name == p.name);
        let row = PolicyRow {
            uuid: existing.map(|r| r.uuid.clone()).unwrap_or_else(new_uuid),
            name: p.name.clone(),
            svm_name: existing.and_then(|r| r.svm_name.clone()),
            svm_uuid: existing.and_then(|r| r.svm_uuid.clone()),
            builtin: false,
            spec: Value::Object(model::policy_json(&p.policy)).to_string(),
        };
        tracing::info!(policy = %p.name, "applying the configuration's declaration");
        pol_rows.push((row, existing.is_some()));
        fps.push((key, fp));
    }
    let policy_uuid = |name: &str| {
        pol_rows
            .iter()
            .map(|(r, _)| r)
            .chain(stored_p.iter())
            .find(|r| r.name == name)
            .map(|r| r.uuid.clone())
    };
    let mut vol_rows = Vec::new();
    for v in &cfg.volumes {
        let key = format!("config.volume.{}", v.name);
        let fp = format!("{v:?}");
        if store.applied(&key)?.as_deref() == Some(fp.as_str()) {
            continue;
        }
        let existing = stored_v.iter().find(|r| r.name == v.name);
        let row = VolumeRow {
            uuid: existing.map(|r| r.uuid.clone()).unwrap_or_else(new_uuid),
            name: v.name.clone(),
            size: v.size,
            reserve_percent: v.snapshot_reserve_percent,
            read_only: v.read_only,
            comment: v.description.clone(),
            svm_name: existing.and_then(|r| r.svm_name.clone()),
            svm_uuid: existing.and_then(|r| r.svm_uuid.clone()),
            policy_uuid: v.policy.as_deref().and_then(policy_uuid),
        };
        tracing::info!(volume = %v.name, "applying the configuration's declaration");
        vol_rows.push((row, existing.is_some()));
        fps.push((key, fp));
    }
    if fps.is_empty() {
        return Ok(());
    }
    store.apply_declarations(&pol_rows, &vol_rows, &fps)
}

fn seed_rows(cfg: &NodeConfig) -> (Vec<PolicyRow>, Vec<VolumeRow>) {
    let mut policies: Vec<PolicyRow> = default_adaptive_groups()
        .into_iter()
        .map(|(n, a)| PolicyRow {
            uuid: new_uuid(),
            name: n.to_string(),
            svm_name: None,
            svm_uuid: None,
            builtin: true,
            spec: Value::Object(model::policy_json(&Policy::Adaptive(a))).to_string(),
        })
        .collect();
    for p in &cfg.policies {
        policies.push(PolicyRow {
            uuid: new_uuid(),
            name: p.name.clone(),
            svm_name: None,
            svm_uuid: None,
            builtin: false,
            spec: Value::Object(model::policy_json(&p.policy)).to_string(),
        });
    }
    let volumes = cfg
        .volumes
        .iter()
        .map(|v| VolumeRow {
            uuid: new_uuid(),
            name: v.name.clone(),
            size: v.size,
            reserve_percent: v.snapshot_reserve_percent,
            read_only: v.read_only,
            comment: v.description.clone(),
            svm_name: None,
            svm_uuid: None,
            policy_uuid: v.policy.as_ref().and_then(|n| {
                policies
                    .iter()
                    .find(|p| &p.name == n)
                    .map(|p| p.uuid.clone())
            }),
        })
        .collect();
    (policies, volumes)
}
