//! Exports and their policies: which clients may mount a junction path, read-only or
//! read-write. The rules follow ONTAP's export policies in shape (an ordered list of
//! rules, each a client match and an access level; the first rule that matches decides;
//! no match, no access), reduced to what NFSv3 over AUTH_SYS needs.

use std::net::IpAddr;
use std::path::PathBuf;

/// Access a rule grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
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

/// One NAS volume exported at a junction path.
#[derive(Debug, Clone)]
pub struct ExportSpec {
    /// The number file handles carry: stable for the life of the volume (a handle whose
    /// export id is unknown is STALE).
    pub id: u32,
    /// The junction path clients mount (`/vol500`).
    pub path: String,
    /// The directory holding the volume's tree.
    pub root: PathBuf,
    /// The volume's size: writes that would allocate beyond it get NFS3ERR_NOSPC.
    pub quota: Option<u64>,
    pub policy: Policy,
}

/// A junction path must be absolute, normalised and printable: `/name[/name...]`.
pub fn valid_junction(path: &str) -> Result<(), String> {
    let ok = path.starts_with('/')
        && path.len() > 1
        && path.len() <= 1024
        && !path.ends_with('/')
        && path[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
        && path.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(format!("junction path {path:?} must be /NAME[/NAME...] (printable ASCII, no . or .. components, no trailing /)"))
    }
}

/// A stable export id from a junction path (FNV-1a), for exports that carry no volume
/// number of their own.
pub fn id_for(path: &str) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for b in path.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    h
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
    fn parse_errors_name_the_value() {
        assert!(ClientMatch::parse("10.0.0.0/33")
            .unwrap_err()
            .contains("0..=32"));
        assert!(ClientMatch::parse("host")
            .unwrap_err()
            .contains("not an IP"));
        assert!(valid_junction("/vol1").is_ok());
        for bad in ["vol", "/", "/a/", "/a/../b", "/a b", "/a//b"] {
            assert!(valid_junction(bad).is_err(), "{bad}");
        }
    }
}
