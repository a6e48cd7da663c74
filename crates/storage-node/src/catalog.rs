//! What an object front end (S3) needs of whoever keeps the node's bucket catalog and its
//! users' keys: the node, the keys for request signatures, and bucket creation and
//! deletion. Defined here, on the node's side, so the S3 front end links no REST, SQLite
//! or TLS crate; the control plane implements it over its state database.

use std::sync::Arc;

use crate::Node;

/// Why a bucket change asked for by a client failed (a front end turns each into its
/// protocol's error code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BucketError {
    #[error("a bucket named {0:?} already exists")]
    Exists(String),
    #[error("no bucket named {0:?}")]
    NotFound(String),
    #[error("bucket {0:?} is not empty: delete its objects and multipart uploads first")]
    NotEmpty(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Internal(String),
}

/// The bucket catalog and the keys of the node's object users.
pub trait BucketCatalog: Send + Sync + 'static {
    /// The node whose buckets these are.
    fn node(&self) -> &Arc<Node>;
    /// The secret key and user name of an access key (read on every signed request).
    fn secret(&self, access_key: &str) -> Option<(String, String)>;
    /// Buckets by name with their creation times (ns since the epoch), sorted by name.
    fn buckets(&self) -> Vec<(String, u64)>;
    /// Create an empty bucket with the defaults (size, no policy), committed before it
    /// returns. Blocking: call it off the runtime's workers.
    fn create_bucket(&self, name: &str) -> Result<(), BucketError>;
    /// Delete an empty bucket. Blocking, like [`create_bucket`](Self::create_bucket).
    fn delete_bucket(&self, name: &str) -> Result<(), BucketError>;
}
