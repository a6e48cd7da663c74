//! SAN bodies, checked once: LUNs (`/api/storage/luns`: `{"name": "/vol/db/lun1",
//! "os_type": "linux", "space": {"size": 1073741824}, "qos_policy": {"name": "p"}}`),
//! igroups (`/api/protocols/san/igroups`: `{"name", "protocol": "iscsi", "os_type",
//! "initiators": [{"name": IQN}]}`) and LUN maps (`/api/protocols/san/lun-maps`:
//! `{"lun": {"name"}, "igroup": {"name"}, "logical_unit_number"}`).

use qos_core::parse_size;
use serde_json::{Map, Value};

use super::{
    checked_name, code, name_uuid, object, only, policy_ref, string, svm, uint, unchangeable,
    wrong_type, ApiError, PolicyRef, Ref, Svm, R,
};
use crate::config::san::{split_lun_path, LunPathError};
use crate::config::NAME_RULE;
use iscsi_server::config::{valid_iscsi_name, MAX_LUN};

// The allowed values are node.toml's too (`[[lun]]`, `[[igroup]]`): one list each.
pub use crate::config::san::{
    IGROUP_OS_TYPES, LUN_BLOCK, LUN_OS_TYPES, MAX_LUN_SIZE, MIN_LUN_SIZE,
};

/// A LUN's path: `/vol/VOLUME/LUN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LunPath {
    pub volume: String,
    pub lun: String,
}

impl LunPath {
    pub fn text(&self) -> String {
        format!("/vol/{}/{}", self.volume, self.lun)
    }
}

/// The most characters a LUN's volume and LUN names have together: the LUN's file is
/// `VOLUME:LUN.img` in one directory, and a file name holds at most 255 bytes.
pub const MAX_LUN_NAMES: usize = 255 - ":.img".len();

/// Parse `/vol/VOLUME/LUN` (field `target` names it in errors).
pub fn lun_path(p: &str, target: &str) -> R<LunPath> {
    let bad = |why: String| {
        ApiError::bad(
            code::OUT_OF_RANGE,
            target,
            format!("{target} = {p:?}: {why}"),
        )
    };
    match split_lun_path(p) {
        Ok((vol, lun)) if vol.len() + lun.len() > MAX_LUN_NAMES => Err(bad(format!(
            "the volume's and the LUN's names have {} characters together, more than \
             {MAX_LUN_NAMES}: the LUN's file VOLUME:LUN.img would be {} bytes, and a file \
             name holds at most 255",
            vol.len() + lun.len(),
            vol.len() + lun.len() + 5
        ))),
        Ok((vol, lun)) => Ok(LunPath {
            volume: vol.to_string(),
            lun: lun.to_string(),
        }),
        Err(LunPathError::Name(which)) => Err(bad(format!(
            "{which:?} is not a valid name: names are {NAME_RULE}"
        ))),
        Err(LunPathError::Qtree) => Err(bad(
            "LUNs in qtrees are not supported: a LUN's path is /vol/VOLUME/LUN".into(),
        )),
        Err(LunPathError::Shape) => Err(bad("a LUN's path is /vol/VOLUME/LUN".into())),
    }
}

fn os_type(m: &Map<String, Value>, allowed: &[&str]) -> R<Option<String>> {
    match string(m, "", "os_type")? {
        None => Ok(None),
        Some(s) if allowed.contains(&s) => Ok(Some(s.to_string())),
        Some(s) => Err(ApiError::bad(
            code::OUT_OF_RANGE,
            "os_type",
            format!(
                "os_type = {s:?} is not one of ONTAP's: {}",
                allowed.join(", ")
            ),
        )),
    }
}

fn required<T>(v: Option<T>, field: &str) -> R<T> {
    v.ok_or_else(|| {
        ApiError::bad(
            code::MISSING_FIELD,
            field,
            format!("field \"{field}\" is required"),
        )
    })
}

/// `space.size`: bytes (an integer, or a string such as "1GiB"), a multiple of 512 from
/// 4 KiB to 128 TiB.
fn lun_size(v: &Value) -> R<u64> {
    let t = "space.size";
    let s = match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| {
            ApiError::bad(
                code::OUT_OF_RANGE,
                t,
                format!("{t} = {n}: a LUN's size is a whole number of bytes"),
            )
        })?,
        Value::String(s) => parse_size(s)
            .map_err(|e| ApiError::bad(code::OUT_OF_RANGE, t, format!("{t} = {s:?}: {e}")))?,
        v => {
            return Err(wrong_type(
                t,
                v,
                "an integer (bytes) or a string such as \"1GiB\"",
            ))
        }
    };
    if !(MIN_LUN_SIZE..=MAX_LUN_SIZE).contains(&s) {
        return Err(ApiError::bad(
            code::OUT_OF_RANGE,
            t,
            format!("{t} = {s} is out of range: allowed {MIN_LUN_SIZE} B (4 KiB) to {MAX_LUN_SIZE} B (128 TiB)"),
        ));
    }
    if s % LUN_BLOCK != 0 {
        return Err(ApiError::bad(
            code::OUT_OF_RANGE,
            t,
            format!("{t} = {s} is not a multiple of the LUN's {LUN_BLOCK}-byte logical block"),
        ));
    }
    Ok(s)
}

/// `space`: `size`, and `guarantee.requested` (thin only).
fn space(m: &Map<String, Value>) -> R<Option<u64>> {
    let Some(sp) = m.get("space") else {
        return Ok(None);
    };
    let sp = object(sp, "space")?;
    only(sp, "space", &["size", "guarantee"])?;
    if let Some(g) = sp.get("guarantee") {
        let g = object(g, "space.guarantee")?;
        only(g, "space.guarantee", &["requested"])?;
        match g.get("requested") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                return Err(ApiError::bad(
                    code::UNSUPPORTED,
                    "space.guarantee.requested",
                    "space.guarantee.requested = true is not supported: LUNs are thin \
                     (sparse files; space is allocated as it is written)",
                ))
            }
            Some(v) => return Err(wrong_type("space.guarantee.requested", v, "true or false")),
        }
    }
    sp.get("size").map(lun_size).transpose()
}

/// `qos_policy {name, uuid}`: `Some(None)` (null, `{}` or name "none"): the volume's.
fn qos_policy(m: &Map<String, Value>) -> R<Option<Option<PolicyRef>>> {
    m.get("qos_policy")
        .map(|p| policy_ref(p, "qos_policy"))
        .transpose()
}

fn reference(m: &Map<String, Value>, key: &str) -> R<Option<Ref>> {
    let Some(v) = m.get(key) else {
        return Ok(None);
    };
    let (name, uuid) = name_uuid(v, key)?;
    let r = Ref { name, uuid };
    if r.name.is_none() && r.uuid.is_none() {
        return Err(ApiError::bad(
            code::MISSING_FIELD,
            key,
            format!("{key} needs \"name\" or \"uuid\""),
        ));
    }
    Ok(Some(r))
}

/// A validated POST /api/storage/luns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLun {
    pub path: LunPath,
    pub os_type: String,
    pub size: u64,
    pub policy: Option<PolicyRef>,
    pub comment: String,
    pub svm: Option<Svm>,
}

pub fn new_lun(m: &Map<String, Value>) -> R<NewLun> {
    only(
        m,
        "",
        &[
            "name",
            "location",
            "os_type",
            "space",
            "qos_policy",
            "comment",
            "svm",
        ],
    )?;
    let loc = match m.get("location") {
        None => None,
        Some(v) => {
            let o = object(v, "location")?;
            only(o, "location", &["volume", "logical_unit"])?;
            let vol = reference(o, "volume")?;
            let unit = string(o, "location", "logical_unit")?.map(str::to_string);
            Some((vol, unit))
        }
    };
    let path = match (string(m, "", "name")?, &loc) {
        (Some(n), _) => lun_path(n, "name")?,
        (None, Some((Some(Ref { name: Some(v), .. }), Some(u)))) => {
            lun_path(&format!("/vol/{v}/{u}"), "location")?
        }
        _ => {
            return Err(ApiError::bad(
                code::MISSING_FIELD,
                "name",
                "field \"name\" (/vol/VOLUME/LUN) is required, or location.volume.name with \
                 location.logical_unit",
            ))
        }
    };
    if let Some((vol, unit)) = &loc {
        let disagree = vol
            .as_ref()
            .and_then(|v| v.name.as_ref())
            .is_some_and(|v| v != &path.volume)
            || unit.as_ref().is_some_and(|u| u != &path.lun);
        if disagree {
            return Err(ApiError::bad(
                code::CONFLICT_FIELDS,
                "location",
                format!("location names another LUN than name {:?}", path.text()),
            ));
        }
    }
    let os_type = required(os_type(m, LUN_OS_TYPES)?, "os_type")?;
    let size = required(space(m)?, "space.size")?;
    Ok(NewLun {
        path,
        os_type,
        size,
        policy: qos_policy(m)?.flatten(),
        comment: string(m, "", "comment")?.unwrap_or_default().to_string(),
        svm: svm(m)?,
    })
}

/// A validated PATCH of a LUN.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LunPatch {
    pub size: Option<u64>,
    /// `Some(None)`: back under its volume's policy.
    pub policy: Option<Option<PolicyRef>>,
    pub comment: Option<String>,
}

pub fn patch_lun(m: &Map<String, Value>) -> R<LunPatch> {
    only(
        m,
        "",
        &["space", "qos_policy", "comment", "name", "os_type"],
    )?;
    unchangeable(
        m,
        &[
            (
                "name",
                "name: renaming or moving a LUN is not supported: its path names its file",
            ),
            (
                "os_type",
                "os_type: a LUN's os_type is set when it is created",
            ),
        ],
    )?;
    Ok(LunPatch {
        size: space(m)?,
        policy: qos_policy(m)?,
        comment: string(m, "", "comment")?.map(str::to_string),
    })
}

/// `protocol`: iSCSI only (the node has no Fibre Channel).
fn protocol(m: &Map<String, Value>) -> R<Option<String>> {
    match string(m, "", "protocol")? {
        None => Ok(None),
        Some("iscsi") => Ok(Some("iscsi".into())),
        Some(p @ ("fcp" | "mixed")) => Err(ApiError::bad(
            code::UNSUPPORTED,
            "protocol",
            format!("protocol = {p:?} is not supported: this node serves LUNs over iSCSI only (\"iscsi\")"),
        )),
        Some(p) => Err(ApiError::bad(
            code::OUT_OF_RANGE,
            "protocol",
            format!("protocol = {p:?} is not one of fcp, iscsi, mixed"),
        )),
    }
}

/// One initiator object `{name, comment?}` (field `t`).
fn initiator(v: &Value, t: &str) -> R<String> {
    let o = object(v, t)?;
    only(o, t, &["name", "comment"])?;
    let n = required(string(o, t, "name")?, &format!("{t}.name"))?;
    if !valid_iscsi_name(n) {
        return Err(ApiError::bad(
            code::OUT_OF_RANGE,
            &format!("{t}.name"),
            format!(
                "{t}.name = {n:?} is not an iSCSI name: iqn.YYYY-MM.reversed.domain[:id] (or \
                 eui./naa.), at most 223 characters of A-Z a-z 0-9 . - :"
            ),
        ));
    }
    Ok(n.to_string())
}

/// `initiators`: an array of initiator objects, no name twice.
fn initiators(v: &Value, t: &str) -> R<Vec<String>> {
    let Value::Array(items) = v else {
        return Err(wrong_type(t, v, "an array of {\"name\": IQN} objects"));
    };
    let mut out: Vec<String> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        let n = initiator(it, &format!("{t}[{i}]"))?;
        if out.iter().any(|o| o.eq_ignore_ascii_case(&n)) {
            return Err(ApiError::bad(
                code::DUPLICATE,
                &format!("{t}[{i}].name"),
                format!("initiator {n:?} is given twice"),
            ));
        }
        out.push(n);
    }
    Ok(out)
}

/// The initiators of POST /api/protocols/san/igroups/{uuid}/initiators: one object, or
/// `{"records": [...]}`.
pub fn new_initiators(m: &Map<String, Value>) -> R<Vec<String>> {
    match m.get("records") {
        Some(r) => {
            only(m, "", &["records"])?;
            initiators(r, "records")
        }
        None => Ok(vec![initiator(&Value::Object(m.clone()), "initiator")?]),
    }
}

fn igroup_name(m: &Map<String, Value>) -> R<Option<String>> {
    checked_name(m, |n| {
        format!("name = {n:?} is not a valid igroup name: names are {NAME_RULE}")
    })
}

/// A validated POST /api/protocols/san/igroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIgroup {
    pub name: String,
    pub os_type: String,
    pub initiators: Vec<String>,
    pub comment: String,
    pub svm: Option<Svm>,
}

pub fn new_igroup(m: &Map<String, Value>) -> R<NewIgroup> {
    only(
        m,
        "",
        &[
            "name",
            "protocol",
            "os_type",
            "initiators",
            "comment",
            "svm",
        ],
    )?;
    protocol(m)?;
    Ok(NewIgroup {
        name: required(igroup_name(m)?, "name")?,
        os_type: required(os_type(m, IGROUP_OS_TYPES)?, "os_type")?,
        initiators: match m.get("initiators") {
            None => Vec::new(),
            Some(v) => initiators(v, "initiators")?,
        },
        comment: string(m, "", "comment")?.unwrap_or_default().to_string(),
        svm: svm(m)?,
    })
}

/// A validated PATCH of an igroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgroupPatch {
    pub name: Option<String>,
    pub os_type: Option<String>,
    pub comment: Option<String>,
}

pub fn patch_igroup(m: &Map<String, Value>) -> R<IgroupPatch> {
    only(
        m,
        "",
        &["name", "os_type", "comment", "protocol", "initiators"],
    )?;
    unchangeable(
        m,
        &[(
            "initiators",
            "initiators are added with POST /api/protocols/san/igroups/{uuid}/initiators and \
             removed with DELETE .../initiators/{name}",
        )],
    )?;
    if m.contains_key("protocol") {
        protocol(m)?;
    }
    Ok(IgroupPatch {
        name: igroup_name(m)?,
        os_type: os_type(m, IGROUP_OS_TYPES)?,
        comment: string(m, "", "comment")?.map(str::to_string),
    })
}

/// A validated POST /api/protocols/san/lun-maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMap {
    pub lun: Ref,
    pub igroup: Ref,
    pub number: Option<u16>,
    /// Checked against the igroup's SVM (the map's).
    pub svm: Option<Svm>,
}

pub fn new_map(m: &Map<String, Value>) -> R<NewMap> {
    only(m, "", &["lun", "igroup", "logical_unit_number", "svm"])?;
    Ok(NewMap {
        svm: svm(m)?,
        lun: required(reference(m, "lun")?, "lun")?,
        igroup: required(reference(m, "igroup")?, "igroup")?,
        number: uint(m, "", "logical_unit_number", MAX_LUN as u64)?.map(|n| n as u16),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[track_caller]
    fn refused<T: std::fmt::Debug>(r: R<T>, status: u16, target: &str, says: &str) {
        let e = r.expect_err("should be refused");
        assert_eq!((e.status, e.target.as_str()), (status, target), "{e:?}");
        assert!(e.message.contains(says), "{:?} lacks {says:?}", e.message);
    }

    #[test]
    fn lun_paths() {
        let p = lun_path("/vol/db/lun_1.a", "name").unwrap();
        assert_eq!((p.volume.as_str(), p.lun.as_str()), ("db", "lun_1.a"));
        assert_eq!(p.text(), "/vol/db/lun_1.a");
        refused(lun_path("db/lun1", "name"), 400, "name", "/vol/VOLUME/LUN");
        refused(lun_path("/vol/db", "name"), 400, "name", "/vol/VOLUME/LUN");
        refused(lun_path("/vol/db/q/lun", "name"), 400, "name", "qtrees");
        refused(
            lun_path("/vol/db/l:1", "name"),
            400,
            "name",
            "\"l:1\" is not a valid name",
        );
        refused(lun_path("/vol/-db/l", "name"), 400, "name", "\"-db\"");
    }

    #[test]
    fn new_luns_are_checked_field_by_field() {
        let ok = new_lun(&body(json!({
            "name": "/vol/db/lun1", "os_type": "linux",
            "space": {"size": "1GiB", "guarantee": {"requested": false}},
            "qos_policy": {"name": "gold"}
        })))
        .unwrap();
        assert_eq!(ok.size, 1 << 30);
        assert_eq!(ok.policy.unwrap().name.as_deref(), Some("gold"));
        let by_location = new_lun(&body(json!({
            "location": {"volume": {"name": "db"}, "logical_unit": "l2"},
            "os_type": "vmware", "space": {"size": 1048576}
        })))
        .unwrap();
        assert_eq!(by_location.path.text(), "/vol/db/l2");
        let base = json!({"name": "/vol/db/lun1", "os_type": "linux", "space": {"size": 1048576}});
        let with = |k: &str, v: Value| {
            let mut b = body(base.clone());
            b.insert(k.into(), v);
            new_lun(&b)
        };
        refused(
            with("os_type", json!("beos")),
            400,
            "os_type",
            "\"beos\" is not one of ONTAP's: aix",
        );
        refused(
            with("space", json!({"size": 1000})),
            400,
            "space.size",
            "out of range",
        );
        refused(
            with("space", json!({"size": 4097 * 512 + 1})),
            400,
            "space.size",
            "multiple of",
        );
        refused(
            with(
                "space",
                json!({"size": 4096, "guarantee": {"requested": true}}),
            ),
            400,
            "space.guarantee.requested",
            "thin",
        );
        refused(with("colour", json!(1)), 400, "colour", "unexpected field");
        refused(
            with("location", json!({"volume": {"name": "other"}})),
            400,
            "location",
            "another LUN",
        );
        let mut b = body(base.clone());
        b.remove("os_type");
        refused(new_lun(&b), 400, "os_type", "required");
        refused(
            patch_lun(&body(json!({"os_type": "windows"}))),
            400,
            "os_type",
            "set when it is created",
        );
        assert_eq!(
            patch_lun(&body(json!({"qos_policy": null})))
                .unwrap()
                .policy,
            Some(None)
        );
    }

    #[test]
    fn igroups_and_maps_are_checked() {
        let g = new_igroup(&body(json!({
            "name": "hosts", "protocol": "iscsi", "os_type": "linux",
            "initiators": [{"name": "iqn.1993-08.org.debian:01:a"}, {"name": "iqn.2026-01.x:b"}]
        })))
        .unwrap();
        assert_eq!(g.initiators.len(), 2);
        let with = |v: Value| new_igroup(&body(v));
        refused(
            with(json!({"name": "g", "protocol": "fcp", "os_type": "linux"})),
            400,
            "protocol",
            "iSCSI only",
        );
        refused(
            with(json!({"name": "g", "os_type": "solaris_efi"})),
            400,
            "os_type",
            "not one of",
        );
        refused(
            with(json!({"name": "g", "os_type": "linux", "initiators": [{"name": "host1"}]})),
            400,
            "initiators[0].name",
            "\"host1\" is not an iSCSI name",
        );
        refused(
            with(json!({"name": "g", "os_type": "linux", "initiators": [
                {"name": "iqn.2026-01.x:a"}, {"name": "IQN.2026-01.X:A"}]})),
            400,
            "initiators[1].name",
            "twice",
        );
        assert_eq!(
            new_initiators(&body(json!({"name": "iqn.2026-01.x:c"}))).unwrap(),
            ["iqn.2026-01.x:c"]
        );
        let m = new_map(&body(
            json!({"lun": {"name": "/vol/db/l"}, "igroup": {"name": "g"}}),
        ))
        .unwrap();
        assert_eq!(m.number, None);
        refused(
            new_map(&body(
                json!({"lun": {"name": "/vol/db/l"}, "igroup": {"name": "g"},
                "logical_unit_number": 16384}),
            )),
            400,
            "logical_unit_number",
            "allowed 0 to 16383",
        );
        refused(
            new_map(&body(json!({"lun": {"name": "/vol/db/l"}}))),
            400,
            "igroup",
            "required",
        );
    }
}
