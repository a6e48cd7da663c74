//! What a SCSI command produced ([`Reply`]) and the checks every command family shares
//! (CHECK CONDITION with a sense code, the LBA range, a writable LU).

use iscsi_proto::pdu::target::Residual;
use iscsi_proto::scsi::sense::{self, Sense};

use crate::lu::LogicalUnit;

/// What a command produced.
pub enum Reply {
    /// GOOD with a (small) data-in payload, already truncated to the allocation length.
    Good(Vec<u8>),
    /// GOOD; the Data-In PDUs before `bytes` were sent, `bytes` holds the last ones with
    /// the status in the one at `at`.
    Tail {
        bytes: Vec<u8>,
        at: usize,
        residual: Residual,
    },
    /// GOOD; data (if any) was streamed; a SCSI Response follows.
    Streamed,
    /// A status without sense data (RESERVATION CONFLICT).
    Status(u8),
    Check(Sense),
}

pub(crate) fn check<T>(asc: sense::Asc) -> Result<T, Reply> {
    Err(Reply::Check(Sense::new(asc)))
}

/// The range check of SBC-3 §4.5: LBA OUT OF RANGE when the range ends past the
/// capacity (so zero blocks at the capacity itself are in range, as UNMAP needs).
pub(crate) fn in_range(lu: &LogicalUnit, lba: u64, blocks: u64) -> Result<(), Reply> {
    if !lu.unit().in_range(lba, blocks) {
        return check(sense::LBA_OUT_OF_RANGE);
    }
    Ok(())
}

/// Writes need a writable LU.
pub(crate) fn writable(lu: &LogicalUnit) -> Result<(), Reply> {
    if lu.caps.can_write {
        Ok(())
    } else {
        check(sense::WRITE_PROTECTED)
    }
}
