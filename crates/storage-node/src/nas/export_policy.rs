//! Export policies: which clients may use a NAS volume, how far, and as whom. ONTAP's export
//! policies: an ordered list of rules; the first rule whose clients match a client's address
//! decides (no match, no access). A rule grants by security flavour (`ro_rule`, `rw_rule`:
//! `any`, `sys`, `none`, `never`), maps root (`superuser`) and unlisted flavours (`none`) to
//! its anonymous user (`anonymous_user`, default 65534), and says whether setuid bits are
//! honoured (`allow_suid`) and who may change owners (`chown_mode`). The node keeps the
//! policies (`Node::export_policy`); the NFS front end decides every call with
//! [`Policy::decide`]. The ONTAP words and their parsing are in [`super::export_rule`].

use std::net::IpAddr;

/// ONTAP's default anonymous user (`-anon 65534`, "nobody").
pub const ANON_DEFAULT: u32 = 65534;
/// ONTAP's special anonymous user: a call mapped to it is refused (AUTH_NONE, squashed root).
pub const ANON_REFUSE: u32 = 65535;

/// The security flavour of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// AUTH_NONE: no identity (always the anonymous user).
    None,
    /// AUTH_SYS: the uid, gid and groups the client says.
    Sys,
}

/// The flavours one of `ro_rule`, `rw_rule` or `superuser` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flavours {
    /// `any`: every flavour, as itself.
    pub any: bool,
    /// `sys`: AUTH_SYS, as itself.
    pub sys: bool,
    /// `none`: flavours not listed are admitted as the anonymous user.
    pub none: bool,
    /// `never`: nothing, whatever else is listed.
    pub never: bool,
}

impl Flavours {
    /// `any`.
    pub const ANY: Flavours = Flavours {
        any: true,
        sys: false,
        none: false,
        never: false,
    };
    /// `none` (as `superuser`: root is always the anonymous user).
    pub const NONE: Flavours = Flavours {
        any: false,
        sys: false,
        none: true,
        never: false,
    };
    /// `never`.
    pub const NEVER: Flavours = Flavours {
        any: false,
        sys: false,
        none: false,
        never: true,
    };

    /// How a call of flavour `f` fares: `Some(false)` as itself, `Some(true)` as the
    /// anonymous user, `None` refused. An AUTH_NONE call has no identity: admitted, it is
    /// always the anonymous user.
    pub fn admits(self, f: Flavour) -> Option<bool> {
        if self.never {
            return None;
        }
        if self.any || (f == Flavour::Sys && self.sys) {
            return Some(f == Flavour::None);
        }
        self.none.then_some(true)
    }

    /// Whether any call at all is admitted.
    pub fn admits_some(self) -> bool {
        !self.never && (self.any || self.sys || self.none)
    }

    /// As `superuser`: does a root call of flavour `f` stay root?
    pub fn keeps_root(self, f: Flavour) -> bool {
        !self.never && (self.any || (f == Flavour::Sys && self.sys))
    }
}

/// A client match: an address with a prefix length (`10.0.0.0/8`, `127.0.0.1`, `::1`,
/// `0.0.0.0/0` for every IPv4 client, `::/0` for every IPv6 one). An IPv4-mapped IPv6
/// match (`::ffff:10.0.0.0/104`) is its IPv4 match (`10.0.0.0/8`): clients are compared
/// as IPv4 when they are IPv4 or IPv4-mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientMatch {
    pub addr: IpAddr,
    pub prefix: u8,
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
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
        let mapped = canonical(addr);
        if mapped.is_ipv4() && addr.is_ipv6() {
            // ::ffff:a.b.c.d/P is a.b.c.d/(P-96): clients are compared as IPv4.
            if prefix < 96 {
                return Err(format!(
                    "client match {s:?}: an IPv4-mapped address needs a prefix of 96 to 128 \
                     (it is matched as the IPv4 address {mapped}/{})",
                    prefix.saturating_sub(96)
                ));
            }
            return Ok(vec![ClientMatch {
                addr: mapped,
                prefix: prefix - 96,
            }]);
        }
        Ok(vec![ClientMatch { addr, prefix }])
    }

    pub fn matches(&self, client: IpAddr) -> bool {
        match (self.addr, canonical(client)) {
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

/// One rule, as it is enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub clients: Vec<ClientMatch>,
    /// `ro_rule`: who may read (and be admitted at all).
    pub ro: Flavours,
    /// `rw_rule`: who may also write.
    pub rw: Flavours,
    /// `superuser`: for which flavours uid 0 stays root (else it is the anonymous user).
    pub superuser: Flavours,
    /// `anonymous_user`: the uid (and gid) of anonymous and squashed calls; 65535 refuses
    /// them.
    pub anon: u32,
    /// `allow_suid`: honour setuid/setgid bits in modes set by clients.
    pub allow_suid: bool,
    /// `chown_mode` unrestricted: a file's owner may give it away (restricted: only root
    /// changes owners).
    pub chown_unrestricted: bool,
    /// `protocols` admits NFSv3 (a rule for `nfs4` or `cifs` only never matches here).
    pub nfs3: bool,
}

impl Rule {
    /// A rule for `clients` with `ro`/`rw` and ONTAP's defaults for the rest (root
    /// squashed to 65534, setuid honoured, restricted chown).
    pub fn new(clients: Vec<ClientMatch>, ro: Flavours, rw: Flavours) -> Rule {
        Rule {
            clients,
            ro,
            rw,
            superuser: Flavours::NONE,
            anon: ANON_DEFAULT,
            allow_suid: true,
            chown_unrestricted: false,
            nfs3: true,
        }
    }

    pub fn matches(&self, client: IpAddr) -> bool {
        self.nfs3 && self.clients.iter().any(|m| m.matches(client))
    }
}

/// An ordered list of rules. The default is loopback only, read-write, root kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub name: String,
    pub rules: Vec<Rule>,
}

/// An AUTH_SYS identity (uid, primary gid, supplementary gids), as sent or as mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub gids: Vec<u32>,
}

impl Identity {
    /// The anonymous user `uid` (its gid is the same number; no other groups).
    pub fn anonymous(uid: u32) -> Identity {
        Identity {
            uid,
            gid: uid,
            gids: Vec::new(),
        }
    }

    /// Whether `gid` is one of the identity's groups.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.gids.contains(&gid)
    }
}

/// What a rule grants one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Who the call acts as (the anonymous user when mapped).
    pub who: Identity,
    /// Whether it was mapped to the anonymous user (AUTH_NONE, squashed root, `none`).
    pub anonymous: bool,
    /// Whether it may change anything (`rw_rule`).
    pub write: bool,
    pub allow_suid: bool,
    pub chown_unrestricted: bool,
}

/// A policy's answer to one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No rule matches the client's address.
    Unmatched,
    /// The first matching rule grants this call nothing.
    Refused,
    Granted(Grant),
}

impl Policy {
    /// The first rule that matches `client`.
    pub fn rule_for(&self, client: IpAddr) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matches(client))
    }

    /// Whether `client` is admitted at all (its rule grants some flavour something):
    /// what a connection must be before it is served, and what MOUNT's EXPORT lists.
    pub fn admits(&self, client: IpAddr) -> bool {
        self.rule_for(client).is_some_and(|r| r.ro.admits_some())
    }

    /// What a call from `client` carrying `cred` (`None`: AUTH_NONE) gets.
    pub fn decide(&self, client: IpAddr, cred: Option<&Identity>) -> Decision {
        let Some(rule) = self.rule_for(client) else {
            return Decision::Unmatched;
        };
        let f = if cred.is_some() {
            Flavour::Sys
        } else {
            Flavour::None
        };
        let Some(ro_anon) = rule.ro.admits(f) else {
            return Decision::Refused;
        };
        let rw = rule.rw.admits(f);
        // One identity per call: mapped by either rule, it is anonymous for both.
        let mut anonymous = ro_anon || rw == Some(true);
        let who = match cred {
            Some(c) if !anonymous && c.uid == 0 && !rule.superuser.keeps_root(f) => {
                anonymous = true;
                Identity::anonymous(rule.anon)
            }
            Some(c) if !anonymous => c.clone(),
            _ => Identity::anonymous(rule.anon),
        };
        if anonymous && rule.anon == ANON_REFUSE {
            return Decision::Refused;
        }
        Decision::Granted(Grant {
            who,
            anonymous,
            write: rw.is_some(),
            allow_suid: rule.allow_suid,
            chown_unrestricted: rule.chown_unrestricted,
        })
    }

    /// The client groups MOUNT's EXPORT procedure lists.
    pub fn groups(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter(|r| r.nfs3 && r.ro.admits_some())
            .flat_map(|r| r.clients.iter())
            .map(|m| format!("{}/{}", m.addr, m.prefix))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn sys(uid: u32) -> Identity {
        Identity {
            uid,
            gid: uid,
            gids: vec![4],
        }
    }

    fn granted(d: Decision) -> Grant {
        match d {
            Decision::Granted(g) => g,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn default_is_loopback_only_with_root_kept() {
        let p = Policy::default();
        for c in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            let g = granted(p.decide(ip(c), Some(&sys(0))));
            assert_eq!((g.who.uid, g.write, g.anonymous), (0, true, false), "{c}");
        }
        for c in ["10.0.0.1", "::2"] {
            assert_eq!(p.decide(ip(c), Some(&sys(0))), Decision::Unmatched, "{c}");
            assert!(!p.admits(ip(c)));
        }
        // AUTH_NONE is the anonymous user, even on loopback.
        let g = granted(p.decide(ip("127.0.0.1"), None));
        assert_eq!((g.who, g.anonymous), (Identity::anonymous(65534), true));
    }

    #[test]
    fn first_rule_wins_and_never_ends_the_search() {
        let rules = vec![
            Rule::new(
                ClientMatch::parse("10.9.0.0/16").unwrap(),
                Flavours::NEVER,
                Flavours::ANY,
            ),
            Rule::new(
                ClientMatch::parse("10.0.0.0/8").unwrap(),
                Flavours::ANY,
                Flavours::NEVER,
            ),
            Rule::new(
                ClientMatch::parse("any").unwrap(),
                Flavours::ANY,
                Flavours::ANY,
            ),
        ];
        let p = Policy {
            name: "p".into(),
            rules,
        };
        assert_eq!(p.decide(ip("10.9.1.1"), Some(&sys(5))), Decision::Refused);
        assert!(!p.admits(ip("10.9.1.1")));
        assert!(!granted(p.decide(ip("10.1.1.1"), Some(&sys(5)))).write);
        assert!(granted(p.decide(ip("fe80::1"), Some(&sys(5)))).write);
    }

    #[test]
    fn root_is_squashed_unless_superuser_grants_it() {
        let mut r = Rule::new(
            ClientMatch::parse("any").unwrap(),
            Flavours::ANY,
            Flavours::ANY,
        );
        let p = |r: &Rule| Policy {
            name: "p".into(),
            rules: vec![r.clone()],
        };
        let g = granted(p(&r).decide(ip("10.0.0.1"), Some(&sys(0))));
        assert_eq!((g.who, g.anonymous), (Identity::anonymous(65534), true));
        let g = granted(p(&r).decide(ip("10.0.0.1"), Some(&sys(1000))));
        assert_eq!((g.who, g.anonymous), (sys(1000), false));
        r.superuser = Flavours {
            sys: true,
            ..Flavours::default()
        };
        assert_eq!(
            granted(p(&r).decide(ip("10.0.0.1"), Some(&sys(0)))).who,
            sys(0)
        );
        // anonymous_user 65535 refuses what would be mapped to it
        r.superuser = Flavours::NONE;
        r.anon = ANON_REFUSE;
        assert_eq!(
            p(&r).decide(ip("10.0.0.1"), Some(&sys(0))),
            Decision::Refused
        );
        assert_eq!(p(&r).decide(ip("10.0.0.1"), None), Decision::Refused);
        assert!(granted(p(&r).decide(ip("10.0.0.1"), Some(&sys(7)))).write);
    }

    #[test]
    fn flavours_decide_auth_none() {
        let sys_only = Flavours {
            sys: true,
            ..Flavours::default()
        };
        // `sys` does not admit AUTH_NONE; `none` admits it as the anonymous user.
        assert_eq!(sys_only.admits(Flavour::None), None);
        assert_eq!(sys_only.admits(Flavour::Sys), Some(false));
        let with_none = Flavours {
            none: true,
            ..sys_only
        };
        assert_eq!(with_none.admits(Flavour::None), Some(true));
        assert_eq!(Flavours::NONE.admits(Flavour::Sys), Some(true));
        assert_eq!(Flavours::ANY.admits(Flavour::None), Some(true));
        let p = Policy {
            name: "p".into(),
            rules: vec![Rule::new(
                ClientMatch::parse("any").unwrap(),
                Flavours::NONE,
                Flavours::NEVER,
            )],
        };
        // ro none, rw never: everyone reads as anonymous, nobody writes.
        let g = granted(p.decide(ip("192.0.2.1"), Some(&sys(1000))));
        assert_eq!((g.who.uid, g.write), (65534, false));
    }

    #[test]
    fn mapped_matches_are_ipv4_matches() {
        let m = ClientMatch::parse("::ffff:10.1.0.0/112").unwrap();
        assert_eq!(m, ClientMatch::parse("10.1.0.0/16").unwrap());
        assert!(m[0].matches(ip("10.1.2.3")));
        assert!(m[0].matches(ip("::ffff:10.1.2.3")));
        assert!(!m[0].matches(ip("10.2.0.1")));
        let one = ClientMatch::parse("::ffff:192.0.2.7").unwrap();
        assert_eq!(one, ClientMatch::parse("192.0.2.7").unwrap());
        assert!(ClientMatch::parse("::ffff:0.0.0.0/80")
            .unwrap_err()
            .contains("96 to 128"));
        assert!(ClientMatch::parse("10.0.0.0/33")
            .unwrap_err()
            .contains("0..=32"));
        assert!(ClientMatch::parse("host")
            .unwrap_err()
            .contains("not an IP"));
    }
}
