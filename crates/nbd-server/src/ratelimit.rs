//! Rate-limited logging for events a client can cause at will (refused connections,
//! protocol errors): a burst per window, then a count of what was suppressed.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct LogLimiter {
    burst: u32,
    window: Duration,
    state: Mutex<(Instant, u32, u64)>,
}

impl LogLimiter {
    pub fn new(burst: u32, window: Duration) -> LogLimiter {
        LogLimiter {
            burst,
            window,
            state: Mutex::new((Instant::now(), 0, 0)),
        }
    }

    /// `Some(suppressed since the last admitted line)` if this line may be logged.
    pub fn admit(&self) -> Option<u64> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (start, logged, suppressed) = &mut *s;
        if now.duration_since(*start) >= self.window {
            *start = now;
            *logged = 0;
        }
        if *logged < self.burst {
            *logged += 1;
            Some(std::mem::take(suppressed))
        } else {
            *suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_per_window_then_a_count() {
        let l = LogLimiter::new(3, Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(l.admit_at(t0), Some(0));
        assert_eq!(l.admit_at(t0), Some(0));
        assert_eq!(l.admit_at(t0), Some(0));
        for _ in 0..1000 {
            assert_eq!(l.admit_at(t0 + Duration::from_secs(1)), None);
        }
        assert_eq!(l.admit_at(t0 + Duration::from_secs(11)), Some(1000));
        assert_eq!(l.admit_at(t0 + Duration::from_secs(11)), Some(0));
    }
}
