//! `/api/svm/svms`: the storage VMs policies and volumes name. qoslab has no SVM objects
//! of its own: an SVM exists while something refers to it (plus the default one, which
//! always exists and holds what was created without `svm`), with the uuid a client gave
//! for it, or one derived from its name.

use serde_json::{json, Value};

use super::model::ApiError;
use super::query::Query;
use super::{ControlPlane, Inner, Reply, R};

pub const SVMS: &str = "/api/svm/svms";
/// The SVM that always exists; objects created without `svm` belong to it.
pub const DEFAULT_SVM: &str = "qoslab";

const SVM_TOP: &[&str] = &["uuid", "name", "state", "subtype", "comment"];

/// A stable uuid for an SVM named without one (FNV-1a 128 over the name, as a v8 uuid).
pub fn derived_uuid(name: &str) -> String {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for b in name.bytes() {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000000001000000000000000000013B);
    }
    let mut b = h.to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x: String = b.iter().map(|v| format!("{v:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &x[0..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..32]
    )
}

/// The uuid of the SVM called `name`: the first one a client gave with that name, else
/// the derived one.
pub(super) fn svm_uuid(inner: &Inner, name: &str) -> String {
    inner
        .policies
        .iter()
        .map(|p| (&p.row.svm_name, &p.row.svm_uuid))
        .chain(inner.volumes.iter().map(|v| (&v.svm_name, &v.svm_uuid)))
        .find_map(|(n, u)| (n.as_deref() == Some(name)).then(|| u.clone()).flatten())
        .unwrap_or_else(|| derived_uuid(name))
}

/// A new object's `svm`: a name and uuid that contradict the SVM's known pair (an object
/// already names that SVM with another uuid, or that uuid with another name) are refused
/// with 409 naming both, rather than re-keying the SVM.
pub(super) fn check_svm(inner: &Inner, name: &Option<String>, uuid: &Option<String>) -> R<()> {
    let (Some(n), Some(u)) = (name, uuid) else {
        return Ok(());
    };
    let known = || {
        inner
            .policies
            .iter()
            .map(|p| (&p.row.svm_name, &p.row.svm_uuid))
            .chain(inner.volumes.iter().map(|v| (&v.svm_name, &v.svm_uuid)))
    };
    let by_name = known()
        .find_map(|(kn, ku)| (kn.as_ref() == Some(n)).then(|| ku.clone()).flatten())
        .or_else(|| (n == DEFAULT_SVM).then(|| derived_uuid(DEFAULT_SVM)));
    if let Some(e) = by_name.filter(|e| e != u) {
        return Err(mismatch(format!(
            "svm {n:?} has uuid {e}, not {u}: name the SVM by its uuid {e} (or by name alone)"
        )));
    }
    let by_uuid = known()
        .find_map(|(kn, ku)| (ku.as_ref() == Some(u)).then(|| kn.clone()).flatten())
        .or_else(|| (u == &derived_uuid(DEFAULT_SVM)).then(|| DEFAULT_SVM.to_string()));
    if let Some(o) = by_uuid.filter(|o| o != n) {
        return Err(mismatch(format!(
            "svm uuid {u} belongs to svm {o:?}, not {n:?}"
        )));
    }
    Ok(())
}

fn mismatch(msg: String) -> ApiError {
    ApiError::conflict(super::model::code::SVM_MISMATCH, "svm.uuid", msg)
}

/// The SVMs (`/api/svm/svms`): the default one and those policies and volumes name; one
/// resource of the control plane ([`ControlPlane::svms`]).
pub struct Svms<'a> {
    cp: &'a ControlPlane,
}

impl ControlPlane {
    /// The SVMs.
    pub fn svms(&self) -> Svms<'_> {
        Svms { cp: self }
    }
}

impl Svms<'_> {
    fn records(&self) -> Vec<Value> {
        let inner = self.cp.lock();
        let mut seen: Vec<(String, Option<String>)> = vec![(DEFAULT_SVM.to_string(), None)];
        let refs = inner
            .policies
            .iter()
            .map(|p| (&p.row.svm_name, &p.row.svm_uuid))
            .chain(inner.volumes.iter().map(|v| (&v.svm_name, &v.svm_uuid)));
        for (name, uuid) in refs {
            let Some(name) = name else { continue };
            match seen.iter_mut().find(|(n, _)| n == name) {
                Some((_, u)) => {
                    if u.is_none() {
                        *u = uuid.clone();
                    }
                }
                None => seen.push((name.clone(), uuid.clone())),
            }
        }
        seen.into_iter()
            .map(|(name, uuid)| {
                let uuid = uuid.unwrap_or_else(|| derived_uuid(&name));
                json!({
                    "uuid": uuid,
                    "name": name,
                    "state": "running",
                    "subtype": "default",
                    "comment": if name == DEFAULT_SVM { "qoslab's default SVM" } else { "" },
                })
            })
            .collect()
    }

    pub fn list(&self, q: &Query) -> R<Reply> {
        super::listing(self.records(), q, SVM_TOP, SVMS)
    }

    pub fn get(&self, uuid: &str, q: &Query) -> R<Reply> {
        let rec = self
            .records()
            .into_iter()
            .find(|r| r["uuid"] == uuid)
            .ok_or_else(|| ApiError::not_found("uuid", format!("no SVM with uuid {uuid:?}")))?;
        super::single(rec, q)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn derived_uuids_are_stable_and_distinct() {
        let a = super::derived_uuid("nfs_svm");
        assert_eq!(a, super::derived_uuid("nfs_svm"));
        assert_ne!(a, super::derived_uuid("nfs_svm2"));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8");
    }
}
