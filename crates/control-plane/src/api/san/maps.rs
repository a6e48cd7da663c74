//! `/api/protocols/san/lun-maps` (a LUN to an igroup at a LUN number, in force on the
//! iSCSI target at once) and `/api/protocols/san/iscsi/services` (the target's name).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::super::model::san as m;
use super::super::model::{self, code, ApiError, Ref};
use super::super::query::Query;
use super::super::{db_err, listing, single, svm_json, svms, Inner, Reply, R};
use super::igroups::igroup_index;
use super::luns::lun_index;
use super::{
    check_exposure, check_numbers, lun_path, named, not_found, publish, San, IGROUPS,
    ISCSI_SERVICES, LUNS, LUN_MAPS,
};
use crate::state::{IgroupRow, MapRow};
use iscsi_server::config::MAX_LUN;

const MAP_TOP: &[&str] = &["lun", "igroup", "logical_unit_number", "svm"];
const SERVICE_TOP: &[&str] = &["svm", "enabled", "target", "listen"];

impl San<'_> {
    fn map_json(&self, inner: &Inner, m: &MapRow) -> Value {
        let lun = inner.san.luns.iter().find(|l| l.uuid == m.lun_uuid);
        let g = inner.san.igroups.iter().find(|g| g.uuid == m.igroup_uuid);
        json!({
            "lun": lun.map(|l| named(&lun_path(inner, l), &l.uuid)),
            "igroup": g.map(|g| named(&g.name, &g.uuid)),
            "logical_unit_number": m.number,
            "svm": svm_json(
                inner,
                &g.and_then(|g| g.svm_name.clone()),
                &g.and_then(|g| g.svm_uuid.clone()),
            ),
        })
    }

    pub fn list_maps(&self, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let all = inner
            .san
            .maps
            .iter()
            .map(|m| self.map_json(&inner, m))
            .collect();
        let q = &super::default_fields(q, &["lun", "igroup", "logical_unit_number", "svm"]);
        listing(all, q, MAP_TOP, LUN_MAPS)
    }

    fn map_index(inner: &Inner, lun: &str, igroup: &str) -> R<usize> {
        inner
            .san
            .maps
            .iter()
            .position(|m| m.lun_uuid == lun && m.igroup_uuid == igroup)
            .ok_or_else(|| {
                ApiError::not_found(
                    "lun.uuid",
                    format!("LUN {lun:?} is not mapped to igroup {igroup:?}; GET {LUN_MAPS} lists the maps"),
                )
            })
    }

    pub fn get_map(&self, lun: &str, igroup: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let i = Self::map_index(&inner, lun, igroup)?;
        let body = self.map_json(&inner, &inner.san.maps[i]);
        single(body, q)
    }

    /// The LUN a map names (by path and/or uuid).
    fn find_lun(inner: &Inner, r: &Ref) -> R<usize> {
        inner
            .san
            .luns
            .iter()
            .position(|l| r.is(&lun_path(inner, l), &l.uuid))
            .ok_or_else(|| not_found("lun", "LUN", r.describe(), LUNS))
    }

    fn find_igroup(inner: &Inner, r: &Ref) -> R<usize> {
        inner
            .san
            .igroups
            .iter()
            .position(|g| r.is(&g.name, &g.uuid))
            .ok_or_else(|| not_found("igroup", "igroup", r.describe(), IGROUPS))
    }

    pub fn create_map(&self, body: &[u8]) -> R<Reply> {
        let nm = m::new_map(&model::parse_body(body)?)?;
        let mut inner = self.cp.lock();
        let l = Self::find_lun(&inner, &nm.lun)?;
        let g = Self::find_igroup(&inner, &nm.igroup)?;
        let (lun, igroup) = (inner.san.luns[l].clone(), inner.san.igroups[g].clone());
        if let Some(s) = &nm.svm {
            super::same_svm(
                &inner,
                s,
                &igroup.svm_name,
                &igroup.svm_uuid,
                &format!("igroup {:?} (and so its maps)", igroup.name),
            )?;
        }
        let path = lun_path(&inner, &lun);
        if inner
            .san
            .maps
            .iter()
            .any(|m| m.lun_uuid == lun.uuid && m.igroup_uuid == igroup.uuid)
        {
            return Err(ApiError::conflict(
                code::DUPLICATE,
                "lun",
                format!("LUN {path} is mapped to igroup {:?} already", igroup.name),
            ));
        }
        let number = match nm.number {
            Some(n) => {
                if let Some(other) = inner
                    .san
                    .maps
                    .iter()
                    .find(|m| m.igroup_uuid == igroup.uuid && m.number == n)
                {
                    let holder = inner
                        .san
                        .luns
                        .iter()
                        .find(|l| l.uuid == other.lun_uuid)
                        .map_or_else(String::new, |l| lun_path(&inner, l));
                    return Err(ApiError::conflict(
                        code::DUPLICATE,
                        "logical_unit_number",
                        format!(
                            "logical_unit_number = {n}: igroup {:?} has LUN {holder} at {n} \
                             already",
                            igroup.name
                        ),
                    ));
                }
                n
            }
            None => self.next_number(&inner, &igroup)?,
        };
        let row = MapRow {
            lun_uuid: lun.uuid.clone(),
            igroup_uuid: igroup.uuid.clone(),
            number,
        };
        let mut maps = inner.san.maps.clone();
        maps.push(row.clone());
        let target = if nm.number.is_some() {
            "logical_unit_number"
        } else {
            "igroup"
        };
        check_numbers(
            self.cp,
            &inner,
            (&inner.san.igroups, &igroup.uuid),
            &maps,
            target,
        )?;
        check_exposure(self.cp, &inner, &inner.san.igroups, &maps, "igroup")?;
        inner.store.insert_lun_map(&row).map_err(db_err)?;
        inner.san.maps.push(row.clone());
        publish(&self.cp.node, &inner);
        let body = self.map_json(&inner, &row);
        Ok(Reply::created(
            body,
            format!("{LUN_MAPS}/{}/{}", row.lun_uuid, row.igroup_uuid),
        ))
    }

    /// The smallest number neither the igroup nor any of its initiators uses yet
    /// (node.toml's LUNs they see, other igroups' maps they are in), so the map is visible
    /// at once without a clash.
    fn next_number(&self, inner: &Inner, igroup: &IgroupRow) -> R<u16> {
        let shares = |names: &[String]| {
            names
                .iter()
                .any(|x| igroup.initiators.iter().any(|i| i.eq_ignore_ascii_case(x)))
        };
        let mut taken: BTreeSet<u16> = self
            .cp
            .iscsi
            .settings()
            .luns
            .iter()
            .filter(|c| match &c.initiators {
                None => !igroup.initiators.is_empty(),
                Some(l) => shares(l),
            })
            .map(|c| c.number)
            .collect();
        for m in &inner.san.maps {
            let theirs = m.igroup_uuid == igroup.uuid
                || inner
                    .san
                    .igroups
                    .iter()
                    .any(|g| g.uuid == m.igroup_uuid && shares(&g.initiators));
            if theirs {
                taken.insert(m.number);
            }
        }
        (0..=MAX_LUN).find(|n| !taken.contains(n)).ok_or_else(|| {
            ApiError::conflict(
                code::OUT_OF_RANGE,
                "logical_unit_number",
                format!("no free LUN number (0 to {MAX_LUN}) for this igroup's initiators"),
            )
        })
    }

    /// Unmap: the igroup's initiators lose the LUN at once.
    pub fn delete_map(&self, lun: &str, igroup: &str) -> R<Reply> {
        let mut inner = self.cp.lock();
        lun_index(&inner, lun)?;
        igroup_index(&inner, igroup)?;
        let i = Self::map_index(&inner, lun, igroup)?;
        inner.store.delete_lun_map(lun, igroup).map_err(db_err)?;
        inner.san.maps.remove(i);
        publish(&self.cp.node, &inner);
        Ok(Reply::ok(json!({})))
    }

    fn service_json(&self, inner: &Inner) -> Value {
        let s = self.cp.iscsi.settings();
        let mut target = json!({"name": s.iqn});
        if let Some(a) = &s.alias {
            target["alias"] = json!(a);
        }
        json!({
            "svm": svm_json(inner, &None, &None),
            "enabled": s.listen.is_some(),
            "target": target,
            "listen": self.cp.iscsi.bound.get().copied().or(s.listen).map(|a| a.to_string()),
        })
    }

    /// The node's one iSCSI target, as the default SVM's iSCSI service.
    pub fn list_services(&self, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let all = vec![self.service_json(&inner)];
        let q = &super::default_fields(q, &["svm", "target", "enabled"]);
        listing(all, q, SERVICE_TOP, ISCSI_SERVICES)
    }

    pub fn get_service(&self, svm_uuid: &str, q: &Query) -> R<Reply> {
        let inner = self.cp.lock();
        let body = self.service_json(&inner);
        if body["svm"]["uuid"] != json!(svm_uuid) {
            return Err(ApiError::not_found(
                "svm.uuid",
                format!(
                    "no iSCSI service in svm {svm_uuid:?}: the node's one target is in svm {:?} ({})",
                    svms::DEFAULT_SVM,
                    body["svm"]["uuid"].as_str().unwrap_or_default()
                ),
            ));
        }
        single(body, q)
    }
}
