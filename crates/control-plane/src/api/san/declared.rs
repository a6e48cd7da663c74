//! node.toml's `[[lun]]`, `[[igroup]]` and `[[lun_map]]`, applied at start as its
//! `[[volume]]`s are: a declaration that is new or was edited since it was last applied
//! (a fingerprint per declaration is kept in the state database) is made, through the same
//! checks as a REST request (sizes, policies, LUN numbers, CHAP beyond loopback); an
//! unchanged one leaves the stored object alone, so changes made through the API survive
//! a restart with the same file. Objects the file does not declare are never touched.
//! A declaration refused stops the start, and the objects this start created are deleted
//! again (edits it applied to existing objects stay; they are applied again, to the same
//! effect, at the next start).

use serde_json::{json, Value};

use super::super::model::ApiError;
use super::{lun_path, San};
use crate::config::san::{IgroupSpec, LunMapSpec, SanDecls, SanLunSpec};

/// What a start made, to be undone if a later declaration is refused.
#[derive(Debug)]
enum Undo {
    Map(String, String),
    Igroup(String),
    Lun(String),
    /// The fingerprint recorded under this key.
    Fingerprint(String),
}

impl San<'_> {
    /// Apply the new or edited declarations of `d`; returns how many were applied. An
    /// error names the declaration (`node.toml:12: lun "/vol/db/lun1": ...`); what was
    /// applied before it stays (each is committed on its own, as a REST call is).
    pub fn apply_declarations(&self, d: &SanDecls) -> Result<usize, String> {
        let mut undo = Vec::new();
        let r = self.apply_all(d, &mut undo);
        if r.is_err() {
            self.undo(undo);
        }
        r
    }

    /// Delete what this start created, newest first, and forget its fingerprints.
    fn undo(&self, undo: Vec<Undo>) {
        for u in undo.into_iter().rev() {
            let r = match &u {
                Undo::Map(l, g) => self.delete_map(l, g).map(|_| ()),
                Undo::Igroup(g) => self.delete_igroup(g).map(|_| ()),
                Undo::Lun(l) => self.delete_lun(l).map(|_| ()),
                Undo::Fingerprint(k) => {
                    let inner = self.cp.lock();
                    inner.store.forget_applied(k).map_err(super::super::db_err)
                }
            };
            if let Err(e) = r {
                tracing::error!("undoing {u:?} after a refused declaration: {}", e.message);
            }
        }
    }

    fn apply_all(&self, d: &SanDecls, undo: &mut Vec<Undo>) -> Result<usize, String> {
        let lun_key = |l: &SanLunSpec| (format!("config.lun.{}", l.path()), l.fingerprint());
        let igroup_key = |g: &IgroupSpec| (format!("config.igroup.{}", g.name), g.fingerprint());
        let map_key = |m: &LunMapSpec| {
            let key = format!("config.lun_map.{}.{}", m.lun, m.igroup);
            (key, m.fingerprint())
        };
        let luns = self.each_changed(&d.luns, lun_key, undo, |l, u| self.apply_lun(l, u))?;
        let igroups =
            self.each_changed(&d.igroups, igroup_key, undo, |g, u| self.apply_igroup(g, u))?;
        let maps = self.each_changed(&d.maps, map_key, undo, |m, u| self.apply_map(m, u))?;
        Ok(luns + igroups + maps)
    }

    /// Apply each of `decls` that is new or was edited since it was last applied (its
    /// state-database key and fingerprint: `key_fp`), then record its fingerprint; returns
    /// how many were applied.
    fn each_changed<T>(
        &self,
        decls: &[T],
        key_fp: impl Fn(&T) -> (String, String),
        undo: &mut Vec<Undo>,
        mut apply: impl FnMut(&T, &mut Vec<Undo>) -> Result<(), String>,
    ) -> Result<usize, String> {
        let mut applied = 0;
        for d in decls {
            let (key, fp) = key_fp(d);
            if self.applied(&key)?.as_deref() == Some(fp.as_str()) {
                continue;
            }
            apply(d, undo)?;
            self.set_applied(&key, &fp)?;
            undo.push(Undo::Fingerprint(key));
            applied += 1;
        }
        Ok(applied)
    }

    /// `[[lun]]`: created, or grown and put under its policy.
    fn apply_lun(&self, l: &SanLunSpec, undo: &mut Vec<Undo>) -> Result<(), String> {
        let path = l.path();
        let ctx = |e: ApiError| format!("{}: lun {path:?}: {}", l.at, e.message);
        let policy = match &l.policy {
            Some(p) => json!({"name": p}),
            None => Value::Null,
        };
        match self.lun_by_path(&path) {
            Some((uuid, size)) => {
                let mut b = json!({"qos_policy": policy});
                if size != l.size {
                    b["space"] = json!({"size": l.size});
                }
                self.patch_lun(&uuid, b.to_string().as_bytes())
                    .map_err(ctx)?;
            }
            None => {
                let mut b = json!({"name": path, "os_type": l.os_type,
                                   "space": {"size": l.size}});
                if !policy.is_null() {
                    b["qos_policy"] = policy;
                }
                self.create_lun(b.to_string().as_bytes()).map_err(ctx)?;
                if let Some((uuid, _)) = self.lun_by_path(&path) {
                    undo.push(Undo::Lun(uuid));
                }
            }
        }
        tracing::info!(lun = %path, "applied the configuration's declaration");
        Ok(())
    }

    /// `[[igroup]]`: created, or its os_type and initiators made the file's.
    fn apply_igroup(&self, g: &IgroupSpec, undo: &mut Vec<Undo>) -> Result<(), String> {
        let ctx = |e: ApiError| format!("{}: igroup {:?}: {}", g.at, g.name, e.message);
        let named = |i: &String| json!({"name": i});
        match self.igroup_by_name(&g.name) {
            Some((uuid, have)) => {
                let b = json!({"os_type": g.os_type});
                self.patch_igroup(&uuid, b.to_string().as_bytes())
                    .map_err(ctx)?;
                let add: Vec<Value> = g
                    .initiators
                    .iter()
                    .filter(|i| !have.iter().any(|h| h.eq_ignore_ascii_case(i)))
                    .map(named)
                    .collect();
                for h in &have {
                    if !g.initiators.iter().any(|i| i.eq_ignore_ascii_case(h)) {
                        self.remove_initiator(&uuid, h).map_err(ctx)?;
                    }
                }
                if !add.is_empty() {
                    let b = json!({"records": add});
                    self.add_initiators(&uuid, b.to_string().as_bytes())
                        .map_err(ctx)?;
                }
            }
            None => {
                let initiators: Vec<Value> = g.initiators.iter().map(named).collect();
                let b = json!({"name": g.name, "protocol": "iscsi", "os_type": g.os_type,
                               "initiators": initiators});
                self.create_igroup(b.to_string().as_bytes()).map_err(ctx)?;
                if let Some((uuid, _)) = self.igroup_by_name(&g.name) {
                    undo.push(Undo::Igroup(uuid));
                }
            }
        }
        tracing::info!(igroup = %g.name, "applied the configuration's declaration");
        Ok(())
    }

    /// `[[lun_map]]`: made, or moved to its number.
    fn apply_map(&self, m: &LunMapSpec, undo: &mut Vec<Undo>) -> Result<(), String> {
        let ctx = |e: ApiError| {
            format!(
                "{}: lun_map ({:?} to igroup {:?}): {}",
                m.at, m.lun, m.igroup, e.message
            )
        };
        let existing = self.map_of(&m.lun, &m.igroup);
        let keep = match (&existing, m.number) {
            (Some(_), None) => true,
            (Some((_, _, n)), Some(want)) => *n == want,
            (None, _) => false,
        };
        if !keep {
            if let Some((l, g, _)) = &existing {
                self.delete_map(l, g).map_err(ctx)?;
            }
            let mut b = json!({"lun": {"name": m.lun}, "igroup": {"name": m.igroup}});
            if let Some(n) = m.number {
                b["logical_unit_number"] = json!(n);
            }
            self.create_map(b.to_string().as_bytes()).map_err(ctx)?;
            if existing.is_none() {
                if let Some((l, g, _)) = self.map_of(&m.lun, &m.igroup) {
                    undo.push(Undo::Map(l, g));
                }
            }
        }
        tracing::info!(lun = %m.lun, igroup = %m.igroup, "applied the configuration's declaration");
        Ok(())
    }

    fn applied(&self, key: &str) -> Result<Option<String>, String> {
        let inner = self.cp.lock();
        inner
            .store
            .applied(key)
            .map_err(|e| format!("state database: {e}"))
    }

    fn set_applied(&self, key: &str, fp: &str) -> Result<(), String> {
        let inner = self.cp.lock();
        inner
            .store
            .set_applied(key, fp)
            .map_err(|e| format!("state database: {e}"))
    }

    /// The uuid and size of the LUN at `path`.
    fn lun_by_path(&self, path: &str) -> Option<(String, u64)> {
        let inner = self.cp.lock();
        let s = &inner.san;
        s.luns
            .iter()
            .find(|l| lun_path(&inner, l) == path)
            .map(|l| (l.uuid.clone(), l.size))
    }

    /// The uuid and initiators of igroup `name`.
    fn igroup_by_name(&self, name: &str) -> Option<(String, Vec<String>)> {
        let inner = self.cp.lock();
        let s = &inner.san;
        s.igroups
            .iter()
            .find(|g| g.name == name)
            .map(|g| (g.uuid.clone(), g.initiators.clone()))
    }

    /// The map of the LUN at `path` to igroup `igroup`: (LUN uuid, igroup uuid, number).
    fn map_of(&self, path: &str, igroup: &str) -> Option<(String, String, u16)> {
        let (lun, _) = self.lun_by_path(path)?;
        let (g, _) = self.igroup_by_name(igroup)?;
        let inner = self.cp.lock();
        let s = &inner.san;
        s.maps
            .iter()
            .find(|m| m.lun_uuid == lun && m.igroup_uuid == g)
            .map(|m| (lun.clone(), g.clone(), m.number))
    }
}
