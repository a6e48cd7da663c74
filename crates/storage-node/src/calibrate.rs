//! `serve --calibrate`: measure what the backend can do and use it as the emulated
//! controller's capacity, as Ceph's `osd bench` does for its mClock profiles.
//!
//! Two phases through the node's own [`FileBackend`] (page cache included, as the node
//! serves), one thread per CPU: 4 KiB random writes, then 1 MiB sequential reads of a
//! file that was written first (reading holes would measure nothing). The capacity is the
//! measured 4 KiB write IOPS and 1 MiB read MiB/s.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::backend::{Backend, FileBackend};
use crate::config::Capacity;

/// Size of the scratch file.
const FILE_SIZE: u64 = 256 << 20;

/// What calibration measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    pub write_4k_iops: f64,
    pub read_1m_mibps: f64,
    pub threads: usize,
    pub seconds: f64,
}

impl Calibration {
    /// The capacity to use: measured IOPS and MiB/s (rounded down), default cost unit.
    pub fn capacity(&self) -> Capacity {
        Capacity {
            iops: (self.write_4k_iops as u64).max(1),
            mbps: (self.read_1m_mibps as u64).max(1),
            ..Capacity::default()
        }
    }
}

/// Measure for about `seconds` in total, with a scratch file in `dir` (removed after).
pub fn calibrate(dir: &Path, seconds: f64) -> io::Result<Calibration> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(".calibrate.img");
    let _ = std::fs::remove_file(&path);
    let result = measure(&path, seconds);
    let _ = std::fs::remove_file(&path);
    result
}

fn measure(path: &Path, seconds: f64) -> io::Result<Calibration> {
    let be = FileBackend::open(path, FILE_SIZE, false, false)?;
    let chunk = vec![0x5au8; 1 << 20];
    for off in (0..FILE_SIZE).step_by(chunk.len()) {
        be.write_at(&chunk, off)?;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let phase = Duration::from_secs_f64((seconds / 2.0).max(0.2));
    let writes = run_phase(&be, threads, phase, |be, t, i| {
        // A multiplicative hash spreads offsets over the file, 4 KiB aligned.
        let block = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ t as u64) % (FILE_SIZE / 4096);
        be.write_at(&[0xa5u8; 4096], block * 4096).map(|_| 4096)
    })?;
    let buf_size = 1usize << 20;
    let reads = run_phase(&be, threads, phase, |be, t, i| {
        let blocks = FILE_SIZE / buf_size as u64;
        let off = ((i + t as u64 * blocks / threads as u64) % blocks) * buf_size as u64;
        let mut buf = vec![0u8; buf_size];
        be.read_at(&mut buf, off).map(|_| buf_size as u64)
    })?;
    Ok(Calibration {
        write_4k_iops: writes.0 as f64 / writes.2,
        read_1m_mibps: reads.1 as f64 / reads.2 / 1048576.0,
        threads,
        seconds: writes.2 + reads.2,
    })
}

/// Run `op` on `threads` threads for `phase`; returns (ops, bytes, seconds).
fn run_phase<F>(
    be: &FileBackend,
    threads: usize,
    phase: Duration,
    op: F,
) -> io::Result<(u64, u64, f64)>
where
    F: Fn(&FileBackend, usize, u64) -> io::Result<u64> + Sync,
{
    let start = Instant::now();
    let results: Vec<io::Result<(u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let op = &op;
                s.spawn(move || {
                    let (mut ops, mut bytes) = (0u64, 0u64);
                    while start.elapsed() < phase {
                        for _ in 0..64 {
                            bytes += op(be, t, ops)?;
                            ops += 1;
                        }
                    }
                    Ok((ops, bytes))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("calibration thread panicked")))
            })
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let (mut ops, mut bytes) = (0, 0);
    for r in results {
        let (o, b) = r?;
        ops += o;
        bytes += b;
    }
    Ok((ops, bytes, secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_something_plausible_and_cleans_up() {
        let dir = test_support::TestDir::new("cal");
        let c = calibrate(&dir, 0.4).unwrap();
        assert!(c.write_4k_iops > 100.0, "{c:?}");
        assert!(c.read_1m_mibps > 10.0, "{c:?}");
        let cap = c.capacity();
        assert!(cap.is_set() && cap.iops as f64 <= c.write_4k_iops);
        assert!(!dir.join(".calibrate.img").exists());
    }
}
