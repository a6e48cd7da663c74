//! A precise timer for the emulated array: connections wait out a request's service
//! latency on it.
//!
//! tokio's timers tick in milliseconds: a 785 µs wait becomes 1–2 ms, which would make
//! an emulated array's latency a property of the timer wheel. A `timerfd` (an hrtimer,
//! nanosecond resolution) registered with tokio's reactor wakes the waiting task
//! through epoll instead, within tens of microseconds, without a thread or spinning.
//!
//! Waking a sleeping task still takes time: the kernel must schedule the worker thread
//! and tokio the task (60-200 µs on a busy 2-core machine). A timer made for service
//! latency learns that lateness (a moving average of how late its wake-ups were) and
//! [`PreciseTimer::advance`] tells its owner how much earlier to act, so replies leave at
//! the configured time on average rather than one wake-up later.
//!
//! On tokio's paused clock (virtual-time tests) a timerfd would run on the real clock, so
//! the scheduler can be told to use tokio's timer ([`crate::Scheduler::use_tokio_timers`]);
//! each wait then rounds up to the next millisecond tick.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use qos_core::Nanos;
use tokio::io::unix::AsyncFd;

use crate::clock::Clock;

/// The most a timer may run early to make up for its wake-up lateness.
const MAX_ADVANCE_NS: Nanos = 250_000;

pub(crate) struct PreciseTimer {
    precise: bool,
    fd: Option<AsyncFd<OwnedFd>>,
    /// Learn the wake-up lateness and wake that much early.
    learns: bool,
    /// Moving average of the lateness of recent wake-ups (ns), at most MAX_ADVANCE_NS.
    advance: Nanos,
    /// The instant the timerfd is armed for and has not fired yet: waiting for it again
    /// (the caller's loop polls a fresh future every iteration) costs no system call.
    armed: Option<Nanos>,
}

impl PreciseTimer {
    /// A timer waking exactly when asked (as exactly as the machine allows).
    pub(crate) fn new(precise: bool) -> PreciseTimer {
        PreciseTimer {
            precise,
            fd: None,
            learns: false,
            advance: 0,
            armed: None,
        }
    }

    /// A timer that learns its wake-up lateness and wakes that much early
    /// ([`advance`](Self::advance)); on tokio's timer it never does.
    pub(crate) fn compensating(precise: bool) -> PreciseTimer {
        PreciseTimer {
            learns: precise,
            ..PreciseTimer::new(precise)
        }
    }

    /// How early [`wait_until`](Self::wait_until) returns: what is due within this much
    /// of now is due now.
    pub(crate) fn advance(&self) -> Nanos {
        self.advance
    }

    /// Wait until `at` (less [`advance`](Self::advance)) on the node's clock.
    pub(crate) async fn wait_until(&mut self, clock: Clock, at: Nanos) {
        let at = at.saturating_sub(self.advance);
        if self.precise && self.fd.is_none() {
            match timerfd() {
                Ok(fd) => self.fd = Some(fd),
                Err(e) => {
                    tracing::warn!(
                        "timerfd unavailable ({e}); the emulated array uses tokio's 1 ms timer"
                    );
                    self.precise = false;
                    self.learns = false;
                    self.advance = 0;
                }
            }
        }
        let Some(fd) = self.fd.as_ref().filter(|_| self.precise) else {
            tokio::time::sleep_until(clock.instant(at)).await;
            return;
        };
        loop {
            let now = clock.now();
            if now >= at {
                return;
            }
            if self.armed != Some(at) {
                // A stale expiration from an earlier, abandoned wait must not end this one.
                let _ = read_expirations(fd.get_ref());
                if let Err(e) = arm(fd.get_ref(), at - now) {
                    tracing::warn!("timerfd_settime: {e}; falling back to tokio's timer");
                    self.precise = false;
                    self.armed = None;
                    tokio::time::sleep_until(clock.instant(at)).await;
                    return;
                }
                self.armed = Some(at);
            }
            match fd.readable().await {
                Ok(mut guard) => {
                    if read_expirations(fd.get_ref()).is_err() {
                        guard.clear_ready();
                    } else {
                        self.armed = None;
                        if self.learns {
                            // How late this wake-up came; 1/8 of it moves the average.
                            let late = clock.now().saturating_sub(at).min(MAX_ADVANCE_NS);
                            self.advance = (self.advance * 7 + late) / 8;
                        }
                    }
                }
                Err(_) => {
                    tokio::time::sleep_until(clock.instant(at)).await;
                    return;
                }
            }
        }
    }
}

fn timerfd() -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: plain syscall; the returned descriptor is owned by the OwnedFd below.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open and the same for
    // the AsyncFd's whole life and is closed only when it is dropped.
    Ok(unsafe { AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) }?)
}

/// Arm the timer to expire once, `ns` (> 0) from now.
fn arm(fd: &OwnedFd, ns: Nanos) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000).max(1) as libc::c_long,
        },
    };
    // SAFETY: `spec` is a valid itimerspec; the old value is not requested.
    let r = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Consume the expiration count (EAGAIN when the timer has not expired).
fn read_expirations(fd: &OwnedFd) -> io::Result<u64> {
    let mut buf = [0u8; 8];
    // SAFETY: reading 8 bytes into an 8-byte buffer.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    if n == 8 {
        Ok(u64::from_ne_bytes(buf))
    } else {
        Err(io::Error::last_os_error())
    }
}
