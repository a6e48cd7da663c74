//! Durable SAN state: ONTAP's LUNs (`san_luns`: a LUN is a block file of its own that
//! belongs to a volume), igroups (`san_igroups`, their initiators as a JSON array of
//! names) and LUN maps (`san_lun_maps`: one LUN number per igroup, unique in the
//! igroup). Foreign keys keep a LUN from outliving its volume and a map from outliving
//! its LUN or igroup.

use rusqlite::{params, Connection};

use super::{all_rows, Result, Store};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS san_luns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    volume_uuid TEXT NOT NULL REFERENCES volumes(uuid),
    size INTEGER NOT NULL,
    os_type TEXT NOT NULL,
    serial TEXT NOT NULL UNIQUE,
    policy_uuid TEXT REFERENCES policies(uuid),
    comment TEXT NOT NULL,
    svm_name TEXT,
    svm_uuid TEXT,
    UNIQUE (volume_uuid, name)
);
CREATE TABLE IF NOT EXISTS san_igroups (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    protocol TEXT NOT NULL,
    os_type TEXT NOT NULL,
    initiators TEXT NOT NULL,
    comment TEXT NOT NULL,
    svm_name TEXT,
    svm_uuid TEXT
);
CREATE TABLE IF NOT EXISTS san_lun_maps (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    lun_uuid TEXT NOT NULL REFERENCES san_luns(uuid),
    igroup_uuid TEXT NOT NULL REFERENCES san_igroups(uuid),
    number INTEGER NOT NULL,
    UNIQUE (lun_uuid, igroup_uuid),
    UNIQUE (igroup_uuid, number)
);
";

/// A stored LUN: `name` is its name inside its volume (the `LUN` of `/vol/VOL/LUN`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LunRow {
    pub uuid: String,
    pub name: String,
    pub volume_uuid: String,
    pub size: u64,
    pub os_type: String,
    pub serial: String,
    /// Its own QoS policy (`None`: its volume's).
    pub policy_uuid: Option<String>,
    pub comment: String,
    pub svm_name: Option<String>,
    pub svm_uuid: Option<String>,
}

/// A stored igroup; `initiators` are iSCSI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgroupRow {
    pub uuid: String,
    pub name: String,
    pub protocol: String,
    pub os_type: String,
    pub initiators: Vec<String>,
    pub comment: String,
    pub svm_name: Option<String>,
    pub svm_uuid: Option<String>,
}

/// A stored LUN map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRow {
    pub lun_uuid: String,
    pub igroup_uuid: String,
    pub number: u16,
}

fn initiators_text(list: &[String]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".into())
}

impl Store {
    pub fn luns(&self) -> Result<Vec<LunRow>> {
        all_rows(
            &self.conn,
            "SELECT uuid, name, volume_uuid, size, os_type, serial, policy_uuid, comment, \
             svm_name, svm_uuid FROM san_luns ORDER BY seq",
            |r| {
                Ok(LunRow {
                    uuid: r.get(0)?,
                    name: r.get(1)?,
                    volume_uuid: r.get(2)?,
                    size: r.get::<_, i64>(3)? as u64,
                    os_type: r.get(4)?,
                    serial: r.get(5)?,
                    policy_uuid: r.get(6)?,
                    comment: r.get(7)?,
                    svm_name: r.get(8)?,
                    svm_uuid: r.get(9)?,
                })
            },
        )
    }

    pub fn insert_lun(&self, l: &LunRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO san_luns (uuid, name, volume_uuid, size, os_type, serial, policy_uuid, \
             comment, svm_name, svm_uuid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                l.uuid,
                l.name,
                l.volume_uuid,
                l.size as i64,
                l.os_type,
                l.serial,
                l.policy_uuid,
                l.comment,
                l.svm_name,
                l.svm_uuid
            ],
        )?;
        Ok(())
    }

    pub fn update_lun(&self, l: &LunRow) -> Result<()> {
        self.conn.execute(
            "UPDATE san_luns SET size = ?2, os_type = ?3, policy_uuid = ?4, comment = ?5 \
             WHERE uuid = ?1",
            params![l.uuid, l.size as i64, l.os_type, l.policy_uuid, l.comment],
        )?;
        Ok(())
    }

    pub fn delete_lun(&self, uuid: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM san_luns WHERE uuid = ?1", params![uuid])?;
        Ok(())
    }

    pub fn igroups(&self) -> Result<Vec<IgroupRow>> {
        all_rows(
            &self.conn,
            "SELECT uuid, name, protocol, os_type, initiators, comment, svm_name, svm_uuid \
             FROM san_igroups ORDER BY seq",
            |r| {
                let text: String = r.get(4)?;
                let initiators = serde_json::from_str(&text).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        4,
                        rusqlite::types::Type::Text,
                        e.into(),
                    )
                })?;
                Ok(IgroupRow {
                    uuid: r.get(0)?,
                    name: r.get(1)?,
                    protocol: r.get(2)?,
                    os_type: r.get(3)?,
                    initiators,
                    comment: r.get(5)?,
                    svm_name: r.get(6)?,
                    svm_uuid: r.get(7)?,
                })
            },
        )
    }

    pub fn insert_igroup(&self, g: &IgroupRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO san_igroups (uuid, name, protocol, os_type, initiators, comment, \
             svm_name, svm_uuid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                g.uuid,
                g.name,
                g.protocol,
                g.os_type,
                initiators_text(&g.initiators),
                g.comment,
                g.svm_name,
                g.svm_uuid
            ],
        )?;
        Ok(())
    }

    pub fn update_igroup(&self, g: &IgroupRow) -> Result<()> {
        self.conn.execute(
            "UPDATE san_igroups SET name = ?2, os_type = ?3, initiators = ?4, comment = ?5 \
             WHERE uuid = ?1",
            params![
                g.uuid,
                g.name,
                g.os_type,
                initiators_text(&g.initiators),
                g.comment
            ],
        )?;
        Ok(())
    }

    pub fn delete_igroup(&self, uuid: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM san_igroups WHERE uuid = ?1", params![uuid])?;
        Ok(())
    }

    pub fn lun_maps(&self) -> Result<Vec<MapRow>> {
        all_rows(
            &self.conn,
            "SELECT lun_uuid, igroup_uuid, number FROM san_lun_maps ORDER BY seq",
            |r| {
                Ok(MapRow {
                    lun_uuid: r.get(0)?,
                    igroup_uuid: r.get(1)?,
                    number: r.get::<_, i64>(2)? as u16,
                })
            },
        )
    }

    pub fn insert_lun_map(&self, m: &MapRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO san_lun_maps (lun_uuid, igroup_uuid, number) VALUES (?1, ?2, ?3)",
            params![m.lun_uuid, m.igroup_uuid, m.number as i64],
        )?;
        Ok(())
    }

    pub fn delete_lun_map(&self, lun_uuid: &str, igroup_uuid: &str) -> Result<()> {
        self.conn.execute(
            "DELETE FROM san_lun_maps WHERE lun_uuid = ?1 AND igroup_uuid = ?2",
            params![lun_uuid, igroup_uuid],
        )?;
        Ok(())
    }
}

/// Create the SAN tables in a database of any earlier version.
pub(super) fn migrate(c: &Connection) -> Result<()> {
    c.execute_batch(SCHEMA)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{new_uuid, VolumeRow};

    #[test]
    fn luns_igroups_and_maps_round_trip_and_keep_their_references() {
        let dir = test_support::TestDir::new("state-san");
        let path = dir.join("state.db");
        let v = VolumeRow {
            uuid: new_uuid(),
            name: "db".into(),
            size: 1 << 30,
            reserve_percent: 5,
            read_only: false,
            comment: String::new(),
            svm_name: None,
            svm_uuid: None,
            policy_uuid: None,
            nas_path: None,
            export_policy: None,
        };
        let l = LunRow {
            uuid: new_uuid(),
            name: "lun1".into(),
            volume_uuid: v.uuid.clone(),
            size: 1 << 20,
            os_type: "linux".into(),
            serial: "wCVcX?Kz8sGa".into(),
            policy_uuid: None,
            comment: String::new(),
            svm_name: None,
            svm_uuid: None,
        };
        let g = IgroupRow {
            uuid: new_uuid(),
            name: "hosts".into(),
            protocol: "iscsi".into(),
            os_type: "linux".into(),
            initiators: vec!["iqn.2026-01.lab.x:a".into()],
            comment: String::new(),
            svm_name: None,
            svm_uuid: None,
        };
        let m = MapRow {
            lun_uuid: l.uuid.clone(),
            igroup_uuid: g.uuid.clone(),
            number: 7,
        };
        {
            let (s, _) = Store::open(&path).unwrap();
            s.insert_volume(&v).unwrap();
            s.insert_lun(&l).unwrap();
            s.insert_igroup(&g).unwrap();
            s.insert_lun_map(&m).unwrap();
            // A volume with a LUN, a mapped LUN: the database refuses to orphan them.
            assert!(s.delete_volume(&v.uuid).is_err());
            assert!(s.delete_lun(&l.uuid).is_err());
            // One number per igroup.
            let mut l2 = l.clone();
            l2.uuid = new_uuid();
            l2.name = "lun2".into();
            l2.serial = "other-serial".into();
            s.insert_lun(&l2).unwrap();
            let dup = MapRow {
                lun_uuid: l2.uuid.clone(),
                ..m.clone()
            };
            assert!(s.insert_lun_map(&dup).is_err());
        }
        let (s, _) = Store::open(&path).unwrap();
        assert_eq!(s.luns().unwrap()[0], l);
        assert_eq!(s.igroups().unwrap(), vec![g]);
        assert_eq!(s.lun_maps().unwrap(), vec![m]);
    }
}
