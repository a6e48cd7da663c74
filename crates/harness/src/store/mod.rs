//! The results store: one SQLite database, written as the run progresses (the run row
//! first, each job's row before its work starts, its results and verdicts in one
//! transaction when it ends, summary tables as soon as they change), so a crash loses at
//! most the step in flight, whose jobs stay `running`.
//!
//! Schema ([`schema`], docs/BENCH.md): `runs`, `policies`, `volumes`, `jobs` (with the job
//! file and fio's raw JSON), `results` (one row per job, client and direction), `verdicts`,
//! `summary_tables`, the time series `fio_samples` and `node_samples` (schema 3), and the
//! per-operation results `op_results` and their segments `op_samples` (schema 4: S3).
//! Writing is here; reading back is in [`read`]; the records are in [`model`].

mod model;
mod read;
mod schema;

use std::path::Path;

use rusqlite::{params, Connection};

pub use model::{
    JobRecord, NewRun, PolicyRecord, RunListing, RunRecord, SummaryTable, VolumeRecord,
};
pub use schema::SCHEMA_VERSION;

use crate::ops::OpResult;
use crate::series::JobSeries;
use crate::verdict::Verdict;
use fio::FioOutput;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("results database {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("results database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("no run {0} in the results database")]
    NoRun(i64),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// UTC time as RFC 3339, to the second (`2026-11-22T05:33:46Z`).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Seconds since the epoch as RFC 3339 UTC.
pub fn rfc3339(secs: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .to_string()
}

pub struct Store {
    conn: Connection,
}

impl Store {
    /// Open (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        Store::init(conn).map_err(|e| match e {
            StoreError::Sql(source) => StoreError::Open {
                path: path.display().to_string(),
                source,
            },
            e => e,
        })
    }

    /// An in-memory database (tests).
    pub fn in_memory() -> Result<Store> {
        Store::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(schema::SCHEMA)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        Ok(Store { conn })
    }

    pub fn begin_run(&self, r: &NewRun) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO runs (name, started_at, status, plan_origin, plan_text, target, executor,
               runtime_s, ramp_s, host, kernel, cpu, fio_version, qoslab_version)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                r.name,
                now_rfc3339(),
                r.plan_origin,
                r.plan_text,
                r.target,
                r.executor,
                r.runtime_s,
                r.ramp_s,
                r.env.host,
                r.env.kernel,
                r.env.cpu,
                r.env.fio_version,
                r.env.qoslab_version
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn add_policy(&self, run: i64, p: &PolicyRecord) -> Result<()> {
        self.conn.execute(
            "INSERT INTO policies (run_id, name, definition) VALUES (?1, ?2, ?3)",
            params![run, p.name, p.definition],
        )?;
        Ok(())
    }

    pub fn add_volume(&self, run: i64, v: &VolumeRecord) -> Result<()> {
        self.conn.execute(
            "INSERT INTO volumes (run_id, name, size, snapshot_reserve_percent, policy,
               ceiling_iops, ceiling_bps, floor_iops, floor_bps)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run,
                v.name,
                v.size as i64,
                v.snapshot_reserve_percent,
                v.policy,
                v.limits.ceiling_iops as i64,
                v.limits.ceiling_bps as i64,
                v.limits.floor_iops as i64,
                v.limits.floor_bps as i64
            ],
        )?;
        Ok(())
    }

    /// Record that a job is starting (before fio runs).
    #[allow(clippy::too_many_arguments)]
    pub fn begin_job(
        &self,
        run: i64,
        seq: u32,
        workload: &str,
        name: &str,
        volume: Option<&str>,
        iteration: u32,
        jobfile: &str,
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO jobs (run_id, seq, workload, name, volume, iteration, status, started_at, jobfile)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8)",
            params![run, seq, workload, name, volume, iteration, now_rfc3339(), jobfile],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Record a job's outcome, results and verdicts in one transaction.
    pub fn finish_job(
        &mut self,
        job: i64,
        outcome: std::result::Result<&FioOutput, &str>,
        verdicts: &[Verdict],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        match outcome {
            Ok(out) => {
                tx.execute(
                    "UPDATE jobs SET status = 'done', finished_at = ?2, raw_json = ?3 WHERE id = ?1",
                    params![job, now_rfc3339(), out.raw],
                )?;
                for r in &out.jobs {
                    for (dir, d) in [("read", &r.read), ("write", &r.write)] {
                        tx.execute(
                            "INSERT INTO results (job_id, client, direction, iops, iops_mean, bw_bytes,
                               bw_mean_bytes, io_bytes, total_ios, runtime_ms, lat_mean_ns, clat_mean_ns,
                               p50_ns, p90_ns, p99_ns, p999_ns, error)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                            params![
                                job,
                                r.client.clone().unwrap_or_default(),
                                dir,
                                d.iops,
                                d.iops_mean,
                                d.bw_bytes as i64,
                                d.bw_mean_bytes,
                                d.io_bytes as i64,
                                d.total_ios as i64,
                                d.runtime_ms as i64,
                                d.lat_mean_ns,
                                d.clat_mean_ns,
                                d.p50_ns as i64,
                                d.p90_ns as i64,
                                d.p99_ns as i64,
                                d.p999_ns as i64,
                                r.error
                            ],
                        )?;
                    }
                }
            }
            Err(e) => {
                tx.execute(
                    "UPDATE jobs SET status = 'failed', finished_at = ?2, error = ?3 WHERE id = ?1",
                    params![job, now_rfc3339(), e],
                )?;
            }
        }
        for v in verdicts {
            tx.execute(
                "INSERT INTO verdicts (job_id, expectation, measured, bound, passed, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![job, v.expectation, v.measured, v.bound, v.passed, v.detail],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

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
        for v in verdicts {
            tx.execute(
                "INSERT INTO verdicts (job_id, expectation, measured, bound, passed, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![job, v.expectation, v.measured, v.bound, v.passed, v.detail],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Store a profile's summary table (written as soon as it is known).
    pub fn add_table(&self, run: i64, t: &SummaryTable) -> Result<()> {
        self.conn.execute(
            "INSERT INTO summary_tables (run_id, seq, kind, name, columns, rows)
             VALUES (?1, (SELECT COUNT(*) FROM summary_tables WHERE run_id = ?1), ?2, ?3, ?4, ?5)",
            params![
                run,
                t.kind,
                t.name,
                serde_json::to_string(&t.columns).unwrap_or_default(),
                serde_json::to_string(&t.rows).unwrap_or_default()
            ],
        )?;
        Ok(())
    }

    /// Store a summary table, replacing the run's table of the same kind and name (kept in
    /// its place): a profile rewrites its table as each step finishes.
    pub fn put_table(&self, run: i64, t: &SummaryTable) -> Result<()> {
        let n = self.conn.execute(
            "UPDATE summary_tables SET columns = ?4, rows = ?5 WHERE run_id = ?1 AND kind = ?2 AND name = ?3",
            params![
                run,
                t.kind,
                t.name,
                serde_json::to_string(&t.columns).unwrap_or_default(),
                serde_json::to_string(&t.rows).unwrap_or_default()
            ],
        )?;
        if n == 0 {
            self.add_table(run, t)?;
        }
        Ok(())
    }

    /// Store a job's time series (one transaction).
    pub fn add_series(&mut self, s: &JobSeries) -> Result<()> {
        let tx = self.conn.transaction()?;
        for f in &s.fio {
            tx.execute(
                "INSERT INTO fio_samples (job_id, t_ms, direction, iops, bw_bytes, lat_mean_ns, p50_ns, p99_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    s.job_id,
                    f.t_ms as i64,
                    f.direction,
                    f.iops,
                    f.bw_bytes,
                    f.lat_mean_ns,
                    f.p50_ns as i64,
                    f.p99_ns as i64
                ],
            )?;
        }
        for n in &s.node {
            tx.execute(
                "INSERT INTO node_samples (job_id, t_ms, volume, read_iops, write_iops, other_iops,
                   read_bps, write_bps, lat_mean_us, ceiling_wait_us, floor_wait_us)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    s.job_id,
                    n.t_ms as i64,
                    n.volume,
                    n.read_iops,
                    n.write_iops,
                    n.other_iops,
                    n.read_bps,
                    n.write_bps,
                    n.lat_mean_us,
                    n.ceiling_wait_us,
                    n.floor_wait_us
                ],
            )?;
        }
        for o in &s.ops {
            tx.execute(
                "INSERT INTO op_samples (job_id, client, op, t_ms, dur_ms, ops_per_s, bytes_per_s,
                   errors, lat_mean_ns, lat_p50_ns, lat_p99_ns, ttfb_mean_ns, in_window)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    s.job_id,
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
        tx.commit()?;
        Ok(())
    }

    pub fn finish_run(&self, run: i64, status: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
            params![run, status, now_rfc3339()],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::schema::SCHEMA;
    use super::*;
    use crate::host::Env;
    use crate::series::{FioSample, NodeSample};

    #[test]
    fn a_schema_2_database_opens_and_gains_the_series_tables() {
        let dir = crate::target::temp_dir("schema2").unwrap();
        let path = dir.join("old.db");
        {
            let c = Connection::open(&path).unwrap();
            // Schema 2 as shipped: everything but the series tables.
            let old: String = SCHEMA
                .split("CREATE TABLE")
                .filter(|t| !t.contains("fio_samples") && !t.contains("node_samples"))
                .collect::<Vec<_>>()
                .join("CREATE TABLE");
            c.execute_batch(&old).unwrap();
            c.pragma_update(None, "user_version", 2).unwrap();
            c.execute(
                "INSERT INTO runs (name, started_at, status, plan_origin, plan_text, target, executor,
                   runtime_s, ramp_s, host, kernel, cpu, fio_version, qoslab_version)
                 VALUES ('old', 't', 'passed', 'p', '', 'x', 'fio', 1, 0, '', '', '', '', '')",
                [],
            )
            .unwrap();
        }
        let s = Store::open(&path).unwrap();
        let r = s.load_run(1).unwrap();
        assert_eq!(r.name, "old");
        assert!(r.series.is_empty());
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A database as schema 3 shipped it (no op tables) opens, gains them, and a job's
    /// per-operation results and segments round-trip.
    #[test]
    fn a_schema_3_database_gains_the_op_tables_and_ops_round_trip() {
        use crate::ops::{OpLatency, OpResult, OpSample, SegmentSpread};
        let dir = crate::target::temp_dir("schema3").unwrap();
        let path = dir.join("old.db");
        {
            let c = Connection::open(&path).unwrap();
            let old: String = SCHEMA
                .split("CREATE TABLE")
                .filter(|t| !t.contains("op_results") && !t.contains("op_samples"))
                .collect::<Vec<_>>()
                .join("CREATE TABLE");
            c.execute_batch(&old).unwrap();
            c.pragma_update(None, "user_version", 3).unwrap();
        }
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
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_325_178), "2026-11-22T05:26:18Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn a_job_in_flight_stays_running_and_finished_jobs_round_trip() {
        let raw = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fio/tests/fixtures/client_server_2.out"
        ))
        .unwrap();
        let out = FioOutput::parse(&raw).unwrap();
        let mut s = Store::in_memory().unwrap();
        let env = Env::default();
        let run = s
            .begin_run(&NewRun {
                name: "t",
                plan_origin: "p.toml",
                plan_text: "",
                target: "embedded node",
                executor: "fake",
                runtime_s: 2.0,
                ramp_s: 1.0,
                env: &env,
            })
            .unwrap();
        let j1 = s
            .begin_job(run, 1, "w", "cs_read", Some("v"), 1, "[global]\n")
            .unwrap();
        let v = Verdict {
            expectation: "iops > 1".into(),
            measured: 5.0,
            bound: "> 1".into(),
            passed: true,
            detail: "iops = 5, want > 1".into(),
        };
        s.finish_job(j1, Ok(&out), std::slice::from_ref(&v))
            .unwrap();
        let _j2 = s
            .begin_job(run, 2, "w", "second", Some("v"), 1, "")
            .unwrap();
        let r = s.load_run(run).unwrap();
        assert_eq!(r.status, "running");
        assert_eq!(r.jobs.len(), 2);
        assert_eq!(r.jobs[0].results, out.jobs);
        assert_eq!(r.jobs[0].verdicts, vec![v]);
        assert_eq!(r.jobs[1].status, "running");
        assert_eq!(s.raw_json(j1).unwrap().unwrap(), out.raw);
        s.finish_run(run, "passed").unwrap();
        let l = s.list_runs().unwrap();
        assert_eq!((l[0].jobs, l[0].passed, l[0].failed), (2, 1, 0));
        assert_eq!(s.last_run().unwrap(), Some(run));
        assert!(matches!(s.load_run(99), Err(StoreError::NoRun(99))));
        let t = SummaryTable {
            kind: "isolation".into(),
            name: "steps".into(),
            columns: vec!["step".into(), "iops".into(), "pass".into()],
            rows: vec![vec![1.into(), 4990.5.into(), true.into()]],
        };
        s.add_table(run, &t).unwrap();
        assert_eq!(s.load_run(run).unwrap().tables, vec![t.clone()]);
        let mut t2 = SummaryTable {
            kind: "ramp".into(),
            name: "sys".into(),
            columns: vec!["Run".into()],
            rows: vec![vec![1.into()]],
        };
        s.put_table(run, &t2).unwrap();
        t2.rows.push(vec![2.into()]);
        s.put_table(run, &t2).unwrap();
        assert_eq!(s.load_run(run).unwrap().tables, vec![t, t2]);
        let series = JobSeries {
            job_id: j1,
            fio: vec![FioSample {
                t_ms: 500,
                direction: "read".into(),
                iops: 500.0,
                bw_bytes: 2_048_000.0,
                lat_mean_ns: 31_000_000.5,
                p50_ns: 30_000_000,
                p99_ns: 40_000_000,
            }],
            node: vec![NodeSample {
                t_ms: 500,
                volume: "v".into(),
                read_iops: 498.0,
                write_iops: 0.0,
                other_iops: 2.0,
                read_bps: 2_039_808.0,
                write_bps: 0.0,
                lat_mean_us: 31_000.0,
                ceiling_wait_us: 30_000.0,
                floor_wait_us: 0.0,
            }],
            ops: Vec::new(),
        };
        s.add_series(&series).unwrap();
        assert_eq!(s.load_run(run).unwrap().series, vec![series]);
    }
}
