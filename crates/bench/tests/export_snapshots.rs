//! Exporters are pure: a fixed run built from real fio 3.33 JSON fixtures exports to the
//! bytes in `tests/snapshots/`. After an intended format change, regenerate them with
//! `UPDATE_SNAPSHOTS=1 cargo test -p bench --test export_snapshots` and review the diff.

use bench::export::{export, Format};
use bench::result::FioOutput;
use bench::store::{Env, JobRecord, PolicyRecord, RunRecord, VolumeRecord};
use bench::verdict::{Expectation, Limits};

fn fixture(name: &str) -> FioOutput {
    let p = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
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
        results,
        verdicts,
    }
}

fn run() -> RunRecord {
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
        env: Env {
            host: "lab1".into(),
            kernel: "6.1.0".into(),
            cpu: "Example CPU (2 cores)".into(),
            fio_version: "fio-3.33".into(),
            qoslab_version: "0.1.0".into(),
        },
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
        tables: vec![],
        series: vec![],
    }
}

fn check(format: Format, file: &str) {
    let got = export(&run(), format);
    let path = format!("{}/tests/snapshots/{file}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (UPDATE_SNAPSHOTS=1 creates it)"));
    assert!(
        got == want,
        "{file} differs from the snapshot; got:\n{}",
        String::from_utf8_lossy(&got)
    );
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
