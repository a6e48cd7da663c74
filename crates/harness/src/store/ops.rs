//! The per-operation results of request/response drivers (schema 6: the S3 family):
//! `op_results` (one row per job, load generator and operation) and `op_samples` (their
//! 1 s segments), written with the job and its series, read back with the run.

use rusqlite::{params, Transaction};

use super::{now_rfc3339, Result, Store};
use crate::ops::{OpLatency, OpResult, OpSample, SegmentSpread};
use crate::verdict::Verdict;

impl Store {
    /// Record a job of a request/response driver: done (its raw output kept) with its
    /// per-operation results, or failed; and its verdicts. One transaction.
    pub fn finish_op_job(
        &mut self,
        job: i64,
        outcome: std::result::Result<&str, &str>,
        ops: &[OpResult],
        verdicts: &[Verdict],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        match outcome {
            Ok(raw) => tx.execute(
                "UPDATE jobs SET status = 'done', finished_at = ?2, raw_json = ?3 WHERE id = ?1",
                params![job, now_rfc3339(), raw],
            )?,
            Err(e) => tx.execute(
                "UPDATE jobs SET status = 'failed', finished_at = ?2, error = ?3 WHERE id = ?1",
                params![job, now_rfc3339(), e],
            )?,
        };
        for o in ops {
            let t = o.ttfb;
            tx.execute(
                "INSERT INTO op_results (job_id, client, op, ops, bytes, window_start_ms, window_ms,
                   ops_per_s, bytes_per_s, lat_n, lat_mean_ns, lat_min_ns, lat_p50_ns, lat_p90_ns,
                   lat_p99_ns, lat_max_ns, ttfb_n, ttfb_mean_ns, ttfb_min_ns, ttfb_p50_ns, ttfb_p90_ns,
                   ttfb_p99_ns, ttfb_max_ns, seg_n, seg_ops_slowest, seg_ops_median, seg_ops_fastest,
                   seg_bps_slowest, seg_bps_median, seg_bps_fastest, total, errors, error_codes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                   ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33)",
                params![
                    job,
                    o.client,
                    o.op,
                    o.ops as i64,
                    o.bytes,
                    o.window_start_ms as i64,
                    o.window_ms as i64,
                    o.ops_per_s,
                    o.bytes_per_s,
                    o.lat.n as i64,
                    o.lat.mean_ns,
                    o.lat.min_ns as i64,
                    o.lat.p50_ns as i64,
                    o.lat.p90_ns as i64,
                    o.lat.p99_ns as i64,
                    o.lat.max_ns as i64,
                    t.map(|t| t.n as i64),
                    t.map(|t| t.mean_ns),
                    t.map(|t| t.min_ns as i64),
                    t.map(|t| t.p50_ns as i64),
                    t.map(|t| t.p90_ns as i64),
                    t.map(|t| t.p99_ns as i64),
                    t.map(|t| t.max_ns as i64),
                    o.segments.n,
                    o.segments.ops_slowest,
                    o.segments.ops_median,
                    o.segments.ops_fastest,
                    o.segments.bps_slowest,
                    o.segments.bps_median,
                    o.segments.bps_fastest,
                    o.total as i64,
                    o.errors as i64,
                    serde_json::to_string(&o.error_codes).unwrap_or_default()
                ],
            )?;
        }
        super::insert_verdicts(&tx, job, verdicts)?;
        tx.commit()?;
        Ok(())
    }

    /// A job's per-operation segments, in the order they were stored.
    pub(super) fn load_op_samples(&self, job_id: i64) -> Result<Vec<OpSample>> {
        self.rows_of(
            "SELECT client, op, t_ms, dur_ms, ops_per_s, bytes_per_s, errors, lat_mean_ns,
               lat_p50_ns, lat_p99_ns, ttfb_mean_ns, in_window
             FROM op_samples WHERE job_id = ?1 ORDER BY rowid",
            job_id,
            |r| {
                Ok(OpSample {
                    client: r.get(0)?,
                    op: r.get(1)?,
                    t_ms: r.get::<_, i64>(2)? as u64,
                    dur_ms: r.get::<_, i64>(3)? as u64,
                    ops_per_s: r.get(4)?,
                    bytes_per_s: r.get(5)?,
                    errors: r.get::<_, i64>(6)? as u64,
                    lat_mean_ns: r.get(7)?,
                    lat_p50_ns: r.get::<_, i64>(8)? as u64,
                    lat_p99_ns: r.get::<_, i64>(9)? as u64,
                    ttfb_mean_ns: r.get(10)?,
                    in_window: r.get(11)?,
                })
            },
        )
    }

    pub(super) fn load_ops(&self, job_id: i64) -> Result<Vec<OpResult>> {
        let u = |r: &rusqlite::Row, i: usize| r.get::<_, i64>(i).map(|v| v as u64);
        self.rows_of(
            "SELECT client, op, ops, bytes, window_start_ms, window_ms, ops_per_s, bytes_per_s,
               lat_n, lat_mean_ns, lat_min_ns, lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_max_ns,
               ttfb_n, ttfb_mean_ns, ttfb_min_ns, ttfb_p50_ns, ttfb_p90_ns, ttfb_p99_ns, ttfb_max_ns,
               seg_n, seg_ops_slowest, seg_ops_median, seg_ops_fastest,
               seg_bps_slowest, seg_bps_median, seg_bps_fastest, total, errors, error_codes
             FROM op_results WHERE job_id = ?1 ORDER BY rowid",
            job_id,
            |r| {
                // Latency statistics in the seven columns from `at` (n first).
                let lat = |at: usize| -> rusqlite::Result<OpLatency> {
                    Ok(OpLatency {
                        n: u(r, at)?,
                        mean_ns: r.get(at + 1)?,
                        min_ns: u(r, at + 2)?,
                        p50_ns: u(r, at + 3)?,
                        p90_ns: u(r, at + 4)?,
                        p99_ns: u(r, at + 5)?,
                        max_ns: u(r, at + 6)?,
                    })
                };
                let ttfb = match r.get::<_, Option<i64>>(15)? {
                    None => None,
                    Some(_) => Some(lat(15)?),
                };
                let codes: String = r.get(31)?;
                Ok(OpResult {
                    client: r.get(0)?,
                    op: r.get(1)?,
                    ops: u(r, 2)?,
                    bytes: r.get(3)?,
                    window_start_ms: u(r, 4)?,
                    window_ms: u(r, 5)?,
                    ops_per_s: r.get(6)?,
                    bytes_per_s: r.get(7)?,
                    lat: lat(8)?,
                    ttfb,
                    segments: SegmentSpread {
                        n: r.get(22)?,
                        ops_slowest: r.get(23)?,
                        ops_median: r.get(24)?,
                        ops_fastest: r.get(25)?,
                        bps_slowest: r.get(26)?,
                        bps_median: r.get(27)?,
                        bps_fastest: r.get(28)?,
                    },
                    total: u(r, 29)?,
                    errors: u(r, 30)?,
                    error_codes: serde_json::from_str(&codes).unwrap_or_default(),
                })
            },
        )
    }
}

/// Store a job's per-operation segments (inside the series' transaction).
pub(super) fn insert_samples(
    tx: &Transaction<'_>,
    job_id: i64,
    samples: &[OpSample],
) -> Result<()> {
    for o in samples {
        tx.execute(
            "INSERT INTO op_samples (job_id, client, op, t_ms, dur_ms, ops_per_s, bytes_per_s,
               errors, lat_mean_ns, lat_p50_ns, lat_p99_ns, ttfb_mean_ns, in_window)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                job_id,
                o.client,
                o.op,
                o.t_ms as i64,
                o.dur_ms as i64,
                o.ops_per_s,
                o.bytes_per_s,
                o.errors as i64,
                o.lat_mean_ns,
                o.lat_p50_ns as i64,
                o.lat_p99_ns as i64,
                o.ttfb_mean_ns,
                o.in_window
            ],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::schema::SCHEMA_VERSION;
    use super::super::tests::{old_database, schema_without};
    use super::super::NewRun;
    use super::*;
    use crate::host::Env;
    use crate::series::JobSeries;

    /// A database as schema 5 shipped it (no op tables) opens, gains them, and a job's
    /// per-operation results and segments round-trip.
    #[test]
    fn a_schema_5_database_gains_the_op_tables_and_ops_round_trip() {
        let (_dir, path) = old_database(5, &schema_without(&["op_results", "op_samples"]), "");
        let mut s = Store::open(&path).unwrap();
        let env = Env::default();
        let run = s
            .begin_run(&NewRun {
                name: "s3",
                plan_origin: "p.toml",
                plan_text: "",
                target: "http://127.0.0.1:9000",
                executor: "qoslab s3 driver",
                runtime_s: 10.0,
                ramp_s: 1.0,
                env: &env,
            })
            .unwrap();
        let j = s
            .begin_job(run, 1, "mixed", "mixed", Some("b"), 1, "")
            .unwrap();
        let get = OpResult {
            client: crate::ops::ALL_HOSTS.into(),
            op: "GET".into(),
            ops: 1990,
            bytes: 8.15e6,
            window_start_ms: 1020,
            window_ms: 9950,
            ops_per_s: 200.0,
            bytes_per_s: 819_200.0,
            lat: OpLatency {
                n: 1990,
                mean_ns: 40e6,
                min_ns: 1_000,
                p50_ns: 39_000_000,
                p90_ns: 41_000_000,
                p99_ns: 45_000_000,
                max_ns: 60_000_000,
            },
            ttfb: Some(OpLatency {
                n: 1990,
                mean_ns: 39e6,
                ..OpLatency::default()
            }),
            segments: SegmentSpread {
                n: 9,
                ops_slowest: 199.0,
                ops_median: 200.0,
                ops_fastest: 201.0,
                ..SegmentSpread::default()
            },
            total: 2200,
            errors: 2,
            error_codes: [("SlowDown".to_string(), 2)].into_iter().collect(),
        };
        let put = OpResult {
            op: "PUT".into(),
            ttfb: None,
            ..get.clone()
        };
        s.finish_op_job(
            j,
            Ok("{\"schema\":\"x\"}"),
            &[get.clone(), put.clone()],
            &[],
        )
        .unwrap();
        let sample = OpSample {
            client: "h0".into(),
            op: "GET".into(),
            t_ms: 2000,
            dur_ms: 1000,
            ops_per_s: 100.0,
            bytes_per_s: 409_600.0,
            errors: 0,
            lat_mean_ns: 4e7,
            lat_p50_ns: 39_000_000,
            lat_p99_ns: 45_000_000,
            ttfb_mean_ns: 3.9e7,
            in_window: true,
        };
        let series = JobSeries {
            job_id: j,
            ops: vec![sample],
            ..JobSeries::default()
        };
        s.add_series(&series).unwrap();
        let r = s.load_run(run).unwrap();
        assert_eq!(r.jobs[0].ops, vec![get, put]);
        assert_eq!(r.jobs[0].status, "done");
        assert_eq!(r.series, vec![series]);
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        // A run without ops serializes as before (no "ops" keys).
        let j2 = s.begin_job(run, 2, "w", "x", None, 1, "").unwrap();
        s.finish_op_job(j2, Err("no such bucket"), &[], &[])
            .unwrap();
        let r = s.load_run(run).unwrap();
        assert_eq!(r.jobs[1].status, "failed");
        let json = serde_json::to_string(&r.jobs[1]).unwrap();
        assert!(!json.contains("\"ops\""), "{json}");
    }
}
