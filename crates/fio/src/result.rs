//! Typed fio results, parsed from fio 3.33's JSON output.
//!
//! fio's shape: `{"fio version", "jobs": [..]}` for a local run, `{"client_stats": [..]}` for
//! client/server mode (one entry per client job plus one whose `jobname` is `"All clients"`).
//! Each job entry has `read`/`write`/`trim` objects with `iops`, `iops_mean` (mean of the
//! per-500 ms samples), `io_bytes`, `bw_bytes`, `bw_mean` (KiB/s), `runtime` (ms),
//! `total_ios`, and `clat_ns`/`lat_ns` (`mean`, and for `clat_ns` a `percentile` map keyed
//! `"99.900000"`). All latencies are nanoseconds whatever their magnitude; no unit switching.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A parse failure: the output is not fio JSON of the expected shape.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("fio output holds no JSON object (no '{{' found); output starts: {0:?}")]
    NoJson(String),
    #[error("fio output is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("fio JSON has neither \"jobs\" nor \"client_stats\"")]
    NoJobs,
    #[error("fio JSON: job {job:?}: {what}")]
    Shape { job: String, what: String },
}

/// One direction (read or write) of one job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirStats {
    /// fio's `iops`: total_ios / runtime (includes the final drain of the queue).
    pub iops: f64,
    /// Mean of fio's per-interval IOPS samples (steady state; 0 when sampling is disabled).
    pub iops_mean: f64,
    /// fio's `bw_bytes`: io_bytes / runtime.
    pub bw_bytes: u64,
    /// Mean of fio's bandwidth samples, bytes/s (fio reports KiB/s; converted).
    pub bw_mean_bytes: f64,
    pub io_bytes: u64,
    pub total_ios: u64,
    /// Milliseconds.
    pub runtime_ms: u64,
    /// Total latency (submission to completion) mean, ns (`lat_ns.mean`).
    pub lat_mean_ns: f64,
    /// Completion latency mean, ns (`clat_ns.mean`).
    pub clat_mean_ns: f64,
    /// Completion latency percentiles, ns (0 when fio did not report them).
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
}

impl DirStats {
    /// Whether any I/O happened in this direction.
    pub fn active(&self) -> bool {
        self.total_ios > 0 || self.io_bytes > 0
    }

    /// IOPS the way fio's text output computes it: `1000 * total_ios / runtime_ms`, truncated.
    pub fn iops_text(&self) -> u64 {
        (1000 * self.total_ios)
            .checked_div(self.runtime_ms)
            .unwrap_or(0)
    }

    /// Bandwidth the way fio's text output computes it: `1000 * io_bytes / runtime_ms`.
    pub fn bw_text(&self) -> u64 {
        (1000 * self.io_bytes)
            .checked_div(self.runtime_ms)
            .unwrap_or(0)
    }
}

/// One job's results (one entry of fio's `jobs` or `client_stats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    pub jobname: String,
    /// `None` for a local run; `Some("host:port")` for one client; `Some("All clients")`
    /// for client/server mode's merged entry.
    pub client: Option<String>,
    /// fio's `error` (errno of the first error; 0 = none).
    pub error: i64,
    pub read: DirStats,
    pub write: DirStats,
}

/// The merged client/server entry's label in fio's JSON.
pub const ALL_CLIENTS: &str = "All clients";

impl JobResult {
    /// Read + write IOPS.
    pub fn iops(&self) -> f64 {
        self.read.iops + self.write.iops
    }
    pub fn iops_mean(&self) -> f64 {
        self.read.iops_mean + self.write.iops_mean
    }
    pub fn bw_bytes(&self) -> u64 {
        self.read.bw_bytes + self.write.bw_bytes
    }
    pub fn bw_mean_bytes(&self) -> f64 {
        self.read.bw_mean_bytes + self.write.bw_mean_bytes
    }
    /// I/O-weighted mean total latency over both directions, ns.
    pub fn lat_mean_ns(&self) -> f64 {
        weighted(&[
            (self.read.lat_mean_ns, self.read.total_ios),
            (self.write.lat_mean_ns, self.write.total_ios),
        ])
    }

    /// Merge entries of the same job (numjobs > 1 without group reporting): rates add,
    /// latencies are I/O-weighted means, percentiles take the worst, runtime the longest.
    pub fn merge(parts: &[JobResult]) -> JobResult {
        let mut out = parts.first().cloned().unwrap_or_default();
        if parts.len() <= 1 {
            return out;
        }
        out.read = merge_dir(parts.iter().map(|p| &p.read));
        out.write = merge_dir(parts.iter().map(|p| &p.write));
        out.error = parts.iter().map(|p| p.error).find(|&e| e != 0).unwrap_or(0);
        out
    }
}

fn weighted(items: &[(f64, u64)]) -> f64 {
    let n: u64 = items.iter().map(|i| i.1).sum();
    if n == 0 {
        return 0.0;
    }
    items.iter().map(|(v, w)| v * *w as f64).sum::<f64>() / n as f64
}

fn merge_dir<'a>(dirs: impl Iterator<Item = &'a DirStats>) -> DirStats {
    let dirs: Vec<&DirStats> = dirs.collect();
    let mut o = DirStats::default();
    for d in &dirs {
        o.iops += d.iops;
        o.iops_mean += d.iops_mean;
        o.bw_bytes += d.bw_bytes;
        o.bw_mean_bytes += d.bw_mean_bytes;
        o.io_bytes += d.io_bytes;
        o.total_ios += d.total_ios;
        o.runtime_ms = o.runtime_ms.max(d.runtime_ms);
        o.p50_ns = o.p50_ns.max(d.p50_ns);
        o.p90_ns = o.p90_ns.max(d.p90_ns);
        o.p99_ns = o.p99_ns.max(d.p99_ns);
        o.p999_ns = o.p999_ns.max(d.p999_ns);
    }
    let w = |f: fn(&DirStats) -> f64| {
        weighted(&dirs.iter().map(|d| (f(d), d.total_ios)).collect::<Vec<_>>())
    };
    o.lat_mean_ns = w(|d| d.lat_mean_ns);
    o.clat_mean_ns = w(|d| d.clat_mean_ns);
    o
}

/// A whole fio invocation's parsed output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioOutput {
    pub fio_version: String,
    /// Local runs: one entry per job (entries of the same job name merged). Client/server:
    /// one entry per client and job, then the `"All clients"` entries.
    pub jobs: Vec<JobResult>,
    /// The JSON text exactly as fio printed it (from the first `{`).
    pub raw: String,
    /// What fio wrote to stderr (its reasons: `you need to specify size=`), all of it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
}

impl FioOutput {
    /// Parse fio's stdout: everything before the first `{` is ignored (the nbd engine
    /// prints "fio: connected to NBD server" first).
    pub fn parse(stdout: &str) -> Result<FioOutput, ParseError> {
        let start = stdout
            .find('{')
            .ok_or_else(|| ParseError::NoJson(stdout.chars().take(200).collect()))?;
        let raw = stdout[start..].trim_end().to_string();
        let v: Value = serde_json::from_str(&raw)?;
        let fio_version = v["fio version"].as_str().unwrap_or_default().to_string();
        let (entries, remote) = match (v.get("jobs"), v.get("client_stats")) {
            (Some(Value::Array(a)), _) => (a, false),
            (_, Some(Value::Array(a))) => (a, true),
            _ => return Err(ParseError::NoJobs),
        };
        let mut parsed = Vec::new();
        for e in entries {
            parsed.push(parse_job(e, remote)?);
        }
        // Merge entries sharing (client, jobname): numjobs > 1 without group_reporting.
        let mut jobs: Vec<JobResult> = Vec::new();
        let mut groups: Vec<Vec<JobResult>> = Vec::new();
        for j in parsed {
            match jobs
                .iter()
                .position(|k| k.jobname == j.jobname && k.client == j.client)
            {
                Some(i) => groups[i].push(j),
                None => {
                    jobs.push(j.clone());
                    groups.push(vec![j]);
                }
            }
        }
        let mut jobs: Vec<JobResult> = groups.iter().map(|g| JobResult::merge(g)).collect();
        // fio names the merged entry's job "All clients"; the harness runs one job per file,
        // so give it that job's name (its `client` still says "All clients").
        if let Some(first) = jobs
            .iter()
            .find(|j| j.client.as_deref() != Some(ALL_CLIENTS))
            .map(|j| j.jobname.clone())
        {
            for j in jobs
                .iter_mut()
                .filter(|j| j.client.as_deref() == Some(ALL_CLIENTS))
            {
                j.jobname = first.clone();
            }
        }
        Ok(FioOutput {
            fio_version,
            jobs,
            raw,
            stderr: String::new(),
        })
    }

    /// The local result of `jobname`, or in client/server mode the merged "All clients"
    /// entry (fio names that entry "All clients"; with one client there is none, so the
    /// single client's entry is used).
    pub fn job(&self, jobname: &str) -> Option<&JobResult> {
        self.jobs
            .iter()
            .find(|j| j.client.as_deref() == Some(ALL_CLIENTS))
            .or_else(|| self.jobs.iter().find(|j| j.jobname == jobname))
    }

    /// The summary result: the merged entry in client/server mode, else the first job.
    pub fn primary(&self) -> Option<&JobResult> {
        self.jobs
            .iter()
            .find(|j| j.client.as_deref() == Some(ALL_CLIENTS))
            .or_else(|| self.jobs.first())
    }
}

fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn int(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f as u64)))
        .unwrap_or(0)
}

fn parse_job(e: &Value, remote: bool) -> Result<JobResult, ParseError> {
    let jobname = e["jobname"]
        .as_str()
        .ok_or_else(|| ParseError::Shape {
            job: "?".into(),
            what: "missing \"jobname\"".into(),
        })?
        .to_string();
    let client = if !remote {
        None
    } else if jobname == ALL_CLIENTS {
        Some(ALL_CLIENTS.to_string())
    } else {
        let host = e["hostname"].as_str().unwrap_or("?");
        Some(format!("{host}:{}", int(e, "port")))
    };
    let dir = |name: &str| -> Result<DirStats, ParseError> {
        let d = e.get(name).ok_or_else(|| ParseError::Shape {
            job: jobname.clone(),
            what: format!("missing \"{name}\""),
        })?;
        let clat = &d["clat_ns"];
        let pct = &clat["percentile"];
        let p = |k: &str| int(pct, k);
        Ok(DirStats {
            iops: num(d, "iops"),
            iops_mean: num(d, "iops_mean"),
            bw_bytes: int(d, "bw_bytes"),
            bw_mean_bytes: num(d, "bw_mean") * 1024.0,
            io_bytes: int(d, "io_bytes"),
            total_ios: int(d, "total_ios"),
            runtime_ms: int(d, "runtime"),
            lat_mean_ns: num(&d["lat_ns"], "mean"),
            clat_mean_ns: num(clat, "mean"),
            p50_ns: p("50.000000"),
            p90_ns: p("90.000000"),
            p99_ns: p("99.000000"),
            p999_ns: p("99.900000"),
        })
    };
    Ok(JobResult {
        client,
        error: e.get("error").and_then(Value::as_i64).unwrap_or(0),
        read: dir("read")?,
        write: dir("write")?,
        jobname,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn randread_at_500_iops_msec_latencies() {
        let o = FioOutput::parse(&fixture("randread_500iops_msec.out")).unwrap();
        assert_eq!(o.fio_version, "fio-3.33");
        assert!(o.raw.starts_with('{'));
        let j = o.job("read_iops").unwrap();
        assert_eq!(j.client, None);
        assert_eq!(j.read.total_ios, 1500);
        assert_eq!(j.read.runtime_ms, 3127);
        assert_eq!(j.read.iops_text(), 479);
        assert!((j.read.iops_mean - 500.0).abs() < 1e-9);
        assert!(
            j.read.lat_mean_ns > 1e8,
            "msec-range latency: {}",
            j.read.lat_mean_ns
        );
        assert!(j.read.p99_ns >= j.read.p90_ns && j.read.p90_ns >= j.read.p50_ns);
        assert!(j.read.p999_ns > 0);
        assert!(!j.write.active());
    }

    #[test]
    fn usec_and_nsec_latencies() {
        let o = FioOutput::parse(&fixture("latency_usec.out")).unwrap();
        let l = o.jobs[0].read.lat_mean_ns;
        assert!((1e3..1e6).contains(&l), "usec range: {l}");
        let o = FioOutput::parse(&fixture("null_nsec.out")).unwrap();
        let l = o.jobs[0].read.lat_mean_ns;
        assert!(l < 1e3, "nsec range: {l}");
    }

    #[test]
    fn group_reporting_numjobs_4_is_one_total() {
        let o = FioOutput::parse(&fixture("seq_read_numjobs4.out")).unwrap();
        assert_eq!(o.jobs.len(), 1);
        let j = &o.jobs[0];
        assert_eq!(j.jobname, "seq_read");
        assert_eq!(j.read.io_bytes % (1 << 20), 0);
        assert!(j.read.bw_bytes > 0);
    }

    #[test]
    fn mixed_has_both_directions() {
        let o = FioOutput::parse(&fixture("mixed_randrw.out")).unwrap();
        let j = &o.jobs[0];
        assert!(j.read.active() && j.write.active());
        let share = j.read.total_ios as f64 / (j.read.total_ios + j.write.total_ios) as f64;
        assert!((0.7..0.8).contains(&share), "rwmixread=75: {share}");
        let m = j.lat_mean_ns();
        assert!(m >= j.read.lat_mean_ns.min(j.write.lat_mean_ns));
    }

    #[test]
    fn client_server_per_client_and_merged() {
        let o = FioOutput::parse(&fixture("client_server_2.out")).unwrap();
        assert_eq!(o.jobs.len(), 3);
        let clients: Vec<_> = o.jobs.iter().map(|j| j.client.clone().unwrap()).collect();
        assert!(clients.contains(&"127.0.0.1:8765".to_string()));
        assert!(clients.contains(&"127.0.0.1:8766".to_string()));
        let all = o.primary().unwrap();
        assert_eq!(all.client.as_deref(), Some(ALL_CLIENTS));
        let sum: u64 = o
            .jobs
            .iter()
            .filter(|j| j.client.as_deref() != Some(ALL_CLIENTS))
            .map(|j| j.read.total_ios)
            .sum();
        assert_eq!(all.read.total_ios, sum);
        assert_eq!(
            o.job("cs_read").unwrap().client.as_deref(),
            Some(ALL_CLIENTS)
        );
    }

    #[test]
    fn merges_numjobs_without_group_reporting() {
        let mut a = JobResult {
            jobname: "j".into(),
            ..Default::default()
        };
        a.read = DirStats {
            iops: 100.0,
            total_ios: 100,
            lat_mean_ns: 1000.0,
            runtime_ms: 1000,
            ..Default::default()
        };
        let mut b = a.clone();
        b.read.total_ios = 300;
        b.read.iops = 300.0;
        b.read.lat_mean_ns = 2000.0;
        b.read.runtime_ms = 1010;
        let m = JobResult::merge(&[a, b]);
        assert_eq!(m.read.iops, 400.0);
        assert_eq!(m.read.runtime_ms, 1010);
        assert_eq!(m.read.lat_mean_ns, 1750.0);
    }

    #[test]
    fn rejects_non_json() {
        assert!(matches!(
            FioOutput::parse("fio: engine nbd not loadable\n"),
            Err(ParseError::NoJson(_))
        ));
        assert!(matches!(FioOutput::parse("{}"), Err(ParseError::NoJobs)));
    }
}
