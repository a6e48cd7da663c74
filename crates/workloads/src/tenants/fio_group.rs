//! Running the fio tenants of a scale point: one fio process, one job per tenant (see
//! [`super::fio_mix`]), all started together; each tenant's iteration is its job's result
//! (IOPS, read/write IOPS, mean and p99 completion latency) or its failure (fio's errno,
//! ENOSPC recognised; a fio that does not finish in time is a timeout for every tenant).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fio_mix::{job_file, FioMix, MixOptions, MixTenant};
use super::runner::GroupApp;
use loadgen::apps::{proc, Failure, FailureKind, Iteration, Metric, Step};

/// The fio tenants of one point.
pub struct FioGroup {
    /// (class, tenant) in `tenants` order.
    pub classes: Vec<String>,
    pub tenants: Vec<MixTenant>,
    pub opts: MixOptions,
    /// Where the job file and fio's output go.
    pub scratch: PathBuf,
    pub timeout: Duration,
    /// The last iteration's fio output (JSON text), for the results store.
    pub last_output: std::sync::Mutex<Option<String>>,
}

fn errno_text(e: i64) -> String {
    std::io::Error::from_raw_os_error(e as i32).to_string()
}

/// fio's JSON output from its first `{` (fio may print lines before it).
fn parse_output(text: &str) -> Result<Value, String> {
    let at = text.find('{').ok_or("fio printed no JSON")?;
    serde_json::from_str(&text[at..]).map_err(|e| format!("fio's JSON: {e}"))
}

/// The iteration of tenant `name` from fio's jobs (`name`, or `name-create/-write/-stat`).
pub fn tenant_iteration(out: &Value, name: &str, mix: FioMix) -> Iteration {
    let jobs: Vec<&Value> = out["jobs"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|j| {
                    let n = j["jobname"].as_str().unwrap_or("");
                    n == name
                        || (mix == FioMix::SmallFiles
                            && n.strip_prefix(name).is_some_and(|r| r.starts_with('-')))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut it = Iteration::default();
    if jobs.is_empty() {
        it.failure = Some(Failure::classify(
            "fio",
            format!("no result for job {name} in fio's output"),
        ));
        return it;
    }
    let (mut iops, mut r, mut w, mut secs) = (0.0, 0.0, 0.0, 0.0);
    let mut lat_mean = Vec::new();
    let mut lat_p99: f64 = 0.0;
    for j in &jobs {
        let jn = j["jobname"].as_str().unwrap_or("");
        let runtime = j["job_runtime"].as_f64().unwrap_or(0.0) / 1000.0;
        secs += runtime;
        it.steps.push(Step {
            name: jn
                .strip_prefix(name)
                .map(|s| s.trim_start_matches('-'))
                .filter(|s| !s.is_empty())
                .unwrap_or("io")
                .to_string(),
            secs: runtime,
        });
        let err = j["error"].as_i64().unwrap_or(0);
        if err != 0 && it.failure.is_none() {
            it.failure = Some(Failure {
                kind: if err == 28 {
                    FailureKind::NoSpace
                } else {
                    FailureKind::App
                },
                step: jn.to_string(),
                message: format!("fio job {jn}: error {err} ({})", errno_text(err)),
            });
        }
        for (dir, acc) in [("read", &mut r), ("write", &mut w)] {
            let d = &j[dir];
            let v = d["iops"].as_f64().unwrap_or(0.0);
            *acc += v;
            iops += v;
            if d["clat_ns"]["N"].as_u64().unwrap_or(0) > 0 {
                lat_mean.push((d["clat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e6, v));
                let p99 = d["clat_ns"]["percentile"]["99.000000"]
                    .as_f64()
                    .unwrap_or(0.0)
                    / 1e6;
                lat_p99 = lat_p99.max(p99);
            }
        }
    }
    let weight: f64 = lat_mean.iter().map(|(_, w)| w).sum();
    let mean = if weight > 0.0 {
        lat_mean.iter().map(|(m, w)| m * w).sum::<f64>() / weight
    } else {
        0.0
    };
    it.secs = secs;
    for (n, v, u) in [
        ("iops", iops, "IOPS"),
        ("read_iops", r, "IOPS"),
        ("write_iops", w, "IOPS"),
        ("lat_mean_ms", mean, "ms"),
        ("lat_p99_ms", lat_p99, "ms"),
    ] {
        it.metrics.push(Metric {
            name: n.into(),
            value: v,
            unit: u.into(),
        });
    }
    it
}

impl GroupApp for FioGroup {
    fn name(&self) -> &'static str {
        "fio"
    }

    fn members(&self) -> Vec<(String, String)> {
        self.classes
            .iter()
            .cloned()
            .zip(self.tenants.iter().map(|t| t.name.clone()))
            .collect()
    }

    fn iteration(&self, n: u32) -> Vec<Iteration> {
        let fail_all = |f: Failure| -> Vec<Iteration> {
            self.tenants
                .iter()
                .map(|_| Iteration {
                    failure: Some(f.clone()),
                    ..Iteration::default()
                })
                .collect()
        };
        let text = match job_file(&self.tenants, &self.opts) {
            Ok(t) => t,
            Err(e) => return fail_all(Failure::classify("fio job file", e)),
        };
        let _ = std::fs::create_dir_all(&self.scratch);
        let jobs = self.scratch.join(format!("tenants-{n}.fio"));
        let out = self.scratch.join(format!("tenants-{n}.json"));
        if let Err(e) = std::fs::write(&jobs, &text) {
            return fail_all(Failure::classify(
                "fio job file",
                format!("{}: {e}", jobs.display()),
            ));
        }
        let t0 = Instant::now();
        let r = proc::step(
            "fio",
            Command::new("fio")
                .arg("--output-format=json")
                .arg(format!("--output={}", out.display()))
                .arg(&jobs),
            t0 + self.timeout,
            self.timeout,
        );
        // fio exits non-zero when a job failed; its JSON still says which.
        let text = std::fs::read_to_string(&out).map_err(|e| e.to_string());
        if let Ok(t) = &text {
            *self.last_output.lock().unwrap_or_else(|p| p.into_inner()) = Some(t.clone());
        }
        let parsed = text.and_then(|t| parse_output(&t));
        match (r, parsed) {
            (Err(f), _) if f.kind == FailureKind::Timeout => fail_all(f),
            (_, Ok(v)) => self
                .tenants
                .iter()
                .map(|t| tenant_iteration(&v, &t.name, t.mix))
                .collect(),
            (Err(f), Err(_)) => fail_all(f),
            (Ok(_), Err(e)) => fail_all(Failure::classify("fio", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_becomes_a_tenant_iteration_and_errno_28_is_enospc() {
        let out = serde_json::json!({"jobs": [
            {"jobname": "t0", "error": 0, "job_runtime": 20000,
             "read": {"iops": 70.0, "clat_ns": {"N": 1400, "mean": 2e6, "percentile": {"99.000000": 9e6}}},
             "write": {"iops": 30.0, "clat_ns": {"N": 600, "mean": 4e6, "percentile": {"99.000000": 12e6}}}},
            {"jobname": "t1", "error": 28, "job_runtime": 1000,
             "read": {"iops": 0.0, "clat_ns": {"N": 0}}, "write": {"iops": 5.0, "clat_ns": {"N": 5, "mean": 1e6, "percentile": {"99.000000": 1e6}}}}
        ]});
        let a = tenant_iteration(&out, "t0", FioMix::Random);
        assert!(a.ok());
        assert_eq!(a.metric("iops"), Some(100.0));
        assert!((a.metric("lat_mean_ms").unwrap() - 2.6).abs() < 1e-9);
        assert_eq!(a.metric("lat_p99_ms"), Some(12.0));
        assert_eq!(a.secs, 20.0);
        let b = tenant_iteration(&out, "t1", FioMix::Random);
        let f = b.failure.unwrap();
        assert_eq!(f.kind, FailureKind::NoSpace);
        assert!(
            f.message.contains("No space left on device"),
            "{}",
            f.message
        );
        assert!(!tenant_iteration(&out, "t2", FioMix::Random).ok());
    }

    #[test]
    fn small_files_phases_add_up_per_tenant() {
        let job = |n: &str, ms: u64| {
            serde_json::json!({"jobname": n, "error": 0, "job_runtime": ms,
            "read": {"iops": 0.0, "clat_ns": {"N": 0}}, "write": {"iops": 10.0, "clat_ns": {"N": 0}}})
        };
        let out = serde_json::json!({"jobs": [job("a-create", 100), job("ab-create", 999), job("a-write", 200), job("a-stat", 50)]});
        let it = tenant_iteration(&out, "a", FioMix::SmallFiles);
        let steps: Vec<&str> = it.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(steps, ["create", "write", "stat"]);
        assert!((it.secs - 0.35).abs() < 1e-9);
    }
}
