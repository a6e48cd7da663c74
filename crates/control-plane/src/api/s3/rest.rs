//! The S3 REST API (ONTAP's `/api/protocols/s3/services/{svm.uuid}/users|buckets`):
//! request bodies validated here, then the catalog (`api::s3`) applies them.

use serde_json::{json, Map, Value};

use super::super::model::{code, only, ApiError, PolicyRef};
use super::super::policies::refuse_taken;
use super::super::{db_err, listing, single, ControlPlane, Query, Reply, R};
use super::{new_keys, valid_key, valid_user_name, S3};
use crate::state::{BucketRow, S3UserRow};

// ---- the REST API ----

fn check_svm(cp: &ControlPlane, svm_uuid: &str) -> R<()> {
    if svm_uuid == cp.s3.svm_uuid {
        Ok(())
    } else {
        Err(ApiError::not_found(
            "svm.uuid",
            format!(
                "no S3 service on SVM {svm_uuid:?}; this node's is {:?} (GET /api/protocols/s3/services)",
                cp.s3.svm_uuid
            ),
        ))
    }
}

fn obj<'a>(v: &'a Value, t: &str) -> R<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| {
        ApiError::bad(
            code::INVALID_TYPE,
            t,
            format!("field \"{t}\" must be an object"),
        )
    })
}

fn text<'a>(m: &'a Map<String, Value>, t: &str, key: &str) -> R<Option<&'a str>> {
    match m.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::bad(
            code::INVALID_TYPE,
            t,
            format!("field \"{t}\" must be a string"),
        )),
    }
}

fn bucket_size(m: &Map<String, Value>) -> R<Option<u64>> {
    const MAX: u64 = 1 << 60;
    let bad = |msg: String| ApiError::bad(code::OUT_OF_RANGE, "size", msg);
    let n = match m.get("size") {
        None => return Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| bad(format!("field \"size\" = {n} must be a positive integer")))?,
        Some(Value::String(s)) => {
            qos_core::parse_size(s).map_err(|e| bad(format!("field \"size\" = {s:?}: {e}")))?
        }
        Some(_) => {
            return Err(ApiError::bad(
                code::INVALID_TYPE,
                "size",
                "field \"size\" must be bytes (an integer) or a string such as \"100GB\"",
            ))
        }
    };
    if n == 0 || n > MAX {
        return Err(bad(format!(
            "field \"size\" = {n} is out of range: allowed 1 to {MAX}"
        )));
    }
    Ok(Some(n))
}

/// `qos_policy`: a reference to an existing policy group by name and/or uuid
/// (`Some(None)`: remove it). The throughput fields ONTAP shows are accepted but must
/// come with a name or uuid: qoslab does not generate policies.
fn qos_policy(m: &Map<String, Value>) -> R<Option<Option<PolicyRef>>> {
    let Some(v) = m.get("qos_policy") else {
        return Ok(None);
    };
    if v.is_null() {
        return Ok(Some(None));
    }
    let p = obj(v, "qos_policy")?;
    only(
        p,
        "qos_policy",
        &[
            "name",
            "uuid",
            "max_throughput_iops",
            "max_throughput_mbps",
            "min_throughput_iops",
            "min_throughput_mbps",
        ],
    )?;
    let r = PolicyRef {
        name: text(p, "qos_policy.name", "name")?.map(str::to_string),
        uuid: text(p, "qos_policy.uuid", "uuid")?.map(str::to_string),
    };
    match (&r.name, &r.uuid) {
        (Some(n), None) if n == "none" => Ok(Some(None)),
        (None, None) if p.is_empty() => Ok(Some(None)),
        (None, None) => Err(ApiError::bad(
            code::MISSING_FIELD,
            "qos_policy.name",
            "give qos_policy.name or qos_policy.uuid of an existing policy group \
             (create it with POST /api/storage/qos/policies); qoslab does not generate policies \
             from throughput values",
        )),
        _ => Ok(Some(Some(r))),
    }
}

const BUCKET_FIELDS: &[&str] = &[
    "name",
    "svm",
    "size",
    "comment",
    "qos_policy",
    "type",
    "aggregates",
    "constituents_per_aggregate",
];

const BUCKET_TOP: &[&str] = &[
    "uuid",
    "name",
    "svm",
    "size",
    "comment",
    "qos_policy",
    "type",
    "logical_used_size",
    "object_count",
    "statistics",
];

const USER_TOP: &[&str] = &["name", "svm", "comment", "access_key"];

fn s3_type(m: &Map<String, Value>) -> R<()> {
    match text(m, "type", "type")? {
        None | Some("s3") => Ok(()),
        Some(t) => Err(ApiError::bad(
            code::OUT_OF_RANGE,
            "type",
            format!("bucket type {t:?} is not supported: qoslab buckets are \"s3\""),
        )),
    }
}

impl S3<'_> {
    fn svm_json(&self) -> Value {
        json!({"name": self.cp.s3.svm_name, "uuid": self.cp.s3.svm_uuid})
    }

    fn bucket_json(&self, inner: &super::super::Inner, row: &BucketRow) -> Value {
        let mut m = Map::new();
        m.insert("uuid".into(), json!(row.uuid));
        m.insert("name".into(), json!(row.name));
        m.insert("svm".into(), self.svm_json());
        m.insert("type".into(), json!("s3"));
        m.insert("size".into(), json!(row.size));
        m.insert("comment".into(), json!(row.comment));
        if let Some(b) = self.cp.node.bucket(&row.name) {
            m.insert("logical_used_size".into(), json!(b.store.used()));
            m.insert("object_count".into(), json!(b.store.count()));
            let r = b.stats.rates();
            m.insert(
                "statistics".into(),
                json!({
                    "iops_raw": {"read": b.stats.ops(crate::stats::OpKind::Read),
                                 "write": b.stats.ops(crate::stats::OpKind::Write),
                                 "other": b.stats.ops(crate::stats::OpKind::Other)},
                    "iops": r.total_iops(),
                }),
            );
        }
        if let Some(p) = crate::api::policies::by_uuid(&inner.policies, &row.policy_uuid) {
            let mut q = Map::new();
            q.insert("name".into(), json!(p.row.name));
            q.insert("uuid".into(), json!(p.row.uuid));
            if let qos_core::Policy::Fixed(f) = &p.policy {
                q.insert("max_throughput_iops".into(), json!(f.max_iops));
                q.insert("max_throughput_mbps".into(), json!(f.max_mbps));
                q.insert("min_throughput_iops".into(), json!(f.min_iops));
                q.insert("min_throughput_mbps".into(), json!(f.min_mbps));
            }
            m.insert("qos_policy".into(), Value::Object(q));
        }
        Value::Object(m)
    }

    fn user_json(&self, u: &S3UserRow) -> Value {
        json!({"name": u.name, "svm": self.svm_json(), "comment": u.comment, "access_key": u.access_key})
    }

    /// GET /api/protocols/s3/services
    pub fn services(&self, q: &Query) -> R<Reply> {
        listing(
            vec![self.service_json()],
            q,
            &[
                "svm",
                "name",
                "enabled",
                "is_http_enabled",
                "is_https_enabled",
                "users",
                "buckets",
            ],
            "/api/protocols/s3/services",
        )
    }

    /// GET /api/protocols/s3/services/{svm.uuid}
    pub fn service(&self, svm_uuid: &str, q: &Query) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        single(self.service_json(), q)
    }

    fn service_json(&self) -> Value {
        let rows = self.cp.s3.rows();
        json!({
            "svm": self.svm_json(),
            "name": format!("{}-s3", self.cp.s3.svm_name),
            "enabled": true,
            "is_http_enabled": true,
            "is_https_enabled": false,
            "users": rows.users.iter().map(|u| json!({"name": u.name})).collect::<Vec<_>>(),
            "buckets": rows.buckets.iter().map(|b| json!({"name": b.name, "uuid": b.uuid})).collect::<Vec<_>>(),
        })
    }

    pub fn list_buckets(&self, svm_uuid: &str, q: &Query) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let inner = self.cp.lock();
        let rows = self.cp.s3.rows();
        let all = rows
            .buckets
            .iter()
            .map(|b| self.bucket_json(&inner, b))
            .collect();
        listing(
            all,
            q,
            BUCKET_TOP,
            &format!("/api/protocols/s3/services/{svm_uuid}/buckets"),
        )
    }

    pub fn get_bucket(&self, svm_uuid: &str, uuid: &str, q: &Query) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let inner = self.cp.lock();
        let rows = self.cp.s3.rows();
        let b = &rows.buckets[bucket_index(&rows.buckets, uuid)?];
        single(self.bucket_json(&inner, b), q)
    }

    pub fn post_bucket(&self, svm_uuid: &str, body: &[u8]) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let m = super::super::model::parse_body(body)?;
        only(&m, "", BUCKET_FIELDS)?;
        s3_type(&m)?;
        if let Some(s) = m.get("svm") {
            let s = obj(s, "svm")?;
            only(s, "svm", &["name", "uuid"])?;
            if text(s, "svm.uuid", "uuid")?.is_some_and(|u| u != self.cp.s3.svm_uuid) {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    "svm.uuid",
                    "svm.uuid must match the service's SVM (the path's)",
                ));
            }
        }
        let name = text(&m, "name", "name")?.ok_or_else(|| {
            ApiError::bad(code::MISSING_FIELD, "name", "field \"name\" is required")
        })?;
        let size = bucket_size(&m)?;
        let policy = qos_policy(&m)?.flatten();
        let comment = text(&m, "comment", "comment")?.unwrap_or("");
        let (_, row) = self.create_bucket(name, size, policy.as_ref(), comment)?;
        let inner = self.cp.lock();
        Ok(Reply::created(
            self.bucket_json(&inner, &row),
            format!(
                "/api/protocols/s3/services/{}/buckets/{}",
                self.cp.s3.svm_uuid, row.uuid
            ),
        ))
    }

    pub fn patch_bucket(&self, svm_uuid: &str, uuid: &str, body: &[u8]) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let m = super::super::model::parse_body(body)?;
        only(&m, "", BUCKET_FIELDS)?;
        for k in [
            "name",
            "svm",
            "type",
            "aggregates",
            "constituents_per_aggregate",
        ] {
            if m.contains_key(k) {
                return Err(ApiError::bad(
                    code::IMMUTABLE,
                    k,
                    format!("field \"{k}\" cannot be changed after the bucket is created"),
                ));
            }
        }
        let size = bucket_size(&m)?;
        let policy = qos_policy(&m)?;
        let comment = text(&m, "comment", "comment")?;
        let inner = self.cp.lock();
        let mut rows = self.cp.s3.rows();
        let i = bucket_index(&rows.buckets, uuid)?;
        let mut row = rows.buckets[i].clone();
        if let Some(s) = size {
            row.size = s;
        }
        if let Some(c) = comment {
            row.comment = c.to_string();
        }
        if let Some(p) = &policy {
            row.policy_uuid = match p {
                None => None,
                Some(r) => Some(crate::api::policies::resolve(&inner, r)?),
            };
        }
        inner.store.update_bucket(&row).map_err(db_err)?;
        if let Some(b) = self.cp.node.bucket(&row.name) {
            if size.is_some() {
                self.cp.node.resize_bucket(&b, row.size);
            }
            if policy.is_some() {
                let pname = crate::api::policies::name_of(&inner, &row.policy_uuid);
                self.cp
                    .node
                    .assign_bucket_policy(&b, pname)
                    .map_err(|e| ApiError::internal(e.to_string()))?;
            }
        }
        rows.buckets[i] = row;
        let body = self.bucket_json(&inner, &rows.buckets[i]);
        Ok(Reply::ok(body))
    }

    pub fn delete_bucket_api(&self, svm_uuid: &str, uuid: &str) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let name = {
            let rows = self.cp.s3.rows();
            rows.buckets[bucket_index(&rows.buckets, uuid)?]
                .name
                .clone()
        };
        self.delete_bucket(&name)?;
        Ok(Reply::ok(json!({})))
    }

    pub fn list_users(&self, svm_uuid: &str, q: &Query) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let all = self
            .cp
            .s3
            .rows()
            .users
            .iter()
            .map(|u| self.user_json(u))
            .collect();
        listing(
            all,
            q,
            USER_TOP,
            &format!("/api/protocols/s3/services/{svm_uuid}/users"),
        )
    }

    pub fn get_user(&self, svm_uuid: &str, name: &str, q: &Query) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let rows = self.cp.s3.rows();
        let u = &rows.users[user_index(&rows.users, name)?];
        single(self.user_json(u), q)
    }

    /// POST: the reply carries the secret key, the only time it is shown.
    pub fn create_user(&self, svm_uuid: &str, body: &[u8]) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let m = super::super::model::parse_body(body)?;
        only(
            &m,
            "",
            &["name", "svm", "comment", "access_key", "secret_key"],
        )?;
        let name = text(&m, "name", "name")?.ok_or_else(|| {
            ApiError::bad(code::MISSING_FIELD, "name", "field \"name\" is required")
        })?;
        if !valid_user_name(name) {
            return Err(ApiError::bad(
                code::OUT_OF_RANGE,
                "name",
                format!("invalid S3 user name {name:?}: 1 to 64 of 0-9 A-Z a-z _ + = , . @ -"),
            ));
        }
        let (gen_a, gen_s) = new_keys();
        let access = text(&m, "access_key", "access_key")?.unwrap_or(&gen_a);
        let secret = text(&m, "secret_key", "secret_key")?.unwrap_or(&gen_s);
        for (k, v) in [("access_key", access), ("secret_key", secret)] {
            if !valid_key(v) {
                return Err(ApiError::bad(
                    code::OUT_OF_RANGE,
                    k,
                    format!("field \"{k}\" must be 16 to 128 printable characters without ':' or spaces"),
                ));
            }
        }
        let inner = self.cp.lock();
        let mut rows = self.cp.s3.rows();
        let taken = rows.users.iter().any(|u| u.name == name);
        refuse_taken(taken, "an S3 user", name)?;
        if rows.users.iter().any(|u| u.access_key == access) {
            return Err(ApiError::conflict(
                code::DUPLICATE,
                "access_key",
                "this access key belongs to another user",
            ));
        }
        let row = S3UserRow {
            name: name.to_string(),
            access_key: access.to_string(),
            secret_key: secret.to_string(),
            comment: text(&m, "comment", "comment")?.unwrap_or("").to_string(),
        };
        inner.store.insert_s3_user(&row).map_err(db_err)?;
        rows.users.push(row.clone());
        self.cp.s3.rebuild_keys(&rows.users);
        Ok(Reply {
            status: 201,
            body: json!({"num_records": 1, "records": [
                {"name": row.name, "access_key": row.access_key, "secret_key": row.secret_key}
            ]}),
            location: Some(format!(
                "/api/protocols/s3/services/{}/users/{}",
                self.cp.s3.svm_uuid, row.name
            )),
        })
    }

    /// PATCH: `comment`; with `regenerate_keys` new keys are made and returned.
    pub fn patch_user(
        &self,
        svm_uuid: &str,
        name: &str,
        body: &[u8],
        regenerate_keys: bool,
    ) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let m = if body.iter().all(u8::is_ascii_whitespace) && regenerate_keys {
            Map::new()
        } else {
            super::super::model::parse_body(body)?
        };
        only(&m, "", &["comment"])?;
        let comment = text(&m, "comment", "comment")?;
        let inner = self.cp.lock();
        let mut rows = self.cp.s3.rows();
        let i = user_index(&rows.users, name)?;
        let mut row = rows.users[i].clone();
        if let Some(c) = comment {
            row.comment = c.to_string();
        }
        if regenerate_keys {
            let (a, s) = new_keys();
            row.access_key = a;
            row.secret_key = s;
        }
        inner.store.update_s3_user(&row).map_err(db_err)?;
        rows.users[i] = row.clone();
        self.cp.s3.rebuild_keys(&rows.users);
        Ok(Reply::ok(if regenerate_keys {
            json!({"num_records": 1, "records": [
                {"name": row.name, "access_key": row.access_key, "secret_key": row.secret_key}
            ]})
        } else {
            json!({})
        }))
    }

    pub fn delete_user(&self, svm_uuid: &str, name: &str) -> R<Reply> {
        check_svm(self.cp, svm_uuid)?;
        let inner = self.cp.lock();
        let mut rows = self.cp.s3.rows();
        let i = user_index(&rows.users, name)?;
        inner.store.delete_s3_user(name).map_err(db_err)?;
        rows.users.remove(i);
        self.cp.s3.rebuild_keys(&rows.users);
        Ok(Reply::ok(json!({})))
    }
}

/// Where the bucket `uuid` is in `buckets`, or the API's not-found error.
fn bucket_index(buckets: &[BucketRow], uuid: &str) -> R<usize> {
    buckets
        .iter()
        .position(|b| b.uuid == uuid)
        .ok_or_else(|| ApiError::not_found("uuid", format!("no bucket with uuid {uuid:?}")))
}

/// Where the user `name` is in `users`, or the API's not-found error.
fn user_index(users: &[S3UserRow], name: &str) -> R<usize> {
    users
        .iter()
        .position(|u| u.name == name)
        .ok_or_else(|| ApiError::not_found("name", format!("no S3 user named {name:?}")))
}

// ---- routes (wired into api::http) ----

/// A path under `/api/protocols/s3/services`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum S3Route {
    Services,
    Service(String),
    Users(String),
    User(String, String),
    Buckets(String),
    Bucket(String, String),
}

/// Match an (already trimmed) request path; segments are percent-decoded by `decode`.
pub fn route(p: &str, decode: impl Fn(&str) -> String) -> Option<S3Route> {
    let rest = p.strip_prefix("/api/protocols/s3/services")?;
    if rest.is_empty() {
        return Some(S3Route::Services);
    }
    let segs: Vec<String> = rest.strip_prefix('/')?.split('/').map(&decode).collect();
    if segs.iter().any(String::is_empty) {
        return None;
    }
    match segs.as_slice() {
        [svm] => Some(S3Route::Service(svm.clone())),
        [svm, c] if c == "users" => Some(S3Route::Users(svm.clone())),
        [svm, c, n] if c == "users" => Some(S3Route::User(svm.clone(), n.clone())),
        [svm, c] if c == "buckets" => Some(S3Route::Buckets(svm.clone())),
        [svm, c, u] if c == "buckets" => Some(S3Route::Bucket(svm.clone(), u.clone())),
        _ => None,
    }
}

impl S3Route {
    /// The methods a path takes (in the router's vocabulary).
    pub fn allowed(&self) -> &'static str {
        match self {
            S3Route::Services | S3Route::Service(_) => "GET",
            S3Route::Users(_) | S3Route::Buckets(_) => "GET, POST",
            S3Route::User(..) | S3Route::Bucket(..) => "GET, PATCH, DELETE",
        }
    }
}

impl S3<'_> {
    /// Run one S3 REST request (the method is already checked against `allowed`).
    pub fn dispatch(
        &self,
        method: &hyper::Method,
        route: S3Route,
        body: &[u8],
        q: &Query,
    ) -> R<Reply> {
        use hyper::Method as M;
        match (method, route) {
            (_, S3Route::Services) => self.services(q),
            (_, S3Route::Service(s)) => self.service(&s, q),
            (&M::POST, S3Route::Users(s)) => self.create_user(&s, body),
            (_, S3Route::Users(s)) => self.list_users(&s, q),
            (&M::PATCH, S3Route::User(s, n)) => {
                let regen = q
                    .filters
                    .iter()
                    .any(|(k, v)| k == "regenerate_keys" && v == "true");
                self.patch_user(&s, &n, body, regen)
            }
            (&M::DELETE, S3Route::User(s, n)) => self.delete_user(&s, &n),
            (_, S3Route::User(s, n)) => self.get_user(&s, &n, q),
            (&M::POST, S3Route::Buckets(s)) => self.post_bucket(&s, body),
            (_, S3Route::Buckets(s)) => self.list_buckets(&s, q),
            (&M::PATCH, S3Route::Bucket(s, u)) => self.patch_bucket(&s, &u, body),
            (&M::DELETE, S3Route::Bucket(s, u)) => self.delete_bucket_api(&s, &u),
            (_, S3Route::Bucket(s, u)) => self.get_bucket(&s, &u, q),
        }
    }
}

#[cfg(test)]
mod route_tests {
    use super::*;

    #[test]
    fn routes() {
        let d = |s: &str| s.replace("%40", "@");
        assert_eq!(
            route("/api/protocols/s3/services", d),
            Some(S3Route::Services)
        );
        assert_eq!(
            route("/api/protocols/s3/services/U/users/a%40b", d),
            Some(S3Route::User("U".into(), "a@b".into()))
        );
        assert_eq!(
            route("/api/protocols/s3/services/U/buckets", d),
            Some(S3Route::Buckets("U".into()))
        );
        assert_eq!(route("/api/protocols/s3/services/U/nope", d), None);
        assert_eq!(route("/api/protocols/s3/services//users", d), None);
        assert_eq!(route("/api/protocols/s3/servicesX", d), None);
        assert_eq!(
            S3Route::Bucket("U".into(), "B".into()).allowed(),
            "GET, PATCH, DELETE"
        );
    }
}
