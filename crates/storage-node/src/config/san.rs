//! `[[lun]]`, `[[igroup]]` and `[[lun_map]]`: ONTAP's SAN objects declared in node.toml,
//! in the shape of its REST API (`/api/storage/luns`, `/api/protocols/san/igroups`,
//! `/api/protocols/san/lun-maps`). They are checked here; the control plane applies each
//! at start when it is new or was edited since it was last applied (as `[[volume]]`s
//! are), after which they are ordinary SAN objects of the state database.
//!
//! (`[[iscsi.lun]]`, a whole block volume as a LUN, is the other way: iscsi-server's
//! `config`.)

use std::collections::BTreeSet;

use serde::Deserialize;
use toml::Spanned;

use super::{valid_name, ConfigError, NumOrStr, Src, VolumeSpec, NAME_RULE};
use iscsi_proto::url::{valid_iscsi_name, MAX_LUN};

/// ONTAP's LUN `os_type` values.
pub const LUN_OS_TYPES: &[&str] = &[
    "aix",
    "hpux",
    "hyper_v",
    "linux",
    "netware",
    "openvms",
    "solaris",
    "solaris_efi",
    "vmware",
    "windows",
    "windows_2008",
    "windows_gpt",
    "xen",
];

/// ONTAP's igroup `os_type` values.
pub const IGROUP_OS_TYPES: &[&str] = &[
    "aix", "hpux", "hyper_v", "linux", "netware", "openvms", "solaris", "vmware", "windows", "xen",
];

/// The smallest LUN (ONTAP's smallest is 4 KiB) and the logical block every LUN size
/// is a multiple of.
pub const MIN_LUN_SIZE: u64 = 4096;
pub const LUN_BLOCK: u64 = 512;
/// The largest LUN (ONTAP's: 128 TiB).
pub const MAX_LUN_SIZE: u64 = 128 << 40;

/// Why a LUN path is not `/vol/VOLUME/LUN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LunPathError<'a> {
    /// This part is not a valid name ([`valid_name`]).
    Name(&'a str),
    /// `/vol/VOLUME/QTREE/LUN`: LUNs in qtrees are not supported.
    Qtree,
    /// Not `/vol/...` with two parts.
    Shape,
}

/// The volume and LUN names of `/vol/VOLUME/LUN`, for node.toml and the REST API alike.
/// Both are valid names (never empty, `/`, `..` or `:`), so the LUN's file name, made
/// from them, stays in the data directory.
pub fn split_lun_path(p: &str) -> Result<(&str, &str), LunPathError<'_>> {
    let parts: Vec<&str> = p.strip_prefix("/vol/").unwrap_or("").split('/').collect();
    match parts.as_slice() {
        [v, n] if valid_name(v) && valid_name(n) => Ok((v, n)),
        [v, n] => Err(LunPathError::Name(if valid_name(v) { n } else { v })),
        [_, _, _] => Err(LunPathError::Qtree),
        _ => Err(LunPathError::Shape),
    }
}

/// One `[[lun]]`: a LUN inside a block volume of this file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SanLunSpec {
    /// The block volume that holds it.
    pub volume: String,
    /// Its name inside the volume (the last part of `/vol/VOLUME/LUN`).
    pub name: String,
    pub size: u64,
    pub os_type: String,
    /// Its own QoS policy (`None`: its volume's).
    pub policy: Option<String>,
    /// Where it is declared (`node.toml:12`).
    pub at: String,
}

impl SanLunSpec {
    /// `/vol/VOLUME/LUN`.
    pub fn path(&self) -> String {
        format!("/vol/{}/{}", self.volume, self.name)
    }

    /// What is compared with the last applied declaration (not where it is written).
    pub fn fingerprint(&self) -> String {
        format!(
            "lun {} size {} os_type {} policy {:?}",
            self.path(),
            self.size,
            self.os_type,
            self.policy
        )
    }
}

/// One `[[igroup]]`: iSCSI initiators that see the same LUNs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgroupSpec {
    pub name: String,
    pub os_type: String,
    pub initiators: Vec<String>,
    pub at: String,
}

impl IgroupSpec {
    pub fn fingerprint(&self) -> String {
        format!(
            "igroup {} os_type {} initiators {:?}",
            self.name, self.os_type, self.initiators
        )
    }
}

/// One `[[lun_map]]`: a `[[lun]]` mapped to an `[[igroup]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LunMapSpec {
    /// The LUN's path, `/vol/VOLUME/LUN`.
    pub lun: String,
    pub igroup: String,
    /// Its number (`None`: the smallest the igroup's initiators do not see yet).
    pub number: Option<u16>,
    pub at: String,
}

impl LunMapSpec {
    pub fn fingerprint(&self) -> String {
        format!(
            "lun_map {} igroup {} number {:?}",
            self.lun, self.igroup, self.number
        )
    }
}

/// The SAN objects node.toml declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SanDecls {
    pub luns: Vec<SanLunSpec>,
    pub igroups: Vec<IgroupSpec>,
    pub maps: Vec<LunMapSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLun {
    path: Spanned<String>,
    size: Spanned<NumOrStr>,
    os_type: Spanned<String>,
    policy: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIgroup {
    name: Spanned<String>,
    os_type: Spanned<String>,
    protocol: Option<Spanned<String>>,
    initiators: Option<Spanned<Vec<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLunMap {
    lun: Spanned<String>,
    igroup: Spanned<String>,
    logical_unit_number: Option<Spanned<i64>>,
}

/// The raw sections, as the file has them.
pub(super) struct RawSan<'a> {
    pub luns: &'a [Spanned<RawLun>],
    pub igroups: &'a [Spanned<RawIgroup>],
    pub maps: &'a [Spanned<RawLunMap>],
}

/// `file:line: SECTION[i] (WHAT): FIELD = VALUE: WHY`.
fn err(src: &Src, off: usize, sect: &str, field: &str, shown: String, why: String) -> ConfigError {
    ConfigError(format!("{}: {sect}: {field} = {shown}: {why}", src.at(off)))
}

fn one_of(v: &Spanned<String>, allowed: &[&str]) -> Result<String, String> {
    if allowed.contains(&v.get_ref().as_str()) {
        Ok(v.get_ref().clone())
    } else {
        Err(format!(
            "allowed values are ONTAP's: {}",
            allowed.join(", ")
        ))
    }
}

/// Validate the SAN sections against the file's volumes and policy names.
pub(super) fn parse(
    src: &Src,
    raw: RawSan,
    volumes: &[VolumeSpec],
    policies: &BTreeSet<String>,
) -> Result<SanDecls, ConfigError> {
    let luns = luns(src, raw.luns, volumes, policies)?;
    let igroups = igroups(src, raw.igroups)?;
    let maps = maps(src, raw.maps, &luns, &igroups)?;
    Ok(SanDecls {
        luns,
        igroups,
        maps,
    })
}

/// `[[lun]]`: a path in a block volume of this file, a size, an os_type, a policy.
fn luns(
    src: &Src,
    raw: &[Spanned<RawLun>],
    volumes: &[VolumeSpec],
    policies: &BTreeSet<String>,
) -> Result<Vec<SanLunSpec>, ConfigError> {
    let mut out: Vec<SanLunSpec> = Vec::new();
    for (i, sl) in raw.iter().enumerate() {
        let l = sl.get_ref();
        let p = l.path.get_ref();
        let sect = format!("lun[{i}] ({p:?})");
        let e =
            |off, field: &str, shown: String, why: String| err(src, off, &sect, field, shown, why);
        let po = l.path.span().start;
        let (vol, name) = match split_lun_path(p) {
            Ok((v, n)) => (v.to_string(), n.to_string()),
            Err(LunPathError::Name(which)) => {
                let why = format!("{which:?} is not a valid name: names are {NAME_RULE}");
                return Err(e(po, "path", format!("{p:?}"), why));
            }
            Err(LunPathError::Qtree | LunPathError::Shape) => {
                let why = "a LUN's path is /vol/VOLUME/LUN (no qtrees)".to_string();
                return Err(e(po, "path", format!("{p:?}"), why));
            }
        };
        let blocks: Vec<&str> = volumes
            .iter()
            .filter(|v| v.nas.is_none())
            .map(|v| v.name.as_str())
            .collect();
        match volumes.iter().find(|v| v.name == vol) {
            Some(v) if v.nas.is_some() => {
                let why = format!(
                    "volume {vol:?} is a NAS volume (nas_path); a LUN lives in a block volume"
                );
                return Err(e(po, "path", format!("{p:?}"), why));
            }
            Some(_) => {}
            None => {
                let list = if blocks.is_empty() {
                    "none".to_string()
                } else {
                    blocks.join(", ")
                };
                let why = format!(
                    "volume {vol:?} is not a [[volume]] of this file (its block volumes: {list})"
                );
                return Err(e(po, "path", format!("{p:?}"), why));
            }
        }
        if out.iter().any(|o| o.volume == vol && o.name == name) {
            let why = "declared twice (a path names one LUN)".to_string();
            return Err(e(po, "path", format!("{p:?}"), why));
        }
        let so = l.size.span().start;
        let shown = match l.size.get_ref() {
            NumOrStr::Str(s) => format!("{s:?}"),
            other => other.as_text(),
        };
        let size = match l.size.get_ref() {
            NumOrStr::Int(i) if *i >= 0 => Ok(*i as u64),
            NumOrStr::Str(s) => qos_core::parse_size(s).map_err(|m| m.to_string()),
            _ => {
                Err("a LUN's size is a whole number of bytes, or a string such as \"10GiB\"".into())
            }
        }
        .map_err(|why| e(so, "size", shown.clone(), why))?;
        if !(MIN_LUN_SIZE..=MAX_LUN_SIZE).contains(&size) || size % LUN_BLOCK != 0 {
            let why = format!(
                "{size} bytes: allowed is a multiple of {LUN_BLOCK} bytes from 4 KiB to 128 TiB"
            );
            return Err(e(so, "size", shown, why));
        }
        let os_type = one_of(&l.os_type, LUN_OS_TYPES).map_err(|why| {
            let shown = format!("{:?}", l.os_type.get_ref());
            e(l.os_type.span().start, "os_type", shown, why)
        })?;
        if let Some(pn) = &l.policy {
            if !policies.contains(pn.get_ref()) {
                let known: Vec<&str> = policies.iter().map(String::as_str).collect();
                let why = format!("not defined; defined policies: {}", known.join(", "));
                return Err(e(
                    pn.span().start,
                    "policy",
                    format!("{:?}", pn.get_ref()),
                    why,
                ));
            }
        }
        out.push(SanLunSpec {
            volume: vol,
            name,
            size,
            os_type,
            policy: l.policy.as_ref().map(|p| p.get_ref().clone()),
            at: src.at(po),
        });
    }
    Ok(out)
}

/// `[[igroup]]`: a name, an os_type, iSCSI initiators.
fn igroups(src: &Src, raw: &[Spanned<RawIgroup>]) -> Result<Vec<IgroupSpec>, ConfigError> {
    let mut out: Vec<IgroupSpec> = Vec::new();
    for (i, sg) in raw.iter().enumerate() {
        let g = sg.get_ref();
        let n = g.name.get_ref();
        let sect = format!("igroup[{i}] ({n:?})");
        let e =
            |off, field: &str, shown: String, why: String| err(src, off, &sect, field, shown, why);
        let no = g.name.span().start;
        if !valid_name(n) {
            return Err(e(
                no,
                "name",
                format!("{n:?}"),
                format!("names are {NAME_RULE}"),
            ));
        }
        if out.iter().any(|o| &o.name == n) {
            let why = "declared twice".to_string();
            return Err(e(no, "name", format!("{n:?}"), why));
        }
        if let Some(p) = &g.protocol {
            if p.get_ref() != "iscsi" {
                let why = "this node serves LUNs over iSCSI only: \"iscsi\" (no fcp or mixed)";
                return Err(e(
                    p.span().start,
                    "protocol",
                    format!("{:?}", p.get_ref()),
                    why.into(),
                ));
            }
        }
        let os_type = one_of(&g.os_type, IGROUP_OS_TYPES).map_err(|why| {
            let shown = format!("{:?}", g.os_type.get_ref());
            e(g.os_type.span().start, "os_type", shown, why)
        })?;
        let empty = Vec::new();
        let (list, io) = match &g.initiators {
            Some(l) => (l.get_ref(), l.span().start),
            None => (&empty, no),
        };
        let mut initiators: Vec<String> = Vec::new();
        for name in list {
            if !valid_iscsi_name(name) {
                let why = format!(
                    "{name:?} is not an iSCSI name: iqn.YYYY-MM.reversed.domain[:id] (or \
                     eui./naa.), at most 223 characters of A-Z a-z 0-9 . - :"
                );
                return Err(e(io, "initiators", format!("{list:?}"), why));
            }
            if initiators.iter().any(|o| o.eq_ignore_ascii_case(name)) {
                let why = format!("{name:?} is given twice (names are case-insensitive)");
                return Err(e(io, "initiators", format!("{list:?}"), why));
            }
            initiators.push(name.clone());
        }
        out.push(IgroupSpec {
            name: n.clone(),
            os_type,
            initiators,
            at: src.at(no),
        });
    }
    Ok(out)
}

/// `[[lun_map]]`: a `[[lun]]` to an `[[igroup]]` of this file, at a number or the next free.
fn maps(
    src: &Src,
    raw: &[Spanned<RawLunMap>],
    luns: &[SanLunSpec],
    igroups: &[IgroupSpec],
) -> Result<Vec<LunMapSpec>, ConfigError> {
    let mut out: Vec<LunMapSpec> = Vec::new();
    for (i, sm) in raw.iter().enumerate() {
        let m = sm.get_ref();
        let (lun, igroup) = (m.lun.get_ref(), m.igroup.get_ref());
        let sect = format!("lun_map[{i}] ({lun:?} to {igroup:?})");
        let e =
            |off, field: &str, shown: String, why: String| err(src, off, &sect, field, shown, why);
        let lo = m.lun.span().start;
        if !luns.iter().any(|l| &l.path() == lun) {
            let known: Vec<String> = luns.iter().map(SanLunSpec::path).collect();
            let why = format!(
                "not a [[lun]] of this file (its LUNs: {})",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            );
            return Err(e(lo, "lun", format!("{lun:?}"), why));
        }
        if !igroups.iter().any(|g| &g.name == igroup) {
            let known: Vec<&str> = igroups.iter().map(|g| g.name.as_str()).collect();
            let why = format!(
                "not an [[igroup]] of this file (its igroups: {})",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            );
            return Err(e(
                m.igroup.span().start,
                "igroup",
                format!("{igroup:?}"),
                why,
            ));
        }
        if out.iter().any(|o| &o.lun == lun && &o.igroup == igroup) {
            let why = format!("this LUN is mapped to igroup {igroup:?} already");
            return Err(e(lo, "lun", format!("{lun:?}"), why));
        }
        let number = match &m.logical_unit_number {
            None => None,
            Some(n) if (0..=i64::from(MAX_LUN)).contains(n.get_ref()) => {
                let num = *n.get_ref() as u16;
                if let Some(o) = out
                    .iter()
                    .find(|o| &o.igroup == igroup && o.number == Some(num))
                {
                    let why = format!(
                        "igroup {igroup:?} sees LUN {} at this number already",
                        o.lun
                    );
                    return Err(e(
                        n.span().start,
                        "logical_unit_number",
                        num.to_string(),
                        why,
                    ));
                }
                Some(num)
            }
            Some(n) => {
                let why = format!("allowed range is 0 to {MAX_LUN}");
                return Err(e(
                    n.span().start,
                    "logical_unit_number",
                    n.get_ref().to_string(),
                    why,
                ));
            }
        };
        out.push(LunMapSpec {
            lun: lun.clone(),
            igroup: igroup.clone(),
            number,
            at: src.at(lo),
        });
    }
    Ok(out)
}
