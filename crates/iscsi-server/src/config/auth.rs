//! `[[iscsi.credentials]]`: how each initiator authenticates to the node's iSCSI target,
//! in ONTAP's shape (`vserver iscsi security`, REST `/api/protocols/san/iscsi/credentials`):
//! an entry for `default` and one per initiator, each `chap`, `none` or `deny`. The secrets
//! stay in files (`USER SECRET`), named here and read when the node starts.
//!
//! Also the exposure rule a non-loopback listener must pass ([`exposure_problems`]): every
//! LUN names its initiators, and every initiator that sees a LUN proves itself with CHAP.

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::{valid_iscsi_name, IscsiSettings};
use storage_node::config::{ConfigError, Src};

/// How an initiator authenticates (ONTAP's `-auth-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthType {
    /// Logs in without a secret.
    None,
    /// Proves a CHAP secret (and, where an outbound secret is set, may ask the target to).
    Chap,
    /// Refused at login.
    Deny,
}

impl AuthType {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthType::None => "none",
            AuthType::Chap => "chap",
            AuthType::Deny => "deny",
        }
    }
}

/// One `[[iscsi.credentials]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialSpec {
    /// The initiator's iSCSI name; `None`: `default`, every initiator without an entry.
    pub initiator: Option<String>,
    pub auth: AuthType,
    /// `USER SECRET` the initiator proves (CHAP only). Relative: inside the data directory.
    pub chap_file: Option<PathBuf>,
    /// `USER SECRET` the target proves when asked (mutual CHAP; optional).
    pub outbound_chap_file: Option<PathBuf>,
    /// Where it was declared (`node.toml:31`), for errors found when the files are read.
    pub at: String,
}

impl CredentialSpec {
    /// `default` or the initiator's name, as errors and summaries show it.
    pub fn name(&self) -> &str {
        self.initiator.as_deref().unwrap_or("default")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCredential {
    initiator: Spanned<String>,
    authentication_type: Spanned<String>,
    chap_file: Option<Spanned<PathBuf>>,
    outbound_chap_file: Option<Spanned<PathBuf>>,
}

/// Validate the `[[iscsi.credentials]]` entries: names, types, and each type's files.
pub(super) fn parse(
    src: &Src,
    raw: &[Spanned<RawCredential>],
) -> Result<Vec<CredentialSpec>, ConfigError> {
    let mut out: Vec<CredentialSpec> = Vec::new();
    for (i, sc) in raw.iter().enumerate() {
        let c = sc.get_ref();
        let name = c.initiator.get_ref();
        let err = |s: usize, field: &str, shown: String, msg: &str| {
            ConfigError(format!(
                "{}: iscsi.credentials[{i}] (initiator {name:?}): {field} = {shown}: {msg}",
                src.at(s)
            ))
        };
        let is = c.initiator.span().start;
        let initiator = if name == "default" {
            None
        } else if valid_iscsi_name(name) {
            Some(name.clone())
        } else {
            let msg = "`default` or an initiator's iSCSI name \
                       (iqn.YYYY-MM.reversed.domain[:id], eui. or naa.)";
            return Err(err(is, "initiator", format!("{name:?}"), msg));
        };
        if let Some(first) = out.iter().position(|o| o.name().eq_ignore_ascii_case(name)) {
            let msg = format!("iscsi.credentials[{first}] is this initiator's already");
            return Err(err(is, "initiator", format!("{name:?}"), &msg));
        }
        let t = &c.authentication_type;
        let auth = match t.get_ref().as_str() {
            "chap" => AuthType::Chap,
            "none" => AuthType::None,
            "deny" => AuthType::Deny,
            other => {
                let msg = "allowed values are \"chap\", \"none\" and \"deny\"";
                return Err(err(
                    t.span().start,
                    "authentication_type",
                    format!("{other:?}"),
                    msg,
                ));
            }
        };
        let file = |f: &Option<Spanned<PathBuf>>, field: &str| match f {
            Some(p) if p.get_ref().as_os_str().is_empty() => Err(err(
                p.span().start,
                field,
                "\"\"".into(),
                "a path to a file holding `USER SECRET`",
            )),
            Some(p) if auth != AuthType::Chap => Err(err(
                p.span().start,
                field,
                format!("{:?}", p.get_ref()),
                &format!(
                    "secrets go with authentication_type = \"chap\", this entry is {:?}",
                    auth.as_str()
                ),
            )),
            _ => Ok(f.as_ref().map(|p| p.get_ref().clone())),
        };
        let chap_file = file(&c.chap_file, "chap_file")?;
        let outbound_chap_file = file(&c.outbound_chap_file, "outbound_chap_file")?;
        if auth == AuthType::Chap && chap_file.is_none() {
            return Err(ConfigError(format!(
                "{}: iscsi.credentials[{i}] (initiator {name:?}): authentication_type = \"chap\" \
                 needs chap_file = \"PATH\" (a file holding `USER SECRET`)",
                src.at(sc.span().start)
            )));
        }
        out.push(CredentialSpec {
            initiator,
            auth,
            chap_file,
            outbound_chap_file,
            at: src.at(sc.span().start),
        });
    }
    Ok(out)
}

impl IscsiSettings {
    /// The entry that decides `initiator`'s login: its own, else `default`'s (`None`: no
    /// entry applies, the initiator logs in without a secret, as ONTAP's built-in default).
    pub fn credential(&self, initiator: &str) -> Option<&CredentialSpec> {
        let own = self.credentials.iter().find(|c| {
            c.initiator
                .as_deref()
                .is_some_and(|i| i.eq_ignore_ascii_case(initiator))
        });
        own.or_else(|| self.credentials.iter().find(|c| c.initiator.is_none()))
    }

    /// How `initiator` authenticates.
    pub fn auth_type(&self, initiator: &str) -> AuthType {
        self.credential(initiator)
            .map_or(AuthType::None, |c| c.auth)
    }
}

/// What keeps these settings from being served beyond loopback, one line each (empty:
/// nothing): a LUN that every initiator sees, and an initiator that sees a LUN and may
/// log in without CHAP. An initiator's name is only what it claims, so a LUN is private
/// only when each name that sees it must prove a secret.
pub fn exposure_problems(s: &IscsiSettings) -> Vec<String> {
    let mut problems = Vec::new();
    for l in &s.luns {
        match &l.initiators {
            None => problems.push(format!(
                "LUN {} (volume {:?}) is open to every initiator: give its [[iscsi.lun]] \
                 initiators = [\"IQN\", ...]",
                l.number, l.volume
            )),
            Some(list) => {
                for i in list {
                    let auth = s.auth_type(i);
                    if auth == AuthType::None {
                        let why = match s.credential(i) {
                            Some(c) => {
                                format!("its [[iscsi.credentials]] ({}) says \"none\"", c.at)
                            }
                            None => "no [[iscsi.credentials]] entry applies (default: none)".into(),
                        };
                        problems.push(format!(
                            "initiator {i:?} sees LUN {} (volume {:?}) without CHAP: {why}; \
                             give it (or `default`) authentication_type = \"chap\"",
                            l.number, l.volume
                        ));
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::{exposure_problems, AuthType};
    use crate::config::tests::{parse_as, Parsed};

    const VOLUMES: &str = "[[volume]]\nname = \"db\"\nsize = \"1GiB\"\n\
                           [[volume]]\nname = \"logs\"\nsize = \"64MiB\"\n";
    const A: &str = "iqn.2026-01.lab.example:a";
    const B: &str = "iqn.2026-01.lab.example:b";

    fn parse(iscsi: &str) -> Result<Parsed, String> {
        parse_as(&format!("{VOLUMES}{iscsi}"), "node.toml")
    }

    #[test]
    fn each_initiator_takes_its_own_entry_else_the_default() {
        let cfg = parse(&format!(
            r#"
[[iscsi.credentials]]
initiator = "default"
authentication_type = "deny"
[[iscsi.credentials]]
initiator = "{A}"
authentication_type = "chap"
chap_file = "a.chap"
outbound_chap_file = "/etc/qoslab/target.chap"
[[iscsi.credentials]]
initiator = "{B}"
authentication_type = "none"
"#
        ))
        .unwrap();
        let s = &cfg.iscsi;
        assert_eq!(s.auth_type(A), AuthType::Chap);
        // iSCSI names compare without regard to case.
        assert_eq!(s.auth_type(&A.to_uppercase()), AuthType::Chap);
        assert_eq!(s.auth_type(B), AuthType::None);
        assert_eq!(s.auth_type("iqn.2026-01.lab.example:c"), AuthType::Deny);
        let a = s.credential(A).unwrap();
        assert_eq!(a.chap_file.as_deref(), Some("a.chap".as_ref()));
        assert_eq!(
            a.outbound_chap_file.as_deref(),
            Some("/etc/qoslab/target.chap".as_ref())
        );
        assert_eq!(a.at, "node.toml:11");
        // No entries: every initiator logs in without a secret (ONTAP's built-in default).
        assert_eq!(parse("").unwrap().iscsi.auth_type(A), AuthType::None);
    }

    #[test]
    fn bad_entries_are_refused_naming_line_field_and_value() {
        let refused = |iscsi: &str, want: &str| {
            assert_eq!(parse(iscsi).expect_err(iscsi), want, "\n{iscsi}");
        };
        // VOLUMES is 6 lines; the snippets start on line 7.
        let entry = "[[iscsi.credentials]]\n";
        refused(
            &format!("{entry}initiator = \"host1\"\nauthentication_type = \"none\"\n"),
            "node.toml:8: iscsi.credentials[0] (initiator \"host1\"): initiator = \"host1\": `default` or an initiator's iSCSI name (iqn.YYYY-MM.reversed.domain[:id], eui. or naa.)",
        );
        refused(
            &format!("{entry}initiator = \"{A}\"\nauthentication_type = \"CHAP5\"\n"),
            "node.toml:9: iscsi.credentials[0] (initiator \"iqn.2026-01.lab.example:a\"): authentication_type = \"CHAP5\": allowed values are \"chap\", \"none\" and \"deny\"",
        );
        refused(
            &format!("{entry}initiator = \"{A}\"\nauthentication_type = \"chap\"\n"),
            "node.toml:7: iscsi.credentials[0] (initiator \"iqn.2026-01.lab.example:a\"): authentication_type = \"chap\" needs chap_file = \"PATH\" (a file holding `USER SECRET`)",
        );
        refused(
            &format!(
                "{entry}initiator = \"default\"\nauthentication_type = \"none\"\nchap_file = \"x\"\n"
            ),
            "node.toml:10: iscsi.credentials[0] (initiator \"default\"): chap_file = \"x\": secrets go with authentication_type = \"chap\", this entry is \"none\"",
        );
        refused(
            &format!(
                "{entry}initiator = \"{A}\"\nauthentication_type = \"deny\"\n\
                 {entry}initiator = \"{}\"\nauthentication_type = \"none\"\n",
                A.to_uppercase()
            ),
            "node.toml:11: iscsi.credentials[1] (initiator \"IQN.2026-01.LAB.EXAMPLE:A\"): initiator = \"IQN.2026-01.LAB.EXAMPLE:A\": iscsi.credentials[0] is this initiator's already",
        );
        let err = parse(&format!(
            "{entry}initiator = \"{A}\"\nauthentication_type = \"none\"\nsecret = \"x\"\n"
        ))
        .unwrap_err();
        assert!(
            err.starts_with("node.toml:10: unknown field `secret`"),
            "{err}"
        );
    }

    #[test]
    fn beyond_loopback_every_lun_is_masked_and_every_initiator_that_sees_one_uses_chap() {
        let luns = format!(
            "[[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"{A}\", \"{B}\"]\n\
             [[iscsi.lun]]\nvolume = \"logs\"\n"
        );
        let problems = |creds: &str| {
            let cfg = parse(&format!("{luns}{creds}")).unwrap();
            exposure_problems(&cfg.iscsi)
        };
        assert_eq!(
            problems(""),
            [
                format!("initiator \"{A}\" sees LUN 0 (volume \"db\") without CHAP: no [[iscsi.credentials]] entry applies (default: none); give it (or `default`) authentication_type = \"chap\""),
                format!("initiator \"{B}\" sees LUN 0 (volume \"db\") without CHAP: no [[iscsi.credentials]] entry applies (default: none); give it (or `default`) authentication_type = \"chap\""),
                "LUN 1 (volume \"logs\") is open to every initiator: give its [[iscsi.lun]] initiators = [\"IQN\", ...]".to_string(),
            ]
        );
        let chap_default = "[[iscsi.credentials]]\ninitiator = \"default\"\n\
                            authentication_type = \"chap\"\nchap_file = \"c\"\n";
        let b_none =
            format!("[[iscsi.credentials]]\ninitiator = \"{B}\"\nauthentication_type = \"none\"\n");
        let masked = "[[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"iqn.2026-01.lab.example:a\", \"iqn.2026-01.lab.example:b\"]\n";
        let only = |creds: &str| {
            let cfg = parse(&format!("{masked}{creds}")).unwrap();
            exposure_problems(&cfg.iscsi)
        };
        // `default` chap covers both; B's own `none` entry reopens it for B alone.
        assert_eq!(only(chap_default), Vec::<String>::new());
        assert_eq!(
            only(&format!("{chap_default}{b_none}")),
            [format!("initiator \"{B}\" sees LUN 0 (volume \"db\") without CHAP: its [[iscsi.credentials]] (node.toml:14) says \"none\"; give it (or `default`) authentication_type = \"chap\"")]
        );
        // A denied initiator never logs in: not a problem.
        let deny_b =
            format!("[[iscsi.credentials]]\ninitiator = \"{B}\"\nauthentication_type = \"deny\"\n");
        assert_eq!(
            only(&format!("{chap_default}{deny_b}")),
            Vec::<String>::new()
        );
    }
}
