//! An iSCSI target (RFC 7143) serving SCSI block LUNs.
//!
//! Layers: `iscsi-proto` frames and decodes PDUs, negotiates keys and describes SCSI
//! (sans-IO); [`login`] runs a connection's login; [`conn`] runs a connection in the full
//! feature phase (the command window, Data-Out collection and R2Ts, Data-In, NOP, task
//! management, logout); [`task`] runs one SCSI command (admission, then [`exec`]) as a
//! task of its own; [`Server`] accepts connections.
//!
//! Seams ([`Target`], [`Lun`], [`Admission`]): the target asks a [`Target`] for its name,
//! the LUNs an initiator may see (LUN masking) and CHAP secrets; each LUN's storage is a
//! [`Lun`] with declared capabilities; each SCSI command passes the connection's
//! [`Admission`] hook once, before its I/O. The standalone target (`qoslab iscsi serve`)
//! fills them with files and no QoS; the node's front end ([`IscsiFrontEnd`]) with its
//! block volumes ([`volume_lun`]) and its one admission core ([`qos`]).
//!
//! Invariants:
//! - A malformed or hostile client ends only its own connection: decoders never panic,
//!   every buffer is bounded (PDU data by MaxRecvDataSegmentLength, login text by
//!   `MAX_TEXT`, a write's data by its bursts), login and idle connections time out, and
//!   connections beyond [`Config::max_connections`] are closed on accept.
//! - A command's response goes out only after its I/O is done: a write with FUA, and
//!   every write before a SYNCHRONIZE CACHE's response, is on stable storage first.
//! - Error recovery level 0: a protocol error (a digest error in a header, a wrong DataSN
//!   or offset) ends the connection; the initiator recovers by logging in again.

pub mod admission;
pub mod client;
pub mod config;
pub mod conn;
pub mod dispatch;
pub mod exec;
pub mod file_lun;
pub mod front_end;
pub mod login;
pub mod lu;
pub mod lun;
pub mod qos;
pub mod reply;
pub mod rw;
pub mod session;
pub mod target;
pub mod task;
pub mod volume_lun;
mod writes;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iscsi_proto::negotiate::TargetLimits;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use admission::{Admission, Admitted, Grant, Op, OpKind, Outcome, Unlimited};
pub use config::{IscsiSettings, LunSpec};
pub use file_lun::FileLun;
pub use front_end::IscsiFrontEnd;
pub use lu::LogicalUnit;
pub use lun::{Caps, Extent, Identity, Lun};
pub use target::{
    Access, Auth, ChapSecret, ConnInfo, Credentials, StaticLun, StaticTarget, Target,
};

/// The target's limits and time-outs.
#[derive(Debug, Clone)]
pub struct Config {
    /// What login negotiates from the target's side.
    pub limits: TargetLimits,
    /// Connections served at once; more are closed on accept.
    pub max_connections: usize,
    /// A login must finish within this, or the connection closes.
    pub login_timeout: Duration,
    /// After this long without a PDU from the initiator, the target pings it (NOP-In).
    pub nop_interval: Duration,
    /// A ping unanswered this long ends the connection.
    pub nop_timeout: Duration,
    /// Commands a session may have outstanding (the CmdSN window).
    pub cmd_window: u32,
    /// The address SendTargets reports (`IP:PORT`); default: the address the discovery
    /// connection reached.
    pub portal: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: TargetLimits::default(),
            max_connections: 256,
            login_timeout: Duration::from_secs(15),
            nop_interval: Duration::from_secs(30),
            nop_timeout: Duration::from_secs(30),
            cmd_window: 128,
            portal: None,
        }
    }
}

/// Counters a running target keeps (for logs and tests).
#[derive(Debug, Default)]
pub struct Stats {
    pub connections: AtomicUsize,
    pub logins: AtomicUsize,
    pub login_failures: AtomicUsize,
    pub commands: AtomicUsize,
    pub protocol_errors: AtomicUsize,
}

/// Everything a connection shares with the server.
pub struct Shared {
    pub target: Arc<dyn Target>,
    pub config: Arc<Config>,
    pub sessions: Arc<session::Sessions>,
    pub stats: Stats,
}

/// A listening target.
pub struct Server {
    listener: TcpListener,
    pub shared: Arc<Shared>,
}

impl Server {
    pub async fn bind(addr: &str, target: Arc<dyn Target>, config: Config) -> io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Server::on(listener, target, config))
    }

    /// A target on a listener already bound (the node's front end binds before the node
    /// runs).
    pub fn on(listener: TcpListener, target: Arc<dyn Target>, config: Config) -> Server {
        Server {
            listener,
            shared: Arc::new(Shared {
                target,
                config: Arc::new(config),
                sessions: Arc::new(session::Sessions::default()),
                stats: Stats::default(),
            }),
        }
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` completes; then every connection stops
    /// reading, finishes the commands it has, and closes.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut conns = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                r = self.listener.accept() => {
                    let (stream, peer) = match r {
                        Ok(x) => x,
                        Err(e) => {
                            tracing::warn!("iscsi: accept: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let live = self.shared.stats.connections.load(Ordering::Relaxed);
                    if live >= self.shared.config.max_connections {
                        tracing::warn!("iscsi: {peer}: refused, {live} connections (the limit)");
                        drop(stream);
                        continue;
                    }
                    let shared = self.shared.clone();
                    let stop = stop_rx.clone();
                    conns.spawn(async move {
                        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
                        if let Err(e) = conn::serve(shared.clone(), stream, peer, stop).await {
                            tracing::debug!("iscsi: connection from {peer} ended: {e}");
                        }
                        shared.stats.connections.fetch_sub(1, Ordering::Relaxed);
                    });
                }
            }
        }
        let _ = stop_tx.send(true);
        self.shared.sessions.end_all();
        while conns.join_next().await.is_some() {}
        Ok(())
    }
}
