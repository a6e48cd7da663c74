//! The node's control plane: the REST API shaped like ONTAP's ([`api`]: users and their
//! authentication, policies, volumes, SVMs, the cluster, the S3 catalog), its durable
//! state in SQLite ([`state`]), the Prometheus exposition and its sampler ([`metrics`]),
//! the node's TLS identity for HTTPS and NBD STARTTLS ([`tls`]) and the data directory's
//! file-system facts changes are checked against ([`datadir`]).
//!
//! It drives the data path (`storage-node`) and is one of its front ends
//! ([`api::front_end::ApiFrontEnd`]); the data path knows nothing of it. Everything
//! that links an HTTP server, SQLite, rustls or Argon2 is here, so a process that only
//! serves volumes (the harness's embedded node) links none of them.

pub mod api;
pub mod datadir;
pub mod metrics;
pub mod state;
pub mod tls;

// The data path's modules at this crate's root: the control plane names them as it did
// when both were one crate (`crate::node::Node` is `storage_node::node::Node`).
#[cfg(test)]
pub(crate) use storage_node::NodeConfig;
pub(crate) use storage_node::{
    bucket, builder, catalog, config, conn_limit, credits, front_end, nas, node, private, stats,
    volume, Node,
};
