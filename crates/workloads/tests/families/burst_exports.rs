//! A run whose limits burst exports its credit balances: the series CSV gains the credit
//! columns and resource rows, JSON carries them, and the HTML report draws throughput with
//! baseline and burst lines and the balance on a second axis. Snapshots in
//! `tests/snapshots/burst.*` (regenerate with `UPDATE_SNAPSHOTS=1`, review the diff); the
//! snapshots of runs without balances (`run.*`) are untouched by all of this.

use fio::{DirStats, JobResult};
use harness::series::{CreditSample, FioSample, JobSeries, NodeSample, ResourceSample};
use harness::store::{JobRecord, RunRecord, VolumeRecord};
use harness::verdict::Limits;
use report::Format;
use workloads::export;

use crate::snapshot::{check_snapshot, lab_env};

/// One of fio's read windows.
fn read_sample(
    t_ms: u64,
    iops: f64,
    bw_bytes: f64,
    lat_mean_ns: f64,
    p50: u64,
    p99: u64,
) -> FioSample {
    FioSample {
        t_ms,
        direction: "read".into(),
        iops,
        bw_bytes,
        lat_mean_ns,
        p50_ns: p50,
        p99_ns: p99,
    }
}

/// gp2 at 100 GiB with a 13,500-credit bucket: 3,000 IOPS for 5 s, then 300.
fn gp2_samples() -> (Vec<FioSample>, Vec<NodeSample>) {
    let (mut fio, mut node) = (Vec::new(), Vec::new());
    for k in 1..=16u64 {
        let t_ms = k * 500;
        let iops = if t_ms <= 5_000 { 3_000.0 } else { 300.0 };
        fio.push(read_sample(
            t_ms,
            iops,
            iops * 4096.0,
            5e6,
            4_000_000,
            9_000_000,
        ));
        let balance = (13_500.0 - 2_700.0 * t_ms as f64 / 1000.0).max(0.0);
        node.push(NodeSample {
            t_ms,
            volume: "gp2".into(),
            read_iops: iops,
            read_bps: iops * 4096.0,
            lat_mean_us: 5_000.0,
            ceiling_wait_us: 4_900.0,
            iops_credits: Some(CreditSample::at_use(
                balance, 13_500.0, 300.0, 3_000.0, iops,
            )),
            ..Default::default()
        });
    }
    (fio, node)
}

/// A cached read on an emulated FSx: the network bursts at 1,250 MB/s for 2 s, then 150.
fn fs_samples() -> (Vec<FioSample>, Vec<ResourceSample>) {
    let (mut fio, mut res) = (Vec::new(), Vec::new());
    let bucket = 2.2e9;
    for k in 1..=8u64 {
        let t_ms = k * 500;
        let bw = if t_ms <= 2_000 { 1.25e9 } else { 1.5e8 };
        fio.push(read_sample(
            t_ms,
            bw / 1048576.0,
            bw,
            1e6,
            900_000,
            2_000_000,
        ));
        let balance = (bucket - 1.1e9 * t_ms as f64 / 1000.0).max(0.0);
        for (name, unit, baseline, use_rate, credits) in [
            (
                "network",
                "bytes",
                1.5e8,
                bw,
                Some(CreditSample::at_use(balance, bucket, 1.5e8, 1.25e9, bw)),
            ),
            ("ssd_iops", "iops", 3_072.0, 0.0, None),
        ] {
            res.push(ResourceSample {
                t_ms,
                resource: name.into(),
                unit: unit.into(),
                use_rate,
                baseline,
                credits,
            });
        }
    }
    (fio, res)
}

fn job(id: i64, name: &str, volume: &str, iops: f64, bw: u64) -> JobRecord {
    JobRecord {
        id,
        seq: id as u32,
        workload: "burst".into(),
        name: name.into(),
        volume: Some(volume.into()),
        iteration: 1,
        status: "done".into(),
        started_at: "2026-11-22T05:26:18Z".into(),
        finished_at: Some("2026-11-22T05:26:26Z".into()),
        error: None,
        results: vec![JobResult {
            jobname: name.into(),
            read: DirStats {
                iops,
                iops_mean: iops,
                bw_bytes: bw,
                bw_mean_bytes: bw as f64,
                io_bytes: bw * 8,
                total_ios: (iops * 8.0) as u64,
                runtime_ms: 8_000,
                lat_mean_ns: 5e6,
                clat_mean_ns: 5e6,
                p50_ns: 4_000_000,
                p90_ns: 8_000_000,
                p99_ns: 9_000_000,
                p999_ns: 9_500_000,
            },
            ..Default::default()
        }],
        verdicts: Vec::new(),
        diagnosis: None,
        steady: None,
        ops: Vec::new(),
    }
}

fn run() -> RunRecord {
    let (fio1, node1) = gp2_samples();
    let (fio2, res2) = fs_samples();
    RunRecord {
        id: 3,
        name: "burst".into(),
        started_at: "2026-11-22T05:26:00Z".into(),
        finished_at: Some("2026-11-22T05:27:00Z".into()),
        status: "passed".into(),
        plan_origin: "--profile provisioned".into(),
        plan_text: "# burst\n".into(),
        target: "embedded node".into(),
        executor: "local fio".into(),
        runtime_s: 8.0,
        ramp_s: 0.0,
        env: lab_env(),
        policies: Vec::new(),
        volumes: vec![
            VolumeRecord {
                name: "gp2".into(),
                size: 100 << 30,
                snapshot_reserve_percent: 0,
                policy: Some("gp2".into()),
                limits: Limits {
                    ceiling_iops: 300,
                    ceiling_bps: 128 << 20,
                    ..Default::default()
                },
            },
            VolumeRecord {
                name: "fs".into(),
                size: 1 << 30,
                snapshot_reserve_percent: 0,
                policy: None,
                limits: Limits::default(),
            },
        ],
        jobs: vec![
            job(1, "gp2-burst", "gp2", 1_856.0, 7_602_176),
            job(2, "fs-read", "fs", 545.0, 571_000_000),
        ],
        tables: Vec::new(),
        series: vec![
            JobSeries {
                job_id: 1,
                fio: fio1,
                node: node1,
                resources: Vec::new(),
                hosts: Vec::new(),
                ops: Vec::new(),
            },
            JobSeries {
                job_id: 2,
                fio: fio2,
                node: Vec::new(),
                resources: res2,
                hosts: Vec::new(),
                ops: Vec::new(),
            },
        ],
    }
}

fn check(format: Format, file: &str) -> String {
    check_snapshot(export(&run(), format), file)
}

#[test]
fn series_csv_carries_balances_and_resources() {
    let text = check(Format::SeriesCsv, "burst.series.csv");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "{}{}",
            report::export::SERIES_CSV_HEADER,
            report::export::SERIES_CSV_CREDIT_COLUMNS
        )
    );
    // Job 1: 16 fio windows, 16 node samples; job 2: 8 fio windows, 8 x 2 resource samples.
    assert_eq!(lines.len(), 1 + 16 + 16 + 8 + 16);
    assert!(lines.iter().all(|l| l.split(',').count() == 29), "{text}");
    // The first node sample: 3,000 IOPS, 12,150 credits left of 13,500, 4.5 s to empty.
    assert!(
        lines.contains(
            &"3,1,burst,gp2-burst,gp2,1,node,500,total,3000.000,12288000,5000.000,,,4900.000,0.000,,,,12150,13500,300,3000,4.500,,,,,"
        ),
        "{text}"
    );
    // After the burst: empty and held at the baseline (not draining: no time to empty).
    assert!(text.contains(
        ",node,8000,total,300.000,1228800,5000.000,,,4900.000,0.000,,,,0,13500,300,3000,,,,,,"
    ));
    // The network resource counts bytes: its use in bw_bytes, its bucket in bytes_*.
    assert!(
        text.contains("3,2,burst,fs-read,network,1,resource,500,total,,1250000000,,,,,,,,,,,,,,1650000000,2200000000,150000000,1250000000,1.500"),
        "{text}"
    );
    assert!(
        text.contains("3,2,burst,fs-read,ssd_iops,1,resource,500,total,0.000,,,,,,,,,,,,,,,,,,")
    );
}

#[test]
fn json_carries_balances_and_resources() {
    let text = check(Format::Json, "burst.json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let n = &v["series"][0]["node"][0]["iops_credits"];
    assert_eq!(n["balance"], 12150.0);
    assert_eq!(n["time_to_empty_s"], 4.5);
    assert!(v["series"][0]["node"][0].get("bytes_credits").is_none());
    assert_eq!(v["series"][1]["resources"][0]["resource"], "network");
    assert!(v["series"][1]["resources"][1].get("credits").is_none());
    // Read back, it is the same run.
    let back: RunRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(back.series, run().series);
}

#[test]
fn html_draws_baseline_burst_and_balance() {
    let h = check(Format::Html, "burst.html");
    let charts = h.matches("<svg class=\"qchart\"").count();
    // Percentiles; job 1: IOPS and bandwidth (both with the volume's burst where it has
    // one), latency; job 2: IOPS, network (provisioned file system), latency.
    assert_eq!(charts, 1 + 3 + 3, "charts");
    assert!(h.contains(&format!("<span id=\"charts-expected\">{charts}</span>")));
    for want in [
        ">baseline 300 IOPS</text>",
        ">burst 3000 IOPS</text>",
        ">node: gp2 balance (13.5k I/O credits) (right axis)</text>",
        ">credit balance (% of bucket)</text>",
        ">100%</text>",
        ">network baseline 150 MB/s</text>",
        ">network burst 1250 MB/s</text>",
        ">network balance (2098MiB) (right axis)</text>",
    ] {
        assert!(h.contains(want), "{want} in the report");
    }
    // The gp2 bandwidth chart keeps the flat 128 MiB/s ceiling (it does not burst in bytes).
    assert!(h.contains(">ceiling 128MiB/s</text>"));
    // Exactly the two bursting charts have a right axis.
    assert_eq!(h.matches("rotate(90)").count(), 2);
}
