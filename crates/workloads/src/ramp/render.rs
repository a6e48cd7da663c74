//! The terminal side: a line per finished run, the table per system.

use super::plan::{Settings, System};
use super::results::{highest_pass, Row};

/// A rate in IOPS with its thousands grouped ([`crate::thousands`]).
fn thousands(v: u64) -> String {
    crate::thousands(v as f64, 0)
}

/// One line for a finished run (progress).
pub fn run_line(system: &str, runs: u32, r: &Row) -> String {
    format!(
        "[run {}/{runs}] {system}: target {} IOPS: read {:.0}, write {:.0}, total {:.0} IOPS; WIJ {:.2} s, write cycle {:.2} s, write latency {:.3} ms, read latency {:.3} ms: {}{}",
        r.run,
        thousands(r.target_iops),
        r.read_iops,
        r.write_iops,
        r.total_iops,
        r.longest_wij_s,
        r.longest_cycle_s,
        r.write_lat_ms,
        r.read_lat_ms,
        r.outcome.label(),
        {
            let mut notes = Vec::new();
            if let Some(b) = &r.bottleneck {
                notes.push(b.clone());
            }
            if r.cycles_skipped > 0 {
                notes.push(format!(
                    "{} cycle(s) skipped: an overrun pushed them past the run",
                    r.cycles_skipped
                ));
            }
            if r.reads_delayed > 0 {
                notes.push(format!(
                    "{} read(s) waited for one of the in-flight slots",
                    r.reads_delayed
                ));
            }
            if r.errors > 0 {
                notes.push(format!(
                    "{} I/O error(s), first: {}",
                    r.errors,
                    r.first_error.as_deref().unwrap_or("?")
                ));
            }
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        }
    )
}

/// The human table of one system, with the criteria and the highest passing target.
pub fn render(system: &System, where_: &str, rows: &[Row], s: &Settings) -> String {
    let mut out = format!(
        "{} on {where_}: ramp {} → {} IOPS, {} run(s) × {:.1} s, write cycle every {:.2} s; pass: longest write cycle < {:.3} s and effective write latency < {} ms\n",
        system.name,
        thousands(system.min_iops),
        thousands(system.max_iops),
        s.runs,
        s.runtime_s(),
        s.cycle_s(),
        s.cycle_limit_s(),
        s.max_write_latency * 1e3
    );
    out.push_str(&format!(
        "{:>3}  {:>8}  {:>9}  {:>10}  {:>10}  {:>7}  {:>15}  {:>14}  {:>13}  {:<12}  {}\n",
        "Run",
        "Target",
        "Read IOPS",
        "Write IOPS",
        "Total IOPS",
        "WIJ (s)",
        "Write cycle (s)",
        "Write lat (ms)",
        "Read lat (ms)",
        "Outcome",
        "Bottleneck"
    ));
    for r in rows {
        out.push_str(&format!(
            "{:>3}  {:>8}  {:>9.0}  {:>10.0}  {:>10.0}  {:>7.2}  {:>15.2}  {:>14.3}  {:>13.3}  {:<12}  {}\n",
            r.run,
            r.target_iops,
            r.read_iops,
            r.write_iops,
            r.total_iops,
            r.longest_wij_s,
            r.longest_cycle_s,
            r.write_lat_ms,
            r.read_lat_ms,
            r.outcome.label(),
            r.bottleneck.as_deref().unwrap_or("-")
        ));
    }
    match highest_pass(rows) {
        Some(r) => out.push_str(&format!(
            "highest passing target: {} IOPS (run {})\n",
            thousands(r.target_iops),
            r.run
        )),
        None => out.push_str("highest passing target: none (no run passed)\n"),
    }
    out
}
