//! The node's own errors (opening it, changing it). Each front end maps I/O errors to its
//! protocol's codes in a place of its own (NBD's errno in `nbd-server`, S3's codes in
//! `s3-server`, NFS's `nfsstat3` in `nfs-server`).

use std::io;

/// Errors raised while opening or changing the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("volume {name:?}: {source}")]
    Volume { name: String, source: io::Error },
    #[error("data directory {path}: {source}")]
    DataDir { path: String, source: io::Error },
    #[error("listen on {addr}: {source}")]
    Listen { addr: String, source: io::Error },
    #[error("bucket {name:?}: {source}")]
    Bucket { name: String, source: io::Error },
    #[error("unknown policy {0:?}")]
    UnknownPolicy(String),
    /// The node's own runtime or thread could not start.
    #[error("node runtime: {0}")]
    Runtime(String),
}
