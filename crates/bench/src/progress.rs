//! The progress display: one line (job n/N, workload, volume, elapsed/expected, run time
//! remaining) redrawn every 250 ms while fio runs, only when stdout is a terminal. When it
//! is not (pipes, CI, `--json`), it prints nothing.
//!
//! Live IOPS from fio's `--status-interval` output is not shown yet.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::plan::PlannedJob;

struct State {
    line: String,
    started: Instant,
    expected: f64,
    remaining_after: f64,
    active: bool,
    done: bool,
    /// The latest live rate fio reported for the running job.
    live_iops: Option<f64>,
}

/// A TTY progress line, drawn by a background thread while a job runs.
pub struct Progress {
    state: Option<Arc<Mutex<State>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How long a job is expected to take (fio's start-up and drain are extra).
pub fn expected_secs(j: &PlannedJob) -> f64 {
    j.runtime + j.ramp
}

impl Progress {
    /// Enabled only when `enabled` and stdout is a terminal.
    pub fn new(enabled: bool) -> Progress {
        if !enabled || !std::io::stdout().is_terminal() {
            return Progress {
                state: None,
                thread: None,
            };
        }
        let state = Arc::new(Mutex::new(State {
            line: String::new(),
            started: Instant::now(),
            expected: 0.0,
            remaining_after: 0.0,
            active: false,
            done: false,
            live_iops: None,
        }));
        let s = state.clone();
        let thread = std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(250));
            let st = s.lock().unwrap_or_else(|e| e.into_inner());
            if st.done {
                break;
            }
            if st.active {
                let el = st.started.elapsed().as_secs_f64();
                let left = (st.expected - el).max(0.0) + st.remaining_after;
                let mut out = std::io::stdout().lock();
                let live = st
                    .live_iops
                    .map(|r| format!("  {} IOPS", crate::fmt::iops(r.round() as u64)))
                    .unwrap_or_default();
                let _ = write!(
                    out,
                    "\r\x1b[2K{}  {:.0}s / {:.0}s{live}  (run: ~{:.0}s left)",
                    st.line, el, st.expected, left
                );
                let _ = out.flush();
            }
        });
        Progress {
            state: Some(state),
            thread: Some(thread),
        }
    }

    pub fn enabled(&self) -> bool {
        self.state.is_some()
    }

    /// Where the executor sends live rates (None when the line is not drawn, so fio need
    /// not report status at all).
    pub fn live_sink(&self) -> Option<crate::fio::LiveSink> {
        let state = self.state.clone()?;
        Some(std::sync::Arc::new(move |iops: f64| {
            state.lock().unwrap_or_else(|e| e.into_inner()).live_iops = Some(iops);
        }))
    }

    /// A job starts: `remaining` is the expected time of the jobs after it.
    pub fn start(&self, index: usize, total: usize, job: &PlannedJob, remaining: f64) {
        if let Some(s) = &self.state {
            let mut st = s.lock().unwrap_or_else(|e| e.into_inner());
            st.line = format!(
                "[{}/{}] {} {} on {}",
                index + 1,
                total,
                job.workload,
                job.name,
                job.volume.as_deref().unwrap_or("target")
            );
            st.started = Instant::now();
            st.expected = expected_secs(job);
            st.remaining_after = remaining;
            st.active = true;
            st.live_iops = None;
        }
    }

    /// The job ended: erase the line (so what is printed next starts clean).
    pub fn clear(&self) {
        if let Some(s) = &self.state {
            let mut st = s.lock().unwrap_or_else(|e| e.into_inner());
            st.active = false;
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[2K");
            let _ = out.flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(s) = &self.state {
            s.lock().unwrap_or_else(|e| e.into_inner()).done = true;
        }
        self.clear();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_when_not_a_terminal_or_not_wanted() {
        // Test harness stdout is captured (not a terminal) under `cargo test`.
        let p = Progress::new(false);
        assert!(!p.enabled());
        p.clear();
    }
}
