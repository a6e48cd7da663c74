//! The node's iSCSI front end ([`FrontEnd`]): one target on one TCP address, serving the
//! LUNs of node.toml's `[[iscsi.lun]]` and those the control plane maps to igroups (the
//! node's SAN maps, read live), each a block volume of the node ([`VolumeLun`]), every
//! SCSI command through the node's admission core ([`crate::qos`]).
//!
//! LUNs follow their volumes: a LUN is there while its volume is (a volume deleted
//! through the API takes its LUN with it, and sessions are told REPORTED LUNS DATA HAS
//! CHANGED), and each LUN is one logical unit shared by every session (one set of
//! reservations).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use storage_node::builder::{FrontEnd, Serving, Stop};
use storage_node::locks;
use storage_node::node::VolumeEvent;
use storage_node::volume::Volume;
use storage_node::Node;

use crate::admission::Admission;
use crate::config::{IscsiSettings, LunSpec};
use crate::lu::LogicalUnit;
use crate::qos::{NodeAdmission, Volumes};
use crate::target::{sees, Access, ConnInfo, Credentials, Mapped, Target};
use crate::volume_lun::VolumeLun;
use crate::{Config, Server};

/// The iSCSI front end of a node, bound.
pub struct IscsiFrontEnd {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    settings: IscsiSettings,
    config: Config,
    credentials: Credentials,
}

impl IscsiFrontEnd {
    /// Listen on `addr` (port 0: any free port) for the target of `[iscsi]`.
    pub fn bind(addr: SocketAddr, settings: &IscsiSettings) -> std::io::Result<IscsiFrontEnd> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let portal = settings
            .portal
            .map(|(ip, port)| SocketAddr::new(ip, port.unwrap_or(addr.port())).to_string());
        Ok(IscsiFrontEnd {
            listener,
            addr,
            settings: settings.clone(),
            config: Config {
                portal,
                ..Config::default()
            },
            credentials: Credentials::default(),
        })
    }

    /// How each initiator logs in (default: every initiator without a secret); the
    /// secrets of `[[iscsi.credentials]]`, read from their files by the caller.
    pub fn credentials(mut self, c: Credentials) -> IscsiFrontEnd {
        self.credentials = c;
        self
    }

    /// Connections served at once (more are closed on accept).
    pub fn max_connections(mut self, n: usize) -> IscsiFrontEnd {
        self.config.max_connections = n.max(1);
        self
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The LUNs and logins as one line: `LUN 0 = volume db, LUN 1 = volume logs (2
    /// initiator(s)); logins: default chap, 1 initiator(s) their own`.
    pub fn summary(&self) -> String {
        if self.settings.luns.is_empty() {
            return "no [[iscsi.lun]] in node.toml; LUN maps ([[lun_map]], the API) follow".into();
        }
        let luns: Vec<String> = self
            .settings
            .luns
            .iter()
            .map(|l| {
                let masked = match &l.initiators {
                    Some(i) => format!(" ({} initiator(s))", i.len()),
                    None => String::new(),
                };
                format!("LUN {} = volume {}{masked}", l.number, l.volume)
            })
            .collect();
        let creds = &self.settings.credentials;
        let default = creds
            .iter()
            .find(|c| c.initiator.is_none())
            .map_or("none", |c| c.auth.as_str());
        let own = creds.iter().filter(|c| c.initiator.is_some()).count();
        let own = match own {
            0 => String::new(),
            n => format!(", {n} initiator(s) their own"),
        };
        format!("{}; logins: default {default}{own}", luns.join(", "))
    }
}

impl FrontEnd for IscsiFrontEnd {
    fn describe(&self) -> String {
        format!(
            "iscsi: {} (target {}; {})",
            self.addr,
            self.settings.iqn,
            self.summary()
        )
    }

    fn serve(self: Box<Self>, node: Arc<Node>, mut stop: Stop) -> Serving {
        let IscsiFrontEnd {
            listener,
            settings,
            config,
            credentials,
            ..
        } = *self;
        Box::pin(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!("iscsi: listener: {e}");
                    return;
                }
            };
            let target = Arc::new(NodeTarget::new(node, &settings, credentials));
            let server = Server::on(listener, target, config);
            let stopped = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            if let Err(e) = server.run(stopped).await {
                tracing::error!("iscsi: {e}");
            }
        })
    }
}

/// The node's LUNs, as the target sees them: node.toml's `[[iscsi.lun]]` and the SAN
/// maps the control plane keeps on the node ([`storage_node::san`]), read live.
pub struct NodeTarget {
    luns: Arc<NodeLuns>,
    alias: Option<String>,
    credentials: Credentials,
}

/// A LUN's volume and the logical unit made for it.
type Unit = (Arc<Volume>, Arc<LogicalUnit>);

struct NodeLuns {
    node: Arc<Node>,
    iqn: String,
    specs: Vec<LunSpec>,
    /// The logical unit of each volume served as a LUN (one per volume, whatever number
    /// each initiator sees it at: one set of reservations), with the volume it was made
    /// for.
    units: RwLock<HashMap<String, Unit>>,
    /// Bumped when a LUN's volume comes or goes (sessions re-read their LUNs).
    generation: AtomicU64,
}

/// One LUN as one initiator sees it.
struct Seen {
    number: u16,
    volume: String,
    block_size: u32,
    /// The serial number the API reports (a mapped LUN's); `None`: derived from names.
    serial: Option<String>,
}

impl NodeTarget {
    /// The target of `settings` over `node`'s volumes (following them as they change),
    /// its initiators logging in as `credentials` say.
    pub fn new(node: Arc<Node>, settings: &IscsiSettings, credentials: Credentials) -> NodeTarget {
        let luns = Arc::new(NodeLuns {
            node: node.clone(),
            iqn: settings.iqn.clone(),
            specs: settings.luns.clone(),
            units: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&luns);
        node.watch_volumes(Box::new(move |e| {
            let Some(l) = weak.upgrade() else { return };
            let (VolumeEvent::Added(v) | VolumeEvent::Removed(v)) = e;
            if l.specs.iter().any(|s| s.volume == v.name) || l.node.san().serves(&v.name) {
                l.generation.fetch_add(1, Ordering::Release);
            }
        }));
        NodeTarget {
            luns,
            alias: settings.alias.clone(),
            credentials,
        }
    }
}

impl NodeLuns {
    /// The LUNs `initiator` sees, by number: node.toml's, then the SAN maps' (a number
    /// node.toml gives this initiator stays node.toml's; the control plane refuses such
    /// maps).
    fn seen(&self, initiator: &str) -> Vec<Seen> {
        let mut out: Vec<Seen> = self
            .specs
            .iter()
            .filter(|s| sees(s.initiators.as_deref(), initiator))
            .map(|s| Seen {
                number: s.number,
                volume: s.volume.clone(),
                block_size: s.block_size,
                serial: None,
            })
            .collect();
        for m in self.node.san().visible(initiator) {
            if !out.iter().any(|s| s.number == m.number) {
                out.push(Seen {
                    number: m.number,
                    volume: m.volume,
                    block_size: 512,
                    serial: Some(m.serial),
                });
            }
        }
        out.sort_by_key(|s| s.number);
        out
    }

    /// The volume and logical unit of a LUN, while the volume is there.
    fn unit(&self, seen: &Seen) -> Option<Arc<LogicalUnit>> {
        let vol = self.node.block_volume(&seen.volume)?;
        let mut units = locks::write(&self.units);
        if let Some((v, lu)) = units.get(&seen.volume) {
            // The same volume: the same unit (it follows the volume's size, telling the
            // sessions that use it CAPACITY DATA HAS CHANGED).
            if Arc::ptr_eq(v, &vol) {
                return Some(lu.clone());
            }
        }
        let mut lun = VolumeLun::new(vol.clone(), seen.block_size, &self.iqn);
        if let Some(s) = &seen.serial {
            lun = lun.with_serial(s);
        }
        let lu = LogicalUnit::new(Arc::new(lun));
        units.insert(seen.volume.clone(), (vol, lu.clone()));
        Some(lu)
    }
}

impl Volumes for NodeLuns {
    /// Every command asks: the LUN's volume for this initiator, without allocating (the
    /// same precedence as [`NodeLuns::seen`]: node.toml's number first).
    fn volume(&self, initiator: &str, lun: u16) -> Option<Arc<Volume>> {
        // node.toml's LUNs first; the REST maps' table (a read lock) only when none matches.
        let maps;
        let name = match self
            .specs
            .iter()
            .find(|s| s.number == lun && sees(s.initiators.as_deref(), initiator))
        {
            Some(s) => s.volume.as_str(),
            None => {
                maps = self.node.san().all();
                maps.iter()
                    .find(|m| m.number == lun && sees(Some(&m.initiators), initiator))?
                    .volume
                    .as_str()
            }
        };
        let units = locks::read(&self.units);
        units
            .get(name)
            .map(|(v, _)| v.clone())
            .filter(|v| !v.is_removed())
    }
}

impl Target for NodeTarget {
    fn name(&self) -> String {
        self.luns.iqn.clone()
    }

    fn alias(&self) -> Option<String> {
        self.alias.clone()
    }

    fn luns(&self, initiator: &str) -> Vec<Mapped> {
        self.luns
            .seen(initiator)
            .iter()
            .filter_map(|s| Some((s.number, self.luns.unit(s)?)))
            .collect()
    }

    fn generation(&self) -> u64 {
        // Both counters only grow: their sum moves whenever either does.
        self.luns.generation.load(Ordering::Acquire) + self.luns.node.san().generation()
    }

    fn access(&self, initiator: &str) -> Access {
        self.credentials.access(initiator)
    }

    fn admission(&self, conn: &ConnInfo) -> Arc<dyn Admission> {
        Arc::new(NodeAdmission::new(
            &self.luns.node,
            self.luns.clone(),
            conn.initiator.clone(),
        ))
    }
}
