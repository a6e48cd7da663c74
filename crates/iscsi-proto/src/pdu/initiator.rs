//! The initiator's side, for tests and tools that act as a client: encoders of the
//! initiator's PDUs and a view of the target's.

use super::{login_flags, op, set32, set_lun_tags, text_flags};
use super::{DataOut, Login, Logout, NopOut, ScsiCommand, TaskMgmt, Text};
use crate::be;
use crate::frame::{put, Digests, RawPdu, BHS_LEN};

fn header(opcode: u8, immediate: bool, flags: u8) -> [u8; BHS_LEN] {
    let mut b = [0u8; BHS_LEN];
    b[0] = opcode | if immediate { 0x40 } else { 0 };
    b[1] = flags;
    b
}

/// Bytes 24 to 31 of a request's BHS: its CmdSN and ExpStatSN.
fn set_cmd_seq(b: &mut [u8; BHS_LEN], cmdsn: u32, exp_statsn: u32) {
    set32(b, 24, cmdsn);
    set32(b, 28, exp_statsn);
}

pub fn login(out: &mut Vec<u8>, l: &Login<'_>) {
    let flags = login_flags(l.transit, l.cont, l.csg, l.nsg);
    let mut b = header(op::LOGIN_REQ, true, flags);
    b[2] = l.version_max;
    b[3] = l.version_min;
    b[8..14].copy_from_slice(&l.isid);
    b[14..16].copy_from_slice(&l.tsih.to_be_bytes());
    set32(&mut b, 16, l.itt);
    b[20..22].copy_from_slice(&l.cid.to_be_bytes());
    set_cmd_seq(&mut b, l.cmdsn, l.exp_statsn);
    put(out, &b, &[l.data], Digests::default());
}

pub fn scsi_command(out: &mut Vec<u8>, d: Digests, c: &ScsiCommand<'_>) {
    let mut flags = c.attr & 7;
    if c.final_ {
        flags |= 0x80;
    }
    if c.read {
        flags |= 0x40;
    }
    if c.write {
        flags |= 0x20;
    }
    let mut b = header(op::SCSI_CMD, c.immediate, flags);
    set_lun_tags(&mut b, c.lun, c.itt, c.edtl);
    set_cmd_seq(&mut b, c.cmdsn, c.exp_statsn);
    b[32..48].copy_from_slice(&c.cdb);
    put(out, &b, &[c.data], d);
}

pub fn data_out(out: &mut Vec<u8>, d: Digests, o: &DataOut<'_>) {
    let mut b = header(op::DATA_OUT, false, if o.final_ { 0x80 } else { 0 });
    set_lun_tags(&mut b, o.lun, o.itt, o.ttt);
    set32(&mut b, 28, o.exp_statsn);
    set32(&mut b, 36, o.datasn);
    set32(&mut b, 40, o.offset);
    put(out, &b, &[o.data], d);
}

pub fn nop_out(out: &mut Vec<u8>, d: Digests, n: &NopOut<'_>) {
    let mut b = header(op::NOP_OUT, n.immediate, 0x80);
    set_lun_tags(&mut b, n.lun, n.itt, n.ttt);
    set_cmd_seq(&mut b, n.cmdsn, n.exp_statsn);
    put(out, &b, &[n.data], d);
}

pub fn text(out: &mut Vec<u8>, d: Digests, t: &Text<'_>) {
    let mut b = header(op::TEXT_REQ, t.immediate, text_flags(t.final_, t.cont));
    set_lun_tags(&mut b, t.lun, t.itt, t.ttt);
    set_cmd_seq(&mut b, t.cmdsn, t.exp_statsn);
    put(out, &b, &[t.data], d);
}

pub fn logout(out: &mut Vec<u8>, d: Digests, l: &Logout) {
    let mut b = header(op::LOGOUT_REQ, l.immediate, 0x80 | (l.reason & 0x7f));
    set32(&mut b, 16, l.itt);
    b[20..22].copy_from_slice(&l.cid.to_be_bytes());
    set_cmd_seq(&mut b, l.cmdsn, l.exp_statsn);
    put(out, &b, &[], d);
}

pub fn task_mgmt(out: &mut Vec<u8>, d: Digests, t: &TaskMgmt) {
    let mut b = header(op::TMF_REQ, t.immediate, 0x80 | (t.function & 0x7f));
    set_lun_tags(&mut b, t.lun, t.itt, t.rtt);
    set_cmd_seq(&mut b, t.cmdsn, t.exp_statsn);
    set32(&mut b, 32, t.ref_cmdsn);
    set32(&mut b, 36, t.exp_datasn);
    put(out, &b, &[], d);
}

/// A view of a target PDU's fields by name (for tests and client tools).
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a>(pub RawPdu<'a>);

impl<'a> Reply<'a> {
    pub fn opcode(&self) -> u8 {
        self.0.opcode()
    }
    pub fn flags(&self) -> u8 {
        self.0.bhs[1]
    }
    pub fn final_(&self) -> bool {
        self.flags() & 0x80 != 0
    }
    pub fn itt(&self) -> u32 {
        self.0.itt()
    }
    /// Byte 2: a response code (SCSI Response, TMF, Logout) or a Reject's reason.
    pub fn response(&self) -> u8 {
        self.0.bhs[2]
    }
    /// Byte 3: a SCSI status (SCSI Response, a Data-In with S).
    pub fn status(&self) -> u8 {
        self.0.bhs[3]
    }
    pub fn lun(&self) -> u64 {
        be::u64(&self.0.bhs[8..16])
    }
    pub fn tsih(&self) -> u16 {
        be::u16(&self.0.bhs[14..16])
    }
    pub fn ttt(&self) -> u32 {
        be::u32(&self.0.bhs[20..24])
    }
    pub fn statsn(&self) -> u32 {
        be::u32(&self.0.bhs[24..28])
    }
    pub fn exp_cmdsn(&self) -> u32 {
        be::u32(&self.0.bhs[28..32])
    }
    pub fn max_cmdsn(&self) -> u32 {
        be::u32(&self.0.bhs[32..36])
    }
    /// DataSN (Data-In), R2TSN (R2T), ExpDataSN (SCSI Response).
    pub fn sn(&self) -> u32 {
        be::u32(&self.0.bhs[36..40])
    }
    /// Buffer offset (Data-In, R2T).
    pub fn offset(&self) -> u32 {
        be::u32(&self.0.bhs[40..44])
    }
    /// Desired length (R2T) or residual count (SCSI Response, Data-In with S).
    pub fn word44(&self) -> u32 {
        be::u32(&self.0.bhs[44..48])
    }
    /// A login response's status class and detail.
    pub fn login_status(&self) -> (u8, u8) {
        (self.0.bhs[36], self.0.bhs[37])
    }
    /// A login response's current and next stage.
    pub fn stages(&self) -> (u8, u8) {
        ((self.flags() >> 2) & 3, self.flags() & 3)
    }
    pub fn data(&self) -> &'a [u8] {
        self.0.data
    }
    /// A SCSI Response's sense data (after its 2-byte length).
    pub fn sense(&self) -> &'a [u8] {
        let d = self.0.data;
        if d.len() < 2 {
            return &[];
        }
        let n = be::u16(&d[..2]) as usize;
        d.get(2..2 + n).unwrap_or(&d[2..])
    }
}
