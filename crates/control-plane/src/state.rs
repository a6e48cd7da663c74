//! Durable control-plane state: policies, volumes and assignments in SQLite
//! (`DATA_DIR/state.db`, WAL, `synchronous=FULL`).
//!
//! Every write is one statement in its own transaction: when a method returns `Ok`, the
//! change is on disk and survives `kill -9` or a power cut. The rows are plain data; the
//! API layer validates before it writes and re-validates what it reads at startup.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

mod nfs;
mod s3;
mod san;
pub use nfs::ExportPolicyRow;
pub use s3::{BucketRow, S3UserRow};
pub use san::{IgroupRow, LunRow, MapRow};

/// A stored policy. `spec` is the policy's ONTAP JSON (`{"fixed": {...}}` or
/// `{"adaptive": {...}}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRow {
    pub uuid: String,
    pub name: String,
    pub svm_name: Option<String>,
    pub svm_uuid: Option<String>,
    pub builtin: bool,
    pub spec: String,
}

/// A stored volume and its policy assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeRow {
    pub uuid: String,
    pub name: String,
    pub size: u64,
    pub reserve_percent: u8,
    pub read_only: bool,
    pub comment: String,
    pub svm_name: Option<String>,
    pub svm_uuid: Option<String>,
    pub policy_uuid: Option<String>,
    /// A NAS volume's junction path (`None`: a block volume).
    pub nas_path: Option<String>,
    /// A NAS volume's export policy by name (`None`: `default`).
    pub export_policy: Option<String>,
}

pub type Result<T> = std::result::Result<T, rusqlite::Error>;

/// Every row `sql` (no parameters) selects, each made by `row`.
fn all_rows<T>(
    conn: &Connection,
    sql: &str,
    row: impl FnMut(&rusqlite::Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut st = conn.prepare(sql)?;
    let rows = st.query_map([], row)?;
    rows.collect()
}

/// The state database.
pub struct Store {
    conn: Connection,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS policies (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    svm_name TEXT,
    svm_uuid TEXT,
    builtin INTEGER NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS volumes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    reserve_percent INTEGER NOT NULL,
    read_only INTEGER NOT NULL,
    comment TEXT NOT NULL,
    svm_name TEXT,
    svm_uuid TEXT,
    policy_uuid TEXT REFERENCES policies(uuid)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

impl Store {
    /// Open (creating if missing) the database at `path`. Returns whether it was seeded
    /// before (`false`: a new database the caller should seed).
    pub fn open(path: &Path) -> Result<(Store, bool)> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(s3::SCHEMA)?;
        nfs::migrate(&conn)?;
        san::migrate(&conn)?;
        let seeded: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'seeded'", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok((Store { conn }, seeded.is_some()))
    }

    /// Seed a new database in one transaction (all or nothing).
    pub fn seed(&mut self, policies: &[PolicyRow], volumes: &[VolumeRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for p in policies {
            insert_policy(&tx, p)?;
        }
        for v in volumes {
            insert_volume(&tx, v)?;
        }
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('seeded', '1')",
            [],
        )?;
        tx.commit()
    }

    /// The fingerprint of the config declaration last applied under `key`.
    pub fn applied(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
    }

    /// Record `fp` as the fingerprint of the config declaration applied under `key`.
    pub fn set_applied(&self, key: &str, fp: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            params![key, fp],
        )?;
        Ok(())
    }

    /// Forget the fingerprint recorded under `key` (the declaration counts as never applied).
    pub fn forget_applied(&self, key: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM meta WHERE key = ?1", [key])?;
        Ok(())
    }

    /// Apply config declarations in one transaction: upsert the given rows (an existing
    /// row with the same uuid is updated, keeping its uuid) and record the fingerprints.
    pub fn apply_declarations(
        &mut self,
        policies: &[(PolicyRow, bool)],
        volumes: &[(VolumeRow, bool)],
        fingerprints: &[(String, String)],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        for (p, exists) in policies {
            if *exists {
                update_policy(&tx, p)?;
            } else {
                insert_policy(&tx, p)?;
            }
        }
        for (v, exists) in volumes {
            if *exists {
                update_volume(&tx, v)?;
            } else {
                insert_volume(&tx, v)?;
            }
        }
        for (k, fp) in fingerprints {
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                params![k, fp],
            )?;
        }
        tx.commit()
    }

    pub fn policies(&self) -> Result<Vec<PolicyRow>> {
        all_rows(
            &self.conn,
            "SELECT uuid, name, svm_name, svm_uuid, builtin, spec FROM policies ORDER BY seq",
            |r| {
                Ok(PolicyRow {
                    uuid: r.get(0)?,
                    name: r.get(1)?,
                    svm_name: r.get(2)?,
                    svm_uuid: r.get(3)?,
                    builtin: r.get(4)?,
                    spec: r.get(5)?,
                })
            },
        )
    }

    pub fn volumes(&self) -> Result<Vec<VolumeRow>> {
        all_rows(
            &self.conn,
            "SELECT uuid, name, size, reserve_percent, read_only, comment, svm_name, svm_uuid, \
             policy_uuid, nas_path, export_policy FROM volumes ORDER BY seq",
            |r| {
                Ok(VolumeRow {
                    uuid: r.get(0)?,
                    name: r.get(1)?,
                    size: r.get::<_, i64>(2)? as u64,
                    reserve_percent: r.get::<_, i64>(3)? as u8,
                    read_only: r.get(4)?,
                    comment: r.get(5)?,
                    svm_name: r.get(6)?,
                    svm_uuid: r.get(7)?,
                    policy_uuid: r.get(8)?,
                    nas_path: r.get(9)?,
                    export_policy: r.get(10)?,
                })
            },
        )
    }

    pub fn insert_policy(&self, p: &PolicyRow) -> Result<()> {
        insert_policy(&self.conn, p)
    }

    pub fn insert_volume(&self, v: &VolumeRow) -> Result<()> {
        insert_volume(&self.conn, v)
    }

    pub fn delete_volume(&self, uuid: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM volumes WHERE uuid = ?1", params![uuid])?;
        Ok(())
    }

    /// Update volumes (one, or several by query) in one transaction: all or nothing.
    pub fn update_volumes(&mut self, rows: &[VolumeRow]) -> Result<()> {
        self.each_in_transaction(rows, update_volume)
    }

    /// Delete volumes (one, or several by query) in one transaction.
    pub fn delete_volumes(&mut self, uuids: &[String]) -> Result<()> {
        self.each_in_transaction(uuids, |c, u| {
            c.execute("DELETE FROM volumes WHERE uuid = ?1", params![u])
                .map(drop)
        })
    }

    /// Update policies (one, or several by query) in one transaction.
    pub fn update_policies(&mut self, rows: &[PolicyRow]) -> Result<()> {
        self.each_in_transaction(rows, update_policy)
    }

    /// Delete policies (one, or several by query) in one transaction.
    pub fn delete_policies(&mut self, uuids: &[String]) -> Result<()> {
        self.each_in_transaction(uuids, |c, u| {
            c.execute("DELETE FROM policies WHERE uuid = ?1", params![u])
                .map(drop)
        })
    }

    /// `apply` to every item in one transaction: all or nothing.
    fn each_in_transaction<T>(
        &mut self,
        items: &[T],
        apply: impl Fn(&Connection, &T) -> Result<()>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        for item in items {
            apply(&tx, item)?;
        }
        tx.commit()
    }
}

fn update_policy(c: &Connection, p: &PolicyRow) -> Result<()> {
    c.execute(
        "UPDATE policies SET name = ?2, svm_name = ?3, svm_uuid = ?4, spec = ?5 WHERE uuid = ?1",
        params![p.uuid, p.name, p.svm_name, p.svm_uuid, p.spec],
    )?;
    Ok(())
}

fn update_volume(c: &Connection, v: &VolumeRow) -> Result<()> {
    write_volume(
        c,
        "UPDATE volumes SET name = ?2, size = ?3, reserve_percent = ?4, read_only = ?5, \
         comment = ?6, svm_name = ?7, svm_uuid = ?8, policy_uuid = ?9, nas_path = ?10, \
         export_policy = ?11 WHERE uuid = ?1",
        v,
    )
}

fn insert_policy(c: &Connection, p: &PolicyRow) -> Result<()> {
    c.execute(
        "INSERT INTO policies (uuid, name, svm_name, svm_uuid, builtin, spec) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![p.uuid, p.name, p.svm_name, p.svm_uuid, p.builtin, p.spec],
    )?;
    Ok(())
}

fn insert_volume(c: &Connection, v: &VolumeRow) -> Result<()> {
    write_volume(
        c,
        "INSERT INTO volumes (uuid, name, size, reserve_percent, read_only, comment, svm_name, \
         svm_uuid, policy_uuid, nas_path, export_policy) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        v,
    )
}

/// Run `sql` (an insert or update) with the volume's columns as ?1..?11, in the table's
/// order.
fn write_volume(c: &Connection, sql: &str, v: &VolumeRow) -> Result<()> {
    c.execute(
        sql,
        params![
            v.uuid,
            v.name,
            v.size as i64,
            v.reserve_percent as i64,
            v.read_only,
            v.comment,
            v.svm_name,
            v.svm_uuid,
            v.policy_uuid,
            v.nas_path,
            v.export_policy
        ],
    )?;
    Ok(())
}

/// A random (version 4) UUID, lower-case hyphenated (the uuid crate, from the OS's
/// random source).
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_reopen() {
        let dir = test_support::TestDir::new("state");
        let path = dir.join("state.db");
        let p = PolicyRow {
            uuid: new_uuid(),
            name: "p".into(),
            svm_name: Some("svm".into()),
            svm_uuid: None,
            builtin: false,
            spec: "{}".into(),
        };
        let v = VolumeRow {
            uuid: new_uuid(),
            name: "v".into(),
            size: 1 << 40,
            reserve_percent: 5,
            read_only: false,
            comment: String::new(),
            svm_name: None,
            svm_uuid: None,
            policy_uuid: Some(p.uuid.clone()),
            nas_path: None,
            export_policy: None,
        };
        {
            let (mut s, seeded) = Store::open(&path).unwrap();
            assert!(!seeded);
            s.seed(std::slice::from_ref(&p), &[]).unwrap();
            s.insert_volume(&v).unwrap();
            // A volume cannot point at a missing policy.
            let mut bad = v.clone();
            bad.uuid = new_uuid();
            bad.name = "w".into();
            bad.policy_uuid = Some("nope".into());
            assert!(s.insert_volume(&bad).is_err());
        }
        let (s, seeded) = Store::open(&path).unwrap();
        assert!(seeded);
        assert_eq!(s.policies().unwrap(), vec![p]);
        assert_eq!(s.volumes().unwrap(), vec![v]);
    }

    #[test]
    fn uuids_look_like_uuids() {
        let u = new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, new_uuid());
    }
}
