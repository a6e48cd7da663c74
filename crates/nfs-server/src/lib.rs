//! The NFS front end: NFSv3, MOUNT v3 and the portmapper on one TCP address, serving NAS
//! volumes (directory trees) as exports named by junction paths.
//!
//! Layers: `nfs-proto` decodes and encodes (sans-IO); [`call`] decodes a record once and
//! says what it is; [`service`] answers it
//! (programs, policies, procedures in [`ops`] over a [`tree::Tree`]); [`conn`] runs one
//! TCP connection; [`NfsServer`] accepts them.
//!
//! Invariants:
//! - Nothing outside an export's root is ever reached: every path is opened with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` beneath the root's descriptor, and
//!   LOOKUP of `..` at the root stays at the root.
//! - Handles (export id, inode, birth time) stay valid across restarts; a handle whose
//!   export or object is gone is STALE.
//! - A WRITE is in the page cache before its reply (never buffered in the process);
//!   FILE_SYNC/DATA_SYNC writes and COMMIT are on stable storage before theirs; every
//!   namespace change fsyncs its directory. The write verifier changes on every start.
//! - A malformed call gets GARBAGE_ARGS (or an RPC/auth error) and the connection goes
//!   on; only an oversized or unframeable record ends it.
//! - Every call is checked against owners and modes as the export policy maps its caller
//!   ([`perm`]); every connection is bounded ([`conn::Limits`]); a runtime worker never
//!   walks a tree (a call that needs a walk moves to the blocking pool).

pub mod attr;
pub mod attr_cache;
pub mod call;
pub mod config;
pub mod conn;
pub mod errors;
pub mod export;
pub mod front_end;
pub mod handle;
pub mod listen;
pub mod ops;
pub mod perm;
pub mod qos;
pub mod service;
mod sys;
pub mod tree;

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::net::TcpListener;

pub use call::{CallInfo, Decoded, OpKind};
pub use config::NfsSettings;
pub use export::{ClientMatch, ExportSpec, Flavours, Policy, Rule};
pub use front_end::NfsFrontEnd;
pub use service::{Peer, Service};

/// ONTAP's default `-tcp-max-xfer-size`.
pub const DEFAULT_XFER: u32 = 64 * 1024;
/// The largest transfer size ONTAP allows (and we do).
pub const MAX_XFER: u32 = 1024 * 1024;

/// Transfer sizes FSINFO advertises (clients split larger requests themselves), and
/// ONTAP's reserved-port options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub rtmax: u32,
    pub wtmax: u32,
    /// `-mount-rootonly` (ONTAP's default: enabled): MNT only from a source port below
    /// 1024 (which only root binds); others get MNT3ERR_ACCES.
    pub mount_rootonly: bool,
    /// `-nfs-rootonly` (ONTAP's default: disabled): every NFS call but NULL only from a
    /// port below 1024; others get AUTH_TOOWEAK.
    pub nfs_rootonly: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rtmax: DEFAULT_XFER,
            wtmax: DEFAULT_XFER,
            mount_rootonly: true,
            nfs_rootonly: false,
        }
    }
}

impl Config {
    /// Each size 4 KiB..=1 MiB, a multiple of 4 KiB.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [("rtmax", self.rtmax), ("wtmax", self.wtmax)] {
            if !(4096..=MAX_XFER).contains(&v) || !v.is_multiple_of(4096) {
                return Err(format!("{name} {v} must be a multiple of 4096 between 4096 and {MAX_XFER} (4KiB..1MiB)"));
            }
        }
        Ok(())
    }
}

/// A listening NFS server (`qoslab nfs serve`: exports without QoS).
pub struct NfsServer {
    pub service: Arc<Service>,
    listener: TcpListener,
    limits: conn::Limits,
}

impl NfsServer {
    pub async fn bind(addr: &str, service: Arc<Service>) -> io::Result<NfsServer> {
        let listener = TcpListener::bind(addr).await?;
        service.set_port(listener.local_addr()?.port());
        Ok(NfsServer {
            service,
            listener,
            limits: conn::Limits::default(),
        })
    }

    /// The bounds its connections are held to.
    pub fn limits(mut self, limits: conn::Limits) -> NfsServer {
        self.limits = limits;
        self
    }

    pub fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` completes, then drains
    /// ([`conn::Limits::drain`]).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let cfg = self.service.config();
        let sh = Arc::new(conn::Shared {
            svc: self.service,
            link: None,
            limits: self.limits,
            held: conn::held(self.limits.held_bytes),
            max_record: conn::max_record(cfg.rtmax, cfg.wtmax),
        });
        let (tx, rx) = tokio::sync::watch::channel(false);
        let serving = listen::serve(self.listener, sh, rx);
        tokio::pin!(serving);
        tokio::pin!(shutdown);
        tokio::select! {
            _ = &mut serving => return Ok(()),
            _ = &mut shutdown => tx.send_replace(true),
        };
        serving.await;
        Ok(())
    }
}
