//! The node's clock: tokio time, so tests can pause it, turned into the QoS core's
//! [`Nanos`]. The QoS core itself never reads a clock.

use qos_core::Nanos;
use tokio::time::{Duration, Instant};

/// Nanoseconds since the node started, on tokio's (pausable) clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            epoch: Instant::now(),
        }
    }

    pub fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    pub fn instant(&self, at: Nanos) -> Instant {
        self.epoch + Duration::from_nanos(at)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}
