//! Wiring between volumes and the QoS core: the node-wide scheduler.
//!
//! Each rate-limited volume (or shared fixed policy group) is a *flow* owning a
//! [`Pacer`] (its ceiling). Unlimited volumes have no flow and never touch the lock.
//! This is the seam where mClock goes: floors need a node-wide view of all flows, which
//! this one structure already has.

use std::sync::Mutex;

use qos_core::{Nanos, Pacer, Rate};

/// Flow id of a volume without a ceiling.
pub const NO_FLOW: u32 = u32::MAX;

/// The node-wide scheduler: one lock, one table of flows.
#[derive(Default)]
pub struct Scheduler {
    flows: Mutex<Vec<Option<Pacer>>>,
}

impl Scheduler {
    /// Allocate a flow with the given ceiling; returns its id.
    pub fn create_flow(&self, ceiling: Rate) -> u32 {
        let mut flows = self.lock();
        let pacer = Some(Pacer::new(ceiling));
        if let Some(i) = flows.iter().position(Option::is_none) {
            flows[i] = pacer;
            i as u32
        } else {
            flows.push(pacer);
            (flows.len() - 1) as u32
        }
    }

    /// Change a flow's ceiling in place (live policy changes).
    pub fn set_ceiling(&self, flow: u32, ceiling: Rate, now: Nanos) {
        if let Some(Some(p)) = self.lock().get_mut(flow as usize) {
            p.set_ceiling(ceiling, now);
        }
    }

    pub fn remove_flow(&self, flow: u32) {
        if let Some(slot) = self.lock().get_mut(flow as usize) {
            *slot = None;
        }
    }

    /// When may a request costing `ops` and `bytes` on `flow`, arriving at `now`, start?
    pub fn admit(&self, flow: u32, now: Nanos, ops: u64, bytes: u64) -> Nanos {
        if flow == NO_FLOW {
            return now;
        }
        match self.lock().get_mut(flow as usize) {
            Some(Some(p)) => p.admit(now, ops, bytes),
            _ => now,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Pacer>>> {
        // A panic while holding this lock would be a bug in the pacer arithmetic; the
        // table itself stays consistent, so keep serving.
        self.flows.lock().unwrap_or_else(|p| p.into_inner())
    }
}
