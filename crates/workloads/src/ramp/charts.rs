//! The ramp tables' charts in the report.

use harness::store::SummaryTable;
use report::charts::{categories, num, trim_num, truthy};
use report::svg::{Chart, Mark, RefLine, Unit, THRESHOLD};
use serde_json::Value;

/// GenIO's pass criteria (BRIEF section 4): longest write cycle below 45 s, effective
/// write latency below 1 ms (drawn for tables that do not store their own criteria).
pub const GENIO_WRITE_CYCLE_S: f64 = 45.0;
pub const GENIO_WRITE_LATENCY_MS: f64 = 1.0;

fn col(t: &SummaryTable, name: &str) -> Option<usize> {
    t.column(name)
}

/// A pass/fail limit line: `NAME VALUE UNIT` at `y`.
fn limit_line(name: &str, y: f64, unit: &str) -> RefLine {
    RefLine {
        label: format!("{name} {} {unit}", trim_num(y)),
        y,
        style: THRESHOLD,
    }
}

/// GenIO ramp (one table per system): IOPS vs target per run with pass/fail marks; the
/// write-cycle and WIJ times against the 45 s limit; write latency against 1 ms.
pub fn charts(t: &SummaryTable) -> Vec<Chart> {
    let (Some(run), Some(pass)) = (col(t, "Run"), col(t, "Pass")) else {
        return Vec::new();
    };
    let x = |r: &Vec<Value>| r.get(run).and_then(num);
    let series = |name: &str| -> Vec<(f64, f64)> {
        let Some(i) = col(t, name) else {
            return Vec::new();
        };
        t.rows
            .iter()
            .filter_map(|r| Some((x(r)?, num(r.get(i)?)?)))
            .collect()
    };
    let marks = |name: &str| -> Vec<Mark> {
        let Some(i) = col(t, name) else {
            return Vec::new();
        };
        t.rows
            .iter()
            .filter_map(|r| {
                Some(Mark {
                    x: x(r)?,
                    y: num(r.get(i)?)?,
                    pass: truthy(r.get(pass)?),
                })
            })
            .collect()
    };
    let cats: Vec<(f64, String)> = t
        .rows
        .iter()
        .filter_map(|r| {
            let v = x(r)?;
            Some((v, trim_num(v)))
        })
        .collect();
    // One chart: its title, y axis and unit, its lines (label, column, style), the limit
    // drawn across it, and the column whose points carry the runs' pass/fail marks.
    let chart = |title: &str,
                 y: &str,
                 unit: Unit,
                 lines: &[(&str, &str, usize)],
                 limit: Option<RefLine>,
                 marked: &str| {
        let mut c = Chart::categorical(format!("{}: {title}", t.name), "run", y, categories(&cats));
        c.y_unit = unit;
        for &(label, column, style) in lines {
            c.line(label, series(column), style);
        }
        c.refs.extend(limit);
        c.marks = marks(marked);
        c
    };
    // The criteria the run was judged by (scaled runs store theirs), else GenIO's.
    let limit = |name: &str, default: f64| {
        col(t, name)
            .and_then(|i| t.rows.first().and_then(|r| num(r.get(i)?)))
            .unwrap_or(default)
    };
    let cycle_limit = limit("Write cycle limit (sec)", GENIO_WRITE_CYCLE_S);
    let latency_limit = limit("Write latency limit (ms)", GENIO_WRITE_LATENCY_MS);
    let mut out = vec![
        chart(
            "measured vs target IOPS per run",
            "IOPS",
            Unit::Count,
            &[
                ("Target IOPS", "Target IOPS", 4),
                ("Total IOPS", "Total IOPS", 0),
                ("Read IOPS", "Read IOPS", 1),
                ("Write IOPS", "Write IOPS", 2),
            ],
            None,
            "Total IOPS",
        ),
        chart(
            "longest write cycle and WIJ time per run",
            "seconds",
            Unit::Secs,
            &[
                ("Longest write cycle", "Longest write cycle (sec)", 0),
                ("Longest WIJ time", "Longest WIJ time (sec)", 1),
            ],
            Some(limit_line("write cycle limit", cycle_limit, "s")),
            "Longest write cycle (sec)",
        ),
        chart(
            "write and read latency per run",
            "latency (ms)",
            Unit::Ms,
            &[
                ("Effective write latency", "Effective write latency (ms)", 0),
                ("Randread average", "Randread average (ms)", 1),
            ],
            Some(limit_line("write latency limit", latency_limit, "ms")),
            "Effective write latency (ms)",
        ),
    ];
    out.retain(Chart::has_data);
    out
}
