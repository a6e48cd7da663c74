//! CDB decoding (SPC-4, SBC-3): the commands a block target answers, with the fields it
//! acts on. Fields this target never supports (protection information, ACA) are refused
//! here with INVALID FIELD IN CDB pointing at the byte; an opcode it does not implement
//! is INVALID COMMAND OPERATION CODE (which libiscsi's suite and Linux read as "not
//! supported", never as a failure).

use super::pr::Access;
use super::sense::{Sense, INVALID_OPCODE};
use crate::be;

/// Operation codes.
pub mod opcode {
    pub const TEST_UNIT_READY: u8 = 0x00;
    pub const REQUEST_SENSE: u8 = 0x03;
    pub const READ_6: u8 = 0x08;
    pub const WRITE_6: u8 = 0x0a;
    pub const INQUIRY: u8 = 0x12;
    pub const MODE_SELECT_6: u8 = 0x15;
    pub const RESERVE_6: u8 = 0x16;
    pub const RELEASE_6: u8 = 0x17;
    pub const MODE_SENSE_6: u8 = 0x1a;
    pub const START_STOP_UNIT: u8 = 0x1b;
    pub const PREVENT_ALLOW: u8 = 0x1e;
    pub const READ_CAPACITY_10: u8 = 0x25;
    pub const READ_10: u8 = 0x28;
    pub const WRITE_10: u8 = 0x2a;
    pub const WRITE_VERIFY_10: u8 = 0x2e;
    pub const VERIFY_10: u8 = 0x2f;
    pub const PRE_FETCH_10: u8 = 0x34;
    pub const SYNCHRONIZE_CACHE_10: u8 = 0x35;
    pub const WRITE_SAME_10: u8 = 0x41;
    pub const UNMAP: u8 = 0x42;
    pub const MODE_SELECT_10: u8 = 0x55;
    pub const RESERVE_10: u8 = 0x56;
    pub const RELEASE_10: u8 = 0x57;
    pub const MODE_SENSE_10: u8 = 0x5a;
    pub const PERSISTENT_RESERVE_IN: u8 = 0x5e;
    pub const PERSISTENT_RESERVE_OUT: u8 = 0x5f;
    pub const READ_16: u8 = 0x88;
    pub const COMPARE_AND_WRITE: u8 = 0x89;
    pub const WRITE_16: u8 = 0x8a;
    pub const WRITE_VERIFY_16: u8 = 0x8e;
    pub const VERIFY_16: u8 = 0x8f;
    pub const PRE_FETCH_16: u8 = 0x90;
    pub const SYNCHRONIZE_CACHE_16: u8 = 0x91;
    pub const WRITE_SAME_16: u8 = 0x93;
    pub const SERVICE_ACTION_IN_16: u8 = 0x9e;
    pub const REPORT_LUNS: u8 = 0xa0;
    pub const MAINTENANCE_IN: u8 = 0xa3;
    pub const READ_12: u8 = 0xa8;
    pub const WRITE_12: u8 = 0xaa;
    pub const WRITE_VERIFY_12: u8 = 0xae;
    pub const VERIFY_12: u8 = 0xaf;
    /// SERVICE ACTION IN(16) service actions.
    pub const SA_READ_CAPACITY_16: u8 = 0x10;
    pub const SA_GET_LBA_STATUS: u8 = 0x12;
    /// MAINTENANCE IN service action.
    pub const SA_REPORT_SUPPORTED_OPCODES: u8 = 0x0c;
}

use opcode::*;

/// How a command moves data, for the transport: what the initiator must send
/// (Data-Out) or will receive (Data-In).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    None,
    In,
    Out,
}

/// A read, write or verify of `blocks` logical blocks from `lba`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rw {
    pub lba: u64,
    pub blocks: u32,
    pub fua: bool,
    pub dpo: bool,
}

/// A decoded command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    TestUnitReady,
    RequestSense {
        desc: bool,
        alloc: u32,
    },
    Inquiry {
        evpd: bool,
        page: u8,
        alloc: u32,
    },
    ModeSense(ModeSense),
    ModeSelect {
        ten: bool,
        pf: bool,
        sp: bool,
        len: u32,
    },
    ReadCapacity10,
    ReadCapacity16 {
        alloc: u32,
    },
    GetLbaStatus {
        lba: u64,
        alloc: u32,
    },
    Read(Rw),
    Write(Rw),
    /// BYTCHK: compare the data sent against the medium; otherwise no data is sent.
    Verify {
        rw: Rw,
        bytchk: bool,
    },
    WriteVerify(Rw),
    WriteSame(WriteSame),
    Unmap {
        anchor: bool,
        len: u32,
    },
    SynchronizeCache {
        lba: u64,
        blocks: u32,
    },
    PreFetch {
        lba: u64,
        blocks: u32,
    },
    CompareAndWrite(Rw),
    ReportLuns {
        select: u8,
        alloc: u32,
    },
    PersistentReserveIn {
        action: u8,
        alloc: u32,
    },
    PersistentReserveOut(PrOut),
    Reserve,
    Release,
    StartStopUnit,
    PreventAllow {
        prevent: u8,
    },
    ReportSupportedOpcodes(Rsoc),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeSense {
    pub ten: bool,
    pub dbd: bool,
    pub llbaa: bool,
    /// Page control: 0 current, 1 changeable, 2 default, 3 saved.
    pub pc: u8,
    pub page: u8,
    pub subpage: u8,
    pub alloc: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteSame {
    pub lba: u64,
    /// 0: through the last LBA (when the Block Limits page says WSNZ=0).
    pub blocks: u32,
    pub unmap: bool,
    pub anchor: bool,
    /// No data-out buffer: the block is zeroes (WRITE SAME(16) only).
    pub ndob: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrOut {
    pub action: u8,
    pub scope: u8,
    pub kind: u8,
    pub len: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rsoc {
    pub rctd: bool,
    pub options: u8,
    pub opcode: u8,
    pub sa: u16,
    pub alloc: u32,
}

fn field(byte: u16) -> Sense {
    Sense::cdb_field(byte)
}

/// The length a CDB's opcode implies (SPC-4 §4.2.5.1's groups).
pub fn cdb_len(op: u8) -> usize {
    match op >> 5 {
        0 => 6,
        1 | 2 => 10,
        4 => 16,
        5 => 12,
        _ => 16,
    }
}

/// Decodes a CDB (at least 16 bytes as iSCSI carries them; shorter CDBs are padded).
pub fn decode(cdb: &[u8; 16]) -> Result<Command, Sense> {
    let op = cdb[0];
    // The CONTROL byte's NACA bit asks for ACA, which this target never establishes.
    let control = cdb[cdb_len(op) - 1];
    if control & 0x04 != 0 {
        return Err(field(cdb_len(op) as u16 - 1));
    }
    match op {
        READ_6 | WRITE_6 | READ_10 | READ_12 | READ_16 | WRITE_10 | WRITE_12 | WRITE_16
        | WRITE_VERIFY_10 | WRITE_VERIFY_12 | WRITE_VERIFY_16 | VERIFY_10 | VERIFY_12
        | VERIFY_16 | WRITE_SAME_10 | WRITE_SAME_16 | COMPARE_AND_WRITE => decode_io(op, cdb),
        _ => decode_other(op, cdb),
    }
}

fn u16_at(cdb: &[u8; 16], i: usize) -> u32 {
    be::u16(&cdb[i..i + 2]) as u32
}

fn u32_at(cdb: &[u8; 16], i: usize) -> u32 {
    be::u32(&cdb[i..i + 4])
}

fn u64_at(cdb: &[u8; 16], i: usize) -> u64 {
    be::u64(&cdb[i..i + 8])
}

/// The LBA and the block count of a 10-, 12- or 16-byte block command (READ, WRITE,
/// VERIFY, WRITE SAME, PRE-FETCH, SYNCHRONIZE CACHE), where SBC-3 puts them for the
/// CDB's size (which its opcode's group implies).
fn lba_blocks(cdb: &[u8; 16]) -> (u64, u32) {
    match cdb_len(cdb[0]) {
        10 => (u32_at(cdb, 2) as u64, u16_at(cdb, 7)),
        12 => (u32_at(cdb, 2) as u64, u32_at(cdb, 6)),
        _ => (u64_at(cdb, 2), u32_at(cdb, 10)),
    }
}

/// RDPROTECT/WRPROTECT/VRPROTECT (byte 1, bits 7-5): no protection information.
fn no_protect(cdb: &[u8; 16]) -> Result<(), Sense> {
    if cdb[1] & 0xe0 != 0 {
        Err(field(1))
    } else {
        Ok(())
    }
}

fn rw(cdb: &[u8; 16], lba: u64, blocks: u32) -> Rw {
    Rw {
        lba,
        blocks,
        fua: cdb[1] & 0x08 != 0,
        dpo: cdb[1] & 0x10 != 0,
    }
}

/// The commands that move blocks: READ, WRITE, WRITE AND VERIFY, VERIFY, WRITE SAME,
/// COMPARE AND WRITE.
fn decode_io(op: u8, cdb: &[u8; 16]) -> Result<Command, Sense> {
    Ok(match op {
        READ_6 | WRITE_6 => {
            let lba = (be::u24(&cdb[1..4]) & 0x1f_ffff) as u64;
            // A transfer length of 0 means 256 blocks.
            let blocks = if cdb[4] == 0 { 256 } else { cdb[4] as u32 };
            let r = Rw {
                lba,
                blocks,
                fua: false,
                dpo: false,
            };
            if op == READ_6 {
                Command::Read(r)
            } else {
                Command::Write(r)
            }
        }
        READ_10 | READ_12 | READ_16 | WRITE_10 | WRITE_12 | WRITE_16 | WRITE_VERIFY_10
        | WRITE_VERIFY_12 | WRITE_VERIFY_16 | VERIFY_10 | VERIFY_12 | VERIFY_16 => {
            no_protect(cdb)?;
            let (lba, blocks) = lba_blocks(cdb);
            let r = rw(cdb, lba, blocks);
            match op {
                READ_10 | READ_12 | READ_16 => Command::Read(r),
                WRITE_10 | WRITE_12 | WRITE_16 => Command::Write(r),
                WRITE_VERIFY_10 | WRITE_VERIFY_12 | WRITE_VERIFY_16 => {
                    Command::WriteVerify(Rw { fua: true, ..r })
                }
                _ => {
                    // BYTCHK (bits 2-1): 00 no data, 01 compare, 11 compare one block
                    // against each (not supported), 10 reserved.
                    match (cdb[1] >> 1) & 3 {
                        0 => Command::Verify {
                            rw: r,
                            bytchk: false,
                        },
                        1 => Command::Verify {
                            rw: r,
                            bytchk: true,
                        },
                        _ => return Err(field(1)),
                    }
                }
            }
        }
        WRITE_SAME_10 | WRITE_SAME_16 => {
            no_protect(cdb)?;
            let ten = op == WRITE_SAME_10;
            // PBDATA/LBDATA (bits 2-1): no physical/logical block data substitution.
            if cdb[1] & 0x06 != 0 {
                return Err(field(1));
            }
            let (lba, blocks) = lba_blocks(cdb);
            let ws = WriteSame {
                lba,
                blocks,
                unmap: cdb[1] & 0x08 != 0,
                anchor: cdb[1] & 0x10 != 0,
                ndob: !ten && cdb[1] & 0x01 != 0,
            };
            Command::WriteSame(ws)
        }
        COMPARE_AND_WRITE => {
            no_protect(cdb)?;
            Command::CompareAndWrite(rw(cdb, u64_at(cdb, 2), cdb[13] as u32))
        }
        _ => return Err(Sense::new(INVALID_OPCODE)),
    })
}

/// RESERVE and RELEASE (6 and 10): third-party and extent reservations are not supported.
fn reserve_release(op: u8, cdb: &[u8; 16]) -> Result<Command, Sense> {
    if cdb[1] & 0x13 != 0 {
        return Err(field(1));
    }
    Ok(if matches!(op, RESERVE_6 | RESERVE_10) {
        Command::Reserve
    } else {
        Command::Release
    })
}

/// Every other command: SPC-4's primary commands and SBC's non-data ones.
fn decode_other(op: u8, cdb: &[u8; 16]) -> Result<Command, Sense> {
    Ok(match op {
        TEST_UNIT_READY => Command::TestUnitReady,
        REQUEST_SENSE => Command::RequestSense {
            desc: cdb[1] & 1 != 0,
            alloc: cdb[4] as u32,
        },
        INQUIRY => {
            let evpd = cdb[1] & 1 != 0;
            if cdb[1] & 0x02 != 0 {
                return Err(field(1)); // CMDDT (obsolete)
            }
            if !evpd && cdb[2] != 0 {
                return Err(field(2));
            }
            Command::Inquiry {
                evpd,
                page: cdb[2],
                alloc: u16_at(cdb, 3),
            }
        }
        MODE_SENSE_6 | MODE_SENSE_10 => {
            let ten = op == MODE_SENSE_10;
            Command::ModeSense(ModeSense {
                ten,
                dbd: cdb[1] & 0x08 != 0,
                llbaa: ten && cdb[1] & 0x10 != 0,
                pc: cdb[2] >> 6,
                page: cdb[2] & 0x3f,
                subpage: cdb[3],
                alloc: if ten { u16_at(cdb, 7) } else { cdb[4] as u32 },
            })
        }
        MODE_SELECT_6 | MODE_SELECT_10 => {
            let ten = op == MODE_SELECT_10;
            Command::ModeSelect {
                ten,
                pf: cdb[1] & 0x10 != 0,
                sp: cdb[1] & 0x01 != 0,
                len: if ten { u16_at(cdb, 7) } else { cdb[4] as u32 },
            }
        }
        READ_CAPACITY_10 => {
            // PMI (byte 8 bit 0) is obsolete; an LBA without it is invalid.
            if cdb[8] & 1 == 0 && u32_at(cdb, 2) != 0 {
                return Err(field(2));
            }
            Command::ReadCapacity10
        }
        SERVICE_ACTION_IN_16 => match cdb[1] & 0x1f {
            SA_READ_CAPACITY_16 => Command::ReadCapacity16 {
                alloc: u32_at(cdb, 10),
            },
            SA_GET_LBA_STATUS => Command::GetLbaStatus {
                lba: u64_at(cdb, 2),
                alloc: u32_at(cdb, 10),
            },
            _ => return Err(field(1)),
        },
        UNMAP => Command::Unmap {
            anchor: cdb[1] & 1 != 0,
            len: u16_at(cdb, 7),
        },
        SYNCHRONIZE_CACHE_10 | SYNCHRONIZE_CACHE_16 => {
            let (lba, blocks) = lba_blocks(cdb);
            Command::SynchronizeCache { lba, blocks }
        }
        PRE_FETCH_10 | PRE_FETCH_16 => {
            let (lba, blocks) = lba_blocks(cdb);
            Command::PreFetch { lba, blocks }
        }
        REPORT_LUNS => Command::ReportLuns {
            select: cdb[2],
            alloc: u32_at(cdb, 6),
        },
        PERSISTENT_RESERVE_IN => Command::PersistentReserveIn {
            action: cdb[1] & 0x1f,
            alloc: u16_at(cdb, 7),
        },
        PERSISTENT_RESERVE_OUT => Command::PersistentReserveOut(PrOut {
            action: cdb[1] & 0x1f,
            scope: cdb[2] >> 4,
            kind: cdb[2] & 0x0f,
            len: u32_at(cdb, 5),
        }),
        RESERVE_6 | RESERVE_10 | RELEASE_6 | RELEASE_10 => reserve_release(op, cdb)?,
        START_STOP_UNIT => Command::StartStopUnit,
        PREVENT_ALLOW => Command::PreventAllow {
            prevent: cdb[4] & 3,
        },
        MAINTENANCE_IN if cdb[1] & 0x1f == SA_REPORT_SUPPORTED_OPCODES => {
            Command::ReportSupportedOpcodes(Rsoc {
                rctd: cdb[2] & 0x80 != 0,
                options: cdb[2] & 0x07,
                opcode: cdb[3],
                sa: u16_at(cdb, 4) as u16,
                alloc: u32_at(cdb, 6),
            })
        }
        _ => return Err(Sense::new(INVALID_OPCODE)),
    })
}

impl Command {
    /// Bytes the initiator sends for this command, given the LUN's block size (the
    /// parameter list's length for the commands that take one).
    pub fn data_out_len(&self, block_size: u32) -> u64 {
        let bs = block_size as u64;
        match *self {
            Command::Write(r) | Command::WriteVerify(r) => r.blocks as u64 * bs,
            Command::Verify { rw, bytchk: true } => rw.blocks as u64 * bs,
            Command::CompareAndWrite(r) => 2 * r.blocks as u64 * bs,
            Command::WriteSame(ws) if !ws.ndob => bs,
            Command::Unmap { len, .. } => len as u64,
            Command::PersistentReserveOut(p) => p.len as u64,
            Command::ModeSelect { len, .. } => len as u64,
            _ => 0,
        }
    }

    /// How the command touches the medium, for the reservation check.
    pub fn access(&self) -> Access {
        match self {
            Command::Inquiry { .. }
            | Command::ReportLuns { .. }
            | Command::RequestSense { .. }
            | Command::ReportSupportedOpcodes(_) => Access::Always,
            Command::TestUnitReady | Command::ReadCapacity10 | Command::ReadCapacity16 { .. } => {
                Access::Status
            }
            Command::Read(_)
            | Command::Verify { .. }
            | Command::PreFetch { .. }
            | Command::GetLbaStatus { .. }
            | Command::ModeSense(_) => Access::Read,
            Command::PersistentReserveIn { .. } | Command::PersistentReserveOut(_) => {
                Access::Persistent
            }
            Command::Reserve | Command::Release => Access::Legacy,
            Command::PreventAllow { prevent: 0 } => Access::Always,
            _ => Access::Write,
        }
    }

    /// The data's direction.
    pub fn dir(&self, block_size: u32) -> Dir {
        if self.data_out_len(block_size) > 0 {
            return Dir::Out;
        }
        match self {
            Command::RequestSense { .. }
            | Command::Inquiry { .. }
            | Command::ModeSense(_)
            | Command::ReadCapacity10
            | Command::ReadCapacity16 { .. }
            | Command::GetLbaStatus { .. }
            | Command::Read(_)
            | Command::ReportLuns { .. }
            | Command::PersistentReserveIn { .. }
            | Command::ReportSupportedOpcodes(_) => Dir::In,
            _ => Dir::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sense::{INVALID_FIELD_IN_CDB, INVALID_OPCODE};
    use super::*;

    fn cdb(b: &[u8]) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..b.len()].copy_from_slice(b);
        c
    }

    #[test]
    fn reads_and_writes() {
        let c = decode(&cdb(&[0x28, 0x08, 0, 0, 1, 0, 0, 0, 8, 0])).unwrap();
        assert_eq!(
            c,
            Command::Read(Rw {
                lba: 256,
                blocks: 8,
                fua: true,
                dpo: false
            })
        );
        assert_eq!(c.dir(512), Dir::In);
        let c = decode(&cdb(&[
            0x8a, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 0, 0, 0,
        ]))
        .unwrap();
        assert!(matches!(
            c,
            Command::Write(Rw {
                lba: 0x1000,
                blocks: 256,
                ..
            })
        ));
        assert_eq!((c.dir(512), c.data_out_len(512)), (Dir::Out, 256 * 512));
        // READ(6) of 0 blocks is 256 blocks; its LBA is 21 bits.
        let c = decode(&cdb(&[0x08, 0xff, 0xff, 0xff, 0, 0])).unwrap();
        assert!(matches!(
            c,
            Command::Read(Rw {
                lba: 0x1f_ffff,
                blocks: 256,
                ..
            })
        ));
        // RDPROTECT is refused at byte 1.
        let e = decode(&cdb(&[0x28, 0x20, 0, 0, 0, 0, 0, 0, 1, 0])).unwrap_err();
        assert_eq!(e.asc, INVALID_FIELD_IN_CDB);
        assert_eq!(e.field.unwrap().byte, 1);
        // NACA in the control byte.
        let e = decode(&cdb(&[0x00, 0, 0, 0, 0, 0x04])).unwrap_err();
        assert_eq!(e.field.unwrap().byte, 5);
    }

    #[test]
    fn other_commands() {
        assert_eq!(
            decode(&cdb(&[0x12, 1, 0x83, 0, 0xff, 0])).unwrap(),
            Command::Inquiry {
                evpd: true,
                page: 0x83,
                alloc: 255
            }
        );
        assert!(decode(&cdb(&[0x12, 0, 0x83, 0, 0xff, 0])).is_err());
        assert_eq!(
            decode(&cdb(&[
                0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0
            ]))
            .unwrap(),
            Command::ReadCapacity16 { alloc: 32 }
        );
        let ws = decode(&cdb(&[
            0x93, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0,
        ]))
        .unwrap();
        assert_eq!(
            ws,
            Command::WriteSame(WriteSame {
                lba: 0,
                blocks: 16,
                unmap: true,
                anchor: false,
                ndob: true
            })
        );
        assert_eq!(ws.data_out_len(512), 0);
        let caw = decode(&cdb(&[0x89, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0])).unwrap();
        assert_eq!(caw.data_out_len(512), 2048);
        assert_eq!(decode(&cdb(&[0xc1])).unwrap_err().asc, INVALID_OPCODE);
        assert_eq!(
            decode(&cdb(&[0x2f, 0x04, 0, 0, 0, 0, 0, 0, 1, 0]))
                .unwrap_err()
                .asc,
            INVALID_FIELD_IN_CDB
        );
    }
}
