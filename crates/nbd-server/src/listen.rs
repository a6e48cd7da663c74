//! The accept loop: each listener with its connection cap, one task per connection, and
//! the graceful stop (stop accepting, let every connection finish its in-flight requests
//! while new ones get ESHUTDOWN, close what is still open after [`SHUTDOWN_TIMEOUT`]).

use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use storage_node::conn_limit::{ConnGuard, ConnLimit};
use storage_node::front_end::{ServerStats, Stop};
use storage_node::Node;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::task::JoinSet;

use crate::ratelimit::LogLimiter;
use crate::session::{self, Conf};
use crate::{Exports, NbdFrontEnd, SHUTDOWN_TIMEOUT};

/// Rejected or failed connections logged per window before the rest are counted only.
const REJECTED_LOG_BURST: u32 = 10;
const REJECTED_LOG_WINDOW: Duration = Duration::from_secs(10);

/// What every connection task shares.
struct Shared {
    conf: Conf,
    stats: Arc<ServerStats>,
    limiter: LogLimiter,
}

/// Serve until `stop` turns true, then drain.
pub(crate) async fn serve(fe: NbdFrontEnd, node: Arc<Node>, mut stop: Stop) {
    let NbdFrontEnd {
        unix,
        tcp,
        settings,
        stats,
    } = fe;
    let unix = match unix.map(|(l, p)| UnixListener::from_std(l).map(|l| (l, p))) {
        Some(Err(e)) => return tracing::error!("nbd: unix listener: {e}"),
        u => u.and_then(Result::ok),
    };
    let tcp = match tcp.map(TcpListener::from_std) {
        Some(Err(e)) => return tracing::error!("nbd: tcp listener: {e}"),
        t => t.and_then(Result::ok),
    };
    let max = settings.max_connections;
    let unix_limit = ConnLimit::new(
        unix.as_ref()
            .map(|(_, p)| format!("NBD unix {}", p.display()))
            .unwrap_or_default(),
        max,
    );
    let tcp_limit = match &tcp {
        Some(l) => ConnLimit::tcp("NBD tcp", l, max),
        None => ConnLimit::new("", max),
    };
    let shared = Arc::new(Shared {
        conf: Conf {
            exports: Exports::new(node, settings.default_export),
            busy_poll: settings.busy_poll,
            tls: settings.tls,
        },
        stats,
        limiter: LogLimiter::new(REJECTED_LOG_BURST, REJECTED_LOG_WINDOW),
    });
    let unix_path = unix.as_ref().map(|(_, p)| p.clone());
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            r = accept_unix(&unix) => match r {
                Ok(s) => if let Some(g) = unix_limit.admit() {
                    spawn_conn(&mut conns, s, g, shared.clone())
                },
                Err(e) => tracing::warn!("accept (unix): {e}"),
            },
            r = accept_tcp(&tcp) => match r {
                Ok(s) => if let Some(g) = tcp_limit.admit() {
                    spawn_conn(&mut conns, s, g, shared.clone())
                },
                Err(e) => tracing::warn!("accept (tcp): {e}"),
            },
        }
    }
    drop(unix);
    drop(tcp);
    remove_socket(unix_path);
    tracing::info!(
        connections = conns.len(),
        "nbd: shutting down: finishing in-flight requests"
    );
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_TIMEOUT, drain).await.is_err() {
        tracing::warn!(
            "nbd: connections still open after {:?}; closing them",
            SHUTDOWN_TIMEOUT
        );
        conns.abort_all();
    }
}

fn remove_socket(path: Option<PathBuf>) {
    if let Some(p) = path {
        let _ = std::fs::remove_file(p);
    }
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

fn spawn_conn<S>(conns: &mut JoinSet<()>, stream: S, guard: ConnGuard, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + AsRawFd + Unpin + Send + 'static,
{
    let budget = shared.conf.busy_poll;
    let busy_poll = (!budget.is_zero()).then(|| (stream.as_raw_fd(), budget));
    shared.stats.connections_total.fetch_add(1, Relaxed);
    shared.stats.connections_open.fetch_add(1, Relaxed);
    conns.spawn(async move {
        let _guard = guard;
        if let Err(e) = session::run(stream, &shared.conf, busy_poll).await {
            shared.stats.connection_errors.fetch_add(1, Relaxed);
            // Clients that are refused or misbehave can come by the thousand: their log
            // lines are rate-limited (and quote at most a short escaped prefix of input).
            if let Some(suppressed) = shared.limiter.admit() {
                if suppressed > 0 {
                    tracing::info!("{suppressed} similar connection log lines suppressed");
                }
                tracing::info!("connection closed: {e}");
            }
        }
        shared.stats.connections_open.fetch_sub(1, Relaxed);
    });
}
