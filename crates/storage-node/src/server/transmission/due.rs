//! What a connection does with the requests it holds once their time comes: those the
//! controller granted go through the array's service latency (`serve`, `run_served`), those
//! deferred by a ceiling or by the provisioned file system's resources run when due
//! (`run_due`), their queue time split between ceiling, floor and resource waits.

use std::cmp::Reverse;

use nbd_proto::{Request, ESHUTDOWN};
use qos_core::Nanos;

use super::{charged, Conn, SHUTDOWN_GRACE_NS, TIMER_SLACK_NS};
use crate::server::queued::Deferred;
use crate::stats::Waits;

impl Conn {
    /// Controller mode: execute a request QoS and the file system's resources released,
    /// after the array's service latency if it has one.
    pub(super) fn serve(
        &mut self,
        req: Request,
        payload: Vec<u8>,
        arrival: Nanos,
        waits: Waits,
        seq: u64,
    ) {
        let service = charged(&req).map_or(0, |(dir, bytes)| {
            self.node.scheduler.service_latency(dir, bytes)
        });
        if service == 0 {
            self.execute(req, &payload, arrival, waits);
            return;
        }
        let now = self.node.clock.now();
        self.serving.push(Reverse(Deferred {
            at: now.saturating_add(service),
            seq,
            arrival,
            qos_until: now,
            req,
            payload,
            waits: Some(waits),
        }));
    }

    /// Execute every request whose service latency has passed, or passes within `advance`
    /// (the service timer's learned wake-up lateness: the reply then leaves on time on
    /// average instead of one wake-up late).
    pub(super) fn run_served(&mut self, advance: Nanos) {
        if self.serving.is_empty() {
            return;
        }
        let now = self.node.clock.now().saturating_add(advance);
        while self.serving.peek().is_some_and(|d| d.0.at <= now) {
            let Some(Reverse(d)) = self.serving.pop() else {
                break;
            };
            self.execute(d.req, &d.payload, d.arrival, d.waits.unwrap_or_default());
        }
    }

    /// Execute every parked request whose time has come.
    pub(super) fn run_due(&mut self, shutdown_at: Option<Nanos>) {
        if self.deferred.is_empty() && (shutdown_at.is_none() || self.waiting.is_empty()) {
            return;
        }
        let now = self.node.clock.now();
        let give_up = shutdown_at.is_some_and(|t| now >= t + SHUTDOWN_GRACE_NS);
        if give_up && !self.waiting.is_empty() {
            let mut cookies: Vec<u64> = self.waiting.drain().map(|(_, p)| p.req.cookie).collect();
            cookies.sort_unstable();
            for cookie in cookies {
                self.error(cookie, ESHUTDOWN, "node is shutting down");
            }
        }
        if self.deferred.is_empty() {
            return;
        }
        while let Some(Reverse(d)) = self.deferred.peek() {
            if d.at > now + TIMER_SLACK_NS && !give_up {
                break;
            }
            let Some(Reverse(d)) = self.deferred.pop() else {
                break;
            };
            if d.at > now + TIMER_SLACK_NS {
                self.error(d.req.cookie, ESHUTDOWN, "node is shutting down");
                continue;
            }
            // Waited since QoS released it: the provisioned file system's resources.
            let total = now.saturating_sub(d.arrival);
            let resource_ns = now.saturating_sub(d.qos_until.max(d.arrival)).min(total);
            if resource_ns > 0 {
                self.vol
                    .stats
                    .resource_wait_ns
                    .fetch_add(resource_ns, std::sync::atomic::Ordering::Relaxed);
            }
            match d.waits {
                // Controller mode: the grant split its queue time; the array's service
                // latency (if any) is still to come.
                Some(waits) => self.serve(d.req, d.payload, d.arrival, waits, d.seq),
                None => {
                    let waits = Waits {
                        ceiling_ns: total - resource_ns,
                        floor_ns: 0,
                    };
                    self.execute(d.req, &d.payload, d.arrival, waits);
                }
            }
        }
    }
}
