//! [`Driver`]: the one piece of tokio around an admission core, the same for every front
//! end. It knows when its core next needs attention and sleeps until then:
//!
//! * a held request's release: tokio's timer, woken [`TIMER_SLACK_NS`] early (the core
//!   releases what is due within the slack);
//! * a held reply's time: the precise timer, which learns its wake-up lateness and makes
//!   the core let replies go that much early ([`Admission::set_early`]);
//! * a grant another connection (or the dispatcher) put in the core's mailbox;
//! * a deadline of the front end's own (e.g. NBD's shutdown grace).
//!
//! Its loop, wherever it runs (NBD's connection task, a [`Gate`](super::Gate)'s task):
//!
//! ```text
//! let now = driver.turn(&mut core);       // grants in, pump, learned lateness
//! while let Some(r) = core.take_ready(now) { /* run it */ }
//! while let Some((reply, done)) = core.take_reply(now) { /* send it */ }
//! driver.arm(&core);                      // remember what to wake for
//! select! { _ = driver.wait(None) => {}, /* the front end's own events */ }
//! ```
//!
//! The first driver on a node with an emulated controller also starts the node's
//! dispatcher: a task that pumps the controller when its next tag falls due and no
//! connection does.

use std::future::poll_fn;
use std::sync::{Arc, Weak};
use std::task::Poll;

use qos_core::Nanos;

use super::{Admission, Gates, TIMER_SLACK_NS};
use crate::clock::Clock;
use crate::scheduler::{GrantRx, Scheduler};
use crate::timer::PreciseTimer;

/// Drives one admission core (see the module).
pub struct Driver {
    clock: Clock,
    grants: Option<GrantRx>,
    /// Held replies wake on it.
    timer: PreciseTimer,
    /// When the core next releases a request; when its next held reply is due; whether it
    /// waits for grants (as of the last [`arm`](Self::arm)).
    release: Option<Nanos>,
    reply: Option<Nanos>,
    parked: bool,
}

impl Driver {
    /// A core over `gates` and its driver (inside a tokio runtime: it may start the
    /// node's dispatcher).
    pub fn new<T, R>(gates: Gates, clock: Clock) -> (Admission<T, R>, Driver) {
        let precise = gates.scheduler.precise_timers();
        if gates.scheduler.claim_dispatcher() {
            tokio::spawn(dispatcher(Arc::downgrade(&gates.scheduler), clock));
        }
        let (core, grants) = Admission::new(gates);
        let driver = Driver {
            clock,
            grants,
            timer: PreciseTimer::compensating(precise),
            release: None,
            reply: None,
            parked: false,
        };
        (core, driver)
    }

    /// The node's clock, now.
    pub fn now(&self) -> Nanos {
        self.clock.now()
    }

    /// Bring `core` up to now: the grants others dispatched for it, a pump if it took
    /// submissions (its own grants come back at once), the timer's learned lateness.
    /// Returns now: take what is ready and what replies are due.
    pub fn turn<T, R>(&mut self, core: &mut Admission<T, R>) -> Nanos {
        let now = self.clock.now();
        if let Some(rx) = &mut self.grants {
            while let Ok(g) = rx.try_recv() {
                core.on_grant(g, now);
            }
        }
        core.pump(now);
        core.set_early(self.timer.advance());
        now
    }

    /// Remember when `core` next needs its driver (after taking what was due).
    pub fn arm<T, R>(&mut self, core: &Admission<T, R>) {
        self.release = core.next_release();
        self.reply = core.next_reply();
        self.parked = core.parked() > 0;
    }

    /// Sleep until the armed core may have something due, or until `also` (the front
    /// end's own deadline, on the node's clock). Then [`turn`](Self::turn).
    pub async fn wait(&mut self, also: Option<Nanos>) {
        let clock = self.clock;
        let release = self.release.map(|at| at.saturating_sub(TIMER_SLACK_NS));
        let sleep_at = match (release, also) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let reply = self.reply;
        let Driver {
            grants,
            timer,
            parked,
            ..
        } = self;
        let grant = async {
            match grants.as_mut().filter(|_| *parked) {
                Some(rx) => poll_fn(|cx| rx.poll_ready(cx)).await,
                None => std::future::pending().await,
            }
        };
        let sleep = sleep_until_or_never(clock, sleep_at);
        tokio::select! {
            _ = grant => {}
            _ = sleep => {}
            _ = timer.wait_until(clock, reply.unwrap_or(0)), if reply.is_some() => {}
        }
    }
}

/// Sleeps until `at` on `clock` (tokio's timer); without a deadline, forever.
async fn sleep_until_or_never(clock: Clock, at: Option<Nanos>) {
    match at {
        Some(at) => tokio::time::sleep_until(clock.instant(at)).await,
        None => std::future::pending().await,
    }
}

/// Pumps the controller when its next deadline comes, so queued requests go out even
/// when no connection is submitting. Holds no strong reference while it sleeps; ends
/// when the scheduler is dropped. It sleeps on tokio's timer (1 ms ticks): the node budget
/// carries 5 ms and ceilings and floors may run 5 ms ahead of their tags, so a late
/// wake-up costs no rate, and a request below its ceiling never waits for it. (Waking
/// on the precise timer for every limit tag doubled the controller's CPU per request
/// and changed no latency once ceilings had the burst window.)
async fn dispatcher(s: Weak<Scheduler>, clock: Clock) {
    loop {
        let deadline = match s.upgrade() {
            Some(s) => s.dispatch(clock.now()),
            None => return,
        };
        let rearm = poll_fn(|cx| match s.upgrade() {
            Some(s) => s.poll_rearm(cx),
            None => Poll::Ready(()),
        });
        let sleep = sleep_until_or_never(clock, deadline);
        tokio::select! {
            _ = rearm => {}
            _ = sleep => {}
        }
    }
}
