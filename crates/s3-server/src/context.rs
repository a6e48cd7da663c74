//! The endpoint's shared state and the steps every operation takes: find the bucket, pass
//! the node's admission core ([`Endpoint::admit`]: one operation carrying its payload
//! bytes, through the same [`Gate`] as every front end), run store work on the blocking
//! pool, wait out the emulated array's service latency and record the finished request in
//! the bucket's statistics ([`Admitted::done`]).
//! The S3 operations themselves are in `endpoint` (buckets), `objects` and `multipart`.

use std::sync::Arc;

use s3s::dto::*;
use s3s::{s3_error, S3Result};
use storage_node::admission::{Gate, Op, Started, Work};
use storage_node::bucket::Bucket;
use storage_node::catalog::BucketCatalog;
use storage_node::objstore::{ObjError, ObjectStore};

use crate::{errors, S3Options};

pub struct Endpoint {
    pub(crate) catalog: Arc<dyn BucketCatalog>,
    /// One gate for the whole endpoint, not one per connection as NFS has: what a gate
    /// per connection buys is the provisioned file system's single-flow limit, and objects
    /// have no block identity, so it never applies to them ([`Endpoint::admit`]); a gate
    /// per connection would only add a controller registration and a driver task for
    /// each of them. Ceilings and floors are the bucket's flow's either way.
    gate: tokio::sync::OnceCell<Gate>,
    pub(crate) opts: S3Options,
}

/// An admitted request: its bucket and its timing in the admission core.
pub(crate) struct Admitted<'a> {
    pub bucket: Arc<Bucket>,
    gate: &'a Gate,
    started: Started,
    /// What the core charged it: the books count the same.
    work: Work,
}

impl Admitted<'_> {
    /// The request's work is done: wait out the rest of the emulated array's service
    /// latency, then put it in the bucket's books as the core counted it
    /// ([`Gate::record`]: a GET a read, a PUT or part a write, with their bytes and the
    /// operations the node's I/O-size accounting charged; anything else one "other").
    pub async fn done(&self) {
        let c = self.gate.finish(self.started).await;
        self.gate.record(&c, &self.bucket.stats, self.work);
    }

    /// Run blocking work on the admitted bucket's object store, on the blocking pool
    /// ([`Endpoint::blocking`]).
    pub async fn on_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&ObjectStore) -> Result<T, ObjError> + Send + 'static,
    ) -> S3Result<T> {
        let b = self.bucket.clone();
        Endpoint::blocking(move || f(&b.store)).await
    }

    /// The request ended with `res`: `done` when it is `Ok`, `failed` when not; `res` is
    /// handed back.
    pub async fn settle<T>(&self, res: S3Result<T>) -> S3Result<T> {
        match res {
            Ok(v) => {
                self.done().await;
                Ok(v)
            }
            Err(e) => {
                self.failed();
                Err(e)
            }
        }
    }

    pub fn failed(&self) {
        self.bucket
            .stats
            .errors
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Endpoint {
    pub fn new(catalog: Arc<dyn BucketCatalog>, opts: S3Options) -> Endpoint {
        Endpoint {
            catalog,
            gate: tokio::sync::OnceCell::new(),
            opts,
        }
    }

    pub(crate) fn bucket(&self, name: &str) -> S3Result<Arc<Bucket>> {
        self.catalog
            .node()
            .bucket(name)
            .ok_or_else(|| s3_error!(NoSuchBucket, "The specified bucket does not exist: {name}"))
    }

    /// Find the bucket and wait until the admission core lets `work` on it through.
    pub(crate) async fn admit(&self, bucket: &str, work: Work) -> S3Result<Admitted<'_>> {
        let b = self.bucket(bucket)?;
        let gate = self
            .gate
            .get_or_init(|| async {
                Gate::new(self.catalog.node().gates(), self.catalog.node().clock)
            })
            .await;
        // Objects have no block identity: the provisioned file system is not in their way.
        let started = gate.admit(Op::new(b.flow(), work)).await;
        Ok(Admitted {
            bucket: b,
            gate,
            started,
            work,
        })
    }

    /// Run `f` on the blocking pool; a task that failed there is the request's
    /// InternalError ([`errors::join`]).
    pub(crate) async fn on_pool<T: Send + 'static>(
        f: impl FnOnce() -> T + Send + 'static,
    ) -> S3Result<T> {
        tokio::task::spawn_blocking(f).await.map_err(errors::join)
    }

    /// Run blocking store work on the blocking pool.
    pub(crate) async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> Result<T, ObjError> + Send + 'static,
    ) -> S3Result<T> {
        Self::on_pool(f).await?.map_err(errors::from_obj)
    }

    pub(crate) fn owner(&self, creds: Option<&s3s::auth::Credentials>) -> Owner {
        let name = creds
            .and_then(|c| self.catalog.secret(&c.access_key))
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
