//! Running fio across hosts: `fio --server` on each host (leased, always stopped), one
//! `fio --client=HOST,PORT FILE ...` per run from the coordinator with each host's own job
//! file, fio's JSON parsed by `bench`, and iostat per device around the run.

use std::process::Command;

use std::path::Path;

use fio::result::{FioOutput, JobResult, ALL_CLIENTS};
use fio::{FioSample, JobFile};
use serde::Serialize;

use crate::iostat::{self, IoStat, VmStat};
use crate::spread::Spread;
use crate::{Session, SuiteError};
use assess::steady::{self, SteadyState as Steady};

/// fio servers on some hosts of a session.
pub struct Servers {
    pub port: u16,
    _procs: Vec<hosts::RemoteProc>,
}

/// Start `fio --server` on each host index in `which`.
pub fn start_servers(s: &Session, which: &[usize], port: u16) -> Result<Servers, SuiteError> {
    let mut procs = Vec::new();
    for &i in which {
        procs.push(hosts::remote::fio_server(
            &s.hosts[i],
            &s.rundir,
            port,
            s.lease,
        )?);
    }
    Ok(Servers {
        port,
        _procs: procs,
    })
}

/// One measured (or preparing) fio run over one or more hosts.
#[derive(Debug, Clone, Serialize)]
pub struct FioRun {
    /// `device`, `host`, `cluster`, `prepare`, or the storage kind.
    pub stage: String,
    pub job: String,
    pub iteration: u32,
    pub hosts: Vec<String>,
    /// What each host's job addressed (devices or a directory), in host order.
    pub targets: Vec<String>,
    /// One entry per client (fio's per-client `client_stats`).
    pub per_client: Vec<JobResult>,
    /// fio's "All clients" entry (the only client's entry when there is one).
    pub merged: JobResult,
    pub iostat: Vec<IoStat>,
    /// vmstat of every host of the run.
    pub vmstat: Vec<VmStat>,
    /// The job file each host ran (as sent).
    pub job_files: Vec<String>,
    /// fio's 500 ms windows, all clients added up (empty when logs were not asked for).
    #[serde(skip)]
    pub series: Vec<FioSample>,
    /// SNIA's steady-state check on the IOPS windows (None: fewer than 5 windows).
    pub steady: Option<Steady>,
    /// fio's whole output (per client and "All clients"), as the store keeps it.
    #[serde(skip)]
    pub output: FioOutput,
}

impl FioRun {
    pub fn iops(&self) -> f64 {
        self.merged.iops()
    }
    pub fn mib_s(&self) -> f64 {
        self.merged.bw_bytes() as f64 / 1048576.0
    }
    /// The worst p99 completion latency of any client, µs: fio's "All clients" entry has no
    /// percentiles, and percentiles do not add up, so the merged figure is this bound.
    pub fn p99_us(&self) -> f64 {
        let of = |r: &JobResult| r.read.p99_ns.max(r.write.p99_ns) as f64 / 1e3;
        self.per_client
            .iter()
            .map(of)
            .fold(of(&self.merged), f64::max)
    }
}

/// The IOPS per window, all directions added up.
pub fn window_iops(series: &[FioSample]) -> Vec<f64> {
    let mut out: Vec<(u64, f64)> = Vec::new();
    for s in series {
        match out.iter_mut().find(|(t, _)| *t == s.t_ms) {
            Some((_, v)) => *v += s.iops,
            None => out.push((s.t_ms, s.iops)),
        }
    }
    out.sort_by_key(|(t, _)| *t);
    out.into_iter().map(|(_, v)| v).collect()
}

/// The steady-state check of a run's windows (`assess::steady`: SNIA PTS over the last 5).
/// fio's last window is left out: it ends the run (the queue draining, often a partial or
/// empty window), so a run needs at least 6 windows (3 s) to be judged.
pub fn steady_of(series: &[FioSample]) -> Option<Steady> {
    let w = window_iops(series);
    steady::check(&w[..w.len().saturating_sub(1)])
}

/// What one fio client/server run produced.
pub struct Ran {
    pub output: FioOutput,
    pub iostat: Vec<IoStat>,
    pub vmstat: Vec<VmStat>,
    /// fio's windows when logs were asked for, all clients added up.
    pub series: Vec<FioSample>,
}

/// Run one job file per host at once; `devices[k]` are the block devices of host k whose
/// iostat is recorded. With `logs` (a directory on this machine and a file prefix), fio
/// writes its 500 ms logs there (fio's client stores each server's logs locally) and they
/// are read back into `series`.
pub fn run(
    s: &Session,
    servers: &Servers,
    parts: &[(usize, JobFile, Vec<String>)],
    label: &str,
    logs: Option<(&Path, &str)>,
) -> Result<Ran, SuiteError> {
    let mut cmd = Command::new("fio");
    cmd.arg("--output-format=json");
    let mut clients = Vec::new();
    for (k, (i, job, _)) in parts.iter().enumerate() {
        let h = &s.hosts[*i];
        let path = s.workdir.join(format!("{label}-{k}-{}.fio", h.name));
        let mut job = job.clone();
        if let Some((dir, prefix)) = logs {
            for (key, v) in fio::logs::log_options(&dir.join(prefix).display().to_string()) {
                job.global.set(&key, v);
            }
        }
        std::fs::write(&path, job.render())
            .map_err(|e| SuiteError::Io(format!("{}: {e}", path.display())))?;
        let client = format!("{},{}", h.addr, servers.port);
        cmd.arg(format!("--client={client}")).arg(&path);
        clients.push(format!("{} ({client})", h.name));
    }
    let before: Vec<_> = parts
        .iter()
        .map(|(i, _, _)| iostat::snapshot(&s.hosts[*i]))
        .collect::<Result<_, _>>()?;
    let out = lifecycle::children::output(&mut cmd, lifecycle::children::OnParentDeath::TermNoPipe)
        .map_err(|e| SuiteError::Fio {
            clients: clients.join(", "),
            detail: format!("running fio: {e} (is fio installed on this machine?)"),
        })?;
    let mut stats = Vec::new();
    let mut vm = Vec::new();
    for ((i, _, devs), b) in parts.iter().zip(&before) {
        let a = iostat::snapshot(&s.hosts[*i])?;
        stats.extend(iostat::delta(&s.hosts[*i].name, b, &a, devs));
        vm.extend(iostat::vm_delta(&s.hosts[*i].name, b, &a));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let fail = |detail: String| SuiteError::Fio {
        clients: clients.join(", "),
        detail,
    };
    let mut parsed = FioOutput::parse(&stdout).map_err(|e| {
        fail(format!(
            "{e}; exit {}; stderr: {}",
            out.status,
            stderr.lines().rev().take(6).collect::<Vec<_>>().join(" | ")
        ))
    })?;
    // fio labels a client by the address it was given; say which host that is.
    for j in &mut parsed.jobs {
        if let Some(c) = j.client.as_mut() {
            if let Some((i, _, _)) = parts
                .iter()
                .find(|(i, _, _)| *c == format!("{}:{}", s.hosts[*i].addr, servers.port))
            {
                *c = format!("{}:{}", s.hosts[*i].name, servers.port);
            }
        }
    }
    if let Some(j) = parsed.jobs.iter().find(|j| j.error != 0) {
        return Err(fail(format!(
            "job {} on {} failed with errno {}; stderr: {}",
            j.jobname,
            j.client.as_deref().unwrap_or("?"),
            j.error,
            stderr.trim()
        )));
    }
    let series = logs
        .and_then(|(dir, prefix)| fio::logs::collect(dir, prefix).ok())
        .unwrap_or_default();
    Ok(Ran {
        output: parsed,
        iostat: stats,
        vmstat: vm,
        series,
    })
}

/// Split fio's output into per-client entries and the merged one.
pub fn split(o: &FioOutput) -> (Vec<JobResult>, JobResult) {
    let per: Vec<JobResult> = o
        .jobs
        .iter()
        .filter(|j| j.client.as_deref() != Some(ALL_CLIENTS))
        .cloned()
        .collect();
    let merged = o
        .jobs
        .iter()
        .find(|j| j.client.as_deref() == Some(ALL_CLIENTS))
        .cloned()
        .unwrap_or_else(|| JobResult::merge(&per));
    (per, merged)
}

/// A job's figures over its iterations.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub stage: String,
    pub job: String,
    pub hosts: Vec<String>,
    pub targets: Vec<String>,
    pub iops: Spread,
    pub mib_s: Spread,
    /// Mean total latency, µs (I/O-weighted over both directions).
    pub lat_us: Spread,
    /// The worst p99 completion latency of any client over the iterations, µs.
    pub p99_us_max: f64,
    /// The busiest device's mean %util over the iterations.
    pub util_pct_max: f64,
    /// The steady-state check of the last iteration (None: fewer than 5 windows).
    pub steady: Option<Steady>,
}

/// Summaries of `runs` grouped by (stage, job, hosts, targets), in first-seen order.
pub fn summarize(runs: &[FioRun]) -> Vec<Summary> {
    let mut keys: Vec<(String, String, Vec<String>, Vec<String>)> = Vec::new();
    for r in runs {
        let k = (
            r.stage.clone(),
            r.job.clone(),
            r.hosts.clone(),
            r.targets.clone(),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(stage, job, hosts, targets)| {
            let rs: Vec<&FioRun> = runs
                .iter()
                .filter(|r| {
                    r.stage == stage && r.job == job && r.hosts == hosts && r.targets == targets
                })
                .collect();
            let v = |f: &dyn Fn(&FioRun) -> f64| rs.iter().map(|r| f(r)).collect::<Vec<_>>();
            let mut devs: Vec<(String, String)> = Vec::new();
            for r in &rs {
                for st in &r.iostat {
                    let k = (st.host.clone(), st.device.clone());
                    if !devs.contains(&k) {
                        devs.push(k);
                    }
                }
            }
            let util_pct_max = devs
                .iter()
                .map(|(h, d)| {
                    let u: Vec<f64> = rs
                        .iter()
                        .flat_map(|r| r.iostat.iter())
                        .filter(|st| &st.host == h && &st.device == d)
                        .map(|st| st.util_pct)
                        .collect();
                    Spread::of(&u).mean
                })
                .fold(0.0, f64::max);
            Summary {
                iops: Spread::of(&v(&|r| r.iops())),
                mib_s: Spread::of(&v(&|r| r.mib_s())),
                lat_us: Spread::of(&v(&|r| r.merged.lat_mean_ns() / 1e3)),
                p99_us_max: rs.iter().map(|r| r.p99_us()).fold(0.0, f64::max),
                util_pct_max,
                steady: rs.last().and_then(|r| r.steady),
                stage,
                job,
                hosts,
                targets,
            }
        })
        .collect()
}

/// The summaries as a text table.
pub fn render_summaries(sums: &[Summary]) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "{:8} {:28} {:30} {:>10} {:>7} {:>10} {:>9} {:>9} {:>6}  steady\n",
        "stage", "job", "where", "IOPS", "cv%", "MiB/s", "lat us", "p99 us", "util%"
    );
    for m in sums {
        let place = format!("{}:{}", m.hosts.join("+"), m.targets.join("+"));
        let _ = writeln!(
            s,
            "{:8} {:28} {:30} {:>10.0} {:>7.1} {:>10.1} {:>9.0} {:>9.0} {:>6.0}  {}",
            m.stage,
            m.job,
            place,
            m.iops.mean,
            m.iops.cv_pct,
            m.mib_s.mean,
            m.lat_us.mean,
            m.p99_us_max,
            m.util_pct_max,
            steady_word(m.steady)
        );
    }
    s
}

/// "yes" / "NO" / "n/a" for a steady-state check.
pub fn steady_word(s: Option<Steady>) -> &'static str {
    match s {
        Some(s) if s.attained => "yes",
        Some(_) => "NO",
        None => "n/a",
    }
}
