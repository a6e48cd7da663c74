//! node.toml's `[iscsi]` and `[[iscsi.lun]]`: the node's iSCSI target (its address, name
//! and LUNs), parsed and checked here (`[[iscsi.credentials]]`, who logs in how, in
//! [`auth`]). The node's own sections are [`NodeConfig`]'s (a LUN names one of its block
//! volumes); messages are made as its are ([`Src`]).
//!
//! A LUN is a block volume of this file served as a SCSI logical unit: its blocks, its
//! size and its QoS policy are the volume's (one storage layer under every protocol), so
//! a policy's ceilings, floors, burst and adaptive rules hold a LUN as they hold the
//! volume over NBD.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Deserialize;
use toml::Spanned;

pub mod auth;

use auth::{CredentialSpec, RawCredential};
use storage_node::config::{ConfigError, Src, VolumeSpec};
use storage_node::NodeConfig;

/// The target's name unless `[iscsi] iqn` says otherwise (also `qoslab iscsi serve`'s).
pub const DEFAULT_IQN: &str = "iqn.2026-01.lab.qoslab:target0";
/// The largest LUN number (SAM's flat space addressing: 14 bits).
pub use iscsi_proto::url::MAX_LUN;

/// The iSCSI front end's settings (`[iscsi]`, `serve --listen-iscsi`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IscsiSettings {
    /// Where the target listens (`None`: iSCSI is off).
    pub listen: Option<SocketAddr>,
    /// The target's iSCSI name.
    pub iqn: String,
    /// Its alias (TargetAlias), if any.
    pub alias: Option<String>,
    /// The address SendTargets reports (ONTAP's iSCSI LIF), when initiators reach the
    /// target through NAT or a forwarded port; its port `None`: the listener's. `None`:
    /// the address each discovery connection reached.
    pub portal: Option<(std::net::IpAddr, Option<u16>)>,
    /// The LUNs, sorted by number.
    pub luns: Vec<LunSpec>,
    /// How initiators authenticate (`[[iscsi.credentials]]`; none: without a secret).
    pub credentials: Vec<CredentialSpec>,
}

impl Default for IscsiSettings {
    fn default() -> Self {
        IscsiSettings {
            listen: None,
            iqn: DEFAULT_IQN.into(),
            alias: None,
            portal: None,
            luns: Vec::new(),
            credentials: Vec::new(),
        }
    }
}

/// One `[[iscsi.lun]]`: a block volume served as a LUN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LunSpec {
    /// Its LUN number (0..=16383).
    pub number: u16,
    /// The block volume whose blocks, size and policy it has.
    pub volume: String,
    /// Its logical block size: 512 or 4096.
    pub block_size: u32,
    /// The initiators that see it (LUN masking); `None`: every initiator.
    pub initiators: Option<Vec<String>>,
}

/// The file as iSCSI reads it: its `[iscsi]`, the rest ignored (the node's parser refuses
/// unknown keys).
#[derive(Deserialize)]
struct RawFile {
    // Not `Spanned`: `[[iscsi.lun]]` alone makes the table implicitly (its keys are).
    iscsi: Option<RawIscsi>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIscsi {
    listen: Option<Spanned<String>>,
    iqn: Option<Spanned<String>>,
    alias: Option<Spanned<String>>,
    portal: Option<Spanned<String>>,
    #[serde(default)]
    lun: Vec<Spanned<RawLun>>,
    #[serde(default)]
    credentials: Vec<Spanned<RawCredential>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLun {
    volume: Spanned<String>,
    lun: Option<Spanned<i64>>,
    block_size: Option<Spanned<i64>>,
    initiators: Option<Spanned<Vec<String>>>,
}

/// Whether `name` is an iSCSI name (RFC 7143 §4.2.7: `iqn.`, `eui.` or `naa.`, at most
/// 223 bytes, no spaces or control characters): the one rule of the node, the harness and
/// the suites.
pub use iscsi_proto::url::valid_iscsi_name;

const NAME_RULE: &str = "an iSCSI name is iqn.YYYY-MM.reversed.domain[:id] (or eui./naa.), \
                         at most 223 characters of A-Z a-z 0-9 . - :";

/// The settings of config text `src`'s `[iscsi]` (the defaults without one), against its
/// node sections `node` (already parsed: a LUN names one of its block volumes).
pub fn parse(src: &Src, node: &NodeConfig) -> Result<IscsiSettings, ConfigError> {
    let raw: RawFile = src.deserialize()?;
    match &raw.iscsi {
        None => Ok(IscsiSettings::default()),
        Some(r) => settings(src, r, &node.volumes),
    }
}

/// Validate `[iscsi]` against the file's volumes (`volumes`, already validated).
fn settings(
    src: &Src,
    raw: &RawIscsi,
    volumes: &[VolumeSpec],
) -> Result<IscsiSettings, ConfigError> {
    let at = |s: usize, field: &str, shown: &str, msg: String| {
        ConfigError(format!("{}: iscsi.{field} = {shown}: {msg}", src.at(s)))
    };
    let mut s = IscsiSettings::default();
    if let Some(l) = &raw.listen {
        s.listen = Some(l.get_ref().parse().map_err(|_| {
            at(
                l.span().start,
                "listen",
                &format!("{:?}", l.get_ref()),
                "expected HOST:PORT with an IP address, e.g. 127.0.0.1:3260".into(),
            )
        })?);
    }
    if let Some(n) = &raw.iqn {
        if !valid_iscsi_name(n.get_ref()) {
            let shown = format!("{:?}", n.get_ref());
            return Err(at(n.span().start, "iqn", &shown, NAME_RULE.into()));
        }
        s.iqn = n.get_ref().clone();
    }
    if let Some(a) = &raw.alias {
        let t = a.get_ref();
        if t.is_empty() || t.len() > 255 || t.chars().any(|c| c.is_control()) {
            let shown = format!("{t:?}");
            let msg = "an alias is 1 to 255 characters, none of them control characters";
            return Err(at(a.span().start, "alias", &shown, msg.into()));
        }
        s.alias = Some(t.clone());
    }
    if let Some(p) = &raw.portal {
        s.portal = Some(parse_portal(p.get_ref()).ok_or_else(|| {
            at(
                p.span().start,
                "portal",
                &format!("{:?}", p.get_ref()),
                "expected an IP address, with :PORT or without (the listener's port), \
                 e.g. 192.0.2.10 or 192.0.2.10:3260 ([v6] with a port)"
                    .into(),
            )
        })?);
    }
    s.luns = luns(src, &raw.lun, volumes)?;
    s.credentials = auth::parse(src, &raw.credentials)?;
    Ok(s)
}

/// `IP`, `IP:PORT` or `[IPv6]:PORT`.
fn parse_portal(t: &str) -> Option<(std::net::IpAddr, Option<u16>)> {
    if let Ok(ip) = t.parse() {
        return Some((ip, None));
    }
    let a: SocketAddr = t.parse().ok()?;
    (a.port() != 0).then_some((a.ip(), Some(a.port())))
}

/// The `[[iscsi.lun]]` entries: explicit numbers first, then the others take the next
/// free numbers from 0 in the order written.
fn luns(
    src: &Src,
    raw: &[Spanned<RawLun>],
    volumes: &[VolumeSpec],
) -> Result<Vec<LunSpec>, ConfigError> {
    let mut by_number: BTreeMap<u16, String> = BTreeMap::new();
    let mut by_volume: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: Vec<(Option<u16>, LunSpec)> = Vec::new();
    for (i, sl) in raw.iter().enumerate() {
        let l = sl.get_ref();
        let name = l.volume.get_ref();
        let err = |s: usize, field: &str, shown: String, msg: String| {
            ConfigError(format!(
                "{}: iscsi.lun[{i}] (volume {name:?}): {field} = {shown}: {msg}",
                src.at(s)
            ))
        };
        let vs = l.volume.span().start;
        let vol =
            block_volume(volumes, name).map_err(|m| err(vs, "volume", format!("{name:?}"), m))?;
        if let Some(first) = by_volume.insert(name.clone(), i) {
            let msg = format!("iscsi.lun[{first}] serves this volume already (one LUN a volume)");
            return Err(err(vs, "volume", format!("{name:?}"), msg));
        }
        let block_size = match &l.block_size {
            None => 512,
            Some(b) if matches!(b.get_ref(), 512 | 4096) => *b.get_ref() as u32,
            Some(b) => {
                let msg = "allowed values are 512 and 4096".to_string();
                return Err(err(
                    b.span().start,
                    "block_size",
                    b.get_ref().to_string(),
                    msg,
                ));
            }
        };
        if !vol.size.is_multiple_of(block_size as u64) {
            let at = l.block_size.as_ref().map_or(vs, |b| b.span().start);
            let msg = format!(
                "the volume's size, {} bytes, is not a multiple of the {block_size}-byte block",
                vol.size
            );
            return Err(err(at, "block_size", block_size.to_string(), msg));
        }
        let initiators = match &l.initiators {
            None => None,
            Some(list) => {
                let shown = format!("{:?}", list.get_ref());
                if list.get_ref().is_empty() {
                    let msg = "give at least one initiator, or leave the key out (every initiator sees the LUN)";
                    return Err(err(list.span().start, "initiators", shown, msg.into()));
                }
                if let Some(bad) = list.get_ref().iter().find(|n| !valid_iscsi_name(n)) {
                    let msg = format!("{bad:?} is not an iSCSI name: {NAME_RULE}");
                    return Err(err(list.span().start, "initiators", shown, msg));
                }
                Some(list.get_ref().clone())
            }
        };
        let number = match &l.lun {
            None => None,
            Some(n) => {
                let v = *n.get_ref();
                let Some(num) = u16::try_from(v).ok().filter(|x| *x <= MAX_LUN) else {
                    let msg = format!("allowed range is 0 to {MAX_LUN}");
                    return Err(err(n.span().start, "lun", v.to_string(), msg));
                };
                if let Some(other) = by_number.insert(num, name.clone()) {
                    let msg = format!("LUN {num} is volume {other:?}'s already");
                    return Err(err(n.span().start, "lun", v.to_string(), msg));
                }
                Some(num)
            }
        };
        out.push((
            number,
            LunSpec {
                number: number.unwrap_or(0),
                volume: name.clone(),
                block_size,
                initiators,
            },
        ));
    }
    number_the_rest(src, &mut out, &mut by_number)?;
    let mut luns: Vec<LunSpec> = out.into_iter().map(|(_, s)| s).collect();
    luns.sort_by_key(|l| l.number);
    Ok(luns)
}

/// Block volume `name` of this file, or what is wrong with it (the message after
/// `volume = "NAME": `).
fn block_volume<'a>(volumes: &'a [VolumeSpec], name: &str) -> Result<&'a VolumeSpec, String> {
    let Some(vol) = volumes.iter().find(|v| v.name == name) else {
        let declared: Vec<&str> = volumes
            .iter()
            .filter(|v| v.nas.is_none())
            .map(|v| v.name.as_str())
            .collect();
        return Err(format!(
            "not a [[volume]] of this file (its block volumes: {})",
            if declared.is_empty() {
                "none".to_string()
            } else {
                declared.join(", ")
            }
        ));
    };
    if vol.nas.is_some() {
        return Err("a NAS volume (nas_path); a LUN is a block volume".to_string());
    }
    Ok(vol)
}

/// The LUNs written without a number take the next free numbers from 0, in the order
/// written (`by_number`: the numbers taken).
fn number_the_rest(
    src: &Src,
    luns: &mut [(Option<u16>, LunSpec)],
    by_number: &mut BTreeMap<u16, String>,
) -> Result<(), ConfigError> {
    let mut next = 0u16;
    for (explicit, spec) in luns {
        if explicit.is_none() {
            while by_number.contains_key(&next) {
                next += 1;
            }
            if next > MAX_LUN {
                return Err(ConfigError(format!(
                    "{}: iscsi.lun: more than {} LUNs",
                    src.origin,
                    MAX_LUN as u32 + 1
                )));
            }
            spec.number = next;
            by_number.insert(next, spec.volume.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use storage_node::config::Src;
    use storage_node::NodeConfig;

    use super::IscsiSettings;

    const VOLUMES: &str = r#"
[[volume]]
name = "db"
size = "1GiB"
[[volume]]
name = "logs"
size = "64MiB"
[[volume]]
name = "odd"
size = 6144
[[volume]]
name = "home"
size = "1GiB"
nas_path = "/home"
"#;

    /// The node's sections and iSCSI's, as `qoslab serve` reads them.
    #[derive(Debug)]
    pub(super) struct Parsed {
        pub(super) iscsi: IscsiSettings,
    }

    pub(super) fn parse_as(text: &str, origin: &str) -> Result<Parsed, String> {
        let node = NodeConfig::parse(text, origin).map_err(|e| e.to_string())?;
        let iscsi = super::parse(&Src::new(text, origin), &node).map_err(|e| e.to_string())?;
        Ok(Parsed { iscsi })
    }

    fn parse(iscsi: &str) -> Result<Parsed, String> {
        parse_as(&format!("{VOLUMES}{iscsi}"), "node.toml")
    }

    #[track_caller]
    fn refused(iscsi: &str, want: &str) {
        let err = parse(iscsi).expect_err("should be refused");
        assert_eq!(err, want, "\n{iscsi}");
    }

    #[test]
    fn luns_take_explicit_numbers_then_the_next_free_ones() {
        let cfg = parse(
            r#"
[iscsi]
listen = "127.0.0.1:3260"
iqn = "iqn.2026-01.lab.example:db"
alias = "db target"
[[iscsi.lun]]
volume = "logs"
[[iscsi.lun]]
volume = "db"
lun = 0
[[iscsi.lun]]
volume = "odd"
block_size = 512
initiators = ["iqn.1993-08.org.debian:01:host1", "IQN.1993-08.org.debian:01:host2"]
"#,
        )
        .unwrap();
        let s = &cfg.iscsi;
        assert_eq!(s.listen, Some("127.0.0.1:3260".parse().unwrap()));
        assert_eq!(
            (s.iqn.as_str(), s.alias.as_deref()),
            ("iqn.2026-01.lab.example:db", Some("db target"))
        );
        let got: Vec<(u16, &str, u32, usize)> = s
            .luns
            .iter()
            .map(|l| {
                let n = l.initiators.as_ref().map_or(0, Vec::len);
                (l.number, l.volume.as_str(), l.block_size, n)
            })
            .collect();
        assert_eq!(
            got,
            [(0, "db", 512, 0), (1, "logs", 512, 0), (2, "odd", 512, 2)]
        );
        assert_eq!(s.portal, None);
        let portal =
            |t: &str| parse(&format!("[iscsi]\nportal = \"{t}\"\n")).map(|c| c.iscsi.portal);
        assert_eq!(
            portal("10.0.2.2").unwrap(),
            Some(("10.0.2.2".parse().unwrap(), None))
        );
        assert_eq!(
            portal("[::1]:3261").unwrap(),
            Some(("::1".parse().unwrap(), Some(3261)))
        );
        // `[[iscsi.lun]]` alone: no listener (the command line may give it), the default name.
        let cfg = parse("[[iscsi.lun]]\nvolume = \"db\"\n").unwrap();
        assert_eq!(cfg.iscsi.listen, None);
        assert_eq!(cfg.iscsi.iqn, super::DEFAULT_IQN);
        assert_eq!(cfg.iscsi.luns.len(), 1);
        assert_eq!(parse_as(VOLUMES, "n").unwrap().iscsi.luns, []);
    }

    #[test]
    fn bad_values_are_refused_naming_line_field_and_value() {
        // VOLUMES is 14 lines; the snippets start on line 15.
        refused(
            "[iscsi]\nlisten = \"nowhere\"\n",
            "node.toml:16: iscsi.listen = \"nowhere\": expected HOST:PORT with an IP address, e.g. 127.0.0.1:3260",
        );
        refused(
            "[iscsi]\niqn = \"target0\"\n",
            "node.toml:16: iscsi.iqn = \"target0\": an iSCSI name is iqn.YYYY-MM.reversed.domain[:id] (or eui./naa.), at most 223 characters of A-Z a-z 0-9 . - :",
        );
        refused(
            "[iscsi]\nportal = \"nas01:3260\"\n",
            "node.toml:16: iscsi.portal = \"nas01:3260\": expected an IP address, with :PORT or without (the listener's port), e.g. 192.0.2.10 or 192.0.2.10:3260 ([v6] with a port)",
        );
        refused(
            "[iscsi]\nalias = \"\"\n",
            "node.toml:16: iscsi.alias = \"\": an alias is 1 to 255 characters, none of them control characters",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"nope\"\n",
            "node.toml:16: iscsi.lun[0] (volume \"nope\"): volume = \"nope\": not a [[volume]] of this file (its block volumes: db, logs, odd)",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"home\"\n",
            "node.toml:16: iscsi.lun[0] (volume \"home\"): volume = \"home\": a NAS volume (nas_path); a LUN is a block volume",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"db\"\n[[iscsi.lun]]\nvolume = \"db\"\n",
            "node.toml:18: iscsi.lun[1] (volume \"db\"): volume = \"db\": iscsi.lun[0] serves this volume already (one LUN a volume)",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"db\"\nlun = 16384\n",
            "node.toml:17: iscsi.lun[0] (volume \"db\"): lun = 16384: allowed range is 0 to 16383",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"db\"\nlun = 2\n[[iscsi.lun]]\nvolume = \"logs\"\nlun = 2\n",
            "node.toml:20: iscsi.lun[1] (volume \"logs\"): lun = 2: LUN 2 is volume \"db\"'s already",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"db\"\nblock_size = 1024\n",
            "node.toml:17: iscsi.lun[0] (volume \"db\"): block_size = 1024: allowed values are 512 and 4096",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"odd\"\nblock_size = 4096\n",
            "node.toml:17: iscsi.lun[0] (volume \"odd\"): block_size = 4096: the volume's size, 6144 bytes, is not a multiple of the 4096-byte block",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"host1\"]\n",
            "node.toml:17: iscsi.lun[0] (volume \"db\"): initiators = [\"host1\"]: \"host1\" is not an iSCSI name: an iSCSI name is iqn.YYYY-MM.reversed.domain[:id] (or eui./naa.), at most 223 characters of A-Z a-z 0-9 . - :",
        );
        refused(
            "[[iscsi.lun]]\nvolume = \"db\"\ninitiators = []\n",
            "node.toml:17: iscsi.lun[0] (volume \"db\"): initiators = []: give at least one initiator, or leave the key out (every initiator sees the LUN)",
        );
        // Unknown keys: toml's own message, with the line.
        let err = parse("[[iscsi.lun]]\nvolume = \"db\"\nsize = \"1GiB\"\n").unwrap_err();
        assert!(
            err.starts_with("node.toml:17: unknown field `size`"),
            "{err}"
        );
    }
}
