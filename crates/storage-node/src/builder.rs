//! One way to assemble a node: [`Node::builder`]. `qoslab serve`, the harness's embedded
//! node, the S3 family's embedded endpoint and test fixtures all go through it:
//!
//! ```no_run
//! # async fn f(cfg: storage_node::NodeConfig, nbd: impl storage_node::FrontEnd)
//! # -> Result<(), storage_node::errors::NodeError> {
//! use storage_node::Node;
//! let running = Node::builder(cfg, "/var/lib/qoslab".as_ref())
//!     .front_end(nbd) // e.g. nbd_server::NbdFrontEnd::unix("/run/qoslab.sock".as_ref())?
//!     .spawn()
//!     .await?;
//! running.run_until(async { /* a signal */ }).await;
//! # Ok(()) }
//! ```
//!
//! Every protocol (NBD, the REST API, S3, NFS) is a [`FrontEnd`] its crate binds and
//! hands to [`NodeBuilder::front_end`]; the node knows none of them. A running node also
//! refreshes its volumes' used space ([`USED_SPACE_REFRESH`]), and stops in one order:
//! every front end stops accepting and the node says it is shutting down (new requests
//! get their protocol's "shutting down" answer), connections finish what they have in
//! flight, then every volume is synced.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::errors::NodeError;
pub use crate::front_end::{FrontEnd, Serving, Stop};
use crate::{Node, NodeConfig};

/// How often used space is re-read for volumes that were written.
pub const USED_SPACE_REFRESH: Duration = Duration::from_millis(200);
/// How long a stopping node waits for its front ends to drain before closing them.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

enum Source {
    Config(Box<NodeConfig>, PathBuf),
    Opened(Arc<Node>),
}

/// Assembles a node: where it comes from and which front ends it runs.
pub struct NodeBuilder {
    source: Source,
    front_ends: Vec<Box<dyn FrontEnd>>,
}

impl Node {
    /// A node opened from `cfg` in `data_dir` when it is spawned.
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
            front_ends: Vec::new(),
        }
    }

    /// Serve a front end.
    pub fn front_end(mut self, f: impl FrontEnd) -> NodeBuilder {
        self.front_ends.push(Box::new(f));
        self
    }

    /// Open the node (if not open) and start it and its front ends in the current tokio
    /// runtime.
    pub async fn spawn(self) -> Result<RunningNode, NodeError> {
        let node = match self.source {
            Source::Config(cfg, dir) => Node::open(&cfg, &dir)?,
            Source::Opened(n) => n,
        };
        let banner = self.front_ends.iter().map(|f| f.describe()).collect();
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run(node.clone(), self.front_ends, stop_rx));
        Ok(RunningNode {
            node,
            banner,
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
                    let _ = ready_tx.send(Ok((running.node.clone(), running.banner.clone())));
                    running
                        .run_until(async {
                            let _ = stop_rx.await;
                        })
                        .await;
                });
            })
            .map_err(|e| NodeError::Runtime(format!("thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok((node, banner))) => Ok(NodeThread {
                node,
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

/// The node's life: its front ends serve until `stop`, then it stops in order.
async fn run(node: Arc<Node>, front_ends: Vec<Box<dyn FrontEnd>>, mut stop: Stop) {
    let (fe_stop_tx, fe_stop) = watch::channel(false);
    let mut tasks: Vec<_> = front_ends
        .into_iter()
        .map(|f| tokio::spawn(f.serve(node.clone(), fe_stop.clone())))
        .collect();
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
    let _ = stop.wait_for(|s| *s).await;
    // Every front end stops accepting at once; in-flight requests finish, new ones are
    // refused as the protocol says.
    fe_stop_tx.send_replace(true);
    node.begin_shutdown();
    tracing::info!("shutting down: finishing in-flight requests");
    let drain = async {
        for t in &mut tasks {
            let _ = t.await;
        }
    };
    if tokio::time::timeout(SHUTDOWN_TIMEOUT, drain).await.is_err() {
        tracing::warn!("front ends still busy after {SHUTDOWN_TIMEOUT:?}; closing them");
        for t in &tasks {
            t.abort();
        }
    }
    refresher.abort();
    node.sync_all();
    tracing::info!("all volumes synced; bye");
}

/// A node running in the current runtime.
pub struct RunningNode {
    pub node: Arc<Node>,
    banner: Vec<String>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningNode {
    /// The front ends' banner lines.
    pub fn banner(&self) -> &[String] {
        &self.banner
    }

    /// Serve until `signal` resolves, then stop in order (front ends stop accepting,
    /// in-flight requests finish, volumes are synced).
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
    banner: Vec<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NodeThread {
    pub fn node(&self) -> &Arc<Node> {
        &self.node
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
            .field("banner", &self.banner)
            .finish_non_exhaustive()
    }
}
