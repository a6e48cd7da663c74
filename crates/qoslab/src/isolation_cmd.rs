//! `qoslab bench --profile isolation`: floors against a noisy neighbour (seed 001), with
//! the control run, printed side by side and stored as one run.

use std::io::Write;
use std::path::Path;

use bench::fio::executor::fio_version;
use bench::isolation::{self, IsolationOutcome, IsolationSpec, Mode, Row};
use bench::store::{Env, Store};
use clap::Args;

/// Options of the isolation profile (ignored by other profiles).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Isolation profile (--profile isolation)")]
pub struct IsolationArgs {
    /// Emulated controller capacity, IOPS.
    #[arg(long, value_name = "IOPS", default_value_t = 20_000)]
    pub capacity_iops: u64,
    /// Number of protected volumes.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub protected: usize,
    /// Each protected volume's floor, which it is also driven at (default: half the
    /// capacity split between the protected volumes: 5,000 each for 2 on 20,000).
    #[arg(long, value_name = "IOPS")]
    pub floor_iops: Option<u64>,
    /// fio iodepth of each protected volume.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub protected_qd: u32,
    /// fio iodepth of the bully.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub bully_qd: u32,
    /// Steps of the bully's ramp from 1x to --max-load x the capacity the floors leave.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub steps: u32,
    /// The bully's top load, as a multiple of the remaining capacity.
    #[arg(long, value_name = "X", default_value_t = 2.0)]
    pub max_load: f64,
    /// fio block size for every volume.
    #[arg(long, value_name = "SIZE", default_value = "4k")]
    pub bs: String,
    /// fio rw mode for every volume.
    #[arg(long, value_name = "MODE", default_value = "randread")]
    pub rw: String,
    /// Skip the control run (the same scenario with floors disabled).
    #[arg(long)]
    pub no_control: bool,
}

impl IsolationArgs {
    /// The spec; `runtime`/`ramp` per step (defaults 5 s and 1 s).
    pub fn spec(&self, runtime: Option<f64>, ramp: Option<f64>) -> anyhow::Result<IsolationSpec> {
        let bs = fio_size(&self.bs).map_err(|e| anyhow::anyhow!("--bs {:?}: {e}", self.bs))?;
        let floor = self
            .floor_iops
            .unwrap_or_else(|| self.capacity_iops / 2 / (self.protected.max(1) as u64));
        let spec = IsolationSpec {
            capacity_iops: self.capacity_iops,
            protected: self.protected,
            floor_iops: floor,
            protected_qd: self.protected_qd,
            bully_qd: self.bully_qd,
            steps: self.steps,
            max_load: self.max_load,
            bs,
            rw: self.rw.clone(),
            runtime: runtime.unwrap_or(5.0),
            ramp: ramp.unwrap_or(1.0),
            control: !self.no_control,
        };
        spec.validate()
            .map_err(|e| anyhow::anyhow!("--profile isolation: {e}"))?;
        Ok(spec)
    }
}

/// A size as fio writes it (`4k`, `1m`: powers of 1024) or with a unit (`4KiB`, `4096`).
fn fio_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        _ => return qos_core::parse_size(t).map_err(|e| e.to_string()),
    };
    num.parse::<u64>()
        .map(|n| n * mul)
        .map_err(|_| "expected e.g. 4k, 64k, 1m or 4096".to_string())
}

/// Print the outcome's status line and failures; the caller exits 1 unless it passed.
pub fn report(outcome: &IsolationOutcome, db: &Path) {
    let rec = &outcome.record;
    let (pass, fail) = rec.verdict_counts();
    println!(
        "run {}: {} ({pass} expectation(s) passed, {fail} failed)",
        rec.id,
        rec.status.to_uppercase()
    );
    for j in &rec.jobs {
        for v in j.verdicts.iter().filter(|v| !v.passed) {
            println!("  FAILED: {}: {}: {}", j.name, v.expectation, v.detail);
        }
    }
    println!(
        "stored in {} as run {}; `qoslab results show {} --db {}`",
        db.display(),
        rec.id,
        rec.id,
        db.display()
    );
}

/// Prints one line per step as it finishes.
struct Lines {
    quiet: bool,
}

impl isolation::Progress for Lines {
    fn step_started(&mut self, mode: Mode, step: u32, steps: u32, load: f64) {
        if !self.quiet {
            print!(
                "  {:<7} step {step}/{steps}: bully at {load:.2}x ... ",
                mode.as_str()
            );
            let _ = std::io::stdout().flush();
        }
    }

    fn step_finished(&mut self, rows: &[Row]) {
        if self.quiet {
            return;
        }
        let parts: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{} {:.0} IOPS p99 {:.2} ms{}",
                    r.volume,
                    r.iops,
                    r.lat_p99_ms,
                    if r.protected && !r.pass { " (!)" } else { "" }
                )
            })
            .collect();
        println!("{}", parts.join(", "));
    }
}

/// `qoslab demo`'s second part: the isolation scenario in 3 steps (1x, 1.5x, 2x).
pub fn demo_scenario(runtime: f64, ramp: f64, db: &Path) -> anyhow::Result<IsolationOutcome> {
    let spec = IsolationSpec {
        steps: 3,
        runtime: runtime.max(3.0),
        ramp,
        ..IsolationSpec::default()
    };
    println!(
        "\nSeed 001 on qoslab: floors against a noisy neighbour (emulated {} IOPS controller)\n",
        spec.capacity_iops
    );
    let outcome = run_isolation(&spec, db, false)?;
    report(&outcome, db);
    if outcome.floors_held() && !outcome.passed() {
        println!(
            "The floors held (IOPS); a p99 verdict failed. fio's p99 includes the load generator \
             sharing this machine's CPU with the bully; the node's own mean latency for the \
             protected volumes is printed above the table's notes."
        );
    }
    Ok(outcome)
}

/// Run the scenario with real fio and store it; prints the side-by-side table.
pub fn run_isolation(
    spec: &IsolationSpec,
    db: &Path,
    quiet: bool,
) -> anyhow::Result<IsolationOutcome> {
    let mut store = Store::open(db)?;
    let env = Env::detect(fio_version("fio"), env!("CARGO_PKG_VERSION"));
    let (exec, dir) = crate::bench::executor(&[], None)?;
    if !quiet {
        let per_mode = spec.steps as f64 * (spec.runtime + spec.ramp + 1.0);
        println!(
            "qoslab bench: isolation: {} protected volume(s) at a {} IOPS floor, bully {}x..{}x of the remaining {} IOPS, controller {} IOPS (~{:.0} s); results: {}",
            spec.protected,
            spec.floor_iops,
            spec.loads()[0],
            spec.max_load,
            spec.remaining(),
            spec.capacity_iops,
            per_mode * if spec.control { 2.0 } else { 1.0 },
            db.display()
        );
    }
    let r = isolation::run(spec, exec.as_ref(), &mut store, &env, &mut Lines { quiet });
    let _ = std::fs::remove_dir_all(dir);
    let outcome = r?;
    if !quiet {
        println!("\n{}", isolation::render(&outcome.rows));
    }
    Ok(outcome)
}
