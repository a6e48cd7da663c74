//! What the scenario measured: one row per volume and step, the stored summary table
//! (`kind = "isolation"`), and whether the floors held.

use harness::store::SummaryTable;
use harness::Outcome;
use serde_json::json;

use super::spec::Mode;

/// One volume in one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub mode: Mode,
    pub step: u32,
    /// Bully's offered load as a multiple of the remaining capacity.
    pub bully_load: f64,
    pub volume: String,
    pub protected: bool,
    /// Offered IOPS (the floor for protected volumes, the step's load for the bully).
    pub target_iops: u64,
    pub iops: f64,
    pub lat_mean_ms: f64,
    pub lat_p99_ms: f64,
    /// Mean time per request queued for the volume's own ceiling / for the node.
    pub ceiling_wait_ms: f64,
    pub floor_wait_ms: f64,
    /// Mean time per request from arrival at the node to its reply (the node's own
    /// counters: fio's latency minus this is the client, the network and the CPU).
    pub node_lat_ms: f64,
    /// Protected: both step verdicts held (the control's rows say whether they would
    /// have). Bully: always true.
    pub pass: bool,
}

/// The summary table's `kind` in the results store.
pub const KIND: &str = "isolation";

/// Columns of the stored summary table (`kind = "isolation"`).
pub const COLUMNS: [&str; 13] = [
    "mode",
    "step",
    "bully_load",
    "volume",
    "role",
    "target_iops",
    "iops",
    "lat_mean_ms",
    "lat_p99_ms",
    "ceiling_wait_ms",
    "floor_wait_ms",
    "pass",
    "node_lat_ms",
];

/// The metric of the per-step p99 verdicts.
pub const P99_METRIC: &str = "lat_p99_us";

/// The stored summary table.
pub fn table(rows: &[Row]) -> SummaryTable {
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    SummaryTable {
        kind: KIND.into(),
        name: "isolation".into(),
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    json!(r.mode.as_str()),
                    json!(r.step),
                    json!(r3(r.bully_load)),
                    json!(r.volume),
                    json!(if r.protected { "protected" } else { "bully" }),
                    json!(r.target_iops),
                    json!(r3(r.iops)),
                    json!(r3(r.lat_mean_ms)),
                    json!(r3(r.lat_p99_ms)),
                    json!(r3(r.ceiling_wait_ms)),
                    json!(r3(r.floor_wait_ms)),
                    json!(r.pass),
                    json!(r3(r.node_lat_ms)),
                ]
            })
            .collect(),
    }
}

/// The floors held: every IOPS verdict and the control's own verdict passed and no fio run
/// failed (the p99 verdicts aside).
pub fn floors_held(outcome: &Outcome) -> bool {
    outcome.tally.failed_jobs == 0
        && outcome
            .record
            .jobs
            .iter()
            .flat_map(|j| &j.verdicts)
            .all(|v| v.passed || v.expectation.starts_with(P99_METRIC))
}
