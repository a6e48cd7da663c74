//! Wiring between volumes and the QoS core: the node-wide scheduler.
//!
//! Two modes, fixed when the node starts:
//!
//! * **Ceilings only** (no node capacity declared): each rate-limited volume (or shared
//!   fixed policy group) is a *flow* owning a [`Pacer`]; a request's start time is
//!   computed when it arrives ([`Scheduler::admit`]). Unlimited volumes have no flow and
//!   never take the lock. The node runs at the backend's real speed; floors are reported
//!   but cannot be enforced (there is no capacity to divide).
//! * **Emulated controller** (`[capacity]` in node.toml, or `serve --calibrate`): every
//!   volume (or shared group) is a flow of one node-wide [`MClock`] whose budget is the
//!   declared capacity. Requests are queued ([`Scheduler::submit`]) and dispatched in
//!   mClock order ([`Scheduler::pump`]): floors first, then shares of what is left,
//!   ceilings always. A dispatched request is handed to its connection as a [`Grant`]
//!   through the channel the connection registered. Whoever submits pumps; a dispatcher
//!   task pumps when the next tag falls due and nobody else is around.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

use qos_core::{Burst, CreditStatus, FlowId, FlowSpec, MClock, Nanos, Pacer, Rate};
use tokio::sync::{mpsc, Notify};

use crate::clock::Clock;
use crate::config::{Capacity, Discipline};

/// Flow id of a volume without a flow (ceilings-only mode, no ceiling).
pub const NO_FLOW: u32 = u32::MAX;

/// Floors may run this far ahead of the controller's budget and of their own reservation
/// schedule: a floor's request never waits for the dispatcher's next timer tick (tokio's
/// timers tick in ms), and a client offering exactly its floor may be bursty by up to
/// this much (5 ms: the same tolerance ceilings have). Over longer windows neither the
/// capacity nor any floor changes.
pub const RESERVATION_LOOKAHEAD_NS: Nanos = 5_000_000;

/// What the scheduler needs to know about a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowQos {
    pub ceiling: Rate,
    pub floor: Rate,
    /// Share of what is left after floors (0 counts as 1).
    pub weight: u32,
    /// Burst credits over the ceiling (the ceiling is then the baseline).
    pub burst: Burst,
}

impl FlowQos {
    fn spec(&self) -> FlowSpec {
        FlowSpec {
            reservation: self.floor,
            limit: self.ceiling,
            weight: self.weight.max(1),
        }
    }
}

/// A queued request's identity: the connection that owns it and its sequence number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    pub conn: u32,
    pub seq: u64,
}

/// A dispatched request, sent to its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub seq: u64,
    /// When the flow's ceiling allowed it: queue time up to here is the ceiling's, the
    /// rest is the node's (others' floors and shares).
    pub limit_at: Nanos,
}

/// A snapshot of the emulated controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ControllerStatus {
    pub capacity: Capacity,
    /// Sum of the floors of all flows, as declared (FIFO: reported, not enforced).
    pub reserved: Rate,
    /// `Some(scale)` when floors exceed the capacity and are scaled by `scale`.
    pub overcommit: Option<f64>,
    /// Requests waiting in the controller right now.
    pub queued: usize,
}

/// The node-wide scheduler.
pub struct Scheduler {
    pacers: Mutex<Vec<Option<Pacer>>>,
    controller: Option<Arc<Controller>>,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler::new(None, Clock::new())
    }
}

/// The emulated controller: an mClock over the node's declared capacity.
pub struct Controller {
    inner: Mutex<Inner>,
    capacity: Capacity,
    clock: Clock,
    /// Wakes the dispatcher when an earlier deadline appears.
    wake: Arc<Notify>,
    /// The deadline the dispatcher sleeps towards (`u64::MAX`: none).
    armed: AtomicU64,
    dispatcher_started: std::sync::Once,
}

struct Inner {
    mc: MClock<Ticket>,
    /// Registered connections' grant channels, by connection id. Ids are never reused: a
    /// closed connection's tickets still in the queues must not reach a newer connection
    /// (whose sequence numbers start from 1 too).
    conns: HashMap<u32, mpsc::UnboundedSender<Grant>>,
    next_conn: u32,
}

impl Scheduler {
    /// A scheduler; with `capacity` it is an emulated controller (mClock).
    pub fn new(capacity: Option<Capacity>, clock: Clock) -> Scheduler {
        let controller = capacity.filter(Capacity::is_set).map(|cap| {
            Arc::new(Controller {
                inner: Mutex::new(Inner {
                    mc: match cap.discipline {
                        Discipline::Mclock => MClock::new(cap.rate(), cap.cost_unit)
                            .with_reservation_lookahead(RESERVATION_LOOKAHEAD_NS),
                        Discipline::Fifo => MClock::fifo(cap.rate(), cap.cost_unit),
                    },
                    conns: HashMap::new(),
                    next_conn: 0,
                }),
                capacity: cap,
                clock,
                wake: Arc::new(Notify::new()),
                armed: AtomicU64::new(u64::MAX),
                dispatcher_started: std::sync::Once::new(),
            })
        });
        Scheduler {
            pacers: Mutex::new(Vec::new()),
            controller,
        }
    }

    /// Is this an emulated controller (mClock, floors enforced)?
    pub fn controls(&self) -> bool {
        self.controller.is_some()
    }

    /// Does a volume with these limits need a flow? Under a controller every volume
    /// does (its I/O uses the node's capacity); otherwise only volumes with a ceiling.
    pub fn needs_flow(&self, q: &FlowQos) -> bool {
        self.controls() || q.ceiling != Rate::UNLIMITED
    }

    /// The controller's state for the API and metrics (`None`: ceilings-only mode).
    pub fn status(&self) -> Option<ControllerStatus> {
        let c = self.controller.as_ref()?;
        let inner = c.lock();
        Some(ControllerStatus {
            capacity: c.capacity,
            reserved: inner.mc.reserved(),
            overcommit: inner.mc.overcommit(),
            queued: inner.mc.queued(),
        })
    }

    /// Reservation scale factor when floors add up to more than the capacity.
    pub fn overcommit(&self) -> Option<f64> {
        self.controller
            .as_ref()
            .and_then(|c| c.lock().mc.overcommit())
    }

    /// Allocate a flow; returns its id.
    pub fn create_flow(&self, q: FlowQos, now: Nanos) -> u32 {
        if let Some(c) = &self.controller {
            let id = {
                let mut inner = c.lock();
                let id = inner.mc.add_flow(q.spec(), now);
                inner.mc.set_burst(id, q.burst, now);
                id
            };
            c.log_overcommit();
            return id.0;
        }
        let mut flows = lock(&self.pacers);
        let pacer = Some(Pacer::with_burst(q.ceiling, q.burst, now));
        if let Some(i) = flows.iter().position(Option::is_none) {
            flows[i] = pacer;
            i as u32
        } else {
            flows.push(pacer);
            (flows.len() - 1) as u32
        }
    }

    /// Change a flow's limits in place (live policy changes).
    pub fn set_flow(&self, flow: u32, q: FlowQos, now: Nanos) {
        if let Some(c) = &self.controller {
            let changed = {
                let mut inner = c.lock();
                let before = inner.mc.overcommit();
                inner.mc.set_flow(FlowId(flow), q.spec(), now);
                inner.mc.set_burst(FlowId(flow), q.burst, now);
                before != inner.mc.overcommit()
            };
            if changed {
                c.log_overcommit();
            }
            return;
        }
        if let Some(Some(p)) = lock(&self.pacers).get_mut(flow as usize) {
            p.set_limits(q.ceiling, q.burst, now);
        }
    }

    /// A flow's burst buckets at `now`: (IOPS, bytes); `None` where it does not burst (or
    /// there is no such flow).
    pub fn credits(&self, flow: u32, now: Nanos) -> (Option<CreditStatus>, Option<CreditStatus>) {
        if flow == NO_FLOW {
            return (None, None);
        }
        if let Some(c) = &self.controller {
            return c.lock().mc.credit_status(FlowId(flow), now);
        }
        match lock(&self.pacers).get(flow as usize) {
            Some(Some(p)) => p.credit_status(now),
            _ => (None, None),
        }
    }

    /// Remove a flow. Under a controller its queued requests are granted at once (the
    /// volume is moving to another policy or going away; they must not hang).
    pub fn remove_flow(&self, flow: u32) {
        if let Some(c) = &self.controller {
            let now = c.clock.now();
            let mut inner = c.lock();
            let dropped = inner.mc.remove_flow(FlowId(flow));
            for t in dropped {
                if let Some(tx) = inner.conns.get(&t.conn) {
                    let _ = tx.send(Grant {
                        seq: t.seq,
                        limit_at: now,
                    });
                }
            }
            return;
        }
        if let Some(slot) = lock(&self.pacers).get_mut(flow as usize) {
            *slot = None;
        }
    }

    /// Ceilings-only mode: when may a request costing `ops` and `bytes` on `flow`,
    /// arriving at `now`, start?
    pub fn admit(&self, flow: u32, now: Nanos, ops: u64, bytes: u64) -> Nanos {
        if flow == NO_FLOW {
            return now;
        }
        match lock(&self.pacers).get_mut(flow as usize) {
            Some(Some(p)) => p.admit(now, ops, bytes),
            _ => now,
        }
    }

    /// Controller mode: register a connection; its grants arrive on the receiver.
    pub fn register(&self) -> Option<(u32, mpsc::UnboundedReceiver<Grant>)> {
        let c = self.controller.as_ref()?;
        c.dispatcher_started.call_once(|| {
            tokio::spawn(dispatcher(Arc::downgrade(c), c.wake.clone(), c.clock));
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let mut inner = c.lock();
        let id = inner.next_conn;
        inner.next_conn = id.wrapping_add(1);
        inner.conns.insert(id, tx);
        Some((id, rx))
    }

    /// Controller mode: forget a connection and drop its queued tickets (a client that
    /// went away must not hold back the next one behind requests nobody waits for).
    pub fn unregister(&self, conn: u32) {
        if let Some(c) = &self.controller {
            let mut inner = c.lock();
            inner.conns.remove(&conn);
            inner.mc.retain(|t| t.conn != conn);
        }
    }

    /// Controller mode: queue a request of `bytes` on `flow`. `false` if the flow is gone.
    pub fn submit(&self, flow: u32, ticket: Ticket, bytes: u64, now: Nanos) -> bool {
        match &self.controller {
            Some(c) => c
                .lock()
                .mc
                .enqueue(FlowId(flow), ticket, bytes, now)
                .is_ok(),
            None => false,
        }
    }

    /// Controller mode: dispatch everything due at `now`, sending each grant to its
    /// connection, and re-arm the dispatcher for the next deadline.
    pub fn pump(&self, now: Nanos) {
        if let Some(c) = &self.controller {
            c.pump(now);
        }
    }
}

impl Controller {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    fn log_overcommit(&self) {
        match self.lock().mc.overcommit() {
            Some(f) => tracing::warn!(
                scale = format!("{f:.3}"),
                "floors add up to more than the node's capacity; every floor is scaled by this factor"
            ),
            None => tracing::debug!("floors fit the node's capacity"),
        }
    }

    /// Dispatch what is due; returns the next deadline.
    fn pump(&self, now: Nanos) -> Option<Nanos> {
        let next = {
            let mut inner = self.lock();
            let Inner { mc, conns, .. } = &mut *inner;
            // No look-ahead: dispatching early would spend the node's budget before a
            // floor's request arrives, which then waits for the next tick. Late wake-ups
            // lose nothing: the budget carries up to NODE_BURST.
            while let Some(d) = mc.dequeue(now) {
                if let Some(tx) = conns.get(&d.token.conn) {
                    // A connection that went away drops its grant; nothing to reply to.
                    let _ = tx.send(Grant {
                        seq: d.token.seq,
                        limit_at: d.limit_at,
                    });
                }
            }
            mc.next_wakeup(now)
        };
        let at = next.unwrap_or(u64::MAX);
        if at < self.armed.load(Relaxed) {
            self.armed.store(at, Relaxed);
            self.wake.notify_one();
        }
        next
    }
}

/// Pumps the controller when its next deadline comes, so queued requests go out even
/// when no connection is submitting. Holds no strong reference while it sleeps; ends
/// when the node is dropped.
async fn dispatcher(c: Weak<Controller>, wake: Arc<Notify>, clock: Clock) {
    loop {
        let deadline = {
            let Some(c) = c.upgrade() else { return };
            let next = c.pump(clock.now());
            c.armed.store(next.unwrap_or(u64::MAX), Relaxed);
            next
        };
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(clock.instant(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wake.notified() => {}
            _ = sleep => {}
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding this lock would be a bug in the QoS arithmetic; the tables
    // stay consistent, so keep serving.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
