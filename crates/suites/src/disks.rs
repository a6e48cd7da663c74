//! `--suite disks` (seed 002, "Benchmarking disks"): each device alone, then all devices of a
//! host together, then (optionally) all hosts at once; the seed's job files sized from each
//! host's facts; a prefill; iterations with spread; iostat per device beside each result.
//!
//! Safety first: before any load, every device is probed on its host
//! ([`hosts::devices::inspect`]); one holding a partition table, a signature, a mount, a
//! holder or swap is refused unless `destroy_data` names it, and all refusals are reported
//! together. Job files name only the devices given, so nothing else is ever written.

use std::fmt::Write as _;

use hosts::devices::{self, DeviceState};
use serde::Serialize;

use crate::fiorun::{self, FioRun, Summary};
use crate::jobs::{self, SeedJob, Target, Timing};
use crate::sizing::{self, Overrides, Sizing};
use crate::{Session, SuiteError};

#[derive(Debug, Clone, Serialize)]
pub struct DisksPlan {
    /// Devices per host (host name as in the session).
    pub devices: Vec<(String, Vec<String>)>,
    /// Devices the user agreed to overwrite although they hold something.
    pub destroy_data: Vec<String>,
    /// Jobs for each device alone.
    pub device_jobs: Vec<SeedJob>,
    /// Jobs for all devices of a host together (hosts with 2 or more devices).
    pub host_jobs: Vec<SeedJob>,
    /// Also run the host jobs on every host at once (fio client/server, "All clients").
    pub all_hosts: bool,
    pub iterations: u32,
    pub timing: Timing,
    pub prefill: bool,
    pub overrides: Overrides,
    pub fio_port: u16,
}

impl Default for DisksPlan {
    fn default() -> DisksPlan {
        DisksPlan {
            devices: Vec::new(),
            destroy_data: Vec::new(),
            device_jobs: vec![
                SeedJob::SingleRandWrite,
                SeedJob::SingleSeqWrite,
                SeedJob::ReadRandom,
                SeedJob::ReadSeq,
            ],
            host_jobs: vec![SeedJob::WriteAll],
            all_hosts: false,
            iterations: 3,
            timing: Timing {
                runtime_s: 60,
                ramp_s: 2,
            },
            prefill: true,
            overrides: Overrides::default(),
            fio_port: 8765,
        }
    }
}

/// The sizing a host's target got, shown with the results.
#[derive(Debug, Clone, Serialize)]
pub struct TargetSizing {
    pub host: String,
    pub targets: Vec<String>,
    pub sizing: Sizing,
}

#[derive(Debug, Clone, Serialize)]
pub struct DisksResult {
    pub plan: DisksPlan,
    pub devices: Vec<(String, DeviceState)>,
    pub sizing: Vec<TargetSizing>,
    pub runs: Vec<FioRun>,
    pub summaries: Vec<Summary>,
}

impl DisksResult {
    pub fn render(&self) -> String {
        let mut s = String::from("sizing (seed 002 rules):\n");
        for t in &self.sizing {
            let _ = writeln!(
                s,
                "  {} {}: size {} numjobs {} iodepth {}",
                t.host,
                t.targets.join("+"),
                sizing::human(t.sizing.size_bytes),
                t.sizing.numjobs,
                t.sizing
                    .iodepth
                    .map_or("per job file".to_string(), |d| d.to_string())
            );
            for n in &t.sizing.notes {
                let _ = writeln!(s, "      {n}");
            }
        }
        s.push_str(&fiorun::render_summaries(&self.summaries));
        s
    }
}

/// Probe every device; all refusals at once.
pub fn check_devices(
    s: &Session,
    plan: &DisksPlan,
) -> Result<Vec<(String, DeviceState)>, SuiteError> {
    let mut states = Vec::new();
    let mut refused = Vec::new();
    for (host, devs) in &plan.devices {
        let (_, h) = s.host(host).ok_or_else(|| {
            SuiteError::Invalid(format!("devices for {host}, which is not one of the hosts"))
        })?;
        for (k, d) in devs.iter().enumerate() {
            if devs[..k].contains(d) {
                return Err(SuiteError::Invalid(format!(
                    "{host}: device {d} given twice"
                )));
            }
            let st = devices::inspect(h, d)?;
            if let Err(r) = devices::check_writable(&st, host, &plan.destroy_data) {
                refused.push(r);
            }
            states.push((host.clone(), st));
        }
    }
    if refused.is_empty() {
        Ok(states)
    } else {
        Err(SuiteError::Refused(refused))
    }
}

pub fn run(s: &Session, plan: &DisksPlan) -> Result<DisksResult, SuiteError> {
    if plan.devices.iter().all(|(_, d)| d.is_empty()) {
        return Err(SuiteError::Invalid("no devices given".into()));
    }
    if plan.iterations == 0 || plan.timing.runtime_s == 0 {
        return Err(SuiteError::Invalid(
            "iterations and runtime must be at least 1".into(),
        ));
    }
    let states = check_devices(s, plan)?;
    let state = |host: &str, dev: &str| {
        states
            .iter()
            .find(|(h, st)| h == host && st.given == dev)
            .map(|(_, st)| st)
    };
    let idx: Vec<usize> = plan
        .devices
        .iter()
        .filter_map(|(h, _)| s.host(h).map(|(i, _)| i))
        .collect();
    let servers = fiorun::start_servers(s, &idx, plan.fio_port)?;
    let mut result = DisksResult {
        plan: plan.clone(),
        devices: states.clone(),
        sizing: Vec::new(),
        runs: Vec::new(),
        summaries: Vec::new(),
    };
    let mut host_sizing = Vec::new();
    for ((host, devs), &i) in plan.devices.iter().zip(&idx) {
        let f = &s.facts[i];
        let sts: Vec<&DeviceState> = devs.iter().filter_map(|d| state(host, d)).collect();
        let rot = sts.iter().any(|st| st.rotational);
        let cap = sts.iter().map(|st| st.size_bytes).min().unwrap_or(0);
        let hs = sizing::disk_rule(f, rot, cap, &plan.overrides);
        for d in devs {
            let st = state(host, d).expect("probed above");
            let sz = sizing::disk_rule(f, st.rotational, st.size_bytes, &plan.overrides);
            result.sizing.push(TargetSizing {
                host: host.clone(),
                targets: vec![d.clone()],
                sizing: sz.clone(),
            });
            if plan.prefill {
                s.say(&format!(
                    "disks: {host} {d}: prefill {}",
                    sizing::human(sz.size_bytes)
                ));
                let f = jobs::prepare_file(&sz, &Target::Devices(vec![d.clone()]));
                fiorun::run(s, &servers, &[(i, f, vec![d.clone()])], "prefill")?;
            }
            for &job in &plan.device_jobs {
                let jf = jobs::job_file(job, &sz, &Target::Devices(vec![d.clone()]), plan.timing);
                measure(
                    s,
                    &servers,
                    &mut result.runs,
                    plan.iterations,
                    "device",
                    job,
                    &[(i, jf, vec![d.clone()])],
                )?;
            }
        }
        if devs.len() > 1 {
            result.sizing.push(TargetSizing {
                host: host.clone(),
                targets: devs.clone(),
                sizing: hs.clone(),
            });
            for &job in &plan.host_jobs {
                let jf = jobs::job_file(job, &hs, &Target::Devices(devs.clone()), plan.timing);
                measure(
                    s,
                    &servers,
                    &mut result.runs,
                    plan.iterations,
                    "host",
                    job,
                    &[(i, jf, devs.clone())],
                )?;
            }
        }
        host_sizing.push((i, devs.clone(), hs));
    }
    if plan.all_hosts && host_sizing.len() > 1 {
        for &job in &plan.host_jobs {
            let parts: Vec<_> = host_sizing
                .iter()
                .map(|(i, devs, hs)| {
                    (
                        *i,
                        jobs::job_file(job, hs, &Target::Devices(devs.clone()), plan.timing),
                        devs.clone(),
                    )
                })
                .collect();
            measure(
                s,
                &servers,
                &mut result.runs,
                plan.iterations,
                "cluster",
                job,
                &parts,
            )?;
        }
    }
    drop(servers);
    result.summaries = fiorun::summarize(&result.runs);
    Ok(result)
}

/// `iterations` runs of one job over `parts`, recorded.
pub(crate) fn measure(
    s: &Session,
    servers: &fiorun::Servers,
    runs: &mut Vec<FioRun>,
    iterations: u32,
    stage: &str,
    job: SeedJob,
    parts: &[(usize, fio::JobFile, Vec<String>)],
) -> Result<(), SuiteError> {
    let hosts: Vec<String> = parts
        .iter()
        .map(|(i, _, _)| s.hosts[*i].name.clone())
        .collect();
    let targets: Vec<String> = parts
        .iter()
        .map(|(_, jf, devs)| {
            if devs.is_empty() {
                jf.effective(0, "directory").unwrap_or("?").to_string()
            } else {
                devs.join(":")
            }
        })
        .collect();
    for it in 1..=iterations {
        let (out, iostat) = fiorun::run(s, servers, parts, &format!("{stage}-{}", job.name()))?;
        let (per_client, merged) = fiorun::split(&out);
        let r = FioRun {
            stage: stage.to_string(),
            job: job.name().to_string(),
            iteration: it,
            hosts: hosts.clone(),
            targets: targets.clone(),
            per_client,
            merged,
            iostat,
            job_files: parts.iter().map(|(_, jf, _)| jf.render()).collect(),
        };
        s.say(&format!(
            "{stage}: {} on {} [{}] #{it}: {:.0} IOPS, {:.1} MiB/s",
            job.name(),
            hosts.join("+"),
            targets.join(" "),
            r.iops(),
            r.mib_s()
        ));
        runs.push(r);
    }
    Ok(())
}
