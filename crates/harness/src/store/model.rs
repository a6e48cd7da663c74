//! The record model: a run as stored, what the exporters and reports take.

use serde::{Deserialize, Serialize};

use crate::host::Env;
use crate::ops::OpResult;
use crate::series::JobSeries;
use crate::verdict::{Limits, Verdict};
use fio::JobResult;

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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// What limited the job (schema 4; None for older runs and jobs that never ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<assess::Diagnosis>,
    /// SNIA-PTS steady state over the job's last 5 windows (None with fewer than 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<assess::steady::SteadyState>,
    /// Local: one entry. Client/server: per client, then "All clients".
    pub results: Vec<JobResult>,
    pub verdicts: Vec<Verdict>,
    /// Per-operation results of a request/response driver (S3): per client and operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<OpResult>,
}

impl JobRecord {
    /// The result verdicts and summaries use (the merged entry in client/server mode).
    pub fn primary(&self) -> Option<&JobResult> {
        self.results
            .iter()
            .find(|r| r.client.as_deref() == Some(fio::result::ALL_CLIENTS))
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
    /// A table of `kind` named `name`, with these columns and rows.
    pub fn new(
        kind: &str,
        name: &str,
        columns: &[&str],
        rows: Vec<Vec<serde_json::Value>>,
    ) -> SummaryTable {
        SummaryTable {
            kind: kind.into(),
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows,
        }
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// A run as stored: what the exporters take.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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

    /// (passed, not passed): inconclusive verdicts count as not passed here; see
    /// [`RunRecord::tally`] for the three outcomes.
    pub fn verdict_counts(&self) -> (usize, usize) {
        let t = self.tally();
        (t.pass, t.fail + t.inconclusive)
    }

    /// Every verdict's outcome, counted (jobs superseded by a re-run left out).
    pub fn tally(&self) -> assess::Tally {
        assess::Tally::of(
            self.jobs
                .iter()
                .filter(|j| j.status != SUPERSEDED)
                .flat_map(|j| j.verdicts.iter().map(|v| &v.outcome)),
        )
    }
}

/// A job's status once a re-run of its volume answers for it ([`super::Store::adopt_jobs`]).
pub const SUPERSEDED: &str = "superseded";

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
    pub inconclusive: i64,
}
