//! qoslab's S3 endpoint: the S3 REST API over the storage node's buckets.
//!
//! [`s3s`] does the HTTP and protocol work (routing, XML, AWS Signature V4 including
//! `aws-chunked` streaming bodies); this crate implements the operations over the node:
//! buckets are the node's ([`storage_node::bucket::Bucket`], catalogued behind
//! [`BucketCatalog`]: the node side's trait, implemented by the control plane), objects
//! live in each bucket's [`storage_node::objstore::ObjectStore`], and every
//! request passes the node's admission core first ([`storage_node::admission::Gate`], the
//! same core as NBD's): one operation, its payload bytes against MB/s, and the emulated
//! array's service latency before the reply.
//!
//! Crate direction: `s3-server` depends on `storage-node` only (the catalog trait,
//! buckets, flows, the admission core): no REST, SQLite or TLS crate. The node knows
//! nothing of S3's wire format; the REST API that manages users and buckets is
//! `control-plane::api::s3`, which also implements [`BucketCatalog`].

mod auth;
mod body;
mod context;
mod endpoint;
pub mod errors;
mod fields;
mod multipart;
mod objects;
pub mod presign;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use storage_node::builder::{FrontEnd, Serving, Stop};
use storage_node::catalog::BucketCatalog;
use storage_node::Node;
use tokio::net::TcpListener;

pub use context::Endpoint;

/// Limits of the endpoint.
#[derive(Debug, Clone, Copy)]
pub struct S3Options {
    /// Largest single PUT or part (S3: 5 GiB); larger announced bodies get EntityTooLarge.
    pub max_object_size: u64,
    /// Connections served at once (more are closed on accept, with a log line).
    pub max_connections: usize,
}

/// A client that has not sent a complete request head within this time — a new
/// connection, or a kept-alive one between requests — is disconnected (as on the API).
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// A request body that stalls this long (no byte arrives) ends with `RequestTimeout`.
pub const BODY_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Default for S3Options {
    fn default() -> Self {
        S3Options {
            max_object_size: storage_node::objstore::MAX_OBJECT_SIZE,
            max_connections: storage_node::conn_limit::DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Does the request carry `Expect: 100-continue`, and is its body empty?
///
/// hyper sends `100 Continue` only when the service reads the body. A request with an
/// empty body, or one refused before its body is read, gets a final status instead, and
/// botocore then keeps that status line for the connection's *next* response (it waits
/// and times out). Such connections are closed after the reply, so clients open a fresh
/// one; a successful request whose body was read keeps its connection.
fn expect_continue<B>(req: &hyper::Request<B>) -> (bool, bool) {
    let expect = req
        .headers()
        .get(hyper::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let empty = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .is_none_or(|v| v.as_bytes() == b"0");
    (expect, empty)
}

pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// The S3 endpoint as one of the node's front ends: bound here, run by the node's
/// builder beside NBD, stopped with it.
pub struct S3FrontEnd {
    /// Bound without a runtime: the builder may start the node on a runtime of its own.
    listener: std::net::TcpListener,
    addr: SocketAddr,
    catalog: Arc<dyn BucketCatalog>,
    opts: S3Options,
}

impl S3FrontEnd {
    /// Listen on `addr` (port 0: any free port).
    pub fn bind(
        addr: SocketAddr,
        catalog: Arc<dyn BucketCatalog>,
        opts: S3Options,
    ) -> std::io::Result<S3FrontEnd> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        Ok(S3FrontEnd {
            listener,
            addr,
            catalog,
            opts,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl FrontEnd for S3FrontEnd {
    fn describe(&self) -> String {
        format!("s3: http://{}", self.addr)
    }

    fn serve(self: Box<Self>, _node: Arc<Node>, mut stop: Stop) -> Serving {
        let S3FrontEnd {
            listener,
            catalog,
            opts,
            ..
        } = *self;
        Box::pin(async move {
            let listener = match TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!("s3: listener: {e}");
                    return;
                }
            };
            serve(listener, catalog, opts, async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await
        })
    }
}

/// The s3s service over the node: Signature V4 against the catalog's users.
pub fn service(catalog: Arc<dyn BucketCatalog>, opts: S3Options) -> s3s::service::S3Service {
    let mut b = s3s::service::S3ServiceBuilder::new(Endpoint::new(catalog.clone(), opts));
    b.set_auth(auth::Keys(catalog));
    b.build()
}

/// Serve S3 on `listener` until `shutdown` completes. Must run inside the node's runtime.
pub async fn serve(
    listener: TcpListener,
    catalog: Arc<dyn BucketCatalog>,
    opts: S3Options,
    shutdown: impl Future<Output = ()>,
) {
    let limit = storage_node::conn_limit::ConnLimit::tcp("S3", &listener, opts.max_connections);
    let svc = service(catalog, opts);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer, guard) = tokio::select! {
            _ = &mut shutdown => return,
            a = limit.accept(&listener, "s3") => a,
        };
        let svc = svc.clone();
        tokio::spawn(async move {
            let _guard = guard;
            let svc = hyper::service::service_fn(move |req| {
                let (expect, empty) = expect_continue(&req);
                let refused = presign::refusal(req.uri().query(), unix_now())
                    .or_else(|| presign::malformed_date(&req));
                let fut = refused
                    .is_none()
                    .then(|| hyper::service::Service::call(&svc, req));
                async move {
                    let Some(fut) = fut else {
                        let mut r = presign::response(refused.as_deref().unwrap_or_default());
                        r.headers_mut().insert(
                            hyper::header::CONNECTION,
                            hyper::header::HeaderValue::from_static("close"),
                        );
                        return Ok::<_, s3s::HttpError>(r);
                    };
                    let mut resp = fut.await?;
                    if expect && (empty || !resp.status().is_success()) {
                        resp.headers_mut().insert(
                            hyper::header::CONNECTION,
                            hyper::header::HeaderValue::from_static("close"),
                        );
                    }
                    Ok::<_, s3s::HttpError>(resp)
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, "s3 connection: {e}");
            }
        });
    }
}

/// Seconds since the epoch (a presigned URL's expiry is checked against it).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
