//! The control plane: ONTAP-shaped REST resources over the node and its durable state.
//!
//! [`ControlPlane`] owns the state database and the catalog (uuids, svm, stored specs) and
//! applies every change in the same order: validate ([`model`]), commit to SQLite
//! ([`crate::state`]), then change the live node. A 2xx reply therefore means "on disk and
//! in force". [`http`] is the HTTP front end and the one place errors become statuses;
//! [`auth`] checks credentials; [`query`] implements ONTAP's list semantics.

pub mod auth;
pub mod backoff;
mod cluster;
pub mod docs;
pub mod front_end;
pub mod http;
pub mod model;
pub mod nas;
mod policies;
pub mod query;
pub mod s3;
pub mod san;
mod seed;
mod strict_json;
mod svms;
pub mod users;
mod volume_files;
mod volumes;
mod workload_stats;

use std::path::Path;
use std::sync::{Arc, Mutex};

use qos_core::Policy;
use serde_json::{json, Map, Value};

use crate::config::{NodeConfig, PolicySpec, VolumeSpec};
use crate::front_end::ServerStats;
use crate::node::Node;
use crate::state::{PolicyRow, Store, VolumeRow};
use model::ApiError;
pub use nas::EXPORT_POLICIES;
pub use policies::POLICIES;
pub use query::Query;
pub use svms::SVMS;
pub use volumes::VOLUMES;

type R<T> = Result<T, ApiError>;

struct PolicyRec {
    row: PolicyRow,
    policy: Policy,
}

struct Inner {
    store: Store,
    policies: Vec<PolicyRec>,
    volumes: Vec<VolumeRow>,
    /// Volumes not in service (uuid → why): their file and their row disagree, or the
    /// file cannot be opened. Every other volume serves; a PATCH can repair these.
    offline: std::collections::BTreeMap<String, String>,
    /// NFS export policies (api/nas.rs).
    export_policies: Vec<nas::ExportPolicyRec>,
    /// LUNs, igroups and LUN maps (api/san).
    san: san::SanState,
}

/// The node's control plane (REST resources, durable state, metrics).
pub struct ControlPlane {
    pub node: Arc<Node>,
    pub server_stats: Arc<ServerStats>,
    inner: Mutex<Inner>,
    /// Where NBD clients reach this node (set once the listeners are bound).
    nbd: std::sync::OnceLock<NbdEndpoints>,
    /// Where NFS clients reach this node (set once its listener is bound).
    nfs: std::sync::OnceLock<std::net::SocketAddr>,
    /// S3 users and buckets (api/s3.rs).
    s3: s3::S3State,
    /// The data directory's file system (its largest file bounds a volume's size).
    fs: crate::datadir::FsFacts,
    /// The node's iSCSI target, as LUN maps are checked against it (api/san).
    iscsi: san::IscsiInfo,
}

/// The node's NBD listening addresses, reported in each volume's `nbd` block so that
/// tools (e.g. `qoslab bench --node`) can find a volume from the API alone.
#[derive(Debug, Clone, Default)]
pub struct NbdEndpoints {
    pub tcp: Option<std::net::SocketAddr>,
    pub unix: Option<std::path::PathBuf>,
    /// The node serves NBD only over TLS (`--nbd-tls require`): URIs are `nbds://`.
    pub tls_required: bool,
}

impl NbdEndpoints {
    fn volume_json(&self, name: &str) -> Value {
        let s = if self.tls_required { "s" } else { "" };
        let mut nbd = Map::new();
        if let Some(a) = self.tcp {
            nbd.insert("uri".into(), json!(format!("nbd{s}://{a}/{name}")));
        }
        if let Some(p) = &self.unix {
            nbd.insert(
                "unix_uri".into(),
                json!(format!("nbd{s}+unix:///{name}?socket={}", p.display())),
            );
        }
        Value::Object(nbd)
    }
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

    /// 201 Created: the new object and where it now is.
    fn created(body: Value, location: String) -> Reply {
        Reply {
            status: 201,
            body,
            location: Some(location),
        }
    }
}

impl ControlPlane {
    /// Open `DATA_DIR/state.db` (seeding a new one from `cfg`), then open the node on the
    /// stored policies and volumes. Afterwards the database is the source of truth.
    pub fn open(
        cfg: &NodeConfig,
        data_dir: &Path,
        server_stats: Arc<ServerStats>,
    ) -> Result<Arc<ControlPlane>, String> {
        let db = data_dir.join("state.db");
        let in_db = |e: &dyn std::fmt::Display| format!("{}: {e}", db.display());
        let mut store = open_store(cfg, data_dir, &db)?;
        let export_policies = nas::load(&mut store, cfg).map_err(|e| in_db(&e))?;
        let policies = load_policies(&store, &db)?;
        let volumes = store.volumes().map_err(|e| e.to_string())?;
        // Every NAS volume's export id, stored (assigned now for one that has none).
        let mut export_ids = std::collections::HashMap::new();
        for v in &volumes {
            if let Some(p) = &v.nas_path {
                let id = store
                    .export_id(&v.uuid, p)
                    .map_err(|e| format!("{}: NFS export id of {:?}: {e}", db.display(), v.name))?;
                export_ids.insert(v.uuid.clone(), id);
            }
        }
        store.export_ids_stored().map_err(|e| in_db(&e))?;
        let mut node_cfg = cfg.clone();
        // Volumes are the stored ones, brought up below.
        node_cfg.volumes = Vec::new();
        node_cfg.policies = policies
            .iter()
            .filter(|p| !p.row.builtin)
            .map(|p| PolicySpec {
                name: p.row.name.clone(),
                policy: p.policy,
            })
            .collect();
        node_cfg.export_policies = export_policies
            .iter()
            .map(|p| crate::config::ExportPolicySpec {
                rules: p.rules.clone(),
                policy: p.policy(),
            })
            .collect();
        // Volumes are brought up one by one below: one that cannot be served stays
        // offline with its reason, and never keeps the node from starting.
        let specs = volume_specs(&volumes, &policies, &export_ids);
        let node = Node::open(&node_cfg, data_dir).map_err(|e| e.to_string())?;
        let vol_dir = data_dir.join("volumes");
        let fs = crate::datadir::probe(&vol_dir).unwrap_or_else(|e| {
            tracing::warn!("measuring the file system of {}: {e}", vol_dir.display());
            crate::datadir::FsFacts {
                fs_type: "unknown".into(),
                max_file_size: None,
            }
        });
        let offline = bring_up(&node, &volumes, &specs, &fs);
        let s3 = s3::S3State::load(&store, &node, &policies, None)
            .map_err(|e| format!("{}: S3 buckets: {e}", db.display()))?;
        let san_state = san::load(&store, &node, &volumes, fs.max_file_size)
            .map_err(|e| format!("{}: SAN objects: {e}", db.display()))?;
        let mut inner = Inner {
            store,
            policies,
            volumes,
            offline,
            export_policies,
            san: san_state,
        };
        san::bring_up(&node, &mut inner);
        Ok(Arc::new(ControlPlane {
            node,
            server_stats,
            inner: Mutex::new(inner),
            nbd: std::sync::OnceLock::new(),
            nfs: std::sync::OnceLock::new(),
            s3,
            fs,
            iscsi: san::IscsiInfo::default(),
        }))
    }

    /// Record where NBD clients reach the node (once, after the listeners are bound).
    pub fn set_nbd_endpoints(&self, endpoints: NbdEndpoints) {
        let _ = self.nbd.set(endpoints);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The volumes that are offline, as (name, reason).
    pub fn offline_volumes(&self) -> Vec<(String, String)> {
        let inner = self.lock();
        inner
            .volumes
            .iter()
            .filter_map(|v| {
                inner
                    .offline
                    .get(&v.uuid)
                    .map(|r| (v.name.clone(), r.clone()))
            })
            .collect()
    }

    /// The data directory's file system as measured at start.
    pub fn fs_facts(&self) -> &crate::datadir::FsFacts {
        &self.fs
    }

    /// (name, uuid) of every volume the node serves (for metrics labels): the volumes,
    /// and each LUN's block volume (`VOLUME:LUN`) with the LUN's uuid.
    pub fn volume_uuids(&self) -> Vec<(String, String)> {
        let inner = self.lock();
        let mut v: Vec<(String, String)> = inner
            .volumes
            .iter()
            .map(|v| (v.name.clone(), v.uuid.clone()))
            .collect();
        v.extend(
            inner
                .san
                .luns
                .iter()
                .map(|l| (san::lun_node_name(&inner, l), l.uuid.clone())),
        );
        v
    }
}

/// An object's `svm {name, uuid}`. Every object belongs to one: one created without `svm`
/// to the default SVM ([`svms::DEFAULT_SVM`]). A name given without a uuid gets the uuid
/// given with that name elsewhere, or one derived from the name ([`svms::svm_uuid`]).
fn svm_json(inner: &Inner, name: &Option<String>, uuid: &Option<String>) -> Value {
    let name = name.as_deref().unwrap_or(svms::DEFAULT_SVM);
    let uuid = match uuid {
        Some(u) => u.clone(),
        None => svms::svm_uuid(inner, name),
    };
    json!({"name": name, "uuid": uuid})
}

/// A single record's reply: everything, or the `fields=` asked for.
fn single(full: Value, q: &Query) -> R<Reply> {
    Ok(Reply::ok(if q.fields.is_empty() {
        full
    } else {
        query::project(&full, &q.fields)
    }))
}

/// A collection's reply: the page of the records `q` selects (filters, order, fields) of
/// `all`, whose top-level fields are `top`.
fn listing(all: Vec<Value>, q: &Query, top: &[&str], collection: &str) -> R<Reply> {
    Ok(Reply::ok(query::page(
        query::select(all, q, top)?,
        q,
        collection,
    )?))
}

fn db_err(e: rusqlite::Error) -> ApiError {
    ApiError::internal(format!("state database: {e}; nothing was changed"))
}

/// A commit that failed (and whose file change was undone).
fn db_unchanged(e: rusqlite::Error) -> ApiError {
    ApiError::internal(volume_files::unchanged(
        "committing to the state database",
        e,
    ))
}

/// A file change that failed (nothing was committed): a size the file system refuses is
/// the client's (400), anything else the node's (500).
fn file_error(what: &str, path: &Path, e: std::io::Error) -> ApiError {
    let text = volume_files::unchanged(&format!("{what} {}", path.display()), &e);
    match e.raw_os_error() {
        Some(libc::EFBIG) => ApiError::bad(model::code::OUT_OF_RANGE, "size", text),
        _ => ApiError::internal(text),
    }
}

/// The wall-clock time as RFC 3339 UTC with microseconds (`2026-11-22T18:52:10.482192Z`).
pub fn rfc3339_now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(d.as_secs() as i64, d.subsec_micros())
}

fn rfc3339(secs: i64, micros: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The state database in `data_dir` (private modes), seeded from `cfg` when new, with the
/// config's changed declarations applied.
fn open_store(cfg: &NodeConfig, data_dir: &Path, db: &Path) -> Result<Store, String> {
    crate::private::create_dir_all(data_dir)
        .map_err(|e| format!("data directory {}: {e}", data_dir.display()))?;
    // SQLite gives its -wal and -shm files the database file's mode.
    crate::private::precreate(db).map_err(|e| format!("{}: {e}", db.display()))?;
    let (mut store, seeded) = Store::open(db).map_err(|e| format!("{}: {e}", db.display()))?;
    if !seeded {
        let (p, v) = seed::seed_rows(cfg);
        store
            .seed(&p, &v)
            .map_err(|e| format!("{}: seeding: {e}", db.display()))?;
        tracing::info!(
            policies = cfg.policies.len(),
            volumes = cfg.volumes.len(),
            "new state database seeded from the configuration"
        );
    }
    seed::apply_changed_declarations(&mut store, cfg)
        .map_err(|e| format!("{}: applying the configuration: {e}", db.display()))?;
    Ok(store)
}

/// The stored policies, each definition checked again.
fn load_policies(store: &Store, db: &Path) -> Result<Vec<PolicyRec>, String> {
    let rows = store.policies().map_err(|e| e.to_string())?;
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
    Ok(policies)
}

/// What the node is to serve of each stored volume.
fn volume_specs(
    volumes: &[VolumeRow],
    policies: &[PolicyRec],
    export_ids: &std::collections::HashMap<String, u32>,
) -> Vec<VolumeSpec> {
    volumes
        .iter()
        .map(|v| VolumeSpec {
            name: v.name.clone(),
            size: v.size,
            snapshot_reserve_percent: v.reserve_percent,
            read_only: v.read_only,
            description: v.comment.clone(),
            policy: self::policies::name_in(policies, &v.policy_uuid),
            nas: v.nas_path.as_ref().map(|p| crate::nas::NasSpec {
                path: p.clone(),
                export_policy: nas::export_policy_of(v),
                export_id: Some(export_ids[&v.uuid]),
            }),
        })
        .collect()
}

/// Bring every volume up after checking its file or tree against its row; returns those
/// left offline (uuid → why). Then the leftovers of interrupted deletes are swept.
fn bring_up(
    node: &Arc<Node>,
    volumes: &[VolumeRow],
    specs: &[VolumeSpec],
    fs: &crate::datadir::FsFacts,
) -> std::collections::BTreeMap<String, String> {
    let mut offline = std::collections::BTreeMap::new();
    for (row, spec) in volumes.iter().zip(specs) {
        let checked = if row.nas_path.is_some() {
            nas::reconcile_tree(node, &row.uuid, &row.name)
        } else {
            volume_files::reconcile(node, &row.uuid, &row.name, row.size, fs.max_file_size)
        };
        let up = checked.and_then(|()| {
            node.add_volume(spec)
                .map(|_| ())
                .map_err(|e| format!("opening its file: {e}"))
        });
        if let Err(reason) = up {
            tracing::error!(volume = %row.name, "volume is offline: {reason}");
            offline.insert(row.uuid.clone(), reason);
        }
    }
    let uuids: Vec<&str> = volumes.iter().map(|v| v.uuid.as_str()).collect();
    volume_files::sweep_tombstones(node, &uuids);
    nas::sweep_tree_tombstones(node, &uuids);
    offline
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::NodeConfig;

    /// A new data directory is seeded from the config (a policy, a block volume under it,
    /// a NAS volume with its export id); opened again, the node is the stored state, not
    /// the config's volume list.
    #[test]
    fn open_seeds_then_serves_the_stored_state() {
        let d = test_support::TestDir::new("cp-open");
        let cfg = NodeConfig::parse(
            "[[policy]]\nname = \"p\"\nfixed.max_throughput = \"100iops\"\n\
             [[volume]]\nname = \"blk\"\nsize = \"1MiB\"\npolicy = \"p\"\n\
             [[volume]]\nname = \"tree\"\nsize = \"1GiB\"\nnas_path = \"/tree\"\n",
            "t.toml",
        )
        .unwrap();
        let check = |cp: &super::ControlPlane| {
            assert!(
                cp.offline_volumes().is_empty(),
                "{:?}",
                cp.offline_volumes()
            );
            let names: Vec<String> = cp.volume_uuids().into_iter().map(|(n, _)| n).collect();
            assert_eq!(names.len(), 2, "{names:?}");
            let blk = cp.node.volume("blk").expect("the block volume is up");
            assert_eq!(blk.limits().ceiling.iops, 100, "under its policy");
            let tree = cp.node.volume("tree").expect("the NAS volume is up");
            assert!(tree.nas.as_ref().is_some_and(|n| n.path == "/tree"));
        };
        let export_id = |cfg: &NodeConfig| {
            let cp = super::ControlPlane::open(cfg, &d, Arc::default()).unwrap();
            check(&cp);
            let tree = cp.node.volume("tree").unwrap();
            tree.nas.as_ref().unwrap().export_id
        };
        let first = export_id(&cfg);
        let again = export_id(&NodeConfig::default());
        assert_eq!(first, again, "export ids are stored, never reassigned");
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(super::rfc3339(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            super::rfc3339(1_700_000_000, 5),
            "2023-11-14T22:13:20.000005Z"
        );
        assert_eq!(
            super::rfc3339(951_782_400, 0),
            "2000-02-29T00:00:00.000000Z"
        );
    }
}
