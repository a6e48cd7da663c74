//! Durable NAS state: the volumes' junction paths and export policies (columns added to
//! `volumes` in place, so a database written before NAS volumes existed opens as it is),
//! the export policies themselves (ONTAP's `/api/protocols/nfs/export-policies`: a
//! numeric id, a name, the rules as ONTAP's JSON), and the export ids NFS file handles
//! carry (`nfs_exports`: assigned once per NAS volume from a counter, never derived from a
//! name, never reused: a row outlives its volume).

use rusqlite::{params, Connection};

use super::{all_rows, Result, Store};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS nfs_export_policies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    svm_name TEXT,
    svm_uuid TEXT,
    rules TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS nfs_exports (
    export_id INTEGER PRIMARY KEY,
    volume_uuid TEXT NOT NULL UNIQUE
);
";

/// `meta` key: the next export id to try.
const NEXT_EXPORT_ID: &str = "nfs_export_id_next";
/// `meta` key present once every NAS volume has a stored export id.
const EXPORT_IDS_STORED: &str = "nfs_export_ids";

/// The export id a volume's handles carried before ids were stored: a 32-bit FNV-1a hash
/// of its junction path. Only used to keep a volume that existed then under the id its
/// clients' handles already carry (when no other volume took it first).
fn legacy_export_id(path: &str) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for b in path.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    h
}

/// A stored export policy; `rules` is the JSON array of ONTAP's rule objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPolicyRow {
    pub id: u64,
    pub name: String,
    pub svm_name: Option<String>,
    pub svm_uuid: Option<String>,
    pub rules: String,
}

/// Bring a database of any earlier version up to date: the `volumes` table's NAS columns
/// (each junction path unique), and the export policies' table.
pub(super) fn migrate(c: &Connection) -> Result<()> {
    let mut st = c.prepare("SELECT name FROM pragma_table_info('volumes')")?;
    let cols: Vec<String> = st.query_map([], |r| r.get(0))?.collect::<Result<_>>()?;
    for (col, ty) in [("nas_path", "TEXT"), ("export_policy", "TEXT")] {
        if !cols.iter().any(|c| c == col) {
            c.execute_batch(&format!("ALTER TABLE volumes ADD COLUMN {col} {ty}"))?;
        }
    }
    c.execute_batch("CREATE UNIQUE INDEX IF NOT EXISTS volumes_nas_path ON volumes(nas_path);")?;
    let had_ids: i64 = c.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'nfs_exports'",
        [],
        |r| r.get(0),
    )?;
    c.execute_batch(SCHEMA)?;
    let nas: i64 = c.query_row(
        "SELECT COUNT(*) FROM volumes WHERE nas_path IS NOT NULL",
        [],
        |r| r.get(0),
    )?;
    if had_ids == 0 && nas == 0 {
        // No NAS volume from before stored ids: every id comes from the counter.
        c.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, '1')",
            params![EXPORT_IDS_STORED],
        )?;
    }
    Ok(())
}

impl Store {
    /// The export id of NAS volume `uuid`, assigned now if it has none: the next unused
    /// id of the counter (ids of deleted volumes stay used). `path`: its junction path, for
    /// a volume from before ids were stored (it keeps its old handles' id if free).
    pub fn export_id(&self, uuid: &str, path: &str) -> Result<u32> {
        use rusqlite::OptionalExtension;
        let c = &self.conn;
        let have: Option<i64> = c
            .query_row(
                "SELECT export_id FROM nfs_exports WHERE volume_uuid = ?1",
                [uuid],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = have {
            return Ok(id as u32);
        }
        let taken = |id: i64| -> Result<bool> {
            c.query_row(
                "SELECT COUNT(*) FROM nfs_exports WHERE export_id = ?1",
                [id],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
        };
        let pre_ids = self.applied(EXPORT_IDS_STORED)?.is_none();
        let legacy = legacy_export_id(path) as i64;
        let id = if pre_ids && legacy != 0 && !taken(legacy)? {
            legacy
        } else {
            let mut next: i64 = self
                .applied(NEXT_EXPORT_ID)?
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            while taken(next)? {
                next += 1;
            }
            if next > u32::MAX as i64 {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "NFS export ids are exhausted (2^32 - 1 assigned)".into(),
                ));
            }
            c.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                params![NEXT_EXPORT_ID, (next + 1).to_string()],
            )?;
            next
        };
        c.execute(
            "INSERT INTO nfs_exports (export_id, volume_uuid) VALUES (?1, ?2)",
            params![id, uuid],
        )?;
        Ok(id as u32)
    }

    /// Every NAS volume has its export id stored: from now on new ones get the counter's.
    pub fn export_ids_stored(&self) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, '1')",
            params![EXPORT_IDS_STORED],
        )?;
        Ok(())
    }

    pub fn export_policies(&self) -> Result<Vec<ExportPolicyRow>> {
        all_rows(
            &self.conn,
            "SELECT id, name, svm_name, svm_uuid, rules FROM nfs_export_policies ORDER BY id",
            |r| {
                Ok(ExportPolicyRow {
                    id: r.get::<_, i64>(0)? as u64,
                    name: r.get(1)?,
                    svm_name: r.get(2)?,
                    svm_uuid: r.get(3)?,
                    rules: r.get(4)?,
                })
            },
        )
    }

    /// Insert a policy; returns its id.
    pub fn insert_export_policy(&self, p: &ExportPolicyRow) -> Result<u64> {
        self.conn.execute(
            "INSERT INTO nfs_export_policies (name, svm_name, svm_uuid, rules) \
             VALUES (?1, ?2, ?3, ?4)",
            params![p.name, p.svm_name, p.svm_uuid, p.rules],
        )?;
        Ok(self.conn.last_insert_rowid() as u64)
    }

    pub fn update_export_policy(&self, p: &ExportPolicyRow) -> Result<()> {
        self.conn.execute(
            "UPDATE nfs_export_policies SET name = ?2, svm_name = ?3, svm_uuid = ?4, \
             rules = ?5 WHERE id = ?1",
            params![p.id as i64, p.name, p.svm_name, p.svm_uuid, p.rules],
        )?;
        Ok(())
    }

    /// Rename a policy and every volume's reference to it, in one transaction.
    pub fn rename_export_policy(&mut self, p: &ExportPolicyRow, old: &str) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE nfs_export_policies SET name = ?2, svm_name = ?3, svm_uuid = ?4, \
             rules = ?5 WHERE id = ?1",
            params![p.id as i64, p.name, p.svm_name, p.svm_uuid, p.rules],
        )?;
        tx.execute(
            "UPDATE volumes SET export_policy = ?2 WHERE export_policy = ?1",
            params![old, p.name],
        )?;
        tx.commit()
    }

    pub fn delete_export_policy(&self, id: u64) -> Result<()> {
        self.conn.execute(
            "DELETE FROM nfs_export_policies WHERE id = ?1",
            params![id as i64],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_from_before_nas_volumes_opens_and_gains_the_columns() {
        let dir = test_support::TestDir::new("state-nfs");
        let path = dir.join("state.db");
        {
            // The volumes table as it was before NAS volumes.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE volumes (seq INTEGER PRIMARY KEY AUTOINCREMENT, uuid TEXT NOT NULL UNIQUE, \
                 name TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, reserve_percent INTEGER NOT NULL, \
                 read_only INTEGER NOT NULL, comment TEXT NOT NULL, svm_name TEXT, svm_uuid TEXT, \
                 policy_uuid TEXT);
                 INSERT INTO volumes (uuid, name, size, reserve_percent, read_only, comment) \
                 VALUES ('u1', 'old', 1024, 5, 0, '');",
            )
            .unwrap();
        }
        let (s, _) = Store::open(&path).unwrap();
        let v = s.volumes().unwrap();
        assert_eq!((v[0].name.as_str(), v[0].nas_path.clone()), ("old", None));
        let id = s
            .insert_export_policy(&ExportPolicyRow {
                id: 0,
                name: "k8s".into(),
                svm_name: None,
                svm_uuid: None,
                rules: "[]".into(),
            })
            .unwrap();
        assert_eq!(s.export_policies().unwrap()[0].id, id);
        drop(s);
        // Opening again changes nothing.
        let (s, _) = Store::open(&path).unwrap();
        assert_eq!(s.export_policies().unwrap().len(), 1);
    }

    #[test]
    fn export_ids_are_stored_never_derived_from_names_never_reused() {
        let dir = test_support::TestDir::new("state-export-ids");
        let (s, _) = Store::open(&dir.join("state.db")).unwrap();
        assert!(
            s.applied(EXPORT_IDS_STORED).unwrap().is_some(),
            "a new database"
        );
        // As a database from before stored ids with NAS volumes:
        s.conn
            .execute("DELETE FROM meta WHERE key = ?1", [EXPORT_IDS_STORED])
            .unwrap();
        // Two junction paths whose old 32-bit hashes collide (the pair): a volume
        // from before stored ids keeps its hash, the second gets the counter's.
        assert_eq!(
            legacy_export_id("/vol352449"),
            legacy_export_id("/vol1219916")
        );
        let a = s.export_id("ua", "/vol352449").unwrap();
        let b = s.export_id("ub", "/vol1219916").unwrap();
        assert_eq!(a, legacy_export_id("/vol352449"));
        assert_ne!(a, b);
        assert_eq!(s.export_id("ua", "/vol352449").unwrap(), a, "stable");
        s.export_ids_stored().unwrap();
        // New volumes: the counter, whatever their names; a deleted volume's id stays taken.
        let c = s.export_id("uc", "/vol352449").unwrap();
        assert!(c != a && c != b);
        s.conn
            .execute("DELETE FROM volumes WHERE uuid = 'uc'", [])
            .unwrap();
        let d = s.export_id("ud", "/x").unwrap();
        assert!(![a, b, c].contains(&d), "{d}");
        drop(s);
        let (s, _) = Store::open(&dir.join("state.db")).unwrap();
        assert_eq!(
            s.export_id("ub", "/vol1219916").unwrap(),
            b,
            "survives a reopen"
        );
        assert!(s.export_id("ue", "/y").unwrap() > d);
    }
}
