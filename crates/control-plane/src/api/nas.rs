//! NAS in the control plane: `/api/protocols/nfs/export-policies` (ONTAP's shape: a
//! numeric id, a name, rules of client matches with ro_rule/rw_rule; `default`, loopback
//! only, always exists and cannot be deleted), a volume's `nas` block, and a volume's
//! storage on disk as one of two kinds ([`Storage`]: a block volume's file, a NAS volume's
//! tree), each changed all or nothing as `volume_files` describes.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::model::nas::{self as nas_model, ExportPolicyRef};
use super::model::{self, code, ApiError};
use super::policies::refuse_taken;
use super::query::Query;
use super::{svm_json, ControlPlane, Inner, Reply, R};
use crate::config::NodeConfig;
use crate::nas::export_policy::Policy;
use crate::nas::export_rule::{policy_from, RuleText};
use crate::nas::DEFAULT_EXPORT_POLICY;
use crate::node::Node;
use crate::state::{ExportPolicyRow, Store, VolumeRow};

pub const EXPORT_POLICIES: &str = "/api/protocols/nfs/export-policies";

const POLICY_TOP: &[&str] = &["id", "name", "svm", "rules"];

/// A stored export policy and its rules as written.
pub(super) struct ExportPolicyRec {
    pub row: ExportPolicyRow,
    pub rules: Vec<RuleText>,
}

impl ExportPolicyRec {
    pub fn policy(&self) -> Policy {
        // Checked when stored and again when loaded.
        policy_from(&self.row.name, &self.rules).unwrap_or_else(|_| Policy {
            name: self.row.name.clone(),
            rules: Vec::new(),
        })
    }
}

/// An NFS REST path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NfsRoute {
    Policies,
    Policy(String),
}

impl NfsRoute {
    pub fn allowed(&self) -> &'static str {
        match self {
            NfsRoute::Policies => "GET, POST",
            NfsRoute::Policy(_) => "GET, PATCH, DELETE",
        }
    }
}

pub fn route(p: &str, decode: impl Fn(&str) -> String) -> Option<NfsRoute> {
    let rest = p.strip_prefix(EXPORT_POLICIES)?;
    if rest.is_empty() {
        return Some(NfsRoute::Policies);
    }
    let id = rest.strip_prefix('/')?;
    (!id.is_empty() && !id.contains('/')).then(|| NfsRoute::Policy(decode(id)))
}

/// The export policies at start: the `default` row created the first time (loopback
/// only), the configuration's `[[export_policy]]` declarations applied when new or
/// changed (as `seed` does for QoS policies), every row checked.
pub(super) fn load(store: &mut Store, cfg: &NodeConfig) -> Result<Vec<ExportPolicyRec>, String> {
    let db = |e: rusqlite::Error| format!("export policies: {e}");
    let rows = store.export_policies().map_err(db)?;
    if !rows.iter().any(|r| r.name == DEFAULT_EXPORT_POLICY) {
        store
            .insert_export_policy(&ExportPolicyRow {
                id: 0,
                name: DEFAULT_EXPORT_POLICY.into(),
                svm_name: None,
                svm_uuid: None,
                rules: nas_model::rules_json(&[RuleText::loopback()]).to_string(),
            })
            .map_err(db)?;
    }
    for e in &cfg.export_policies {
        let key = format!("config.export_policy.{}", e.name());
        let text = nas_model::rules_json(&e.rules).to_string();
        if store.applied(&key).map_err(db)?.as_deref() == Some(text.as_str()) {
            continue;
        }
        let rows = store.export_policies().map_err(db)?;
        match rows.iter().find(|r| r.name == e.name()) {
            Some(r) => store.update_export_policy(&ExportPolicyRow {
                rules: text.clone(),
                ..r.clone()
            }),
            None => store
                .insert_export_policy(&ExportPolicyRow {
                    id: 0,
                    name: e.name().to_string(),
                    svm_name: None,
                    svm_uuid: None,
                    rules: text.clone(),
                })
                .map(|_| ()),
        }
        .map_err(db)?;
        store
            .apply_declarations(&[], &[], &[(key, text)])
            .map_err(db)?;
        tracing::info!(export_policy = %e.name(), "applying the configuration's declaration");
    }
    store
        .export_policies()
        .map_err(db)?
        .into_iter()
        .map(|row| {
            let rules = nas_model::stored_rules(&row.rules).map_err(|e| {
                format!(
                    "export policy {:?}: stored rules are invalid: {e}",
                    row.name
                )
            })?;
            Ok(ExportPolicyRec { row, rules })
        })
        .collect()
}

/// NAS (`/api/protocols/nfs/export-policies` and the NFS endpoint): export policies, and
/// what a NAS volume's record shows of them; one resource of the control plane
/// ([`ControlPlane::nas`]).
pub struct Nas<'a> {
    cp: &'a ControlPlane,
}

impl ControlPlane {
    /// NAS: export policies and the NFS endpoint.
    pub fn nas(&self) -> Nas<'_> {
        Nas { cp: self }
    }
}

impl Nas<'_> {
    /// Run one NFS REST request (the method is already checked against `allowed`).
    pub fn dispatch(
        &self,
        method: &hyper::Method,
        route: NfsRoute,
        body: &[u8],
        q: &Query,
    ) -> R<Reply> {
        use hyper::Method as M;
        match (method, route) {
            (&M::POST, NfsRoute::Policies) => self.create_policy(body),
            (_, NfsRoute::Policies) => self.list_policies(q),
            (&M::PATCH, NfsRoute::Policy(id)) => self.patch_policy(&id, body),
            (&M::DELETE, NfsRoute::Policy(id)) => self.delete_policy(&id),
            (_, NfsRoute::Policy(id)) => self.get_policy(&id, q),
        }
    }

    fn policy_json(&self, inner: &Inner, p: &ExportPolicyRec) -> Value {
        json!({
            "id": p.row.id,
            "name": p.row.name,
            "svm": svm_json(inner, &p.row.svm_name, &p.row.svm_uuid),
            "rules": nas_model::rules_json(&p.rules),
        })
    }

    pub fn list_policies(&self, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let all = inner
            .export_policies
            .iter()
            .map(|p| self.policy_json(&inner, p))
            .collect();
        super::listing(all, &with_id(q, true), POLICY_TOP, EXPORT_POLICIES)
    }

    pub fn get_policy(&self, id: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let i = policy_index(&inner, id)?;
        let body = self.policy_json(&inner, &inner.export_policies[i]);
        super::single(body, &with_id(q, false))
    }

    pub fn create_policy(&self, body: &[u8]) -> R<Reply> {
        let b = nas_model::export_policy(&model::parse_body(body)?)?;
        let name = b.name.ok_or_else(|| {
            ApiError::bad(code::MISSING_FIELD, "name", "field \"name\" is required")
        })?;
        if let Some(id) = b.id {
            return Err(ApiError::bad(
                code::IMMUTABLE,
                "id",
                format!("id = {id}: an export policy's id is assigned by the node; leave it out"),
            ));
        }
        let mut inner = self.cp.lock();
        let taken = inner.export_policies.iter().any(|p| p.row.name == name);
        refuse_taken(taken, "an export policy", &name)?;
        let svm = b.svm.unwrap_or_default();
        super::svms::check_svm(&inner, &svm.name, &svm.uuid)?;
        let rules = b.rules.unwrap_or_default();
        let mut row = ExportPolicyRow {
            id: 0,
            name,
            svm_name: svm.name,
            svm_uuid: svm.uuid,
            rules: nas_model::rules_json(&rules).to_string(),
        };
        row.id = inner
            .store
            .insert_export_policy(&row)
            .map_err(super::db_err)?;
        let rec = ExportPolicyRec { row, rules };
        self.cp.node.put_export_policy(rec.policy());
        let body = self.policy_json(&inner, &rec);
        let location = format!("{EXPORT_POLICIES}/{}", rec.row.id);
        inner.export_policies.push(rec);
        Ok(Reply::created(body, location))
    }

    /// A new name and/or new rules, in force for mounted clients at their next call.
    pub fn patch_policy(&self, id: &str, body: &[u8]) -> R<Reply> {
        let b = nas_model::export_policy(&model::parse_body(body)?)?;
        if b.svm.is_some() {
            return Err(ApiError::bad(
                code::IMMUTABLE,
                "svm",
                "svm cannot be changed after the export policy is created",
            ));
        }
        let mut inner = self.cp.lock();
        let i = policy_index(&inner, id)?;
        if let Some(given) = b.id.filter(|g| *g != inner.export_policies[i].row.id) {
            return Err(ApiError::bad(
                code::IMMUTABLE,
                "id",
                format!("id = {given}: an export policy's id cannot change (this one's is {id})"),
            ));
        }
        let old = inner.export_policies[i].row.name.clone();
        let mut row = inner.export_policies[i].row.clone();
        let mut rules = inner.export_policies[i].rules.clone();
        if let Some(n) = &b.name {
            if n != &old && old == DEFAULT_EXPORT_POLICY {
                return Err(ApiError::bad(
                    code::IMMUTABLE,
                    "name",
                    "the default export policy cannot be renamed",
                ));
            }
            let taken = n != &old && inner.export_policies.iter().any(|p| &p.row.name == n);
            refuse_taken(taken, "an export policy", n)?;
            row.name = n.clone();
        }
        if let Some(r) = b.rules {
            policy_from(&row.name, &r)
                .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, "rules", e))?;
            row.rules = nas_model::rules_json(&r).to_string();
            rules = r;
        }
        let renamed = row.name != old;
        if renamed {
            inner
                .store
                .rename_export_policy(&row, &old)
                .map_err(super::db_err)?;
            for v in inner.volumes.iter_mut() {
                if v.export_policy.as_deref() == Some(old.as_str()) {
                    v.export_policy = Some(row.name.clone());
                }
            }
        } else {
            inner
                .store
                .update_export_policy(&row)
                .map_err(super::db_err)?;
        }
        let rec = ExportPolicyRec { row, rules };
        let policy = rec.policy();
        self.cp.node.put_export_policy(policy.clone());
        if renamed {
            for v in self.cp.node.volumes() {
                if v.nas.as_ref().is_some_and(|n| n.policy_name() == old) {
                    let _ = self.cp.node.assign_export_policy(&v, &policy.name);
                }
            }
            self.cp.node.remove_export_policy(&old);
        }
        inner.export_policies[i] = rec;
        let body = self.policy_json(&inner, &inner.export_policies[i]);
        Ok(Reply::ok(body))
    }

    pub fn delete_policy(&self, id: &str) -> R<Reply> {
        let mut inner = self.cp.lock();
        let i = policy_index(&inner, id)?;
        let name = inner.export_policies[i].row.name.clone();
        if name == DEFAULT_EXPORT_POLICY {
            return Err(ApiError::conflict(
                code::IN_USE,
                "name",
                "the default export policy cannot be deleted",
            ));
        }
        let users: Vec<&str> = inner
            .volumes
            .iter()
            .filter(|v| v.nas_path.is_some() && export_policy_of(v) == name)
            .map(|v| v.name.as_str())
            .collect();
        super::policies::refuse_in_use("name", &users, |list| {
            format!(
                "export policy {name:?} is used by volume(s) {list}; move them to another policy first"
            )
        })?;
        inner
            .store
            .delete_export_policy(inner.export_policies[i].row.id)
            .map_err(super::db_err)?;
        inner.export_policies.remove(i);
        self.cp.node.remove_export_policy(&name);
        Ok(Reply::ok(json!({})))
    }

    /// The name of the export policy `r` names.
    pub(super) fn resolve_policy(inner: &Inner, r: &ExportPolicyRef) -> R<String> {
        inner
            .export_policies
            .iter()
            .find(|p| {
                !matches!(&r.name, Some(n) if n != &p.row.name)
                    && !matches!(r.id, Some(id) if id != p.row.id)
            })
            .map(|p| p.row.name.clone())
            .ok_or_else(|| {
                ApiError::not_found(
                    "nas.export_policy",
                    format!(
                        "no export policy {}; GET {EXPORT_POLICIES} lists them",
                        match (&r.name, r.id) {
                            (Some(n), Some(i)) => format!("named {n:?} with id {i}"),
                            (Some(n), None) => format!("named {n:?}"),
                            (None, Some(i)) => format!("with id {i}"),
                            (None, None) => String::new(),
                        }
                    ),
                )
            })
    }

    /// A NAS volume's `nas` block (`None` for a block volume).
    pub(super) fn volume_nas_json(&self, inner: &Inner, v: &VolumeRow) -> Option<Value> {
        let path = v.nas_path.as_ref()?;
        let name = export_policy_of(v);
        let id = inner
            .export_policies
            .iter()
            .find(|p| p.row.name == name)
            .map(|p| p.row.id);
        let mut nas = json!({
            "path": path,
            "security_style": "unix",
            "export_policy": {"name": name, "id": id},
        });
        if let Ok(m) = std::fs::metadata(self.cp.node.nas_root(&v.name)) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let mode = m.permissions().mode() & 0o7777;
            nas["unix_permissions"] = json!(format!("{mode:o}").parse::<u64>().unwrap_or(0));
            nas["uid"] = json!(m.uid());
            nas["gid"] = json!(m.gid());
        }
        Some(nas)
    }

    /// A NAS volume's `nfs` block: where libnfs clients (fio's nfs engine) reach it.
    pub(super) fn volume_nfs_json(&self, v: &VolumeRow) -> Option<Value> {
        let path = v.nas_path.as_ref()?;
        let addr = self.cp.nfs.get()?;
        Some(json!({
            "url": format!(
                "nfs://{}{path}?nfsport={p}&mountport={p}",
                addr.ip(),
                p = addr.port()
            ),
            "port": addr.port(),
        }))
    }

    /// Record where NFS clients reach the node (once, after the listener is bound).
    pub fn set_endpoint(&self, addr: std::net::SocketAddr) {
        let _ = self.cp.nfs.set(addr);
    }
}

/// `q` with `id` among its fields: an export policy is addressed by its id
/// (`/export-policies/{id}`), so every record shows it, as ONTAP's lists do, beside the
/// `name` (a projection keeps `uuid` and `name`, and a policy has no uuid). A single GET
/// without `fields` shows everything already.
fn with_id(q: &Query, list: bool) -> Query {
    let mut q = q.clone();
    if list || !q.fields.is_empty() {
        q.fields.push("id".into());
    }
    q
}

/// A volume row's export policy name.
pub(super) fn export_policy_of(v: &VolumeRow) -> String {
    v.export_policy
        .clone()
        .unwrap_or_else(|| DEFAULT_EXPORT_POLICY.to_string())
}

fn policy_index(inner: &Inner, id: &str) -> R<usize> {
    inner
        .export_policies
        .iter()
        .position(|p| p.row.id.to_string() == id)
        .ok_or_else(|| ApiError::not_found("id", format!("no export policy with id {id:?}")))
}

use super::volume_files::TOMBSTONE;

/// Where a volume's data lives on disk: a block volume's file or a NAS volume's tree.
pub(super) enum Storage {
    File(PathBuf),
    Tree(PathBuf),
}

impl Storage {
    pub fn of(node: &Node, row: &VolumeRow) -> Storage {
        if row.nas_path.is_some() {
            Storage::Tree(node.nas_root(&row.name))
        } else {
            Storage::File(node.volume_path(&row.name))
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Storage::File(p) | Storage::Tree(p) => p,
        }
    }

    /// Where it waits between a delete's rename and its commit.
    pub fn tombstone(&self, uuid: &str) -> PathBuf {
        self.path()
            .parent()
            .unwrap_or(Path::new("."))
            .join(format!("{TOMBSTONE}{uuid}"))
    }

    /// Remove what a crash between a create's file (or tree) and its commit left: it
    /// belongs to no volume.
    pub fn remove_stale(&self) -> io::Result<()> {
        match self {
            Storage::File(p) if p.exists() => std::fs::remove_file(p),
            Storage::Tree(p) if p.exists() => std::fs::remove_dir_all(p),
            _ => Ok(()),
        }
    }

    /// Create it new: a sparse file of `size` bytes, or an empty tree whose root has
    /// `mode` (default 0755); a failure leaves nothing behind.
    pub fn create(&self, size: u64, mode: Option<u32>) -> io::Result<()> {
        match self {
            Storage::File(p) => super::volume_files::create_file(p, size),
            Storage::Tree(p) => {
                crate::private::create_dir_all(p.parent().unwrap_or(Path::new(".")))?;
                crate::nas::create_root(p, mode)
            }
        }
    }

    /// Undo [`create`](Self::create) (the commit failed).
    pub fn discard(&self) {
        let _ = match self {
            Storage::File(p) => std::fs::remove_file(p),
            Storage::Tree(p) => std::fs::remove_dir_all(p),
        };
    }

    /// Remove a committed delete's tombstone.
    pub fn remove_tombstone(stone: &Path) -> io::Result<()> {
        if stone.is_dir() {
            std::fs::remove_dir_all(stone)
        } else {
            std::fs::remove_file(stone)
        }
    }
}

/// A NAS volume's tree before it is served at start: an interrupted delete is undone
/// (its tombstone renamed back). A missing tree is created empty by the node (a volume
/// declared in the configuration gets its tree at first start).
pub(super) fn reconcile_tree(node: &Node, uuid: &str, name: &str) -> Result<(), String> {
    let root = node.nas_root(name);
    let stone = Storage::Tree(root.clone()).tombstone(uuid);
    if !root.exists() && stone.is_dir() {
        super::volume_files::undo_interrupted_delete(&stone, &root, name, "tree")?;
    }
    match std::fs::symlink_metadata(&root) {
        Ok(m) if !m.is_dir() => Err(format!("{} is not a directory", root.display())),
        _ => Ok(()),
    }
}

/// Remove tree tombstones of volumes that no longer exist.
pub(super) fn sweep_tree_tombstones(node: &Node, live_uuids: &[&str]) {
    super::volume_files::remove_dead_tombstones(&node.data_dir().join("nas"), live_uuids, |p| {
        std::fs::remove_dir_all(p)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let d = |s: &str| s.to_string();
        assert_eq!(route(EXPORT_POLICIES, d), Some(NfsRoute::Policies));
        assert_eq!(
            route(&format!("{EXPORT_POLICIES}/12"), d),
            Some(NfsRoute::Policy("12".into()))
        );
        assert_eq!(route(&format!("{EXPORT_POLICIES}/1/rules"), d), None);
        assert_eq!(route("/api/protocols/nfs/export-policiesX", d), None);
    }

    /// A list of export policies shows each one's `id` (its address) and `name`, as
    /// ONTAP's does, and so does a GET with `fields=`: the default projection kept only
    /// `name`, and the records could not be followed.
    #[test]
    fn lists_and_projections_show_the_id() {
        let d = test_support::TestDir::new("nas-ids");
        let cp = ControlPlane::open(&crate::NodeConfig::default(), &d, Default::default()).unwrap();
        let q = |s: &str| crate::api::query::parse_query(s).unwrap();
        let list = cp.nas().list_policies(&q("")).unwrap().body;
        let first = &list["records"][0];
        assert_eq!(first["name"], DEFAULT_EXPORT_POLICY, "{list}");
        let id = first["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("no id: {list}"));
        assert!(first.get("rules").is_none(), "{list}");
        let one = cp
            .nas()
            .get_policy(&id.to_string(), &q("fields=svm"))
            .unwrap();
        assert_eq!(one.body["id"], id, "{}", one.body);
        assert!(one.body.get("svm").is_some() && one.body.get("rules").is_none());
        let all = cp.nas().get_policy(&id.to_string(), &q("")).unwrap().body;
        assert!(all.get("rules").is_some(), "no fields: everything");
    }

    /// `id` in a body was accepted and ignored: a POST naming one got another, a PATCH
    /// "changing" it answered 200 unchanged. The node assigns ids; a PATCH may repeat the
    /// policy's own (a record sent back whole), nothing else.
    #[test]
    fn an_id_in_a_body_is_refused_unless_it_is_the_policys_own() {
        let d = test_support::TestDir::new("nas-body-id");
        let cp = ControlPlane::open(&crate::NodeConfig::default(), &d, Default::default()).unwrap();
        let refused = |r: R<Reply>| {
            let e = r.map(|r| r.body).unwrap_err();
            assert_eq!((e.status, e.target.as_str()), (400, "id"), "{}", e.message);
            e.message
        };
        let m = refused(cp.nas().create_policy(br#"{"name": "k", "id": 99}"#));
        assert!(m.contains("assigned by the node"), "{m}");
        let made = cp.nas().create_policy(br#"{"name": "k"}"#).unwrap().body;
        let id = made["id"].as_u64().unwrap();
        let m = refused(cp.nas().patch_policy(
            &id.to_string(),
            format!(r#"{{"id": {}}}"#, id + 1).as_bytes(),
        ));
        assert!(m.contains(&format!("this one's is {id}")), "{m}");
        let same = format!(r#"{{"id": {id}, "name": "k2"}}"#);
        let r = cp
            .nas()
            .patch_policy(&id.to_string(), same.as_bytes())
            .unwrap();
        assert_eq!(
            (r.body["id"].as_u64(), r.body["name"].as_str()),
            (Some(id), Some("k2"))
        );
    }
}
