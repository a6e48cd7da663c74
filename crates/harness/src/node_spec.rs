//! An embedded node's configuration: node.toml's node sections ([`NodeConfig`]) and its
//! `[iscsi]` (iscsi-server's own section: the LUNs the node serves), parsed from one text
//! as `qoslab serve` parses them.

use std::ops::{Deref, DerefMut};

use iscsi_server::IscsiSettings;
use storage_node::config::{ConfigError, Src};
use storage_node::NodeConfig;

/// A node's sections and its iSCSI target's.
#[derive(Debug, Clone, Default)]
pub struct NodeSpec {
    pub cfg: NodeConfig,
    /// `[iscsi]`: the LUNs the embedded node serves (none: no target).
    pub iscsi: IscsiSettings,
}

impl NodeSpec {
    /// The node's sections of config text `text`, then its `[iscsi]` against them;
    /// `origin` names the text in messages.
    pub fn parse(text: &str, origin: &str) -> Result<NodeSpec, ConfigError> {
        let cfg = NodeConfig::parse(text, origin)?;
        let iscsi = iscsi_server::config::parse(&Src::new(text, origin), &cfg)?;
        Ok(NodeSpec { cfg, iscsi })
    }
}

/// A node without LUNs.
impl From<NodeConfig> for NodeSpec {
    fn from(cfg: NodeConfig) -> NodeSpec {
        NodeSpec {
            cfg,
            iscsi: IscsiSettings::default(),
        }
    }
}

impl Deref for NodeSpec {
    type Target = NodeConfig;
    fn deref(&self) -> &NodeConfig {
        &self.cfg
    }
}

impl DerefMut for NodeSpec {
    fn deref_mut(&mut self) -> &mut NodeConfig {
        &mut self.cfg
    }
}
