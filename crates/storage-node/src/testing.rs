//! The workspace's one in-process node fixture (feature `testing`, and this crate's own
//! unit tests): a node opened from a config text in a fresh data directory, removed when
//! the fixture drops. Front ends' tests (NBD, NFS, S3 flows) start their nodes here.

use std::path::Path;
use std::sync::Arc;

use test_support::TestDir;

use crate::{Node, NodeConfig};

/// A node, the config it was opened from, and its data directory (removed on drop: keep
/// the fixture alive as long as the node).
pub struct TestNode {
    pub node: Arc<Node>,
    pub cfg: NodeConfig,
    pub dir: TestDir,
}

impl TestNode {
    /// A node from the config text `toml` in a fresh directory `qoslab-TAG-...`.
    pub fn open(toml: &str, tag: &str) -> TestNode {
        TestNode::open_in(&std::env::temp_dir(), toml, tag)
    }

    /// The same, its directory under `base` (a run directory its caller removes, also on
    /// a signal, when the process ends without unwinding).
    pub fn open_in(base: &Path, toml: &str, tag: &str) -> TestNode {
        let dir = TestDir::new_in(base, tag);
        let cfg = NodeConfig::parse(toml, "test.toml").expect("config");
        let node = Node::open(&cfg, &dir).expect("node");
        TestNode { node, cfg, dir }
    }

    /// The same, its waits on tokio's timer (`Scheduler::use_tokio_timers`), for tests
    /// on tokio's paused clock: a service latency's precise timer runs on the real one.
    pub fn on_tokio_timers(toml: &str, tag: &str) -> TestNode {
        let t = TestNode::open(toml, tag);
        t.node.scheduler.use_tokio_timers();
        t
    }

    /// The node and the directory guard, for tests that hold them apart.
    pub fn split(self) -> (Arc<Node>, TestDir) {
        (self.node, self.dir)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl std::ops::Deref for TestNode {
    type Target = Arc<Node>;
    fn deref(&self) -> &Arc<Node> {
        &self.node
    }
}

/// A 1 MiB file backend in a fresh directory, for layer tests.
pub use crate::backend::scratch_file as file_backend;

/// The families of a Prometheus text exposition, in order, each with its type (its
/// `# TYPE` lines): what dashboards and alerts are written against.
pub fn metric_families(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .collect()
}
