//! The accept loop both servers share (`qoslab nfs serve`'s [`crate::NfsServer`] and the
//! node's [`crate::NfsFrontEnd`]): a client no export admits is closed at accept, before it
//! counts against the connection cap; the others are served ([`crate::conn`]) up to the
//! cap; on stop, nothing more is accepted or read, answers in flight get
//! [`Limits::drain`](crate::conn::Limits::drain), then every connection is closed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use storage_node::conn_limit::ConnLimit;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::conn::{self, Shared};
use crate::service::Peer;

/// Connection ids, unique for the life of the process.
static CONN_IDS: AtomicU64 = AtomicU64::new(1);

/// Refusals of clients no export admits: logged at most once per 10 s with the count.
struct Unadmitted {
    refused: u64,
    logged: Option<Instant>,
}

impl Unadmitted {
    fn refuse(&mut self, addr: std::net::IpAddr) {
        self.refused += 1;
        if self
            .logged
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(10))
        {
            tracing::warn!(
                "nfs: closing connections from {addr}: no export policy admits it ({} such \
                 connection(s) refused in all)",
                self.refused
            );
            self.logged = Some(Instant::now());
        }
    }
}

/// Accept and serve connections on `listener` until `stop` turns true, then drain.
pub async fn serve(listener: TcpListener, sh: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let what = listener
        .local_addr()
        .map(|a| format!("nfs {a}"))
        .unwrap_or_else(|_| "nfs".into());
    let limit = ConnLimit::new(what, sh.limits.max_connections);
    let mut unadmitted = Unadmitted {
        refused: 0,
        logged: None,
    };
    let mut conns = tokio::task::JoinSet::new();
    let conn_stop = stop.clone();
    loop {
        tokio::select! {
            _ = async { let _ = stop.wait_for(|s| *s).await; } => break,
            r = listener.accept() => {
                let (stream, addr) = match r {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!("nfs: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if !sh.svc.admits(addr.ip()) {
                    sh.svc.counters.unadmitted.fetch_add(1, Ordering::Relaxed);
                    unadmitted.refuse(addr.ip());
                    continue;
                }
                let Some(permit) = limit.admit() else { continue };
                let peer = Peer {
                    addr: addr.ip(),
                    port: addr.port(),
                    conn: CONN_IDS.fetch_add(1, Ordering::Relaxed),
                };
                let (sh, stop) = (sh.clone(), conn_stop.clone());
                conns.spawn(async move {
                    let _permit = permit;
                    if let Err(e) = conn::serve(sh, stream, peer, stop).await {
                        tracing::debug!("nfs: connection from {addr} ended: {e}");
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    // Nothing more is accepted or read; answers in flight get the drain time.
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(sh.limits.drain, drain).await.is_err() {
        tracing::warn!(
            "nfs: {} connection(s) still busy after {:?}; closing them (their held calls \
             are dropped unanswered: clients resend them)",
            conns.len(),
            sh.limits.drain
        );
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}
