//! The initiator's PDUs decoded into typed requests (RFC 7143 §11), and the target's
//! PDUs encoded ([`target`]). Encoders of the initiator's PDUs ([`initiator`]) exist for
//! tests and tools that act as a client.

use crate::be;
use crate::frame::{RawPdu, BHS_LEN};

pub mod initiator;
pub mod target;

/// Opcodes (the low 6 bits of byte 0).
pub mod op {
    pub const NOP_OUT: u8 = 0x00;
    pub const SCSI_CMD: u8 = 0x01;
    pub const TMF_REQ: u8 = 0x02;
    pub const LOGIN_REQ: u8 = 0x03;
    pub const TEXT_REQ: u8 = 0x04;
    pub const DATA_OUT: u8 = 0x05;
    pub const LOGOUT_REQ: u8 = 0x06;
    pub const SNACK: u8 = 0x10;
    pub const NOP_IN: u8 = 0x20;
    pub const SCSI_RSP: u8 = 0x21;
    pub const TMF_RSP: u8 = 0x22;
    pub const LOGIN_RSP: u8 = 0x23;
    pub const TEXT_RSP: u8 = 0x24;
    pub const DATA_IN: u8 = 0x25;
    pub const LOGOUT_RSP: u8 = 0x26;
    pub const R2T: u8 = 0x31;
    pub const ASYNC: u8 = 0x32;
    pub const REJECT: u8 = 0x3f;
}

/// The reserved tag: "no task" (an unsolicited NOP-In, a Data-Out without an R2T).
pub const RESERVED_TAG: u32 = 0xffff_ffff;

/// Writes a big-endian u32 field of a BHS at byte `at` (for the encoders of both sides).
fn set32(b: &mut [u8; BHS_LEN], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Bytes 8 to 23 of most BHSes: the LUN, the Initiator Task Tag and the field at byte 20
/// (a Target Transfer Tag, a SCSI command's expected length, a TMF's referenced tag).
fn set_lun_tags(b: &mut [u8; BHS_LEN], lun: u64, itt: u32, at20: u32) {
    b[8..16].copy_from_slice(&lun.to_be_bytes());
    set32(b, 16, itt);
    set32(b, 20, at20);
}

/// Byte 1 of a Text request or response: F (final) and C (continues).
fn text_flags(final_: bool, cont: bool) -> u8 {
    (if final_ { 0x80 } else { 0 }) | if cont { 0x40 } else { 0 }
}

/// Byte 1 of a Login request or response: T (transit) and C (continues) where a Text
/// PDU has F and C, then the current and next stages.
fn login_flags(transit: bool, cont: bool, csg: u8, nsg: u8) -> u8 {
    text_flags(transit, cont) | ((csg & 3) << 2) | (nsg & 3)
}

/// Why a framed PDU could not be decoded into a request. The target answers with a
/// Reject (reason [`target::reject::PROTOCOL_ERROR`] or
/// [`target::reject::COMMAND_NOT_SUPPORTED`]).
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum DecodeError {
    #[error("opcode 0x{0:02x} is not an initiator opcode")]
    UnknownOpcode(u8),
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
}

/// A decoded initiator PDU. Variable parts borrow from the receive buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    NopOut(NopOut<'a>),
    ScsiCommand(ScsiCommand<'a>),
    TaskMgmt(TaskMgmt),
    Login(Login<'a>),
    Text(Text<'a>),
    DataOut(DataOut<'a>),
    Logout(Logout),
    Snack(Snack),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NopOut<'a> {
    pub immediate: bool,
    pub lun: u64,
    pub itt: u32,
    pub ttt: u32,
    pub cmdsn: u32,
    pub exp_statsn: u32,
    pub data: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScsiCommand<'a> {
    pub immediate: bool,
    /// F: no unsolicited Data-Out follows (all unsolicited data was immediate).
    pub final_: bool,
    pub read: bool,
    pub write: bool,
    /// Task attribute (0 untagged, 1 simple, 2 ordered, 3 head of queue, 4 ACA).
    pub attr: u8,
    pub lun: u64,
    pub itt: u32,
    /// Expected data transfer length (the write's or the read's; for a bidirectional
    /// command the write's, and `bidi_read_len` the read's).
    pub edtl: u32,
    pub cmdsn: u32,
    pub exp_statsn: u32,
    /// The first 16 bytes of the CDB.
    pub cdb: [u8; 16],
    /// CDB bytes past the 16th (an Extended CDB AHS), empty for ordinary commands.
    pub ext_cdb: &'a [u8],
    pub bidi_read_len: Option<u32>,
    /// Immediate data.
    pub data: &'a [u8],
}

/// Task management functions (byte 1's low 7 bits).
pub mod tmf {
    pub const ABORT_TASK: u8 = 1;
    pub const ABORT_TASK_SET: u8 = 2;
    pub const CLEAR_ACA: u8 = 3;
    pub const CLEAR_TASK_SET: u8 = 4;
    pub const LOGICAL_UNIT_RESET: u8 = 5;
    pub const TARGET_WARM_RESET: u8 = 6;
    pub const TARGET_COLD_RESET: u8 = 7;
    pub const TASK_REASSIGN: u8 = 8;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskMgmt {
    pub immediate: bool,
    pub function: u8,
    pub lun: u64,
    pub itt: u32,
    /// Referenced task tag (ABORT TASK).
    pub rtt: u32,
    pub cmdsn: u32,
    pub exp_statsn: u32,
    pub ref_cmdsn: u32,
    pub exp_datasn: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login<'a> {
    /// T: the initiator is ready to move to `nsg`.
    pub transit: bool,
    /// C: the text continues in the next PDU.
    pub cont: bool,
    pub csg: u8,
    pub nsg: u8,
    pub version_max: u8,
    pub version_min: u8,
    pub isid: [u8; 6],
    pub tsih: u16,
    pub itt: u32,
    pub cid: u16,
    pub cmdsn: u32,
    pub exp_statsn: u32,
    pub data: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a> {
    pub immediate: bool,
    pub final_: bool,
    pub cont: bool,
    pub lun: u64,
    pub itt: u32,
    pub ttt: u32,
    pub cmdsn: u32,
    pub exp_statsn: u32,
    pub data: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataOut<'a> {
    pub final_: bool,
    pub lun: u64,
    pub itt: u32,
    pub ttt: u32,
    pub exp_statsn: u32,
    pub datasn: u32,
    pub offset: u32,
    pub data: &'a [u8],
}

/// Logout reasons.
pub mod logout {
    pub const CLOSE_SESSION: u8 = 0;
    pub const CLOSE_CONNECTION: u8 = 1;
    pub const REMOVE_FOR_RECOVERY: u8 = 2;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logout {
    pub immediate: bool,
    pub reason: u8,
    pub itt: u32,
    pub cid: u16,
    pub cmdsn: u32,
    pub exp_statsn: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snack {
    pub kind: u8,
    pub itt: u32,
}

impl<'a> Request<'a> {
    /// Decodes a framed PDU. Only structure is checked here (opcode, AHS layout); the
    /// session decides whether a request is allowed in its state.
    pub fn decode(p: &RawPdu<'a>) -> Result<Request<'a>, DecodeError> {
        let b = p.bhs;
        let immediate = b[0] & 0x40 != 0;
        let lun = be::u64(&b[8..16]);
        let itt = be::u32(&b[16..20]);
        // CmdSN (a Data-Out's is reserved) and ExpStatSN, where every request has them.
        let cmdsn = be::u32(&b[24..28]);
        let exp_statsn = be::u32(&b[28..32]);
        Ok(match p.opcode() {
            op::NOP_OUT => Request::NopOut(NopOut {
                immediate,
                lun,
                itt,
                ttt: be::u32(&b[20..24]),
                cmdsn,
                exp_statsn,
                data: p.data,
            }),
            op::SCSI_CMD => {
                let (ext_cdb, bidi_read_len) = scsi_ahs(p.ahs)?;
                let mut cdb = [0u8; 16];
                cdb.copy_from_slice(&b[32..48]);
                Request::ScsiCommand(ScsiCommand {
                    immediate,
                    final_: b[1] & 0x80 != 0,
                    read: b[1] & 0x40 != 0,
                    write: b[1] & 0x20 != 0,
                    attr: b[1] & 0x07,
                    lun,
                    itt,
                    edtl: be::u32(&b[20..24]),
                    cmdsn,
                    exp_statsn,
                    cdb,
                    ext_cdb,
                    bidi_read_len,
                    data: p.data,
                })
            }
            op::TMF_REQ => Request::TaskMgmt(TaskMgmt {
                immediate,
                function: b[1] & 0x7f,
                lun,
                itt,
                rtt: be::u32(&b[20..24]),
                cmdsn,
                exp_statsn,
                ref_cmdsn: be::u32(&b[32..36]),
                exp_datasn: be::u32(&b[36..40]),
            }),
            op::LOGIN_REQ => {
                let mut isid = [0u8; 6];
                isid.copy_from_slice(&b[8..14]);
                Request::Login(Login {
                    transit: b[1] & 0x80 != 0,
                    cont: b[1] & 0x40 != 0,
                    csg: (b[1] >> 2) & 3,
                    nsg: b[1] & 3,
                    version_max: b[2],
                    version_min: b[3],
                    isid,
                    tsih: be::u16(&b[14..16]),
                    itt,
                    cid: be::u16(&b[20..22]),
                    cmdsn,
                    exp_statsn,
                    data: p.data,
                })
            }
            op::TEXT_REQ => Request::Text(Text {
                immediate,
                final_: b[1] & 0x80 != 0,
                cont: b[1] & 0x40 != 0,
                lun,
                itt,
                ttt: be::u32(&b[20..24]),
                cmdsn,
                exp_statsn,
                data: p.data,
            }),
            op::DATA_OUT => Request::DataOut(DataOut {
                final_: b[1] & 0x80 != 0,
                lun,
                itt,
                ttt: be::u32(&b[20..24]),
                exp_statsn,
                datasn: be::u32(&b[36..40]),
                offset: be::u32(&b[40..44]),
                data: p.data,
            }),
            op::LOGOUT_REQ => Request::Logout(Logout {
                immediate,
                reason: b[1] & 0x7f,
                itt,
                cid: be::u16(&b[20..22]),
                cmdsn,
                exp_statsn,
            }),
            op::SNACK => Request::Snack(Snack {
                kind: b[1] & 0x0f,
                itt,
            }),
            other => return Err(DecodeError::UnknownOpcode(other)),
        })
    }
}

/// The SCSI command's AHSs: an Extended CDB (type 1) and a bidirectional read length
/// (type 2). Each is `AHSLength:u16 AHSType:u8` then `AHSLength` bytes (the first of
/// them reserved), padded to 4.
fn scsi_ahs(mut ahs: &[u8]) -> Result<(&[u8], Option<u32>), DecodeError> {
    let bad = |detail: String| DecodeError::Malformed {
        what: "additional header segment",
        detail,
    };
    let mut ext: &[u8] = &[];
    let mut bidi = None;
    while !ahs.is_empty() {
        if ahs.len() < 4 {
            return Err(bad(format!("{} trailing bytes", ahs.len())));
        }
        let len = be::u16(&ahs[0..2]) as usize;
        let kind = ahs[2];
        let body_end = 3 + len;
        let next = body_end + (4 - body_end % 4) % 4;
        if len == 0 || ahs.len() < next {
            return Err(bad(format!(
                "AHS type {kind} of length {len} overruns the AHS"
            )));
        }
        let body = &ahs[4..body_end];
        match kind {
            1 => ext = body,
            2 if len == 5 => bidi = Some(be::u32(body)),
            _ => return Err(bad(format!("AHS type {kind} with length {len}"))),
        }
        ahs = &ahs[next..];
    }
    Ok((ext, bidi))
}

#[cfg(test)]
mod tests;
