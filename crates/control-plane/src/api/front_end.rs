//! The REST API and `/metrics` as one of the node's front ends ([`FrontEnd`]): bound here,
//! run by the node's builder beside NBD, stopped with it.

use std::net::SocketAddr;
use std::sync::Arc;

use super::http::{self, HttpConfig};
use super::ControlPlane;
use crate::builder::{FrontEnd, Serving, Stop};
use crate::Node;

/// The API, bound and ready to serve (bound without a runtime: the builder may start the
/// node on a runtime of its own).
pub struct ApiFrontEnd {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    cp: Arc<ControlPlane>,
    cfg: HttpConfig,
}

impl ApiFrontEnd {
    /// Listen on `addr` (port 0: any free port).
    pub fn bind(
        addr: SocketAddr,
        cp: Arc<ControlPlane>,
        cfg: HttpConfig,
    ) -> std::io::Result<ApiFrontEnd> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        Ok(ApiFrontEnd {
            listener,
            addr,
            cp,
            cfg,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https` or `http`.
    pub fn scheme(&self) -> &'static str {
        if self.cfg.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

impl FrontEnd for ApiFrontEnd {
    fn describe(&self) -> String {
        format!("api: {}://{}", self.scheme(), self.addr)
    }

    fn serve(self: Box<Self>, _node: Arc<Node>, mut stop: Stop) -> Serving {
        let ApiFrontEnd {
            listener, cp, cfg, ..
        } = *self;
        Box::pin(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!("api: listener: {e}");
                    return;
                }
            };
            // API calls are short: they are not drained, the server just stops.
            tokio::select! {
                _ = http::serve(listener, cp, cfg) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        })
    }
}
