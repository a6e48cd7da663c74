//! The terminal: a run's text on stdout as it comes, and on a terminal one progress line
//! (indicatif) while a step runs: `[n/N] label  elapsed / expected  live IOPS  (run: ~left)`.
//! Not a terminal (pipes, CI) or `--json`: no progress line; `--json`: no text either.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fio::LiveSink;
use harness::ui::Ui;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often the progress line is redrawn.
const TICK: Duration = Duration::from_millis(250);

pub struct TerminalUi {
    quiet: bool,
    tty: bool,
    bar: Option<ProgressBar>,
    /// The latest live rate fio reported for the running step.
    live: Arc<Mutex<Option<f64>>>,
}

impl TerminalUi {
    /// `quiet` (`--json`): print nothing at all.
    pub fn new(quiet: bool) -> TerminalUi {
        TerminalUi {
            quiet,
            tty: std::io::stdout().is_terminal(),
            bar: None,
            live: Arc::new(Mutex::new(None)),
        }
    }

    /// Where fio's executor sends live rates (None when no line is drawn, so fio need not
    /// report its status at all).
    pub fn live_sink(&self) -> Option<LiveSink> {
        if self.quiet || !self.tty {
            return None;
        }
        let live = self.live.clone();
        Some(Arc::new(move |iops: f64| {
            *live.lock().unwrap_or_else(|e| e.into_inner()) = Some(iops);
        }))
    }

    fn clear(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Ui for TerminalUi {
    fn print(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        self.clear();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    fn step_started(
        &mut self,
        index: usize,
        total: usize,
        label: &str,
        expected_secs: f64,
        remaining_secs: f64,
    ) {
        self.clear();
        if self.quiet || !self.tty {
            return;
        }
        *self.live.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let live = self.live.clone();
        let timing = move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let el = state.elapsed().as_secs_f64();
            let left = (expected_secs - el).max(0.0) + remaining_secs;
            let rate = live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .map(|r| format!("  {} IOPS", fio::fmt::iops(r.round() as u64)))
                .unwrap_or_default();
            let _ = write!(
                w,
                "{el:.0}s / {expected_secs:.0}s{rate}  (run: ~{left:.0}s left)"
            );
        };
        let style = match ProgressStyle::with_template("{prefix}  {timing}") {
            Ok(s) => s.with_key("timing", timing),
            Err(_) => return,
        };
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout())
            .with_style(style)
            .with_prefix(format!("[{}/{total}] {label}", index + 1));
        bar.enable_steady_tick(TICK);
        self.bar = Some(bar);
    }

    fn step_finished(&mut self) {
        self.clear();
    }
}

impl Drop for TerminalUi {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_when_not_a_terminal_or_not_wanted() {
        // Test harness stdout is captured (not a terminal) under `cargo test`.
        for quiet in [true, false] {
            let mut ui = TerminalUi::new(quiet);
            assert!(ui.live_sink().is_none(), "fio need not report its status");
            ui.step_started(0, 2, "w job on v", 3.0, 3.5);
            assert!(ui.bar.is_none(), "no progress line");
            ui.step_finished();
        }
    }
}
