//! Durable S3 state: users (access and secret keys) and buckets (with their QoS policy),
//! in the same database and with the same rule as the rest: one statement per change, a
//! returned `Ok` is on disk. Secret keys are stored as given: AWS Signature V4 needs the
//! secret itself on the server (HMAC), so `state.db` must stay private to the node.

use rusqlite::{params, OptionalExtension};

use super::{all_rows, Result, Store};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS s3_users (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    access_key TEXT NOT NULL UNIQUE,
    secret_key TEXT NOT NULL,
    comment TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS s3_buckets (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    comment TEXT NOT NULL,
    policy_uuid TEXT REFERENCES policies(uuid),
    created_ns INTEGER NOT NULL
);
";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3UserRow {
    pub name: String,
    pub access_key: String,
    pub secret_key: String,
    pub comment: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketRow {
    pub uuid: String,
    pub name: String,
    pub size: u64,
    pub comment: String,
    pub policy_uuid: Option<String>,
    /// Creation time, ns since the Unix epoch (S3's CreationDate).
    pub created_ns: u64,
}

impl Store {
    /// A value in the meta table, created with `init` the first time it is asked for.
    pub fn meta_or_init(&self, key: &str, init: impl FnOnce() -> String) -> Result<String> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?;
        match v {
            Some(v) => Ok(v),
            None => {
                let v = init();
                self.conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                    params![key, v],
                )?;
                Ok(v)
            }
        }
    }

    pub fn s3_users(&self) -> Result<Vec<S3UserRow>> {
        all_rows(
            &self.conn,
            "SELECT name, access_key, secret_key, comment FROM s3_users ORDER BY seq",
            |r| {
                Ok(S3UserRow {
                    name: r.get(0)?,
                    access_key: r.get(1)?,
                    secret_key: r.get(2)?,
                    comment: r.get(3)?,
                })
            },
        )
    }

    pub fn insert_s3_user(&self, u: &S3UserRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO s3_users (name, access_key, secret_key, comment) VALUES (?1, ?2, ?3, ?4)",
            params![u.name, u.access_key, u.secret_key, u.comment],
        )?;
        Ok(())
    }

    pub fn update_s3_user(&self, u: &S3UserRow) -> Result<()> {
        self.conn.execute(
            "UPDATE s3_users SET access_key = ?2, secret_key = ?3, comment = ?4 WHERE name = ?1",
            params![u.name, u.access_key, u.secret_key, u.comment],
        )?;
        Ok(())
    }

    pub fn delete_s3_user(&self, name: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM s3_users WHERE name = ?1", [name])?;
        Ok(())
    }

    pub fn buckets(&self) -> Result<Vec<BucketRow>> {
        all_rows(&self.conn, "SELECT uuid, name, size, comment, policy_uuid, created_ns FROM s3_buckets ORDER BY seq", |r| {
            Ok(BucketRow {
                uuid: r.get(0)?,
                name: r.get(1)?,
                size: r.get::<_, i64>(2)? as u64,
                comment: r.get(3)?,
                policy_uuid: r.get(4)?,
                created_ns: r.get::<_, i64>(5)? as u64,
            })
        })
    }

    pub fn insert_bucket(&self, b: &BucketRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO s3_buckets (uuid, name, size, comment, policy_uuid, created_ns) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                b.uuid,
                b.name,
                b.size as i64,
                b.comment,
                b.policy_uuid,
                b.created_ns as i64
            ],
        )?;
        Ok(())
    }

    pub fn update_bucket(&self, b: &BucketRow) -> Result<()> {
        self.conn.execute(
            "UPDATE s3_buckets SET size = ?2, comment = ?3, policy_uuid = ?4 WHERE uuid = ?1",
            params![b.uuid, b.size as i64, b.comment, b.policy_uuid],
        )?;
        Ok(())
    }

    pub fn delete_bucket(&self, uuid: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM s3_buckets WHERE uuid = ?1", [uuid])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{new_uuid, PolicyRow};
    use super::*;

    #[test]
    fn users_and_buckets_round_trip() {
        let dir = test_support::TestDir::new("state-s3");
        let path = dir.join("state.db");
        let p = PolicyRow {
            uuid: new_uuid(),
            name: "p".into(),
            svm_name: None,
            svm_uuid: None,
            builtin: false,
            spec: "{}".into(),
        };
        let u = S3UserRow {
            name: "alice".into(),
            access_key: "AK".into(),
            secret_key: "SK".into(),
            comment: String::new(),
        };
        let b = BucketRow {
            uuid: new_uuid(),
            name: "b1".into(),
            size: 1 << 30,
            comment: "c".into(),
            policy_uuid: Some(p.uuid.clone()),
            created_ns: 42,
        };
        let svm;
        {
            let (s, _) = Store::open(&path).unwrap();
            s.insert_policy(&p).unwrap();
            s.insert_s3_user(&u).unwrap();
            s.insert_bucket(&b).unwrap();
            // Unique names, existing policies only.
            assert!(s.insert_s3_user(&u).is_err());
            let mut bad = b.clone();
            bad.uuid = new_uuid();
            bad.name = "b2".into();
            bad.policy_uuid = Some("nope".into());
            assert!(s.insert_bucket(&bad).is_err());
            svm = s.meta_or_init("s3_svm_uuid", new_uuid).unwrap();
        }
        let (s, _) = Store::open(&path).unwrap();
        assert_eq!(s.s3_users().unwrap(), vec![u.clone()]);
        assert_eq!(s.buckets().unwrap(), vec![b.clone()]);
        assert_eq!(s.meta_or_init("s3_svm_uuid", new_uuid).unwrap(), svm);
        let mut u2 = u;
        u2.secret_key = "SK2".into();
        s.update_s3_user(&u2).unwrap();
        assert_eq!(s.s3_users().unwrap()[0].secret_key, "SK2");
        s.delete_s3_user("alice").unwrap();
        s.delete_bucket(&b.uuid).unwrap();
        assert!(s.s3_users().unwrap().is_empty() && s.buckets().unwrap().is_empty());
    }
}
