//! The sampling threads: one per host, a sample every period until [`Sampler::stop`].

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::counters::{parse_stat_lines, Counters};
use crate::rates;
use crate::roles::Role;
use crate::roles::Roles;
use crate::sample::{HostSeries, Overhead};
use crate::source::{LocalProc, ProcSource};

/// pbench's and sar's usual period.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(1);

/// Errors kept per host (a broken host would otherwise log one per second).
const MAX_ERRORS: usize = 5;

/// One host to sample.
pub struct HostSpec {
    pub source: Box<dyn ProcSource>,
    pub roles: Roles,
}

impl HostSpec {
    /// This machine.
    pub fn local(roles: Roles) -> HostSpec {
        HostSpec {
            source: Box::new(LocalProc::new()),
            roles,
        }
    }
}

type StopFlag = Arc<(Mutex<bool>, Condvar)>;

/// Running tool sets. Dropping it without [`stop`](Sampler::stop) stops the threads too.
pub struct Sampler {
    stop: StopFlag,
    threads: Vec<JoinHandle<HostSeries>>,
}

/// CPU time of the calling thread, seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

impl Sampler {
    /// Starts one thread per host. Samples are stamped in ms since this call.
    pub fn start(hosts: Vec<HostSpec>, period: Duration) -> Sampler {
        let stop: StopFlag = Arc::new((Mutex::new(false), Condvar::new()));
        let origin = Instant::now();
        let threads = hosts
            .into_iter()
            .map(|h| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("toolsets-{}", h.source.host()))
                    .spawn(move || run(h, period, origin, stop))
                    .expect("spawning a sampler thread")
            })
            .collect();
        Sampler { stop, threads }
    }

    /// This machine alone, every second.
    pub fn local(roles: Roles) -> Sampler {
        Sampler::start(vec![HostSpec::local(roles)], DEFAULT_PERIOD)
    }

    /// Stops sampling (each host takes a last sample covering the time since its previous
    /// one, when that is at least a quarter period) and returns every host's series.
    pub fn stop(mut self) -> Vec<HostSeries> {
        self.signal();
        std::mem::take(&mut self.threads)
            .into_iter()
            .map(|t| t.join().unwrap_or_default())
            .collect()
    }

    fn signal(&self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.signal();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Waits until `deadline` or a stop; true when stopped.
fn wait(stop: &StopFlag, deadline: Instant) -> bool {
    let (lock, cv) = &**stop;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if *stopped {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        stopped = cv
            .wait_timeout(stopped, deadline - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

fn run(mut h: HostSpec, period: Duration, origin: Instant, stop: StopFlag) -> HostSeries {
    let cpu0 = thread_cpu_s();
    let wall0 = Instant::now();
    let mut series = HostSeries {
        host: h.source.host().to_string(),
        ..HostSeries::default()
    };
    let note = |series: &mut HostSeries, e: String| {
        if series.errors.len() < MAX_ERRORS {
            let msg = format!("{}: {e}", series.host);
            series.errors.push(msg);
        }
    };
    let consts = match h.source.consts() {
        Ok(c) => c,
        Err(e) => {
            note(&mut series, e.to_string());
            return series;
        }
    };
    let speeds: HashMap<String, u64> = h.source.nic_speeds();
    let split = h.roles.split_pid();
    let roles = h.roles.clone();
    let read = |source: &mut dyn ProcSource| {
        source
            .snapshot()
            .and_then(|raw| Counters::parse(&raw, consts))
            .map(|mut c| {
                if let Some(pid) = split {
                    // Without its threads the process is simply not split.
                    if let Ok(t) = source.threads(pid) {
                        c.threads = parse_stat_lines(&t, consts.page_size);
                    }
                }
                // The job's own processes: their I/O and their cgroups' pressure.
                let mut job: Vec<i32> = roles
                    .classify(&c.procs)
                    .into_iter()
                    .filter(|(_, r)| matches!(r, Role::Fio | Role::Node))
                    .map(|(pid, _)| pid)
                    .collect();
                job.extend(roles.node_pid);
                job.sort_unstable();
                job.dedup();
                let files = source.job_files(&job);
                c.add_job_files(&files);
                (c, Instant::now())
            })
    };
    let mut prev = None;
    let mut k: u32 = 0;
    loop {
        let stopped = if prev.is_none() && k == 0 {
            false
        } else {
            let deadline = origin + period * k;
            wait(&stop, deadline)
        };
        if stopped {
            // A last, shorter interval up to the stop, unless it would be too short to mean
            // anything.
            let recent = prev
                .as_ref()
                .is_some_and(|(_, at): &(Counters, Instant)| at.elapsed() < period / 4);
            if recent || prev.is_none() {
                break;
            }
        }
        match read(h.source.as_mut()) {
            Ok((cur, at)) => {
                if series.samples.is_empty() && prev.is_none() {
                    series.ncpus = cur.kernel.cpu_time.len() as u32;
                    series.mem_total_bytes = cur.mem.mem_total;
                    series.swap_total_bytes = cur.mem.swap_total;
                }
                if let Some((p, _)) = &prev {
                    let t_ms = at.duration_since(origin).as_millis() as u64;
                    series.samples.push(rates::sample(
                        p,
                        &cur,
                        consts.ticks_per_second,
                        &h.roles,
                        &speeds,
                        t_ms,
                    ));
                }
                prev = Some((cur, at));
            }
            Err(e) => note(&mut series, e.to_string()),
        }
        if stopped {
            break;
        }
        // The next tick after now (ticks missed while a slow read ran are skipped).
        let elapsed = origin.elapsed().as_nanos();
        k = (elapsed / period.as_nanos().max(1)) as u32 + 1;
    }
    series.overhead = Overhead {
        cpu_s: thread_cpu_s() - cpu0,
        wall_s: wall0.elapsed().as_secs_f64(),
        samples: series.samples.len() as u64,
    };
    series
}
