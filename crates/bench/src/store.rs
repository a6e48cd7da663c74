//! The results store: one SQLite database, written as the run progresses (the run row
//! first, each job's row before fio starts, its results and verdicts in one transaction when
//! it ends), so a crash loses at most the job in flight, which stays `running`.
//!
//! Schema (see docs/BENCH.md): `runs`, `policies`, `volumes`, `jobs` (with the job file and
//! fio's raw JSON), `results` (one row per job, client and direction), `verdicts`,
//! `summary_tables`, and the time series `fio_samples` and `node_samples` (schema 3).

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::result::{DirStats, FioOutput, JobResult};
use crate::series::{FioSample, JobSeries, NodeSample};
use crate::verdict::{Limits, Verdict};

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

/// Schema version, in `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL,            -- running | passed | failed | error
  plan_origin TEXT NOT NULL,
  plan_text TEXT NOT NULL,
  target TEXT NOT NULL,
  executor TEXT NOT NULL,
  runtime_s REAL NOT NULL,
  ramp_s REAL NOT NULL,
  host TEXT NOT NULL, kernel TEXT NOT NULL, cpu TEXT NOT NULL,
  fio_version TEXT NOT NULL, qoslab_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS policies (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name TEXT NOT NULL,
  definition TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS volumes (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name TEXT NOT NULL, size INTEGER NOT NULL, snapshot_reserve_percent INTEGER NOT NULL,
  policy TEXT,
  ceiling_iops INTEGER NOT NULL, ceiling_bps INTEGER NOT NULL,
  floor_iops INTEGER NOT NULL, floor_bps INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  seq INTEGER NOT NULL,
  workload TEXT NOT NULL, name TEXT NOT NULL, volume TEXT, iteration INTEGER NOT NULL,
  status TEXT NOT NULL,            -- running | done | failed
  started_at TEXT NOT NULL, finished_at TEXT,
  jobfile TEXT NOT NULL,
  raw_json TEXT,
  error TEXT
);
CREATE TABLE IF NOT EXISTS results (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  client TEXT NOT NULL,            -- '' local; 'host:port'; 'All clients'
  direction TEXT NOT NULL,         -- read | write
  iops REAL NOT NULL, iops_mean REAL NOT NULL,
  bw_bytes INTEGER NOT NULL, bw_mean_bytes REAL NOT NULL,
  io_bytes INTEGER NOT NULL, total_ios INTEGER NOT NULL, runtime_ms INTEGER NOT NULL,
  lat_mean_ns REAL NOT NULL, clat_mean_ns REAL NOT NULL,
  p50_ns INTEGER NOT NULL, p90_ns INTEGER NOT NULL, p99_ns INTEGER NOT NULL, p999_ns INTEGER NOT NULL,
  error INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS summary_tables (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,              -- isolation | ramp | ... (what the report charts it as)
  name TEXT NOT NULL,
  columns TEXT NOT NULL,           -- JSON array of column names
  rows TEXT NOT NULL               -- JSON array of arrays (numbers, strings, booleans)
);
CREATE TABLE IF NOT EXISTS fio_samples (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  t_ms INTEGER NOT NULL,           -- end of the 500 ms window, on fio's log clock
  direction TEXT NOT NULL,         -- read | write | trim
  iops REAL NOT NULL, bw_bytes REAL NOT NULL, lat_mean_ns REAL NOT NULL,
  p50_ns INTEGER NOT NULL, p99_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS node_samples (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  t_ms INTEGER NOT NULL,
  volume TEXT NOT NULL,
  read_iops REAL NOT NULL, write_iops REAL NOT NULL, other_iops REAL NOT NULL,
  read_bps REAL NOT NULL, write_bps REAL NOT NULL,
  lat_mean_us REAL NOT NULL, ceiling_wait_us REAL NOT NULL, floor_wait_us REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS verdicts (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  expectation TEXT NOT NULL, measured REAL NOT NULL, bound TEXT NOT NULL,
  passed INTEGER NOT NULL, detail TEXT NOT NULL
);
";

/// Where and with what a run happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Env {
    pub host: String,
    pub kernel: String,
    pub cpu: String,
    pub fio_version: String,
    pub qoslab_version: String,
}

impl Env {
    /// This machine (hostname, kernel release, CPU model from /proc) and `fio --version`.
    pub fn detect(fio_version: String, qoslab_version: &str) -> Env {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0);
        Env {
            host: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            cpu: format!("{cpu} ({cores} cores)"),
            fio_version,
            qoslab_version: qoslab_version.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumeRecord {
    pub name: String,
    pub size: u64,
    pub snapshot_reserve_percent: u8,
    pub policy: Option<String>,
    pub limits: Limits,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRecord {
    pub name: String,
    pub definition: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: i64,
    pub seq: u32,
    pub workload: String,
    pub name: String,
    pub volume: Option<String>,
    pub iteration: u32,
    pub status: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub error: Option<String>,
    /// Local: one entry. Client/server: per client, then "All clients".
    pub results: Vec<JobResult>,
    pub verdicts: Vec<Verdict>,
}

impl JobRecord {
    /// The result verdicts and summaries use (the merged entry in client/server mode).
    pub fn primary(&self) -> Option<&JobResult> {
        self.results
            .iter()
            .find(|r| r.client.as_deref() == Some(crate::result::ALL_CLIENTS))
            .or_else(|| self.results.first())
    }
}

/// A table a profile computed over several jobs (the isolation profile's step table, a ramp's
/// per-run summary). `kind` says which profile wrote it and so which columns it has (see
/// docs/BENCH.md); cells are JSON numbers, strings or booleans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryTable {
    pub kind: String,
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<serde_json::Value>>,
}

impl SummaryTable {
    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// A run as stored: what the exporters take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub name: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: String,
    pub plan_origin: String,
    pub plan_text: String,
    pub target: String,
    pub executor: String,
    pub runtime_s: f64,
    pub ramp_s: f64,
    pub env: Env,
    pub policies: Vec<PolicyRecord>,
    pub volumes: Vec<VolumeRecord>,
    pub jobs: Vec<JobRecord>,
    /// Profile tables in the order they were added.
    #[serde(default)]
    pub tables: Vec<SummaryTable>,
    /// Time series per job (fio's 500 ms windows, the node's samples), jobs without any
    /// left out; in job order.
    #[serde(default)]
    pub series: Vec<JobSeries>,
}

impl RunRecord {
    /// The time series of job `job_id`, if any were recorded.
    pub fn series_of(&self, job_id: i64) -> Option<&JobSeries> {
        self.series.iter().find(|s| s.job_id == job_id)
    }

    pub fn verdict_counts(&self) -> (usize, usize) {
        let all = self.jobs.iter().flat_map(|j| &j.verdicts);
        let (mut pass, mut fail) = (0, 0);
        for v in all {
            if v.passed {
                pass += 1
            } else {
                fail += 1
            }
        }
        (pass, fail)
    }
}

/// What a new run row holds.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub name: &'a str,
    pub plan_origin: &'a str,
    pub plan_text: &'a str,
    pub target: &'a str,
    pub executor: &'a str,
    pub runtime_s: f64,
    pub ramp_s: f64,
    pub env: &'a Env,
}

/// One line of `results list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunListing {
    pub id: i64,
    pub name: String,
    pub started_at: String,
    pub status: String,
    pub target: String,
    pub jobs: i64,
    pub passed: i64,
    pub failed: i64,
}

/// UTC time as RFC 3339 (`2026-11-22T05:33:46Z`).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Seconds since the epoch as RFC 3339 UTC (Howard Hinnant's civil-from-days).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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
        conn.execute_batch(SCHEMA)?;
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
        tx.commit()?;
        Ok(())
    }

    fn load_series(&self, job_id: i64) -> Result<JobSeries> {
        let mut st = self.conn.prepare_cached(
            "SELECT t_ms, direction, iops, bw_bytes, lat_mean_ns, p50_ns, p99_ns
             FROM fio_samples WHERE job_id = ?1 ORDER BY t_ms, direction",
        )?;
        let fio = st
            .query_map([job_id], |r| {
                Ok(FioSample {
                    t_ms: r.get::<_, i64>(0)? as u64,
                    direction: r.get(1)?,
                    iops: r.get(2)?,
                    bw_bytes: r.get(3)?,
                    lat_mean_ns: r.get(4)?,
                    p50_ns: r.get::<_, i64>(5)? as u64,
                    p99_ns: r.get::<_, i64>(6)? as u64,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        let mut st = self.conn.prepare_cached(
            "SELECT t_ms, volume, read_iops, write_iops, other_iops, read_bps, write_bps,
               lat_mean_us, ceiling_wait_us, floor_wait_us
             FROM node_samples WHERE job_id = ?1 ORDER BY rowid",
        )?;
        let node = st
            .query_map([job_id], |r| {
                Ok(NodeSample {
                    t_ms: r.get::<_, i64>(0)? as u64,
                    volume: r.get(1)?,
                    read_iops: r.get(2)?,
                    write_iops: r.get(3)?,
                    other_iops: r.get(4)?,
                    read_bps: r.get(5)?,
                    write_bps: r.get(6)?,
                    lat_mean_us: r.get(7)?,
                    ceiling_wait_us: r.get(8)?,
                    floor_wait_us: r.get(9)?,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(JobSeries { job_id, fio, node })
    }

    pub fn finish_run(&self, run: i64, status: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
            params![run, status, now_rfc3339()],
        )?;
        Ok(())
    }

    pub fn list_runs(&self) -> Result<Vec<RunListing>> {
        let mut st = self.conn.prepare(
            "SELECT r.id, r.name, r.started_at, r.status, r.target,
               (SELECT COUNT(*) FROM jobs j WHERE j.run_id = r.id),
               (SELECT COUNT(*) FROM verdicts v JOIN jobs j ON v.job_id = j.id WHERE j.run_id = r.id AND v.passed),
               (SELECT COUNT(*) FROM verdicts v JOIN jobs j ON v.job_id = j.id WHERE j.run_id = r.id AND NOT v.passed)
             FROM runs r ORDER BY r.id",
        )?;
        let rows = st.query_map([], |r| {
            Ok(RunListing {
                id: r.get(0)?,
                name: r.get(1)?,
                started_at: r.get(2)?,
                status: r.get(3)?,
                target: r.get(4)?,
                jobs: r.get(5)?,
                passed: r.get(6)?,
                failed: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The id of the newest run, if any.
    pub fn last_run(&self) -> Result<Option<i64>> {
        Ok(self.conn.query_row("SELECT MAX(id) FROM runs", [], |r| {
            r.get::<_, Option<i64>>(0)
        })?)
    }

    pub fn raw_json(&self, job: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT raw_json FROM jobs WHERE id = ?1", [job], |r| {
                r.get(0)
            })
            .optional()?
            .flatten())
    }

    pub fn load_run(&self, id: i64) -> Result<RunRecord> {
        let mut run = self
            .conn
            .query_row(
                "SELECT id, name, started_at, finished_at, status, plan_origin, plan_text, target,
                   executor, runtime_s, ramp_s, host, kernel, cpu, fio_version, qoslab_version
                 FROM runs WHERE id = ?1",
                [id],
                |r| {
                    Ok(RunRecord {
                        id: r.get(0)?,
                        name: r.get(1)?,
                        started_at: r.get(2)?,
                        finished_at: r.get(3)?,
                        status: r.get(4)?,
                        plan_origin: r.get(5)?,
                        plan_text: r.get(6)?,
                        target: r.get(7)?,
                        executor: r.get(8)?,
                        runtime_s: r.get(9)?,
                        ramp_s: r.get(10)?,
                        env: Env {
                            host: r.get(11)?,
                            kernel: r.get(12)?,
                            cpu: r.get(13)?,
                            fio_version: r.get(14)?,
                            qoslab_version: r.get(15)?,
                        },
                        policies: Vec::new(),
                        volumes: Vec::new(),
                        jobs: Vec::new(),
                        tables: Vec::new(),
                        series: Vec::new(),
                    })
                },
            )
            .optional()?
            .ok_or(StoreError::NoRun(id))?;
        let mut st = self
            .conn
            .prepare("SELECT name, definition FROM policies WHERE run_id = ?1 ORDER BY rowid")?;
        run.policies = st
            .query_map([id], |r| {
                Ok(PolicyRecord {
                    name: r.get(0)?,
                    definition: r.get(1)?,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        let mut st = self.conn.prepare(
            "SELECT name, size, snapshot_reserve_percent, policy, ceiling_iops, ceiling_bps,
               floor_iops, floor_bps FROM volumes WHERE run_id = ?1 ORDER BY rowid",
        )?;
        run.volumes = st
            .query_map([id], |r| {
                Ok(VolumeRecord {
                    name: r.get(0)?,
                    size: r.get::<_, i64>(1)? as u64,
                    snapshot_reserve_percent: r.get(2)?,
                    policy: r.get(3)?,
                    limits: Limits {
                        ceiling_iops: r.get::<_, i64>(4)? as u64,
                        ceiling_bps: r.get::<_, i64>(5)? as u64,
                        floor_iops: r.get::<_, i64>(6)? as u64,
                        floor_bps: r.get::<_, i64>(7)? as u64,
                    },
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        let mut st = self.conn.prepare(
            "SELECT id, seq, workload, name, volume, iteration, status, started_at, finished_at, error
             FROM jobs WHERE run_id = ?1 ORDER BY seq",
        )?;
        let mut jobs: Vec<JobRecord> = st
            .query_map([id], |r| {
                Ok(JobRecord {
                    id: r.get(0)?,
                    seq: r.get(1)?,
                    workload: r.get(2)?,
                    name: r.get(3)?,
                    volume: r.get(4)?,
                    iteration: r.get(5)?,
                    status: r.get(6)?,
                    started_at: r.get(7)?,
                    finished_at: r.get(8)?,
                    error: r.get(9)?,
                    results: Vec::new(),
                    verdicts: Vec::new(),
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        let mut res = self.conn.prepare(
            "SELECT client, direction, iops, iops_mean, bw_bytes, bw_mean_bytes, io_bytes, total_ios,
               runtime_ms, lat_mean_ns, clat_mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, error
             FROM results WHERE job_id = ?1 ORDER BY rowid",
        )?;
        let mut ver = self.conn.prepare(
            "SELECT expectation, measured, bound, passed, detail FROM verdicts WHERE job_id = ?1 ORDER BY rowid",
        )?;
        for j in &mut jobs {
            let rows = res.query_map([j.id], |r| {
                let client: String = r.get(0)?;
                let dir: String = r.get(1)?;
                let d = DirStats {
                    iops: r.get(2)?,
                    iops_mean: r.get(3)?,
                    bw_bytes: r.get::<_, i64>(4)? as u64,
                    bw_mean_bytes: r.get(5)?,
                    io_bytes: r.get::<_, i64>(6)? as u64,
                    total_ios: r.get::<_, i64>(7)? as u64,
                    runtime_ms: r.get::<_, i64>(8)? as u64,
                    lat_mean_ns: r.get(9)?,
                    clat_mean_ns: r.get(10)?,
                    p50_ns: r.get::<_, i64>(11)? as u64,
                    p90_ns: r.get::<_, i64>(12)? as u64,
                    p99_ns: r.get::<_, i64>(13)? as u64,
                    p999_ns: r.get::<_, i64>(14)? as u64,
                };
                Ok((client, dir, d, r.get::<_, i64>(15)?))
            })?;
            for row in rows {
                let (client, dir, d, error) = row?;
                let client = (!client.is_empty()).then_some(client);
                let idx = match j.results.iter().position(|r| r.client == client) {
                    Some(i) => i,
                    None => {
                        j.results.push(JobResult {
                            jobname: j.name.clone(),
                            client: client.clone(),
                            error,
                            ..Default::default()
                        });
                        j.results.len() - 1
                    }
                };
                if dir == "read" {
                    j.results[idx].read = d;
                } else {
                    j.results[idx].write = d;
                }
            }
            j.verdicts = ver
                .query_map([j.id], |r| {
                    Ok(Verdict {
                        expectation: r.get(0)?,
                        measured: r.get(1)?,
                        bound: r.get(2)?,
                        passed: r.get(3)?,
                        detail: r.get(4)?,
                    })
                })?
                .collect::<std::result::Result<_, _>>()?;
        }
        for j in &jobs {
            let s = self.load_series(j.id)?;
            if !s.is_empty() {
                run.series.push(s);
            }
        }
        run.jobs = jobs;
        let mut st = self.conn.prepare(
            "SELECT kind, name, columns, rows FROM summary_tables WHERE run_id = ?1 ORDER BY seq",
        )?;
        run.tables = st
            .query_map([id], |r| {
                let cols: String = r.get(2)?;
                let rows: String = r.get(3)?;
                Ok(SummaryTable {
                    kind: r.get(0)?,
                    name: r.get(1)?,
                    columns: serde_json::from_str(&cols).unwrap_or_default(),
                    rows: serde_json::from_str(&rows).unwrap_or_default(),
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "/tests/fixtures/client_server_2.out"
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
        };
        s.add_series(&series).unwrap();
        assert_eq!(s.load_run(run).unwrap().series, vec![series]);
    }
}
