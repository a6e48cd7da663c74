//! The isolation table's charts in the report.

use harness::store::SummaryTable;
use report::charts::{categories, num, trim_num, truthy};
use report::svg::{Chart, Mark, RefLine, Unit, FLOOR};
use serde_json::Value;

fn col(t: &SummaryTable, name: &str) -> Option<usize> {
    t.column(name)
}

/// Noisy-neighbour isolation: per mode (floors, control), every volume's IOPS per step with
/// the protected volumes' floors and pass/fail marks; then the protected volumes' p99
/// latency per step, floors vs control.
pub fn charts(t: &SummaryTable) -> Vec<Chart> {
    let need = ["mode", "step", "volume", "role", "iops", "pass"];
    let idx: Vec<Option<usize>> = need.iter().map(|c| col(t, c)).collect();
    let [Some(mode), Some(step), Some(volume), Some(role), Some(iops), Some(pass)] = idx[..] else {
        return Vec::new();
    };
    let load = col(t, "bully_load");
    let target = col(t, "target_iops");
    let p99 = col(t, "lat_p99_ms");
    let s = |r: &Vec<Value>, i: usize| -> String {
        match r.get(i) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        }
    };
    let mut modes: Vec<String> = Vec::new();
    let mut vols: Vec<(String, String)> = Vec::new();
    let mut steps: Vec<(f64, String)> = Vec::new();
    for r in &t.rows {
        let m = s(r, mode);
        if !modes.contains(&m) {
            modes.push(m);
        }
        let v = (s(r, volume), s(r, role));
        if !vols.contains(&v) {
            vols.push(v);
        }
        if let Some(x) = r.get(step).and_then(num) {
            if !steps.iter().any(|(y, _)| *y == x) {
                let l = load
                    .and_then(|i| r.get(i))
                    .and_then(num)
                    .map(|l| format!("{} (x{})", trim_num(x), trim_num(l)))
                    .unwrap_or_else(|| trim_num(x));
                steps.push((x, l));
            }
        }
    }
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    for m in &modes {
        let mut c = Chart::categorical(
            format!("{}: IOPS per step, {m}", t.name),
            "step (bully load x remaining capacity)",
            "IOPS",
            categories(&steps),
        );
        for (k, (v, role_name)) in vols.iter().enumerate() {
            let rows: Vec<&Vec<Value>> = t
                .rows
                .iter()
                .filter(|r| &s(r, mode) == m && &s(r, volume) == v)
                .collect();
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter_map(|r| Some((num(r.get(step)?)?, num(r.get(iops)?)?)))
                .collect();
            if role_name == "protected" {
                for r in &rows {
                    if let (Some(x), Some(y)) =
                        (r.get(step).and_then(num), r.get(iops).and_then(num))
                    {
                        c.marks.push(Mark {
                            x,
                            y,
                            pass: r.get(pass).map(truthy).unwrap_or(false),
                        });
                    }
                }
                if let Some(f) = target
                    .and_then(|i| rows.first().and_then(|r| r.get(i)))
                    .and_then(num)
                    .filter(|f| *f > 0.0)
                {
                    c.refs.push(RefLine {
                        label: format!("floor {v} {} IOPS", trim_num(f)),
                        y: f,
                        style: FLOOR,
                    });
                }
            }
            c.line(format!("{v} ({role_name})"), points, k);
        }
        out.push(c);
    }
    if let Some(p99) = p99 {
        let mut c = Chart::categorical(
            format!(
                "{}: protected volumes' p99 latency per step, floors vs control",
                t.name
            ),
            "step (bully load x remaining capacity)",
            "p99 latency (ms)",
            categories(&steps),
        );
        c.y_unit = Unit::Ms;
        let mut k = 0;
        for (v, _) in vols.iter().filter(|(_, r)| r == "protected") {
            for m in &modes {
                c.line(
                    format!("{v} {m}"),
                    t.rows
                        .iter()
                        .filter(|r| &s(r, mode) == m && &s(r, volume) == v)
                        .filter_map(|r| Some((num(r.get(step)?)?, num(r.get(p99)?)?)))
                        .collect(),
                    k,
                );
                k += 1;
            }
        }
        out.push(c);
    }
    out.retain(Chart::has_data);
    out
}
