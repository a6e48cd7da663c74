//! Busy-polling a connection's socket between batches (queue-depth-1 latency).

use std::io;
use std::os::unix::io::RawFd;
use std::time::Duration;

/// When to busy-poll. Spinning pays only when the client waits on us (queue depth ~1);
/// with deep queues it shrinks batches (one syscall per request instead of per ten) and
/// costs more than it saves. The decision uses the batch sizes epoll delivers (a moving
/// average), never those the spin itself catches — except to notice a deeper queue — and
/// falls back to epoll periodically to re-sample.
pub(super) struct SpinPolicy {
    /// Moving average of requests per epoll wake-up, in 1/16ths.
    avg16: u32,
    /// Whether the last batch handled anything (idle connections never spin).
    last_active: bool,
    spins_since_sample: u32,
}

impl Default for SpinPolicy {
    fn default() -> Self {
        // Start as if batches were deep: spin only once QD1 behaviour is observed.
        SpinPolicy {
            avg16: 8 * 16,
            last_active: false,
            spins_since_sample: 0,
        }
    }
}

impl SpinPolicy {
    const SPIN_BELOW16: u32 = 24; // average < 1.5 requests per wake-up
    const RESAMPLE_EVERY: u32 = 64;

    pub(super) fn should_spin(&mut self) -> bool {
        if !self.last_active || self.avg16 >= Self::SPIN_BELOW16 {
            return false;
        }
        self.spins_since_sample += 1;
        if self.spins_since_sample > Self::RESAMPLE_EVERY {
            self.spins_since_sample = 0;
            return false;
        }
        true
    }

    fn record(&mut self, handled: usize) {
        let h16 = (handled.min(1 << 16) as u32) * 16;
        self.avg16 = (self.avg16 * 3 + h16) / 4;
    }

    /// A batch delivered by an epoll wake-up.
    pub(super) fn woke(&mut self, handled: usize) {
        self.last_active = handled > 0;
        if handled > 0 {
            self.record(handled);
        }
    }

    /// A batch caught by spinning.
    pub(super) fn spun(&mut self, handled: usize) {
        self.last_active = handled > 0;
        if handled > 2 {
            self.record(handled);
        }
    }
}
/// Spin on a non-blocking `recv` for up to `budget`; returns the bytes received (0: none,
/// or end of file, which the regular read path then observes).
pub(super) fn spin_recv(fd: RawFd, buf: &mut [u8], budget: Duration) -> usize {
    let start = std::time::Instant::now();
    loop {
        // SAFETY: `buf` is a valid writable slice; MSG_DONTWAIT never blocks. Bypassing
        // tokio's readiness cache is sound: its edge-triggered registration still fires for
        // data that arrives later, and a stale "ready" only costs one extra syscall.
        let n = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n > 0 {
            return n as usize;
        }
        if n == 0 || start.elapsed() >= budget {
            return 0;
        }
        let e = io::Error::last_os_error().raw_os_error();
        if e != Some(libc::EAGAIN) && e != Some(libc::EINTR) {
            return 0;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::SpinPolicy;

    /// Feed epoll batch sizes; return how many of the following 100 opportunities spin.
    fn spins_after(epoll_batches: &[usize]) -> usize {
        let mut p = SpinPolicy::default();
        for &b in epoll_batches {
            p.woke(b);
        }
        (0..100)
            .filter(|_| {
                let s = p.should_spin();
                if s {
                    p.spun(1);
                } else {
                    p.woke(epoll_batches.last().copied().unwrap_or(0));
                }
                s
            })
            .count()
    }

    #[test]
    fn spins_only_when_the_client_waits_on_us() {
        assert_eq!(spins_after(&[]), 0, "idle connections never spin");
        assert_eq!(spins_after(&[10; 20]), 0, "deep queues keep their batches");
        let mut p = SpinPolicy::default();
        for _ in 0..3 {
            p.woke(1);
        }
        assert!(!p.should_spin(), "not before QD1 behaviour is established");
        let qd1 = spins_after(&[1; 20]);
        assert!(
            (95..100).contains(&qd1),
            "QD1 spins except to re-sample: {qd1}"
        );
    }

    #[test]
    fn a_deeper_queue_caught_while_spinning_stops_the_spinning() {
        let mut p = SpinPolicy::default();
        for _ in 0..20 {
            p.woke(1);
        }
        assert!(p.should_spin());
        for _ in 0..4 {
            p.spun(16);
        }
        assert!(!p.should_spin());
    }
}
