//! GenIO: an Epic-like database load generator (the `ramp` profile's workload), built into
//! qoslab because fio cannot express it honestly (docs/BENCH.md, "The ramp's generator", says why).
//!
//! One run of one "system" on one [`IoTarget`]:
//!
//! - **reads**: continuous random reads of `block_size` at `read_iops`, open loop (the
//!   n-th read is due at `start + n / read_iops` whatever happened to earlier ones), at most
//!   `read_inflight` outstanding (beyond that, arrivals wait for a slot);
//! - **the write daemon**: wakes every `cycle` (first at `cycle_offset`), writes the
//!   write-image journal (WIJ: `dirty_blocks × block_size` bytes, sequential, in
//!   `wij_block` requests at `wij_qd`, then FLUSH: a journal must be durable before the
//!   blocks it protects are overwritten), then writes the dirty blocks as a burst of random
//!   writes at `write_qd` and FLUSHes. A cycle that overruns its period delays the next one
//!   (the daemon never overlaps itself).
//!
//! Measured: the WIJ time (journal start to its FLUSH done), the write cycle (burst start to
//! the final FLUSH done: the last write durable), each burst write's latency (submission to
//! reply), each read's latency (submission to reply), counts. The run ends once `runtime`
//! has passed and the daemon's last cycle is done; reads go on until then. A cycle that an
//! overrun pushed past the end of the runtime is skipped and counted (`cycles_skipped`), so a
//! saturated run lasts at most one overrunning cycle longer than its runtime.
//!
//! Time is tokio's, so the timing logic is unit-tested in paused time against
//! [`fake::FakeTarget`]; [`nbd::NbdTarget`] and [`file::FileTarget`] are the real targets.

pub mod fake;
pub mod file;
pub mod nbd;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// An I/O error from a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IoError {
    #[error("{op} at offset {offset}: the server replied errno {errno}")]
    Nbd {
        op: &'static str,
        offset: u64,
        errno: u32,
    },
    #[error("{0}")]
    Io(String),
    #[error("connection closed: {0}")]
    Closed(String),
    #[error("{0}")]
    Setup(String),
}

/// The future of one request.
pub type IoFuture = Pin<Box<dyn Future<Output = Result<(), IoError>> + Send + 'static>>;

/// Where the generator's requests go. Requests are independent: many may be in flight.
/// The target supplies write payloads itself (the generator does not care what is written).
pub trait IoTarget: Send + Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    fn read(&self, offset: u64, len: u32) -> IoFuture;
    fn write(&self, offset: u64, len: u32) -> IoFuture;
    /// Make every completed write durable.
    fn flush(&self) -> IoFuture;
    fn describe(&self) -> String;
}

/// Open `spec`: an `nbd://` / `nbd+unix://` URI or a file, directory or block device path.
/// `need` is how many bytes the workload addresses (a new file, or the file in a
/// directory, is created that large; an existing smaller file is an error).
pub async fn open(spec: &str, need: u64) -> Result<Arc<dyn IoTarget>, IoError> {
    if spec.starts_with("nbd://") || spec.starts_with("nbd+unix://") {
        Ok(Arc::new(nbd::NbdTarget::connect(spec).await?))
    } else {
        let path = std::path::PathBuf::from(spec);
        let t = tokio::task::spawn_blocking(move || file::FileTarget::open(&path, need))
            .await
            .map_err(|e| IoError::Setup(format!("opening {spec}: {e}")))??;
        Ok(Arc::new(t))
    }
}

/// One run's workload, already scaled (durations are what the generator really uses).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Reads per second (0: no reads).
    pub read_iops: f64,
    pub block_size: u32,
    /// Random writes per cycle (0: no write daemon).
    pub dirty_blocks: u64,
    pub cycle: Duration,
    /// When the first cycle starts (systems of one ramp are staggered).
    pub cycle_offset: Duration,
    pub runtime: Duration,
    pub write_qd: u32,
    pub wij_block: u32,
    pub wij_qd: u32,
    pub read_inflight: u32,
    /// Random reads and writes address `[0, span)`, block-aligned.
    pub span: u64,
    /// The journal starts here (after the span).
    pub journal_offset: u64,
    pub seed: u64,
}

impl Workload {
    /// Bytes of journal per cycle.
    pub fn journal_bytes(&self) -> u64 {
        self.dirty_blocks * u64::from(self.block_size)
    }

    /// The number of cycles the daemon runs: those scheduled before `runtime` ends.
    pub fn cycles(&self) -> u64 {
        if self.dirty_blocks == 0 || self.cycle.is_zero() {
            return 0;
        }
        if self.cycle_offset >= self.runtime {
            return 1;
        }
        let left = (self.runtime - self.cycle_offset).as_nanos();
        left.div_ceil(self.cycle.as_nanos()) as u64
    }
}

/// One write-daemon cycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CycleStats {
    /// When the cycle started, seconds since the run started.
    pub start_s: f64,
    /// Journal start to its FLUSH done.
    pub wij_s: f64,
    pub wij_writes: u64,
    /// Burst start to the last write's reply.
    pub burst_s: f64,
    /// Burst start to the final FLUSH done: the write cycle.
    pub cycle_s: f64,
    pub writes: u64,
    /// Mean latency of the burst's writes, seconds.
    pub write_lat_mean_s: f64,
    pub errors: u64,
}

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunStats {
    /// The measurement window: `runtime`, or longer when the last cycle overran it.
    pub window_s: f64,
    pub reads: u64,
    pub read_lat_mean_s: f64,
    /// Reads that waited for an in-flight slot (the target fell behind the arrival rate).
    pub reads_delayed: u64,
    pub cycles: Vec<CycleStats>,
    /// Cycles that could not start before the runtime ended (an earlier one overran).
    pub cycles_skipped: u64,
    pub errors: u64,
    pub first_error: Option<String>,
}

impl RunStats {
    pub fn read_iops(&self) -> f64 {
        per_sec(self.reads, self.window_s)
    }
    /// Burst writes per second (the database's writes; the journal's are counted apart).
    pub fn write_iops(&self) -> f64 {
        per_sec(self.cycles.iter().map(|c| c.writes).sum(), self.window_s)
    }
    pub fn longest_wij_s(&self) -> f64 {
        self.cycles.iter().map(|c| c.wij_s).fold(0.0, f64::max)
    }
    pub fn longest_cycle(&self) -> Option<&CycleStats> {
        self.cycles
            .iter()
            .max_by(|a, b| a.cycle_s.total_cmp(&b.cycle_s))
    }
    pub fn longest_cycle_s(&self) -> f64 {
        self.longest_cycle().map(|c| c.cycle_s).unwrap_or(0.0)
    }
    /// Mean latency of every burst write of the run, seconds.
    pub fn write_lat_mean_s(&self) -> f64 {
        let n: u64 = self.cycles.iter().map(|c| c.writes).sum();
        if n == 0 {
            return 0.0;
        }
        self.cycles
            .iter()
            .map(|c| c.write_lat_mean_s * c.writes as f64)
            .sum::<f64>()
            / n as f64
    }
}

fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// The applications' SplitMix64 (one generator for the crate), scattering offsets here.
pub use crate::apps::rng::Rng;

#[derive(Default)]
struct Errors {
    count: AtomicU64,
    first: Mutex<Option<String>>,
}

impl Errors {
    fn record(&self, e: &IoError) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut f = self.first.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(e.to_string());
        }
    }
}

/// Run `w` once on `target`.
pub async fn run_once(target: Arc<dyn IoTarget>, w: &Workload) -> RunStats {
    let start = Instant::now();
    let end = start + w.runtime;
    let errors = Arc::new(Errors::default());
    let daemon = tokio::spawn(write_daemon(
        target.clone(),
        w.clone(),
        start,
        errors.clone(),
    ));
    let reads = Arc::new(AtomicU64::new(0));
    let read_lat_ns = Arc::new(AtomicU64::new(0));
    let mut delayed = 0u64;
    let inflight = w.read_inflight.max(1);
    let sem = Arc::new(Semaphore::new(inflight as usize));
    if w.read_iops > 0.0 {
        let interval = 1.0 / w.read_iops;
        let mut rng = Rng::new(w.seed ^ 0x5eed_0000_0000_0001);
        let mut issued: u64 = 0;
        loop {
            let due = start + Duration::from_secs_f64(issued as f64 * interval);
            if due >= end && daemon.is_finished() {
                break;
            }
            tokio::time::sleep_until(due).await;
            let now = Instant::now();
            // Every read due by now (the timer wakes at most once a millisecond).
            loop {
                let due = start + Duration::from_secs_f64(issued as f64 * interval);
                if due > now || (due >= end && daemon.is_finished()) {
                    break;
                }
                let permit = match sem.clone().try_acquire_owned() {
                    Ok(p) => p,
                    Err(_) => {
                        delayed += 1;
                        match sem.clone().acquire_owned().await {
                            Ok(p) => p,
                            Err(_) => break,
                        }
                    }
                };
                issued += 1;
                let fut = target.read(rng.block(w.span, w.block_size), w.block_size);
                let (reads, lat, errors) = (reads.clone(), read_lat_ns.clone(), errors.clone());
                tokio::spawn(async move {
                    let t0 = Instant::now();
                    let r = fut.await;
                    let ns = t0.elapsed().as_nanos() as u64;
                    match r {
                        Ok(()) => {
                            reads.fetch_add(1, Ordering::Relaxed);
                            lat.fetch_add(ns, Ordering::Relaxed);
                        }
                        Err(e) => errors.record(&e),
                    }
                    drop(permit);
                });
            }
        }
    }
    let (cycles, cycles_skipped) = match daemon.await {
        Ok(c) => c,
        Err(e) => {
            errors.record(&IoError::Io(format!("write daemon: {e}")));
            (Vec::new(), 0)
        }
    };
    let window = Instant::now().max(end) - start;
    // Drain the reads in flight.
    let _ = sem.acquire_many(inflight).await;
    let n = reads.load(Ordering::Relaxed);
    let first_error = errors
        .first
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    RunStats {
        window_s: window.as_secs_f64(),
        reads: n,
        read_lat_mean_s: if n > 0 {
            read_lat_ns.load(Ordering::Relaxed) as f64 / n as f64 / 1e9
        } else {
            0.0
        },
        reads_delayed: delayed,
        cycles,
        cycles_skipped,
        errors: errors.count.load(Ordering::Relaxed),
        first_error,
    }
}

/// Run `ops` (offset, length) as writes, at most `qd` in flight. Returns (completed,
/// summed latency in ns, errors).
async fn write_batch(
    target: &Arc<dyn IoTarget>,
    ops: impl Iterator<Item = (u64, u32)>,
    qd: u32,
    errors: &Errors,
) -> (u64, u128, u64) {
    let mut set: JoinSet<(Duration, Result<(), IoError>)> = JoinSet::new();
    let (mut done, mut lat, mut errs) = (0u64, 0u128, 0u64);
    let mut record = |r: Result<(Duration, Result<(), IoError>), tokio::task::JoinError>| match r {
        Ok((d, Ok(()))) => {
            done += 1;
            lat += d.as_nanos();
        }
        Ok((_, Err(e))) => {
            errs += 1;
            errors.record(&e);
        }
        Err(e) => {
            errs += 1;
            errors.record(&IoError::Io(format!("write task: {e}")));
        }
    };
    for (off, len) in ops {
        while set.len() >= qd.max(1) as usize {
            if let Some(r) = set.join_next().await {
                record(r);
            }
        }
        let fut = target.write(off, len);
        set.spawn(async move {
            let t0 = Instant::now();
            let r = fut.await;
            (t0.elapsed(), r)
        });
    }
    while let Some(r) = set.join_next().await {
        record(r);
    }
    (done, lat, errs)
}

async fn write_daemon(
    target: Arc<dyn IoTarget>,
    w: Workload,
    start: Instant,
    errors: Arc<Errors>,
) -> (Vec<CycleStats>, u64) {
    let mut out = Vec::new();
    let mut rng = Rng::new(w.seed);
    let bs = w.block_size;
    let n = w.cycles();
    for j in 0..n {
        let sched = start + w.cycle_offset + w.cycle * j as u32;
        if j > 0 && Instant::now() >= start + w.runtime {
            return (out, n - j);
        }
        tokio::time::sleep_until(sched).await;
        let c0 = Instant::now();
        let mut c = CycleStats {
            start_s: (c0 - start).as_secs_f64(),
            ..Default::default()
        };
        // The journal: sequential, then durable.
        let jbytes = w.journal_bytes();
        let chunk = u64::from(w.wij_block.max(bs));
        let journal = (0..jbytes.div_ceil(chunk)).map(|i| {
            let off = i * chunk;
            (w.journal_offset + off, (jbytes - off).min(chunk) as u32)
        });
        let (n, _, e1) = write_batch(&target, journal, w.wij_qd, &errors).await;
        let e2 = flush(&target, &errors).await;
        c.wij_writes = n;
        c.wij_s = c0.elapsed().as_secs_f64();
        // The burst: random dirty blocks at high queue depth, then durable.
        let b0 = Instant::now();
        let blocks: Vec<u64> = (0..w.dirty_blocks).map(|_| rng.block(w.span, bs)).collect();
        let (n, lat, e3) = write_batch(
            &target,
            blocks.into_iter().map(|o| (o, bs)),
            w.write_qd,
            &errors,
        )
        .await;
        c.burst_s = b0.elapsed().as_secs_f64();
        let e4 = flush(&target, &errors).await;
        c.cycle_s = b0.elapsed().as_secs_f64();
        c.writes = n;
        c.write_lat_mean_s = if n > 0 {
            lat as f64 / n as f64 / 1e9
        } else {
            0.0
        };
        c.errors = e1 + e2 + e3 + e4;
        out.push(c);
    }
    (out, 0)
}

/// Write `[0, end)` once, sequentially in `chunk`-byte writes at `qd`, then FLUSH: the
/// database exists before the load starts (GenIO's dgen.pl), so no run pays for first
/// allocation of thin-provisioned blocks. Not measured.
pub async fn prefill(
    target: Arc<dyn IoTarget>,
    end: u64,
    chunk: u32,
    qd: u32,
) -> Result<(), IoError> {
    let errors = Errors::default();
    let chunk = u64::from(chunk.max(512));
    let ops = (0..end.div_ceil(chunk)).map(|i| {
        let off = i * chunk;
        (off, (end - off).min(chunk) as u32)
    });
    write_batch(&target, ops, qd, &errors).await;
    flush(&target, &errors).await;
    match errors.first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(IoError::Io(format!("prefill: {e}"))),
        None => Ok(()),
    }
}

async fn flush(target: &Arc<dyn IoTarget>, errors: &Errors) -> u64 {
    match target.flush().await {
        Ok(()) => 0,
        Err(e) => {
            errors.record(&e);
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeTarget;
    use super::*;

    fn workload() -> Workload {
        Workload {
            read_iops: 0.0,
            block_size: 8192,
            dirty_blocks: 0,
            cycle: Duration::from_secs(4),
            cycle_offset: Duration::ZERO,
            runtime: Duration::from_secs(4),
            write_qd: 32,
            wij_block: 256 * 1024,
            wij_qd: 8,
            read_inflight: 256,
            span: 1 << 30,
            journal_offset: 1 << 30,
            seed: 1,
        }
    }

    fn close(got: f64, want: f64, tol: f64) -> bool {
        (got - want).abs() <= want * tol
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_cycle_at_a_2000_iops_ceiling_lasts_two_seconds() {
        let fake = Arc::new(FakeTarget::new(Some(2000.0), Duration::from_micros(100)));
        let w = Workload {
            dirty_blocks: 4000,
            ..workload()
        };
        let s = run_once(fake.clone(), &w).await;
        assert_eq!(s.cycles.len(), 1);
        let c = &s.cycles[0];
        assert_eq!(c.writes, 4000);
        // 4000 × 8 KiB journal in 256 KiB writes: 125 writes at 2000/s.
        assert_eq!(c.wij_writes, 125);
        assert!(close(c.wij_s, 126.0 / 2000.0, 0.02), "{c:?}");
        // The burst and its FLUSH: 4001 operations at 2000/s.
        assert!(close(c.cycle_s, 2.0, 0.01), "{c:?}");
        assert!(c.cycle_s > c.burst_s);
        // 32 in flight at 2000/s: each waits ~16 ms.
        assert!(close(c.write_lat_mean_s, 0.016, 0.05), "{c:?}");
        assert_eq!(s.errors, 0);
        assert_eq!(fake.counts(), (0, 4125, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn reads_arrive_open_loop_at_the_read_rate_and_writes_follow_the_cycle() {
        // (tokio's timer, paused or not, has millisecond resolution)
        let fake = Arc::new(FakeTarget::new(None, Duration::from_millis(2)));
        let w = Workload {
            read_iops: 750.0,
            dirty_blocks: 1000, // 250/s over a 4 s cycle
            runtime: Duration::from_secs(8),
            ..workload()
        };
        let s = run_once(fake.clone(), &w).await;
        assert_eq!(s.cycles.len(), 2);
        assert!(close(s.window_s, 8.0, 0.001), "{}", s.window_s);
        assert!(close(s.read_iops(), 750.0, 0.01), "{}", s.read_iops());
        assert!(close(s.write_iops(), 250.0, 0.01), "{}", s.write_iops());
        assert!(
            close(s.read_lat_mean_s, 0.002, 0.01),
            "{}",
            s.read_lat_mean_s
        );
        assert!(close(s.cycles[1].start_s, 4.0, 0.001), "{:?}", s.cycles);
        assert_eq!(s.reads_delayed, 0);
        // Latency without a ceiling is the target's own.
        assert!(close(s.write_lat_mean_s(), 0.002, 0.01));
    }

    #[tokio::test(start_paused = true)]
    async fn an_overrunning_cycle_delays_the_next_and_stretches_the_window() {
        // 1000 ops/s shared: reads take 500/s, so 2000 dirty blocks need ~4 s per burst while
        // the period is 2 s.
        let fake = Arc::new(FakeTarget::new(Some(1000.0), Duration::ZERO));
        let w = Workload {
            read_iops: 500.0,
            dirty_blocks: 2000,
            cycle: Duration::from_secs(2),
            runtime: Duration::from_secs(4),
            wij_block: 8192 * 2000, // one journal write
            ..workload()
        };
        let s = run_once(fake.clone(), &w).await;
        assert_eq!(s.cycles.len(), 2);
        assert!(s.longest_cycle_s() > 3.0, "{:?}", s.cycles);
        assert!(
            s.cycles[1].start_s
                >= s.cycles[0].start_s + s.cycles[0].wij_s + s.cycles[0].cycle_s - 0.01
        );
        assert!(s.window_s > 6.0, "{}", s.window_s);
        assert_eq!(s.cycles_skipped, 0);
        // Writes fall short of 2 × 2000 / 4 s because the window stretched.
        assert!(s.write_iops() < 1000.0 * 0.75, "{}", s.write_iops());
    }

    #[tokio::test(start_paused = true)]
    async fn cycles_pushed_past_the_runtime_are_skipped() {
        // Each burst needs ~4 s (2000 writes at 500/s spare) but the period is 1 s and the
        // run 3 s: the first cycle overruns the whole run, the other two never start.
        let fake = Arc::new(FakeTarget::new(Some(1000.0), Duration::ZERO));
        let w = Workload {
            read_iops: 500.0,
            dirty_blocks: 2000,
            cycle: Duration::from_secs(1),
            runtime: Duration::from_secs(3),
            wij_block: 8192 * 2000,
            ..workload()
        };
        let s = run_once(fake, &w).await;
        assert_eq!((s.cycles.len(), s.cycles_skipped), (1, 2));
        assert!(s.longest_cycle_s() > 3.5, "{:?}", s.cycles);
        assert!(s.window_s < s.longest_cycle_s() + 0.5, "{}", s.window_s);
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_in_flight_reads_wait_for_slots() {
        // 10 ms per read, at most 4 in flight: 400/s at most, asked for 1000/s.
        let fake = Arc::new(FakeTarget::new(None, Duration::from_millis(10)));
        let w = Workload {
            read_iops: 1000.0,
            read_inflight: 4,
            runtime: Duration::from_secs(2),
            ..workload()
        };
        let s = run_once(fake, &w).await;
        assert!(close(s.read_iops(), 400.0, 0.02), "{}", s.read_iops());
        assert!(s.reads_delayed > 1000, "{}", s.reads_delayed);
    }

    #[tokio::test(start_paused = true)]
    async fn errors_are_counted_and_the_first_is_kept() {
        let fake = Arc::new(FakeTarget::new(None, Duration::ZERO));
        fake.fail_writes();
        let w = Workload {
            read_iops: 100.0,
            dirty_blocks: 10,
            ..workload()
        };
        let s = run_once(fake, &w).await;
        assert_eq!(s.cycles[0].writes, 0);
        assert!(s.errors >= 10, "{}", s.errors);
        assert!(s.first_error.unwrap().contains("injected"));
        assert!(s.reads > 300);
    }

    #[tokio::test(start_paused = true)]
    async fn prefill_writes_the_region_once_then_flushes() {
        let fake = Arc::new(FakeTarget::new(Some(1000.0), Duration::ZERO));
        prefill(fake.clone(), (10 << 20) + 4096, 1 << 20, 8)
            .await
            .unwrap();
        assert_eq!(fake.counts(), (0, 11, 1));
        fake.fail_writes();
        let e = prefill(fake.clone(), 1 << 20, 1 << 20, 8)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("prefill: injected"), "{e}");
    }

    #[test]
    fn cycle_counts_and_offsets() {
        let w = Workload {
            dirty_blocks: 1,
            runtime: Duration::from_secs(8),
            ..workload()
        };
        assert_eq!(w.cycles(), 2);
        let w = Workload {
            cycle_offset: Duration::from_secs(1),
            ..w
        };
        assert_eq!(w.cycles(), 2);
        let w = Workload {
            runtime: Duration::from_secs(9),
            cycle_offset: Duration::ZERO,
            ..w
        };
        assert_eq!(w.cycles(), 3);
        assert_eq!(
            Workload {
                dirty_blocks: 0,
                ..w
            }
            .cycles(),
            0
        );
    }

    #[test]
    fn rng_blocks_are_aligned_and_in_range() {
        let mut r = Rng::new(7);
        for _ in 0..10_000 {
            let b = r.block(1 << 20, 8192);
            assert_eq!(b % 8192, 0);
            assert!(b < 1 << 20);
        }
    }
}
