//! What a suite run is asked to do, from a plan's `[suite]` and `[[host]]` tables or from
//! `--suite NAME --hosts ...`; validated once ([`SuiteSpec::validate`]) and turned into the
//! `suites` crate's plans.
//!
//! ```toml
//! [bench]
//! name = "rack 3: disks"
//! runtime = "60s"          # per fio job (network: per iperf3 test; default 60s / 10s)
//! ramp = "2s"              # fio's ramp (network: iperf3's omitted start; default 2s / 1s)
//! iterations = 3           # fio suites (default 3)
//!
//! [suite]
//! kind = "disks"           # network | disks | nfs | iscsi | block | dir
//! ssh_options = ["-oPort=2222"]      # more ssh arguments, before qoslab's own (a plan's:
//!                                    # hosts::ssh::check_plan_options; an ssh config file
//!                                    # only on the command line, --ssh-config)
//! destroy_data = ["/dev/sdc"]        # disks/block/iscsi: overwrite these although they hold data
//! # network: rated_mbps, min_fraction (0.9), max_retransmits (100), base_port (30001)
//! # fio suites: jobs, host_jobs, all_hosts, prepare (true), size, numjobs, iodepth,
//! #             target_ram, fio_port (8765), max_cv
//!
//! [[host]]
//! name = "node1"           # an ssh destination
//! addr = "10.0.0.1"        # the data address peers use (default: ssh's HostName)
//! devices = ["/dev/sdb"]   # disks
//! target = "/mnt/nfs"      # nfs/dir: a directory; block/iscsi: a device;
//!                          # nfs: or an export, "nfs://SERVER/PATH?nfsport=P&mountport=P"
//!                          # (fio's nfs engine on the host, no kernel mount), or
//!                          # "mount+nfs://SERVER/PATH?nfsport=P&mountport=P&options=..."
//!                          # (the suite kernel-mounts it on the host: mount -t nfs);
//!                          # block/iscsi: or a LUN the suite logs in to on the host,
//!                          # "login+iscsi://HOST:PORT/IQN/LUN?initiator=NAME" (iscsiadm)
//! ```

use std::path::PathBuf;

use harness::plan::PlanError;
use serde::Deserialize;
use suites::disks::DisksPlan;
use suites::jobs::{SeedJob, Timing};
use suites::network::NetworkPlan;
use suites::sizing::Overrides;
use suites::storage::{StorageKind, StoragePlan};

/// The suites `--suite` accepts.
pub const KINDS: [&str; 6] = ["network", "disks", "nfs", "iscsi", "block", "dir"];

/// Which suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Network,
    Disks,
    Storage(StorageKind),
}

impl Kind {
    pub fn parse(s: &str) -> Result<Kind, String> {
        match s {
            "network" => Ok(Kind::Network),
            "disks" => Ok(Kind::Disks),
            other => StorageKind::parse(other)
                .map(Kind::Storage)
                .map_err(|_| format!("{other:?}: allowed {}", KINDS.join(", "))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Network => "network",
            Kind::Disks => "disks",
            Kind::Storage(k) => k.name(),
        }
    }

    /// Tools every host needs besides a shell.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            Kind::Network => &["iperf3"],
            Kind::Disks | Kind::Storage(StorageKind::Block | StorageKind::Iscsi) => {
                &["fio", "wipefs"]
            }
            Kind::Storage(_) => &["fio"],
        }
    }
}

/// One host of the suite.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    pub name: String,
    pub addr: Option<String>,
    #[serde(default)]
    pub devices: Vec<String>,
    pub target: Option<String>,
}

/// A suite run, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteSpec {
    pub kind: Kind,
    pub hosts: Vec<HostSpec>,
    pub ssh_config: Option<PathBuf>,
    pub ssh_options: Vec<String>,
    pub destroy_data: Vec<String>,
    /// Seconds per test (None: the kind's default).
    pub runtime: Option<f64>,
    pub ramp: Option<f64>,
    pub iterations: Option<u32>,
    pub rated_mbps: Option<u64>,
    pub min_fraction: f64,
    pub max_retransmits: u64,
    pub base_port: u16,
    /// Device jobs (disks) or the job set (storage suites); None: the suite's defaults.
    pub jobs: Option<Vec<SeedJob>>,
    pub host_jobs: Option<Vec<SeedJob>>,
    pub all_hosts: bool,
    pub prepare: bool,
    pub overrides: Overrides,
    pub target_ram: Option<u64>,
    pub fio_port: u16,
    /// A verdict on each job's spread: IOPS CV over the iterations at most this, percent.
    pub max_cv: Option<f64>,
}

impl SuiteSpec {
    pub fn new(kind: Kind) -> SuiteSpec {
        SuiteSpec {
            kind,
            hosts: Vec::new(),
            ssh_config: None,
            ssh_options: Vec::new(),
            destroy_data: Vec::new(),
            runtime: None,
            ramp: None,
            iterations: None,
            rated_mbps: None,
            min_fraction: 0.9,
            max_retransmits: 100,
            base_port: 30001,
            jobs: None,
            host_jobs: None,
            all_hosts: false,
            prepare: true,
            overrides: Overrides::default(),
            target_ram: None,
            fio_port: 8765,
            max_cv: None,
        }
    }

    /// Seconds per test and ramp, with the kind's defaults (network: 10 s after a 1 s omit;
    /// fio suites: the seed's 60 s after a 2 s ramp).
    pub fn timing(&self) -> (u32, u32) {
        let (rt, rp) = match self.kind {
            Kind::Network => (10.0, 1.0),
            _ => (60.0, 2.0),
        };
        (
            self.runtime.unwrap_or(rt).round().max(1.0) as u32,
            self.ramp.unwrap_or(rp).round().max(0.0) as u32,
        )
    }

    pub fn iterations(&self) -> u32 {
        self.iterations.unwrap_or(match self.kind {
            Kind::Network => 1,
            _ => 3,
        })
    }

    /// The network suite's settings: two hosts at least, nothing to write.
    fn validate_network(&self, with_devices: &[&str], with_target: &[&str]) -> Result<(), String> {
        if self.hosts.len() < 2 {
            return Err("--suite network: needs at least 2 hosts".into());
        }
        if !(self.min_fraction > 0.0 && self.min_fraction <= 1.0) {
            return Err(format!(
                "min_fraction {}: allowed (0, 1]",
                self.min_fraction
            ));
        }
        if self.rated_mbps == Some(0) {
            return Err("rated_mbps 0: give the link speed in Mbit/s".into());
        }
        if usize::from(self.base_port) + self.hosts.len() > 65535 || self.base_port < 1024 {
            return Err(format!(
                "base_port {}: allowed 1024 .. 65535 - hosts",
                self.base_port
            ));
        }
        if let Some(h) = with_devices.first().or(with_target.first()) {
            return Err(format!(
                "--suite network: host {h} has devices or a target; the network suite writes nothing"
            ));
        }
        Ok(())
    }

    /// A storage suite's targets: one per host, of its kind (an NFS export only for the
    /// nfs suite).
    fn validate_storage(&self, k: StorageKind, with_devices: &[&str]) -> Result<(), String> {
        if let Some(h) = self.hosts.iter().find(|h| h.target.is_none()) {
            return Err(format!(
                "--suite {}: host {} has no target (give --targets HOST:{},... or target = ... in [[host]])",
                k.name(),
                h.name,
                if matches!(k, StorageKind::Block | StorageKind::Iscsi) {
                    "DEVICE"
                } else {
                    "DIR"
                }
            ));
        }
        if let Some(h) = with_devices.first() {
            return Err(format!(
                "--suite {}: host {h} has devices; give each load generator one target",
                k.name()
            ));
        }
        for h in &self.hosts {
            let t = h.target.as_deref().unwrap_or("");
            if suites::iscsi_login::is_login_url(t) {
                if !matches!(k, StorageKind::Iscsi | StorageKind::Block) {
                    return Err(format!(
                        "--suite {}: host {}: target {t:?} is an iSCSI LUN to log in to; that is --suite iscsi or block",
                        k.name(),
                        h.name
                    ));
                }
                let u = suites::iscsi_login::LoginUrl::parse(t)
                    .map_err(|e| format!("--targets: host {}: {t:?}: {e}", h.name))?;
                u.initiator_for(&h.name)
                    .map_err(|e| format!("--targets: host {}: {e}", h.name))?;
                // Two sessions with one initiator name replace each other at the target.
                let sharing = self
                    .hosts
                    .iter()
                    .filter(|o| o.target.as_deref() == Some(t))
                    .count();
                if sharing > 1 && !u.names_each_host() {
                    return Err(format!(
                        "--targets: {t:?} is given to {sharing} hosts with one initiator name: \
                         a target ends a session when another logs in with its name; put {} in \
                         initiator= (each host's name), or give each host its own target",
                        suites::iscsi_login::HOST_PLACEHOLDER
                    ));
                }
                continue;
            }
            if suites::nfs_mount::is_mount_url(t) {
                if k != StorageKind::Nfs {
                    return Err(format!(
                        "--suite {}: host {}: target {t:?} is an NFS export to kernel-mount; that is --suite nfs",
                        k.name(),
                        h.name
                    ));
                }
                suites::nfs_mount::MountUrl::parse(t)
                    .map_err(|e| format!("--targets: host {}: {t:?}: {e}", h.name))?;
                continue;
            }
            if !suites::storage::is_nfs_url(t) {
                continue;
            }
            if k != StorageKind::Nfs {
                return Err(format!(
                    "--suite {}: host {}: target {t:?} is an NFS export; fio's nfs engine runs in --suite nfs",
                    k.name(),
                    h.name
                ));
            }
            harness::nfs::check_url(t)
                .map_err(|e| format!("--targets: host {}: {t:?}: {e}", h.name))?;
        }
        Ok(())
    }

    /// Everything checked once; messages name the option or plan key.
    pub fn validate(&self) -> Result<(), String> {
        let kind = self.kind.name();
        if self.hosts.is_empty() {
            return Err(format!(
                "--suite {kind}: no hosts (give --hosts NAME[=ADDR],... or [[host]] tables)"
            ));
        }
        for (k, h) in self.hosts.iter().enumerate() {
            if self.hosts[..k].iter().any(|o| o.name == h.name) {
                return Err(format!("host {}: named twice", h.name));
            }
        }
        let (runtime, _) = self.timing();
        if let Some(r) = self.runtime {
            if !(1.0..=86_400.0).contains(&r) {
                return Err(format!("runtime {r} s: allowed 1 s .. 24 h"));
            }
        }
        if runtime == 0 {
            return Err("runtime: at least 1 s".into());
        }
        if let Some(n) = self.iterations {
            if !(1..=100).contains(&n) {
                return Err(format!("iterations {n}: allowed 1 .. 100"));
            }
        }
        if let Some(c) = self.max_cv {
            if !(c > 0.0 && c <= 100.0) {
                return Err(format!("max_cv {c}: allowed a percentage in (0, 100]"));
            }
        }
        let with_devices: Vec<&str> = self
            .hosts
            .iter()
            .filter(|h| !h.devices.is_empty())
            .map(|h| h.name.as_str())
            .collect();
        let with_target: Vec<&str> = self
            .hosts
            .iter()
            .filter(|h| h.target.is_some())
            .map(|h| h.name.as_str())
            .collect();
        match self.kind {
            Kind::Network => self.validate_network(&with_devices, &with_target)?,
            Kind::Disks => {
                if with_devices.is_empty() {
                    return Err(
                        "--suite disks: no devices (give --devices HOST:DEVICE,... or devices = [...] in [[host]])"
                            .into(),
                    );
                }
                if let Some(h) = with_target.first() {
                    return Err(format!(
                        "--suite disks: host {h} has a target; the disks suite takes devices"
                    ));
                }
            }
            Kind::Storage(k) => self.validate_storage(k, &with_devices)?,
        }
        if self.fio_port < 1024 {
            return Err(format!("fio_port {}: allowed 1024 .. 65535", self.fio_port));
        }
        Ok(())
    }

    /// The ssh arguments every call gets (the user's, before qoslab's own).
    pub fn ssh_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(c) = &self.ssh_config {
            a.push("-F".to_string());
            a.push(c.display().to_string());
        }
        a.extend(self.ssh_options.iter().cloned());
        a
    }

    /// `--hosts`' form: `h0,h1=10.0.0.2`.
    pub fn host_list(&self) -> String {
        self.hosts
            .iter()
            .map(|h| match &h.addr {
                Some(a) => format!("{}={a}", h.name),
                None => h.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn network_plan(&self) -> NetworkPlan {
        let (seconds, omit_s) = self.timing();
        NetworkPlan {
            seconds,
            omit_s,
            rated_mbps: self.rated_mbps,
            min_fraction: self.min_fraction,
            max_retransmits: self.max_retransmits,
            base_port: self.base_port,
            connectivity: true,
            under_load: true,
        }
    }

    fn fio_timing(&self) -> Timing {
        let (runtime_s, ramp_s) = self.timing();
        Timing { runtime_s, ramp_s }
    }

    pub fn disks_plan(&self) -> DisksPlan {
        let d = DisksPlan::default();
        DisksPlan {
            devices: self
                .hosts
                .iter()
                .filter(|h| !h.devices.is_empty())
                .map(|h| (h.name.clone(), h.devices.clone()))
                .collect(),
            destroy_data: self.destroy_data.clone(),
            device_jobs: self.jobs.clone().unwrap_or(d.device_jobs),
            host_jobs: self.host_jobs.clone().unwrap_or(d.host_jobs),
            all_hosts: self.all_hosts,
            iterations: self.iterations(),
            timing: self.fio_timing(),
            prefill: self.prepare,
            overrides: self.overrides,
            fio_port: self.fio_port,
        }
    }

    pub fn storage_plan(&self, kind: StorageKind) -> StoragePlan {
        let mut p = StoragePlan::new(kind);
        p.targets = self
            .hosts
            .iter()
            .filter_map(|h| h.target.clone().map(|t| (h.name.clone(), t)))
            .collect();
        p.destroy_data = self.destroy_data.clone();
        if let Some(j) = &self.jobs {
            p.jobs = j.clone();
        }
        p.iterations = self.iterations();
        p.timing = self.fio_timing();
        p.prepare = self.prepare;
        p.overrides = self.overrides;
        p.target_ram_bytes = self.target_ram;
        p.fio_port = self.fio_port;
        p
    }

    /// The plan text stored with the run (the equivalent plan file).
    pub fn describe(&self) -> String {
        let q = |s: &str| format!("{s:?}");
        let list = |v: &[String]| {
            format!(
                "[{}]",
                v.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
            )
        };
        let (runtime, ramp) = self.timing();
        let mut t = format!(
            "# qoslab bench --suite {}\n[bench]\nruntime = \"{runtime}s\"\nramp = \"{ramp}s\"\niterations = {}\n\n[suite]\nkind = {}\n",
            self.kind.name(),
            self.iterations(),
            q(self.kind.name())
        );
        if let Some(c) = &self.ssh_config {
            t.push_str(&format!("ssh_config = {}\n", q(&c.display().to_string())));
        }
        if !self.ssh_options.is_empty() {
            t.push_str(&format!("ssh_options = {}\n", list(&self.ssh_options)));
        }
        if !self.destroy_data.is_empty() {
            t.push_str(&format!("destroy_data = {}\n", list(&self.destroy_data)));
        }
        match self.kind {
            Kind::Network => {
                if let Some(r) = self.rated_mbps {
                    t.push_str(&format!("rated_mbps = {r}\n"));
                }
                t.push_str(&format!(
                    "min_fraction = {}\nmax_retransmits = {}\nbase_port = {}\n",
                    self.min_fraction, self.max_retransmits, self.base_port
                ));
            }
            _ => {
                let names =
                    |v: &[SeedJob]| v.iter().map(|j| j.name().to_string()).collect::<Vec<_>>();
                if let Some(j) = &self.jobs {
                    t.push_str(&format!("jobs = {}\n", list(&names(j))));
                }
                if let Some(j) = &self.host_jobs {
                    t.push_str(&format!("host_jobs = {}\n", list(&names(j))));
                }
                if self.all_hosts {
                    t.push_str("all_hosts = true\n");
                }
                if !self.prepare {
                    t.push_str("prepare = false\n");
                }
                if let Some(s) = self.overrides.size_bytes {
                    t.push_str(&format!("size = \"{s}B\"\n"));
                }
                if let Some(n) = self.overrides.numjobs {
                    t.push_str(&format!("numjobs = {n}\n"));
                }
                if let Some(n) = self.overrides.iodepth {
                    t.push_str(&format!("iodepth = {n}\n"));
                }
                if let Some(r) = self.target_ram {
                    t.push_str(&format!("target_ram = \"{r}B\"\n"));
                }
                if let Some(c) = self.max_cv {
                    t.push_str(&format!("max_cv = {c}\n"));
                }
                t.push_str(&format!("fio_port = {}\n", self.fio_port));
            }
        }
        for h in &self.hosts {
            t.push_str(&format!("\n[[host]]\nname = {}\n", q(&h.name)));
            if let Some(a) = &h.addr {
                t.push_str(&format!("addr = {}\n", q(a)));
            }
            if !h.devices.is_empty() {
                t.push_str(&format!("devices = {}\n", list(&h.devices)));
            }
            if let Some(x) = &h.target {
                t.push_str(&format!("target = {}\n", q(x)));
            }
        }
        t
    }
}

/// `[suite]` as written in a plan.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSuite {
    pub kind: String,
    pub ssh_config: Option<PathBuf>,
    #[serde(default)]
    pub ssh_options: Vec<String>,
    #[serde(default)]
    pub destroy_data: Vec<String>,
    pub rated_mbps: Option<u64>,
    pub min_fraction: Option<f64>,
    pub max_retransmits: Option<u64>,
    pub base_port: Option<u16>,
    pub jobs: Option<Vec<String>>,
    pub host_jobs: Option<Vec<String>>,
    pub all_hosts: Option<bool>,
    pub prepare: Option<bool>,
    pub size: Option<String>,
    pub numjobs: Option<u32>,
    pub iodepth: Option<u32>,
    pub target_ram: Option<String>,
    pub fio_port: Option<u16>,
    pub max_cv: Option<f64>,
}

/// A list of the seed's job names.
pub fn seed_jobs(names: &[String]) -> Result<Vec<SeedJob>, String> {
    names.iter().map(|n| SeedJob::parse(n)).collect()
}

/// A size (`16MiB`, `4GiB`, `1000000`).
pub fn size(s: &str) -> Result<u64, String> {
    qos_core::parse_size(s).map_err(|e| e.to_string())
}

impl RawSuite {
    /// The spec these tables ask for (hosts and [bench] timing added by the caller).
    pub fn spec(&self, hosts: Vec<HostSpec>) -> Result<SuiteSpec, PlanError> {
        let bad = |k: &str, e: String| PlanError(format!("suite.{k}: {e}"));
        let kind = Kind::parse(&self.kind).map_err(|e| bad("kind", e))?;
        let mut s = SuiteSpec::new(kind);
        s.hosts = hosts;
        s.ssh_config = self.ssh_config.clone();
        s.ssh_options = self.ssh_options.clone();
        s.destroy_data = self.destroy_data.clone();
        s.rated_mbps = self.rated_mbps;
        if let Some(f) = self.min_fraction {
            s.min_fraction = f;
        }
        if let Some(r) = self.max_retransmits {
            s.max_retransmits = r;
        }
        if let Some(p) = self.base_port {
            s.base_port = p;
        }
        if let Some(j) = &self.jobs {
            s.jobs = Some(seed_jobs(j).map_err(|e| bad("jobs", e))?);
        }
        if let Some(j) = &self.host_jobs {
            s.host_jobs = Some(seed_jobs(j).map_err(|e| bad("host_jobs", e))?);
        }
        s.all_hosts = self.all_hosts.unwrap_or(false);
        s.prepare = self.prepare.unwrap_or(true);
        if let Some(z) = &self.size {
            s.overrides.size_bytes = Some(size(z).map_err(|e| bad("size", e))?);
        }
        s.overrides.numjobs = self.numjobs;
        s.overrides.iodepth = self.iodepth;
        if let Some(r) = &self.target_ram {
            s.target_ram = Some(size(r).map_err(|e| bad("target_ram", e))?);
        }
        if let Some(p) = self.fio_port {
            s.fio_port = p;
        }
        s.max_cv = self.max_cv;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> HostSpec {
        HostSpec {
            name: name.into(),
            addr: None,
            devices: Vec::new(),
            target: None,
        }
    }

    #[test]
    fn each_kind_checks_what_it_needs() {
        let mut s = SuiteSpec::new(Kind::Network);
        assert!(s.validate().unwrap_err().contains("no hosts"));
        s.hosts = vec![host("a")];
        assert!(s.validate().unwrap_err().contains("at least 2 hosts"));
        s.hosts.push(host("b"));
        s.validate().unwrap();
        assert_eq!(s.timing(), (10, 1));
        s.hosts[1].devices = vec!["/dev/sdb".into()];
        assert!(s.validate().unwrap_err().contains("writes nothing"));
        s.kind = Kind::Disks;
        s.validate().unwrap();
        assert_eq!((s.timing(), s.iterations()), ((60, 2), 3));
        assert_eq!(
            s.disks_plan().devices,
            vec![("b".into(), vec!["/dev/sdb".into()])]
        );
        s.kind = Kind::Storage(StorageKind::Nfs);
        assert!(s.validate().unwrap_err().contains("host a has no target"));
        s.hosts[1].devices.clear();
        s.hosts[0].target = Some("/mnt/a".into());
        s.hosts[1].target = Some("/mnt/b".into());
        s.validate().unwrap();
        assert_eq!(s.storage_plan(StorageKind::Nfs).targets.len(), 2);
        s.hosts[1].target = Some("nfs://10.0.0.1".into());
        assert!(s.validate().unwrap_err().contains("export path is missing"));
        s.hosts[1].target = Some("nfs://10.0.0.1/nas?nfsport=2049&mountport=2049".into());
        s.validate().unwrap();
        s.kind = Kind::Storage(StorageKind::Dir);
        assert!(s
            .validate()
            .unwrap_err()
            .contains("fio's nfs engine runs in --suite nfs"));
        s.hosts.push(host("a"));
        assert!(s.validate().unwrap_err().contains("named twice"));
        assert_eq!(
            Kind::parse("nope").unwrap_err(),
            "\"nope\": allowed network, disks, nfs, iscsi, block, dir"
        );
    }
}
