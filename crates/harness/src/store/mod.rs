//! The results store: one SQLite database, written as the run progresses (the run row
//! first, each job's row before its work starts, its results and verdicts in one
//! transaction when it ends, summary tables as soon as they change), so a crash loses at
//! most the step in flight, whose jobs stay `running`.
//!
//! Schema ([`schema`], docs/BENCH.md): `runs`, `policies`, `volumes`, `jobs` (with the job
//! file and fio's raw JSON), `results` (one row per job, client and direction), `verdicts`,
//! `summary_tables`, the time series `fio_samples` and `node_samples` (schema 3), and the
//! per-operation results `op_results` and their segments `op_samples` (schema 6: S3,
//! written and read in [`ops`]). Writing is here; reading back is in [`read`]; the records
//! are in [`model`].

mod model;
mod ops;
mod owner;
mod read;
mod schema;

use std::path::Path;

use rusqlite::{params, Connection};

pub use model::{
    JobRecord, NewRun, PolicyRecord, RunListing, RunRecord, SummaryTable, VolumeRecord, SUPERSEDED,
};
pub use schema::SCHEMA_VERSION;

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
        for (table, column, def) in schema::MIGRATIONS {
            let present: bool = conn
                .prepare(&format!(
                    "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
                ))?
                .exists([column])?;
            if !present {
                conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {def}"))?;
            }
        }
        conn.execute_batch(schema::FILL)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        owner::mark_abandoned(&conn)?;
        Ok(Store { conn })
    }

    /// Store a job's diagnosis and steady-state check (after its results).
    pub fn set_assessment(
        &self,
        job: i64,
        diagnosis: Option<&assess::Diagnosis>,
        steady: Option<&assess::steady::SteadyState>,
    ) -> Result<()> {
        let json = |v: Option<String>| v;
        self.conn.execute(
            "UPDATE jobs SET diagnosis = ?2, steady = ?3 WHERE id = ?1",
            params![
                job,
                json(diagnosis.and_then(|d| serde_json::to_string(d).ok())),
                json(steady.and_then(|s| serde_json::to_string(s).ok()))
            ],
        )?;
        Ok(())
    }

    pub fn begin_run(&self, r: &NewRun) -> Result<i64> {
        let owner = owner::Owner::me();
        self.conn.execute(
            "INSERT INTO runs (name, started_at, status, plan_origin, plan_text, target, executor,
               runtime_s, ramp_s, host, kernel, cpu, fio_version, qoslab_version,
               owner_pid, owner_start, owner_boot)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
               ?14, ?15, ?16)",
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
                r.env.qoslab_version,
                owner.pid,
                owner.start as i64,
                owner.boot
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
    /// Keep why a finished job is in error (fio's stderr when it reported an error).
    pub fn set_job_error(&self, job: i64, text: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE jobs SET error = ?2 WHERE id = ?1",
            params![job, text],
        )?;
        Ok(())
    }

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
        insert_verdicts(&tx, job, verdicts)?;
        tx.commit()?;
        Ok(())
    }

    /// Store a profile's summary table (written as soon as it is known).
    pub fn add_table(&self, run: i64, t: &SummaryTable) -> Result<()> {
        self.write_table(
            "INSERT INTO summary_tables (run_id, seq, kind, name, columns, rows)
             VALUES (?1, (SELECT COUNT(*) FROM summary_tables WHERE run_id = ?1), ?2, ?3, ?4, ?5)",
            run,
            t,
        )?;
        Ok(())
    }

    /// Store a summary table, replacing the run's table of the same kind and name (kept in
    /// its place): a profile rewrites its table as each step finishes.
    pub fn put_table(&self, run: i64, t: &SummaryTable) -> Result<()> {
        let n = self.write_table(
            "UPDATE summary_tables SET columns = ?4, rows = ?5 WHERE run_id = ?1 AND kind = ?2 AND name = ?3",
            run,
            t,
        )?;
        if n == 0 {
            self.add_table(run, t)?;
        }
        Ok(())
    }

    /// Run `sql` with the run and the table as ?1 (run), ?2 (kind), ?3 (name), ?4 (columns,
    /// JSON) and ?5 (rows, JSON); the rows changed.
    fn write_table(&self, sql: &str, run: i64, t: &SummaryTable) -> Result<usize> {
        Ok(self.conn.execute(
            sql,
            params![
                run,
                t.kind,
                t.name,
                serde_json::to_string(&t.columns).unwrap_or_default(),
                serde_json::to_string(&t.rows).unwrap_or_default()
            ],
        )?)
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
        for h in &s.hosts {
            tx.execute(
                "INSERT INTO host_series (job_id, host, ncpus, mem_total_bytes, swap_total_bytes,
                   overhead_cpu_s, overhead_wall_s, overhead_samples, errors)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    s.job_id,
                    h.host,
                    h.ncpus,
                    h.mem_total_bytes as i64,
                    h.swap_total_bytes as i64,
                    h.overhead.cpu_s,
                    h.overhead.wall_s,
                    h.overhead.samples as i64,
                    serde_json::to_string(&h.errors).unwrap_or_default()
                ],
            )?;
            for x in &h.samples {
                tx.execute(
                    "INSERT INTO host_samples (job_id, host, t_ms, sample) VALUES (?1, ?2, ?3, ?4)",
                    params![
                        s.job_id,
                        h.host,
                        x.t_ms as i64,
                        serde_json::to_string(x).unwrap_or_default()
                    ],
                )?;
            }
        }
        for n in &s.node {
            let (i, b) = (n.iops_credits.as_ref(), n.bytes_credits.as_ref());
            tx.execute(
                "INSERT INTO node_samples (job_id, t_ms, volume, read_iops, write_iops, other_iops,
                   read_bps, write_bps, lat_mean_us, ceiling_wait_us, floor_wait_us,
                   iops_balance, iops_bucket, iops_baseline, iops_burst, iops_time_to_empty_s,
                   bytes_balance, bytes_bucket, bytes_baseline, bytes_burst, bytes_time_to_empty_s)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                   ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
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
                    n.floor_wait_us,
                    i.map(|c| c.balance),
                    i.map(|c| c.bucket),
                    i.map(|c| c.baseline),
                    i.map(|c| c.burst),
                    i.and_then(|c| c.time_to_empty_s),
                    b.map(|c| c.balance),
                    b.map(|c| c.bucket),
                    b.map(|c| c.baseline),
                    b.map(|c| c.burst),
                    b.and_then(|c| c.time_to_empty_s),
                ],
            )?;
        }
        for r in &s.resources {
            let c = r.credits.as_ref();
            tx.execute(
                "INSERT INTO resource_samples (job_id, t_ms, resource, unit, use_rate, baseline,
                   balance, bucket, burst, time_to_empty_s)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    s.job_id,
                    r.t_ms as i64,
                    r.resource,
                    r.unit,
                    r.use_rate,
                    r.baseline,
                    c.map(|c| c.balance),
                    c.map(|c| c.bucket),
                    c.map(|c| c.burst),
                    c.and_then(|c| c.time_to_empty_s),
                ],
            )?;
        }
        ops::insert_samples(&tx, s.job_id, &s.ops)?;
        tx.commit()?;
        Ok(())
    }

    /// Move run `from`'s jobs (with their results, verdicts and series) into run `into`,
    /// after its own; `into`'s jobs on the same volumes become `superseded` (kept, not
    /// counted); run `from`'s row is removed. A re-run of part of a run answers for it.
    pub fn adopt_jobs(&self, into: i64, from: i64) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "UPDATE jobs SET status = 'superseded' WHERE run_id = ?1 AND volume IN
               (SELECT volume FROM jobs WHERE run_id = ?2)",
            params![into, from],
        )?;
        tx.execute(
            "UPDATE jobs SET run_id = ?1,
               seq = seq + (SELECT COALESCE(MAX(seq), 0) FROM jobs WHERE run_id = ?1)
             WHERE run_id = ?2",
            params![into, from],
        )?;
        tx.execute("DELETE FROM policies WHERE run_id = ?1", [from])?;
        tx.execute("DELETE FROM volumes WHERE run_id = ?1", [from])?;
        tx.execute("DELETE FROM summary_tables WHERE run_id = ?1", [from])?;
        tx.execute("DELETE FROM runs WHERE id = ?1", [from])?;
        tx.commit()?;
        Ok(())
    }

    /// Close a run with its status (one that a signal marked `interrupted` stays so).
    pub fn finish_run(&self, run: i64, status: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1 AND status != 'interrupted'",
            params![run, status, now_rfc3339()],
        )?;
        Ok(())
    }
}

/// A job's verdicts, inside its transaction.
fn insert_verdicts(tx: &rusqlite::Transaction<'_>, job: i64, verdicts: &[Verdict]) -> Result<()> {
    for v in verdicts {
        tx.execute(
            "INSERT INTO verdicts (job_id, expectation, measured, bound, passed, detail, outcome, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                job,
                v.expectation,
                v.measured,
                v.bound,
                v.passed,
                v.detail,
                v.outcome.as_str(),
                v.reason
            ],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::schema::SCHEMA;
    use super::*;
    use crate::host::Env;
    use crate::series::{FioSample, NodeSample};

    use std::path::PathBuf;
    use test_support::TestDir;

    /// A database file as schema `version` shipped it: `sql` (that schema's tables) and
    /// then `rows`, at `user_version = version`, in a directory removed when the guard
    /// drops (also when the test panics).
    pub(super) fn old_database(version: i64, sql: &str, rows: &str) -> (TestDir, PathBuf) {
        let dir = TestDir::new(&format!("schema{version}"));
        let path = dir.join("old.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(sql).unwrap();
        c.pragma_update(None, "user_version", version).unwrap();
        c.execute_batch(rows).unwrap();
        (dir, path)
    }

    /// A run begun in `s` with test values (an embedded node, the fake executor).
    pub(crate) fn new_run(s: &Store) -> i64 {
        let env = Env::default();
        s.begin_run(&NewRun {
            name: "t",
            plan_origin: "p.toml",
            plan_text: "",
            target: "embedded node",
            executor: "fake",
            runtime_s: 2.0,
            ramp_s: 1.0,
            env: &env,
        })
        .unwrap()
    }

    /// Today's schema without the tables whose definition mentions any of `names`.
    pub(super) fn schema_without(names: &[&str]) -> String {
        SCHEMA
            .split("CREATE TABLE")
            .filter(|t| !names.iter().any(|n| t.contains(n)))
            .collect::<Vec<_>>()
            .join("CREATE TABLE")
    }

    #[test]
    fn a_schema_2_database_opens_and_gains_the_series_tables() {
        // Schema 2 as shipped: everything but the series tables.
        let (_dir, path) = old_database(
            2,
            &schema_without(&["fio_samples", "node_samples"]),
            "INSERT INTO runs (name, started_at, status, plan_origin, plan_text, target, executor,
               runtime_s, ramp_s, host, kernel, cpu, fio_version, qoslab_version)
             VALUES ('old', 't', 'passed', 'p', '', 'x', 'fio', 1, 0, '', '', '', '', '')",
        );
        let s = Store::open(&path).unwrap();
        let r = s.load_run(1).unwrap();
        assert_eq!(r.name, "old");
        assert!(r.series.is_empty());
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
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
        let run = new_run(&s);
        let j1 = s
            .begin_job(run, 1, "w", "cs_read", Some("v"), 1, "[global]\n")
            .unwrap();
        let v = Verdict::plain(
            "iops > 1".into(),
            5.0,
            "> 1".into(),
            true,
            "iops = 5, want > 1".into(),
        );
        let mut v2 = Verdict::plain(
            "iops > 10".into(),
            5.0,
            "> 10".into(),
            false,
            "iops = 5, want > 10".into(),
        );
        v2.outcome = assess::Outcome::Inconclusive;
        v2.reason = Some("client-cpu-bound: fio at 97% of a core".into());
        s.finish_job(j1, Ok(&out), &[v.clone(), v2.clone()])
            .unwrap();
        let diagnosis = assess::Diagnosis {
            bottleneck: assess::Bottleneck::ClientCpuBound,
            reason: "fio at 97% of a core".into(),
            figures: vec![],
        };
        let steady = assess::steady::check(&[100.0, 101.0, 99.0, 100.0, 100.0]);
        s.set_assessment(j1, Some(&diagnosis), steady.as_ref())
            .unwrap();
        let _j2 = s
            .begin_job(run, 2, "w", "second", Some("v"), 1, "")
            .unwrap();
        let r = s.load_run(run).unwrap();
        assert_eq!(r.status, "running");
        assert_eq!(r.jobs.len(), 2);
        assert_eq!(r.jobs[0].results, out.jobs);
        assert_eq!(r.jobs[0].verdicts, vec![v, v2]);
        assert_eq!(r.jobs[0].diagnosis, Some(diagnosis));
        assert_eq!(r.jobs[0].steady, steady);
        assert!(r.jobs[1].diagnosis.is_none() && r.jobs[1].steady.is_none());
        assert_eq!(r.tally().summary(), "1 pass, 0 fail, 1 inconclusive");
        assert_eq!(r.jobs[1].status, "running");
        assert_eq!(s.raw_json(j1).unwrap().unwrap(), out.raw);
        s.finish_run(run, "passed").unwrap();
        let l = s.list_runs().unwrap();
        assert_eq!(
            (l[0].jobs, l[0].passed, l[0].failed, l[0].inconclusive),
            (2, 1, 0, 1)
        );
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
                ..Default::default()
            }],
            ops: Vec::new(),
            resources: Vec::new(),
            hosts: vec![host_series()],
        };
        s.add_series(&series).unwrap();
        assert_eq!(s.load_run(run).unwrap().series, vec![series]);
    }

    /// A host series with one sample (the tool sets' round trip through the store).
    fn host_series() -> toolsets::HostSeries {
        let json = r#"{"t_ms":1000,"interval_ms":1000,
            "cpu":{"usr":30.0,"sys":10.0,"iowait":0.0,"irq":1.0,"steal":0.0,"idle":59.0},
            "cpus":[{"usr":60.0,"sys":20.0,"iowait":0.0,"irq":2.0,"steal":0.0,"idle":18.0}],
            "run_queue":2,"blocked":0,"mem_used_bytes":1,"mem_available_bytes":2,
            "swap_used_bytes":0,"swap_in_s":0.0,"swap_out_s":0.0,"page_in_kib_s":0.0,
            "page_out_kib_s":4.0,
            "disks":[{"name":"vda","r_s":1.0,"w_s":2.0,"rmb_s":0.1,"wmb_s":0.2,
              "r_await_ms":0.5,"w_await_ms":1.5,"aqu_sz":0.01,"util_pct":0.3}],
            "nics":[],"roles":{"fio":40.0,"node":30.0,"harness":0.0,"kernel":1.0,"other":2.0},
            "procs":[{"pid":7,"name":"fio","role":"fio","cpu_pct":40.0,"last_cpu":0}]}"#;
        toolsets::HostSeries {
            host: "local".into(),
            ncpus: 1,
            mem_total_bytes: 3,
            swap_total_bytes: 0,
            samples: vec![serde_json::from_str(json).unwrap()],
            overhead: toolsets::Overhead {
                cpu_s: 0.001,
                wall_s: 1.0,
                samples: 1,
            },
            errors: vec![],
        }
    }

    #[test]
    fn a_schema_3_database_gains_outcomes_diagnoses_and_tool_sets() {
        let (_dir, path) = {
            // Schema 3 as shipped: no host tables, no diagnosis/steady/outcome/reason.
            let old: String = schema_without(&["host_s"])
                .replace(
                    ",\n  diagnosis TEXT,                  -- JSON: assess::Diagnosis (schema 4)\n  steady TEXT                      -- JSON: assess::steady::SteadyState (schema 4)",
                    "",
                )
                .replace(
                    ",\n  outcome TEXT,                    -- pass | fail | inconclusive (schema 4)\n  reason TEXT",
                    "",
                );
            assert!(
                !old.contains("diagnosis") && !old.contains("outcome"),
                "{old}"
            );
            old_database(
                3,
                &old,
                "INSERT INTO runs (name, started_at, status, plan_origin, plan_text, target, executor,
                   runtime_s, ramp_s, host, kernel, cpu, fio_version, qoslab_version)
                 VALUES ('old', 't', 'failed', 'p', '', 'x', 'fio', 1, 0, '', '', '', '', '');
                 INSERT INTO jobs (run_id, seq, workload, name, volume, iteration, status, started_at, jobfile)
                 VALUES (1, 1, 'w', 'j', NULL, 1, 'done', 't', '');
                 INSERT INTO verdicts (job_id, expectation, measured, bound, passed, detail)
                 VALUES (1, 'iops > 1', 5, '> 1', 1, 'ok'), (1, 'iops > 9', 5, '> 9', 0, 'low');",
            )
        };
        let mut s = Store::open(&path).unwrap();
        let r = s.load_run(1).unwrap();
        let outcomes: Vec<_> = r.jobs[0].verdicts.iter().map(|v| v.outcome).collect();
        assert_eq!(outcomes, [assess::Outcome::Pass, assess::Outcome::Fail]);
        assert!(r.jobs[0].diagnosis.is_none());
        // The new tables and columns are usable.
        s.set_assessment(1, None, assess::steady::check(&[1.0; 5]).as_ref())
            .unwrap();
        s.add_series(&JobSeries {
            job_id: 1,
            fio: vec![],
            node: vec![],
            resources: vec![],
            hosts: vec![host_series()],
            ops: vec![],
        })
        .unwrap();
        let r = s.load_run(1).unwrap();
        assert!(r.jobs[0].steady.unwrap().attained);
        assert_eq!(r.series[0].hosts, vec![host_series()]);
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        drop(s);
        // Opening again changes nothing.
        let s = Store::open(&path).unwrap();
        assert_eq!(s.load_run(1).unwrap().jobs[0].verdicts.len(), 2);
    }

    #[test]
    fn a_re_run_answers_for_the_jobs_it_repeats() {
        let mut s = Store::in_memory().unwrap();
        let env = Env::default();
        let new = |name: &'static str| NewRun {
            name,
            plan_origin: "p",
            plan_text: "",
            target: "t",
            executor: "fio",
            runtime_s: 1.0,
            ramp_s: 0.0,
            env: &env,
        };
        let a = s.begin_run(&new("first")).unwrap();
        let b = s.begin_run(&new("again")).unwrap();
        let out = FioOutput {
            fio_version: "fio-3.33".into(),
            jobs: vec![],
            raw: "{}".into(),
            stderr: String::new(),
        };
        let v =
            |passed| Verdict::plain("iops > 1".into(), 1.0, "> 1".into(), passed, String::new());
        let j1 = s.begin_job(a, 1, "w", "j", Some("v1"), 1, "").unwrap();
        s.finish_job(j1, Ok(&out), &[v(false)]).unwrap();
        let j2 = s.begin_job(a, 2, "w", "j", Some("v2"), 1, "").unwrap();
        s.finish_job(j2, Ok(&out), &[v(true)]).unwrap();
        let j3 = s.begin_job(b, 1, "w", "j", Some("v1"), 1, "").unwrap();
        s.finish_job(j3, Ok(&out), &[v(true)]).unwrap();
        s.add_series(&JobSeries {
            job_id: j3,
            fio: vec![],
            node: vec![],
            resources: vec![],
            hosts: vec![host_series()],
            ops: vec![],
        })
        .unwrap();
        s.adopt_jobs(a, b).unwrap();
        let r = s.load_run(a).unwrap();
        let st: Vec<(&str, u32)> = r.jobs.iter().map(|j| (j.status.as_str(), j.seq)).collect();
        assert_eq!(st, [(SUPERSEDED, 1), ("done", 2), ("done", 3)]);
        assert_eq!(r.tally().summary(), "2 pass, 0 fail, 0 inconclusive");
        assert_eq!(r.series.len(), 1, "the re-run's series came along");
        let l = s.list_runs().unwrap();
        assert_eq!(l.len(), 1, "the re-run's row is gone");
        assert_eq!((l[0].passed, l[0].failed), (2, 0));
        assert!(matches!(s.load_run(b), Err(StoreError::NoRun(_))));
    }

    mod credits;
}
