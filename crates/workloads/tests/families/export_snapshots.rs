//! Exporters are pure: a fixed run built from real fio 3.33 JSON fixtures (and real fio
//! logs for its time series, hand-made node samples and profile tables) exports to the
//! bytes in `tests/snapshots/`. After an intended format change, regenerate them with
//! `UPDATE_SNAPSHOTS=1 cargo test -p workloads --test families export_snapshots` and review the diff.

use fio::FioOutput;
use harness::series::{JobSeries, NodeSample};
use harness::store::{JobRecord, PolicyRecord, RunRecord, SummaryTable, VolumeRecord};
use harness::verdict::{Expectation, Limits};
use report::Format;
use serde_json::json;
use workloads::export;

use crate::snapshot::{check_snapshot, lab_env};

fn fixture(name: &str) -> FioOutput {
    let p = format!(
        "{}/../fio/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    FioOutput::parse(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn job(
    seq: u32,
    workload: &str,
    name: &str,
    volume: &str,
    out: Option<FioOutput>,
    expect: &[&str],
    limits: &Limits,
) -> JobRecord {
    let results = out.map(|o| o.jobs).unwrap_or_default();
    let primary = results
        .iter()
        .find(|r| r.client.as_deref() == Some("All clients"))
        .or(results.first())
        .cloned()
        .unwrap_or_default();
    let verdicts = expect
        .iter()
        .map(|e| Expectation::parse(e).unwrap().check(&primary, Some(limits)))
        .collect();
    JobRecord {
        id: seq as i64,
        seq,
        workload: workload.into(),
        name: name.into(),
        volume: Some(volume.into()),
        iteration: 1,
        status: if results.is_empty() { "failed".into() } else { "done".into() },
        started_at: "2026-11-22T05:26:18Z".into(),
        finished_at: Some("2026-11-22T05:26:22Z".into()),
        error: results.is_empty().then(|| "fio exited with exit status: 1 and no JSON output; stderr: fio: engine nbd not loadable".into()),
        diagnosis: None,
        steady: None,
        results,
        verdicts,
        ops: Vec::new(),
    }
}

fn base_run() -> RunRecord {
    let l500 = Limits {
        ceiling_iops: 500,
        ..Default::default()
    };
    let none = Limits::default();
    RunRecord {
        id: 7,
        name: "snapshot".into(),
        started_at: "2026-11-22T05:26:00Z".into(),
        finished_at: Some("2026-11-22T05:27:00Z".into()),
        status: "failed".into(),
        plan_origin: "plans/snapshot.toml".into(),
        plan_text: "[[workload]]\nprofile = \"dbench\"\n".into(),
        target: "embedded node".into(),
        executor: "local fio".into(),
        runtime_s: 3.0,
        ramp_s: 1.0,
        env: lab_env(),
        policies: vec![PolicyRecord {
            name: "QoS_500iops".into(),
            definition: "Fixed(max 500 IOPS)".into(),
        }],
        volumes: vec![
            VolumeRecord {
                name: "vol500".into(),
                size: 100_000_000_000,
                snapshot_reserve_percent: 5,
                policy: Some("QoS_500iops".into()),
                limits: l500,
            },
            VolumeRecord {
                name: "base".into(),
                size: 100_000_000_000,
                snapshot_reserve_percent: 5,
                policy: None,
                limits: none,
            },
        ],
        jobs: vec![
            job(
                1,
                "dbench",
                "read_iops",
                "vol500",
                Some(fixture("randread_500iops_msec.out")),
                &[
                    "iops <= 500 +-3%",
                    "iops >= policy.ceiling * 0.97",
                    "iops_mean ~= policy.ceiling +-3%",
                ],
                &l500,
            ),
            job(
                2,
                "dbench",
                "read_latency",
                "vol500",
                Some(fixture("latency_usec.out")),
                &[],
                &l500,
            ),
            job(
                3,
                "dbench",
                "read_seq",
                "vol500",
                Some(fixture("seq_read_numjobs4.out")),
                &[],
                &l500,
            ),
            job(
                4,
                "dbench",
                "rw_mix",
                "vol500",
                Some(fixture("mixed_randrw.out")),
                &["lat_mean_us < 1ms"],
                &l500,
            ),
            job(
                5,
                "cs",
                "cs_read",
                "base",
                Some(fixture("client_server_2.out")),
                &["bw >= 100MiB/s"],
                &none,
            ),
            job(
                6,
                "null",
                "null_read",
                "base",
                Some(fixture("null_nsec.out")),
                &["lat_mean_us < 1"],
                &none,
            ),
            job(7, "broken", "broken", "base", None, &[], &none),
        ],
        tables: tables(),
        series: series(),
    }
}

/// The fixed run with assessments: job 1 held at its ceiling (and steady), job 4's latency
/// verdict failed on a starved load generator (inconclusive), job 6 unconstrained.
fn run() -> RunRecord {
    use assess::{Bottleneck, Check, Diagnosis, Figure, Quantity, Sense};
    let mut r = base_run();
    r.jobs[0].diagnosis = Some(Diagnosis {
        bottleneck: Bottleneck::QosBound,
        reason: "measured 500 IOPS is 100.0% of the 500 IOPS ceiling: the QoS policy held it"
            .into(),
        figures: vec![Figure {
            name: "share of the effective ceiling".into(),
            subject: String::new(),
            value: 100.0,
            unit: "%".into(),
            limit: ">= 97".into(),
        }],
    });
    r.jobs[0].steady = assess::steady::check(&[500.0, 499.0, 501.0, 500.0, 500.0]);
    let starved = Diagnosis {
        bottleneck: Bottleneck::ClientCpuBound,
        reason: "a fio process on local used 97% of a core: the load generator, not the target, was the limit".into(),
        figures: vec![Figure {
            name: "busiest fio process cpu".into(),
            subject: "local".into(),
            value: 97.0,
            unit: "% of a core".into(),
            limit: ">= 90".into(),
        }],
    };
    let v = r.jobs[3].verdicts[0].clone();
    r.jobs[3].verdicts[0] = v.clone().judged(
        &Check {
            passed: v.passed,
            quantity: Quantity::Latency,
            sense: Sense::AtMost,
            measured: v.measured,
            target: 1000.0,
            io_error: false,
        },
        Some(&starved),
    );
    r.jobs[3].diagnosis = Some(starved);
    r.jobs[5].diagnosis = Some(Diagnosis {
        bottleneck: Bottleneck::Unconstrained,
        reason: "no limit reached (local: fio 40%, node 0%, others 1% of a core, 55% idle)".into(),
        figures: vec![],
    });
    r
}

/// Job 1's series: real fio logs (crates/fio/tests/fixtures/fiologs) and node samples on the ceiling.
fn series() -> Vec<JobSeries> {
    let dir = format!(
        "{}/../fio/tests/fixtures/fiologs",
        env!("CARGO_MANIFEST_DIR")
    );
    let fio = fio::logs::collect(std::path::Path::new(&dir), "mix").unwrap();
    let node = (1..=4)
        .map(|i| NodeSample {
            t_ms: i * 500,
            volume: "vol500".into(),
            read_iops: 375.0 + i as f64,
            write_iops: 125.0 - i as f64,
            other_iops: 0.0,
            read_bps: (375.0 + i as f64) * 4096.0,
            write_bps: (125.0 - i as f64) * 4096.0,
            lat_mean_us: 7900.0 + 10.0 * i as f64,
            ceiling_wait_us: 7800.0,
            floor_wait_us: 0.0,
            ..Default::default()
        })
        .collect();
    vec![JobSeries {
        job_id: 1,
        fio,
        node,
        ops: Vec::new(),
        resources: Vec::new(),
        hosts: vec![host()],
    }]
}

/// One host's tool sets over job 1: two 1 s samples.
fn host() -> toolsets::HostSeries {
    let sample = |t: u64, fio: f64, util: f64| {
        serde_json::from_value::<toolsets::HostSample>(serde_json::json!({
            "t_ms": t, "interval_ms": 1000,
            "cpu": {"usr": 30.0, "sys": 10.0, "iowait": 0.0, "irq": 1.0, "steal": 0.0, "idle": 59.0},
            "cpus": [{"usr": 60.0, "sys": 20.0, "iowait": 0.0, "irq": 2.0, "steal": 0.0, "idle": 18.0}],
            "run_queue": 2, "blocked": 0, "mem_used_bytes": 1000, "mem_available_bytes": 2000,
            "swap_used_bytes": 0, "swap_in_s": 0.0, "swap_out_s": 0.0, "page_in_kib_s": 0.0,
            "page_out_kib_s": 4.0,
            "disks": [{"name": "vda", "r_s": 1.0, "w_s": 2.0, "rmb_s": 0.1, "wmb_s": 0.2,
                       "r_await_ms": 0.5, "w_await_ms": 1.5, "aqu_sz": 0.01, "util_pct": util}],
            "nics": [],
            "roles": {"fio": fio, "node": 30.0, "harness": 0.0, "kernel": 1.0, "other": 2.0},
            "procs": [{"pid": 7, "name": "fio", "role": "fio", "cpu_pct": fio, "last_cpu": 0}]
        }))
        .unwrap()
    };
    toolsets::HostSeries {
        host: "local".into(),
        ncpus: 1,
        mem_total_bytes: 3000,
        swap_total_bytes: 0,
        samples: vec![sample(1000, 40.0, 3.0), sample(2000, 42.0, 5.0)],
        overhead: toolsets::Overhead {
            cpu_s: 0.002,
            wall_s: 2.0,
            samples: 2,
        },
        errors: vec![],
    }
}

/// Profile tables as issue 5 (isolation) and issue 6 (ramp) write them, and one of a kind
/// the report has no chart for.
fn tables() -> Vec<SummaryTable> {
    // The ramp table's first ten columns: the table as issue 6 wrote it (before the
    // criteria, outcome and bottleneck columns).
    let ramp_cols = &workloads::ramp::COLUMNS[..10];
    let ramp_rows = (1..=6)
        .map(|run| {
            let target = 10_000 * run;
            let got = if run < 5 {
                target as f64 * 0.998
            } else {
                41_000.0 + run as f64 * 500.0
            };
            let cycle = if run < 5 {
                12.0 + 6.0 * run as f64
            } else {
                52.0 + run as f64
            };
            vec![
                json!(run),
                json!(target),
                json!((got * 0.8).round()),
                json!((got * 0.2).round()),
                json!(got.round()),
                json!(1.5 + run as f64 * 0.25),
                json!(cycle),
                json!(0.3 + 0.15 * run as f64),
                json!(0.8 + 0.1 * run as f64),
                json!(run < 5),
            ]
        })
        .collect();
    // The isolation table's first twelve columns: the table as issue 5 wrote it (before
    // `node_lat_ms` and `protocol`).
    let iso_cols = &workloads::isolation::COLUMNS[..12];
    let mut iso_rows = Vec::new();
    for mode in ["floors", "control"] {
        for step in 1..=5 {
            let load = 1.0 + 0.25 * (step - 1) as f64;
            let prod = if mode == "floors" {
                2050.0 - step as f64
            } else {
                2048.0 / load
            };
            let bully = 8000.0 - prod;
            iso_rows.push(vec![
                json!(mode),
                json!(step),
                json!(load),
                json!("prod"),
                json!("protected"),
                json!(2048),
                json!(prod),
                json!(15.6 * 2048.0 / prod),
                json!(40.0 * 2048.0 / prod),
                json!(0.0),
                json!(0.2),
                json!(prod >= 2048.0 * 0.95),
            ]);
            iso_rows.push(vec![
                json!(mode),
                json!(step),
                json!(load),
                json!("bully"),
                json!("bully"),
                json!(0),
                json!(bully),
                json!(31.0),
                json!(60.5),
                json!(0.0),
                json!(12.5),
                json!(true),
            ]);
        }
    }
    vec![
        SummaryTable {
            kind: "ramp".into(),
            name: "systemA".into(),
            columns: ramp_cols.iter().map(|c| c.to_string()).collect(),
            rows: ramp_rows,
        },
        SummaryTable {
            kind: "isolation".into(),
            name: "noisy-neighbour".into(),
            columns: iso_cols.iter().map(|c| c.to_string()).collect(),
            rows: iso_rows,
        },
        SummaryTable {
            kind: "custom".into(),
            name: "a <custom> table".into(),
            columns: vec!["key".into(), "value".into()],
            rows: vec![
                vec![json!("a|b"), json!(1.5)],
                vec![json!("c"), json!(null)],
            ],
        },
    ]
}

fn check(format: Format, file: &str) {
    check_snapshot(export(&run(), format), file);
}

#[test]
fn json_snapshot() {
    check(Format::Json, "run.json");
    let v: serde_json::Value = serde_json::from_slice(&export(&run(), Format::Json)).unwrap();
    assert_eq!(v["schema"], "qoslab.bench.run/1");
    assert_eq!(v["jobs"][4]["results"].as_array().unwrap().len(), 3);
}

#[test]
fn csv_snapshot() {
    check(Format::Csv, "run.csv");
}

#[test]
fn md_snapshot() {
    check(Format::Md, "run.md");
}

#[test]
fn series_csv_snapshot() {
    check(Format::SeriesCsv, "run.series.csv");
    let text = String::from_utf8(export(&run(), Format::SeriesCsv)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], report::export::SERIES_CSV_HEADER);
    // 4 windows x 2 directions from fio, 4 node samples, 2 host samples of 35 figures
    // (2 x 6 CPU, 9 host-wide, 8 for the disk, 5 roles, 1 process).
    assert_eq!(lines.len(), 1 + 8 + 4 + 2 * 35);
    assert!(lines.iter().all(|l| l.split(',').count() == 19), "{text}");
}

#[test]
fn html_snapshot() {
    check(Format::Html, "run.html");
    let h = String::from_utf8(export(&run(), Format::Html)).unwrap();
    // Self-contained: nothing fetched from anywhere.
    for bad in ["http://", "https://", "src=", "<link", "@import"] {
        let hits: Vec<&str> = h
            .match_indices(bad)
            .map(|(i, _)| &h[i.saturating_sub(40)..(i + 60).min(h.len())])
            .filter(|ctx| !ctx.contains("www.w3.org/2000/svg"))
            .collect();
        assert!(hits.is_empty(), "{bad}: {hits:?}");
    }
    let charts = h.matches("<svg class=\"qchart\"").count();
    // Job 1: IOPS + latency (no bandwidth limit) + host; percentiles; ramp 3; isolation 2 + 1.
    assert_eq!(charts, 3 + 1 + 3 + 3, "charts");
    assert!(h.contains("host local (tool sets, 1 s)"));
    assert!(h.contains(&format!("<span id=\"charts-expected\">{charts}</span>")));
    // The ceiling of job 1's volume is drawn, and the failing verdict spelled out.
    assert!(h.contains(">ceiling 500 IOPS</text>"));
    assert!(h.contains("iops &gt;= policy.ceiling * 0.97"));
    assert!(h.contains(">floor prod 2048 IOPS</text>"));
    assert!(h.contains(">write cycle limit 45 s</text>"));
    // Unknown kinds render as a plain table, escaped.
    assert!(h.contains("a &lt;custom&gt; table"));
    assert!(h.contains("class=\"fail\""));
}

#[test]
fn tables_csv_has_a_row_per_cell() {
    let r = run();
    let text = String::from_utf8(export(&r, Format::TablesCsv)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], report::export::TABLES_CSV_HEADER);
    let cells: usize = r
        .tables
        .iter()
        .map(|t| {
            t.rows
                .iter()
                .map(|row| row.len().min(t.columns.len()))
                .sum::<usize>()
        })
        .sum();
    assert!(cells > 0);
    assert_eq!(lines.len(), 1 + cells, "{text}");
    let t = &r.tables[0];
    let first = format!(
        "{},{},{},1,{},",
        r.id,
        t.kind,
        t.name.replace('"', "\"\""),
        t.columns[0]
    );
    assert!(
        lines[1].starts_with(&first) || lines[1].starts_with(&format!("{},{},\"", r.id, t.kind)),
        "{} vs {first}",
        lines[1]
    );
}
