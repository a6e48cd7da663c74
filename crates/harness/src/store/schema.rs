//! The results database's schema (`PRAGMA user_version` 4). Tables are created with
//! `IF NOT EXISTS`, so opening a schema-2 database adds the series tables in place; columns
//! added later are added to older tables by [`migrate`] (schema 4: the node samples' credit
//! balances), so any earlier database opens, loads and is written in the current schema.

use rusqlite::Connection;

/// Schema version, in `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 4;

/// Schema 4: each node sample's burst buckets (NULL when the dimension does not burst).
pub(crate) const NODE_CREDIT_COLUMNS: [&str; 10] = [
    "iops_balance",
    "iops_bucket",
    "iops_baseline",
    "iops_burst",
    "iops_time_to_empty_s",
    "bytes_balance",
    "bytes_bucket",
    "bytes_baseline",
    "bytes_burst",
    "bytes_time_to_empty_s",
];

/// Bring an older database's tables up to [`SCHEMA`] (after its `CREATE TABLE IF NOT
/// EXISTS` statements ran): columns added since are added, NULL in the rows already there.
/// Idempotent; one transaction.
pub(crate) fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    let have: Vec<String> = tx
        .prepare("PRAGMA table_info(node_samples)")?
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<_>>()?;
    for c in NODE_CREDIT_COLUMNS {
        if !have.iter().any(|h| h == c) {
            tx.execute_batch(&format!("ALTER TABLE node_samples ADD COLUMN {c} REAL"))?;
        }
    }
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    // A database written by a newer qoslab keeps its number.
    if version < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()
}

pub(crate) const SCHEMA: &str = "
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
  lat_mean_us REAL NOT NULL, ceiling_wait_us REAL NOT NULL, floor_wait_us REAL NOT NULL,
  -- schema 4: burst buckets at the end of the window (NULL: the dimension does not burst)
  iops_balance REAL, iops_bucket REAL, iops_baseline REAL, iops_burst REAL, iops_time_to_empty_s REAL,
  bytes_balance REAL, bytes_bucket REAL, bytes_baseline REAL, bytes_burst REAL, bytes_time_to_empty_s REAL
);
CREATE TABLE IF NOT EXISTS resource_samples (   -- schema 4
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  t_ms INTEGER NOT NULL,
  resource TEXT NOT NULL,          -- network | disk | disk_iops | ssd_iops
  unit TEXT NOT NULL,              -- bytes | iops
  use_rate REAL NOT NULL, baseline REAL NOT NULL,
  balance REAL, bucket REAL, burst REAL, time_to_empty_s REAL
);
CREATE TABLE IF NOT EXISTS verdicts (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  expectation TEXT NOT NULL, measured REAL NOT NULL, bound TEXT NOT NULL,
  passed INTEGER NOT NULL, detail TEXT NOT NULL
);
";
