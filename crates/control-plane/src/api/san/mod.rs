//! SAN in the control plane, in ONTAP's shape: LUNs (`/api/storage/luns`, [`luns`]),
//! igroups and LUN maps (`/api/protocols/san/igroups`, `/api/protocols/san/lun-maps`,
//! [`igroups`], [`maps`]) and the iSCSI service (`/api/protocols/san/iscsi/services`).
//!
//! A LUN is a block file of its own that belongs to a volume: the node serves it as a
//! block volume named `VOLUME:LUN` (`:` is in no volume's name), so it is a QoS workload
//! of its own, under its own `qos_policy` or, without one, its volume's. Every change
//! is committed to SQLite, then the node's SAN maps ([`storage_node::san`]) are replaced
//! whole, which the iSCSI target reads live (sessions see REPORTED LUNS DATA HAS
//! CHANGED).

mod declared;
mod igroups;
mod luns;
mod maps;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Value};

use super::model::{code, ApiError};
use super::query::Query;
use super::{ControlPlane, Inner, Reply, R};
use crate::config::VolumeSpec;
use crate::node::Node;
use crate::state::{IgroupRow, LunRow, MapRow, Store, VolumeRow};
use iscsi_server::config::auth::AuthType;
use iscsi_server::IscsiSettings;

/// A body's `svm` held to the SVM its object is in (`name`/`uuid` as stored, resolved as
/// [`super::svm_json`] shows them): a name or uuid of another SVM is refused with 409
/// naming the field, the value and the SVM's own (`what` says whose SVM that is).
fn same_svm(
    inner: &Inner,
    given: &super::model::Svm,
    name: &Option<String>,
    uuid: &Option<String>,
    what: &str,
) -> R<()> {
    let theirs = super::svm_json(inner, name, uuid);
    for (field, v) in [("name", &given.name), ("uuid", &given.uuid)] {
        if let Some(v) = v.as_deref().filter(|v| theirs[field] != *v) {
            return Err(ApiError::conflict(
                code::SVM_MISMATCH,
                &format!("svm.{field}"),
                format!(
                    "svm.{field} = {v:?}: {what} is in svm {} ({}): allowed only that {field}, \
                     or leave svm out",
                    theirs["name"], theirs["uuid"]
                ),
            ));
        }
    }
    Ok(())
}

pub const LUNS: &str = "/api/storage/luns";
pub const IGROUPS: &str = "/api/protocols/san/igroups";
pub const LUN_MAPS: &str = "/api/protocols/san/lun-maps";
pub const ISCSI_SERVICES: &str = "/api/protocols/san/iscsi/services";

/// The SAN objects as they are committed (and, for LUNs, served).
#[derive(Default)]
pub(super) struct SanState {
    pub luns: Vec<LunRow>,
    pub igroups: Vec<IgroupRow>,
    pub maps: Vec<MapRow>,
    /// LUNs not in service (uuid → why), as volumes are.
    pub offline: BTreeMap<String, String>,
}

/// The node's iSCSI target as the control plane checks maps against it.
#[derive(Default)]
pub(super) struct IscsiInfo {
    /// node.toml's `[iscsi]`, as iscsi-server parsed it (set once at start; unset: the
    /// defaults, no listener and no LUNs).
    pub settings: std::sync::OnceLock<IscsiSettings>,
    pub insecure: AtomicBool,
    /// Where the target listens, once bound (port 0 resolved).
    pub bound: std::sync::OnceLock<std::net::SocketAddr>,
}

impl IscsiInfo {
    /// The settings set at start, else the defaults.
    pub fn settings(&self) -> &IscsiSettings {
        static DEFAULT: std::sync::LazyLock<IscsiSettings> =
            std::sync::LazyLock::new(IscsiSettings::default);
        self.settings.get().unwrap_or(&DEFAULT)
    }
}

/// A SAN REST path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SanRoute {
    Luns,
    Lun(String),
    Igroups,
    Igroup(String),
    Initiators(String),
    Initiator(String, String),
    Maps,
    Map(String, String),
    Services,
    Service(String),
}

impl SanRoute {
    pub fn allowed(&self) -> &'static str {
        match self {
            SanRoute::Luns | SanRoute::Igroups | SanRoute::Maps | SanRoute::Initiators(_) => {
                "GET, POST"
            }
            SanRoute::Lun(_) | SanRoute::Igroup(_) => "GET, PATCH, DELETE",
            SanRoute::Initiator(..) | SanRoute::Map(..) => "GET, DELETE",
            SanRoute::Services | SanRoute::Service(_) => "GET",
        }
    }
}

/// The SAN route of `p` (no trailing slash), its path segments decoded.
pub fn route(p: &str, decode: impl Fn(&str) -> String) -> Option<SanRoute> {
    let segs = |prefix: &str| -> Option<Vec<String>> {
        let rest = p.strip_prefix(prefix)?;
        if rest.is_empty() {
            return Some(Vec::new());
        }
        let rest = rest.strip_prefix('/')?;
        let v: Vec<String> = rest.split('/').map(&decode).collect();
        (!v.iter().any(String::is_empty)).then_some(v)
    };
    if let Some(s) = segs(LUNS) {
        return match s.as_slice() {
            [] => Some(SanRoute::Luns),
            [u] => Some(SanRoute::Lun(u.clone())),
            _ => None,
        };
    }
    if let Some(s) = segs(IGROUPS) {
        return match s.as_slice() {
            [] => Some(SanRoute::Igroups),
            [u] => Some(SanRoute::Igroup(u.clone())),
            [u, i] if i == "initiators" => Some(SanRoute::Initiators(u.clone())),
            [u, i, n] if i == "initiators" => Some(SanRoute::Initiator(u.clone(), n.clone())),
            _ => None,
        };
    }
    if let Some(s) = segs(LUN_MAPS) {
        return match s.as_slice() {
            [] => Some(SanRoute::Maps),
            [l, g] => Some(SanRoute::Map(l.clone(), g.clone())),
            _ => None,
        };
    }
    match segs(ISCSI_SERVICES)?.as_slice() {
        [] => Some(SanRoute::Services),
        [u] => Some(SanRoute::Service(u.clone())),
        _ => None,
    }
}

/// SAN: LUNs, igroups, LUN maps and the iSCSI service; one resource of the control plane
/// ([`ControlPlane::san`]).
pub struct San<'a> {
    cp: &'a ControlPlane,
}

impl ControlPlane {
    /// SAN: LUNs, igroups, LUN maps, the iSCSI service.
    pub fn san(&self) -> San<'_> {
        San { cp: self }
    }
}

impl San<'_> {
    /// Run one SAN REST request (the method is already checked against `allowed`).
    pub fn dispatch(
        &self,
        method: &hyper::Method,
        route: SanRoute,
        body: &[u8],
        q: &Query,
    ) -> R<Reply> {
        use hyper::Method as M;
        use SanRoute as S;
        match (method, route) {
            (&M::POST, S::Luns) => self.create_lun(body),
            (_, S::Luns) => self.list_luns(q),
            (&M::PATCH, S::Lun(u)) => self.patch_lun(&u, body),
            (&M::DELETE, S::Lun(u)) => self.delete_lun(&u),
            (_, S::Lun(u)) => self.get_lun(&u, q),
            (&M::POST, S::Igroups) => self.create_igroup(body),
            (_, S::Igroups) => self.list_igroups(q),
            (&M::PATCH, S::Igroup(u)) => self.patch_igroup(&u, body),
            (&M::DELETE, S::Igroup(u)) => self.delete_igroup(&u),
            (_, S::Igroup(u)) => self.get_igroup(&u, q),
            (&M::POST, S::Initiators(u)) => self.add_initiators(&u, body),
            (_, S::Initiators(u)) => self.list_initiators(&u, q),
            (&M::DELETE, S::Initiator(u, n)) => self.remove_initiator(&u, &n),
            (_, S::Initiator(u, n)) => self.get_initiator(&u, &n, q),
            (&M::POST, S::Maps) => self.create_map(body),
            (_, S::Maps) => self.list_maps(q),
            (&M::DELETE, S::Map(l, g)) => self.delete_map(&l, &g),
            (_, S::Map(l, g)) => self.get_map(&l, &g, q),
            (_, S::Services) => self.list_services(q),
            (_, S::Service(u)) => self.get_service(&u, q),
        }
    }

    /// Where iSCSI initiators reach the node, and whether maps may expose LUNs beyond
    /// loopback without CHAP (`serve --insecure-iscsi`); set once at start.
    pub fn set_insecure_iscsi(&self, insecure: bool) {
        self.cp.iscsi.insecure.store(insecure, Ordering::Relaxed);
    }

    /// The node's `[iscsi]` settings (its listener, name, LUNs and credentials), which
    /// maps are checked against; set once at start, before [`Self::apply_declarations`].
    pub fn set_iscsi_settings(&self, settings: IscsiSettings) {
        let _ = self.cp.iscsi.settings.set(settings);
    }

    /// Record where the iSCSI target listens (once, after it is bound).
    pub fn set_iscsi_endpoint(&self, addr: std::net::SocketAddr) {
        let _ = self.cp.iscsi.bound.set(addr);
    }

    /// Why the maps would expose a LUN beyond loopback to an initiator that logs in
    /// without CHAP (empty: they do not, or the listener is on loopback, or the node runs
    /// with --insecure-iscsi).
    pub fn exposure_problems(&self) -> Vec<String> {
        let inner = self.cp.lock();
        exposure(&self.cp.iscsi, &inner.san.igroups, &inner.san.maps, &inner)
    }
}

/// The node volume that holds LUN `lun` of volume `volume`.
pub(super) fn node_volume_name(volume: &str, lun: &str) -> String {
    format!("{volume}:{lun}")
}

/// A LUN row's volume row.
pub(super) fn volume_of<'a>(inner: &'a Inner, l: &LunRow) -> Option<&'a VolumeRow> {
    inner.volumes.iter().find(|v| v.uuid == l.volume_uuid)
}

/// A LUN's path, `/vol/VOLUME/LUN`.
pub(super) fn lun_path(inner: &Inner, l: &LunRow) -> String {
    let vol = volume_of(inner, l).map_or("?", |v| v.name.as_str());
    format!("/vol/{vol}/{}", l.name)
}

/// The path of map `m`'s LUN (its uuid if the LUN is not among the committed ones).
fn map_lun_path(inner: &Inner, m: &MapRow) -> String {
    inner
        .san
        .luns
        .iter()
        .find(|l| l.uuid == m.lun_uuid)
        .map_or_else(|| m.lun_uuid.clone(), |l| lun_path(inner, l))
}

/// A LUN's node volume name.
pub(super) fn lun_node_name(inner: &Inner, l: &LunRow) -> String {
    let vol = volume_of(inner, l).map_or("?", |v| v.name.as_str());
    node_volume_name(vol, &l.name)
}

/// What the node serves for LUN `l`: a block volume under its policy, or its volume's.
pub(super) fn lun_spec(inner: &Inner, l: &LunRow) -> VolumeSpec {
    let policy_uuid = l
        .policy_uuid
        .clone()
        .or_else(|| volume_of(inner, l).and_then(|v| v.policy_uuid.clone()));
    VolumeSpec {
        name: lun_node_name(inner, l),
        size: l.size,
        snapshot_reserve_percent: 0,
        read_only: false,
        description: format!("LUN {}", lun_path(inner, l)),
        policy: super::policies::name_of(inner, &policy_uuid),
        nas: None,
    }
}

/// Replace the node's SAN maps with the committed ones.
pub(super) fn publish(node: &Node, inner: &Inner) {
    let s = &inner.san;
    let maps = s
        .maps
        .iter()
        .filter_map(|m| {
            let l = s.luns.iter().find(|l| l.uuid == m.lun_uuid)?;
            let g = s.igroups.iter().find(|g| g.uuid == m.igroup_uuid)?;
            Some(storage_node::san::SanMap {
                volume: lun_node_name(inner, l),
                number: m.number,
                initiators: g.initiators.clone(),
                serial: l.serial.clone(),
            })
        })
        .collect();
    node.san().set(maps);
}

/// The SAN rows at start; each LUN's file checked and served (one that cannot be stays
/// offline with its reason), then the maps published.
pub(super) fn load(
    store: &Store,
    node: &Node,
    inner_volumes: &[VolumeRow],
    max_file: Option<u64>,
) -> Result<SanState, rusqlite::Error> {
    let mut s = SanState {
        luns: store.luns()?,
        igroups: store.igroups()?,
        maps: store.lun_maps()?,
        offline: BTreeMap::new(),
    };
    for l in &s.luns {
        let Some(v) = inner_volumes.iter().find(|v| v.uuid == l.volume_uuid) else {
            continue;
        };
        let name = node_volume_name(&v.name, &l.name);
        let r = super::volume_files::reconcile(node, &l.uuid, &name, l.size, max_file);
        if let Err(why) = r {
            tracing::error!(lun = %name, "LUN is offline: {why}");
            s.offline.insert(l.uuid.clone(), why);
        }
    }
    Ok(s)
}

/// Bring every loaded LUN up (after the policies and volumes are), then publish.
pub(super) fn bring_up(node: &Node, inner: &mut Inner) {
    let mut failed = Vec::new();
    for l in &inner.san.luns {
        if inner.san.offline.contains_key(&l.uuid) {
            continue;
        }
        if let Err(e) = node.add_volume(&lun_spec(inner, l)) {
            let why = format!("opening its file: {e}");
            tracing::error!(lun = %lun_path(inner, l), "LUN is offline: {why}");
            failed.push((l.uuid.clone(), why));
        }
    }
    inner.san.offline.extend(failed);
    publish(node, inner);
}

/// The LUNs in any of `volume_uuids`, by path (a volume with LUNs cannot be deleted).
pub(super) fn luns_in(inner: &Inner, volume_uuids: &[String]) -> Vec<String> {
    inner
        .san
        .luns
        .iter()
        .filter(|l| volume_uuids.contains(&l.volume_uuid))
        .map(|l| lun_path(inner, l))
        .collect()
}

/// Put the LUNs of volume `v` that have no policy of their own under the volume's (after
/// its policy changed).
pub(super) fn follow_volume_policy(node: &Node, inner: &Inner, v: &VolumeRow) {
    for l in inner.san.luns.iter().filter(|l| l.volume_uuid == v.uuid) {
        if l.policy_uuid.is_some() {
            continue;
        }
        let Some(vol) = node.volume(&lun_node_name(inner, l)) else {
            continue;
        };
        let name = super::policies::name_of(inner, &v.policy_uuid);
        if let Err(e) = node.assign_policy(&vol, name) {
            tracing::error!(lun = %lun_path(inner, l), "following its volume's policy: {e}");
        }
    }
}

/// Why `maps` over `igroups` would expose a LUN beyond loopback to an initiator that logs
/// in without CHAP ([`SanState`]'s rows, or a change's before it is committed).
fn exposure(
    info: &IscsiInfo,
    igroups: &[IgroupRow],
    maps: &[MapRow],
    inner: &Inner,
) -> Vec<String> {
    let s = info.settings();
    let beyond = s.listen.is_some_and(|a| !a.ip().is_loopback());
    if !beyond || info.insecure.load(Ordering::Relaxed) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for m in maps {
        let Some(g) = igroups.iter().find(|g| g.uuid == m.igroup_uuid) else {
            continue;
        };
        let path = map_lun_path(inner, m);
        for i in &g.initiators {
            if s.auth_type(i) == AuthType::None {
                out.push(format!(
                    "initiator {i:?} of igroup {:?} would see LUN {path} without CHAP on \
                     non-loopback iSCSI listener {}",
                    g.name,
                    s.listen.map(|a| a.to_string()).unwrap_or_default()
                ));
            }
        }
    }
    out
}

/// Refuse a change whose maps and igroups would expose a LUN without CHAP (409).
fn check_exposure(
    cp: &ControlPlane,
    inner: &Inner,
    igroups: &[IgroupRow],
    maps: &[MapRow],
    target: &str,
) -> R<()> {
    let problems = exposure(&cp.iscsi, igroups, maps, inner);
    if problems.is_empty() {
        return Ok(());
    }
    Err(ApiError::conflict(
        code::IN_USE,
        target,
        format!(
            "refused: {}; an initiator's name is only what it claims, so beyond loopback \
             every initiator a LUN is mapped to must log in with CHAP: give it (or \
             `default`) authentication_type = \"chap\" in node.toml's [[iscsi.credentials]] \
             (docs/ISCSI.md, \"Logins\"), or run the node with --insecure-iscsi on a network \
             you trust",
            problems.join("; ")
        ),
    ))
}

/// The LUN numbers each initiator of igroup `changed` would see under `igroups` and
/// `maps` together with node.toml's LUNs; `Err`: the first that would see two LUNs at one
/// number. (Only the changed igroup's initiators: a clash elsewhere, e.g. from a node.toml
/// edit, never blocks an unrelated change.)
fn check_numbers(
    cp: &ControlPlane,
    inner: &Inner,
    (igroups, changed): (&[IgroupRow], &str),
    maps: &[MapRow],
    target: &str,
) -> R<()> {
    let cfg = &cp.iscsi.settings().luns;
    let mut names: Vec<&str> = igroups
        .iter()
        .filter(|g| g.uuid == changed)
        .flat_map(|g| g.initiators.iter().map(String::as_str))
        .collect();
    names.sort_by_key(|n| n.to_ascii_lowercase());
    names.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    for i in names {
        let mut seen: BTreeMap<u16, String> = BTreeMap::new();
        for c in cfg {
            let sees = c
                .initiators
                .as_ref()
                .is_none_or(|l| l.iter().any(|x| x.eq_ignore_ascii_case(i)));
            if sees {
                seen.insert(
                    c.number,
                    format!("node.toml's LUN {} (volume {:?})", c.number, c.volume),
                );
            }
        }
        for m in maps {
            let Some(g) = igroups.iter().find(|g| g.uuid == m.igroup_uuid) else {
                continue;
            };
            if !g.initiators.iter().any(|x| x.eq_ignore_ascii_case(i)) {
                continue;
            }
            let path = map_lun_path(inner, m);
            let this = format!("LUN {path} (igroup {:?})", g.name);
            if let Some(other) = seen.insert(m.number, this.clone()) {
                return Err(ApiError::conflict(
                    code::DUPLICATE,
                    target,
                    format!(
                        "initiator {i:?} would see two LUNs at logical_unit_number {}: {other} \
                         and {this}; choose another number",
                        m.number
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `q`, listing `default` when it asks for no fields: objects without a `uuid` and `name`
/// of their own (a LUN map, the iSCSI service) show their keys, as ONTAP lists them.
fn default_fields(q: &Query, default: &[&str]) -> Query {
    let mut q = q.clone();
    if q.fields.is_empty() {
        q.fields = default.iter().map(|f| f.to_string()).collect();
    }
    q
}

/// `{name, uuid}` of a reference.
fn named(name: &str, uuid: &str) -> Value {
    json!({"name": name, "uuid": uuid})
}

fn not_found(target: &str, what: &str, r: impl std::fmt::Display, list: &str) -> ApiError {
    ApiError::not_found(target, format!("no {what} {r}; GET {list} lists them"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let d = |s: &str| s.replace("%2F", "/");
        assert_eq!(route(LUNS, d), Some(SanRoute::Luns));
        assert_eq!(
            route("/api/storage/luns/u1", d),
            Some(SanRoute::Lun("u1".into()))
        );
        assert_eq!(route("/api/storage/luns/u1/x", d), None);
        assert_eq!(route("/api/storage/lunsX", d), None);
        assert_eq!(
            route("/api/protocols/san/igroups/g/initiators", d),
            Some(SanRoute::Initiators("g".into()))
        );
        assert_eq!(
            route("/api/protocols/san/igroups/g/initiators/iqn.2026-01.x:a", d),
            Some(SanRoute::Initiator("g".into(), "iqn.2026-01.x:a".into()))
        );
        assert_eq!(route("/api/protocols/san/igroups/g/other", d), None);
        assert_eq!(
            route("/api/protocols/san/lun-maps/l/g", d),
            Some(SanRoute::Map("l".into(), "g".into()))
        );
        assert_eq!(route("/api/protocols/san/lun-maps/l", d), None);
        assert_eq!(route(ISCSI_SERVICES, d), Some(SanRoute::Services));
        assert_eq!(node_volume_name("db", "lun1"), "db:lun1");
        assert!(
            !crate::config::valid_name("db:lun1"),
            "no volume can be named like a LUN's"
        );
    }
}

#[cfg(test)]
mod tests_declared;
#[cfg(test)]
mod tests_live;
