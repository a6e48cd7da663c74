//! `[[export_policy]]` (ONTAP's export policies: rules of client matches with
//! ro_rule/rw_rule/superuser/anonymous_user...), validated here: the node holds them (a
//! NAS volume names one; the REST API edits them). `[nfs]`, the NFS front end's own
//! settings, is nfs-server's (its `config`).

use serde::Deserialize;

use super::ConfigError;
use crate::nas::export_policy::Policy;
use crate::nas::export_rule::{policy_from, RuleText};

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
