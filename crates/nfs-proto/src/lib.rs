//! Sans-IO codec for NFSv3 (RFC 1813) with its MOUNT v3 protocol (RFC 1813, appendix I)
//! and the portmapper v2 (RFC 1833), over ONC RPC (RFC 5531) with TCP record marking.
//!
//! This crate knows the wire format and nothing else: no sockets, no files, no clock. The
//! server (`nfs-server`) owns the file system and the state; this crate turns a record's
//! bytes into a typed call with typed arguments, and typed results into reply bytes.
//!
//! Invariants:
//! - Decoders never panic on any input: they return [`XdrError`] (the server answers
//!   `GARBAGE_ARGS`) or, for record marking, "need more bytes".
//! - Every variable-length item is bounded before it is taken (names and symlink targets
//!   8 KiB — the server answers NAMETOOLONG past 255 and 4,095 —, MOUNT paths 1024,
//!   handles 64, data by the caller's limit; a record's fragments 64); nothing is allocated
//!   from a length the client wrote: decoded arguments borrow from the record (every
//!   slice is a part of it, so a decoded call moves onto a copy of its record without
//!   being decoded again: [`moved`]).
//! - Encoders append to a caller-owned `Vec<u8>`, so replies are built in place and
//!   batched into one socket write.

#[cfg(feature = "client")]
pub mod client;
pub mod fuzz;
pub mod mount;
pub mod moved;
pub mod nfs3;
pub mod portmap;
pub mod record;
pub mod rpc;
pub mod xdr;

pub use xdr::{Reader, XdrError};
