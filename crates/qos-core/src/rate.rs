//! A rate in two dimensions (operations and bytes per second): what ceilings, floors,
//! bursts and capacities are made of. Its own module so the credit buckets and the vendors'
//! presets use it without depending on the effective-limit arithmetic (which uses them).

use crate::accounting::MILLI;

/// A rate in two dimensions. 0 in a dimension means unlimited (for a ceiling)
/// or no guarantee (for a floor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rate {
    /// Operations per second; 0 = unlimited / not set.
    pub iops: u64,
    /// Bytes per second; 0 = unlimited / not set.
    pub bytes_per_sec: u64,
}

impl Rate {
    /// No limit in either dimension.
    pub const UNLIMITED: Rate = Rate {
        iops: 0,
        bytes_per_sec: 0,
    };

    /// True when neither dimension is set.
    pub fn is_unlimited(&self) -> bool {
        self.iops == 0 && self.bytes_per_sec == 0
    }

    /// The same rate with its IOPS counted in thousandths of an operation ([`MILLI`]): the
    /// unit the node's pacers and mClock's buckets count in (as
    /// [`Burst::in_milliops`](crate::Burst::in_milliops) for a burst).
    pub fn in_milliops(self) -> Rate {
        Rate {
            iops: self.iops.saturating_mul(MILLI),
            bytes_per_sec: self.bytes_per_sec,
        }
    }
}
