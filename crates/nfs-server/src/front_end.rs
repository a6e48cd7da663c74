//! The node's NFS front end ([`FrontEnd`]): NFSv3, MOUNT and the portmapper on one TCP
//! address, exporting every NAS volume of the node at its junction path, each call through
//! the admission core ([`crate::qos`]). Exports follow the node's volumes as they are
//! created and deleted (synchronously: a volume the API just created is mountable when
//! the reply leaves), and their export policies as they change.

use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use storage_node::builder::{FrontEnd, Serving, Stop};
use storage_node::node::VolumeEvent;
use storage_node::volume::Volume;
use storage_node::Node;

use crate::conn::{self, Limits};
use crate::export::ExportSpec;
use crate::qos::NodeLink;
use crate::service::Service;
use crate::{Config, NfsSettings};

/// The node's listeners that may each hold `max_connections` descriptors: NBD unix, NBD
/// TCP, the REST API, S3, NFS and iSCSI.
const LISTENERS: usize = 6;

/// The NFS front end of a node, bound and attached to it.
pub struct NfsFrontEnd {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    service: Arc<Service>,
    link: Arc<NodeLink>,
    limits: Limits,
}

impl NfsFrontEnd {
    /// Listen on `addr` (port 0: any free port) and export `node`'s NAS volumes, with the
    /// transfer sizes and reserved-port rules of the config's `[nfs]` section (the node
    /// holds none of them).
    pub fn bind(
        addr: SocketAddr,
        node: &Arc<Node>,
        s: &NfsSettings,
    ) -> std::io::Result<NfsFrontEnd> {
        let cfg = Config {
            rtmax: s.rtmax,
            wtmax: s.wtmax,
            mount_rootonly: s.mount_rootonly,
            nfs_rootonly: s.nfs_rootonly,
        };
        let service = Arc::new(Service::new(cfg).map_err(std::io::Error::other)?);
        service.set_fd_budget(storage_node::conn_limit::nfs_fd_budget(
            LISTENERS,
            storage_node::conn_limit::DEFAULT_MAX_CONNECTIONS,
        ));
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
            limits: Limits::default(),
        })
    }

    /// Connections served at once by each of the node's listeners (more are closed on
    /// accept); the exports' descriptor budget is what the process may open less all
    /// listeners' connections ([`storage_node::conn_limit::nfs_fd_budget`]).
    pub fn max_connections(mut self, n: usize) -> NfsFrontEnd {
        self.limits.max_connections = n.max(1);
        self.service
            .set_fd_budget(storage_node::conn_limit::nfs_fd_budget(LISTENERS, n.max(1)));
        self
    }

    /// The bounds its connections are held to.
    pub fn limits(mut self, limits: Limits) -> NfsFrontEnd {
        self.limits = limits;
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

    fn serve(self: Box<Self>, _node: Arc<Node>, stop: Stop) -> Serving {
        let NfsFrontEnd {
            listener,
            service,
            link,
            limits,
            ..
        } = *self;
        Box::pin(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!("nfs: listener: {e}");
                    return;
                }
            };
            let cfg = service.config();
            let sh = Arc::new(conn::Shared {
                svc: service,
                link: Some(link),
                limits,
                held: conn::held(limits.held_bytes),
                max_record: conn::max_record(cfg.rtmax, cfg.wtmax),
            });
            crate::listen::serve(listener, sh, stop).await;
        })
    }
}
