//! Listening, accepting, and the life of a connection; graceful shutdown.

pub mod handshake;
mod ratelimit;
mod spin;
pub mod transmission;

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::task::JoinSet;

use crate::conn_limit::{ConnGuard, ConnLimit};
use crate::errors::NodeError;
use crate::node::Node;
use handshake::{Negotiated, OptionState, TlsMode};
use ratelimit::LogLimiter;

/// How often used space is re-read for volumes that were written.
pub const USED_SPACE_REFRESH: Duration = Duration::from_millis(200);
/// How handshakes may take before the node hangs up.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long shutdown waits for connections to finish their in-flight requests.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// Bound listening sockets, and how they offer TLS.
pub struct Listeners {
    pub unix: Option<(UnixListener, PathBuf)>,
    pub tcp: Option<TcpListener>,
    /// NBD TLS (`--nbd-tls`); `None`: off.
    pub tls: Option<Arc<dyn StartTls>>,
    /// Connections each listener serves at once (`--max-connections`).
    pub max_connections: usize,
}

/// A byte stream a connection runs on, plain or encrypted.
pub trait NbdStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + ?Sized> NbdStream for T {}

/// The handshake's result: the encrypted stream.
pub type TlsAccept<'a> =
    Pin<Box<dyn Future<Output = std::io::Result<Box<dyn NbdStream>>> + Send + 'a>>;

/// NBD's STARTTLS, provided by whoever holds the node's TLS identity (the control plane,
/// on rustls): the data path knows only this seam and links no TLS library.
pub trait StartTls: Send + Sync {
    /// Offered to clients, or required of them.
    fn mode(&self) -> TlsMode;
    /// Run the server side of the TLS handshake on `stream` (errors name the handshake).
    fn accept(&self, stream: Box<dyn NbdStream>) -> TlsAccept<'_>;
}

impl Listeners {
    /// Bind the requested addresses. A stale unix socket file is replaced.
    pub async fn bind(
        unix: Option<&Path>,
        tcp: Option<SocketAddr>,
    ) -> Result<Listeners, NodeError> {
        let unix = match unix {
            None => None,
            Some(p) => {
                if p.exists() {
                    let _ = std::fs::remove_file(p);
                }
                let l = UnixListener::bind(p).map_err(|source| NodeError::Listen {
                    addr: p.display().to_string(),
                    source,
                })?;
                Some((l, p.to_path_buf()))
            }
        };
        let tcp = match tcp {
            None => None,
            Some(a) => Some(
                TcpListener::bind(a)
                    .await
                    .map_err(|source| NodeError::Listen {
                        addr: a.to_string(),
                        source,
                    })?,
            ),
        };
        Ok(Listeners {
            unix,
            tcp,
            tls: None,
            max_connections: crate::conn_limit::DEFAULT_MAX_CONNECTIONS,
        })
    }

    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp.as_ref().and_then(|l| l.local_addr().ok())
    }
}

/// Node-level counters.
#[derive(Default)]
pub struct ServerStats {
    pub connections_total: AtomicU64,
    pub connections_open: AtomicU64,
    pub connection_errors: AtomicU64,
}

/// Serve NBD until `stop` resolves, then shut down gracefully: stop accepting, let every
/// connection finish its in-flight requests (new ones get ESHUTDOWN). The node's
/// [builder](crate::builder) runs it and syncs the volumes once every front end is done.
pub(crate) async fn serve(
    node: Arc<Node>,
    listeners: Listeners,
    stats: Arc<ServerStats>,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut conns = JoinSet::new();
    let refresher = {
        let node = node.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(USED_SPACE_REFRESH);
            let mut recount = tokio::time::interval(crate::nas::RECOUNT_EVERY / 2);
            let mut counting: Option<tokio::task::JoinHandle<()>> = None;
            loop {
                tokio::select! {
                    _ = tick.tick() => node.refresh_used_space(),
                    _ = recount.tick() => {
                        // NAS trees changed outside NFS: one walk at a time, off the workers.
                        if counting.as_ref().is_none_or(|c| c.is_finished()) {
                            let n = node.clone();
                            counting = Some(tokio::task::spawn_blocking(move || n.recount_nas_volumes()));
                        }
                    }
                }
            }
        })
    };
    let Listeners {
        unix,
        tcp,
        tls,
        max_connections,
    } = listeners;
    let unix_limit = ConnLimit::new(
        match &unix {
            Some((_, p)) => format!("NBD unix {}", p.display()),
            None => String::new(),
        },
        max_connections,
    );
    let tcp_limit = ConnLimit::new(
        match tcp.as_ref().and_then(|l| l.local_addr().ok()) {
            Some(a) => format!("NBD tcp {a}"),
            None => String::new(),
        },
        max_connections,
    );
    let limiter = Arc::new(LogLimiter::new(REJECTED_LOG_BURST, REJECTED_LOG_WINDOW));
    let unix_path = unix.as_ref().map(|(_, p)| p.clone());
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            r = accept_unix(&unix) => match r {
                Ok(s) => if let Some(g) = unix_limit.admit() {
                    spawn_conn(&mut conns, s, g, node.clone(), stats.clone(), tls.clone(), limiter.clone())
                },
                Err(e) => tracing::warn!("accept (unix): {e}"),
            },
            r = accept_tcp(&tcp) => match r {
                Ok(s) => if let Some(g) = tcp_limit.admit() {
                    spawn_conn(&mut conns, s, g, node.clone(), stats.clone(), tls.clone(), limiter.clone())
                },
                Err(e) => tracing::warn!("accept (tcp): {e}"),
            },
        }
    }
    drop(unix);
    drop(tcp);
    if let Some(p) = unix_path {
        let _ = std::fs::remove_file(p);
    }
    tracing::info!(
        connections = conns.len(),
        "shutting down: finishing in-flight requests"
    );
    node.begin_shutdown();
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_TIMEOUT, drain).await.is_err() {
        tracing::warn!(
            "connections still open after {:?}; closing them",
            SHUTDOWN_TIMEOUT
        );
        conns.abort_all();
    }
    refresher.abort();
}

async fn accept_unix(
    l: &Option<(UnixListener, PathBuf)>,
) -> std::io::Result<tokio::net::UnixStream> {
    match l {
        Some((l, _)) => l.accept().await.map(|(s, _)| s),
        None => std::future::pending().await,
    }
}

async fn accept_tcp(l: &Option<TcpListener>) -> std::io::Result<tokio::net::TcpStream> {
    match l {
        Some(l) => {
            let (s, _) = l.accept().await?;
            s.set_nodelay(true)?;
            Ok(s)
        }
        None => std::future::pending().await,
    }
}

fn spawn_conn<S>(
    conns: &mut JoinSet<()>,
    stream: S,
    guard: ConnGuard,
    node: Arc<Node>,
    stats: Arc<ServerStats>,
    tls: Option<Arc<dyn StartTls>>,
    limiter: Arc<LogLimiter>,
) where
    S: AsyncRead + AsyncWrite + AsRawFd + Unpin + Send + 'static,
{
    let budget = node.busy_poll();
    let busy_poll = (!budget.is_zero()).then(|| (stream.as_raw_fd(), budget));
    stats.connections_total.fetch_add(1, Relaxed);
    stats.connections_open.fetch_add(1, Relaxed);
    conns.spawn(async move {
        let _guard = guard;
        if let Err(e) = connection_tls(stream, node, busy_poll, tls.as_deref()).await {
            stats.connection_errors.fetch_add(1, Relaxed);
            // Clients that are refused or misbehave can come by the thousand: their log
            // lines are rate-limited (and quote at most a short escaped prefix of input).
            if let Some(suppressed) = limiter.admit() {
                if suppressed > 0 {
                    tracing::info!("{suppressed} similar connection log lines suppressed");
                }
                tracing::info!("connection closed: {e}");
            }
        }
        stats.connections_open.fetch_sub(1, Relaxed);
    });
}

/// Rejected or failed connections logged per window before the rest are counted only.
const REJECTED_LOG_BURST: u32 = 10;
const REJECTED_LOG_WINDOW: Duration = Duration::from_secs(10);

/// One client without TLS: negotiate, then transmit. `busy_poll`: see
/// [`transmission::run`].
pub async fn connection<S>(
    mut stream: S,
    node: Arc<Node>,
    busy_poll: Option<(RawFd, Duration)>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let mut st = OptionState {
        no_zeroes: false,
        tls: TlsMode::Off,
        tls_active: false,
    };
    match first_phase(&mut stream, &node, &mut st, deadline).await? {
        Negotiated::Left => Ok(()),
        Negotiated::Session(s) => transmit(stream, node, s, busy_poll).await,
        Negotiated::StartTls => Err(std::io::Error::other("STARTTLS acknowledged without TLS")),
    }
}

/// One client, with TLS offered or required as `tls` says.
pub async fn connection_tls<S>(
    mut stream: S,
    node: Arc<Node>,
    busy_poll: Option<(RawFd, Duration)>,
    tls: Option<&dyn StartTls>,
) -> std::io::Result<()>
where
    S: NbdStream + 'static,
{
    let Some(t) = tls else {
        return connection(stream, node, busy_poll).await;
    };
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let mut st = OptionState {
        no_zeroes: false,
        tls: t.mode(),
        tls_active: false,
    };
    match first_phase(&mut stream, &node, &mut st, deadline).await? {
        Negotiated::Left => Ok(()),
        Negotiated::Session(s) => transmit(stream, node, s, busy_poll).await,
        Negotiated::StartTls => {
            let mut ts = tokio::time::timeout_at(deadline, t.accept(Box::new(stream)))
                .await
                .map_err(|_| timed_out())??;
            st.tls_active = true;
            let second = tokio::time::timeout_at(deadline, handshake::options(&mut ts, &node, st))
                .await
                .map_err(|_| timed_out())??;
            match second {
                // Busy-polling reads the raw socket: never under TLS.
                Negotiated::Session(s) => transmit(ts, node, s, None).await,
                Negotiated::Left | Negotiated::StartTls => Ok(()),
            }
        }
    }
}

fn timed_out() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "handshake timed out")
}

/// The greeting and the options phase, within the handshake's deadline.
async fn first_phase<S>(
    stream: &mut S,
    node: &Node,
    st: &mut OptionState,
    deadline: tokio::time::Instant,
) -> std::io::Result<Negotiated>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    tokio::time::timeout_at(deadline, async {
        st.no_zeroes = handshake::greet(stream).await?;
        handshake::options(stream, node, *st).await
    })
    .await
    .map_err(|_| timed_out())?
}

async fn transmit<S>(
    mut stream: S,
    node: Arc<Node>,
    session: handshake::Session,
    busy_poll: Option<(RawFd, Duration)>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let shutdown = node.shutdown_signal();
    tracing::debug!(volume = %session.volume.name, structured = session.structured, "transmission");
    // A deleted volume closes its connections (the transmission loop is dropped).
    let mut removed = session.volume.removed_signal();
    let name = session.volume.name.clone();
    tokio::select! {
        r = transmission::run(&mut stream, node, session, shutdown, busy_poll) => r,
        _ = removed.wait_for(|r| *r) => Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            format!("volume {name:?} was deleted"),
        )),
    }
}
