//! The qoslab storage node's data path, protocol-free: volumes and buckets, each held to
//! its QoS policy, and what every front end (NBD, S3, NFS: crates of their own) calls.
//!
//! - [`front_end`]: what a front end is to the node ([`FrontEnd`]) and the seams it may
//!   use (connection counters, the TLS handshake); [`builder`] runs them.
//! - [`admission`]: the admission core every request passes (sans-IO) and its driver.
//! - [`node`]: volumes, policies, effective limits, the [`scheduler`].
//! - [`provisioned`]: an emulated provisioned file system (FSx for ONTAP's model: resources
//!   with burst credits, read caches, a single-flow limit) between QoS and the backend.
//! - [`backend`]: where a block volume's bytes live ([`backend::FileBackend`], sparse
//!   files, and nbdkit-style layers).
//!
//! Validation happens once at the edge ([`config`] for files, each front end for its
//! requests); inner layers trust their inputs.

pub mod admission;
pub mod backend;
pub mod bucket;
pub mod builder;
pub mod calibrate;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod conn_limit;
pub mod credits;
pub mod errors;
pub mod front_end;
pub mod locks;
pub mod nas;
pub mod node;
pub mod objstore;
pub mod private;
pub mod provisioned;
pub mod san;
pub mod scheduler;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod timer;
pub mod volume;

pub use builder::{FrontEnd, NodeBuilder, RunningNode};
pub use config::NodeConfig;
pub use node::Node;
