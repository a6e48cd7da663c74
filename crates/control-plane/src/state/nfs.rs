//! Durable NAS state: the volumes' junction paths and export policies (columns added to
//! `volumes` in place, so a database written before NAS volumes existed opens as it is),
//! and the export policies themselves (ONTAP's `/api/protocols/nfs/export-policies`: a
//! numeric id, a name, the rules as ONTAP's JSON).

use rusqlite::{params, Connection};

use super::{Result, Store};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS nfs_export_policies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    svm_name TEXT,
    svm_uuid TEXT,
    rules TEXT NOT NULL
);
";

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
    c.execute_batch(SCHEMA)
}

impl Store {
    pub fn export_policies(&self) -> Result<Vec<ExportPolicyRow>> {
        let mut st = self.conn.prepare(
            "SELECT id, name, svm_name, svm_uuid, rules FROM nfs_export_policies ORDER BY id",
        )?;
        let rows = st.query_map([], |r| {
            Ok(ExportPolicyRow {
                id: r.get::<_, i64>(0)? as u64,
                name: r.get(1)?,
                svm_name: r.get(2)?,
                svm_uuid: r.get(3)?,
                rules: r.get(4)?,
            })
        })?;
        rows.collect()
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
}
