//! Which charts a run gets, built from the stored record (pure).

use serde_json::Value;

use super::svg::{Chart, Line, Mark, RefLine, Unit, CEILING, FLOOR, THRESHOLD};
use crate::fmt;
use crate::store::{JobRecord, RunRecord, SummaryTable, VolumeRecord};

/// GenIO's pass criteria (BRIEF section 4): longest write cycle below 45 s, effective
/// write latency below 1 ms.
pub const GENIO_WRITE_CYCLE_S: f64 = 45.0;
pub const GENIO_WRITE_LATENCY_MS: f64 = 1.0;

/// A number from a table cell (numbers, or strings holding one).
pub fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// A pass/fail cell: booleans, or "true"/"pass"/"yes" strings.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().unwrap_or(0.0) != 0.0,
        Value::String(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "true" | "pass" | "passed" | "yes" | "ok"
        ),
        _ => false,
    }
}

/// The volume a job ran on (the only volume when the job names none).
pub fn volume_of<'a>(run: &'a RunRecord, job: &JobRecord) -> Option<&'a VolumeRecord> {
    match &job.volume {
        Some(v) => run.volumes.iter().find(|x| &x.name == v),
        None if run.volumes.len() == 1 => run.volumes.first(),
        None => None,
    }
}

fn secs(t_ms: u64) -> f64 {
    t_ms as f64 / 1000.0
}

/// Charts over time for one job: IOPS (always), bandwidth (when the volume has a
/// bandwidth ceiling or floor), latency. Empty when the job has no time series.
pub fn job_charts(run: &RunRecord, job: &JobRecord) -> Vec<Chart> {
    let Some(s) = run.series_of(job.id) else {
        return Vec::new();
    };
    let vol = volume_of(run, job);
    let limits = vol.map(|v| v.limits).unwrap_or_default();
    let on = job.volume.as_deref().unwrap_or("target");
    let title = format!("#{} {} on {on}", job.seq, job.name);
    let dirs: Vec<&str> = ["read", "write", "trim"]
        .into_iter()
        .filter(|d| s.fio.iter().any(|x| x.direction == *d))
        .collect();
    let totals = s.fio_totals();
    let node_vols = s.node_volumes();
    let mut out = Vec::new();
    for bw in [false, true] {
        if bw && limits.ceiling_bps == 0 && limits.floor_bps == 0 {
            continue;
        }
        let mut c = Chart::new(
            format!("{title}: {}", if bw { "bandwidth" } else { "IOPS" }),
            "time (s, after ramp)",
            if bw { "bandwidth" } else { "IOPS" },
        );
        if bw {
            c.y_unit = Unit::BytesPerSec;
        }
        let val = |x: &crate::series::FioSample| if bw { x.bw_bytes } else { x.iops };
        let mut style = 0;
        if dirs.len() > 1 {
            c.lines.push(Line {
                label: "fio total".into(),
                points: totals.iter().map(|x| (secs(x.t_ms), val(x))).collect(),
                style,
            });
            style += 1;
        }
        for d in &dirs {
            c.lines.push(Line {
                label: format!("fio {d}"),
                points: s
                    .fio
                    .iter()
                    .filter(|x| x.direction == *d)
                    .map(|x| (secs(x.t_ms), val(x)))
                    .collect(),
                style,
            });
            style += 1;
        }
        for v in &node_vols {
            c.lines.push(Line {
                label: format!("node: {v}"),
                points: s
                    .node
                    .iter()
                    .filter(|x| &x.volume == v)
                    .map(|x| (secs(x.t_ms), if bw { x.bps() } else { x.iops() }))
                    .collect(),
                style,
            });
            style += 1;
        }
        let (ceil, floor) = if bw {
            (limits.ceiling_bps, limits.floor_bps)
        } else {
            (limits.ceiling_iops, limits.floor_iops)
        };
        let show = |x: u64| {
            if bw {
                fmt::bw(x)
            } else {
                format!("{x} IOPS")
            }
        };
        if ceil > 0 {
            c.refs.push(RefLine {
                label: format!("ceiling {}", show(ceil)),
                y: ceil as f64,
                style: CEILING,
            });
        }
        if floor > 0 {
            c.refs.push(RefLine {
                label: format!("floor {}", show(floor)),
                y: floor as f64,
                style: FLOOR,
            });
        }
        if c.has_data() {
            out.push(c);
        }
    }
    let mut c = Chart::new(
        format!("{title}: latency"),
        "time (s, after ramp)",
        "latency (ms)",
    );
    c.y_unit = Unit::Ms;
    let ms = |ns: f64| ns / 1e6;
    c.lines.push(Line {
        label: "fio mean".into(),
        points: totals
            .iter()
            .filter(|x| x.lat_mean_ns > 0.0)
            .map(|x| (secs(x.t_ms), ms(x.lat_mean_ns)))
            .collect(),
        style: 0,
    });
    c.lines.push(Line {
        label: "fio p50".into(),
        points: totals
            .iter()
            .filter(|x| x.p50_ns > 0)
            .map(|x| (secs(x.t_ms), ms(x.p50_ns as f64)))
            .collect(),
        style: 1,
    });
    c.lines.push(Line {
        label: "fio p99".into(),
        points: totals
            .iter()
            .filter(|x| x.p99_ns > 0)
            .map(|x| (secs(x.t_ms), ms(x.p99_ns as f64)))
            .collect(),
        style: 2,
    });
    for (i, v) in node_vols.iter().enumerate() {
        let pts = |f: fn(&crate::series::NodeSample) -> f64| {
            s.node
                .iter()
                .filter(|x| &x.volume == v)
                .map(|x| (secs(x.t_ms), f(x) / 1000.0))
                .collect::<Vec<_>>()
        };
        c.lines.push(Line {
            label: format!("node: {v} mean"),
            points: pts(|x| x.lat_mean_us),
            style: 3 + 2 * i,
        });
        let held = pts(|x| x.ceiling_wait_us);
        if held.iter().any(|p| p.1 > 0.0) {
            c.lines.push(Line {
                label: format!("node: {v} held by ceiling"),
                points: held,
                style: 4 + 2 * i,
            });
        }
    }
    if c.has_data() {
        out.push(c);
    }
    out
}

/// Thin categorical labels so they stay legible (every k-th of many).
fn categories(xs: &[(f64, String)]) -> Vec<(f64, String)> {
    let k = xs.len().div_ceil(16).max(1);
    xs.iter()
        .enumerate()
        .filter(|(i, _)| i % k == 0)
        .map(|(_, x)| x.clone())
        .collect()
}

/// Completion-latency percentiles (p50, p90, p99, p99.9; worse direction) and the mean,
/// per job, from fio's summary.
pub fn latency_percentiles(run: &RunRecord) -> Option<Chart> {
    let jobs: Vec<(&JobRecord, &crate::result::JobResult)> = run
        .jobs
        .iter()
        .filter_map(|j| j.primary().map(|r| (j, r)))
        .filter(|(_, r)| r.read.active() || r.write.active())
        .collect();
    if jobs.is_empty() {
        return None;
    }
    let mut c = Chart::new(
        "Completion latency percentiles per job (worse direction)",
        "job (#)",
        "latency (ms)",
    );
    c.y_unit = Unit::Ms;
    let pick = |f: fn(&crate::result::DirStats) -> u64| {
        jobs.iter()
            .map(|(j, r)| (j.seq as f64, f(&r.read).max(f(&r.write)) as f64 / 1e6))
            .collect::<Vec<_>>()
    };
    c.lines.push(Line {
        label: "mean".into(),
        points: jobs
            .iter()
            .map(|(j, r)| (j.seq as f64, r.lat_mean_ns() / 1e6))
            .collect(),
        style: 0,
    });
    c.lines.push(Line {
        label: "p50".into(),
        points: pick(|d| d.p50_ns),
        style: 1,
    });
    c.lines.push(Line {
        label: "p90".into(),
        points: pick(|d| d.p90_ns),
        style: 2,
    });
    c.lines.push(Line {
        label: "p99".into(),
        points: pick(|d| d.p99_ns),
        style: 3,
    });
    c.lines.push(Line {
        label: "p99.9".into(),
        points: pick(|d| d.p999_ns),
        style: 4,
    });
    let xs: Vec<(f64, String)> = jobs
        .iter()
        .map(|(j, _)| (j.seq as f64, format!("#{}", j.seq)))
        .collect();
    c.x_categories = categories(&xs);
    Some(c)
}

/// Charts for a profile's summary table; none for kinds without a chart.
pub fn table_charts(t: &SummaryTable) -> Vec<Chart> {
    match t.kind.as_str() {
        "ramp" => ramp_charts(t),
        "isolation" => isolation_charts(t),
        _ => Vec::new(),
    }
}

fn col(t: &SummaryTable, name: &str) -> Option<usize> {
    t.column(name)
}

/// GenIO ramp (one table per system): IOPS vs target per run with pass/fail marks; the
/// write-cycle and WIJ times against the 45 s limit; write latency against 1 ms.
fn ramp_charts(t: &SummaryTable) -> Vec<Chart> {
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

fn trim_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Noisy-neighbour isolation: per mode (floors, control), every volume's IOPS per step with
/// the protected volumes' floors and pass/fail marks; then the protected volumes' p99
/// latency per step, floors vs control.
fn isolation_charts(t: &SummaryTable) -> Vec<Chart> {
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
        let mut c = Chart::new(
            format!("{}: IOPS per step, {m}", t.name),
            "step (bully load x remaining capacity)",
            "IOPS",
        );
        c.x_unit = Unit::Count;
        c.x_categories = categories(&steps);
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
            c.lines.push(Line {
                label: format!("{v} ({role_name})"),
                points,
                style: k,
            });
        }
        out.push(c);
    }
    if let Some(p99) = p99 {
        let mut c = Chart::new(
            format!(
                "{}: protected volumes' p99 latency per step, floors vs control",
                t.name
            ),
            "step (bully load x remaining capacity)",
            "p99 latency (ms)",
        );
        c.x_unit = Unit::Count;
        c.y_unit = Unit::Ms;
        c.x_categories = categories(&steps);
        let mut k = 0;
        for (v, _) in vols.iter().filter(|(_, r)| r == "protected") {
            for m in &modes {
                c.lines.push(Line {
                    label: format!("{v} {m}"),
                    points: t
                        .rows
                        .iter()
                        .filter(|r| &s(r, mode) == m && &s(r, volume) == v)
                        .filter_map(|r| Some((num(r.get(step)?)?, num(r.get(p99)?)?)))
                        .collect(),
                    style: k,
                });
                k += 1;
            }
        }
        out.push(c);
    }
    out.retain(Chart::has_data);
    out
}
