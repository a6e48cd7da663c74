//! Export policies: which clients may use a NAS volume, read-only or read-write. The
//! rules follow ONTAP's export policies in shape (an ordered list of rules, each a client
//! match and an access level; the first rule that matches decides; no match, no access),
//! reduced to what NFSv3 over AUTH_SYS needs. The node keeps them (`Node::export_policy`);
//! the NFS front end checks them on every call.

use std::net::IpAddr;

/// Access a rule grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
    /// The rule matches and grants nothing (ONTAP's `never` in both ro_rule and rw_rule):
    /// later rules are not consulted.
    NoAccess,
}

/// A client match: an address with a prefix length (`10.0.0.0/8`, `127.0.0.1`,
/// `::1`, `0.0.0.0/0` for every IPv4 client, `::/0` for every IPv6 one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientMatch {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl ClientMatch {
    /// Parses `ADDR` or `ADDR/PREFIX`; `any` is every client (IPv4 and IPv6).
    pub fn parse(s: &str) -> Result<Vec<ClientMatch>, String> {
        if s == "any" {
            return Ok(vec![
                ClientMatch {
                    addr: IpAddr::from([0, 0, 0, 0]),
                    prefix: 0,
                },
                ClientMatch {
                    addr: IpAddr::from([0u16; 8]),
                    prefix: 0,
                },
            ]);
        }
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| {
            format!(
                "client match {s:?}: {addr:?} is not an IP address (use ADDR, ADDR/PREFIX or any)"
            )
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("client match {s:?}: prefix {p:?} is not 0..={max}"))?,
        };
        Ok(vec![ClientMatch { addr, prefix }])
    }

    pub fn matches(&self, client: IpAddr) -> bool {
        let client = match client {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(client),
            v4 => v4,
        };
        match (self.addr, client) {
            (IpAddr::V4(net), IpAddr::V4(c)) => masked(
                u32::from(net) as u128,
                u32::from(c) as u128,
                self.prefix,
                32,
            ),
            (IpAddr::V6(net), IpAddr::V6(c)) => {
                masked(u128::from(net), u128::from(c), self.prefix, 128)
            }
            _ => false,
        }
    }
}

fn masked(net: u128, c: u128, prefix: u8, bits: u32) -> bool {
    if prefix == 0 {
        return true;
    }
    let shift = bits - prefix as u32;
    (net >> shift) == (c >> shift)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub clients: Vec<ClientMatch>,
    pub access: Access,
}

/// An ordered list of rules. The default is loopback only, read-write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub name: String,
    pub rules: Vec<Rule>,
}

impl Default for Policy {
    fn default() -> Self {
        let mut clients = ClientMatch::parse("127.0.0.0/8").expect("valid");
        clients.extend(ClientMatch::parse("::1").expect("valid"));
        Policy {
            name: "default".into(),
            rules: vec![Rule {
                clients,
                access: Access::ReadWrite,
            }],
        }
    }
}

impl Policy {
    /// What the first matching rule grants, `None` when no rule matches.
    pub fn access(&self, client: IpAddr) -> Option<Access> {
        self.rules
            .iter()
            .find(|r| r.clients.iter().any(|m| m.matches(client)))
            .map(|r| r.access)
            .filter(|a| *a != Access::NoAccess)
    }

    /// The client groups MOUNT's EXPORT procedure lists.
    pub fn groups(&self) -> Vec<String> {
        self.rules
            .iter()
            .flat_map(|r| r.clients.iter())
            .map(|m| format!("{}/{}", m.addr, m.prefix))
            .collect()
    }
}

/// An export rule as ONTAP writes it (`/api/protocols/nfs/export-policies`, and
/// `[[export_policy]]` in node.toml): client matches and the security flavours granted
/// read-only and read-write access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleText {
    pub clients: Vec<String>,
    pub ro_rule: Vec<String>,
    pub rw_rule: Vec<String>,
}

/// The security flavours a rule may name: qoslab serves AUTH_SYS (and AUTH_NONE), so
/// `any` and `sys` grant, `never` denies; Kerberos, NTLM and `none` (anonymous mapping)
/// are refused by name.
const FLAVOURS: &str = "any, sys or never (qoslab serves AUTH_SYS only)";

fn grants(field: &str, v: &[String]) -> Result<bool, String> {
    if v.is_empty() {
        return Err(format!("{field}: give at least one of {FLAVOURS}"));
    }
    let mut g = false;
    for f in v {
        match f.as_str() {
            "any" | "sys" => g = true,
            "never" => return Ok(false),
            other => {
                return Err(format!(
                    "{field}: {other:?} is not supported; use {FLAVOURS}"
                ))
            }
        }
    }
    Ok(g)
}

impl RuleText {
    /// Loopback only, read-write: the rule of the built-in `default` policy.
    pub fn loopback() -> RuleText {
        RuleText {
            clients: vec!["127.0.0.0/8".into(), "::1".into()],
            ro_rule: vec!["any".into()],
            rw_rule: vec!["any".into()],
        }
    }

    /// The rule it means (read-write needs both rules to grant, as in ONTAP; a rule that
    /// grants nothing still ends the search). Errors name the field and value.
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
        let ro = grants("ro_rule", &self.ro_rule)?;
        let rw = grants("rw_rule", &self.rw_rule)?;
        let access = match (ro, rw) {
            (true, true) => Access::ReadWrite,
            (true, false) => Access::ReadOnly,
            (false, _) => Access::NoAccess,
        };
        Ok(Rule { clients, access })
    }
}

/// A policy from its rules in order; an error names the rule (1-based, ONTAP's `index`).
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
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn default_is_loopback_only() {
        let p = Policy::default();
        assert_eq!(p.access(ip("127.0.0.1")), Some(Access::ReadWrite));
        assert_eq!(p.access(ip("127.1.2.3")), Some(Access::ReadWrite));
        assert_eq!(p.access(ip("::1")), Some(Access::ReadWrite));
        assert_eq!(p.access(ip("::ffff:127.0.0.1")), Some(Access::ReadWrite));
        assert_eq!(p.access(ip("10.0.0.1")), None);
        assert_eq!(p.access(ip("::2")), None);
    }

    #[test]
    fn first_rule_wins() {
        let p = Policy {
            name: "p".into(),
            rules: vec![
                Rule {
                    clients: ClientMatch::parse("10.1.0.0/16").unwrap(),
                    access: Access::ReadOnly,
                },
                Rule {
                    clients: ClientMatch::parse("any").unwrap(),
                    access: Access::ReadWrite,
                },
            ],
        };
        assert_eq!(p.access(ip("10.1.2.3")), Some(Access::ReadOnly));
        assert_eq!(p.access(ip("10.2.0.1")), Some(Access::ReadWrite));
        assert_eq!(p.access(ip("fe80::1")), Some(Access::ReadWrite));
    }

    #[test]
    fn ontap_rules() {
        let t = |c: &[&str], ro: &[&str], rw: &[&str]| RuleText {
            clients: c.iter().map(|s| s.to_string()).collect(),
            ro_rule: ro.iter().map(|s| s.to_string()).collect(),
            rw_rule: rw.iter().map(|s| s.to_string()).collect(),
        };
        let p = policy_from(
            "p",
            &[
                t(&["10.9.0.0/16"], &["never"], &["any"]),
                t(&["10.0.0.0/8"], &["sys"], &["never"]),
                t(&["0.0.0.0/0"], &["any"], &["sys"]),
            ],
        )
        .unwrap();
        assert_eq!(p.access(ip("10.9.1.1")), None, "never ends the search");
        assert_eq!(p.access(ip("10.1.1.1")), Some(Access::ReadOnly));
        assert_eq!(p.access(ip("192.0.2.1")), Some(Access::ReadWrite));
        assert_eq!(
            Policy::default(),
            policy_from("default", &[RuleText::loopback()]).unwrap()
        );
        for (bad, says) in [
            (t(&[], &["any"], &["any"]), "clients"),
            (t(&["host.example"], &["any"], &["any"]), "host names"),
            (
                t(&["::1"], &["krb5"], &["any"]),
                "\"krb5\" is not supported",
            ),
            (t(&["::1"], &["any"], &[]), "rw_rule"),
        ] {
            let e = policy_from("p", &[bad]).unwrap_err();
            assert!(e.starts_with("rule 1: ") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn parse_errors_name_the_value() {
        assert!(ClientMatch::parse("10.0.0.0/33")
            .unwrap_err()
            .contains("0..=32"));
        assert!(ClientMatch::parse("host")
            .unwrap_err()
            .contains("not an IP"));
    }
}
