//! qoslab's NBD front end: the node's block volumes over the NBD protocol
//! (`doc/proto.md` of the NetworkBlockDevice project).
//!
//! - [`handshake`]: fixed newstyle negotiation (EXPORT_NAME, GO, INFO, LIST,
//!   STRUCTURED_REPLY, SET/LIST_META_CONTEXT `base:allocation`, STARTTLS through the
//!   node's [`TlsAcceptor`] seam);
//! - [`transmission`]: one task per connection reads requests in batches, validates each
//!   once, asks the admission core ([`storage_node::admission`], through its
//!   [`Driver`](storage_node::admission::Driver)), does the I/O on the volume's backend
//!   and writes the replies of a batch with one socket write; busy-polls at queue depth 1;
//! - [`errors`]: the one place I/O errors become NBD error numbers;
//! - [`NbdFrontEnd`]: the listeners (unix and TCP, each with its connection cap), the
//!   accept loop and graceful shutdown, as one of the node's
//!   [`FrontEnd`](storage_node::front_end::FrontEnd)s.
//!
//! Its settings ([`NbdSettings`]) are its own, and so are its keys of node.toml
//! ([`config`]): the node holds none of them.

pub mod config;
pub mod errors;
pub mod handshake;
mod listen;
mod ratelimit;
mod session;
mod spin;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transmission;

use std::net::SocketAddr;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use storage_node::errors::NodeError;
use storage_node::front_end::{FrontEnd, ServerStats, Serving, Stop, TlsAcceptor};
use storage_node::volume::Volume;
use storage_node::Node;

pub use errors::nbd_errno;
pub use handshake::TlsMode;
pub use session::{connection, connection_tls};

/// How long handshakes may take before the node hangs up.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopping front end waits for connections to finish their in-flight
/// requests before closing them.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// Default busy-poll budget per connection (`[node] busy_poll_us`).
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(config::DEFAULT_BUSY_POLL_US);

/// TLS on NBD: how it is offered and who runs the handshake.
#[derive(Clone)]
pub struct NbdTls {
    pub mode: TlsMode,
    pub acceptor: Arc<dyn TlsAcceptor>,
}

/// The NBD front end's settings.
#[derive(Clone)]
pub struct NbdSettings {
    /// The export a client asking for the empty name gets (`[node] default_export`);
    /// `None`: the only block volume, if there is exactly one.
    pub default_export: Option<String>,
    /// How long a connection spins for its next request before parking (0: never).
    pub busy_poll: Duration,
    /// Connections each listener serves at once (`--max-connections`).
    pub max_connections: usize,
    /// `None`: STARTTLS is refused.
    pub tls: Option<NbdTls>,
}

impl Default for NbdSettings {
    fn default() -> Self {
        NbdSettings {
            default_export: None,
            busy_poll: DEFAULT_BUSY_POLL,
            max_connections: storage_node::conn_limit::DEFAULT_MAX_CONNECTIONS,
            tls: None,
        }
    }
}

/// The node's block volumes as NBD names them.
pub struct Exports {
    pub node: Arc<Node>,
    default: Option<String>,
}

impl Exports {
    pub fn new(node: Arc<Node>, default: Option<String>) -> Exports {
        Exports { node, default }
    }

    /// The block volume a client names; the empty name is the default export (or the
    /// node's only volume when none is set).
    pub fn volume(&self, name: &str) -> Option<Arc<Volume>> {
        let v = if name.is_empty() {
            match &self.default {
                Some(d) => self.node.volume(d),
                None => {
                    let mut all = self.node.volumes();
                    (all.len() == 1).then(|| all.remove(0))
                }
            }
        } else {
            self.node.volume(name)
        };
        v.filter(|v| !v.is_nas())
    }

    /// Block volumes, sorted by name (what NBD_OPT_LIST lists).
    pub fn list(&self) -> Vec<Arc<Volume>> {
        self.node.block_volumes()
    }
}

/// NBD on a unix socket and/or TCP, bound (without a runtime) and ready to be handed to
/// the node's builder.
pub struct NbdFrontEnd {
    unix: Option<(UnixListener, PathBuf)>,
    tcp: Option<std::net::TcpListener>,
    settings: NbdSettings,
    stats: Arc<ServerStats>,
}

impl NbdFrontEnd {
    /// Bind the requested addresses (a stale unix socket file is replaced; TCP port 0:
    /// any free port, see [`tcp_addr`](Self::tcp_addr)).
    pub fn bind(
        unix: Option<&Path>,
        tcp: Option<SocketAddr>,
        settings: NbdSettings,
    ) -> Result<NbdFrontEnd, NodeError> {
        let listen = |addr: String| move |source| NodeError::Listen { addr, source };
        let unix = match unix {
            None => None,
            Some(p) => {
                if p.exists() {
                    let _ = std::fs::remove_file(p);
                }
                let l = UnixListener::bind(p).map_err(listen(p.display().to_string()))?;
                l.set_nonblocking(true)
                    .map_err(listen(p.display().to_string()))?;
                Some((l, p.to_path_buf()))
            }
        };
        let tcp = match tcp {
            None => None,
            Some(a) => {
                let l = std::net::TcpListener::bind(a).map_err(listen(a.to_string()))?;
                l.set_nonblocking(true).map_err(listen(a.to_string()))?;
                Some(l)
            }
        };
        Ok(NbdFrontEnd {
            unix,
            tcp,
            settings,
            stats: Arc::default(),
        })
    }

    /// NBD on the unix socket `path` with default settings.
    pub fn unix(path: &Path) -> Result<NbdFrontEnd, NodeError> {
        NbdFrontEnd::bind(Some(path), None, NbdSettings::default())
    }

    /// Count connections in `stats` (shared with whoever reports them, e.g. `/metrics`).
    pub fn with_stats(mut self, stats: Arc<ServerStats>) -> NbdFrontEnd {
        self.stats = stats;
        self
    }

    /// The bound TCP address, if any.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The unix socket, if any.
    pub fn unix_path(&self) -> Option<&Path> {
        self.unix.as_ref().map(|(_, p)| p.as_path())
    }
}

impl FrontEnd for NbdFrontEnd {
    fn describe(&self) -> String {
        let mut at = Vec::new();
        if let Some(p) = self.unix_path() {
            at.push(format!("nbd+unix:///?socket={}", p.display()));
        }
        if let Some(a) = self.tcp_addr() {
            at.push(format!("nbd://{a}"));
        }
        format!("nbd: {}", at.join(", "))
    }

    fn serve(self: Box<Self>, node: Arc<Node>, stop: Stop) -> Serving {
        Box::pin(listen::serve(*self, node, stop))
    }
}
