//! Sans-IO codec for the NBD protocol (`doc/proto.md` in NetworkBlockDevice/nbd).
//!
//! This crate knows the wire format and nothing else: no sockets, no files, no clock.
//! The storage node owns the state machine (which option is allowed when, what an export
//! is); this crate turns bytes into typed messages and typed replies into bytes.
//!
//! Invariants:
//! - Decoders never panic on any input; they return [`DecodeError`] or "need more bytes".
//! - Encoders append to a caller-owned `Vec<u8>` so the caller can batch many replies
//!   into one socket write.

mod consts;
mod handshake;
mod transmission;

pub use consts::*;
pub use handshake::*;
pub use transmission::*;

/// Errors produced while decoding client messages.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    /// The magic number did not match; the stream cannot be resynchronised.
    #[error("bad magic 0x{found:x} (expected 0x{expected:x})")]
    BadMagic { expected: u64, found: u64 },
    /// The option payload is malformed (lengths inconsistent with the declared size).
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
}
