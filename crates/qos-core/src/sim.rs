//! A tiny discrete-event simulator for closed-loop clients, in virtual time.
//!
//! Used to check pacing accuracy without sleeping, and meant to be reused for
//! scheduler tests: the admission step is a closure, so anything that maps
//! `(now, ops, bytes)` to a dispatch time can be driven by it.

use std::collections::VecDeque;

use crate::Nanos;

/// One request leaving the QoS layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatch {
    /// Dispatch time.
    pub at: Nanos,
    /// Request size in bytes.
    pub bytes: u64,
}

/// A client keeping `queue_depth` requests of `block_size` bytes outstanding; each
/// completes `service_time` after dispatch and is immediately reissued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedLoop {
    /// Outstanding requests (at least 1 to do anything).
    pub queue_depth: usize,
    /// Bytes per request.
    pub block_size: u64,
    /// Time from dispatch to completion.
    pub service_time: Nanos,
}

impl ClosedLoop {
    /// The client's own maximum rate in requests per second (`queue_depth / service_time`);
    /// `None` when unbounded (zero service time).
    pub fn max_requests_per_sec(&self) -> Option<f64> {
        (self.service_time > 0).then(|| self.queue_depth as f64 * 1e9 / self.service_time as f64)
    }

    /// Runs the client from `start` (all requests issued at `start`) until `until`,
    /// calling `admit(now, 1, block_size)` for every request in arrival order. Records
    /// every dispatch before `until`, sorted by time.
    pub fn run<F>(&self, start: Nanos, until: Nanos, mut admit: F) -> Trace
    where
        F: FnMut(Nanos, u64, u64) -> Nanos,
    {
        // Pending arrival times, kept sorted (a ring buffer suffices when, as with a
        // pacer, dispatch times never decrease).
        let mut pending: VecDeque<Nanos> = VecDeque::from(vec![start; self.queue_depth]);
        let mut dispatches = Vec::new();
        while let Some(now) = pending.pop_front() {
            if now >= until {
                break;
            }
            let at = admit(now, 1, self.block_size);
            if at < until {
                dispatches.push(Dispatch {
                    at,
                    bytes: self.block_size,
                });
            }
            let next = at.saturating_add(self.service_time);
            match pending.back() {
                Some(&last) if last > next => {
                    let idx = pending.partition_point(|&t| t <= next);
                    pending.insert(idx, next);
                }
                _ => pending.push_back(next),
            }
        }
        Trace::new(dispatches)
    }
}

fn is_sorted(d: &[Dispatch]) -> bool {
    d.windows(2).all(|w| w[0].at <= w[1].at)
}

/// Dispatches recorded by a simulation, sorted by time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    dispatches: Vec<Dispatch>,
}

impl Trace {
    /// A trace from dispatches in any order.
    pub fn new(mut dispatches: Vec<Dispatch>) -> Self {
        if !is_sorted(&dispatches) {
            dispatches.sort_by_key(|d| d.at);
        }
        Self { dispatches }
    }

    /// Appends another trace (e.g. a later phase of the same flow).
    pub fn extend(&mut self, other: Trace) {
        self.dispatches.extend(other.dispatches);
        if !is_sorted(&self.dispatches) {
            self.dispatches.sort_by_key(|d| d.at);
        }
    }

    /// All dispatches, sorted by time.
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }

    fn range(&self, from: Nanos, to: Nanos) -> &[Dispatch] {
        let lo = self.dispatches.partition_point(|d| d.at < from);
        let hi = self.dispatches.partition_point(|d| d.at < to);
        &self.dispatches[lo..hi.max(lo)]
    }

    /// Requests dispatched in `[from, to)`.
    pub fn ops_between(&self, from: Nanos, to: Nanos) -> u64 {
        self.range(from, to).len() as u64
    }

    /// Bytes dispatched in `[from, to)`.
    pub fn bytes_between(&self, from: Nanos, to: Nanos) -> u64 {
        self.range(from, to).iter().map(|d| d.bytes).sum()
    }

    /// The most `(requests, bytes)` dispatched in any window `[t, t + window)` with `t >= from`
    /// (each maximised separately).
    pub fn max_in_window(&self, from: Nanos, window: Nanos) -> (u64, u64) {
        let d = self.range(from, Nanos::MAX);
        let (mut j, mut bytes, mut best_ops, mut best_bytes) = (0, 0u64, 0u64, 0u64);
        for (i, first) in d.iter().enumerate() {
            let end = first.at.saturating_add(window);
            while j < d.len() && d[j].at < end {
                bytes += d[j].bytes;
                j += 1;
            }
            best_ops = best_ops.max((j - i) as u64);
            best_bytes = best_bytes.max(bytes);
            bytes -= first.bytes;
        }
        (best_ops, best_bytes)
    }

    /// The longest time between consecutive dispatches within `[from, to)`.
    pub fn max_gap(&self, from: Nanos, to: Nanos) -> Nanos {
        self.range(from, to)
            .windows(2)
            .map(|w| w[1].at - w[0].at)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unthrottled_client_runs_at_its_own_rate() {
        let c = ClosedLoop {
            queue_depth: 4,
            block_size: 4096,
            service_time: 1_000,
        };
        let t = c.run(0, 1_000_000, |now, _, _| now);
        assert_eq!(t.ops_between(0, 1_000_000), 4_000);
        assert_eq!(t.bytes_between(0, 1_000_000), 4_000 * 4096);
        assert_eq!(c.max_requests_per_sec(), Some(4e6));
        assert_eq!(t.max_in_window(0, 1_000), (4, 4 * 4096));
        assert_eq!(t.max_gap(0, 1_000_000), 1_000);
    }

    #[test]
    fn out_of_order_admission_is_handled() {
        let c = ClosedLoop {
            queue_depth: 3,
            block_size: 1,
            service_time: 0,
        };
        let mut k = 0u64;
        // Alternating long and short delays: completions arrive out of dispatch order.
        let t = c.run(0, 1_000, |now, _, _| {
            k += 1;
            now + if k & 1 == 0 { 7 } else { 100 }
        });
        let times: Vec<_> = t.dispatches().iter().map(|d| d.at).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert!(!times.is_empty());
    }
}
