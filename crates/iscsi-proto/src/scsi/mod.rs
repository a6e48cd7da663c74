//! The SCSI layer of a block target: CDBs in ([`cdb`]), sense data for refusals
//! ([`sense`]), the data-in payloads built from a description of the logical unit
//! ([`Unit`]; [`inquiry`], [`data`], [`mode`]), and persistent reservations as a pure
//! state machine ([`pr`]).

pub mod cdb;
pub mod data;
pub mod inquiry;
pub mod mode;
pub mod pr;
pub mod sense;

pub use cdb::{Command, Dir};
pub use sense::{status, Sense};

/// What a logical unit is, as INQUIRY, READ CAPACITY and MODE SENSE describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// T10 vendor identification (8 ASCII bytes, space padded).
    pub vendor: String,
    /// Product identification (16 ASCII bytes).
    pub product: String,
    /// Product revision level (4 ASCII bytes).
    pub revision: String,
    /// Unit serial number (VPD 0x80), printable ASCII.
    pub serial: String,
    /// The NAA designator's 60-bit value (VPD 0x83, NAA 3 "locally assigned").
    pub naa_id: u64,
    /// Logical block size in bytes (512 or 4096).
    pub block_size: u32,
    /// Number of logical blocks.
    pub blocks: u64,
    /// log2(logical blocks per physical block).
    pub lbppbe: u8,
    /// Thin provisioned: UNMAP and WRITE SAME with UNMAP deallocate (LBPME).
    pub thin: bool,
    /// Deallocated blocks read as zeroes (LBPRZ).
    pub lbprz: bool,
    /// Write protected (MODE SENSE's WP bit; writes get DATA PROTECT).
    pub read_only: bool,
    /// A volatile write cache: WCE=1, SYNCHRONIZE CACHE and FUA make writes durable.
    pub write_cache: bool,
    pub limits: Limits,
}

/// The Block Limits VPD page (0xB0), in logical blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_transfer: u32,
    pub optimal_transfer: u32,
    pub max_compare_and_write: u8,
    pub max_unmap_lba_count: u32,
    pub max_unmap_descriptors: u32,
    pub max_write_same: u64,
}

impl Unit {
    /// The last LBA, READ CAPACITY's answer.
    pub fn last_lba(&self) -> u64 {
        self.blocks.saturating_sub(1)
    }

    /// Logical blocks per physical block.
    pub fn lbppb(&self) -> u32 {
        1 << self.lbppbe
    }

    /// Whether `blocks` blocks from `lba` lie within the unit (SBC-3 §4.5: LBA plus
    /// length must not exceed the capacity; zero blocks at the capacity are in range).
    pub fn in_range(&self, lba: u64, blocks: u64) -> bool {
        lba.checked_add(blocks)
            .is_some_and(|end| end <= self.blocks)
    }
}

/// Writes `s` into `dst`, padded with spaces (ASCII fields of INQUIRY data).
pub(crate) fn ascii_field(dst: &mut [u8], s: &str) {
    dst.fill(b' ');
    for (d, c) in dst
        .iter_mut()
        .zip(s.bytes().filter(|c| (0x20..0x7f).contains(c)))
    {
        *d = c;
    }
}

/// Appends `data` truncated to the allocation length the CDB gave (SPC-4 §4.2.5.6:
/// a shorter allocation length truncates, it is never an error).
pub fn truncate(mut data: Vec<u8>, alloc: u32) -> Vec<u8> {
    data.truncate(alloc as usize);
    data
}

/// LUN numbers in the 8-byte LUN field (SAM-5 §4.7): peripheral device addressing below
/// 256, flat space addressing up to 16383.
pub mod lun {
    pub const MAX: u16 = 16383;

    pub fn encode(lun: u16) -> u64 {
        let lun = lun.min(MAX);
        let (a, b) = if lun < 256 {
            (0u8, lun as u8)
        } else {
            (0x40 | (lun >> 8) as u8, lun as u8)
        };
        u64::from_be_bytes([a, b, 0, 0, 0, 0, 0, 0])
    }

    /// The LUN an 8-byte field names, if it is a single-level LUN this target can have.
    pub fn decode(field: u64) -> Option<u16> {
        let b = field.to_be_bytes();
        if b[2..].iter().any(|&x| x != 0) {
            return None;
        }
        match b[0] >> 6 {
            0 if b[0] == 0 => Some(b[1] as u16),
            1 => Some(((b[0] & 0x3f) as u16) << 8 | b[1] as u16),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lun_addressing() {
        for n in [0u16, 1, 255, 256, 4095, 16383] {
            assert_eq!(lun::decode(lun::encode(n)), Some(n), "{n}");
        }
        assert_eq!(lun::encode(1), 0x0001_0000_0000_0000);
        assert_eq!(lun::encode(256), 0x4100_0000_0000_0000);
        assert_eq!(lun::decode(0x0001_0000_0000_0001), None);
        assert_eq!(lun::decode(0x8001_0000_0000_0000), None);
    }
}
