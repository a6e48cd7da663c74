//! Status codes and fixed-format sense data (SPC-4 §4.5.3): every refused command is
//! answered CHECK CONDITION with a sense key and an additional sense code (ASC/ASCQ).

/// SCSI status codes (SAM-5).
pub mod status {
    pub const GOOD: u8 = 0x00;
    pub const CHECK_CONDITION: u8 = 0x02;
    pub const CONDITION_MET: u8 = 0x04;
    pub const BUSY: u8 = 0x08;
    pub const RESERVATION_CONFLICT: u8 = 0x18;
    pub const TASK_SET_FULL: u8 = 0x28;
    pub const TASK_ABORTED: u8 = 0x40;
}

/// Sense keys.
pub mod key {
    pub const NO_SENSE: u8 = 0x0;
    pub const NOT_READY: u8 = 0x2;
    pub const MEDIUM_ERROR: u8 = 0x3;
    pub const HARDWARE_ERROR: u8 = 0x4;
    pub const ILLEGAL_REQUEST: u8 = 0x5;
    pub const UNIT_ATTENTION: u8 = 0x6;
    pub const DATA_PROTECT: u8 = 0x7;
    pub const ABORTED_COMMAND: u8 = 0xb;
    pub const MISCOMPARE: u8 = 0xe;
}

/// A sense key with its additional sense code and qualifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asc {
    pub key: u8,
    pub asc: u8,
    pub ascq: u8,
}

const fn asc(key: u8, asc: u8, ascq: u8) -> Asc {
    Asc { key, asc, ascq }
}

pub const INVALID_OPCODE: Asc = asc(key::ILLEGAL_REQUEST, 0x20, 0x00);
pub const LBA_OUT_OF_RANGE: Asc = asc(key::ILLEGAL_REQUEST, 0x21, 0x00);
pub const INVALID_FIELD_IN_CDB: Asc = asc(key::ILLEGAL_REQUEST, 0x24, 0x00);
pub const LUN_NOT_SUPPORTED: Asc = asc(key::ILLEGAL_REQUEST, 0x25, 0x00);
pub const INVALID_FIELD_IN_PARAMETER_LIST: Asc = asc(key::ILLEGAL_REQUEST, 0x26, 0x00);
pub const INVALID_FIELD_IN_INFORMATION_UNIT: Asc = asc(key::ILLEGAL_REQUEST, 0x0e, 0x03);
pub const PARAMETER_LIST_LENGTH_ERROR: Asc = asc(key::ILLEGAL_REQUEST, 0x1a, 0x00);
pub const INVALID_RELEASE_OF_PR: Asc = asc(key::ILLEGAL_REQUEST, 0x26, 0x04);
pub const SAVING_PARAMETERS_NOT_SUPPORTED: Asc = asc(key::ILLEGAL_REQUEST, 0x39, 0x00);
pub const WRITE_PROTECTED: Asc = asc(key::DATA_PROTECT, 0x27, 0x00);
pub const MISCOMPARE_DURING_VERIFY: Asc = asc(key::MISCOMPARE, 0x1d, 0x00);
pub const POWER_ON_RESET: Asc = asc(key::UNIT_ATTENTION, 0x29, 0x00);
pub const LUN_RESET_OCCURRED: Asc = asc(key::UNIT_ATTENTION, 0x29, 0x03);
pub const RESERVATIONS_PREEMPTED: Asc = asc(key::UNIT_ATTENTION, 0x2a, 0x03);
pub const RESERVATIONS_RELEASED: Asc = asc(key::UNIT_ATTENTION, 0x2a, 0x04);
pub const REGISTRATIONS_PREEMPTED: Asc = asc(key::UNIT_ATTENTION, 0x2a, 0x05);
pub const CAPACITY_DATA_CHANGED: Asc = asc(key::UNIT_ATTENTION, 0x2a, 0x09);
pub const REPORTED_LUNS_CHANGED: Asc = asc(key::UNIT_ATTENTION, 0x3f, 0x0e);
pub const WRITE_ERROR: Asc = asc(key::MEDIUM_ERROR, 0x0c, 0x00);
pub const UNRECOVERED_READ_ERROR: Asc = asc(key::MEDIUM_ERROR, 0x11, 0x00);
pub const SPACE_ALLOCATION_FAILED: Asc = asc(key::DATA_PROTECT, 0x27, 0x07);
pub const INTERNAL_TARGET_FAILURE: Asc = asc(key::HARDWARE_ERROR, 0x44, 0x00);
pub const COMMANDS_CLEARED_BY_ANOTHER_INITIATOR: Asc = asc(key::UNIT_ATTENTION, 0x2f, 0x00);
pub const NO_ADDITIONAL_SENSE: Asc = asc(key::NO_SENSE, 0x00, 0x00);
pub const SAVED_PARAMETERS_NOT_SUPPORTED: Asc = asc(key::ILLEGAL_REQUEST, 0x39, 0x00);
pub const MEDIUM_NOT_PRESENT: Asc = asc(key::NOT_READY, 0x3a, 0x00);

/// Sense data for one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sense {
    pub asc: Asc,
    /// The INFORMATION field (e.g. a miscompare's byte offset), with VALID set.
    pub information: Option<u32>,
    /// Sense-key specific field pointer: the byte (and bit) of the CDB or parameter list
    /// that was wrong.
    pub field: Option<FieldPointer>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldPointer {
    /// In the CDB (true) or in the parameter list (false).
    pub in_cdb: bool,
    pub byte: u16,
    pub bit: Option<u8>,
}

/// Fixed-format sense data is 18 bytes (additional length 10).
pub const FIXED_LEN: usize = 18;

impl Sense {
    pub fn new(asc: Asc) -> Sense {
        Sense {
            asc,
            information: None,
            field: None,
        }
    }

    /// An invalid field at `byte` of the CDB.
    pub fn cdb_field(byte: u16) -> Sense {
        Sense {
            field: Some(FieldPointer {
                in_cdb: true,
                byte,
                bit: None,
            }),
            ..Sense::new(INVALID_FIELD_IN_CDB)
        }
    }

    /// An invalid field at `byte` of the parameter list.
    pub fn param_field(byte: u16) -> Sense {
        Sense {
            field: Some(FieldPointer {
                in_cdb: false,
                byte,
                bit: None,
            }),
            ..Sense::new(INVALID_FIELD_IN_PARAMETER_LIST)
        }
    }

    pub fn with_information(mut self, info: u32) -> Sense {
        self.information = Some(info);
        self
    }

    /// Fixed-format sense data (response code 0x70, current error).
    pub fn fixed(&self) -> [u8; FIXED_LEN] {
        let mut s = [0u8; FIXED_LEN];
        s[0] = 0x70;
        s[2] = self.asc.key & 0x0f;
        if let Some(info) = self.information {
            s[0] |= 0x80;
            s[3..7].copy_from_slice(&info.to_be_bytes());
        }
        s[7] = (FIXED_LEN - 8) as u8;
        s[12] = self.asc.asc;
        s[13] = self.asc.ascq;
        if let Some(f) = self.field {
            s[15] = 0x80 | if f.in_cdb { 0x40 } else { 0 };
            if let Some(bit) = f.bit {
                s[15] |= 0x08 | (bit & 7);
            }
            s[16..18].copy_from_slice(&f.byte.to_be_bytes());
        }
        s
    }
}

impl From<Asc> for Sense {
    fn from(a: Asc) -> Sense {
        Sense::new(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_format_layout() {
        let s = Sense::new(LBA_OUT_OF_RANGE).fixed();
        assert_eq!(s[0], 0x70);
        assert_eq!((s[2], s[7], s[12], s[13]), (5, 10, 0x21, 0));
        let s = Sense::new(MISCOMPARE_DURING_VERIFY)
            .with_information(513)
            .fixed();
        assert_eq!((s[0], &s[3..7]), (0xf0, &513u32.to_be_bytes()[..]));
        let s = Sense::cdb_field(2).fixed();
        assert_eq!((s[15], s[16], s[17]), (0xc0, 0, 2));
    }
}
