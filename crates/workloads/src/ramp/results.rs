//! What a ramp run measured: one row per system and run, judged by the write-cycle and
//! write-latency criteria; the stored table (`kind = "ramp"`) and RampRun.pl's summary.csv.
//!
//! Each run is diagnosed like a fio job ([`diagnose`]): the generator's own figures stand
//! for fio's, the node's samples give the QoS waits, the tool sets the hosts (the
//! generator's threads are the load generator). A criterion missed under a bottleneck that
//! discredits the measurement (`client-cpu-bound`, `noisy-host`) is inconclusive: a longer
//! write cycle or write latency is what a starved generator produces.

use assess::{Check, Diagnosis, Outcome, Quantity, Sense};
use harness::store::SummaryTable;
use harness::verdict::Verdict;
use loadgen::genio::{RunStats, Workload};
use serde::Serialize;

use super::plan::Settings;

/// The summary table's `kind` in the results store.
pub const KIND: &str = "ramp";
/// The stored table's columns.
pub const COLUMNS: [&str; 14] = [
    "Run",
    "Target IOPS",
    "Read IOPS",
    "Write IOPS",
    "Total IOPS",
    "Longest WIJ time (sec)",
    "Longest write cycle (sec)",
    "Effective write latency (ms)",
    "Randread average (ms)",
    "Pass",
    // The criteria the run was judged by (scaled), so a report draws the right lines.
    "Write cycle limit (sec)",
    "Write latency limit (ms)",
    // The run's outcome (pass / fail / inconclusive) and what limited it.
    "Outcome",
    "Bottleneck",
];
/// summary.csv's header (RampRun.pl's columns).
pub const CSV_HEADER: &str = "Run,Read IOPS,Write IOPS,Total IOPS,Longest WIJ time (sec),Longest write cycle (sec),Effective write latency (ms),Randread average (ms),Pass";

/// One run of one system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// 1-based.
    pub run: u32,
    pub target_iops: u64,
    pub dirty_blocks: u64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub total_iops: f64,
    pub longest_wij_s: f64,
    pub longest_cycle_s: f64,
    /// The longest cycle's parts: burst (last write's reply) and the final FLUSH.
    pub longest_burst_s: f64,
    pub longest_flush_s: f64,
    pub write_lat_ms: f64,
    pub read_lat_ms: f64,
    pub cycles: usize,
    /// Cycles an overrun pushed past the end of the run.
    pub cycles_skipped: u64,
    /// Reads that waited for an in-flight slot (the target fell behind the arrival rate).
    pub reads_delayed: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Both criteria met and no I/O errors (RampRun.pl's PASS).
    pub pass: bool,
    /// The run's outcome once diagnosed: a miss the bottleneck explains is inconclusive.
    pub outcome: Outcome,
    /// What limited the run ([`diagnose`]); None until diagnosed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<String>,
}

impl Row {
    pub fn new(run: u32, target: u64, w: &Workload, s: &RunStats, set: &Settings) -> Row {
        let longest = s.longest_cycle();
        let mut r = Row {
            run,
            target_iops: target,
            dirty_blocks: w.dirty_blocks,
            read_iops: s.read_iops(),
            write_iops: s.write_iops(),
            total_iops: s.read_iops() + s.write_iops(),
            longest_wij_s: s.longest_wij_s(),
            longest_cycle_s: s.longest_cycle_s(),
            longest_burst_s: longest.map(|c| c.burst_s).unwrap_or(0.0),
            longest_flush_s: longest.map(|c| c.cycle_s - c.burst_s).unwrap_or(0.0),
            write_lat_ms: s.write_lat_mean_s() * 1e3,
            read_lat_ms: s.read_lat_mean_s * 1e3,
            cycles: s.cycles.len(),
            cycles_skipped: s.cycles_skipped,
            reads_delayed: s.reads_delayed,
            errors: s.errors,
            first_error: s.first_error.clone(),
            pass: false,
            outcome: Outcome::Fail,
            bottleneck: None,
        };
        r.pass = verdicts(&r, set).iter().all(|v| v.passed);
        r.outcome = if r.pass { Outcome::Pass } else { Outcome::Fail };
        r
    }

    /// The run's verdicts judged with its diagnosis ([`judged_verdicts`]); the row keeps
    /// the outcome and the bottleneck.
    pub fn judge(&mut self, s: &Settings, d: &Diagnosis) -> Vec<Verdict> {
        let v = judged_verdicts(self, s, Some(d));
        self.outcome = v.iter().map(|v| v.outcome).max().unwrap_or(Outcome::Pass);
        self.bottleneck = Some(d.bottleneck.as_str().to_string());
        v
    }
}

/// The run's verdicts ([`verdicts`]) judged with its diagnosis: the write cycle and the
/// write latency are times (more is worse), so a miss under `client-cpu-bound` or
/// `noisy-host` is inconclusive; an I/O error stays a failure.
pub fn judged_verdicts(r: &Row, s: &Settings, d: Option<&Diagnosis>) -> Vec<Verdict> {
    let io_error = r.errors > 0;
    let targets = [s.cycle_limit_s(), s.max_write_latency * 1e3];
    verdicts(r, s)
        .into_iter()
        .enumerate()
        .map(|(i, v)| match targets.get(i) {
            Some(&target) => {
                let check = Check {
                    passed: v.passed,
                    quantity: Quantity::Latency,
                    sense: Sense::AtMost,
                    measured: v.measured,
                    target,
                    io_error,
                };
                v.judged(&check, d)
            }
            None => v,
        })
        .collect()
}

/// Seconds for a label: "2.25 s", "1.125 s", "45 s", "500 ms".
fn secs(s: f64) -> String {
    let trim = |t: String| t.trim_end_matches('0').trim_end_matches('.').to_string();
    if s < 1.0 {
        format!("{} ms", trim(format!("{:.3}", s * 1e3)))
    } else {
        format!("{} s", trim(format!("{s:.3}")))
    }
}

/// The run's verdicts: the write-cycle and write-latency criteria, and no I/O errors.
pub fn verdicts(r: &Row, s: &Settings) -> Vec<Verdict> {
    let limit = s.cycle_limit_s();
    let lat = s.max_write_latency * 1e3;
    let mut v = vec![
        Verdict::plain(
            format!("longest write cycle < {}", secs(limit)),
            r.longest_cycle_s,
            format!("< {limit}"),
            r.longest_cycle_s < limit && r.cycles_skipped == 0,
            format!(
                "longest write cycle {:.3} s (burst {:.3} s + FLUSH {:.3} s, {} dirty blocks), want < {limit:.3} s{}",
                r.longest_cycle_s,
                r.longest_burst_s,
                r.longest_flush_s,
                r.dirty_blocks,
                if r.cycles_skipped > 0 {
                    format!(
                        "; {} cycle(s) could not start before the run ended",
                        r.cycles_skipped
                    )
                } else {
                    String::new()
                }
            ),
        ),
        Verdict::plain(
            format!("effective write latency < {lat} ms"),
            r.write_lat_ms,
            format!("< {lat}"),
            r.write_lat_ms < lat,
            format!(
                "effective write latency {:.3} ms, want < {lat} ms",
                r.write_lat_ms
            ),
        ),
    ];
    if r.errors > 0 {
        v.push(Verdict::plain(
            "no I/O errors".into(),
            r.errors as f64,
            "= 0".into(),
            false,
            format!(
                "{} I/O error(s); first: {}",
                r.errors,
                r.first_error.as_deref().unwrap_or("?")
            ),
        ));
    }
    v
}

fn round(v: f64, places: i32) -> serde_json::Value {
    let m = 10f64.powi(places);
    serde_json::json!((v * m).round() / m)
}

/// The stored table of one system.
pub fn table(system: &str, rows: &[Row], s: &Settings) -> SummaryTable {
    SummaryTable::new(
        KIND,
        system,
        &COLUMNS,
        rows.iter()
            .map(|r| {
                vec![
                    r.run.into(),
                    r.target_iops.into(),
                    round(r.read_iops, 1),
                    round(r.write_iops, 1),
                    round(r.total_iops, 1),
                    round(r.longest_wij_s, 3),
                    round(r.longest_cycle_s, 3),
                    round(r.write_lat_ms, 3),
                    round(r.read_lat_ms, 3),
                    r.pass.into(),
                    round(s.cycle_limit_s(), 3),
                    round(s.max_write_latency * 1e3, 3),
                    r.outcome.as_str().into(),
                    r.bottleneck.clone().into(),
                ]
            })
            .collect(),
    )
}

/// summary.csv: RampRun.pl's columns, one line per run.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in rows {
        out.push_str(&format!(
            "{},{:.0},{:.0},{:.0},{:.3},{:.3},{:.3},{:.3},{}\n",
            r.run,
            r.read_iops,
            r.write_iops,
            r.total_iops,
            r.longest_wij_s,
            r.longest_cycle_s,
            r.write_lat_ms,
            r.read_lat_ms,
            if r.pass { "PASS" } else { "FAIL" }
        ));
    }
    out
}

/// The highest target that passed.
pub fn highest_pass(rows: &[Row]) -> Option<&Row> {
    rows.iter().filter(|r| r.pass).max_by_key(|r| r.target_iops)
}
