//! The NBD-attached flavour of the workspace's node fixture (feature `testing`):
//! [`storage_node::testing::TestNode`] served by this front end on a unix socket in its
//! own directory, on a thread of its own, for tests whose client is a real NBD client
//! (fio, nbdfuse, loadgen's NBD target). Stopped, then its directory removed, on drop.

use std::path::{Path, PathBuf};

use storage_node::builder::NodeThread;
use storage_node::testing::TestNode;
use storage_node::Node;

use crate::NbdFrontEnd;

/// A node from a config text, served over NBD at [`NbdTestNode::socket`].
pub struct NbdTestNode {
    // Declared first: dropped (the node stopped) before the directory goes.
    _running: NodeThread,
    socket: PathBuf,
    node: TestNode,
}

impl NbdTestNode {
    /// A node from the config text `toml` in a fresh directory `qoslab-TAG-...` under the
    /// system temp dir.
    pub fn start(toml: &str, tag: &str) -> NbdTestNode {
        NbdTestNode::start_in(&std::env::temp_dir(), toml, tag)
    }

    /// The same, its directory under `base` (see [`TestNode::open_in`]).
    pub fn start_in(base: &Path, toml: &str, tag: &str) -> NbdTestNode {
        let node = TestNode::open_in(base, toml, tag);
        let socket = node.path().join("nbd.sock");
        let running = Node::builder_for(node.node.clone())
            .front_end(NbdFrontEnd::unix(&socket).expect("NBD listener"))
            .spawn_thread("nbd-test-node", 2)
            .expect("node thread");
        NbdTestNode {
            _running: running,
            socket,
            node,
        }
    }

    /// The unix socket it listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The NBD URI of export `volume` (`nbd+unix:///VOLUME?socket=PATH`).
    pub fn uri(&self, volume: &str) -> String {
        format!("nbd+unix:///{volume}?socket={}", self.socket.display())
    }
}

impl std::ops::Deref for NbdTestNode {
    type Target = TestNode;
    fn deref(&self) -> &TestNode {
        &self.node
    }
}
