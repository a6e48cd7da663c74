//! Burst balances and node resources in the store (schema 5): a round trip, and a database
//! written before the credit columns existed gaining them.

use super::*;
use crate::series::{CreditSample, ResourceSample};

fn credit(balance: f64, tte: Option<f64>) -> CreditSample {
    CreditSample {
        balance,
        bucket: 13_500.0,
        baseline: 300.0,
        burst: 3_000.0,
        time_to_empty_s: tte,
    }
}

/// A job with node samples carrying burst balances and resource samples (schema 4).
fn credit_series(job_id: i64) -> JobSeries {
    JobSeries {
        job_id,
        fio: Vec::new(),
        node: vec![
            NodeSample {
                t_ms: 500,
                volume: "gp2".into(),
                read_iops: 3_000.0,
                read_bps: 3_000.0 * 4096.0,
                iops_credits: Some(credit(12_150.0, Some(4.5))),
                ..Default::default()
            },
            NodeSample {
                t_ms: 1000,
                volume: "gp2".into(),
                read_iops: 300.0,
                bytes_credits: Some(CreditSample {
                    balance: 1e9,
                    bucket: 2e9,
                    baseline: 4e7,
                    burst: 2.5e8,
                    time_to_empty_s: None,
                }),
                iops_credits: Some(credit(0.0, None)),
                ..Default::default()
            },
        ],
        hosts: Vec::new(),
        ops: Vec::new(),
        resources: vec![
            ResourceSample {
                t_ms: 500,
                resource: "network".into(),
                unit: "bytes".into(),
                use_rate: 1.25e9,
                baseline: 1.5e8,
                credits: Some(CreditSample {
                    balance: 5e9,
                    bucket: 9.9e9,
                    baseline: 1.5e8,
                    burst: 1.25e9,
                    time_to_empty_s: Some(4.5),
                }),
            },
            ResourceSample {
                t_ms: 500,
                resource: "ssd_iops".into(),
                unit: "iops".into(),
                use_rate: 0.0,
                baseline: 3072.0,
                credits: None,
            },
        ],
    }
}

#[test]
fn credit_balances_and_resources_round_trip() {
    let mut s = Store::in_memory().unwrap();
    let run = new_run(&s);
    let j = s
        .begin_job(run, 1, "w", "burst", Some("gp2"), 1, "")
        .unwrap();
    let series = credit_series(j);
    s.add_series(&series).unwrap();
    assert_eq!(s.load_run(run).unwrap().series, vec![series]);
}

/// Schema 4 as shipped (node samples without balances, no resource samples): such a
/// database opens, its rows load without balances, new rows carry them, and opening it
/// again changes nothing.
#[test]
fn a_schema_4_database_gains_credit_balances() {
    let (_dir, path) = {
        let mut old = String::new();
        for t in SCHEMA.split("CREATE TABLE").skip(1) {
            if t.contains("resource_samples (") {
                continue;
            }
            let t = match t.find("  -- schema 5") {
                Some(i) => format!("{}\n);\n", t[..i].trim_end().trim_end_matches(',')),
                None => t.to_string(),
            };
            old.push_str("CREATE TABLE");
            old.push_str(&t);
        }
        old_database(
            4,
            &old,
            "INSERT INTO runs (name, started_at, status, plan_origin, plan_text, target, executor,
               runtime_s, ramp_s, host, kernel, cpu, fio_version, qoslab_version)
             VALUES ('old', 't', 'passed', 'p', '', 'x', 'fio', 1, 0, '', '', '', '', '');
             INSERT INTO jobs (run_id, seq, workload, name, volume, iteration, status, started_at, jobfile)
             VALUES (1, 1, 'w', 'j', 'v', 1, 'done', 't', '');
             INSERT INTO node_samples (job_id, t_ms, volume, read_iops, write_iops, other_iops,
               read_bps, write_bps, lat_mean_us, ceiling_wait_us, floor_wait_us)
             VALUES (1, 500, 'v', 500, 0, 0, 2048000, 0, 31000, 30000, 0);",
        )
    };
    {
        let cols: i64 = Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('node_samples')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(cols, 11, "the old table as schema 4 had it");
    }
    {
        let mut s = Store::open(&path).unwrap();
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let r = s.load_run(1).unwrap();
        assert_eq!(r.series.len(), 1);
        let old = &r.series[0].node[0];
        assert_eq!((old.read_iops, old.iops_credits), (500.0, None));
        assert!(r.series[0].resources.is_empty());
        // The migrated database takes a job with balances.
        let j = s.begin_job(1, 2, "w", "new", Some("v"), 1, "").unwrap();
        s.add_series(&credit_series(j)).unwrap();
    }
    // Opened again: nothing to migrate, both jobs load as written.
    let s = Store::open(&path).unwrap();
    let r = s.load_run(1).unwrap();
    assert_eq!(r.series.len(), 2);
    assert_eq!(r.series[0].node[0].bytes_credits, None);
    assert_eq!(r.series[1], credit_series(r.series[1].job_id));
}
