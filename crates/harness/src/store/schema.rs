//! The results database's schema (`PRAGMA user_version` 7). Tables are created with
//! `IF NOT EXISTS`, so opening an older database adds the newer tables in place, and
//! [`MIGRATIONS`] add the newer columns (schema 3: the series tables; schema 4: a job's
//! diagnosis and steady state, a verdict's outcome and reason, the host tool-set tables;
//! schema 5: each node sample's burst buckets, the provisioned file system's
//! `resource_samples`; schema 6: the per-operation results of request/response drivers,
//! `op_results` and `op_samples`, the S3 family: new tables only, so no column migration;
//! schema 7: the process that writes a run, `runs.owner_*`, so a run its killed process
//! left `running` is marked `interrupted`: `store::owner`).

/// Schema version, in `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 7;

/// Columns added after a table was first shipped: (table, column, definition). Added when
/// missing; then `fill` sets what older rows imply.
pub(crate) const MIGRATIONS: &[(&str, &str, &str)] = &[
    ("jobs", "diagnosis", "TEXT"),
    ("jobs", "steady", "TEXT"),
    ("verdicts", "outcome", "TEXT"),
    ("verdicts", "reason", "TEXT"),
    // Schema 5: a node sample's burst buckets (NULL: the dimension does not burst).
    ("node_samples", "iops_balance", "REAL"),
    ("node_samples", "iops_bucket", "REAL"),
    ("node_samples", "iops_baseline", "REAL"),
    ("node_samples", "iops_burst", "REAL"),
    ("node_samples", "iops_time_to_empty_s", "REAL"),
    ("node_samples", "bytes_balance", "REAL"),
    ("node_samples", "bytes_bucket", "REAL"),
    ("node_samples", "bytes_baseline", "REAL"),
    ("node_samples", "bytes_burst", "REAL"),
    ("node_samples", "bytes_time_to_empty_s", "REAL"),
    // Schema 7: the process writing a run (NULL: before schema 7).
    ("runs", "owner_pid", "INTEGER"),
    ("runs", "owner_start", "INTEGER"),
    ("runs", "owner_boot", "TEXT"),
];

/// Older verdicts were pass or fail.
pub(crate) const FILL: &str =
    "UPDATE verdicts SET outcome = CASE WHEN passed THEN 'pass' ELSE 'fail' END WHERE outcome IS NULL;";

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL,            -- running | passed | failed | error | inconclusive | done | interrupted
  plan_origin TEXT NOT NULL,
  plan_text TEXT NOT NULL,
  target TEXT NOT NULL,
  executor TEXT NOT NULL,
  runtime_s REAL NOT NULL,
  ramp_s REAL NOT NULL,
  host TEXT NOT NULL, kernel TEXT NOT NULL, cpu TEXT NOT NULL,
  fio_version TEXT NOT NULL, qoslab_version TEXT NOT NULL,
  -- schema 7: the process writing it (pid, its start in clock ticks, the boot id)
  owner_pid INTEGER, owner_start INTEGER, owner_boot TEXT
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
  status TEXT NOT NULL,            -- running | done | failed | superseded | interrupted
  started_at TEXT NOT NULL, finished_at TEXT,
  jobfile TEXT NOT NULL,
  raw_json TEXT,
  error TEXT,
  diagnosis TEXT,                  -- JSON: assess::Diagnosis (schema 4)
  steady TEXT                      -- JSON: assess::steady::SteadyState (schema 4)
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
  -- schema 5: burst buckets at the end of the window (NULL: the dimension does not burst)
  iops_balance REAL, iops_bucket REAL, iops_baseline REAL, iops_burst REAL, iops_time_to_empty_s REAL,
  bytes_balance REAL, bytes_bucket REAL, bytes_baseline REAL, bytes_burst REAL, bytes_time_to_empty_s REAL
);
CREATE TABLE IF NOT EXISTS resource_samples (   -- schema 5
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
  passed INTEGER NOT NULL, detail TEXT NOT NULL,
  outcome TEXT,                    -- pass | fail | inconclusive (schema 4)
  reason TEXT
);
CREATE TABLE IF NOT EXISTS host_series (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  host TEXT NOT NULL, ncpus INTEGER NOT NULL,
  mem_total_bytes INTEGER NOT NULL, swap_total_bytes INTEGER NOT NULL,
  overhead_cpu_s REAL NOT NULL, overhead_wall_s REAL NOT NULL, overhead_samples INTEGER NOT NULL,
  errors TEXT NOT NULL             -- JSON array of strings
);
CREATE TABLE IF NOT EXISTS host_samples (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  host TEXT NOT NULL,
  t_ms INTEGER NOT NULL,           -- end of the 1 s interval, on fio's log clock
  sample TEXT NOT NULL             -- JSON: toolsets::HostSample
);
CREATE TABLE IF NOT EXISTS op_results (      -- schema 6
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  client TEXT NOT NULL,            -- '' one local driver; load generator; 'All hosts'
  op TEXT NOT NULL,                -- GET | PUT | DELETE | LIST | STAT
  ops INTEGER NOT NULL, bytes REAL NOT NULL,
  window_start_ms INTEGER NOT NULL, window_ms INTEGER NOT NULL,
  ops_per_s REAL NOT NULL, bytes_per_s REAL NOT NULL,
  lat_n INTEGER NOT NULL, lat_mean_ns REAL NOT NULL, lat_min_ns INTEGER NOT NULL,
  lat_p50_ns INTEGER NOT NULL, lat_p90_ns INTEGER NOT NULL, lat_p99_ns INTEGER NOT NULL,
  lat_max_ns INTEGER NOT NULL,
  ttfb_n INTEGER, ttfb_mean_ns REAL, ttfb_min_ns INTEGER,   -- NULL: not measured
  ttfb_p50_ns INTEGER, ttfb_p90_ns INTEGER, ttfb_p99_ns INTEGER, ttfb_max_ns INTEGER,
  seg_n INTEGER NOT NULL,
  seg_ops_slowest REAL NOT NULL, seg_ops_median REAL NOT NULL, seg_ops_fastest REAL NOT NULL,
  seg_bps_slowest REAL NOT NULL, seg_bps_median REAL NOT NULL, seg_bps_fastest REAL NOT NULL,
  total INTEGER NOT NULL, errors INTEGER NOT NULL,
  error_codes TEXT NOT NULL        -- JSON object: code -> count
);
CREATE TABLE IF NOT EXISTS op_samples (      -- schema 6
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  client TEXT NOT NULL,
  op TEXT NOT NULL,
  t_ms INTEGER NOT NULL,           -- end of the segment, ms from the job's start
  dur_ms INTEGER NOT NULL,
  ops_per_s REAL NOT NULL, bytes_per_s REAL NOT NULL, errors INTEGER NOT NULL,
  lat_mean_ns REAL NOT NULL, lat_p50_ns INTEGER NOT NULL, lat_p99_ns INTEGER NOT NULL,
  ttfb_mean_ns REAL NOT NULL,
  in_window INTEGER NOT NULL
);
";
