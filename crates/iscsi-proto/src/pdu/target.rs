//! The target's PDUs (RFC 7143 §11), appended to a caller's buffer with the connection's
//! digests.

use super::{login_flags, op, set32, set_lun_tags, text_flags, RESERVED_TAG};
use crate::frame::{put, put_deferred, Digests, BHS_LEN};

/// The sequence numbers every target PDU carries: the connection's StatSN and the
/// session's command window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seq {
    pub statsn: u32,
    pub exp_cmdsn: u32,
    pub max_cmdsn: u32,
}

/// A residual count (SPC's "the initiator expected a different length").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Residual {
    #[default]
    None,
    /// Fewer bytes were transferred than expected.
    Under(u32),
    /// The command wanted more bytes than the initiator expected.
    Over(u32),
}

impl Residual {
    /// The residual of a transfer of `actual` bytes where the initiator expected `expected`.
    pub fn of(expected: u32, actual: u32) -> Residual {
        match actual.cmp(&expected) {
            std::cmp::Ordering::Less => Residual::Under(expected - actual),
            std::cmp::Ordering::Greater => Residual::Over(actual - expected),
            std::cmp::Ordering::Equal => Residual::None,
        }
    }
    fn flags(self) -> u8 {
        match self {
            Residual::None => 0,
            Residual::Over(_) => 0x04,
            Residual::Under(_) => 0x02,
        }
    }
    fn count(self) -> u32 {
        match self {
            Residual::None => 0,
            Residual::Over(n) | Residual::Under(n) => n,
        }
    }
}

fn header(opcode: u8, flags: u8) -> [u8; BHS_LEN] {
    let mut b = [0u8; BHS_LEN];
    b[0] = opcode;
    b[1] = flags;
    b
}

fn set_seq(b: &mut [u8; BHS_LEN], seq: Seq) {
    set32(b, 24, seq.statsn);
    set32(b, 28, seq.exp_cmdsn);
    set32(b, 32, seq.max_cmdsn);
}

/// SCSI Response `response` codes.
pub const RESPONSE_COMPLETED: u8 = 0x00;
pub const RESPONSE_TARGET_FAILURE: u8 = 0x01;

/// A SCSI Response PDU. `sense` (fixed-format sense data) goes in the data segment,
/// preceded by its length.
#[derive(Debug, Clone, Copy)]
pub struct ScsiResponse<'a> {
    pub itt: u32,
    pub response: u8,
    pub status: u8,
    pub residual: Residual,
    pub sense: &'a [u8],
    /// Data-In PDUs sent for the command (0 when none).
    pub exp_datasn: u32,
    pub seq: Seq,
}

pub fn scsi_response(out: &mut Vec<u8>, d: Digests, r: &ScsiResponse<'_>) {
    let mut b = header(op::SCSI_RSP, 0x80 | r.residual.flags());
    b[2] = r.response;
    b[3] = r.status;
    set32(&mut b, 16, r.itt);
    set_seq(&mut b, r.seq);
    set32(&mut b, 36, r.exp_datasn);
    set32(&mut b, 44, r.residual.count());
    if r.sense.is_empty() {
        put(out, &b, &[], d);
    } else {
        let len = (r.sense.len() as u16).to_be_bytes();
        put(out, &b, &[&len, r.sense], d);
    }
}

/// A Data-In PDU's header fields. With `status`, it is the command's last PDU and carries
/// the command's status (no SCSI Response follows) and the StatSN of `seq`.
#[derive(Debug, Clone, Copy)]
pub struct DataIn {
    pub lun: u64,
    pub itt: u32,
    pub final_: bool,
    pub status: Option<u8>,
    pub residual: Residual,
    pub datasn: u32,
    pub offset: u32,
    pub seq: Seq,
}

fn data_in_header(h: &DataIn) -> [u8; BHS_LEN] {
    let mut flags = if h.final_ { 0x80 } else { 0 };
    let mut b = header(op::DATA_IN, 0);
    if let Some(status) = h.status {
        flags |= 0x01 | h.residual.flags();
        b[3] = status;
        set32(&mut b, 44, h.residual.count());
    }
    b[1] = flags;
    set_lun_tags(&mut b, h.lun, h.itt, RESERVED_TAG);
    set_seq(&mut b, h.seq);
    if h.status.is_none() {
        set32(&mut b, 24, 0);
    }
    set32(&mut b, 36, h.datasn);
    set32(&mut b, 40, h.offset);
    b
}

pub fn data_in(out: &mut Vec<u8>, d: Digests, h: &DataIn, data: &[u8]) {
    put(out, &data_in_header(h), &[data], d);
}

/// A Data-In header whose `len` data bytes the caller appends to `out` (then calls
/// [`crate::frame::finish_deferred`] with the returned start).
pub fn data_in_deferred(out: &mut Vec<u8>, d: Digests, h: &DataIn, len: usize) -> usize {
    put_deferred(out, &data_in_header(h), len, d)
}

/// Ready To Transfer: "send `len` bytes at `offset`, tagged `ttt`".
#[derive(Debug, Clone, Copy)]
pub struct R2t {
    pub lun: u64,
    pub itt: u32,
    pub ttt: u32,
    pub r2tsn: u32,
    pub offset: u32,
    pub len: u32,
    pub seq: Seq,
}

pub fn r2t(out: &mut Vec<u8>, d: Digests, r: &R2t) {
    let mut b = header(op::R2T, 0x80);
    set_lun_tags(&mut b, r.lun, r.itt, r.ttt);
    set_seq(&mut b, r.seq);
    set32(&mut b, 36, r.r2tsn);
    set32(&mut b, 40, r.offset);
    set32(&mut b, 44, r.len);
    put(out, &b, &[], d);
}

/// NOP-In: an answer to a NOP-Out (`itt` its tag, `ttt` reserved, its ping data echoed),
/// or the target's own ping (`itt` reserved, `ttt` a tag the initiator echoes).
pub fn nop_in(out: &mut Vec<u8>, d: Digests, lun: u64, itt: u32, ttt: u32, seq: Seq, data: &[u8]) {
    let mut b = header(op::NOP_IN, 0x80);
    set_lun_tags(&mut b, lun, itt, ttt);
    set_seq(&mut b, seq);
    put(out, &b, &[data], d);
}

/// Task management response codes.
pub mod tmf_response {
    pub const COMPLETE: u8 = 0;
    pub const NO_TASK: u8 = 1;
    pub const NO_LUN: u8 = 2;
    pub const NOT_SUPPORTED: u8 = 5;
    pub const REJECTED: u8 = 255;
}

pub fn tmf_response(out: &mut Vec<u8>, d: Digests, itt: u32, response: u8, seq: Seq) {
    response_pdu(out, d, op::TMF_RSP, itt, response, seq);
}

/// A TMF or Logout response: final, its response code in byte 2, no data.
fn response_pdu(out: &mut Vec<u8>, d: Digests, opcode: u8, itt: u32, response: u8, seq: Seq) {
    let mut b = header(opcode, 0x80);
    b[2] = response;
    set32(&mut b, 16, itt);
    set_seq(&mut b, seq);
    put(out, &b, &[], d);
}

/// Login response status classes and details (RFC 7143 §11.13.5).
pub mod login_status {
    pub const SUCCESS: (u8, u8) = (0, 0);
    pub const INITIATOR_ERROR: (u8, u8) = (2, 0);
    pub const AUTH_FAILED: (u8, u8) = (2, 1);
    pub const NOT_AUTHORIZED: (u8, u8) = (2, 2);
    pub const NOT_FOUND: (u8, u8) = (2, 3);
    pub const TARGET_REMOVED: (u8, u8) = (2, 4);
    pub const UNSUPPORTED_VERSION: (u8, u8) = (2, 5);
    pub const TOO_MANY_CONNECTIONS: (u8, u8) = (2, 6);
    pub const MISSING_PARAMETER: (u8, u8) = (2, 7);
    pub const CANT_INCLUDE_IN_SESSION: (u8, u8) = (2, 8);
    pub const SESSION_TYPE_UNSUPPORTED: (u8, u8) = (2, 9);
    pub const SESSION_DOES_NOT_EXIST: (u8, u8) = (2, 0x0a);
    pub const INVALID_DURING_LOGIN: (u8, u8) = (2, 0x0b);
    pub const TARGET_ERROR: (u8, u8) = (3, 0);
    pub const SERVICE_UNAVAILABLE: (u8, u8) = (3, 1);
    pub const OUT_OF_RESOURCES: (u8, u8) = (3, 2);
}

#[derive(Debug, Clone, Copy)]
pub struct LoginResponse {
    pub transit: bool,
    pub cont: bool,
    pub csg: u8,
    pub nsg: u8,
    pub isid: [u8; 6],
    pub tsih: u16,
    pub itt: u32,
    pub status: (u8, u8),
    pub seq: Seq,
}

pub fn login_response(out: &mut Vec<u8>, r: &LoginResponse, data: &[u8]) {
    let mut b = header(op::LOGIN_RSP, login_flags(r.transit, r.cont, r.csg, r.nsg));
    b[2] = 0; // version-max
    b[3] = 0; // version-active
    b[8..14].copy_from_slice(&r.isid);
    b[14..16].copy_from_slice(&r.tsih.to_be_bytes());
    set32(&mut b, 16, r.itt);
    set_seq(&mut b, r.seq);
    b[36] = r.status.0;
    b[37] = r.status.1;
    // No digests during login.
    put(out, &b, &[data], Digests::default());
}

#[allow(clippy::too_many_arguments)]
pub fn text_response(
    out: &mut Vec<u8>,
    d: Digests,
    final_: bool,
    cont: bool,
    lun: u64,
    itt: u32,
    ttt: u32,
    seq: Seq,
    data: &[u8],
) {
    let mut b = header(op::TEXT_RSP, text_flags(final_, cont));
    set_lun_tags(&mut b, lun, itt, ttt);
    set_seq(&mut b, seq);
    put(out, &b, &[data], d);
}

/// Logout response codes.
pub mod logout_response {
    pub const OK: u8 = 0;
    pub const CID_NOT_FOUND: u8 = 1;
    pub const RECOVERY_UNSUPPORTED: u8 = 2;
}

pub fn logout_response(out: &mut Vec<u8>, d: Digests, itt: u32, response: u8, seq: Seq) {
    // Time2Wait and Time2Retain 0: no connection recovery at error recovery level 0.
    response_pdu(out, d, op::LOGOUT_RSP, itt, response, seq);
}

/// Reject reasons (RFC 7143 §11.17.1).
pub mod reject {
    pub const DATA_DIGEST: u8 = 0x02;
    pub const SNACK_REJECT: u8 = 0x03;
    pub const PROTOCOL_ERROR: u8 = 0x04;
    pub const COMMAND_NOT_SUPPORTED: u8 = 0x05;
    pub const IMMEDIATE_REJECTED: u8 = 0x06;
    pub const TASK_IN_PROGRESS: u8 = 0x07;
    pub const INVALID_DATA_ACK: u8 = 0x08;
    pub const INVALID_PDU_FIELD: u8 = 0x09;
    pub const OUT_OF_RESOURCES: u8 = 0x0a;
    pub const WAITING_FOR_LOGOUT: u8 = 0x0c;
}

/// Reject: the data segment is the header of the rejected PDU.
pub fn reject(out: &mut Vec<u8>, d: Digests, reason: u8, rejected: &[u8; BHS_LEN], seq: Seq) {
    let mut b = header(op::REJECT, 0x80);
    b[2] = reason;
    set32(&mut b, 16, RESERVED_TAG);
    set_seq(&mut b, seq);
    put(out, &b, &[rejected], d);
}

/// Asynchronous message "the target requests a logout" (AsyncEvent 1) within
/// `seconds` (Parameter3), sent when the target shuts down.
pub fn async_logout_request(out: &mut Vec<u8>, d: Digests, seq: Seq, seconds: u16) {
    let mut b = header(op::ASYNC, 0x80);
    set_lun_tags(&mut b, 0, RESERVED_TAG, 0);
    set_seq(&mut b, seq);
    b[36] = 1;
    b[42..44].copy_from_slice(&seconds.to_be_bytes());
    put(out, &b, &[], d);
}
