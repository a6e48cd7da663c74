//! Reading runs back: the list, one run with everything it recorded, a job's raw JSON.

use rusqlite::OptionalExtension;

use super::model::{JobRecord, PolicyRecord, RunListing, RunRecord, SummaryTable, VolumeRecord};
use super::{Result, Store, StoreError};
use crate::host::Env;
use crate::series::{CreditSample, FioSample, JobSeries, NodeSample, ResourceSample};
use crate::verdict::{Limits, Verdict};
use assess::Outcome;
use fio::{DirStats, JobResult};

/// A bucket from five columns starting at `at` (balance, bucket, baseline, burst, time to
/// empty); `None` when the sample has none (NULL, or a database older than schema 5).
fn credit(r: &rusqlite::Row, at: usize) -> rusqlite::Result<Option<CreditSample>> {
    let v: [Option<f64>; 4] = [r.get(at)?, r.get(at + 1)?, r.get(at + 2)?, r.get(at + 3)?];
    Ok(match v {
        [Some(balance), Some(bucket), Some(baseline), Some(burst)] => Some(CreditSample {
            balance,
            bucket,
            baseline,
            burst,
            time_to_empty_s: r.get(at + 4)?,
        }),
        _ => None,
    })
}

impl Store {
    /// Every row of `sql` (whose one parameter, `?1`, is `id`: a run's or a job's), each
    /// as `f` reads it, in the query's order.
    pub(super) fn rows_of<T>(
        &self,
        sql: &str,
        id: i64,
        f: impl FnMut(&rusqlite::Row) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let mut st = self.conn.prepare_cached(sql)?;
        let rows = st
            .query_map([id], f)?
            .collect::<std::result::Result<_, _>>()?;
        Ok(rows)
    }

    /// A job's host tool sets, one series per host, samples in time order.
    pub(crate) fn load_hosts(&self, job_id: i64) -> Result<Vec<toolsets::HostSeries>> {
        let mut hosts = self.rows_of(
            "SELECT host, ncpus, mem_total_bytes, swap_total_bytes, overhead_cpu_s,
               overhead_wall_s, overhead_samples, errors
             FROM host_series WHERE job_id = ?1 ORDER BY rowid",
            job_id,
            |r| {
                let errors: String = r.get(7)?;
                Ok(toolsets::HostSeries {
                    host: r.get(0)?,
                    ncpus: r.get(1)?,
                    mem_total_bytes: r.get::<_, i64>(2)? as u64,
                    swap_total_bytes: r.get::<_, i64>(3)? as u64,
                    overhead: toolsets::Overhead {
                        cpu_s: r.get(4)?,
                        wall_s: r.get(5)?,
                        samples: r.get::<_, i64>(6)? as u64,
                    },
                    errors: serde_json::from_str(&errors).unwrap_or_default(),
                    samples: Vec::new(),
                })
            },
        )?;
        let mut st = self.conn.prepare_cached(
            "SELECT host, sample FROM host_samples WHERE job_id = ?1 ORDER BY t_ms, rowid",
        )?;
        let rows = st.query_map([job_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        for row in rows {
            let (host, json) = row?;
            // A sample that no longer parses (a newer qoslab's) costs that sample only.
            if let (Some(h), Ok(s)) = (
                hosts.iter_mut().find(|h| h.host == host),
                serde_json::from_str::<toolsets::HostSample>(&json),
            ) {
                h.samples.push(s);
            }
        }
        Ok(hosts)
    }

    pub(crate) fn load_series(&self, job_id: i64) -> Result<JobSeries> {
        let fio = self.rows_of(
            "SELECT t_ms, direction, iops, bw_bytes, lat_mean_ns, p50_ns, p99_ns
             FROM fio_samples WHERE job_id = ?1 ORDER BY t_ms, direction",
            job_id,
            |r| {
                Ok(FioSample {
                    t_ms: r.get::<_, i64>(0)? as u64,
                    direction: r.get(1)?,
                    iops: r.get(2)?,
                    bw_bytes: r.get(3)?,
                    lat_mean_ns: r.get(4)?,
                    p50_ns: r.get::<_, i64>(5)? as u64,
                    p99_ns: r.get::<_, i64>(6)? as u64,
                })
            },
        )?;
        let node = self.rows_of(
            "SELECT t_ms, volume, read_iops, write_iops, other_iops, read_bps, write_bps,
               lat_mean_us, ceiling_wait_us, floor_wait_us,
               iops_balance, iops_bucket, iops_baseline, iops_burst, iops_time_to_empty_s,
               bytes_balance, bytes_bucket, bytes_baseline, bytes_burst, bytes_time_to_empty_s
             FROM node_samples WHERE job_id = ?1 ORDER BY rowid",
            job_id,
            |r| {
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
                    iops_credits: credit(r, 10)?,
                    bytes_credits: credit(r, 15)?,
                })
            },
        )?;
        let resources = self.rows_of(
            "SELECT t_ms, resource, unit, use_rate, baseline, balance, bucket, burst, time_to_empty_s
             FROM resource_samples WHERE job_id = ?1 ORDER BY rowid",
            job_id,
            |r| {
                let baseline: f64 = r.get(4)?;
                let balance: Option<f64> = r.get(5)?;
                let (bucket, burst): (Option<f64>, Option<f64>) = (r.get(6)?, r.get(7)?);
                Ok(ResourceSample {
                    t_ms: r.get::<_, i64>(0)? as u64,
                    resource: r.get(1)?,
                    unit: r.get(2)?,
                    use_rate: r.get(3)?,
                    baseline,
                    credits: match (balance, bucket, burst) {
                        (Some(balance), Some(bucket), Some(burst)) => Some(CreditSample {
                            balance,
                            bucket,
                            baseline,
                            burst,
                            time_to_empty_s: r.get(8)?,
                        }),
                        _ => None,
                    },
                })
            },
        )?;
        let ops = self.load_op_samples(job_id)?;
        let hosts = self.load_hosts(job_id)?;
        Ok(JobSeries {
            job_id,
            fio,
            node,
            ops,
            resources,
            hosts,
        })
    }

    pub fn list_runs(&self) -> Result<Vec<RunListing>> {
        let mut st = self.conn.prepare(
            "SELECT r.id, r.name, r.started_at, r.status, r.target,
               (SELECT COUNT(*) FROM jobs j WHERE j.run_id = r.id),
               (SELECT COUNT(*) FROM verdicts v JOIN jobs j ON v.job_id = j.id WHERE j.run_id = r.id AND j.status != 'superseded' AND v.outcome = 'pass'),
               (SELECT COUNT(*) FROM verdicts v JOIN jobs j ON v.job_id = j.id WHERE j.run_id = r.id AND j.status != 'superseded' AND v.outcome = 'fail'),
               (SELECT COUNT(*) FROM verdicts v JOIN jobs j ON v.job_id = j.id WHERE j.run_id = r.id AND j.status != 'superseded' AND v.outcome = 'inconclusive')
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
                inconclusive: r.get(8)?,
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
        let mut run = self.load_run_row(id)?;
        run.policies = self.load_policies(id)?;
        run.volumes = self.load_volumes(id)?;
        let mut jobs = self.load_jobs(id)?;
        self.load_results_and_verdicts(&mut jobs)?;
        for j in &mut jobs {
            j.ops = self.load_ops(j.id)?;
        }
        for j in &jobs {
            let s = self.load_series(j.id)?;
            if !s.is_empty() {
                run.series.push(s);
            }
        }
        run.jobs = jobs;
        run.tables = self.load_tables(id)?;
        Ok(run)
    }

    /// The run's own row (its jobs, volumes, ... empty).
    fn load_run_row(&self, id: i64) -> Result<RunRecord> {
        self.conn
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
            .ok_or(StoreError::NoRun(id))
    }

    fn load_policies(&self, id: i64) -> Result<Vec<PolicyRecord>> {
        self.rows_of(
            "SELECT name, definition FROM policies WHERE run_id = ?1 ORDER BY rowid",
            id,
            |r| {
                Ok(PolicyRecord {
                    name: r.get(0)?,
                    definition: r.get(1)?,
                })
            },
        )
    }

    fn load_volumes(&self, id: i64) -> Result<Vec<VolumeRecord>> {
        self.rows_of(
            "SELECT name, size, snapshot_reserve_percent, policy, ceiling_iops, ceiling_bps,
               floor_iops, floor_bps FROM volumes WHERE run_id = ?1 ORDER BY rowid",
            id,
            |r| {
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
            },
        )
    }

    /// The run's jobs, in order (their results, verdicts and operations empty).
    fn load_jobs(&self, id: i64) -> Result<Vec<JobRecord>> {
        self.rows_of(
            "SELECT id, seq, workload, name, volume, iteration, status, started_at, finished_at, error,
               diagnosis, steady
             FROM jobs WHERE run_id = ?1 ORDER BY seq",
            id,
            |r| {
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
                    diagnosis: r
                        .get::<_, Option<String>>(10)?
                        .and_then(|j| serde_json::from_str(&j).ok()),
                    steady: r
                        .get::<_, Option<String>>(11)?
                        .and_then(|j| serde_json::from_str(&j).ok()),
                    results: Vec::new(),
                    verdicts: Vec::new(),
                    ops: Vec::new(),
                })
            },
        )
    }

    /// Each job's fio results (a row per client and direction) and verdicts.
    fn load_results_and_verdicts(&self, jobs: &mut [JobRecord]) -> Result<()> {
        let mut res = self.conn.prepare(
            "SELECT client, direction, iops, iops_mean, bw_bytes, bw_mean_bytes, io_bytes, total_ios,
               runtime_ms, lat_mean_ns, clat_mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, error
             FROM results WHERE job_id = ?1 ORDER BY rowid",
        )?;
        let mut ver = self.conn.prepare(
            "SELECT expectation, measured, bound, passed, detail, outcome, reason
             FROM verdicts WHERE job_id = ?1 ORDER BY rowid",
        )?;
        for j in jobs {
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
                    let passed: bool = r.get(3)?;
                    let outcome = r
                        .get::<_, Option<String>>(5)?
                        .and_then(|o| Outcome::parse(&o))
                        .unwrap_or(if passed { Outcome::Pass } else { Outcome::Fail });
                    Ok(
                        Verdict::new(r.get(0)?, r.get(1)?, r.get(2)?, r.get(4)?, outcome)
                            .because(r.get(6)?),
                    )
                })?
                .collect::<std::result::Result<_, _>>()?;
        }
        Ok(())
    }

    fn load_tables(&self, id: i64) -> Result<Vec<SummaryTable>> {
        self.rows_of(
            "SELECT kind, name, columns, rows FROM summary_tables WHERE run_id = ?1 ORDER BY seq",
            id,
            |r| {
                let cols: String = r.get(2)?;
                let rows: String = r.get(3)?;
                Ok(SummaryTable {
                    kind: r.get(0)?,
                    name: r.get(1)?,
                    columns: serde_json::from_str(&cols).unwrap_or_default(),
                    rows: serde_json::from_str(&rows).unwrap_or_default(),
                })
            },
        )
    }
}
