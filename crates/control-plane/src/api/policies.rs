//! `/api/storage/qos/policies`: QoS policy groups (fixed and adaptive), one at a time or
//! by query (ONTAP's PATCH/DELETE on a collection).

use serde_json::{json, Map, Value};

use super::model::{self, code, ApiError, PolicyRef};
use super::query::{self, Query};
use super::{db_err, svm_json, ControlPlane, Inner, PolicyRec, Reply, R};
use crate::state::{new_uuid, PolicyRow};

pub const POLICIES: &str = "/api/storage/qos/policies";

pub(super) const POLICY_TOP: &[&str] = &[
    "uuid",
    "name",
    "svm",
    "fixed",
    "adaptive",
    "provisioned",
    "object_count",
    "builtin",
    "policy_class",
    "scope",
];

/// The QoS policy groups (`/api/storage/qos/policies`): one resource of the control
/// plane ([`ControlPlane::policies`]).
pub struct Policies<'a> {
    cp: &'a ControlPlane,
}

impl ControlPlane {
    /// The QoS policy groups.
    pub fn policies(&self) -> Policies<'_> {
        Policies { cp: self }
    }
}

impl Policies<'_> {
    fn json(&self, inner: &Inner, p: &PolicyRec) -> Value {
        let mut m = Map::new();
        m.insert("uuid".into(), json!(p.row.uuid));
        m.insert("name".into(), json!(p.row.name));
        m.insert(
            "svm".into(),
            svm_json(inner, &p.row.svm_name, &p.row.svm_uuid),
        );
        m.extend(model::policy_json(&p.policy));
        let members = inner
            .volumes
            .iter()
            .filter(|v| v.policy_uuid.as_deref() == Some(p.row.uuid.as_str()))
            .count();
        m.insert("object_count".into(), json!(members));
        m.insert("builtin".into(), json!(p.row.builtin));
        // ONTAP's classes: the default adaptive groups are "preset".
        let class = if p.row.builtin {
            "preset"
        } else {
            "user_defined"
        };
        m.insert("policy_class".into(), json!(class));
        let scope = if p.row.svm_name.is_some() || p.row.svm_uuid.is_some() {
            "svm"
        } else {
            "cluster"
        };
        m.insert("scope".into(), json!(scope));
        Value::Object(m)
    }

    fn selected(&self, inner: &Inner, q: &Query) -> R<Vec<Value>> {
        let all: Vec<Value> = inner.policies.iter().map(|p| self.json(inner, p)).collect();
        query::select(all, q, POLICY_TOP)
    }

    pub fn list(&self, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let sel = self.selected(&inner, q)?;
        Ok(Reply::ok(query::page(sel, q, POLICIES)?))
    }

    pub fn get(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let p = &inner.policies[policy_index(&inner, uuid)?];
        super::single(self.json(&inner, p), q)
    }

    pub fn create(&self, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let np = model::new_policy(&m)?;
        let mut inner = self.cp.lock();
        let taken = inner.policies.iter().any(|p| p.row.name == np.name);
        refuse_taken(taken, "a policy", &np.name)?;
        let svm = np.svm.unwrap_or_default();
        super::svms::check_svm(&inner, &svm.name, &svm.uuid)?;
        let row = PolicyRow {
            uuid: new_uuid(),
            name: np.name.clone(),
            svm_name: svm.name,
            svm_uuid: svm.uuid,
            builtin: false,
            spec: Value::Object(model::policy_json(&np.policy)).to_string(),
        };
        inner.store.insert_policy(&row).map_err(db_err)?;
        self.cp.node.put_policy(&row.name, np.policy);
        let rec = PolicyRec {
            row,
            policy: np.policy,
        };
        let body = self.json(&inner, &rec);
        let location = format!("{POLICIES}/{}", rec.row.uuid);
        inner.policies.push(rec);
        Ok(Reply::created(body, location))
    }

    /// Validate a PATCH body against policy `i` (nothing changes yet).
    fn checked_patch(
        inner: &Inner,
        i: usize,
        m: &Map<String, Value>,
        renaming_many: bool,
    ) -> R<PolicyRec> {
        let cur = &inner.policies[i];
        if cur.row.builtin {
            return Err(read_only_policy(&cur.row.name));
        }
        let patch = model::patch_policy(m, &cur.policy)?;
        let mut row = cur.row.clone();
        if let Some(n) = &patch.name {
            if renaming_many {
                return Err(ApiError::bad(
                    code::CONFLICT_FIELDS,
                    "name",
                    "a PATCH by query cannot rename: the policies would all get one name",
                ));
            }
            let taken = n != &row.name && inner.policies.iter().any(|p| &p.row.name == n);
            refuse_taken(taken, "a policy", n)?;
            row.name = n.clone();
        }
        row.spec = Value::Object(model::policy_json(&patch.policy)).to_string();
        Ok(PolicyRec {
            row,
            policy: patch.policy,
        })
    }

    /// Commit checked changes in one transaction, then put them in force (nothing
    /// changes on the node unless the commit succeeded).
    fn apply_patches(&self, inner: &mut Inner, changes: Vec<(usize, PolicyRec)>) -> R<()> {
        let rows: Vec<PolicyRow> = changes.iter().map(|(_, p)| p.row.clone()).collect();
        inner.store.update_policies(&rows).map_err(db_err)?;
        for (i, new) in changes {
            let old_name = inner.policies[i].row.name.clone();
            if new.row.name != old_name {
                self.cp.node.rename_policy(&old_name, &new.row.name);
            }
            // Recomputes every member volume: connected clients see the new limits at once.
            self.cp.node.put_policy(&new.row.name, new.policy);
            inner.policies[i] = new;
        }
        Ok(())
    }

    pub fn patch(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let m = model::parse_body(body)?;
        let mut inner = self.cp.lock();
        let i = policy_index(&inner, uuid)?;
        let new = Self::checked_patch(&inner, i, &m, false)?;
        self.apply_patches(&mut inner, vec![(i, new)])?;
        let body = self.json(&inner, &inner.policies[i]);
        Ok(Reply::ok(body))
    }

    /// `PATCH /api/storage/qos/policies?QUERY`: every matching policy, all checked
    /// before any changes.
    pub fn patch_where(&self, q: &Query, body: &[u8]) -> R<Reply> {
        need_query(q, "PATCH")?;
        let m = model::parse_body(body)?;
        let mut inner = self.cp.lock();
        let uuids = uuids_of(&self.selected(&inner, q)?);
        let mut changes = Vec::new();
        for u in &uuids {
            let i = policy_index(&inner, u)?;
            changes.push((i, Self::checked_patch(&inner, i, &m, true)?));
        }
        if !changes.is_empty() {
            self.apply_patches(&mut inner, changes)?;
        }
        Ok(Reply::ok(policies_reply(&inner, &uuids)))
    }

    fn check_deletable(&self, inner: &Inner, i: usize) -> R<()> {
        let row = &inner.policies[i].row;
        if row.builtin {
            return Err(read_only_policy(&row.name));
        }
        let mut users: Vec<&str> = inner
            .volumes
            .iter()
            .filter(|v| v.policy_uuid.as_deref() == Some(row.uuid.as_str()))
            .map(|v| v.name.as_str())
            .collect();
        // Buckets under the policy hold it too (api/s3.rs).
        let buckets = self.cp.s3.buckets_using(&row.uuid);
        users.extend(buckets.iter().map(|b| b.as_str()));
        // LUNs under the policy of their own too (api/san), by path.
        let luns: Vec<String> = inner
            .san
            .luns
            .iter()
            .filter(|l| l.policy_uuid.as_deref() == Some(row.uuid.as_str()))
            .map(|l| {
                let vol = inner.volumes.iter().find(|v| v.uuid == l.volume_uuid);
                format!("/vol/{}/{}", vol.map_or("?", |v| v.name.as_str()), l.name)
            })
            .collect();
        users.extend(luns.iter().map(|l| l.as_str()));
        refuse_in_use("uuid", &users, |list| {
            format!(
                "policy {:?} is in use by {} volume(s), bucket(s) or LUN(s): {list}; move them to \
                 another policy (or none) first",
                row.name,
                users.len(),
            )
        })
    }

    /// Delete policies in one transaction, then take them off the node.
    fn remove(&self, inner: &mut Inner, uuids: &[String]) -> R<()> {
        inner.store.delete_policies(uuids).map_err(db_err)?;
        for u in uuids {
            let i = policy_index(inner, u)?;
            self.cp.node.remove_policy(&inner.policies[i].row.name);
            inner.policies.remove(i);
        }
        Ok(())
    }

    pub fn delete(&self, uuid: &str) -> R<Reply> {
        let mut inner = self.cp.lock();
        let i = policy_index(&inner, uuid)?;
        self.check_deletable(&inner, i)?;
        self.remove(&mut inner, &[uuid.to_string()])?;
        Ok(Reply::ok(json!({})))
    }

    /// `DELETE /api/storage/qos/policies?QUERY`: refused as a whole if any match is
    /// built in or in use.
    pub fn delete_where(&self, q: &Query) -> R<Reply> {
        need_query(q, "DELETE")?;
        let mut inner = self.cp.lock();
        let uuids = uuids_of(&self.selected(&inner, q)?);
        for u in &uuids {
            self.check_deletable(&inner, policy_index(&inner, u)?)?;
        }
        let body = policies_reply(&inner, &uuids);
        if !uuids.is_empty() {
            self.remove(&mut inner, &uuids)?;
        }
        Ok(Reply::ok(body))
    }
}

/// Refuse a delete while something uses the object: nothing when `users` is empty, else
/// a 409 IN_USE naming `target`, whose message `why` writes around the users joined with
/// ", ".
pub(super) fn refuse_in_use<S: AsRef<str>>(
    target: &str,
    users: &[S],
    why: impl FnOnce(&str) -> String,
) -> R<()> {
    if users.is_empty() {
        return Ok(());
    }
    let list: Vec<&str> = users.iter().map(AsRef::as_ref).collect();
    Err(ApiError::conflict(
        code::IN_USE,
        target,
        why(&list.join(", ")),
    ))
}

/// Refuse a name another object of its kind has (`taken`): a 409 DUPLICATE on `name`,
/// "{what} named {name:?} already exists" (`what`: "a policy", "an igroup", ...).
pub(super) fn refuse_taken(taken: bool, what: &str, name: &str) -> R<()> {
    if !taken {
        return Ok(());
    }
    Err(ApiError::conflict(
        code::DUPLICATE,
        "name",
        format!("{what} named {name:?} already exists"),
    ))
}

/// A PATCH/DELETE on a collection needs a filter: without one it would hit everything.
pub(super) fn need_query(q: &Query, method: &str) -> R<()> {
    if q.filters.is_empty() {
        return Err(ApiError::bad(
            code::MISSING_FIELD,
            "",
            format!(
                "{method} on a collection needs a query naming the records \
                 (e.g. ?name=epic_*); to change one record use its /UUID path"
            ),
        ));
    }
    Ok(())
}

pub(super) fn uuids_of(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| r["uuid"].as_str().map(str::to_string))
        .collect()
}

/// ONTAP's synchronous reply to an operation on a collection: what it applied to, the
/// `rows` of `uuids` (`id`: a row's uuid and name).
pub(super) fn bulk_reply<T>(
    rows: &[T],
    id: impl Fn(&T) -> (&str, &str),
    uuids: &[String],
) -> Value {
    let records: Vec<Value> = uuids
        .iter()
        .filter_map(|u| rows.iter().map(&id).find(|(uuid, _)| *uuid == u.as_str()))
        .map(|(uuid, name)| json!({"uuid": uuid, "name": name}))
        .collect();
    json!({"num_records": records.len(), "records": records})
}

/// [`bulk_reply`] on the QoS policies.
fn policies_reply(inner: &Inner, uuids: &[String]) -> Value {
    bulk_reply(&inner.policies, |p| (&p.row.uuid, &p.row.name), uuids)
}

pub(super) fn policy_index(inner: &Inner, uuid: &str) -> R<usize> {
    inner
        .policies
        .iter()
        .position(|p| p.row.uuid == uuid)
        .ok_or_else(|| ApiError::not_found("uuid", format!("no QoS policy with uuid {uuid:?}")))
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

/// The uuid of the policy a request names (by name, uuid or both).
pub(super) fn resolve(inner: &Inner, r: &PolicyRef) -> R<String> {
    match inner
        .policies
        .iter()
        .find(|p| r.is(&p.row.name, &p.row.uuid))
    {
        Some(p) => Ok(p.row.uuid.clone()),
        None => Err(ApiError::not_found(
            "qos.policy",
            format!(
                "no QoS policy {}; GET /api/storage/qos/policies lists them",
                r.describe()
            ),
        )),
    }
}

/// The name of the policy with this uuid, if any.
pub(super) fn name_of(inner: &Inner, uuid: &Option<String>) -> Option<String> {
    name_in(&inner.policies, uuid)
}

/// [`name_of`] among `policies` (at start, before the control plane's state is built).
pub(super) fn name_in(policies: &[PolicyRec], uuid: &Option<String>) -> Option<String> {
    by_uuid(policies, uuid).map(|p| p.row.name.clone())
}

/// The policy with this uuid among `policies`, if any.
pub(super) fn by_uuid<'a>(
    policies: &'a [PolicyRec],
    uuid: &Option<String>,
) -> Option<&'a PolicyRec> {
    let u = uuid.as_ref()?;
    policies.iter().find(|p| &p.row.uuid == u)
}
