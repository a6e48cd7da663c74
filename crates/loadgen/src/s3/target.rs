//! The driver's view of an object store: a target hands out clients (one per benchmark
//! client, each with its own connection), a client issues one request at a time.

use std::future::Future;
use std::pin::Pin;

use hyper::body::Bytes;
use tokio::time::Instant;

/// A failed request: S3's error code when the server sent one (`NoSuchKey`, `SlowDown`,
/// `SignatureDoesNotMatch`), else `HTTP <status>`, `Timeout`, `Connect` or `IO`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct S3Error {
    pub code: String,
    pub message: String,
}

impl S3Error {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> S3Error {
        S3Error {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// What a data request returned, and when its first byte came (GETs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Payload bytes moved (a GET's body, a PUT's body).
    pub bytes: u64,
    /// When the first byte of a GET's body arrived (None for other requests).
    pub first_byte: Option<Instant>,
}

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    pub size: u64,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    pub objects: Vec<Listed>,
    pub next: Option<String>,
}

/// Whether CreateBucket made the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    /// It was there already (and is ours: BucketAlreadyOwnedByYou, or a HEAD found it).
    Existed,
}

pub type S3Future<'a, T> = Pin<Box<dyn Future<Output = Result<T, S3Error>> + Send + 'a>>;

/// One benchmark client's requests, issued one at a time.
pub trait ObjectClient: Send {
    fn put<'a>(&'a mut self, bucket: &'a str, key: &'a str, body: Bytes) -> S3Future<'a, Transfer>;
    fn get<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer>;
    fn stat<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer>;
    fn delete<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer>;
    /// One ListObjectsV2 page of keys under `prefix`.
    fn list<'a>(
        &'a mut self,
        bucket: &'a str,
        prefix: &'a str,
        max_keys: u32,
        token: Option<&'a str>,
    ) -> S3Future<'a, Page>;
    /// Delete up to 1,000 keys in one request (DeleteObjects); the keys that failed.
    fn delete_many<'a>(
        &'a mut self,
        bucket: &'a str,
        keys: &'a [String],
    ) -> S3Future<'a, Vec<String>>;
    fn create_bucket<'a>(&'a mut self, bucket: &'a str) -> S3Future<'a, Created>;
    fn delete_bucket<'a>(&'a mut self, bucket: &'a str) -> S3Future<'a, ()>;
}

/// Where a driver's clients connect.
pub trait ObjectTarget: Send + Sync {
    fn client(&self) -> Box<dyn ObjectClient>;
    fn describe(&self) -> String;
}
