//! The endpoint's shared state and the steps every operation takes: find the bucket, pass
//! its QoS flow ([`Endpoint::admit`]: one operation carrying its payload bytes), run store
//! work on the blocking pool, record the finished request in the bucket's statistics.
//! The S3 operations themselves are in `endpoint` (buckets), `objects` and `multipart`.

use std::sync::Arc;

use s3s::dto::*;
use s3s::{s3_error, S3Result};
use storage_node::api::ControlPlane;
use storage_node::bucket::Bucket;
use storage_node::flow_gate::FlowGate;
use storage_node::stats::{OpKind, Waits};
use tokio::time::Instant;

use crate::{errors, S3Options};

pub struct Endpoint {
    pub(crate) cp: Arc<ControlPlane>,
    gate: tokio::sync::OnceCell<FlowGate>,
    pub(crate) opts: S3Options,
}

/// An admitted request: its bucket, when it arrived and how long QoS held it.
pub(crate) struct Admitted {
    pub bucket: Arc<Bucket>,
    pub start: Instant,
    pub waits: Waits,
}

impl Admitted {
    /// Record the finished request in the bucket's statistics.
    pub fn done(&self, kind: OpKind, bytes: u64) {
        let lat = self.start.elapsed().as_nanos() as u64;
        self.bucket.stats.record(kind, bytes, lat, self.waits);
    }

    pub fn failed(&self) {
        self.bucket
            .stats
            .errors
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Endpoint {
    pub fn new(cp: Arc<ControlPlane>, opts: S3Options) -> Endpoint {
        Endpoint {
            cp,
            gate: tokio::sync::OnceCell::new(),
            opts,
        }
    }

    pub(crate) fn bucket(&self, name: &str) -> S3Result<Arc<Bucket>> {
        self.cp
            .node
            .bucket(name)
            .ok_or_else(|| s3_error!(NoSuchBucket, "The specified bucket does not exist: {name}"))
    }

    /// Find the bucket and wait for its QoS flow to let a request of `bytes` through.
    pub(crate) async fn admit(&self, bucket: &str, bytes: u64) -> S3Result<Admitted> {
        let start = Instant::now();
        let b = self.bucket(bucket)?;
        let gate = self
            .gate
            .get_or_init(|| async { FlowGate::new(self.cp.node.clone()) })
            .await;
        let waits = gate.admit(b.flow(), bytes).await;
        Ok(Admitted {
            bucket: b,
            start,
            waits,
        })
    }

    /// Run blocking store work on the blocking pool.
    pub(crate) async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> Result<T, storage_node::objstore::ObjError> + Send + 'static,
    ) -> S3Result<T> {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(errors::join)?
            .map_err(errors::from_obj)
    }

    pub(crate) fn owner(&self, creds: Option<&s3s::auth::Credentials>) -> Owner {
        let name = creds
            .and_then(|c| self.cp.s3_secret(&c.access_key))
            .map(|(_, user)| user);
        Owner {
            display_name: name.clone(),
            id: name,
        }
    }
}

/// An S3 timestamp from nanoseconds since the Unix epoch.
pub(crate) fn timestamp(ns: u64) -> Timestamp {
    Timestamp::from(std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns))
}
