//! The charts every run gets, built from the stored record (pure): IOPS, bandwidth and
//! latency over time per job with the volume's ceiling and floor, latency percentiles per
//! job; and helpers for the charts families draw from their summary tables
//! ([`crate::ReportHooks::table_charts`]).
//!
//! Where a limit bursts (the node samples carry credit balances), the throughput chart of that
//! dimension draws the baseline and the burst as lines and the bucket's balance over time on
//! a second axis ([`credit_charts`]); a node with an emulated provisioned file system gets one
//! such chart per bursting resource the job used. Runs without balances chart as before.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::svg::{Axis2, Chart, Line, RefLine, Unit, BURST, CEILING, FLOOR};
use fio::fmt;
use harness::series::{CreditSample, JobSeries, NodeSample};
use harness::store::{JobRecord, RunRecord, VolumeRecord};

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
        let credits = |n: &NodeSample| if bw { n.bytes_credits } else { n.iops_credits };
        let bursting = s.node.iter().any(|n| credits(n).is_some());
        if bw && limits.ceiling_bps == 0 && limits.floor_bps == 0 && !bursting {
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
        let val = |x: &harness::series::FioSample| if bw { x.bw_bytes } else { x.iops };
        // fio's total (beside more than one direction), each direction, the node's view.
        let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        if dirs.len() > 1 {
            let points = totals.iter().map(|x| (secs(x.t_ms), val(x))).collect();
            lines.push(("fio total".into(), points));
        }
        for d in &dirs {
            let of_d = s.fio.iter().filter(|x| x.direction == *d);
            lines.push((
                format!("fio {d}"),
                of_d.map(|x| (secs(x.t_ms), val(x))).collect(),
            ));
        }
        for v in &node_vols {
            let of_v = s.node.iter().filter(|x| &x.volume == v);
            lines.push((
                format!("node: {v}"),
                of_v.map(|x| (secs(x.t_ms), if bw { x.bps() } else { x.iops() }))
                    .collect(),
            ));
        }
        let style = lines.len();
        c.lines
            .extend((0..).zip(lines).map(|(style, (label, points))| Line {
                label,
                points,
                style,
            }));
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
        if bursting {
            burst_refs_and_balance(&mut c, s, credits, &show, style);
        } else if ceil > 0 {
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
    out.extend(resource_charts(s, &title));
    let c = latency_chart(&title, s, &totals, &node_vols);
    if c.has_data() {
        out.push(c);
    }
    out.extend(op_charts(&title, s));
    out.extend(host_charts(&title, s));
    out
}

/// A job's latency over time: fio's mean, p50 and p99, and each volume's on the node (its
/// mean, and the time its ceiling held requests when it did).
fn latency_chart(
    title: &str,
    s: &harness::series::JobSeries,
    totals: &[harness::series::FioSample],
    node_vols: &[String],
) -> Chart {
    let mut c = Chart::new(
        format!("{title}: latency"),
        "time (s, after ramp)",
        "latency (ms)",
    );
    c.y_unit = Unit::Ms;
    let ms = |ns: f64| ns / 1e6;
    // fio's mean, p50 and p99 (ns; a sample without the figure is 0).
    type Figure = fn(&harness::series::FioSample) -> f64;
    let fio_lat: [(&str, Figure); 3] = [
        ("fio mean", |x| x.lat_mean_ns),
        ("fio p50", |x| x.p50_ns as f64),
        ("fio p99", |x| x.p99_ns as f64),
    ];
    for (style, (label, f)) in (0..).zip(fio_lat) {
        c.line(
            label,
            totals
                .iter()
                .filter(|x| f(x) > 0.0)
                .map(|x| (secs(x.t_ms), ms(f(x))))
                .collect(),
            style,
        );
    }
    for (i, v) in node_vols.iter().enumerate() {
        let pts = |f: fn(&harness::series::NodeSample) -> f64| {
            s.node
                .iter()
                .filter(|x| &x.volume == v)
                .map(|x| (secs(x.t_ms), f(x) / 1000.0))
                .collect::<Vec<_>>()
        };
        c.line(format!("node: {v} mean"), pts(|x| x.lat_mean_us), 3 + 2 * i);
        let held = pts(|x| x.ceiling_wait_us);
        if held.iter().any(|p| p.1 > 0.0) {
            c.line(format!("node: {v} held by ceiling"), held, 4 + 2 * i);
        }
    }
    c
}

/// A request/response driver's 1 s segments (S3): ops/s and MiB/s per operation, latency
/// p50/p99 per operation and mean TTFB, on the merged view; ops/s per load generator when
/// there are several.
pub fn op_charts(title: &str, s: &harness::series::JobSeries) -> Vec<Chart> {
    use harness::ops::ALL_HOSTS;
    if s.ops.is_empty() {
        return Vec::new();
    }
    let merged = if s.ops.iter().any(|o| o.client == ALL_HOSTS) {
        ALL_HOSTS.to_string()
    } else {
        s.ops[0].client.clone()
    };
    let main: Vec<&harness::ops::OpSample> = s.ops.iter().filter(|o| o.client == merged).collect();
    let mut ops: Vec<&str> = Vec::new();
    for o in &main {
        if !ops.contains(&o.op.as_str()) {
            ops.push(&o.op);
        }
    }
    let pts = |op: &str, f: &dyn Fn(&harness::ops::OpSample) -> f64| -> Vec<(f64, f64)> {
        main.iter()
            .filter(|o| o.op == op)
            .map(|o| (secs(o.t_ms), f(o)))
            .collect()
    };
    let x = "time (s, from the test's start)";
    let mut out = Vec::new();
    let mut c = Chart::new(format!("{title}: requests per second"), x, "ops/s");
    for (i, op) in ops.iter().enumerate() {
        c.line(op.to_string(), pts(op, &|o| o.ops_per_s), i);
    }
    out.push(c);
    let mut c = Chart::new(format!("{title}: throughput"), x, "bandwidth");
    c.y_unit = Unit::BytesPerSec;
    for (i, op) in ops.iter().enumerate() {
        let p = pts(op, &|o| o.bytes_per_s);
        if p.iter().any(|p| p.1 > 0.0) {
            c.line(op.to_string(), p, i);
        }
    }
    out.push(c);
    let mut c = Chart::new(format!("{title}: latency"), x, "latency (ms)");
    c.y_unit = Unit::Ms;
    for (i, op) in ops.iter().enumerate() {
        c.line(
            format!("{op} p50"),
            pts(op, &|o| o.lat_p50_ns as f64 / 1e6),
            2 * i,
        );
        c.line(
            format!("{op} p99"),
            pts(op, &|o| o.lat_p99_ns as f64 / 1e6),
            2 * i + 1,
        );
        let ttfb = pts(op, &|o| o.ttfb_mean_ns / 1e6);
        if ttfb.iter().any(|p| p.1 > 0.0) {
            c.line(format!("{op} TTFB mean"), ttfb, 2 * ops.len() + i);
        }
    }
    out.push(c);
    let mut hosts: Vec<&str> = Vec::new();
    for o in &s.ops {
        if o.client != merged && !hosts.contains(&o.client.as_str()) {
            hosts.push(&o.client);
        }
    }
    if !hosts.is_empty() {
        let mut c = Chart::new(
            format!("{title}: requests per second per load generator"),
            x,
            "ops/s",
        );
        for (i, h) in hosts.iter().enumerate() {
            let mut by_t: std::collections::BTreeMap<u64, f64> = Default::default();
            for o in s.ops.iter().filter(|o| o.client == *h) {
                *by_t.entry(o.t_ms).or_default() += o.ops_per_s;
            }
            c.line(
                h.to_string(),
                by_t.into_iter().map(|(t, v)| (secs(t), v)).collect(),
                i,
            );
        }
        out.push(c);
    }
    out.retain(Chart::has_data);
    out
}

/// One figure of a host sample.
type Figure<'a> = dyn Fn(&toolsets::HostSample) -> f64 + 'a;

/// The host tool sets of a job, one chart per host: CPU by role (percent of one core: fio,
/// the node, other processes, kernel threads), the host's idle and steal (percent of all
/// CPUs) and the busiest device's %util, with the job's diagnosis in the title.
fn host_charts(title: &str, s: &harness::series::JobSeries) -> Vec<Chart> {
    let mut out = Vec::new();
    for h in s.hosts.iter().filter(|h| !h.samples.is_empty()) {
        let mut c = Chart::new(
            format!("{title}: host {} (tool sets, 1 s)", h.host),
            "time (s, after ramp)",
            "% (of one core for processes; of all CPUs for idle and steal)",
        );
        let series = |f: &Figure<'_>| {
            h.samples
                .iter()
                .map(|x| (secs(x.t_ms), f(x)))
                .collect::<Vec<_>>()
        };
        let roles: [(&str, &Figure<'_>); 4] = [
            ("fio cpu", &|x| x.roles.fio),
            ("node cpu", &|x| x.roles.node),
            ("other processes cpu", &|x| x.roles.other),
            ("kernel threads cpu", &|x| x.roles.kernel),
        ];
        for (i, (label, f)) in roles.iter().enumerate() {
            let pts = series(f);
            if pts.iter().any(|p| p.1 > 0.5) {
                c.line(*label, pts, i);
            }
        }
        c.line("host idle", series(&|x| x.cpu.idle + x.cpu.iowait), 4);
        let steal = series(&|x| x.cpu.steal);
        if steal.iter().any(|p| p.1 > 0.5) {
            c.line("steal", steal, 5);
        }
        // The device with the highest mean %util over the job.
        let mut util: BTreeMap<&str, f64> = BTreeMap::new();
        for x in &h.samples {
            for d in &x.disks {
                *util.entry(d.name.as_str()).or_default() += d.util_pct;
            }
        }
        if let Some((dev, _)) = util
            .iter()
            .filter(|(_, u)| **u > 0.0)
            .max_by(|a, b| a.1.total_cmp(b.1))
        {
            c.line(
                format!("{dev} %util"),
                series(&|x| {
                    x.disks
                        .iter()
                        .find(|d| d.name == *dev)
                        .map(|d| d.util_pct)
                        .unwrap_or(0.0)
                }),
                6,
            );
        }
        if c.has_data() {
            out.push(c);
        }
    }
    out
}

/// The charts of [`job_charts`] that draw a credit balance: the job's throughput against
/// its bursting limits (a volume's, or a provisioned file system's resources), with the
/// balance on the right axis. Empty when nothing the job used bursts.
pub fn credit_charts(run: &RunRecord, job: &JobRecord) -> Vec<Chart> {
    job_charts(run, job)
        .into_iter()
        .filter(|c| c.y2.is_some())
        .collect()
}

/// A bucket's size for a legend: I/O credits, or bytes (IEC).
fn bucket_text(c: &CreditSample, bytes: bool) -> String {
    let b = c.bucket.max(0.0).round() as u64;
    if bytes {
        fmt::num2str(b, 4, true, fmt::Unit::Byte)
    } else {
        format!("{} I/O credits", fmt::iops(b))
    }
}

/// The balance axis (percent of each bucket) with one line per series of samples.
fn balance_axis() -> Axis2 {
    Axis2 {
        label: "credit balance (% of bucket)".into(),
        unit: Unit::Percent,
        max: Some(100.0),
        lines: Vec::new(),
    }
}

/// Baseline and burst lines (each distinct value once) and each volume's balance, for the
/// dimension `credits` picks.
fn burst_refs_and_balance(
    c: &mut Chart,
    s: &JobSeries,
    credits: impl Fn(&NodeSample) -> Option<CreditSample>,
    show: &dyn Fn(u64) -> String,
    style: usize,
) {
    let bytes = c.y_unit == Unit::BytesPerSec;
    let mut axis = balance_axis();
    for (k, v) in s.node_volumes().iter().enumerate() {
        let samples: Vec<(u64, CreditSample)> = s
            .node
            .iter()
            .filter(|x| &x.volume == v)
            .filter_map(|x| credits(x).map(|c| (x.t_ms, c)))
            .collect();
        let Some(&(_, first)) = samples.first() else {
            continue;
        };
        for (label, y, st) in [
            ("baseline", first.baseline, CEILING),
            ("burst", first.burst, BURST),
        ] {
            if !c.refs.iter().any(|r| r.y == y) {
                c.refs.push(RefLine {
                    label: format!("{label} {}", show(y.round() as u64)),
                    y,
                    style: st,
                });
            }
        }
        axis.line(
            format!("node: {v} balance ({})", bucket_text(&first, bytes)),
            samples
                .iter()
                .map(|(t, c)| (secs(*t), c.percent()))
                .collect(),
            style + 1 + k,
        );
    }
    c.y2 = Some(axis);
}

/// One chart per bursting resource of a provisioned file system that the job used: fio's
/// throughput (bytes/s or IOPS, as the resource counts), the resource's use, its baseline
/// and burst, and its balance on the right axis.
fn resource_charts(s: &JobSeries, title: &str) -> Vec<Chart> {
    let mut out = Vec::new();
    for name in s.resource_names() {
        let samples: Vec<_> = s.resources.iter().filter(|r| r.resource == name).collect();
        let Some(first) = samples.iter().find_map(|r| r.credits) else {
            continue;
        };
        if samples.iter().all(|r| r.use_rate <= 0.0) {
            continue;
        }
        let bytes = samples[0].unit == "bytes";
        let mut c = Chart::new(
            format!("{title}: {name} (provisioned file system)"),
            "time (s, after ramp)",
            if bytes { "bandwidth" } else { "IOPS" },
        );
        if bytes {
            c.y_unit = Unit::BytesPerSec;
        }
        let totals = s.fio_totals();
        c.line(
            "fio total",
            totals
                .iter()
                .map(|x| (secs(x.t_ms), if bytes { x.bw_bytes } else { x.iops }))
                .collect(),
            0,
        );
        c.line(
            format!("node: {name} use"),
            samples.iter().map(|r| (secs(r.t_ms), r.use_rate)).collect(),
            1,
        );
        // AWS states the file system's rates in MB/s of 10^6 bytes: so do these labels.
        let show = |x: f64| {
            if bytes {
                format!("{} MB/s", trim_num(x / 1e6))
            } else {
                format!("{} IOPS", x.round())
            }
        };
        c.refs.push(RefLine {
            label: format!("{name} baseline {}", show(first.baseline)),
            y: first.baseline,
            style: CEILING,
        });
        c.refs.push(RefLine {
            label: format!("{name} burst {}", show(first.burst)),
            y: first.burst,
            style: BURST,
        });
        let mut axis = balance_axis();
        axis.line(
            format!("{name} balance ({})", bucket_text(&first, bytes)),
            samples
                .iter()
                .filter_map(|r| r.credits.map(|c| (secs(r.t_ms), c.percent())))
                .collect(),
            4,
        );
        c.y2 = Some(axis);
        if c.has_data() {
            out.push(c);
        }
    }
    out
}

/// Thin categorical labels so they stay legible (every k-th of many).
pub fn categories(xs: &[(f64, String)]) -> Vec<(f64, String)> {
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
    let jobs: Vec<(&JobRecord, &fio::JobResult)> = run
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
    let pick = |f: fn(&fio::DirStats) -> u64| {
        jobs.iter()
            .map(|(j, r)| (j.seq as f64, f(&r.read).max(f(&r.write)) as f64 / 1e6))
            .collect::<Vec<_>>()
    };
    c.line(
        "mean",
        jobs.iter()
            .map(|(j, r)| (j.seq as f64, r.lat_mean_ns() / 1e6))
            .collect(),
        0,
    );
    type Percentile = fn(&fio::DirStats) -> u64;
    let percentiles: [(&str, Percentile); 4] = [
        ("p50", |d| d.p50_ns),
        ("p90", |d| d.p90_ns),
        ("p99", |d| d.p99_ns),
        ("p99.9", |d| d.p999_ns),
    ];
    for (style, (label, f)) in (1..).zip(percentiles) {
        c.line(label, pick(f), style);
    }
    let xs: Vec<(f64, String)> = jobs
        .iter()
        .map(|(j, _)| (j.seq as f64, format!("#{}", j.seq)))
        .collect();
    c.x_categories = categories(&xs);
    Some(c)
}

/// A number with at most 2 decimals, trailing zeros dropped (chart labels).
pub fn trim_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
