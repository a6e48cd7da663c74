//! The fio suites (disks, nfs/iscsi/block/dir) as a list of units prepared up front: each
//! unit is one fio client/server run over one or more hosts — a prefill or prepare step,
//! or one iteration of one measured job. A caller runs them one at a time
//! ([`Prepared::run_unit`]) and records each as it finishes (the harness family stores a
//! job per unit).

use std::path::Path;

use fio::JobFile;
use serde::Serialize;

use crate::fiorun::{self, FioRun, Servers};
use crate::jobs::SeedJob;
use crate::sizing::TargetSizing;
use crate::{Session, SuiteError};

/// What a unit does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum UnitKind {
    /// Writes the region the jobs use (a device's prefill, the seed's prepare-set.fio).
    Prepare,
    /// One iteration of a measured job.
    Measure { iteration: u32 },
}

/// One fio run over `parts`.
#[derive(Debug, Clone)]
pub struct Unit {
    /// `device`, `host`, `cluster`, or the storage kind (`block`, `nfs`, ...); `prefill` or
    /// `prepare` for preparation.
    pub stage: String,
    /// The seed's job (None for preparation).
    pub job: Option<SeedJob>,
    pub kind: UnitKind,
    /// (host index, job file, block devices whose iostat is recorded).
    pub parts: Vec<(usize, JobFile, Vec<String>)>,
    pub hosts: Vec<String>,
    /// What each host's job addresses (devices joined by `:`, a directory, or an NFS
    /// export's URL without its options).
    pub targets: Vec<String>,
}

impl Unit {
    pub fn new(
        s: &Session,
        stage: &str,
        job: Option<SeedJob>,
        kind: UnitKind,
        parts: Vec<(usize, JobFile, Vec<String>)>,
    ) -> Unit {
        let hosts = parts
            .iter()
            .map(|(i, _, _)| s.hosts[*i].name.clone())
            .collect();
        let targets = parts
            .iter()
            .map(|(_, jf, devs)| {
                if devs.is_empty() {
                    jf.effective(0, "directory")
                        .or_else(|| {
                            // fio's nfs engine: the export, without libnfs's ?port options.
                            jf.effective(0, "nfs_url")
                                .map(|u| u.split('?').next().unwrap_or(u))
                        })
                        .unwrap_or("?")
                        .to_string()
                } else {
                    devs.join(":")
                }
            })
            .collect();
        Unit {
            stage: stage.into(),
            job,
            kind,
            parts,
            hosts,
            targets,
        }
    }

    /// The job's name (the seed's file name, or the stage for preparation).
    pub fn job_name(&self) -> &str {
        self.job.map_or(self.stage.as_str(), |j| j.name())
    }

    /// `h0:/dev/loop0` or `h0+h1:/dev/a+/dev/b`.
    pub fn place(&self) -> String {
        format!("{}:{}", self.hosts.join("+"), self.targets.join("+"))
    }

    /// "device fio.read.random on h0:/dev/loop0 #2".
    pub fn label(&self) -> String {
        match self.kind {
            UnitKind::Prepare => format!("{} {}", self.stage, self.place()),
            UnitKind::Measure { iteration } => format!(
                "{} {} on {} #{iteration}",
                self.stage,
                self.job_name(),
                self.place()
            ),
        }
    }

    pub fn iteration(&self) -> u32 {
        match self.kind {
            UnitKind::Prepare => 0,
            UnitKind::Measure { iteration } => iteration,
        }
    }
}

/// A fio suite ready to run: targets checked, sizing shown, servers listening, units listed.
pub struct Prepared {
    pub sizing: Vec<TargetSizing>,
    pub units: Vec<Unit>,
    /// Seconds a measured unit takes (runtime + ramp), for progress.
    pub unit_secs: f64,
    pub servers: Servers,
    /// Exports the suite kernel-mounted (after `servers`: fio stops before they unmount).
    pub mounts: Vec<crate::nfs_mount::Mounted>,
    /// LUNs the suite logged in to (after `servers`: fio stops before they log out).
    pub logins: Vec<crate::iscsi_login::Attached>,
}

impl Prepared {
    /// Run unit `k`; `logs` asks fio for its 500 ms windows (a directory here and a prefix).
    pub fn run_unit(
        &self,
        s: &Session,
        k: usize,
        logs: Option<(&Path, &str)>,
    ) -> Result<FioRun, SuiteError> {
        let u = &self.units[k];
        let label = format!("u{k}-{}", u.stage);
        let ran = fiorun::run(s, &self.servers, &u.parts, &label, logs)?;
        let (per_client, merged) = fiorun::split(&ran.output);
        let r = FioRun {
            stage: u.stage.clone(),
            job: u.job_name().to_string(),
            iteration: u.iteration(),
            hosts: u.hosts.clone(),
            targets: u.targets.clone(),
            per_client,
            merged,
            iostat: ran.iostat,
            vmstat: ran.vmstat,
            job_files: u.parts.iter().map(|(_, jf, _)| jf.render()).collect(),
            steady: fiorun::steady_of(&ran.series),
            series: ran.series,
            output: ran.output,
        };
        s.say(&format!(
            "{}: {:.0} IOPS, {:.1} MiB/s",
            u.label(),
            r.iops(),
            r.mib_s()
        ));
        Ok(r)
    }
}
