//! What the scenario measured: one row per volume and step, the stored summary table
//! (`kind = "isolation"`), and whether the floors held.

use harness::store::SummaryTable;
use harness::Outcome;
use serde_json::json;

use super::spec::{Mode, Protocol};

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

/// Columns of the stored summary table (`kind = "isolation"`); `protocol` is how fio
/// reached the volumes (`nbd`, `iscsi`), the same on every row of a run.
pub const COLUMNS: [&str; 14] = [
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
    "protocol",
];

/// The metric of the per-step p99 verdicts.
pub const P99_METRIC: &str = "lat_p99_us";

/// The stored summary table of a run over `protocol`.
pub fn table(rows: &[Row], protocol: Protocol) -> SummaryTable {
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    SummaryTable::new(
        KIND,
        "isolation",
        &COLUMNS,
        rows.iter()
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
                    json!(protocol.as_str()),
                ]
            })
            .collect(),
    )
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

/// When the load generator, not the node, capped the offered load: in the floors run's
/// top step the bully got under 95% of what it was offered, the node served under 98% of
/// its capacity, and the bully's requests hardly queued at the node (under a tenth of
/// their latency: a saturated controller queues the bully behind the floors). The node
/// had room and fio did not send more. The sentence for the summary, else None.
pub fn generator_capped(rows: &[Row], capacity_iops: u64) -> Option<String> {
    let top = rows
        .iter()
        .filter(|r| r.mode == Mode::Floors)
        .map(|r| r.step)
        .max()?;
    let step: Vec<&Row> = rows
        .iter()
        .filter(|r| r.mode == Mode::Floors && r.step == top)
        .collect();
    let bully = step.iter().find(|r| !r.protected)?;
    let served: f64 = step.iter().map(|r| r.iops).sum();
    let cap = capacity_iops as f64;
    let unqueued = bully.floor_wait_ms < 0.1 * bully.lat_mean_ms;
    (bully.iops < 0.95 * bully.target_iops as f64 && served < 0.98 * cap && unqueued).then(|| {
        format!(
            "The load generator, not the node, capped the offered load: at the top step the \
             bully got {:.0} of the {} IOPS offered while the node served {:.0} of its {} IOPS \
             and hardly queued it; raise --bully-jobs or --bully-qd, or use a larger load generator.",
            bully.iops, bully.target_iops, served, capacity_iops
        )
    })
}

#[cfg(test)]
mod capped_tests {
    use super::*;

    fn row(step: u32, protected: bool, target: u64, iops: f64, queued_ms: f64) -> Row {
        Row {
            mode: Mode::Floors,
            step,
            bully_load: 1.0,
            volume: if protected { "p" } else { "bully" }.into(),
            protected,
            target_iops: target,
            iops,
            lat_mean_ms: 1.0 + queued_ms,
            lat_p99_ms: 0.0,
            ceiling_wait_ms: 0.0,
            floor_wait_ms: queued_ms,
            node_lat_ms: 0.0,
            pass: true,
        }
    }

    #[test]
    fn a_bully_short_of_its_offer_on_an_idle_node_is_the_generator() {
        // Seed 001 at 300k/75k: one fio job topped out at 137k of 300k offered.
        let rows = [
            row(1, true, 75_000, 75_000.0, 0.0),
            row(1, true, 75_000, 75_000.0, 0.0),
            row(1, false, 300_000, 137_000.0, 0.01),
        ];
        let s = generator_capped(&rows, 300_000).unwrap();
        assert!(s.contains("137000 of the 300000 IOPS offered"), "{s}");
        // The node saturated: the bully queued behind the floors, its shortfall is the
        // node's doing.
        let rows = [
            row(1, true, 75_000, 75_000.0, 0.0),
            row(1, true, 75_000, 75_000.0, 0.0),
            row(1, false, 300_000, 140_000.0, 5.0),
        ];
        assert_eq!(generator_capped(&rows, 300_000), None);
        // Near capacity: the node's.
        let rows = [
            row(1, true, 75_000, 75_000.0, 0.0),
            row(1, true, 75_000, 75_000.0, 0.0),
            row(1, false, 300_000, 146_000.0, 0.01),
        ];
        assert_eq!(generator_capped(&rows, 300_000), None);
    }
}
