//! iSCSI names (RFC 7143 §4.2.7) and the `HOST[:PORT]/IQN/LUN` that follows the scheme of
//! an iSCSI LUN's URL: fio's libiscsi `iscsi://` (`bench --target`) and the suites'
//! kernel-attached `login+iscsi://`. One rule for every crate that checks one: the node's
//! config, the target's login, the harness and the suites.

use std::net::Ipv6Addr;

/// The iSCSI port when a URL gives none (RFC 7143).
pub const DEFAULT_PORT: u16 = 3260;

/// The highest LUN number (SAM's flat space addressing: 14 bits).
pub const MAX_LUN: u16 = 16383;

/// [`valid_iscsi_name`]'s rule, for messages.
pub const NAME_RULE: &str = "iqn.YYYY-MM.reversed.domain[:id], or eui./naa.: at most 223 \
                             characters of A-Z a-z 0-9 . - :";

/// Whether `name` is an iSCSI name (RFC 7143 §4.2.7: `iqn.`, `eui.` or `naa.`, at most
/// 223 bytes of A-Z a-z 0-9 . - :, so no spaces, control or shell characters).
pub fn valid_iscsi_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.starts_with("iqn.") || lower.starts_with("eui.") || lower.starts_with("naa."))
        && name.len() <= 223
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b".-:".contains(&c))
}

/// `HOST:PORT` as initiators take a portal (an IPv6 host in brackets).
pub fn portal(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// What is wrong with a `HOST[:PORT]/IQN/LUN`; callers add their URL's form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("{0:?}: an IPv6 address's ] is missing")]
    Ipv6Unclosed(String),
    #[error("[{0}] is not an IPv6 address")]
    NotIpv6(String),
    #[error("{tail:?} after [{host}] (want [ADDRESS]:PORT)")]
    AfterIpv6 { host: String, tail: String },
    #[error("the host is missing")]
    NoHost,
    #[error("{0:?} is not a host name or address")]
    BadHost(String),
    #[error("port {0:?} is not a number from 1 to 65535")]
    BadPort(String),
    #[error("the target's name (IQN) is missing")]
    NoIqn,
    #[error("{0:?} is not an iSCSI name ({rule})", rule = NAME_RULE)]
    BadIqn(String),
    #[error("the LUN number is missing")]
    NoLun,
    #[error("LUN {0:?} is not a number from 0 to {max}", max = MAX_LUN)]
    BadLun(String),
    /// What follows the LUN, from its `/`.
    #[error("{0:?} after the LUN")]
    AfterLun(String),
}

/// A LUN's address: `HOST[:PORT]/IQN/LUN`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LunAddress {
    /// A host name or address (IPv6 without its brackets).
    pub host: String,
    pub port: Option<u16>,
    pub iqn: String,
    pub lun: u16,
}

impl LunAddress {
    /// Parse what follows a URL's `SCHEME://` (without a `?query`): the host a name or an
    /// address (`[IPv6]`), the port 1 to 65535, the target an iSCSI name, the LUN 0 to
    /// [`MAX_LUN`], nothing after it.
    pub fn parse(s: &str) -> Result<LunAddress, AddressError> {
        let (authority, path) = s.split_once('/').unwrap_or((s, ""));
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, tail) = v6
                .split_once(']')
                .ok_or_else(|| AddressError::Ipv6Unclosed(authority.into()))?;
            if h.parse::<Ipv6Addr>().is_err() {
                return Err(AddressError::NotIpv6(h.into()));
            }
            let port = match tail {
                "" => None,
                t => Some(t.strip_prefix(':').ok_or_else(|| AddressError::AfterIpv6 {
                    host: h.into(),
                    tail: tail.into(),
                })?),
            };
            (h, port)
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(AddressError::NoHost);
        }
        if !authority.starts_with('[')
            && !host
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
        {
            return Err(AddressError::BadHost(host.into()));
        }
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|n| *n != 0 && p.bytes().all(|c| c.is_ascii_digit()))
                    .ok_or_else(|| AddressError::BadPort(p.into()))?,
            ),
        };
        let mut parts = path.splitn(3, '/');
        let iqn = parts.next().unwrap_or_default();
        if iqn.is_empty() {
            return Err(AddressError::NoIqn);
        }
        if !valid_iscsi_name(iqn) {
            return Err(AddressError::BadIqn(iqn.into()));
        }
        let lun = parts.next().unwrap_or_default();
        if lun.is_empty() {
            return Err(AddressError::NoLun);
        }
        let lun = lun
            .parse::<u16>()
            .ok()
            .filter(|n| *n <= MAX_LUN && lun.bytes().all(|c| c.is_ascii_digit()))
            .ok_or_else(|| AddressError::BadLun(lun.into()))?;
        if let Some(more) = parts.next() {
            return Err(AddressError::AfterLun(format!("/{more}")));
        }
        Ok(LunAddress {
            host: host.into(),
            port,
            iqn: iqn.into(),
            lun,
        })
    }

    /// `HOST:PORT` ([`DEFAULT_PORT`] when the address gives none).
    pub fn portal(&self) -> String {
        portal(&self.host, self.port.unwrap_or(DEFAULT_PORT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_rule_is_rfc_7143s() {
        for ok in [
            "iqn.2026-01.lab.qoslab:target0",
            "IQN.2026-01.LAB:X",
            "eui.02004567A425678D",
            "naa.52004567BA64678D",
        ] {
            assert!(valid_iscsi_name(ok), "{ok}");
        }
        for bad in [
            "",
            "iqn",
            "target0",
            "iqn.2026-01.lab x",
            "iqn.a/b",
            "iqn.é",
        ] {
            assert!(!valid_iscsi_name(bad), "{bad}");
        }
        assert!(valid_iscsi_name(&format!("iqn.{}", "a".repeat(219))));
        assert!(!valid_iscsi_name(&format!("iqn.{}", "a".repeat(220))));
    }

    #[test]
    fn an_address_is_parsed_and_each_fault_named() {
        let iqn = "iqn.2026-01.lab.qoslab:n";
        let a = LunAddress::parse(&format!("[fd00::5]:3261/{iqn}/16383")).unwrap();
        assert_eq!(
            a,
            LunAddress {
                host: "fd00::5".into(),
                port: Some(3261),
                iqn: iqn.into(),
                lun: 16383
            }
        );
        assert_eq!(a.portal(), "[fd00::5]:3261");
        let a = LunAddress::parse(&format!("filer.example/{iqn}/0")).unwrap();
        assert_eq!((a.port, a.portal()), (None, "filer.example:3260".into()));
        use AddressError as E;
        for (s, want) in [
            (format!("[::1/{iqn}/0"), E::Ipv6Unclosed("[::1".into())),
            (format!("[zz]/{iqn}/0"), E::NotIpv6("zz".into())),
            (
                format!("[::1]80/{iqn}/0"),
                E::AfterIpv6 {
                    host: "::1".into(),
                    tail: "80".into(),
                },
            ),
            (format!(":3260/{iqn}/0"), E::NoHost),
            (format!("a;b/{iqn}/0"), E::BadHost("a;b".into())),
            (format!("h:+80/{iqn}/0"), E::BadPort("+80".into())),
            ("h//0".into(), E::NoIqn),
            ("h/target1/0".into(), E::BadIqn("target1".into())),
            (format!("h/{iqn}/"), E::NoLun),
            (format!("h/{iqn}/16384"), E::BadLun("16384".into())),
            (format!("h/{iqn}/0/x"), E::AfterLun("/x".into())),
        ] {
            assert_eq!(LunAddress::parse(&s), Err(want), "{s}");
        }
        assert_eq!(
            E::BadIqn("t".into()).to_string(),
            format!("\"t\" is not an iSCSI name ({NAME_RULE})")
        );
        assert_eq!(E::AfterLun("/x".into()).to_string(), "\"/x\" after the LUN");
    }
}
