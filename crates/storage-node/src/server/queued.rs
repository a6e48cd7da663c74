//! Requests a connection holds: deferred to a start time (a ceiling's, the provisioned
//! file system's resources', or the array's service latency) or parked in the emulated
//! controller until it grants them.

use nbd_proto::Request;
use qos_core::Nanos;

use crate::stats::Waits;

/// A request waiting for its QoS start time, or (controller mode) for the array's
/// service latency to pass.
pub(super) struct Deferred {
    pub(super) at: Nanos,
    pub(super) seq: u64,
    pub(super) arrival: Nanos,
    /// When QoS (the ceiling, or the controller's grant) released it: later waiting is for
    /// the provisioned file system's resources (or the array's service latency).
    pub(super) qos_until: Nanos,
    pub(super) req: Request,
    pub(super) payload: Vec<u8>,
    /// Queue time already split by the controller (service latency); `None`: all of the
    /// wait until `at` is the ceiling's (ceilings-only mode).
    pub(super) waits: Option<Waits>,
}

impl PartialEq for Deferred {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Deferred {}
impl PartialOrd for Deferred {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Deferred {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A request queued in the emulated controller, waiting for its grant.
pub(super) struct Parked {
    pub(super) arrival: Nanos,
    pub(super) req: Request,
    pub(super) payload: Vec<u8>,
}
