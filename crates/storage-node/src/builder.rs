//! One way to assemble a node: [`Node::builder`]. `qoslab serve`, the harness's embedded
//! node, the S3 family's embedded endpoint and test fixtures all go through it:
//!
//! ```no_run
//! # async fn f(cfg: storage_node::NodeConfig) -> Result<(), storage_node::errors::NodeError> {
//! use storage_node::Node;
//! let running = Node::builder(cfg, "/var/lib/qoslab".as_ref())
//!     .nbd_unix("/run/qoslab.sock".as_ref())
//!     .spawn()
//!     .await?;
//! running.run_until(async { /* a signal */ }).await;
//! # Ok(()) }
//! ```
//!
//! NBD is the node's own front end; every other one (the REST API, S3, NFS) is a
//! [`FrontEnd`] its crate binds and hands to [`NodeBuilder::front_end`]. A running node
//! stops in one order: every front end stops accepting, connections finish what they have
//! in flight (new requests get their protocol's "shutting down" answer), then every
//! volume is synced.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::watch;

use crate::errors::NodeError;
use crate::server::{self, Listeners, ServerStats, StartTls};
use crate::{Node, NodeConfig};

/// A front end's future: serves until its stop signal turns true, then drains and ends.
pub type Serving = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Turns `true` when the node stops: stop accepting, finish in-flight requests, return.
pub type Stop = watch::Receiver<bool>;

/// A protocol the node serves beside NBD, already bound by its crate (so bind errors are
/// reported where the address is known, and a port 0 is resolved before the node runs).
pub trait FrontEnd: Send + 'static {
    /// One line for the ready banner: what it serves and where.
    fn describe(&self) -> String;
    /// Serve `node` until `stop` turns true, then finish in-flight requests.
    fn serve(self: Box<Self>, node: Arc<Node>, stop: Stop) -> Serving;
}

enum Source {
    Config(Box<NodeConfig>, PathBuf),
    Opened(Arc<Node>),
}

/// Assembles a node: where it comes from, what it listens on, which front ends it runs.
pub struct NodeBuilder {
    source: Source,
    unix: Option<PathBuf>,
    tcp: Option<SocketAddr>,
    tls: Option<Arc<dyn StartTls>>,
    bound: Option<Listeners>,
    front_ends: Vec<Box<dyn FrontEnd>>,
    stats: Arc<ServerStats>,
}

impl Node {
    /// A node opened from `cfg` in `data_dir` when it is spawned (no NBD listener until
    /// one is named).
    pub fn builder(cfg: NodeConfig, data_dir: &Path) -> NodeBuilder {
        NodeBuilder::from_source(Source::Config(Box::new(cfg), data_dir.to_path_buf()))
    }

    /// A builder over a node already open (the control plane opens it from its state).
    pub fn builder_for(node: Arc<Node>) -> NodeBuilder {
        NodeBuilder::from_source(Source::Opened(node))
    }
}

impl NodeBuilder {
    fn from_source(source: Source) -> NodeBuilder {
        NodeBuilder {
            source,
            unix: None,
            tcp: None,
            tls: None,
            bound: None,
            front_ends: Vec::new(),
            stats: Arc::default(),
        }
    }

    /// Serve NBD on a unix socket (a stale socket file there is replaced).
    pub fn nbd_unix(mut self, path: &Path) -> NodeBuilder {
        self.unix = Some(path.to_path_buf());
        self
    }

    /// Serve NBD on TCP (port 0: any free port, see [`RunningNode::tcp_addr`]).
    pub fn nbd_tcp(mut self, addr: SocketAddr) -> NodeBuilder {
        self.tcp = Some(addr);
        self
    }

    /// Serve NBD on listeners bound already (their TLS setting included).
    pub fn nbd_listeners(mut self, l: Listeners) -> NodeBuilder {
        self.unix = l.unix.as_ref().map(|(_, p)| p.clone());
        self.bound = Some(l);
        self
    }

    /// Offer (or require) TLS on NBD.
    pub fn nbd_tls(mut self, tls: Option<Arc<dyn StartTls>>) -> NodeBuilder {
        self.tls = tls;
        self
    }

    /// The NBD server's counters (shared with whoever reports them, e.g. `/metrics`).
    pub fn server_stats(mut self, stats: Arc<ServerStats>) -> NodeBuilder {
        self.stats = stats;
        self
    }

    /// Run another front end beside NBD.
    pub fn front_end(mut self, f: impl FrontEnd) -> NodeBuilder {
        self.front_ends.push(Box::new(f));
        self
    }

    /// Open the node (if not open), bind NBD and start everything in the current tokio
    /// runtime.
    pub async fn spawn(self) -> Result<RunningNode, NodeError> {
        let node = match self.source {
            Source::Config(cfg, dir) => Node::open(&cfg, &dir)?,
            Source::Opened(n) => n,
        };
        let listeners = match self.bound {
            Some(l) => l,
            None => {
                let mut l = Listeners::bind(self.unix.as_deref(), self.tcp).await?;
                l.tls = self.tls;
                l
            }
        };
        let tcp = listeners.tcp_addr();
        let banner = self.front_ends.iter().map(|f| f.describe()).collect();
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run(
            node.clone(),
            listeners,
            self.stats.clone(),
            self.front_ends,
            stop_rx,
        ));
        Ok(RunningNode {
            node,
            unix: self.unix,
            tcp,
            banner,
            stats: self.stats,
            stop: stop_tx,
            task,
        })
    }

    /// [`spawn`](Self::spawn) on a runtime of its own, in a thread named `thread_name`
    /// with `workers` worker threads (all named so too): a node inside a process that is
    /// not async (the harness, the S3 family). Stops when the handle is dropped.
    pub fn spawn_thread(self, thread_name: &str, workers: usize) -> Result<NodeThread, NodeError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let name = thread_name.to_string();
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .thread_name(name)
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(NodeError::Runtime(e.to_string())));
                        return;
                    }
                };
                rt.block_on(async move {
                    let running = match self.spawn().await {
                        Ok(r) => r,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok((
                        running.node.clone(),
                        running.tcp,
                        running.banner.clone(),
                    )));
                    running
                        .run_until(async {
                            let _ = stop_rx.await;
                        })
                        .await;
                });
            })
            .map_err(|e| NodeError::Runtime(format!("thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok((node, tcp, banner))) => Ok(NodeThread {
                node,
                tcp,
                banner,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(NodeError::Runtime(
                    "the node thread ended before it was ready".into(),
                ))
            }
        }
    }
}

/// The node's life: front ends and NBD serve until `stop`, then stop in order.
async fn run(
    node: Arc<Node>,
    listeners: Listeners,
    stats: Arc<ServerStats>,
    front_ends: Vec<Box<dyn FrontEnd>>,
    mut stop: Stop,
) {
    let (fe_stop_tx, fe_stop) = watch::channel(false);
    let mut tasks: Vec<_> = front_ends
        .into_iter()
        .map(|f| tokio::spawn(f.serve(node.clone(), fe_stop.clone())))
        .collect();
    let until = async move {
        let _ = stop.wait_for(|s| *s).await;
        // Every front end stops accepting at the moment NBD does.
        fe_stop_tx.send_replace(true);
    };
    server::serve(node.clone(), listeners, stats, until).await;
    let drain = async {
        for t in &mut tasks {
            let _ = t.await;
        }
    };
    if tokio::time::timeout(server::SHUTDOWN_TIMEOUT, drain)
        .await
        .is_err()
    {
        tracing::warn!(
            "front ends still busy after {:?}; closing them",
            server::SHUTDOWN_TIMEOUT
        );
        for t in &tasks {
            t.abort();
        }
    }
    node.sync_all();
    tracing::info!("all volumes synced; bye");
}

/// A node running in the current runtime.
pub struct RunningNode {
    pub node: Arc<Node>,
    unix: Option<PathBuf>,
    tcp: Option<SocketAddr>,
    banner: Vec<String>,
    stats: Arc<ServerStats>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningNode {
    /// The NBD unix socket, if any.
    pub fn unix_path(&self) -> Option<&Path> {
        self.unix.as_deref()
    }

    /// The bound NBD TCP address, if any.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
    }

    /// The front ends' banner lines.
    pub fn banner(&self) -> &[String] {
        &self.banner
    }

    pub fn server_stats(&self) -> &Arc<ServerStats> {
        &self.stats
    }

    /// Serve until `signal` resolves, then stop in order (front ends and NBD stop
    /// accepting, in-flight requests finish, volumes are synced).
    pub async fn run_until(self, signal: impl Future<Output = ()>) {
        signal.await;
        self.stop().await;
    }

    /// Stop in order and wait until the node is down.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
    }
}

/// A node running on a runtime of its own ([`NodeBuilder::spawn_thread`]); dropping it
/// stops the node and waits for it.
pub struct NodeThread {
    node: Arc<Node>,
    tcp: Option<SocketAddr>,
    banner: Vec<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NodeThread {
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// The bound NBD TCP address, if any.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
    }

    /// The front ends' banner lines.
    pub fn banner(&self) -> &[String] {
        &self.banner
    }

    /// Stop in order and wait until the node is down.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for NodeThread {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for NodeThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeThread")
            .field("tcp", &self.tcp)
            .finish_non_exhaustive()
    }
}
