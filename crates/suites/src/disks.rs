//! `--suite disks` (seed 002, "Benchmarking disks"): each device alone, then all devices of a
//! host together, then (optionally) all hosts at once; the seed's job files sized from each
//! host's facts; a prefill; iterations with spread; iostat per device beside each result.
//!
//! Safety first: before any load, every device is probed on its host
//! ([`hosts::devices::inspect`]); one holding a partition table, a signature, a mount, a
//! holder or swap is refused unless `destroy_data` names it, and all refusals are reported
//! together. Job files name only the devices given, so nothing else is ever written.

use hosts::devices::{self, DeviceState};
use serde::Serialize;

use crate::fiorun;
use crate::jobs::{self, SeedJob, Target, Timing};
use crate::schedule::{Prepared, Unit, UnitKind};
pub use crate::sizing::TargetSizing;
use crate::sizing::{self, Overrides};
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

/// Check every device, size the jobs, start the fio servers and list the units: per host,
/// each device's prefill and its jobs x iterations, then all its devices together; then
/// (optionally) all hosts at once. Nothing is written before every device passed.
pub fn prepare(
    s: &Session,
    plan: &DisksPlan,
) -> Result<(Vec<(String, DeviceState)>, Prepared), SuiteError> {
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
    let mut sizing = Vec::new();
    let mut units = Vec::new();
    let measure = |units: &mut Vec<Unit>,
                   stage: &str,
                   job: SeedJob,
                   parts: Vec<(usize, fio::JobFile, Vec<String>)>| {
        for it in 1..=plan.iterations {
            units.push(Unit::new(
                s,
                stage,
                Some(job),
                UnitKind::Measure { iteration: it },
                parts.clone(),
            ));
        }
    };
    let mut host_sizing = Vec::new();
    for ((host, devs), &i) in plan.devices.iter().zip(&idx) {
        let f = &s.facts[i];
        let sts: Vec<&DeviceState> = devs.iter().filter_map(|d| state(host, d)).collect();
        let rot = sts.iter().any(|st| st.rotational);
        let cap = sts.iter().map(|st| st.size_bytes).min().unwrap_or(0);
        let hs = sizing::disk_rule(f, rot, cap, &plan.overrides);
        for d in devs {
            let Some(st) = state(host, d) else {
                return Err(SuiteError::Invalid(format!("{host}: {d} was not probed")));
            };
            let sz = sizing::disk_rule(f, st.rotational, st.size_bytes, &plan.overrides);
            sizing.push(TargetSizing {
                host: host.clone(),
                targets: vec![d.clone()],
                sizing: sz.clone(),
            });
            let one = Target::Devices(vec![d.clone()]);
            if plan.prefill {
                units.push(Unit::new(
                    s,
                    "prefill",
                    None,
                    UnitKind::Prepare,
                    vec![(i, jobs::prepare_file(&sz, &one), vec![d.clone()])],
                ));
            }
            for &job in &plan.device_jobs {
                let jf = jobs::job_file(job, &sz, &one, plan.timing);
                measure(&mut units, "device", job, vec![(i, jf, vec![d.clone()])]);
            }
        }
        if devs.len() > 1 {
            sizing.push(TargetSizing {
                host: host.clone(),
                targets: devs.clone(),
                sizing: hs.clone(),
            });
            for &job in &plan.host_jobs {
                let jf = jobs::job_file(job, &hs, &Target::Devices(devs.clone()), plan.timing);
                measure(&mut units, "host", job, vec![(i, jf, devs.clone())]);
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
            measure(&mut units, "cluster", job, parts);
        }
    }
    let servers = fiorun::start_servers(s, &idx, plan.fio_port)?;
    Ok((
        states,
        Prepared {
            sizing,
            units,
            unit_secs: f64::from(plan.timing.runtime_s + plan.timing.ramp_s),
            servers,
            mounts: Vec::new(),
            logins: Vec::new(),
        },
    ))
}
