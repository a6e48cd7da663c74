//! The target seam: what the server asks of whoever owns the LUNs (the standalone
//! [`StaticTarget`], or a node in phase 2): the target's name, the LUNs an initiator may
//! see (LUN masking, as ONTAP's igroups and LUN maps decide it), how each initiator
//! authenticates (none, CHAP or deny), and the admission hook of each connection.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::admission::{Admission, Unlimited};
use crate::lu::LogicalUnit;

/// A CHAP user name and secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ChapSecret {
    pub user: String,
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for ChapSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ChapSecret {{ user: {:?}, secret: <{} bytes> }}",
            self.user,
            self.secret.len()
        )
    }
}

/// Authentication an initiator must pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// What the initiator proves (inbound CHAP).
    pub initiator: ChapSecret,
    /// What the target proves when the initiator asks (mutual, outbound CHAP).
    pub target: Option<ChapSecret>,
}

/// What an initiator must do to log in (ONTAP's authentication types: none, chap, deny).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Log in without a secret.
    Open,
    /// Prove a CHAP secret first.
    Chap(Auth),
    /// Refused at login (Login Response: initiator error, not authorized).
    Deny,
}

/// Each initiator's [`Access`]: its own entry, else the default (the node's
/// `[[iscsi.credentials]]`, secrets read from their files).
#[derive(Debug, Clone)]
pub struct Credentials {
    /// For initiators without an entry of their own.
    pub default: Access,
    /// Initiator name (compared without regard to case) and its access.
    pub initiators: Vec<(String, Access)>,
}

impl Default for Credentials {
    fn default() -> Self {
        Credentials {
            default: Access::Open,
            initiators: Vec::new(),
        }
    }
}

impl Credentials {
    /// What `initiator` must do to log in.
    pub fn access(&self, initiator: &str) -> Access {
        self.initiators
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(initiator))
            .map_or(&self.default, |(_, a)| a)
            .clone()
    }
}

/// A connection as the target sees it at login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    pub initiator: String,
    pub isid: [u8; 6],
    pub tsih: u16,
    pub cid: u16,
    pub peer: SocketAddr,
}

/// A LUN mapped to an initiator: its number there, and the logical unit.
pub type Mapped = (u16, Arc<LogicalUnit>);

/// Everything the server needs from the owner of the LUNs.
pub trait Target: Send + Sync + 'static {
    /// The target's IQN.
    fn name(&self) -> String;
    /// Its alias (TargetAlias), if any.
    fn alias(&self) -> Option<String> {
        None
    }
    /// The LUNs `initiator` may see, sorted by number. An initiator with none still logs
    /// in (and sees no disks), as on ONTAP.
    fn luns(&self, initiator: &str) -> Vec<Mapped>;
    /// Changes whenever any mapping changes; sessions then re-read [`Target::luns`] and
    /// report REPORTED LUNS DATA HAS CHANGED.
    fn generation(&self) -> u64 {
        0
    }
    /// What `initiator` must do to log in (asked at its first login PDU, for discovery
    /// and normal sessions alike).
    fn access(&self, initiator: &str) -> Access {
        let _ = initiator;
        Access::Open
    }
    /// The admission hook of one connection, called once per SCSI command.
    fn admission(&self, conn: &ConnInfo) -> Arc<dyn Admission> {
        let _ = conn;
        Arc::new(Unlimited)
    }
}

/// A fixed set of LUNs, each visible to every initiator or to a list of them: what
/// `qoslab iscsi serve` serves.
pub struct StaticTarget {
    pub name: String,
    pub alias: Option<String>,
    pub luns: Vec<StaticLun>,
    pub auth: Option<Auth>,
}

/// One LUN of a [`StaticTarget`].
pub struct StaticLun {
    pub number: u16,
    pub lu: Arc<LogicalUnit>,
    /// Initiator IQNs that see it; `None`: every initiator.
    pub initiators: Option<Vec<String>>,
}

impl Target for StaticTarget {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn alias(&self) -> Option<String> {
        self.alias.clone()
    }

    fn luns(&self, initiator: &str) -> Vec<Mapped> {
        let mut v: Vec<Mapped> = self
            .luns
            .iter()
            .filter(|l| sees(l.initiators.as_deref(), initiator))
            .map(|l| (l.number, l.lu.clone()))
            .collect();
        v.sort_by_key(|(n, _)| *n);
        v
    }

    fn access(&self, _initiator: &str) -> Access {
        match &self.auth {
            Some(a) => Access::Chap(a.clone()),
            None => Access::Open,
        }
    }
}

/// Whether `initiator` sees a LUN visible to `initiators` (`None`: to every initiator).
/// iSCSI names compare without regard to case (RFC 7143 §4.2.7.1).
pub fn sees(initiators: Option<&[String]>, initiator: &str) -> bool {
    initiators.is_none_or(|list| list.iter().any(|i| i.eq_ignore_ascii_case(initiator)))
}

/// Whether `name` is an iSCSI name (the node's config checks names with the same rule).
pub use iscsi_proto::url::valid_iscsi_name;

#[cfg(test)]
mod tests {
    use super::*;

    fn chap(user: &str) -> Access {
        Access::Chap(Auth {
            initiator: ChapSecret {
                user: user.into(),
                secret: b"twelve-bytes".to_vec(),
            },
            target: None,
        })
    }

    #[test]
    fn an_initiator_takes_its_own_entry_else_the_default() {
        let c = Credentials {
            default: Access::Deny,
            initiators: vec![
                ("iqn.2026-01.lab.example:a".into(), chap("alice")),
                ("iqn.2026-01.lab.example:b".into(), Access::Open),
            ],
        };
        assert_eq!(c.access("IQN.2026-01.lab.example:A"), chap("alice"));
        assert_eq!(c.access("iqn.2026-01.lab.example:b"), Access::Open);
        assert_eq!(c.access("iqn.2026-01.lab.example:c"), Access::Deny);
        assert_eq!(Credentials::default().access("iqn.x"), Access::Open);
    }
}
