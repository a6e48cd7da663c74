//! The provisioned family's report: its table's charts (each step's result against the
//! spec's figure) and a section with the transitions (throughput with baseline and burst
//! lines, the bucket's balance on the right axis) of the steps that ran their credits out.

use harness::store::{RunRecord, SummaryTable};
use report::charts::{categories, credit_charts, num};
use report::svg::{Chart, Unit};

use super::results::KIND;

/// Per unit (MB/s, MiB/s, IOPS): each step's result, its burst and after-credits rates,
/// and the spec's figure.
pub fn table_charts(t: &SummaryTable) -> Vec<Chart> {
    let col = |r: &[serde_json::Value], c: &str| t.column(c).and_then(|i| r.get(i)).cloned();
    let mut units: Vec<String> = Vec::new();
    for r in &t.rows {
        if let Some(u) = col(r, "unit").and_then(|v| v.as_str().map(String::from)) {
            if !units.contains(&u) {
                units.push(u);
            }
        }
    }
    let mut out = Vec::new();
    for u in units {
        let rows: Vec<(f64, &Vec<serde_json::Value>)> = t
            .rows
            .iter()
            .filter(|r| col(r, "unit").and_then(|v| v.as_str().map(|s| s == u)) == Some(true))
            .enumerate()
            .map(|(i, r)| (i as f64 + 1.0, r))
            .collect();
        let mut c = Chart::new(
            format!("Steps measured in {u}, against the spec"),
            "step",
            &u,
        );
        c.y_unit = Unit::Count;
        for (k, (label, column)) in [
            ("measured", "result"),
            ("while credits lasted", "burst"),
            ("after the credits", "after_credits"),
            ("spec", "spec_rate"),
        ]
        .into_iter()
        .enumerate()
        {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter_map(|(x, r)| col(r, column).as_ref().and_then(num).map(|y| (*x, y)))
                .collect();
            if !points.is_empty() {
                c.line(label, points, k);
            }
        }
        let xs: Vec<(f64, String)> = rows
            .iter()
            .map(|(x, r)| {
                (
                    *x,
                    col(r, "step")
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                )
            })
            .collect();
        c.x_categories = categories(&xs);
        if c.has_data() {
            out.push(c);
        }
    }
    out
}

/// The steps that ran their credits out (a `burst_s` in the table), by name.
fn burst_steps(run: &RunRecord) -> Vec<String> {
    run.tables
        .iter()
        .filter(|t| t.kind == KIND)
        .flat_map(|t| {
            let (s, b) = (t.column("step"), t.column("burst_s"));
            t.rows.iter().filter_map(move |r| {
                let has = b.and_then(|i| r.get(i)).is_some_and(|v| !v.is_null());
                has.then(|| {
                    s.and_then(|i| r.get(i))
                        .and_then(|v| v.as_str())
                        .map(String::from)
                })
                .flatten()
            })
        })
        .collect()
}

/// The section's heading and words (none when the run has no provisioned table).
pub fn html(run: &RunRecord) -> String {
    if !run.tables.iter().any(|t| t.kind == KIND) {
        return String::new();
    }
    let mut o =
        String::from("<h2 id=\"provisioned\">Provisioned performance: burst, then baseline</h2>");
    if burst_steps(run).is_empty() {
        o.push_str("<p>No step of this run spent its credits (see the table above).</p>");
    } else {
        o.push_str(
            "<p class=\"meta\">Each step that ran its bucket empty: fio's throughput and the node's use, \
             the spec's baseline and burst as lines, and the bucket's balance (percent of its size) on \
             the right axis, where the target is a qoslab node.</p>",
        );
    }
    o
}

/// The transitions: each burst step's charts with a balance axis (only on a qoslab node,
/// which reports balances).
pub fn transitions(run: &RunRecord) -> Vec<(String, Vec<Chart>)> {
    let names = burst_steps(run);
    run.jobs
        .iter()
        .filter(|j| j.workload == "provisioned" && names.contains(&j.name))
        .map(|j| (format!("#{} {}", j.seq, j.name), credit_charts(run, j)))
        .filter(|(_, c)| !c.is_empty())
        .collect()
}
