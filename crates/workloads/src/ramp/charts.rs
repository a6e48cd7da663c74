//! The ramp tables' charts in the report.

use harness::store::SummaryTable;
use report::charts::{categories, num, trim_num, truthy};
use report::svg::{Chart, Line, Mark, RefLine, Unit, THRESHOLD};
use serde_json::Value;

/// GenIO's pass criteria (BRIEF section 4): longest write cycle below 45 s, effective
/// write latency below 1 ms (drawn for tables that do not store their own criteria).
pub const GENIO_WRITE_CYCLE_S: f64 = 45.0;
pub const GENIO_WRITE_LATENCY_MS: f64 = 1.0;

fn col(t: &SummaryTable, name: &str) -> Option<usize> {
    t.column(name)
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
    let mut out = Vec::new();
    let mut c = Chart::new(
        format!("{}: measured vs target IOPS per run", t.name),
        "run",
        "IOPS",
    );
    c.x_unit = Unit::Count;
    c.x_categories = categories(&cats);
    c.lines.push(Line {
        label: "Target IOPS".into(),
        points: series("Target IOPS"),
        style: 4,
    });
    c.lines.push(Line {
        label: "Total IOPS".into(),
        points: series("Total IOPS"),
        style: 0,
    });
    c.lines.push(Line {
        label: "Read IOPS".into(),
        points: series("Read IOPS"),
        style: 1,
    });
    c.lines.push(Line {
        label: "Write IOPS".into(),
        points: series("Write IOPS"),
        style: 2,
    });
    c.marks = marks("Total IOPS");
    out.push(c);
    let mut c = Chart::new(
        format!("{}: longest write cycle and WIJ time per run", t.name),
        "run",
        "seconds",
    );
    c.x_unit = Unit::Count;
    c.y_unit = Unit::Secs;
    c.x_categories = categories(&cats);
    c.lines.push(Line {
        label: "Longest write cycle".into(),
        points: series("Longest write cycle (sec)"),
        style: 0,
    });
    c.lines.push(Line {
        label: "Longest WIJ time".into(),
        points: series("Longest WIJ time (sec)"),
        style: 1,
    });
    // The criteria the run was judged by (scaled runs store theirs), else GenIO's.
    let limit = |name: &str, default: f64| {
        col(t, name)
            .and_then(|i| t.rows.first().and_then(|r| num(r.get(i)?)))
            .unwrap_or(default)
    };
    let cycle_limit = limit("Write cycle limit (sec)", GENIO_WRITE_CYCLE_S);
    let latency_limit = limit("Write latency limit (ms)", GENIO_WRITE_LATENCY_MS);
    c.refs.push(RefLine {
        label: format!("write cycle limit {} s", trim_num(cycle_limit)),
        y: cycle_limit,
        style: THRESHOLD,
    });
    c.marks = marks("Longest write cycle (sec)");
    out.push(c);
    let mut c = Chart::new(
        format!("{}: write and read latency per run", t.name),
        "run",
        "latency (ms)",
    );
    c.x_unit = Unit::Count;
    c.y_unit = Unit::Ms;
    c.x_categories = categories(&cats);
    c.lines.push(Line {
        label: "Effective write latency".into(),
        points: series("Effective write latency (ms)"),
        style: 0,
    });
    c.lines.push(Line {
        label: "Randread average".into(),
        points: series("Randread average (ms)"),
        style: 1,
    });
    c.refs.push(RefLine {
        label: format!("write latency limit {} ms", trim_num(latency_limit)),
        y: latency_limit,
        style: THRESHOLD,
    });
    c.marks = marks("Effective write latency (ms)");
    out.push(c);
    out.retain(Chart::has_data);
    out
}
