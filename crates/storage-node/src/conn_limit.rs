//! A cap on the connections one listener serves at once (NBD unix, NBD TCP, the REST API,
//! S3). A connection over the cap is closed as soon as it is accepted, and the node says
//! so in its log: one line when the cap is reached, then at most one every 10 s with the
//! count refused since (a flood of refused clients cannot flood the log).

use crate::locks;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections each listener serves at once unless told otherwise (`--max-connections`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// The files this process may open (its soft RLIMIT_NOFILE; 1024 if unknown).
pub fn nofile() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: an out pointer to an rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 1024;
    }
    r.rlim_cur
}

/// Raise the soft RLIMIT_NOFILE to the hard limit (at start: descriptors are the node's
/// budget for connections, volumes and NFS); returns the soft limit now.
pub fn raise_nofile() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: out and in pointers to an rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            let want = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) != 0 {
                tracing::warn!(
                    "raising the open-file limit from {} to {}: {}",
                    r.rlim_cur,
                    r.rlim_max,
                    std::io::Error::last_os_error()
                );
            }
        }
    }
    nofile()
}

/// The descriptors NFS may keep open for its exports' trees: what the process may open
/// less every listener's connections (`listeners` x `max_connections`) and 1024 for
/// volumes, the state database and the rest; at least 64.
pub fn nfs_fd_budget(listeners: usize, max_connections: usize) -> usize {
    (nofile() as usize)
        .saturating_sub(listeners * max_connections + 1024)
        .max(64)
}
const LOG_EVERY: Duration = Duration::from_secs(10);

/// The connections of one listener.
pub struct ConnLimit {
    listener: String,
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
    /// When the last "limit reached" line was logged, and the refusals counted then.
    logged: Mutex<Option<(Instant, u64)>>,
}

/// One admitted connection; dropping it frees its place.
pub struct ConnGuard(Arc<ConnLimit>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

impl ConnLimit {
    /// `listener` names it in the log (e.g. "NBD tcp 127.0.0.1:10809").
    pub fn new(listener: impl Into<String>, max: usize) -> Arc<ConnLimit> {
        Arc::new(ConnLimit {
            listener: listener.into(),
            max: max.max(1),
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            logged: Mutex::new(None),
        })
    }

    /// The limit of a TCP `listener`, named in the log by `kind` and its address
    /// (e.g. "S3 127.0.0.1:9000").
    pub fn tcp(kind: &str, listener: &tokio::net::TcpListener, max: usize) -> Arc<ConnLimit> {
        let addr = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        ConnLimit::new(format!("{kind} {addr}"), max)
    }

    /// Admit a connection, or `None` (logged) when the listener is full.
    pub fn admit(self: &Arc<Self>) -> Option<ConnGuard> {
        let mut cur = self.open.load(Relaxed);
        loop {
            if cur >= self.max {
                self.refuse();
                return None;
            }
            match self
                .open
                .compare_exchange_weak(cur, cur + 1, Relaxed, Relaxed)
            {
                Ok(_) => return Some(ConnGuard(self.clone())),
                Err(now) => cur = now,
            }
        }
    }

    /// Accept the next TCP connection this limit admits, with Nagle off: an accept error
    /// is logged (`what` names the listener) and retried after 50 ms; a connection over
    /// the cap is closed at once.
    pub async fn accept(
        self: &Arc<Self>,
        listener: &tokio::net::TcpListener,
        what: &str,
    ) -> (tokio::net::TcpStream, std::net::SocketAddr, ConnGuard) {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("{what}: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Some(guard) = self.admit() else {
                drop(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            return (stream, peer, guard);
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Relaxed)
    }

    /// Connections refused since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Relaxed)
    }

    fn refuse(&self) {
        let total = self.refused.fetch_add(1, Relaxed) + 1;
        let now = Instant::now();
        let mut l = locks::lock(&self.logged);
        let due = l.is_none_or(|(at, _)| now.duration_since(at) >= LOG_EVERY);
        if due {
            let since = total - l.map_or(0, |(_, n)| n);
            tracing::warn!(
                "{}: connection limit of {} reached: refusing new connections until one \
                 closes ({since} refused since the last report, {total} in all; raise it \
                 with --max-connections)",
                self.listener,
                self.max
            );
            *l = Some((now, total));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_cap_and_frees_on_drop() {
        let l = ConnLimit::new("test", 2);
        let a = l.admit().unwrap();
        let _b = l.admit().unwrap();
        assert!(l.admit().is_none());
        assert_eq!((l.open(), l.refused()), (2, 1));
        drop(a);
        assert!(l.admit().is_some());
    }
}
