//! The host's and this process's load over a point, from /proc (no tools needed): host
//! CPU busy %, this process's CPU % (the embedded node lives in it — and so do the redis
//! workload's client threads, so it is an upper bound for the node) and its resident
//! memory. Sampled every second on a thread; [`LoadSampler::stop`] gives means and peaks.
//! (Issue 12's tool sets record richer host and node load where they are available.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Load over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadSample {
    /// Host CPU busy (all cores), percent of the whole machine.
    pub host_cpu_pct: f64,
    /// This process (harness + embedded node), percent of one core.
    pub process_cpu_pct: f64,
    /// Its resident memory: mean and peak, MiB.
    pub rss_mib: f64,
    pub rss_peak_mib: f64,
    /// Host load average (1 min) at the end.
    pub loadavg: f64,
}

fn host_cpu() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<u64> = s
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let idle = f.get(3)? + f.get(4).unwrap_or(&0);
    Some((f.iter().sum(), idle))
}

fn process_ticks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// A running sampler.
pub struct LoadSampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<LoadSample>,
}

impl LoadSampler {
    pub fn start() -> LoadSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let h0 = host_cpu().unwrap_or((0, 0));
            let p0 = process_ticks().unwrap_or(0);
            let (mut rss_sum, mut rss_n, mut rss_peak) = (0.0, 0u32, 0.0f64);
            loop {
                if let Some(r) = rss_mib() {
                    rss_sum += r;
                    rss_n += 1;
                    rss_peak = rss_peak.max(r);
                }
                for _ in 0..10 {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                if flag.load(Ordering::Relaxed) {
                    break;
                }
            }
            let secs = t0.elapsed().as_secs_f64().max(1e-3);
            let h1 = host_cpu().unwrap_or(h0);
            let p1 = process_ticks().unwrap_or(p0);
            let (dt, di) = (h1.0.saturating_sub(h0.0), h1.1.saturating_sub(h0.1));
            let loadavg = std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
                .unwrap_or(0.0);
            LoadSample {
                host_cpu_pct: if dt > 0 {
                    100.0 * (dt - di) as f64 / dt as f64
                } else {
                    0.0
                },
                process_cpu_pct: 100.0 * (p1 - p0) as f64 / ticks_per_sec() / secs,
                rss_mib: if rss_n > 0 {
                    rss_sum / rss_n as f64
                } else {
                    0.0
                },
                rss_peak_mib: rss_peak,
                loadavg,
            }
        });
        LoadSampler { stop, handle }
    }

    pub fn stop(self) -> LoadSample {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_shows_as_process_cpu() {
        let s = LoadSampler::start();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(600) {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        let l = s.stop();
        assert!(l.process_cpu_pct > 30.0, "{l:?}");
        assert!(l.rss_mib > 0.0 && l.rss_peak_mib >= l.rss_mib, "{l:?}");
        assert!((0.0..=100.0).contains(&l.host_cpu_pct), "{l:?}");
    }
}
