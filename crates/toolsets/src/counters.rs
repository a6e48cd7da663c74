//! One instant's cumulative counters, parsed from a [`RawSnapshot`] by procfs-core.

use std::collections::HashMap;

use procfs_core::net::{DeviceStatus, InterfaceDeviceStatus};
use procfs_core::process::Stat;
use procfs_core::{
    DiskStat, DiskStats, ExplicitSystemInfo, FromRead, FromReadSI, KernelStats, Meminfo, Uptime,
    VmStat,
};

use crate::pressure::{CgroupTotals, Totals};
use crate::source::{HostConsts, JobFiles, RawSnapshot, SourceError};

/// A process's cumulative CPU, in clock ticks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcTimes {
    pub pid: i32,
    pub ppid: i32,
    pub comm: String,
    /// utime + stime.
    pub own: u64,
    /// cutime + cstime: reaped children.
    pub children: u64,
    /// Start, clock ticks after boot.
    pub starttime: u64,
    /// The CPU it last ran on.
    pub processor: Option<i32>,
    /// Resident set size, bytes (the whole process's, also on a thread's line).
    pub rss_bytes: u64,
}

/// Cumulative counters at one instant.
#[derive(Debug, Clone)]
pub struct Counters {
    /// Seconds since boot (`/proc/uptime`): the clock the rates are computed on, as iostat does.
    pub uptime_s: f64,
    pub kernel: KernelStats,
    pub mem: Meminfo,
    /// pswpin, pswpout (pages), pgpgin, pgpgout (KiB) from `/proc/vmstat` (0 when absent).
    pub swap_in: u64,
    pub swap_out: u64,
    pub page_in: u64,
    pub page_out: u64,
    pub disks: Vec<DiskStat>,
    pub nics: HashMap<String, DeviceStatus>,
    pub procs: Vec<ProcTimes>,
    /// The threads of the process [`crate::Roles::split_pid`] names (pid = thread id), when
    /// the source could read them.
    pub threads: Vec<ProcTimes>,
    /// The host's pressure stall totals (None on a kernel without PSI).
    pub pressure: Option<Totals>,
    /// Bytes the job's processes caused to be read from and written to storage
    /// (`/proc/PID/io` read_bytes, write_bytes less cancelled_write_bytes), by pid.
    pub job_io: HashMap<i32, u64>,
    /// The pressure totals of the job's processes' cgroups.
    pub cgroups: Vec<CgroupTotals>,
}

/// `stat` lines (of processes, or of one process's threads) as [`ProcTimes`]. A line that
/// does not parse (a process caught mid-exit, a comm holding a newline) is skipped: one
/// process's figure, never the sample.
pub fn parse_stat_lines(raw: &[u8], page_size: u64) -> Vec<ProcTimes> {
    let mut procs = Vec::new();
    for line in raw.split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        if let Ok(s) = Stat::from_read(line) {
            procs.push(ProcTimes {
                pid: s.pid,
                ppid: s.ppid,
                comm: s.comm,
                own: s.utime + s.stime,
                children: (s.cutime.max(0) + s.cstime.max(0)) as u64,
                starttime: s.starttime,
                processor: s.processor,
                rss_bytes: s.rss.saturating_mul(page_size),
            });
        }
    }
    procs
}

fn parse_err(what: &str, e: impl std::fmt::Display) -> SourceError {
    SourceError::Malformed {
        what: what.to_string(),
        detail: e.to_string(),
    }
}

impl Counters {
    pub fn parse(raw: &RawSnapshot, consts: HostConsts) -> Result<Counters, SourceError> {
        let si = ExplicitSystemInfo {
            boot_time_secs: 0,
            ticks_per_second: consts.ticks_per_second,
            page_size: consts.page_size,
            is_little_endian: cfg!(target_endian = "little"),
        };
        let uptime =
            Uptime::from_read(&raw.uptime[..]).map_err(|e| parse_err("/proc/uptime", e))?;
        let kernel = <KernelStats as FromReadSI>::from_read(&raw.stat[..], &si)
            .map_err(|e| parse_err("/proc/stat", e))?;
        let mem =
            Meminfo::from_read(&raw.meminfo[..]).map_err(|e| parse_err("/proc/meminfo", e))?;
        let vm = VmStat::from_read(&raw.vmstat[..]).map_err(|e| parse_err("/proc/vmstat", e))?;
        let vmv = |k: &str| vm.0.get(k).copied().unwrap_or(0).max(0) as u64;
        let disks = DiskStats::from_read(&raw.diskstats[..])
            .map_err(|e| parse_err("/proc/diskstats", e))?
            .0;
        let nics = InterfaceDeviceStatus::from_read(&raw.net_dev[..])
            .map_err(|e| parse_err("/proc/net/dev", e))?
            .0;
        let procs = parse_stat_lines(&raw.processes, consts.page_size);
        let pressure = Totals::parse("/proc/pressure", &raw.psi_cpu, &raw.psi_io, &raw.psi_memory)?;
        Ok(Counters {
            uptime_s: uptime.uptime,
            kernel,
            mem,
            swap_in: vmv("pswpin"),
            swap_out: vmv("pswpout"),
            page_in: vmv("pgpgin"),
            page_out: vmv("pgpgout"),
            disks,
            nics,
            procs,
            threads: Vec::new(),
            pressure,
            job_io: HashMap::new(),
            cgroups: Vec::new(),
        })
    }

    /// Adds what [`crate::ProcSource::job_files`] read. A file that does not parse costs
    /// that process's or cgroup's figure, never the sample.
    pub fn add_job_files(&mut self, files: &JobFiles) {
        use procfs_core::FromRead;
        for (pid, raw) in &files.io {
            if let Ok(io) = procfs_core::process::Io::from_read(&raw[..]) {
                let written = io.write_bytes.saturating_sub(io.cancelled_write_bytes);
                self.job_io.insert(*pid, io.read_bytes + written);
            }
        }
        for c in &files.cgroups {
            let scope = format!("cgroup {}", c.path);
            if let Ok(Some(totals)) = Totals::parse(&scope, &c.cpu, &c.io, &c.memory) {
                self.cgroups.push(CgroupTotals {
                    path: c.path.clone(),
                    pids: c.pids.clone(),
                    totals,
                });
            }
        }
    }
}
