//! `qoslab bench --profile ramp` (or a plan with `[[system]]`s): GenIO-style ramp runs on
//! qoslab's own generator, a table and summary.csv per system, everything in the results
//! store. Exit 0 when every run of every system passed, 1 when any failed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bench::export;
use bench::plan::Plan;
use bench::ramp::{self, Overrides, Row, System};
use bench::store::{Env, Store};
use bench::target::Target;
use clap::Args;

/// Options of the ramp profile (flattened into `qoslab bench`).
#[derive(Args, Debug, Default, Clone)]
#[command(
    next_help_heading = "Ramp profile (--profile ramp, or a plan with [[system]]s; docs/BENCH.md)"
)]
pub struct RampArgs {
    /// Target IOPS of the first run (required with --profile ramp).
    #[arg(long, value_name = "IOPS")]
    min_iops: Option<u64>,
    /// Target IOPS of the last run (default: --min-iops). Run k of N targets
    /// min + (max - min) × k / (N - 1), as RampRun.pl.
    #[arg(long, value_name = "IOPS")]
    max_iops: Option<u64>,
    /// Number of runs (default 10). --runtime is each run's length (default 320s).
    #[arg(long, value_name = "N")]
    runs: Option<u32>,
    /// Multiply the cycle, the runtime and the write-cycle limit by this (default 1):
    /// 0.05 turns 80 s cycles into 4 s ones with a 2.25 s limit.
    #[arg(long, value_name = "FACTOR")]
    scale: Option<f64>,
    /// The write daemon's period before --scale (default 80s).
    #[arg(long, value_name = "DURATION", value_parser = crate::bench::duration)]
    cycle: Option<f64>,
    /// Pass if the longest write cycle is below this, before --scale (default 45/80 of
    /// the cycle: 45s).
    #[arg(long, value_name = "DURATION", value_parser = crate::bench::duration)]
    max_write_cycle: Option<f64>,
    /// Pass if the mean latency of the cycles' writes is below this (default 1ms; not scaled).
    #[arg(long, value_name = "DURATION", value_parser = crate::bench::duration)]
    max_write_latency: Option<f64>,
    /// Percent of the target rate that is random reads, by I/O count (default 75).
    #[arg(long, value_name = "PERCENT")]
    read_pct: Option<f64>,
    /// Block size of reads and dirty-block writes (default 8KiB).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    block_size: Option<u64>,
    /// Queue depth of the write burst (default 32).
    #[arg(long, value_name = "N")]
    write_qd: Option<u32>,
    /// Dirty blocks per cycle, instead of the write share of the target rate.
    #[arg(long, value_name = "N")]
    dirty_blocks: Option<u64>,
    /// Bytes the random I/O addresses (default 1GiB; the journal follows it).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    span: Option<u64>,
    /// Where summary.csv goes (default ./summary.csv; with several systems,
    /// summary-SYSTEM.csv beside it). Rewritten after every run.
    #[arg(long, value_name = "FILE")]
    summary_csv: Option<PathBuf>,
    /// Skip writing the span and journal area once before the first run (the default
    /// prefills, as GenIO's dgen.pl: runs then never pay for first allocation).
    #[arg(long)]
    no_prefill: bool,
}

fn size(s: &str) -> Result<u64, String> {
    qos_core::parse_size(s).map_err(|e| e.to_string())
}

impl RampArgs {
    fn overrides(&self, runtime: Option<f64>) -> Overrides {
        Overrides {
            min_iops: self.min_iops,
            max_iops: self.max_iops,
            runs: self.runs,
            runtime,
            scale: self.scale,
            cycle: self.cycle,
            max_write_cycle: self.max_write_cycle,
            max_write_latency: self.max_write_latency,
            read_pct: self.read_pct,
            block_size: self.block_size.map(|b| b.min(u64::from(u32::MAX)) as u32),
            write_qd: self.write_qd,
            dirty_blocks: self.dirty_blocks,
            span: self.span,
            prefill: self.no_prefill.then_some(false),
        }
    }
}

/// The summary.csv path of each system.
fn csv_paths(base: Option<&Path>, systems: &[System]) -> Vec<PathBuf> {
    let base = base
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("summary.csv"));
    if systems.len() == 1 {
        return vec![base];
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "summary".into());
    let ext = base
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "csv".into());
    systems
        .iter()
        .map(|s| base.with_file_name(format!("{stem}-{}.{ext}", s.name)))
        .collect()
}

/// The running run (index, start) and whether the line is done.
type LiveState = Arc<Mutex<(Option<(u32, Instant)>, bool)>>;

/// A TTY-only line (run k/N, elapsed, time left) redrawn twice a second while a run goes.
struct LiveLine {
    state: Option<LiveState>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveLine {
    fn new(enabled: bool, runs: u32, run_s: f64) -> LiveLine {
        if !enabled || !std::io::stdout().is_terminal() {
            return LiveLine {
                state: None,
                thread: None,
            };
        }
        let state = Arc::new(Mutex::new((None::<(u32, Instant)>, false)));
        let st = state.clone();
        let thread = std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            let g = st.lock().unwrap_or_else(|e| e.into_inner());
            if g.1 {
                break;
            }
            if let Some((k, t0)) = g.0 {
                let el = t0.elapsed().as_secs_f64();
                let left = (run_s - el).max(0.0) + f64::from(runs - k - 1) * run_s;
                let mut out = std::io::stdout().lock();
                let _ = write!(
                    out,
                    "\r\x1b[2K[run {}/{runs}] {el:.0}s / {run_s:.0}s  (ramp: ~{left:.0}s left)",
                    k + 1
                );
                let _ = out.flush();
            }
        });
        LiveLine {
            state: Some(state),
            thread: Some(thread),
        }
    }

    fn set(&self, run: Option<u32>) {
        if let Some(s) = &self.state {
            let mut g = s.lock().unwrap_or_else(|e| e.into_inner());
            if run.is_none() && g.0.is_some() {
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "\r\x1b[2K");
                let _ = out.flush();
            }
            g.0 = run.map(|k| (k, Instant::now()));
        }
    }
}

impl Drop for LiveLine {
    fn drop(&mut self) {
        self.set(None);
        if let Some(s) = &self.state {
            s.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Printer {
    quiet: bool,
    runs: u32,
    csv: Vec<(String, PathBuf)>,
    csv_error: Option<String>,
    live: LiveLine,
}

impl ramp::Observer for Printer {
    fn prefilling(&mut self, bytes: u64) {
        if !self.quiet {
            println!(
                "prefilling {} MiB of each system's volume (span and journal, once; --no-prefill skips)",
                bytes >> 20
            );
        }
    }

    fn run_started(&mut self, k: u32, _runs: u32) {
        self.live.set(Some(k));
    }

    fn run_finished(&mut self, system: &System, rows: &[Row]) {
        if let Some((_, path)) = self.csv.iter().find(|(n, _)| *n == system.name) {
            if let Err(e) = std::fs::write(path, ramp::csv(rows)) {
                self.csv_error = Some(format!("writing {}: {e}", path.display()));
            }
        }
        self.live.set(None);
        if !self.quiet {
            if let Some(r) = rows.last() {
                let mut so = std::io::stdout().lock();
                let _ = writeln!(so, "{}", ramp::run_line(&system.name, self.runs, r));
                let _ = so.flush();
            }
        }
    }
}

/// Run the ramp plan. `runtime` is --runtime (each run's length, before --scale).
#[allow(clippy::too_many_arguments)]
pub fn run(
    plan: &Plan,
    target: &Target,
    db: &Path,
    runtime: Option<f64>,
    fio_ramp: Option<f64>,
    clients: &[String],
    json: bool,
    args: &RampArgs,
) -> anyhow::Result<()> {
    if !clients.is_empty() {
        anyhow::bail!(
            "--client: the ramp profile runs qoslab's own generator, not fio; run qoslab on each load generator instead"
        );
    }
    if fio_ramp.is_some() {
        anyhow::bail!(
            "--ramp is fio's ramp time; the ramp profile has none (see --runs, --runtime, --scale)"
        );
    }
    let mut plan = plan.clone();
    let Some(rp) = plan.ramp_plan.as_mut() else {
        anyhow::bail!("{}: no [[system]] to ramp", plan.origin);
    };
    if plan.origin == "--profile ramp" && args.min_iops.is_none() {
        anyhow::bail!(
            "--profile ramp needs --min-iops (and usually --max-iops), e.g. --min-iops 1000 --max-iops 10000"
        );
    }
    rp.apply(&args.overrides(runtime))
        .map_err(|m| anyhow::anyhow!("{}: {m}", plan.origin))?;
    let rp = rp.clone();
    let s = &rp.settings;
    let csv = csv_paths(args.summary_csv.as_deref(), &rp.systems);
    // Fail now, not after the ramp, when a summary.csv cannot be written.
    for p in &csv {
        std::fs::write(p, format!("{}\n", ramp::CSV_HEADER))
            .with_context(|| format!("--summary-csv: writing {}", p.display()))?;
    }
    let total = f64::from(s.runs) * (s.runtime_s() + 0.2);
    if !json {
        println!(
            "qoslab bench: ramp {} ({} system(s) × {} run(s) × {:.1} s, ~{:.0} s) on {}; results: {}",
            plan.name,
            rp.systems.len(),
            s.runs,
            s.runtime_s(),
            total,
            target.describe(),
            db.display()
        );
    }
    let mut store = Store::open(db)?;
    let env = Env::detect("not used (qoslab genio)".into(), env!("CARGO_PKG_VERSION"));
    let mut printer = Printer {
        quiet: json,
        runs: s.runs,
        csv: rp
            .systems
            .iter()
            .map(|s| s.name.clone())
            .zip(csv.iter().cloned())
            .collect(),
        csv_error: None,
        live: LiveLine::new(!json, s.runs, s.runtime_s()),
    };
    let out = ramp::run_ramp(&plan, target, &mut store, &env, &mut printer)?;
    drop(printer.live);
    if let Some(e) = printer.csv_error {
        anyhow::bail!("summary.csv: {e}");
    }
    let rec = store
        .load_run(out.run_id)
        .context("reading the stored run back")?;
    if json {
        std::io::stdout().write_all(&export::json(&rec))?;
    } else {
        for ((sys, addr, rows), path) in out.systems.iter().zip(&csv) {
            println!("\n{}", ramp::render(sys, addr, rows, s));
            println!("summary.csv: {}", path.display());
        }
        println!(
            "\nrun {}: {}; stored in {}; `qoslab results show {} --db {}`",
            rec.id,
            rec.status.to_uppercase(),
            db.display(),
            rec.id,
            db.display()
        );
    }
    if !out.passed() {
        crate::bench::exit_failed();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_csv_per_system() {
        let sys = |n: &str| System {
            name: n.into(),
            volume: None,
            target: None,
            min_iops: 1,
            max_iops: 1,
        };
        assert_eq!(
            csv_paths(None, &[sys("a")]),
            vec![PathBuf::from("summary.csv")]
        );
        assert_eq!(
            csv_paths(Some(Path::new("/x/out.csv")), &[sys("a"), sys("b")]),
            vec![PathBuf::from("/x/out-a.csv"), PathBuf::from("/x/out-b.csv")]
        );
    }
}
