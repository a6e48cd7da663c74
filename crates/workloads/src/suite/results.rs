//! The suites' stored summary tables (docs/SUITES.md lists their columns), built from the
//! `suites` crate's results, and read back for the report and the terminal.

use harness::store::SummaryTable;
use serde_json::{json, Value};
use suites::disks::TargetSizing;
use suites::fiorun::{steady_word, FioRun, Summary};
use suites::network::{HostTotal, Pair};

/// Kinds of the tables this family writes.
pub const PAIRS: &str = "suite-network-pairs";
pub const HOSTS: &str = "suite-network-hosts";
pub const INTERVALS: &str = "suite-network-intervals";
pub const SIZING: &str = "suite-sizing";
pub const FIO: &str = "suite-fio";
pub const CLIENTS: &str = "suite-clients";
pub const IOSTAT: &str = "suite-iostat";
pub const VMSTAT: &str = "suite-vmstat";

pub const KINDS: [&str; 8] = [
    PAIRS, HOSTS, INTERVALS, SIZING, FIO, CLIENTS, IOSTAT, VMSTAT,
];

/// Names of the network tables.
pub const CONNECTIVITY: &str = "connectivity (one pair at a time)";
pub const UNDER_LOAD: &str = "under load (all pairs at once)";

fn r1(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 10.0).round() / 10.0)
    } else {
        Value::Null
    }
}

pub const PAIR_COLUMNS: [&str; 17] = [
    "from",
    "to",
    "goodput_mbps",
    "sent_mbps",
    "retransmits",
    "rtt_mean_us",
    "rtt_min_us",
    "rtt_max_us",
    "cpu_client_pct",
    "cpu_server_pct",
    "rated_mbps",
    "threshold_mbps",
    "pass",
    "error",
    "cpu_wait_from_pct",
    "cpu_wait_to_pct",
    "starved",
];

/// One pairs table (connectivity: rate judged; under load: retransmits only).
pub fn pairs(name: &str, pairs: &[Pair], min_fraction: f64) -> SummaryTable {
    let rows = pairs
        .iter()
        .map(|p| {
            let r = p.run.clone().unwrap_or_default();
            let threshold = match (p.rate_ok, p.rated_mbps) {
                (Some(_), Some(m)) => r1(min_fraction * m as f64),
                _ => Value::Null,
            };
            vec![
                json!(p.from),
                json!(p.to),
                r1(r.goodput_bps / 1e6),
                r1(r.sent_bps / 1e6),
                json!(r.retransmits),
                r1(r.rtt_mean_us),
                r1(r.rtt_min_us),
                r1(r.rtt_max_us),
                r1(r.cpu_client_pct),
                r1(r.cpu_server_pct),
                p.rated_mbps.map_or(Value::Null, |m| json!(m)),
                threshold,
                json!(p.passed()),
                json!(p.error.clone().unwrap_or_default()),
                p.cpu_wait_pct[0].map_or(Value::Null, r1),
                p.cpu_wait_pct[1].map_or(Value::Null, r1),
                json!(starved(p.passed(), p.starved())),
            ]
        })
        .collect();
    SummaryTable::new(PAIRS, name, &PAIR_COLUMNS, rows)
}

pub fn hosts(totals: &[HostTotal], min_fraction: f64) -> SummaryTable {
    let rows = totals
        .iter()
        .map(|t| {
            vec![
                json!(t.host),
                t.rated_mbps.map_or(Value::Null, |m| json!(m)),
                json!(t.rated_from),
                r1(t.out_mbps),
                r1(t.in_mbps),
                t.rated_mbps
                    .map_or(Value::Null, |m| r1(min_fraction * m as f64)),
                json!(t.out_ok != Some(false) && t.in_ok != Some(false)),
                t.cpu_wait_pct.map_or(Value::Null, r1),
                json!(starved(
                    t.out_ok != Some(false) && t.in_ok != Some(false),
                    t.starved.clone()
                )),
            ]
        })
        .collect();
    SummaryTable::new(
        HOSTS,
        "per host under load (cumulative out and in)",
        &[
            "host",
            "rated_mbps",
            "rated_from",
            "out_mbps",
            "in_mbps",
            "threshold_mbps",
            "pass",
            "cpu_wait_pct",
            "starved",
        ],
        rows,
    )
}

/// The `starved` column: why a missed figure is inconclusive (empty when it held, or
/// when its host was not starved).
fn starved(held: bool, why: Option<String>) -> String {
    if held {
        String::new()
    } else {
        why.unwrap_or_default()
    }
}

/// iperf3's per-second reports of every pair under load (a time series).
pub fn intervals(pairs: &[Pair]) -> SummaryTable {
    let mut rows = Vec::new();
    for p in pairs {
        for (t, bps, retr) in p.run.iter().flat_map(|r| &r.intervals) {
            rows.push(vec![
                json!(p.from),
                json!(p.to),
                r1(*t),
                r1(bps / 1e6),
                json!(retr),
            ]);
        }
    }
    SummaryTable::new(
        INTERVALS,
        "under load, per second",
        &["from", "to", "t_s", "mbps", "retransmits"],
        rows,
    )
}

pub fn sizing(sz: &[TargetSizing]) -> SummaryTable {
    let rows = sz
        .iter()
        .map(|t| {
            vec![
                json!(t.host),
                json!(t.targets.join("+")),
                json!(t.sizing.size_bytes),
                json!(fio::fmt::human(t.sizing.size_bytes)),
                json!(t.sizing.numjobs),
                t.sizing.iodepth.map_or(json!("per job file"), |d| json!(d)),
                json!(if t.sizing.ssd { "SSD" } else { "HDD" }),
                json!(t.sizing.notes.join("; ")),
            ]
        })
        .collect();
    SummaryTable::new(
        SIZING,
        "sizing (seed 002 rules)",
        &[
            "host",
            "targets",
            "size_bytes",
            "size",
            "numjobs",
            "iodepth",
            "rule",
            "how",
        ],
        rows,
    )
}

pub const FIO_COLUMNS: [&str; 18] = [
    "stage",
    "job",
    "where",
    "iterations",
    "iops_mean",
    "iops_min",
    "iops_max",
    "iops_cv_pct",
    "mib_s_mean",
    "mib_s_cv_pct",
    "lat_mean_us",
    "p99_us_worst_client",
    "util_pct_max",
    "steady",
    "steady_range_pct",
    "steady_trend_pct",
    "cv_ok",
    "pass",
];

/// Per job and place over its iterations: spread, latency, %util, steady state.
pub fn fio(name: &str, sums: &[Summary], max_cv: Option<f64>) -> SummaryTable {
    let rows = sums
        .iter()
        .map(|m| {
            let cv_ok = max_cv.is_none_or(|c| m.iops.cv_pct <= c);
            let steady_ok = m.steady.is_none_or(|s| s.attained);
            vec![
                json!(m.stage),
                json!(m.job),
                json!(format!("{}:{}", m.hosts.join("+"), m.targets.join("+"))),
                json!(m.iops.n),
                r1(m.iops.mean),
                r1(m.iops.min),
                r1(m.iops.max),
                r1(m.iops.cv_pct),
                r1(m.mib_s.mean),
                r1(m.mib_s.cv_pct),
                r1(m.lat_us.mean),
                r1(m.p99_us_max),
                r1(m.util_pct_max),
                json!(steady_word(m.steady)),
                m.steady.map_or(Value::Null, |s| r1(s.range_pct)),
                m.steady.map_or(Value::Null, |s| r1(s.slope_change_pct)),
                json!(cv_ok),
                json!(cv_ok && steady_ok),
            ]
        })
        .collect();
    SummaryTable::new(FIO, name, &FIO_COLUMNS, rows)
}

pub const CLIENT_COLUMNS: [&str; 10] = [
    "stage",
    "job",
    "iteration",
    "where",
    "client",
    "iops",
    "mib_s",
    "lat_mean_us",
    "p99_us",
    "total_ios",
];

/// Every measured run's per-client entries and the merged one ("All clients"; its p99 is
/// left empty: fio gives the merged entry no percentiles).
pub fn clients(runs: &[FioRun]) -> SummaryTable {
    let rows = per_run(
        runs,
        |r| {
            let mut entries: Vec<&fio::JobResult> = r.per_client.iter().collect();
            if r.merged.client.as_deref() == Some(fio::result::ALL_CLIENTS) {
                entries.push(&r.merged);
            }
            entries
        },
        |r, c| {
            let merged = c.client.as_deref() == Some(fio::result::ALL_CLIENTS);
            let p99 = c.read.p99_ns.max(c.write.p99_ns) as f64 / 1e3;
            vec![
                json!(format!("{}:{}", r.hosts.join("+"), r.targets.join("+"))),
                json!(c.client.clone().unwrap_or_else(|| "local".into())),
                r1(c.iops()),
                r1(c.bw_bytes() as f64 / 1048576.0),
                r1(c.lat_mean_ns() / 1e3),
                if merged { Value::Null } else { r1(p99) },
                json!(c.read.total_ios + c.write.total_ios),
            ]
        },
    );
    SummaryTable::new(
        CLIENTS,
        "per client and merged (All clients)",
        &CLIENT_COLUMNS,
        rows,
    )
}

/// The rows of a table of what each measured run saw: for each of a run's `items`, the
/// run's stage, job and iteration, then `cells` of the item.
fn per_run<'a, T, I: IntoIterator<Item = T>>(
    runs: &'a [FioRun],
    items: impl Fn(&'a FioRun) -> I,
    cells: impl Fn(&FioRun, T) -> Vec<Value>,
) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for r in runs {
        for x in items(r) {
            let mut row = vec![json!(r.stage), json!(r.job), json!(r.iteration)];
            row.extend(cells(r, x));
            rows.push(row);
        }
    }
    rows
}

pub fn iostat(runs: &[FioRun]) -> SummaryTable {
    let rows = per_run(
        runs,
        |r| &r.iostat,
        |_, st| {
            vec![
                json!(st.host),
                json!(st.device),
                r1(st.r_s),
                r1(st.w_s),
                r1(st.rmb_s),
                r1(st.wmb_s),
                r1(st.r_await_ms),
                r1(st.w_await_ms),
                r1(st.aqu_sz),
                r1(st.util_pct),
            ]
        },
    );
    SummaryTable::new(
        IOSTAT,
        "iostat per device (from /proc/diskstats around each run)",
        &[
            "stage",
            "job",
            "iteration",
            "host",
            "device",
            "r_s",
            "w_s",
            "rmb_s",
            "wmb_s",
            "r_await_ms",
            "w_await_ms",
            "aqu_sz",
            "util_pct",
        ],
        rows,
    )
}

pub fn vmstat(runs: &[FioRun]) -> SummaryTable {
    let rows = per_run(
        runs,
        |r| &r.vmstat,
        |_, v| {
            vec![
                json!(v.host),
                r1(v.us),
                r1(v.sy),
                r1(v.wa),
                r1(v.id),
                r1(v.st),
                json!(v.r),
                json!(v.b),
                r1(v.cs_s),
                r1(v.si_s),
                r1(v.so_s),
                r1(v.majflt_s),
            ]
        },
    );
    SummaryTable::new(
        VMSTAT,
        "vmstat per host (from /proc/stat and /proc/vmstat around each run)",
        &[
            "stage",
            "job",
            "iteration",
            "host",
            "us",
            "sy",
            "wa",
            "id",
            "st",
            "r",
            "b",
            "cs_s",
            "si_s",
            "so_s",
            "majflt_s",
        ],
        rows,
    )
}

/// A cell as text (strings as they are).
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => report::export::cell_text(v),
    }
}

/// Column `name` of row `r` of `t`.
pub fn cell<'a>(t: &'a SummaryTable, r: &'a [Value], name: &str) -> Option<&'a Value> {
    t.column(name).and_then(|i| r.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fio::result::DirStats;
    use fio::JobResult;
    use suites::iostat::{IoStat, VmStat};

    fn entry(client: &str, iops: f64, p99_ns: u64) -> JobResult {
        JobResult {
            client: Some(client.into()),
            read: DirStats {
                iops,
                bw_bytes: 1048576,
                total_ios: 100,
                lat_mean_ns: 2500.0,
                p99_ns,
                ..DirStats::default()
            },
            ..JobResult::default()
        }
    }

    /// A run of two clients, with one device's iostat and one host's vmstat.
    fn run() -> FioRun {
        FioRun {
            stage: "host".into(),
            job: "randread".into(),
            iteration: 2,
            hosts: vec!["a".into(), "b".into()],
            targets: vec!["/dev/x".into(), "/dev/y".into()],
            per_client: vec![entry("a:8765", 100.0, 2000), entry("b:8765", 50.0, 4000)],
            merged: entry(fio::result::ALL_CLIENTS, 150.0, 0),
            iostat: vec![IoStat {
                host: "a".into(),
                device: "x".into(),
                r_s: 100.04,
                w_s: 0.0,
                rmb_s: 0.39,
                wmb_s: 0.0,
                r_await_ms: 1.25,
                w_await_ms: 0.0,
                aqu_sz: 0.12,
                util_pct: 45.67,
            }],
            vmstat: vec![VmStat {
                host: "b".into(),
                us: 10.0,
                sy: 5.0,
                wa: 1.0,
                id: 84.0,
                st: 0.0,
                r: 3,
                b: 1,
                cs_s: 1200.0,
                si_s: 0.0,
                so_s: 0.0,
                majflt_s: 0.5,
            }],
            job_files: vec![],
            series: vec![],
            steady: None,
            output: fio::FioOutput::default(),
        }
    }

    /// Every row of the per-run tables starts with its run's stage, job and iteration; the
    /// merged entry follows the clients, without a p99.
    #[test]
    fn per_run_tables_start_each_row_with_the_run() {
        let runs = [run()];
        let t = clients(&runs);
        assert_eq!((t.kind.as_str(), t.columns.len()), (CLIENTS, 10));
        let want = |client: &str, iops: f64, p99: Value| {
            vec![
                json!("host"),
                json!("randread"),
                json!(2),
                json!("a+b:/dev/x+/dev/y"),
                json!(client),
                json!(iops),
                json!(1.0),
                json!(2.5),
                p99,
                json!(100),
            ]
        };
        assert_eq!(
            t.rows,
            [
                want("a:8765", 100.0, json!(2.0)),
                want("b:8765", 50.0, json!(4.0)),
                want("All clients", 150.0, Value::Null),
            ]
        );
        let t = iostat(&runs);
        assert_eq!(t.kind, IOSTAT);
        assert_eq!(
            t.rows,
            [[
                json!("host"),
                json!("randread"),
                json!(2),
                json!("a"),
                json!("x"),
                json!(100.0),
                json!(0.0),
                json!(0.4),
                json!(0.0),
                json!(1.3),
                json!(0.0),
                json!(0.1),
                json!(45.7),
            ]]
        );
        assert_eq!(t.columns.len(), t.rows[0].len());
        let t = vmstat(&runs);
        assert_eq!(t.kind, VMSTAT);
        assert_eq!(
            t.rows,
            [[
                json!("host"),
                json!("randread"),
                json!(2),
                json!("b"),
                json!(10.0),
                json!(5.0),
                json!(1.0),
                json!(84.0),
                json!(0.0),
                json!(3),
                json!(1),
                json!(1200.0),
                json!(0.0),
                json!(0.0),
                json!(0.5),
            ]]
        );
        assert_eq!(t.columns.len(), t.rows[0].len());
        assert!(clients(&[]).rows.is_empty());
    }
}
