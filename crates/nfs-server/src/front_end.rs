//! The node's NFS front end ([`FrontEnd`]): NFSv3, MOUNT and the portmapper on one TCP
//! address, exporting every NAS volume of the node at its junction path, each call through
//! the admission core ([`crate::qos`]). Exports follow the node's volumes as they are
//! created and deleted (synchronously: a volume the API just created is mountable when
//! the reply leaves), and their export policies as they change.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use storage_node::builder::{FrontEnd, Serving, Stop};
use storage_node::conn_limit::ConnLimit;
use storage_node::node::VolumeEvent;
use storage_node::volume::Volume;
use storage_node::Node;

use crate::export::ExportSpec;
use crate::qos::NodeLink;
use crate::service::{Peer, Service};
use crate::Config;

/// The NFS front end of a node, bound and attached to it.
pub struct NfsFrontEnd {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    service: Arc<Service>,
    link: Arc<NodeLink>,
    max_connections: usize,
}

impl NfsFrontEnd {
    /// Listen on `addr` (port 0: any free port) and export `node`'s NAS volumes, with the
    /// node's transfer sizes (`[nfs]`).
    pub fn bind(addr: SocketAddr, node: &Arc<Node>) -> std::io::Result<NfsFrontEnd> {
        let s = node.nfs_settings();
        let cfg = Config {
            rtmax: s.rtmax,
            wtmax: s.wtmax,
            mount_rootonly: s.mount_rootonly,
            nfs_rootonly: s.nfs_rootonly,
        };
        let service = Arc::new(Service::new(cfg).map_err(std::io::Error::other)?);
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        service.set_port(addr.port());
        let link = Arc::new(NodeLink::new(node.clone()));
        attach(node, &service, &link);
        Ok(NfsFrontEnd {
            listener,
            addr,
            service,
            link,
            max_connections: 1024,
        })
    }

    /// Connections served at once (more are closed on accept).
    pub fn max_connections(mut self, n: usize) -> NfsFrontEnd {
        self.max_connections = n.max(1);
        self
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }
}

/// Export every NAS volume of `node` now and follow its changes.
fn attach(node: &Arc<Node>, service: &Arc<Service>, link: &Arc<NodeLink>) {
    let (svc, lnk): (Weak<Service>, Weak<NodeLink>) =
        (Arc::downgrade(service), Arc::downgrade(link));
    node.watch_volumes(Box::new(move |e| {
        let (Some(svc), Some(link)) = (svc.upgrade(), lnk.upgrade()) else {
            return;
        };
        match e {
            VolumeEvent::Added(v) => export(&svc, &link, v),
            VolumeEvent::Removed(v) => {
                if let Some(n) = &v.nas {
                    link.set(n.export_id, None);
                    svc.remove_export(n.export_id);
                }
            }
        }
    }));
    for v in node.volumes() {
        export(service, link, &v);
    }
}

/// Export a NAS volume (its tree walked once); a volume that cannot be exported is logged
/// and stays unexported (its clients get NOENT at MOUNT), never the front end down.
fn export(svc: &Service, link: &NodeLink, v: &Arc<Volume>) {
    let Some(n) = &v.nas else { return };
    let id = n.export_id;
    let spec = ExportSpec {
        id,
        path: n.path.clone(),
        root: n.store.root().to_path_buf(),
        quota: n.store.space().quota(),
        policy: n.rules.read().unwrap_or_else(|p| p.into_inner()).clone(),
    };
    match svc.add_shared_export(spec, n.store.space().clone(), n.rules.clone()) {
        Ok(_) => link.set(id, Some(v.clone())),
        Err(e) => {
            tracing::error!(volume = %v.name, path = %n.path, "nfs: cannot export the volume: {e}")
        }
    }
}

impl FrontEnd for NfsFrontEnd {
    fn describe(&self) -> String {
        format!(
            "nfs: {} (NFSv3, MOUNT and the portmapper; {} NAS volume(s))",
            self.addr,
            self.service.exports().len()
        )
    }

    fn serve(self: Box<Self>, _node: Arc<Node>, mut stop: Stop) -> Serving {
        let NfsFrontEnd {
            listener,
            service,
            link,
            max_connections,
            ..
        } = *self;
        Box::pin(async move {
            static CONN_IDS: AtomicU64 = AtomicU64::new(1);
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!("nfs: listener: {e}");
                    return;
                }
            };
            let cfg = service.config();
            let max = crate::conn::max_record(cfg.rtmax, cfg.wtmax);
            let limit = ConnLimit::new("nfs", max_connections);
            let mut conns = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    _ = async { let _ = stop.wait_for(|s| *s).await; } => break,
                    r = listener.accept() => {
                        let (stream, addr) = match r {
                            Ok(x) => x,
                            Err(e) => {
                                tracing::warn!("nfs: accept: {e}");
                                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                                continue;
                            }
                        };
                        let Some(permit) = limit.admit() else { continue };
                        let peer = Peer { addr: addr.ip(), port: addr.port(), conn: CONN_IDS.fetch_add(1, Ordering::Relaxed) };
                        let (svc, link, stop) = (service.clone(), link.clone(), stop.clone());
                        conns.spawn(async move {
                            let _permit = permit;
                            if let Err(e) = crate::conn::serve(svc, stream, peer, max, Some(link), Some(stop)).await {
                                tracing::debug!("nfs: connection from {addr} ended: {e}");
                            }
                        });
                    }
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
            // Stop accepting; connections answer what they read and end.
            while conns.join_next().await.is_some() {}
        })
    }
}
