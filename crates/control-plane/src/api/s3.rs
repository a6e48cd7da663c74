//! S3 on the control plane, in ONTAP's shapes: the node's one S3 service
//! (`/api/protocols/s3/services/{svm.uuid}`), its users (access and secret keys) and its
//! buckets (with `qos_policy`: a bucket is held to a QoS policy group like a volume).
//!
//! The same catalog serves the S3 endpoint (the `s3-server` crate): secret keys for
//! Signature V4, buckets created and deleted with S3's own CreateBucket/DeleteBucket.
//! Every change follows the control plane's rule: validate, commit to `state.db`, then
//! change the live node.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::model::{code, ApiError, PolicyRef};

mod rest;
use super::{db_err, ControlPlane, PolicyRec};
use crate::bucket::{Bucket, DEFAULT_BUCKET_SIZE};
use crate::node::Node;
use crate::state::{new_uuid, BucketRow, S3UserRow, Store};
pub use rest::{route, S3Route};

/// The S3 part of the control plane's state.
pub(super) struct S3State {
    svm_uuid: String,
    svm_name: String,
    rows: Mutex<Rows>,
    /// access key → (secret key, user name): read on every S3 request.
    keys: RwLock<HashMap<String, (String, String)>>,
}

struct Rows {
    users: Vec<S3UserRow>,
    buckets: Vec<BucketRow>,
}

pub use crate::catalog::BucketError;

impl From<BucketError> for ApiError {
    fn from(e: BucketError) -> ApiError {
        let m = e.to_string();
        match e {
            BucketError::Exists(_) => ApiError::conflict(code::DUPLICATE, "name", m),
            BucketError::NotFound(_) => ApiError::not_found("uuid", m),
            BucketError::NotEmpty(_) => ApiError::conflict(code::IN_USE, "uuid", m),
            BucketError::Invalid(_) => ApiError::bad(code::OUT_OF_RANGE, "name", m),
            BucketError::Internal(_) => ApiError::internal(m),
        }
    }
}

/// S3's bucket naming rules (3-63 of a-z 0-9 . -, starting and ending with a letter or
/// digit, not shaped like an IP address).
pub fn valid_bucket_name(n: &str) -> bool {
    let b = n.as_bytes();
    (3..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'.' || *c == b'-')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && !n.contains("..")
        && n.parse::<std::net::Ipv4Addr>().is_err()
}

/// ONTAP's S3 user names: 1-64 of 0-9 A-Z a-z _ + = , . @ -.
fn valid_user_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_+=,.@-".contains(&c))
}

fn valid_key(k: &str) -> bool {
    (16..=128).contains(&k.len()) && k.bytes().all(|c| c.is_ascii_graphic() && c != b':')
}

fn random_token(len: usize, alphabet: &[u8]) -> String {
    let mut out = String::with_capacity(len);
    while out.len() < len {
        let mut raw = [0u8; 64];
        let ok = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut raw))
            .is_ok();
        if !ok {
            // new_uuid has its own fallback; use its bytes.
            let u = new_uuid().replace('-', "");
            raw[..32].copy_from_slice(&u.as_bytes()[..32]);
        }
        for x in raw {
            // Rejection sampling keeps the distribution uniform.
            let lim = 256 - 256 % alphabet.len();
            if (x as usize) < lim && out.len() < len {
                out.push(alphabet[x as usize % alphabet.len()] as char);
            }
        }
    }
    out
}

fn new_keys() -> (String, String) {
    (
        random_token(20, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        random_token(
            40,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        ),
    )
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl S3State {
    /// Load users and buckets from the database and open every bucket on the node.
    pub(super) fn load(
        store: &Store,
        node: &Arc<Node>,
        policies: &[PolicyRec],
        cfg_svm: Option<&str>,
    ) -> Result<S3State, String> {
        let svm_name = store
            .meta_or_init("s3_svm_name", || {
                cfg_svm.unwrap_or(super::svms::DEFAULT_SVM).to_string()
            })
            .map_err(|e| e.to_string())?;
        // The S3 service is on that SVM, with the uuid `/api/svm/svms` reports for it.
        let svm_uuid = super::svms::derived_uuid(&svm_name);
        let users = store.s3_users().map_err(|e| e.to_string())?;
        let buckets = store.buckets().map_err(|e| e.to_string())?;
        for b in &buckets {
            let policy = super::policies::name_in(policies, &b.policy_uuid);
            node.open_bucket(&b.name, &b.uuid, b.size, policy)
                .map_err(|e| e.to_string())?;
        }
        let keys = users
            .iter()
            .map(|u| (u.access_key.clone(), (u.secret_key.clone(), u.name.clone())))
            .collect();
        Ok(S3State {
            svm_uuid,
            svm_name,
            rows: Mutex::new(Rows { users, buckets }),
            keys: RwLock::new(keys),
        })
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, Rows> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn rebuild_keys(&self, users: &[S3UserRow]) {
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = users
            .iter()
            .map(|u| (u.access_key.clone(), (u.secret_key.clone(), u.name.clone())))
            .collect();
    }

    /// Names of the policies buckets use (for refusing to delete them).
    pub(super) fn buckets_using(&self, policy_uuid: &str) -> Vec<String> {
        self.rows()
            .buckets
            .iter()
            .filter(|b| b.policy_uuid.as_deref() == Some(policy_uuid))
            .map(|b| b.name.clone())
            .collect()
    }
}

// ---- the catalog, as the S3 endpoint uses it ----

impl crate::catalog::BucketCatalog for ControlPlane {
    fn node(&self) -> &Arc<Node> {
        &self.node
    }

    fn secret(&self, access_key: &str) -> Option<(String, String)> {
        self.s3().secret(access_key)
    }

    fn buckets(&self) -> Vec<(String, u64)> {
        self.s3().buckets()
    }

    fn create_bucket(&self, name: &str) -> Result<(), BucketError> {
        self.s3()
            .create_bucket(name, None, None, "")
            .map(|_| ())
            .map_err(|e| match e.status {
                409 => BucketError::Exists(name.to_string()),
                400 => BucketError::Invalid(e.message),
                _ => BucketError::Internal(e.message),
            })
    }

    fn delete_bucket(&self, name: &str) -> Result<(), BucketError> {
        self.s3().delete_bucket(name)
    }
}

/// The node's S3 service (`/api/protocols/s3/services`): its users and buckets, and the
/// catalog the S3 endpoint reads; one resource of the control plane
/// ([`ControlPlane::s3`]).
pub struct S3<'a> {
    cp: &'a ControlPlane,
}

impl ControlPlane {
    /// The S3 service.
    pub fn s3(&self) -> S3<'_> {
        S3 { cp: self }
    }
}

impl S3<'_> {
    /// The secret key and user name of an access key (Signature V4 verification).
    pub fn secret(&self, access_key: &str) -> Option<(String, String)> {
        self.cp
            .s3
            .keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(access_key)
            .cloned()
    }

    /// Buckets by name with their creation times (ns since the epoch), sorted by name.
    pub fn buckets(&self) -> Vec<(String, u64)> {
        let mut v: Vec<_> = self
            .cp
            .s3
            .rows()
            .buckets
            .iter()
            .map(|b| (b.name.clone(), b.created_ns))
            .collect();
        v.sort();
        v
    }

    /// Add (or update the keys of) user `name`: the `serve --s3-keys-file` bootstrap.
    pub fn ensure_user(&self, name: &str, access: &str, secret: &str) -> Result<(), String> {
        if !valid_user_name(name) {
            return Err(format!(
                "invalid S3 user name {name:?}: 1 to 64 of 0-9 A-Z a-z _ + = , . @ -"
            ));
        }
        if !valid_key(access) || !valid_key(secret) {
            return Err(format!(
                "S3 user {name:?}: access and secret keys must be 16 to 128 printable characters without ':' or spaces"
            ));
        }
        let inner = self.cp.lock();
        let mut rows = self.cp.s3.rows();
        if rows
            .users
            .iter()
            .any(|u| u.access_key == access && u.name != name)
        {
            return Err(format!(
                "access key of user {name:?} already belongs to another user"
            ));
        }
        let row = S3UserRow {
            name: name.to_string(),
            access_key: access.to_string(),
            secret_key: secret.to_string(),
            comment: String::new(),
        };
        match rows.users.iter().position(|u| u.name == name) {
            Some(i) => {
                if rows.users[i] != row {
                    let row = S3UserRow {
                        comment: rows.users[i].comment.clone(),
                        ..row
                    };
                    inner
                        .store
                        .update_s3_user(&row)
                        .map_err(|e| e.to_string())?;
                    rows.users[i] = row;
                }
            }
            None => {
                inner
                    .store
                    .insert_s3_user(&row)
                    .map_err(|e| e.to_string())?;
                rows.users.push(row);
            }
        }
        self.cp.s3.rebuild_keys(&rows.users);
        Ok(())
    }

    /// Create a bucket (S3 CreateBucket, or the REST API with its extra fields).
    pub fn create_bucket(
        &self,
        name: &str,
        size: Option<u64>,
        policy: Option<&PolicyRef>,
        comment: &str,
    ) -> Result<(Arc<Bucket>, BucketRow), ApiError> {
        if !valid_bucket_name(name) {
            return Err(BucketError::Invalid(format!(
                "invalid bucket name {name:?}: 3 to 63 of a-z 0-9 . - starting and ending with a letter or digit"
            ))
            .into());
        }
        let inner = self.cp.lock();
        let mut rows = self.cp.s3.rows();
        if rows.buckets.iter().any(|b| b.name == name) {
            return Err(BucketError::Exists(name.to_string()).into());
        }
        let policy_uuid = match policy {
            None => None,
            Some(r) => Some(super::policies::resolve(&inner, r)?),
        };
        // A directory of this name belongs to no bucket (a crash between a delete's
        // commit and its removal): clear it so the new bucket starts empty.
        let dir = self.cp.node.bucket_dir(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| BucketError::Internal(format!("{}: {e}", dir.display())))?;
        }
        let row = BucketRow {
            uuid: new_uuid(),
            name: name.to_string(),
            size: size.unwrap_or(DEFAULT_BUCKET_SIZE),
            comment: comment.to_string(),
            policy_uuid,
            created_ns: now_ns(),
        };
        inner.store.insert_bucket(&row).map_err(db_err)?;
        let pname = super::policies::name_of(&inner, &row.policy_uuid);
        let b = match self
            .cp
            .node
            .open_bucket(&row.name, &row.uuid, row.size, pname)
        {
            Ok(b) => b,
            Err(e) => {
                let _ = inner.store.delete_bucket(&row.uuid);
                return Err(BucketError::Internal(format!("creating the bucket: {e}")).into());
            }
        };
        rows.buckets.push(row.clone());
        Ok((b, row))
    }

    /// Delete an empty bucket (S3 DeleteBucket, or the REST API).
    pub fn delete_bucket(&self, name: &str) -> Result<(), BucketError> {
        let inner = self.cp.lock();
        let mut rows = self.cp.s3.rows();
        let i = rows
            .buckets
            .iter()
            .position(|b| b.name == name)
            .ok_or_else(|| BucketError::NotFound(name.to_string()))?;
        let b = self
            .cp
            .node
            .bucket(name)
            .ok_or_else(|| BucketError::NotFound(name.to_string()))?;
        // Closed under the store's commit lock: a PUT racing with this delete either
        // committed before (and the bucket is not empty) or fails; it is never
        // acknowledged into a bucket that is then removed.
        if !b.store.close_if_empty() {
            return Err(BucketError::NotEmpty(name.to_string()));
        }
        if let Err(e) = inner.store.delete_bucket(&rows.buckets[i].uuid) {
            b.store.reopen();
            return Err(BucketError::Internal(format!("state database: {e}")));
        }
        rows.buckets.remove(i);
        self.cp.node.remove_bucket(name);
        if let Err(e) = b.store.destroy() {
            tracing::warn!(
                bucket = name,
                "removing the deleted bucket's directory: {e}"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_follow_s3() {
        for ok in ["abc", "my-bucket.v2", "a1b", &"x".repeat(63)] {
            assert!(valid_bucket_name(ok), "{ok}");
        }
        for bad in [
            "ab",
            "Abc",
            "-abc",
            "abc-",
            "a..b",
            "192.168.1.1",
            "a_b",
            "../x",
            &"x".repeat(64),
        ] {
            assert!(!valid_bucket_name(bad), "{bad}");
        }
    }

    #[test]
    fn generated_keys_look_like_aws_keys() {
        let (a, s) = new_keys();
        assert_eq!(a.len(), 20);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
        assert_eq!(s.len(), 40);
        assert!(valid_key(&a) && valid_key(&s));
        assert_ne!(new_keys().1, s);
        assert!(valid_user_name("root") && !valid_user_name("a b") && !valid_user_name(""));
    }
}
