//! An in-memory target for tests: every request (read, write or FLUSH) takes one slot of an
//! optional IOPS ceiling (served in arrival order) and then a fixed latency. Uses tokio's
//! clock, so tests run in paused time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::{IoError, IoFuture, IoTarget};

pub struct FakeTarget {
    interval: Option<Duration>,
    latency: Duration,
    size: u64,
    next: std::sync::Arc<Mutex<Option<Instant>>>,
    counts: std::sync::Arc<[AtomicU64; 3]>,
    fail_writes: std::sync::Arc<AtomicBool>,
}

impl FakeTarget {
    /// `iops`: the ceiling every request shares (None: unlimited); `latency`: added to each.
    pub fn new(iops: Option<f64>, latency: Duration) -> FakeTarget {
        FakeTarget {
            interval: iops.map(|r| Duration::from_secs_f64(1.0 / r)),
            latency,
            size: 4 << 30,
            next: Default::default(),
            counts: Default::default(),
            fail_writes: Default::default(),
        }
    }

    /// (reads, writes, flushes) completed or failed so far.
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.counts[0].load(Ordering::Relaxed),
            self.counts[1].load(Ordering::Relaxed),
            self.counts[2].load(Ordering::Relaxed),
        )
    }

    /// From now on every write fails.
    pub fn fail_writes(&self) {
        self.fail_writes.store(true, Ordering::Relaxed);
    }

    fn op(&self, kind: usize) -> IoFuture {
        let (interval, latency) = (self.interval, self.latency);
        let (next, counts) = (self.next.clone(), self.counts.clone());
        let fail = kind == 1 && self.fail_writes.load(Ordering::Relaxed);
        Box::pin(async move {
            let now = Instant::now();
            let slot = match interval {
                None => now,
                Some(i) => {
                    let mut n = next.lock().unwrap_or_else(|p| p.into_inner());
                    let s = n.map_or(now, |t| t.max(now));
                    *n = Some(s + i);
                    s
                }
            };
            tokio::time::sleep_until(slot + latency).await;
            counts[kind].fetch_add(1, Ordering::Relaxed);
            if fail {
                Err(IoError::Io("injected write error".into()))
            } else {
                Ok(())
            }
        })
    }
}

impl IoTarget for FakeTarget {
    fn size(&self) -> u64 {
        self.size
    }
    fn read(&self, _offset: u64, _len: u32) -> IoFuture {
        self.op(0)
    }
    fn write(&self, _offset: u64, _len: u32) -> IoFuture {
        self.op(1)
    }
    fn flush(&self) -> IoFuture {
        self.op(2)
    }
    fn describe(&self) -> String {
        "fake target".into()
    }
}
