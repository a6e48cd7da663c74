//! The ramp family's command-line options (added to `qoslab bench`) and where summary.csv
//! goes.

use std::path::{Path, PathBuf};

use clap::Args;
use harness::plan::parse_duration_str;

use super::plan::{Overrides, System};

fn duration(s: &str) -> Result<f64, String> {
    parse_duration_str(s)
}

/// Options of the ramp profile (flattened into `qoslab bench`).
#[derive(Args, Debug, Default, Clone)]
#[command(
    next_help_heading = "Ramp profile (--profile ramp, or a plan with [[system]]s; docs/BENCH.md)"
)]
pub struct RampArgs {
    /// Target IOPS of the first run (required with --profile ramp).
    #[arg(long, value_name = "IOPS")]
    pub min_iops: Option<u64>,
    /// Target IOPS of the last run (default: --min-iops). Run k of N targets
    /// min + (max - min) × k / (N - 1), as RampRun.pl.
    #[arg(long, value_name = "IOPS")]
    max_iops: Option<u64>,
    /// Number of runs (default 10). --runtime is each run's length (default 320s).
    #[arg(long, value_name = "N")]
    runs: Option<u32>,
    /// The write daemon's period before --scale (default 80s).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    cycle: Option<f64>,
    /// Pass if the longest write cycle is below this, before --scale (default 45/80 of
    /// the cycle: 45s).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    max_write_cycle: Option<f64>,
    /// Pass if the mean latency of the cycles' writes is below this (default 1ms; not scaled).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
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
    pub summary_csv: Option<PathBuf>,
    /// Skip writing the span and journal area once before the first run (the default
    /// prefills, as GenIO's dgen.pl: runs then never pay for first allocation).
    #[arg(long)]
    no_prefill: bool,
}

fn size(s: &str) -> Result<u64, String> {
    qos_core::parse_size(s).map_err(|e| e.to_string())
}

impl RampArgs {
    /// The plan overrides these options make; `runtime` and `scale` are the common
    /// `--runtime` and `--scale` (which multiplies the cycle, the runtime and the
    /// write-cycle limit).
    pub fn overrides(&self, runtime: Option<f64>, scale: Option<f64>) -> Overrides {
        Overrides {
            min_iops: self.min_iops,
            max_iops: self.max_iops,
            runs: self.runs,
            runtime,
            scale,
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
pub fn csv_paths(base: Option<&Path>, systems: &[System]) -> Vec<PathBuf> {
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
