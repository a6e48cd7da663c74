//! Data-in payloads besides INQUIRY and MODE SENSE: READ CAPACITY (SBC-3 §5.15/5.16),
//! REPORT LUNS (SPC-4 §6.33), GET LBA STATUS (SBC-3 §5.8), REPORT SUPPORTED OPERATION
//! CODES (SPC-4 §6.35), REQUEST SENSE, and the UNMAP parameter list (SBC-3 §5.28) in.

use super::cdb::{opcode::*, Rsoc};
use super::sense::Sense;
use super::{lun, Unit};
use crate::be;

pub fn read_capacity_10(u: &Unit) -> Vec<u8> {
    let last = u32::try_from(u.last_lba()).unwrap_or(u32::MAX);
    let mut d = Vec::with_capacity(8);
    d.extend_from_slice(&last.to_be_bytes());
    d.extend_from_slice(&u.block_size.to_be_bytes());
    d
}

pub fn read_capacity_16(u: &Unit) -> Vec<u8> {
    let mut d = vec![0u8; 32];
    d[0..8].copy_from_slice(&u.last_lba().to_be_bytes());
    d[8..12].copy_from_slice(&u.block_size.to_be_bytes());
    d[13] = u.lbppbe & 0x0f;
    if u.thin {
        d[14] = 0x80 | if u.lbprz { 0x40 } else { 0 };
    }
    d
}

/// REPORT LUNS for `luns` (sorted by the caller). SELECT REPORT 0 and 2 list them all,
/// 1 (well-known LUNs only) lists none; anything else is an invalid field.
pub fn report_luns(luns: &[u16], select: u8, alloc: u32) -> Result<Vec<u8>, Sense> {
    if alloc < 16 {
        return Err(Sense::cdb_field(6));
    }
    let listed: &[u16] = match select {
        0 | 2 => luns,
        1 => &[],
        _ => return Err(Sense::cdb_field(2)),
    };
    let mut d = Vec::with_capacity(8 + 8 * listed.len());
    d.extend_from_slice(&((8 * listed.len()) as u32).to_be_bytes());
    d.extend_from_slice(&[0; 4]);
    for &l in listed {
        d.extend_from_slice(&lun::encode(l).to_be_bytes());
    }
    Ok(d)
}

/// Provisioning status of an LBA status descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provisioning {
    Mapped = 0,
    Deallocated = 1,
}

/// GET LBA STATUS parameter data: descriptors `(lba, blocks, status)`, the first of
/// which starts at the requested LBA.
pub fn lba_status(extents: &[(u64, u32, Provisioning)]) -> Vec<u8> {
    let mut d = Vec::with_capacity(8 + 16 * extents.len());
    d.extend_from_slice(&((4 + 16 * extents.len()) as u32).to_be_bytes());
    d.extend_from_slice(&[0; 4]);
    for &(lba, blocks, status) in extents {
        d.extend_from_slice(&lba.to_be_bytes());
        d.extend_from_slice(&blocks.to_be_bytes());
        d.extend_from_slice(&[status as u8, 0, 0, 0]);
    }
    d
}

/// REQUEST SENSE data: fixed format, `sense` or NO SENSE.
pub fn request_sense(sense: Option<Sense>) -> Vec<u8> {
    sense
        .unwrap_or(Sense::new(super::sense::NO_ADDITIONAL_SENSE))
        .fixed()
        .to_vec()
}

/// One UNMAP block descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnmapRange {
    pub lba: u64,
    pub blocks: u32,
}

/// Decodes an UNMAP parameter list, bounded by `max_descriptors`. Checks SBC-3's rules:
/// the data lengths agree with the list, and the descriptor count is within the limit
/// (ranges are the caller's to check against the unit).
pub fn unmap_list(p: &[u8], max_descriptors: u32) -> Result<Vec<UnmapRange>, Sense> {
    if p.is_empty() {
        return Ok(Vec::new());
    }
    if p.len() < 8 {
        return Err(Sense::new(super::sense::PARAMETER_LIST_LENGTH_ERROR));
    }
    let data_len = be::u16(&p[0..2]) as usize;
    let desc_len = be::u16(&p[2..4]) as usize;
    if data_len + 2 > p.len() || desc_len + 8 > p.len() || !desc_len.is_multiple_of(16) {
        return Err(Sense::new(super::sense::PARAMETER_LIST_LENGTH_ERROR));
    }
    let n = desc_len / 16;
    if n as u64 > max_descriptors as u64 {
        return Err(Sense::param_field(2));
    }
    Ok(p[8..8 + desc_len]
        .chunks_exact(16)
        .map(|c| UnmapRange {
            lba: be::u64(&c[0..8]),
            blocks: be::u32(&c[8..12]),
        })
        .collect())
}

/// A command this target implements, for REPORT SUPPORTED OPERATION CODES: opcode,
/// service action (if it has one) and its CDB usage mask (the bits a client may set).
pub struct Supported {
    pub opcode: u8,
    pub sa: Option<u16>,
    pub usage: &'static [u8],
}

macro_rules! sup {
    ($op:expr, $sa:expr, $usage:expr) => {
        Supported {
            opcode: $op,
            sa: $sa,
            usage: &$usage,
        }
    };
}

/// Usage data of a 10-byte block command (READ(10) and its kin): the opcode, byte 1's
/// flags, the LBA (bytes 2-5), the group number (6), the block count (7-8), CONTROL.
const fn block10(op: u8, byte1: u8) -> [u8; 10] {
    [op, byte1, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x03]
}

/// Usage data of a 12-byte block command: the LBA (bytes 2-5), the block count (6-9),
/// the group number (10), CONTROL.
const fn block12(op: u8, byte1: u8) -> [u8; 12] {
    [
        op, byte1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x03,
    ]
}

/// Usage data of a 16-byte block command: the LBA (bytes 2-9), the block count (10-13),
/// the group number (14), CONTROL.
const fn block16(op: u8, byte1: u8) -> [u8; 16] {
    [
        op, byte1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f,
        0x03,
    ]
}

/// PERSISTENT RESERVE IN's usage data, the same for each of its service actions.
const PR_IN_USAGE: [u8; 10] = [0x5e, 0x1f, 0, 0, 0, 0, 0, 0xff, 0xff, 0x03];
/// PERSISTENT RESERVE OUT's usage data, the same for each of its service actions.
const PR_OUT_USAGE: [u8; 10] = [0x5f, 0x1f, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x03];

/// Every command decoded by [`super::cdb::decode`], with its usage data.
pub const SUPPORTED: &[Supported] = &[
    sup!(TEST_UNIT_READY, None, [0x00, 0, 0, 0, 0, 0x03]),
    sup!(REQUEST_SENSE, None, [0x03, 0x01, 0, 0, 0xff, 0x03]),
    sup!(READ_6, None, [0x08, 0x1f, 0xff, 0xff, 0xff, 0x03]),
    sup!(WRITE_6, None, [0x0a, 0x1f, 0xff, 0xff, 0xff, 0x03]),
    sup!(INQUIRY, None, [0x12, 0x01, 0xff, 0xff, 0xff, 0x03]),
    sup!(RESERVE_6, None, [0x16, 0, 0, 0, 0, 0x03]),
    sup!(RELEASE_6, None, [0x17, 0, 0, 0, 0, 0x03]),
    sup!(MODE_SENSE_6, None, [0x1a, 0x08, 0xff, 0xff, 0xff, 0x03]),
    sup!(START_STOP_UNIT, None, [0x1b, 0x01, 0, 0x0f, 0xf7, 0x03]),
    sup!(PREVENT_ALLOW, None, [0x1e, 0, 0, 0, 0x03, 0x03]),
    sup!(
        READ_CAPACITY_10,
        None,
        [0x25, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x01, 0x03]
    ),
    sup!(READ_10, None, block10(READ_10, 0x18)),
    sup!(WRITE_10, None, block10(WRITE_10, 0x18)),
    sup!(WRITE_VERIFY_10, None, block10(WRITE_VERIFY_10, 0x12)),
    sup!(VERIFY_10, None, block10(VERIFY_10, 0x12)),
    sup!(PRE_FETCH_10, None, block10(PRE_FETCH_10, 0x02)),
    sup!(
        SYNCHRONIZE_CACHE_10,
        None,
        block10(SYNCHRONIZE_CACHE_10, 0x02)
    ),
    sup!(WRITE_SAME_10, None, block10(WRITE_SAME_10, 0x18)),
    sup!(
        UNMAP,
        None,
        [0x42, 0x01, 0, 0, 0, 0, 0x1f, 0xff, 0xff, 0x03]
    ),
    sup!(RESERVE_10, None, [0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0x03]),
    sup!(RELEASE_10, None, [0x57, 0, 0, 0, 0, 0, 0, 0, 0, 0x03]),
    sup!(
        MODE_SENSE_10,
        None,
        [0x5a, 0x18, 0xff, 0xff, 0, 0, 0, 0xff, 0xff, 0x03]
    ),
    sup!(PERSISTENT_RESERVE_IN, Some(0), PR_IN_USAGE),
    sup!(PERSISTENT_RESERVE_IN, Some(1), PR_IN_USAGE),
    sup!(PERSISTENT_RESERVE_IN, Some(2), PR_IN_USAGE),
    sup!(PERSISTENT_RESERVE_IN, Some(3), PR_IN_USAGE),
    sup!(PERSISTENT_RESERVE_OUT, Some(0), PR_OUT_USAGE),
    sup!(PERSISTENT_RESERVE_OUT, Some(1), PR_OUT_USAGE),
    sup!(PERSISTENT_RESERVE_OUT, Some(2), PR_OUT_USAGE),
    sup!(PERSISTENT_RESERVE_OUT, Some(3), PR_OUT_USAGE),
    sup!(PERSISTENT_RESERVE_OUT, Some(4), PR_OUT_USAGE),
    sup!(PERSISTENT_RESERVE_OUT, Some(5), PR_OUT_USAGE),
    sup!(PERSISTENT_RESERVE_OUT, Some(6), PR_OUT_USAGE),
    sup!(READ_16, None, block16(READ_16, 0x18)),
    sup!(
        COMPARE_AND_WRITE,
        None,
        [0x89, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0xff, 0x1f, 0x03]
    ),
    sup!(WRITE_16, None, block16(WRITE_16, 0x18)),
    sup!(WRITE_VERIFY_16, None, block16(WRITE_VERIFY_16, 0x12)),
    sup!(VERIFY_16, None, block16(VERIFY_16, 0x12)),
    sup!(PRE_FETCH_16, None, block16(PRE_FETCH_16, 0x02)),
    sup!(
        SYNCHRONIZE_CACHE_16,
        None,
        block16(SYNCHRONIZE_CACHE_16, 0x02)
    ),
    sup!(WRITE_SAME_16, None, block16(WRITE_SAME_16, 0x19)),
    sup!(
        SERVICE_ACTION_IN_16,
        Some(SA_READ_CAPACITY_16 as u16),
        [0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0x03]
    ),
    sup!(
        SERVICE_ACTION_IN_16,
        Some(SA_GET_LBA_STATUS as u16),
        [
            0x9e, 0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,
            0x03
        ]
    ),
    sup!(
        REPORT_LUNS,
        None,
        [0xa0, 0, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0x03]
    ),
    sup!(
        MAINTENANCE_IN,
        Some(SA_REPORT_SUPPORTED_OPCODES as u16),
        [0xa3, 0x0c, 0x87, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0x03]
    ),
    sup!(READ_12, None, block12(READ_12, 0x18)),
    sup!(WRITE_12, None, block12(WRITE_12, 0x18)),
    sup!(WRITE_VERIFY_12, None, block12(WRITE_VERIFY_12, 0x12)),
    sup!(VERIFY_12, None, block12(VERIFY_12, 0x12)),
];

fn has_sa(op: u8) -> bool {
    SUPPORTED.iter().any(|s| s.opcode == op && s.sa.is_some())
}

/// REPORT SUPPORTED OPERATION CODES: reporting option 0 (all commands), 1 (one opcode
/// without service action), 2 (one opcode with service action), 3 (either).
pub fn report_supported_opcodes(r: &Rsoc) -> Result<Vec<u8>, Sense> {
    // Command timeouts descriptor (RCTD): 12 bytes, no timeouts given.
    let timeouts: &[u8] = &[0, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut d = Vec::new();
    match r.options {
        0 => {
            d.extend_from_slice(&[0; 4]);
            for s in SUPPORTED {
                d.push(s.opcode);
                d.push(0);
                d.extend_from_slice(&s.sa.unwrap_or(0).to_be_bytes());
                d.push(0);
                d.push(if s.sa.is_some() { 0x01 } else { 0 } | if r.rctd { 0x02 } else { 0 });
                d.extend_from_slice(&(s.usage.len() as u16).to_be_bytes());
                if r.rctd {
                    d.extend_from_slice(timeouts);
                }
            }
            let n = (d.len() - 4) as u32;
            d[0..4].copy_from_slice(&n.to_be_bytes());
        }
        1..=3 => {
            if r.options == 1 && has_sa(r.opcode) {
                return Err(Sense::cdb_field(2));
            }
            if r.options == 2 && !has_sa(r.opcode) {
                return Err(Sense::cdb_field(2));
            }
            let found = SUPPORTED
                .iter()
                .find(|s| s.opcode == r.opcode && (s.sa.is_none() || s.sa == Some(r.sa)));
            d.extend_from_slice(&[0, 0]);
            match found {
                Some(s) => {
                    d[1] = 0x03 | if r.rctd { 0x80 } else { 0 }; // SUPPORT: supported
                    d.extend_from_slice(&(s.usage.len() as u16).to_be_bytes());
                    d.extend_from_slice(s.usage);
                    if r.rctd {
                        d.extend_from_slice(timeouts);
                    }
                }
                None => {
                    d[1] = 0x01; // SUPPORT: not supported
                    d.extend_from_slice(&[0, 0]);
                }
            }
        }
        _ => return Err(Sense::cdb_field(2)),
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::super::inquiry::test_unit;
    use super::*;

    #[test]
    fn capacity_and_luns() {
        let u = test_unit();
        let rc = read_capacity_10(&u);
        assert_eq!(rc, [0, 0x0f, 0xff, 0xff, 0, 0, 2, 0]);
        let rc = read_capacity_16(&u);
        assert_eq!((rc.len(), rc[13], rc[14]), (32, 3, 0xc0));
        let l = report_luns(&[0, 3], 0, 16).unwrap();
        assert_eq!(l.len(), 24);
        assert_eq!(&l[0..4], &[0, 0, 0, 16]);
        assert_eq!(&l[16..18], &[0, 3]);
        assert!(report_luns(&[0], 0, 15).is_err());
        assert!(report_luns(&[0], 0x10, 64).is_err());
    }

    #[test]
    fn unmap_parameter_lists() {
        let mut p = vec![0, 22, 0, 16, 0, 0, 0, 0];
        p.extend_from_slice(&5u64.to_be_bytes());
        p.extend_from_slice(&8u32.to_be_bytes());
        p.extend_from_slice(&[0; 4]);
        assert_eq!(
            unmap_list(&p, 4).unwrap(),
            [UnmapRange { lba: 5, blocks: 8 }]
        );
        assert!(unmap_list(&p, 0).is_err());
        assert!(unmap_list(&p[..20], 4).is_err());
        assert!(unmap_list(&[0, 1], 4).is_err());
        assert_eq!(unmap_list(&[], 4).unwrap(), []);
    }

    #[test]
    fn supported_opcodes_cover_the_decoder() {
        for s in SUPPORTED {
            let mut cdb = [0u8; 16];
            cdb[0] = s.opcode;
            if let Some(sa) = s.sa {
                cdb[1] = sa as u8; // every service action here is in byte 1
            }
            // A command the table lists is never "invalid opcode".
            let r = super::super::cdb::decode(&cdb);
            assert!(
                r.as_ref().err().map(|e| e.asc) != Some(super::super::sense::INVALID_OPCODE),
                "{:#x}",
                s.opcode
            );
            assert_eq!(s.usage[0], s.opcode);
            assert_eq!(s.usage.len(), super::super::cdb::cdb_len(s.opcode));
        }
        let all = report_supported_opcodes(&Rsoc {
            rctd: false,
            options: 0,
            opcode: 0,
            sa: 0,
            alloc: 65535,
        })
        .unwrap();
        assert_eq!(all.len(), 4 + 8 * SUPPORTED.len());
        let one = report_supported_opcodes(&Rsoc {
            rctd: false,
            options: 1,
            opcode: 0x28,
            sa: 0,
            alloc: 64,
        })
        .unwrap();
        assert_eq!((one[1] & 7, one[3]), (3, 10));
    }
}
