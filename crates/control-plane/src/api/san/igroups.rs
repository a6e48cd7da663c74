//! `/api/protocols/san/igroups`: initiator groups (iSCSI only) and their initiators.
//! A change to a mapped igroup's initiators is in force at once: the node's SAN maps are
//! published again and sessions re-read their LUNs.

use serde_json::{json, Value};

use super::super::model::san as m;
use super::super::model::{self, code, ApiError};
use super::super::policies::refuse_taken;
use super::super::query::Query;
use super::super::{db_err, listing, single, svm_json, svms, Inner, Reply, R};
use super::{check_exposure, check_numbers, lun_path, named, not_found, publish, San, IGROUPS};
use crate::state::{new_uuid, IgroupRow};

const IGROUP_TOP: &[&str] = &[
    "uuid",
    "name",
    "protocol",
    "os_type",
    "initiators",
    "lun_maps",
    "svm",
    "comment",
];

pub(super) fn igroup_index(inner: &Inner, uuid: &str) -> R<usize> {
    inner
        .san
        .igroups
        .iter()
        .position(|g| g.uuid == uuid)
        .ok_or_else(|| not_found("uuid", "igroup", format!("with uuid {uuid:?}"), IGROUPS))
}

impl San<'_> {
    fn igroup_json(&self, inner: &Inner, g: &IgroupRow) -> Value {
        let maps: Vec<Value> = inner
            .san
            .maps
            .iter()
            .filter(|m| m.igroup_uuid == g.uuid)
            .filter_map(|m| {
                let l = inner.san.luns.iter().find(|l| l.uuid == m.lun_uuid)?;
                Some(json!({
                    "logical_unit_number": m.number,
                    "lun": named(&lun_path(inner, l), &l.uuid),
                }))
            })
            .collect();
        json!({
            "uuid": g.uuid,
            "name": g.name,
            "protocol": g.protocol,
            "os_type": g.os_type,
            "comment": g.comment,
            "initiators": g.initiators.iter().map(|i| json!({"name": i})).collect::<Vec<_>>(),
            "lun_maps": maps,
            "svm": svm_json(inner, &g.svm_name, &g.svm_uuid),
        })
    }

    pub fn list_igroups(&self, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let all = inner
            .san
            .igroups
            .iter()
            .map(|g| self.igroup_json(&inner, g))
            .collect();
        listing(all, q, IGROUP_TOP, IGROUPS)
    }

    pub fn get_igroup(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let i = igroup_index(&inner, uuid)?;
        let body = self.igroup_json(&inner, &inner.san.igroups[i]);
        single(body, q)
    }

    pub fn create_igroup(&self, body: &[u8]) -> R<Reply> {
        let ng = m::new_igroup(&model::parse_body(body)?)?;
        let mut inner = self.cp.lock();
        let taken = inner.san.igroups.iter().any(|g| g.name == ng.name);
        refuse_taken(taken, "an igroup", &ng.name)?;
        let svm = ng.svm.unwrap_or_default();
        svms::check_svm(&inner, &svm.name, &svm.uuid)?;
        let row = IgroupRow {
            uuid: new_uuid(),
            name: ng.name,
            protocol: "iscsi".into(),
            os_type: ng.os_type,
            initiators: ng.initiators,
            comment: ng.comment,
            svm_name: svm.name,
            svm_uuid: svm.uuid,
        };
        inner.store.insert_igroup(&row).map_err(db_err)?;
        let body = self.igroup_json(&inner, &row);
        let location = format!("{IGROUPS}/{}", row.uuid);
        inner.san.igroups.push(row);
        Ok(Reply::created(body, location))
    }

    pub fn patch_igroup(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let p = m::patch_igroup(&model::parse_body(body)?)?;
        let mut inner = self.cp.lock();
        let i = igroup_index(&inner, uuid)?;
        let mut row = inner.san.igroups[i].clone();
        if let Some(n) = p.name {
            let taken = n != row.name && inner.san.igroups.iter().any(|g| g.name == n);
            refuse_taken(taken, "an igroup", &n)?;
            row.name = n;
        }
        if let Some(o) = p.os_type {
            row.os_type = o;
        }
        if let Some(c) = p.comment {
            row.comment = c;
        }
        inner.store.update_igroup(&row).map_err(db_err)?;
        inner.san.igroups[i] = row;
        let body = self.igroup_json(&inner, &inner.san.igroups[i]);
        Ok(Reply::ok(body))
    }

    pub fn delete_igroup(&self, uuid: &str) -> R<Reply> {
        let mut inner = self.cp.lock();
        let i = igroup_index(&inner, uuid)?;
        let g = &inner.san.igroups[i];
        let luns: Vec<String> = inner
            .san
            .maps
            .iter()
            .filter(|m| m.igroup_uuid == g.uuid)
            .filter_map(|m| inner.san.luns.iter().find(|l| l.uuid == m.lun_uuid))
            .map(|l| lun_path(&inner, l))
            .collect();
        super::super::policies::refuse_in_use("uuid", &luns, |list| {
            format!(
                "igroup {:?} is mapped to LUN(s) {list}: unmap them first",
                g.name
            )
        })?;
        inner.store.delete_igroup(uuid).map_err(db_err)?;
        inner.san.igroups.remove(i);
        Ok(Reply::ok(json!({})))
    }

    /// Set igroup `i`'s initiators to `row`'s, checked against the maps (numbers, CHAP
    /// beyond loopback), committed, then published.
    fn replace_igroup(&self, inner: &mut Inner, i: usize, row: IgroupRow, target: &str) -> R<()> {
        let mut igroups = inner.san.igroups.clone();
        igroups[i] = row.clone();
        check_numbers(
            self.cp,
            inner,
            (&igroups, &row.uuid),
            &inner.san.maps,
            target,
        )?;
        check_exposure(self.cp, inner, &igroups, &inner.san.maps, target)?;
        inner.store.update_igroup(&row).map_err(db_err)?;
        inner.san.igroups[i] = row;
        publish(&self.cp.node, inner);
        Ok(())
    }

    /// POST .../igroups/{uuid}/initiators: add one (`{"name"}`) or several (`{"records"}`).
    pub fn add_initiators(&self, uuid: &str, body: &[u8]) -> R<Reply> {
        let names = m::new_initiators(&model::parse_body(body)?)?;
        let mut inner = self.cp.lock();
        let i = igroup_index(&inner, uuid)?;
        let mut row = inner.san.igroups[i].clone();
        for n in &names {
            if row.initiators.iter().any(|x| x.eq_ignore_ascii_case(n)) {
                return Err(ApiError::conflict(
                    code::DUPLICATE,
                    "name",
                    format!("initiator {n:?} is in igroup {:?} already", row.name),
                ));
            }
            row.initiators.push(n.clone());
        }
        self.replace_igroup(&mut inner, i, row, "name")?;
        let records: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        Ok(Reply {
            status: 201,
            body: json!({"num_records": records.len(), "records": records}),
            location: None,
        })
    }

    /// DELETE .../igroups/{uuid}/initiators/{name}: the initiator loses the igroup's LUNs
    /// at once.
    pub fn remove_initiator(&self, uuid: &str, name: &str) -> R<Reply> {
        let mut inner = self.cp.lock();
        let i = igroup_index(&inner, uuid)?;
        let mut row = inner.san.igroups[i].clone();
        let before = row.initiators.len();
        row.initiators.retain(|x| !x.eq_ignore_ascii_case(name));
        if row.initiators.len() == before {
            return Err(ApiError::not_found(
                "name",
                format!("initiator {name:?} is not in igroup {:?}", row.name),
            ));
        }
        self.replace_igroup(&mut inner, i, row, "name")?;
        Ok(Reply::ok(json!({})))
    }

    pub fn list_initiators(&self, uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let i = igroup_index(&inner, uuid)?;
        let all = inner.san.igroups[i]
            .initiators
            .iter()
            .map(|n| json!({"name": n}))
            .collect();
        listing(all, q, &["name"], &format!("{IGROUPS}/{uuid}/initiators"))
    }

    pub fn get_initiator(&self, uuid: &str, name: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let i = igroup_index(&inner, uuid)?;
        let g = &inner.san.igroups[i];
        let n = g
            .initiators
            .iter()
            .find(|x| x.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                ApiError::not_found(
                    "name",
                    format!("initiator {name:?} is not in igroup {:?}", g.name),
                )
            })?;
        single(json!({"name": n, "igroup": named(&g.name, &g.uuid)}), q)
    }
}
