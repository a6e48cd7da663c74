//! Sans-IO codec for iSCSI (RFC 7143) and the SCSI commands a block target answers
//! (SPC-4 primary commands, SBC-3 block commands).
//!
//! This crate knows wire formats and the rules that are pure functions of them, nothing
//! else: no sockets, no files, no clock, no randomness (a CHAP challenge's bytes come
//! from the caller). The target (`iscsi-server`) owns connections, sessions and LUNs.
//!
//! - [`frame`]: PDU framing: the 48-byte basic header segment, additional header segments,
//!   the data segment with its padding, and the CRC32C header and data digests.
//! - [`pdu`]: the initiator's PDUs decoded into typed requests, the target's PDUs encoded.
//! - [`text`], [`negotiate`], [`chap`]: login and text key=value pairs, RFC 7143's
//!   negotiation rules (declarative and negotiated keys, min/max/OR/AND results,
//!   `Reject`/`NotUnderstood`/`Irrelevant`), CHAP with MD5.
//! - [`scsi`]: CDB decoding, fixed-format sense data, and the payloads a target returns
//!   (INQUIRY and its VPD pages, READ CAPACITY, MODE SENSE, REPORT LUNS, GET LBA STATUS,
//!   PERSISTENT RESERVE IN) plus the persistent-reservation rules as a pure state machine.
//! - [`url`]: iSCSI names' rule and the `HOST[:PORT]/IQN/LUN` of an iSCSI LUN's URL, for
//!   every crate that checks one (node config, harness, suites).
//!
//! Invariants:
//! - Decoders never panic on any input; they return an error or "need more bytes".
//! - Nothing is allocated from a length the client wrote without a bound: a PDU's data
//!   segment is refused above the negotiated MaxRecvDataSegmentLength before it is
//!   buffered, text keys and values have RFC 7143's limits, parameter lists are bounded
//!   by their CDB's 16- or 32-bit length and the caller's transfer limit.
//! - Encoders append to a caller-owned `Vec<u8>`, so many PDUs go out in one write.

pub mod chap;
pub mod digest;
pub mod frame;
pub mod fuzz;
pub mod negotiate;
pub mod pdu;
pub mod scsi;
pub mod text;
pub mod url;

pub use frame::{next_pdu, Digests, FrameError, RawPdu};
pub use pdu::{DecodeError, Request};

/// Big-endian helpers shared by the PDU and SCSI codecs. Callers pass slices of the
/// right length (taken from fixed-size headers), so these never fail.
pub(crate) mod be {
    pub fn u16(b: &[u8]) -> u16 {
        u16::from_be_bytes([b[0], b[1]])
    }
    pub fn u24(b: &[u8]) -> u32 {
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }
    pub fn u32(b: &[u8]) -> u32 {
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    pub fn u64(b: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        u64::from_be_bytes(a)
    }
}
