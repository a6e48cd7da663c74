//! What a front end is to the node, and the seams every front end may use: the
//! [`FrontEnd`] trait the [builder](crate::builder) runs, connection counters
//! ([`ServerStats`]), and the server side of TLS ([`TlsAcceptor`]: a byte stream in, an
//! encrypted one out, implemented on rustls by the control plane, so no front end links a
//! TLS library). A front end is a crate of its own (`nbd-server`, `s3-server`,
//! `nfs-server`, `iscsi-server`) that decodes its protocol, asks the admission core
//! ([`crate::admission`]) and does its I/O on the node's volumes and buckets.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use crate::Node;

/// A front end's future: serves until its stop signal turns true, then drains and ends.
pub type Serving = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Turns `true` when the node stops: stop accepting, finish in-flight requests, return.
pub type Stop = watch::Receiver<bool>;

/// A protocol the node serves, already bound by its crate (so bind errors are reported
/// where the address is known, and a port 0 is resolved before the node runs).
pub trait FrontEnd: Send + 'static {
    /// One line for the ready banner: what it serves and where.
    fn describe(&self) -> String;
    /// Serve `node` until `stop` turns true, then finish in-flight requests. New requests
    /// after the stop get the protocol's "shutting down" answer
    /// ([`Node::is_shutting_down`]).
    fn serve(self: Box<Self>, node: Arc<Node>, stop: Stop) -> Serving;
}

/// A front end's connection counters (NBD's are `/metrics`' `qoslab_connections_*`).
#[derive(Default)]
pub struct ServerStats {
    pub connections_total: AtomicU64,
    pub connections_open: AtomicU64,
    pub connection_errors: AtomicU64,
}

/// A byte stream a connection runs on, plain or encrypted.
pub trait ByteStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + ?Sized> ByteStream for T {}

/// A TLS handshake in progress; its result is the encrypted stream.
pub type TlsAccept<'a> =
    Pin<Box<dyn Future<Output = std::io::Result<Box<dyn ByteStream>>> + Send + 'a>>;

/// The server side of TLS, provided by whoever holds the node's identity (the control
/// plane, on rustls): the data path and its front ends know only this seam.
pub trait TlsAcceptor: Send + Sync {
    /// Run the server side of the TLS handshake on `stream` (errors name the handshake).
    fn accept(&self, stream: Box<dyn ByteStream>) -> TlsAccept<'_>;
}
