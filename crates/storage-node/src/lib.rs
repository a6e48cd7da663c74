//! The qoslab storage node: named volumes served over NBD, each held to its QoS policy.
//!
//! Layers, outermost first (mini-redis style):
//! - [`server`]: listeners, accept loop, graceful shutdown;
//!   [`server::handshake`]: option negotiation; [`server::transmission`]: the request loop.
//! - [`node`]: volumes, policies, effective limits, the [`scheduler`].
//! - [`provisioned`]: an emulated provisioned file system (FSx for ONTAP's model: resources
//!   with burst credits, read caches, a single-flow limit) between QoS and the backend.
//! - [`backend`]: where bytes live ([`backend::FileBackend`], sparse files).
//!
//! Validation happens once at the edge ([`config`] for files, the transmission loop for
//! requests); inner layers trust their inputs.

pub mod admission;
pub mod backend;
pub mod bucket;
pub mod builder;
pub mod calibrate;
pub mod clock;
pub mod config;
pub mod conn_limit;
pub mod credits;
pub mod errors;
pub mod nas;
pub mod node;
pub mod objstore;
pub mod private;
pub mod provisioned;
pub mod scheduler;
pub mod server;
pub mod stats;
mod timer;
pub mod volume;

pub use builder::{FrontEnd, NodeBuilder, RunningNode};
pub use config::NodeConfig;
pub use node::Node;
