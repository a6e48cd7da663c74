//! Export rules as ONTAP writes them (`/api/protocols/nfs/export-policies` rules, the
//! `[[export_policy]]` tables of node.toml, `qoslab export-policy` flags): the words, their
//! defaults, and what they mean ([`RuleText::parse`] into an enforced [`Rule`]). Errors
//! name the field and the value.

use super::export_policy::{ClientMatch, Flavours, Policy, Rule, ANON_DEFAULT};

/// An export rule as ONTAP writes it, every field filled (ONTAP's defaults where the
/// writer gave none: [`RuleText::new`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleText {
    pub clients: Vec<String>,
    pub ro_rule: Vec<String>,
    pub rw_rule: Vec<String>,
    pub superuser: Vec<String>,
    /// A numeric user id (qoslab has no name services).
    pub anonymous_user: String,
    pub allow_suid: bool,
    /// `restricted` or `unrestricted`.
    pub chown_mode: String,
    /// `fail` or `ignore` (NTFS security style only: no effect on qoslab's UNIX volumes).
    pub ntfs_unix_security: String,
    pub protocols: Vec<String>,
    /// Kept as given (MKNOD is not served: no device is ever created).
    pub allow_device_creation: bool,
}

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The flavours a rule may name: qoslab serves AUTH_SYS and AUTH_NONE.
const FLAVOURS: &str = "any, sys, none or never (qoslab serves AUTH_SYS and AUTH_NONE)";
const SUPERUSER: &str = "any, sys or none (qoslab serves AUTH_SYS and AUTH_NONE)";
const PROTOCOLS: &[&str] = &["any", "nfs", "nfs3", "nfs4", "cifs", "flexcache"];

fn flavours(field: &str, v: &[String], allowed: &str) -> Result<Flavours, String> {
    if v.is_empty() {
        return Err(format!("{field}: give at least one of {allowed}"));
    }
    let mut f = Flavours::default();
    for w in v {
        match w.as_str() {
            "any" => f.any = true,
            "sys" => f.sys = true,
            "none" => f.none = true,
            "never" => f.never = true,
            "krb5" | "krb5i" | "krb5p" | "ntlm" => {
                return Err(format!(
                    "{field}: {w:?} is not supported (no Kerberos or NTLM here); use {allowed}"
                ))
            }
            other => return Err(format!("{field}: {other:?} is not one of {allowed}")),
        }
    }
    Ok(f)
}

impl RuleText {
    /// A rule for `clients` with ONTAP's defaults: `ro_rule`/`rw_rule` `any` (qoslab's
    /// default where ONTAP requires them), `superuser` `none` (root is the anonymous user),
    /// `anonymous_user` 65534, `allow_suid` true, `chown_mode` restricted,
    /// `ntfs_unix_security` fail, `protocols` any, `allow_device_creation` true.
    pub fn new(clients: Vec<String>) -> RuleText {
        RuleText {
            clients,
            ro_rule: words(&["any"]),
            rw_rule: words(&["any"]),
            superuser: words(&["none"]),
            anonymous_user: ANON_DEFAULT.to_string(),
            allow_suid: true,
            chown_mode: "restricted".into(),
            ntfs_unix_security: "fail".into(),
            protocols: words(&["any"]),
            allow_device_creation: true,
        }
    }

    /// The rule of the built-in `default` policy: loopback only, read-write, root kept
    /// (`superuser` any): the node's own host, whose root owns the data directory anyway.
    pub fn loopback() -> RuleText {
        RuleText {
            superuser: words(&["any"]),
            ..RuleText::new(words(&["127.0.0.0/8", "::1"]))
        }
    }

    /// The rule it means (read-write needs both rules to grant, as in ONTAP; a rule that
    /// grants nothing still ends the search). Errors start with the field's name.
    pub fn parse(&self) -> Result<Rule, String> {
        if self.clients.is_empty() {
            return Err("clients: give at least one match (ADDR, ADDR/PREFIX, or 0.0.0.0/0 for every IPv4 client)".into());
        }
        let mut clients = Vec::new();
        for c in &self.clients {
            clients.extend(ClientMatch::parse(c).map_err(|e| {
                format!("clients: {e} (host names, domains and netgroups are not supported)")
            })?);
        }
        let ro = flavours("ro_rule", &self.ro_rule, FLAVOURS)?;
        let rw = flavours("rw_rule", &self.rw_rule, FLAVOURS)?;
        let mut superuser = flavours("superuser", &self.superuser, SUPERUSER)?;
        // ONTAP lists `never` for superuser too: root is never root, as with `none`.
        if superuser.never {
            superuser = Flavours::NONE;
        }
        let anon = self
            .anonymous_user
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|a| *a <= 65535)
            .ok_or_else(|| {
                format!(
                    "anonymous_user: {:?} is not a user id 0..65535 (qoslab has no name \
                     services: give the number, e.g. 65534)",
                    self.anonymous_user
                )
            })?;
        let chown_unrestricted = match self.chown_mode.as_str() {
            "restricted" => false,
            "unrestricted" => true,
            other => {
                return Err(format!(
                    "chown_mode: {other:?} is not restricted or unrestricted"
                ))
            }
        };
        if !matches!(self.ntfs_unix_security.as_str(), "fail" | "ignore") {
            return Err(format!(
                "ntfs_unix_security: {:?} is not fail or ignore",
                self.ntfs_unix_security
            ));
        }
        if self.protocols.is_empty() {
            return Err(format!(
                "protocols: give at least one of {}",
                PROTOCOLS.join(", ")
            ));
        }
        if let Some(bad) = self
            .protocols
            .iter()
            .find(|p| !PROTOCOLS.contains(&p.as_str()))
        {
            return Err(format!(
                "protocols: {bad:?} is not one of {}",
                PROTOCOLS.join(", ")
            ));
        }
        Ok(Rule {
            clients,
            ro,
            rw,
            superuser,
            anon,
            allow_suid: self.allow_suid,
            chown_unrestricted,
            nfs3: self
                .protocols
                .iter()
                .any(|p| matches!(p.as_str(), "any" | "nfs" | "nfs3")),
        })
    }
}

/// A policy from its rules in order; an error names the rule (1-based, ONTAP's `index`).
/// The built-in policy: the loopback rule (written here, beside the parser it goes through).
impl Default for Policy {
    fn default() -> Self {
        policy_from("default", &[RuleText::loopback()]).expect("the built-in rule is valid")
    }
}

pub fn policy_from(name: &str, rules: &[RuleText]) -> Result<Policy, String> {
    let rules = rules
        .iter()
        .enumerate()
        .map(|(i, r)| r.parse().map_err(|e| format!("rule {}: {e}", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Policy {
        name: name.to_string(),
        rules,
    })
}

#[cfg(test)]
mod tests {
    use super::super::export_policy::{Decision, Identity};
    use super::*;

    fn t(c: &[&str], ro: &[&str], rw: &[&str]) -> RuleText {
        RuleText {
            ro_rule: words(ro),
            rw_rule: words(rw),
            ..RuleText::new(words(c))
        }
    }

    #[test]
    fn ontap_words_and_defaults() {
        let p = policy_from(
            "p",
            &[
                t(&["10.9.0.0/16"], &["never"], &["any"]),
                t(&["10.0.0.0/8"], &["sys"], &["never"]),
                t(&["0.0.0.0/0"], &["any"], &["sys"]),
            ],
        )
        .unwrap();
        let ip = |s: &str| s.parse().unwrap();
        assert_eq!(p.decide(ip("10.9.1.1"), None), Decision::Refused);
        let who = Identity {
            uid: 0,
            gid: 0,
            gids: vec![],
        };
        // ONTAP's default superuser is none: root is 65534.
        match p.decide(ip("192.0.2.1"), Some(&who)) {
            Decision::Granted(g) => assert_eq!((g.who.uid, g.write), (65534, true)),
            other => panic!("{other:?}"),
        }
        // `sys` alone refuses AUTH_NONE
        assert_eq!(p.decide(ip("10.1.1.1"), None), Decision::Refused);
        let r = RuleText::loopback().parse().unwrap();
        assert!(r.superuser.any && r.allow_suid && !r.chown_unrestricted && r.nfs3);
        let v4only = RuleText {
            protocols: words(&["nfs4"]),
            ..RuleText::new(words(&["any"]))
        };
        assert!(
            !v4only.parse().unwrap().nfs3,
            "an NFSv4-only rule never matches"
        );
    }

    #[test]
    fn errors_name_the_rule_field_and_value() {
        let with = |f: fn(&mut RuleText)| {
            let mut r = RuleText::new(words(&["::1"]));
            f(&mut r);
            r
        };
        for (bad, says) in [
            (t(&[], &["any"], &["any"]), "clients"),
            (t(&["host.example"], &["any"], &["any"]), "host names"),
            (
                t(&["::1"], &["krb5"], &["any"]),
                "ro_rule: \"krb5\" is not supported",
            ),
            (t(&["::1"], &["any"], &[]), "rw_rule"),
            (
                with(|r| r.superuser = words(&["ntlm"])),
                "superuser: \"ntlm\"",
            ),
            (
                with(|r| r.anonymous_user = "pcuser".into()),
                "anonymous_user: \"pcuser\"",
            ),
            (with(|r| r.anonymous_user = "70000".into()), "0..65535"),
            (
                with(|r| r.chown_mode = "open".into()),
                "chown_mode: \"open\"",
            ),
            (
                with(|r| r.ntfs_unix_security = "x".into()),
                "ntfs_unix_security",
            ),
            (
                with(|r| r.protocols = words(&["smb"])),
                "protocols: \"smb\"",
            ),
        ] {
            let e = policy_from("p", &[bad]).unwrap_err();
            assert!(e.starts_with("rule 1: ") && e.contains(says), "{e}");
        }
    }
}
