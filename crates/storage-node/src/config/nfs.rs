//! `[nfs]` (the NFS front end's address, transfer sizes and ONTAP's reserved-port options)
//! and `[[export_policy]]` (ONTAP's export policies: rules of client matches with
//! ro_rule/rw_rule/superuser/anonymous_user...), validated here.

use std::net::SocketAddr;

use serde::Deserialize;

use super::ConfigError;
use crate::nas::export_policy::Policy;
use crate::nas::export_rule::{policy_from, RuleText};

/// ONTAP's default `-tcp-max-xfer-size`: what FSINFO advertises as rtmax/wtmax unless
/// told otherwise, so a client's 128 KiB read is two READs.
pub const DEFAULT_XFER: u32 = 64 * 1024;
/// The largest transfer size ONTAP allows (and qoslab does).
pub const MAX_XFER: u32 = 1024 * 1024;

/// The NFS front end's settings (`[nfs]`, `serve --listen-nfs`, `--nfs-rtmax/--nfs-wtmax`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NfsSettings {
    /// Where NFSv3, MOUNT and the portmapper listen (`None`: NFS is off).
    pub listen: Option<SocketAddr>,
    /// FSINFO's rtmax/wtmax: clients split larger requests themselves.
    pub rtmax: u32,
    pub wtmax: u32,
    /// ONTAP's `-mount-rootonly` (default enabled): MOUNT only from a reserved source port
    /// (below 1024, which only root can bind).
    pub mount_rootonly: bool,
    /// ONTAP's `-nfs-rootonly` (default disabled): every NFS call only from a reserved port.
    pub nfs_rootonly: bool,
}

impl Default for NfsSettings {
    fn default() -> Self {
        NfsSettings {
            listen: None,
            rtmax: DEFAULT_XFER,
            wtmax: DEFAULT_XFER,
            mount_rootonly: true,
            nfs_rootonly: false,
        }
    }
}

/// Check a transfer size: 4 KiB..1 MiB, a multiple of 4 KiB. `what` names it.
pub fn check_xfer(what: &str, v: u64) -> Result<u32, String> {
    if (4096..=MAX_XFER as u64).contains(&v) && v.is_multiple_of(4096) {
        Ok(v as u32)
    } else {
        Err(format!(
            "{what} = {v}: allowed values are multiples of 4096 from 4096 to {MAX_XFER} (4KiB..1MiB)"
        ))
    }
}

/// A declared export policy: its ONTAP rules as written and what they mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPolicySpec {
    pub rules: Vec<RuleText>,
    pub policy: Policy,
}

impl ExportPolicySpec {
    pub fn name(&self) -> &str {
        &self.policy.name
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNfs {
    listen: Option<String>,
    rtmax: Option<super::NumOrStr>,
    wtmax: Option<super::NumOrStr>,
    mount_rootonly: Option<bool>,
    nfs_rootonly: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExportPolicy {
    pub(super) name: String,
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    clients: Vec<String>,
    ro_rule: Option<Vec<String>>,
    rw_rule: Option<Vec<String>>,
    superuser: Option<Vec<String>>,
    anonymous_user: Option<super::NumOrStr>,
    allow_suid: Option<bool>,
    chown_mode: Option<String>,
    ntfs_unix_security: Option<String>,
    protocols: Option<Vec<String>>,
    allow_device_creation: Option<bool>,
}

/// Validate `[nfs]`; `what` names the table (`node.toml:12: nfs`).
pub(super) fn parse(what: &str, raw: &RawNfs) -> Result<NfsSettings, ConfigError> {
    let mut s = NfsSettings::default();
    if let Some(l) = &raw.listen {
        s.listen = Some(l.parse().map_err(|_| {
            ConfigError(format!(
                "{what}.listen = {l:?}: expected HOST:PORT with an IP address, e.g. 127.0.0.1:2049"
            ))
        })?);
    }
    let size =
        |field: &str, v: &Option<super::NumOrStr>, default: u32| -> Result<u32, ConfigError> {
            let Some(v) = v else { return Ok(default) };
            let bytes = match v {
                super::NumOrStr::Int(i) if *i >= 0 => *i as u64,
                super::NumOrStr::Str(t) => qos_core::parse_size(t)
                    .map_err(|e| ConfigError(format!("{what}.{field}: {e}")))?,
                other => {
                    return Err(ConfigError(format!(
                        "{what}.{field} = {}: give bytes or a size such as \"64KiB\"",
                        other.as_text()
                    )))
                }
            };
            check_xfer(&format!("{what}.{field}"), bytes).map_err(ConfigError)
        };
    s.rtmax = size("rtmax", &raw.rtmax, DEFAULT_XFER)?;
    s.wtmax = size("wtmax", &raw.wtmax, DEFAULT_XFER)?;
    s.mount_rootonly = raw.mount_rootonly.unwrap_or(s.mount_rootonly);
    s.nfs_rootonly = raw.nfs_rootonly.unwrap_or(s.nfs_rootonly);
    Ok(s)
}

/// Validate one `[[export_policy]]`; `what` names it (`node.toml:20: export_policy "k8s"`).
pub(super) fn export_policy(
    what: &str,
    raw: &RawExportPolicy,
) -> Result<ExportPolicySpec, ConfigError> {
    let rules: Vec<RuleText> = raw
        .rule
        .iter()
        .map(|r| {
            let d = RuleText::new(r.clients.clone());
            RuleText {
                ro_rule: r.ro_rule.clone().unwrap_or(d.ro_rule),
                rw_rule: r.rw_rule.clone().unwrap_or(d.rw_rule),
                superuser: r.superuser.clone().unwrap_or(d.superuser),
                anonymous_user: r
                    .anonymous_user
                    .as_ref()
                    .map(|a| a.as_text())
                    .unwrap_or(d.anonymous_user),
                allow_suid: r.allow_suid.unwrap_or(d.allow_suid),
                chown_mode: r.chown_mode.clone().unwrap_or(d.chown_mode),
                ntfs_unix_security: r.ntfs_unix_security.clone().unwrap_or(d.ntfs_unix_security),
                protocols: r.protocols.clone().unwrap_or(d.protocols),
                allow_device_creation: r.allow_device_creation.unwrap_or(d.allow_device_creation),
                clients: d.clients,
            }
        })
        .collect();
    let policy = policy_from(&raw.name, &rules).map_err(|e| ConfigError(format!("{what}: {e}")))?;
    Ok(ExportPolicySpec { rules, policy })
}
