//! The sweep's degradation curves, from its stored summary table: per headline metric
//! (fio IOPS per tenant, redis ops/s per tenant, git seconds per iteration, build seconds
//! per build, broker messages/s per tenant) the median
//! tenant against tenants per class, one line per class, with each class's floor and
//! ceiling as reference lines where they exist; the sum over tenants; the fail rate;
//! first-done / last-done; and the load (this process's CPU, the host's).

use serde_json::Value;

use report::svg::{Chart, Line, RefLine, Unit, CEILING, FLOOR};

fn col<'a>(columns: &[String], row: &'a [Value], name: &str) -> Option<&'a Value> {
    columns
        .iter()
        .position(|c| c == name)
        .and_then(|i| row.get(i))
}

fn f(columns: &[String], row: &[Value], name: &str) -> Option<f64> {
    col(columns, row, name).and_then(Value::as_f64)
}

fn s<'a>(columns: &[String], row: &'a [Value], name: &str) -> &'a str {
    col(columns, row, name)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Classes in first-appearance order.
fn classes(columns: &[String], rows: &[Vec<Value>]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rows {
        let c = s(columns, r, "class").to_string();
        if !v.contains(&c) {
            v.push(c);
        }
    }
    v
}

fn line(
    columns: &[String],
    rows: &[Vec<Value>],
    class: &str,
    y: &str,
    label: String,
    style: usize,
) -> Line {
    let mut points: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| s(columns, r, "class") == class)
        .filter_map(|r| Some((f(columns, r, "tenants")?, f(columns, r, y)?)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Line {
        label,
        points,
        style,
    }
}

/// The charts of a tenants summary table (`columns` are `rows::SUMMARY_COLUMNS`, or an
/// earlier version's: a column that is missing draws nothing).
pub fn charts(columns: &[String], rows: &[Vec<Value>]) -> Vec<Chart> {
    let cls = classes(columns, rows);
    let mut out = Vec::new();
    // One chart per headline metric, the classes that report it as lines.
    let metrics: Vec<(String, String)> = {
        let mut m: Vec<(String, String)> = Vec::new();
        for r in rows {
            let k = (
                s(columns, r, "metric").to_string(),
                s(columns, r, "unit").to_string(),
            );
            if !m.contains(&k) {
                m.push(k);
            }
        }
        m
    };
    for (metric, unit) in &metrics {
        out.push(metric_chart(columns, rows, &cls, metric, unit));
    }
    let simple = |title: &str, y: &str, y_label: &str, unit: Unit| {
        let mut c = vs_tenants(title, y_label, unit);
        for (i, class) in cls.iter().enumerate() {
            c.lines
                .push(line(columns, rows, class, y, class.clone(), i));
        }
        c
    };
    out.push(simple(
        "Sum over tenants of the headline metric vs tenants",
        "sum",
        "sum",
        Unit::Count,
    ));
    out.push(simple(
        "Failed iterations (%) vs tenants",
        "fail_rate_pct",
        "%",
        Unit::Count,
    ));
    out.push(done_chart(columns, rows, &cls));
    out.push(load_chart(columns, rows, &cls));
    out.retain(|c| c.has_data());
    out
}

/// A chart against the number of tenants per class (every chart of the sweep), its y
/// axis labelled `y_label` in `y_unit`.
fn vs_tenants(title: impl Into<String>, y_label: &str, y_unit: Unit) -> Chart {
    let mut c = Chart::new(title, "tenants per class", y_label);
    c.x_unit = Unit::Count;
    c.y_unit = y_unit;
    c
}

/// One headline metric's chart: each class that reports it as a line (median; min too
/// for IOPS), with its floor and ceiling.
fn metric_chart(
    columns: &[String],
    rows: &[Vec<Value>],
    cls: &[String],
    metric: &str,
    unit: &str,
) -> Chart {
    let title = match metric {
        "iops" => "IOPS per tenant vs tenants (median tenant; min and max dashed)".to_string(),
        "run_ops_per_sec" => {
            "redis run-phase ops/s per tenant vs tenants (median tenant)".to_string()
        }
        "time_s" => "git: seconds per iteration vs tenants (median tenant)".to_string(),
        "build_s" => "build: seconds per build vs tenants (median tenant)".to_string(),
        "in_msgs_per_sec" => {
            "broker: persistent messages/s in per tenant vs tenants (median tenant)".to_string()
        }
        m => format!("{m} per tenant vs tenants"),
    };
    let y_unit = if unit == "s" { Unit::Secs } else { Unit::Count };
    let mut c = vs_tenants(title, unit, y_unit);
    for (i, class) in cls.iter().enumerate() {
        let of_metric =
            |r: &&Vec<Value>| s(columns, r, "class") == class && s(columns, r, "metric") == metric;
        let crows: Vec<Vec<Value>> = rows.iter().filter(of_metric).cloned().collect();
        if crows.is_empty() {
            continue;
        }
        c.lines.push(line(
            columns,
            &crows,
            class,
            "median",
            format!("{class} (median)"),
            i,
        ));
        if metric == "iops" {
            c.lines.push(line(
                columns,
                &crows,
                class,
                "min",
                format!("{class} (min)"),
                i,
            ));
        }
        let last = crows.last().expect("non-empty");
        for (name, style, what) in [
            ("floor_iops", FLOOR, "floor"),
            ("ceiling_iops", CEILING, "ceiling"),
        ] {
            let v = f(columns, last, name).unwrap_or(0.0);
            if metric == "iops" && v > 0.0 {
                c.refs.push(RefLine {
                    label: format!("{class} {what} {v:.0}"),
                    y: v,
                    style,
                });
            }
        }
    }
    c
}

/// When each class's first and last tenant finished, vs tenants.
fn done_chart(columns: &[String], rows: &[Vec<Value>], cls: &[String]) -> Chart {
    let mut done = vs_tenants(
        "First done / last done (s from the common start) vs tenants",
        "s",
        Unit::Secs,
    );
    for (i, class) in cls.iter().enumerate() {
        for (y, what) in [("first_done_s", "first done"), ("last_done_s", "last done")] {
            done.lines
                .push(line(columns, rows, class, y, format!("{class} {what}"), i));
        }
    }
    done
}

/// The node's, the applications' and the host's CPU vs tenants.
fn load_chart(columns: &[String], rows: &[Vec<Value>], cls: &[String]) -> Chart {
    let mut load = vs_tenants(
        "Load vs tenants: the node's and the applications' CPU (% of a core), host CPU busy (% of all CPUs)",
        "%",
        Unit::Count,
    );
    if let Some(first) = cls.first() {
        // Runs stored before the tool sets had one figure for this whole process.
        let series: &[(&str, &str)] = if columns.iter().any(|c| c == "node_cpu_pct") {
            &[
                ("node_cpu_pct", "node"),
                ("apps_cpu_pct", "applications + harness"),
                ("host_cpu_pct", "host busy"),
            ]
        } else {
            &[
                ("process_cpu_pct", "qoslab process"),
                ("host_cpu_pct", "host"),
            ]
        };
        for (i, (col, label)) in series.iter().enumerate() {
            load.lines
                .push(line(columns, rows, first, col, (*label).into(), i));
        }
    }
    load
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenants::rows::SUMMARY_COLUMNS;
    use serde_json::json;

    fn row(tenants: u64, class: &str, metric: &str, median: f64, floor: u64) -> Vec<Value> {
        SUMMARY_COLUMNS
            .iter()
            .map(|c| match *c {
                "tenants" => json!(tenants),
                "class" => json!(class),
                "metric" => json!(metric),
                "unit" => json!(if metric == "time_s" { "s" } else { "IOPS" }),
                "median" | "min" | "sum" | "first_done_s" | "last_done_s" => json!(median),
                "floor_iops" => json!(floor),
                "ceiling_iops" => json!(0),
                "fail_rate_pct" => json!(0.0),
                "node_cpu_pct" | "apps_cpu_pct" | "host_cpu_pct" => json!(10.0),
                _ => Value::Null,
            })
            .collect()
    }

    #[test]
    fn one_line_per_class_with_the_floor_as_a_reference() {
        let cols: Vec<String> = SUMMARY_COLUMNS.iter().map(|s| s.to_string()).collect();
        let rows = vec![
            row(1, "gold", "iops", 200.0, 200),
            row(1, "bronze", "iops", 3800.0, 0),
            row(2, "gold", "iops", 200.0, 200),
            row(2, "bronze", "iops", 1800.0, 0),
            row(1, "src", "time_s", 20.0, 0),
            row(2, "src", "time_s", 30.0, 0),
        ];
        let ch = charts(&cols, &rows);
        let iops = &ch[0];
        assert!(iops.title.starts_with("IOPS per tenant"));
        let labels: Vec<&str> = iops.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "gold (median)",
                "gold (min)",
                "bronze (median)",
                "bronze (min)"
            ]
        );
        assert_eq!(iops.lines[2].points, vec![(1.0, 3800.0), (2.0, 1800.0)]);
        assert_eq!(iops.refs.len(), 1);
        assert_eq!(iops.refs[0].y, 200.0);
        assert!(ch[1].title.starts_with("git"));
        assert_eq!(ch[1].lines.len(), 1);
        assert!(ch.iter().any(|c| c.title.starts_with("Failed iterations")));
        let load = ch
            .iter()
            .find(|c| c.title.starts_with("Load vs tenants"))
            .unwrap();
        let labels: Vec<&str> = load.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["node", "applications + harness", "host busy"]);
    }

    #[test]
    fn the_done_chart_has_each_class_first_and_last_done() {
        let cols: Vec<String> = SUMMARY_COLUMNS.iter().map(|s| s.to_string()).collect();
        let rows = vec![
            row(1, "gold", "iops", 2.0, 0),
            row(1, "src", "time_s", 20.0, 0),
            row(2, "src", "time_s", 30.0, 0),
        ];
        let ch = charts(&cols, &rows);
        let done = ch
            .iter()
            .find(|c| c.title.starts_with("First done / last done"))
            .unwrap();
        let labels: Vec<&str> = done.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "gold first done",
                "gold last done",
                "src first done",
                "src last done"
            ]
        );
        assert_eq!(done.lines[3].points, vec![(1.0, 20.0), (2.0, 30.0)]);
        assert_eq!(done.y_unit, Unit::Secs);
    }
}
