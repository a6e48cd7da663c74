//! Admission of single requests on a flow for clients that are not NBD connections (S3
//! buckets): "may this request start now, and if not, wait until it may".
//!
//! * **Ceilings only:** the flow's pacer computes the start time on arrival
//!   ([`Scheduler::admit`]); the request sleeps until then (a start due within 1 ms goes
//!   at once, like the NBD path: timer granularity shifts single requests, never the rate).
//! * **Emulated controller:** the gate registers with the controller once, like one NBD
//!   connection, and multiplexes every waiting request over it: each is queued as a
//!   ticket ([`Scheduler::submit`]), the controller dispatches in mClock order and a router
//!   task hands each grant to the request waiting for it.
//!
//! A request is one operation carrying its payload bytes: the flow's IOPS ceiling counts
//! requests, its MB/s ceiling counts bytes, and under a controller the request costs
//! `max(1, bytes / cost unit)` of the node's capacity like an NBD request of that size.

use qos_core::Direction;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::node::Node;
use crate::scheduler::{Grant, Ticket, NO_FLOW};
use crate::stats::Waits;

/// Requests due within this much of now start at once (tokio's timers tick in ms).
const TIMER_SLACK_NS: u64 = 1_000_000;

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<Grant>>>>;

/// The gate of a node's non-NBD flows.
pub struct FlowGate {
    node: Arc<Node>,
    ctl: Option<Ctl>,
}

struct Ctl {
    conn: u32,
    next_seq: AtomicU64,
    waiters: Waiters,
    router: tokio::task::JoinHandle<()>,
}

impl Drop for FlowGate {
    fn drop(&mut self) {
        if let Some(c) = &self.ctl {
            c.router.abort();
            self.node.scheduler.unregister(c.conn);
        }
    }
}

impl FlowGate {
    /// A gate over `node`'s scheduler. Call inside a tokio runtime (under a controller it
    /// spawns the router task).
    pub fn new(node: Arc<Node>) -> FlowGate {
        let ctl = node.scheduler.register().map(|(conn, mut rx)| {
            let waiters: Waiters = Arc::default();
            let w = waiters.clone();
            let router = tokio::spawn(async move {
                while let Some(g) = rx.recv().await {
                    let tx = w.lock().unwrap_or_else(|p| p.into_inner()).remove(&g.seq);
                    if let Some(tx) = tx {
                        // The request may have gone away (client disconnected): its grant
                        // is simply dropped.
                        let _ = tx.send(g);
                    }
                }
            });
            Ctl {
                conn,
                next_seq: AtomicU64::new(1),
                waiters,
                router,
            }
        });
        FlowGate { node, ctl }
    }

    /// Wait until a request of `bytes` on `flow` may start; returns how long it waited
    /// and for what. A flow of [`NO_FLOW`] never waits.
    pub async fn admit(&self, flow: u32, bytes: u64) -> Waits {
        if flow == NO_FLOW {
            return Waits::default();
        }
        let sched = &self.node.scheduler;
        let clock = self.node.clock;
        let now = clock.now();
        let Some(ctl) = &self.ctl else {
            // Counted as the node counts (`io_accounting`: one operation by default).
            let start = sched.admit(flow, now, sched.milliops(bytes), bytes);
            if start > now + TIMER_SLACK_NS {
                tokio::time::sleep_until(clock.instant(start)).await;
            }
            return Waits {
                ceiling_ns: start.saturating_sub(now),
                floor_ns: 0,
            };
        };
        let seq = ctl.next_seq.fetch_add(1, Relaxed);
        let (tx, rx) = oneshot::channel();
        ctl.waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(seq, tx);
        let ticket = Ticket {
            conn: ctl.conn,
            seq,
        };
        // A request carrying a payload writes it; one without reads (the array model's
        // cost by direction).
        let dir = if bytes > 0 {
            Direction::Write
        } else {
            Direction::Read
        };
        if !sched.submit(flow, ticket, dir, bytes, now) {
            // The flow went away (policy change): nothing to wait for.
            ctl.waiters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&seq);
            return Waits::default();
        }
        sched.pump(now);
        let Ok(grant) = rx.await else {
            return Waits::default();
        };
        let done = clock.now();
        let limit_at = grant.limit_at.clamp(now, done);
        Waits {
            ceiling_ns: limit_at - now,
            floor_ns: done - limit_at,
        }
    }
}
