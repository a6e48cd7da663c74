//! A host's tool-set series reduced to the figures a diagnosis reads, over one job's window.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toolsets::{CgroupPressure, HostSample, HostSeries, Pressure, Role};

use crate::stats::{linear_fit, mean};

/// One block device over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskFigures {
    pub name: String,
    /// Mean %util over the window's samples (a sample without the device counts as idle).
    pub util_pct: f64,
    /// Mean await (both directions, weighted by I/Os), ms, over samples with I/O.
    pub await_ms: f64,
    /// The least-squares line of await across the window: its change from the first to the
    /// last sample, percent of the mean await (positive: rising).
    pub await_change_pct: f64,
    /// Mean r/s + w/s and MB/s.
    pub iops: f64,
    pub mb_s: f64,
}

/// One NIC over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NicFigures {
    pub name: String,
    pub speed_mbit: Option<u64>,
    /// Mean utilisation of the busier direction, percent of the link speed.
    pub util_pct: Option<f64>,
    /// Mean packets dropped per second, both directions.
    pub drops_s: f64,
}

/// One host over one job's window. CPU figures of processes are percent of one core
/// (pidstat: 150 = a core and a half); host figures are percent of all CPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFigures {
    pub host: String,
    pub ncpus: u32,
    /// Tool-set samples in the window.
    pub samples: usize,
    /// Mean idle (idle + iowait) and steal, percent of all CPUs.
    pub idle_pct: f64,
    pub steal_pct: f64,
    /// Mean CPU of all fio processes together, and of the busiest single one.
    pub fio_pct: f64,
    pub fio_max_proc_pct: f64,
    /// Mean idle of the CPUs fio ran on (its last CPU at each sample), percent: a fio pinned
    /// beside a busy process sees none, however idle the rest of the host is. None without
    /// fio processes.
    pub fio_cpus_idle_pct: Option<f64>,
    pub node_pct: f64,
    /// Mean CPU of processes that are neither fio, the node, the harness nor kernel threads.
    pub other_pct: f64,
    /// The sample where others took most: their CPU then, and the host's idle then.
    pub other_peak_pct: f64,
    pub other_peak_idle_pct: f64,
    /// The busiest other process over the window: "name (pid)" and its mean CPU.
    pub busiest_other: Option<(String, f64)>,
    /// Devices that matter (those given, or all that saw I/O), busiest first.
    pub disks: Vec<DiskFigures>,
    pub nics: Vec<NicFigures>,
    /// Mean CPU of the harness's processes and of kernel threads, percent of one core.
    #[serde(default)]
    pub harness_pct: f64,
    #[serde(default)]
    pub kernel_pct: f64,
    /// Runnable tasks (vmstat's r): mean and largest over the window.
    #[serde(default)]
    pub run_queue_mean: f64,
    #[serde(default)]
    pub run_queue_max: u32,
    /// The host's pressure stall shares over the window: each sample's stalls summed over
    /// their intervals summed (None: a kernel without PSI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<Pressure>,
    /// The same for the cgroups (v2) that held fio and the node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<CgroupPressure>,
    /// Mean bytes/s fio's and the node's processes moved to and from storage (None: the
    /// source could not read their I/O counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_io_bytes_s: Option<f64>,
}

impl HostFigures {
    /// CPU the job (fio, the node, the harness) did not use, percent of one core: other
    /// processes, kernel threads, interrupts, steal, and whatever this host's `/proc` does
    /// not show (another container's processes).
    pub fn not_the_jobs_pct(&self) -> f64 {
        let busy = (100.0 - self.idle_pct).max(0.0) * self.ncpus.max(1) as f64;
        (busy - self.fio_pct - self.node_pct - self.harness_pct).max(0.0)
    }

    /// The pressure the job itself felt: the highest of its own cgroups' (when they are
    /// not the root, whose pressure is the host's), else the host's; with whose it is.
    pub fn job_pressure(&self) -> Option<(Pressure, String)> {
        let own = self
            .cgroups
            .iter()
            .filter(|c| c.path != "/")
            .max_by(|a, b| a.pressure.cpu_some.total_cmp(&b.pressure.cpu_some));
        match own {
            Some(c) => {
                let who: Vec<&str> = c.roles.iter().map(|r| r.as_str()).collect();
                Some((
                    c.pressure,
                    format!("{}'s cgroup {} on {}", who.join(" and "), c.path, self.host),
                ))
            }
            None => self.pressure.map(|p| (p, self.host.clone())),
        }
    }
}

/// The samples of `series` that belong to the window [from_ms, to_ms] (sampler clock): those
/// whose interval's midpoint lies inside it, or, when the window is shorter than a sample,
/// the one sample that covers most of it.
pub fn window(series: &HostSeries, from_ms: u64, to_ms: u64) -> Vec<&HostSample> {
    let mid = |s: &HostSample| s.t_ms as f64 - s.interval_ms as f64 / 2.0;
    let inside: Vec<&HostSample> = series
        .samples
        .iter()
        .filter(|s| (from_ms as f64..=to_ms as f64).contains(&mid(s)))
        .collect();
    if !inside.is_empty() {
        return inside;
    }
    let centre = (from_ms + to_ms) as f64 / 2.0;
    series
        .samples
        .iter()
        .filter(|s| s.t_ms >= from_ms && s.t_ms.saturating_sub(s.interval_ms) <= to_ms)
        .min_by(|a, b| (mid(a) - centre).abs().total_cmp(&(mid(b) - centre).abs()))
        .into_iter()
        .collect()
}

/// Reduces a host's samples in the window. `devices`: the block devices behind the target
/// (empty: every device that saw I/O).
pub fn summarize(series: &HostSeries, from_ms: u64, to_ms: u64, devices: &[String]) -> HostFigures {
    let w = window(series, from_ms, to_ms);
    let n = w.len();
    let avg = |f: &dyn Fn(&HostSample) -> f64| {
        mean(&w.iter().map(|s| f(s)).collect::<Vec<_>>()).unwrap_or(0.0)
    };

    // The busiest fio process and the busiest other, by their mean over the window.
    let mut per_proc: BTreeMap<(Role, i32, String), f64> = BTreeMap::new();
    for s in &w {
        for p in &s.procs {
            *per_proc.entry((p.role, p.pid, p.name.clone())).or_default() += p.cpu_pct;
        }
    }
    let busiest = |role: Role| {
        per_proc
            .iter()
            .filter(|((r, _, _), _)| *r == role)
            .map(|((_, pid, name), sum)| (format!("{name} ({pid})"), sum / n.max(1) as f64))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let peak = w
        .iter()
        .max_by(|a, b| a.roles.other.total_cmp(&b.roles.other));

    let disks = disk_figures(&w, devices);

    let nics = nic_figures(&w);

    let pressure = Pressure::over(
        &w.iter()
            .filter_map(|s| Some((s.pressure?, s.interval_ms as f64)))
            .collect::<Vec<_>>(),
    );
    let cgroups = cgroup_figures(&w);
    let job_io: Vec<f64> = w.iter().filter_map(|s| s.job_io_bytes_s()).collect();

    HostFigures {
        host: series.host.clone(),
        ncpus: series.ncpus,
        samples: n,
        idle_pct: avg(&|s| s.cpu.idle + s.cpu.iowait),
        steal_pct: avg(&|s| s.cpu.steal),
        fio_pct: avg(&|s| s.roles.fio),
        fio_max_proc_pct: busiest(Role::Fio).map(|b| b.1).unwrap_or(0.0),
        fio_cpus_idle_pct: mean(
            &w.iter()
                .filter_map(|s| s.fio_cpus_idle_pct())
                .collect::<Vec<_>>(),
        ),
        node_pct: avg(&|s| s.roles.node),
        other_pct: avg(&|s| s.roles.other),
        other_peak_pct: peak.map(|s| s.roles.other).unwrap_or(0.0),
        other_peak_idle_pct: peak.map(|s| s.cpu.idle + s.cpu.iowait).unwrap_or(100.0),
        busiest_other: busiest(Role::Other),
        disks,
        nics,
        harness_pct: avg(&|s| s.roles.harness),
        kernel_pct: avg(&|s| s.roles.kernel),
        run_queue_mean: avg(&|s| s.run_queue as f64),
        run_queue_max: w.iter().map(|s| s.run_queue).max().unwrap_or(0),
        pressure,
        cgroups,
        job_io_bytes_s: mean(&job_io),
    }
}

/// Each device's figures over the window (`devices`, or every device that saw I/O),
/// busiest first.
fn disk_figures(w: &[&HostSample], devices: &[String]) -> Vec<DiskFigures> {
    let avg = |f: &dyn Fn(&HostSample) -> f64| {
        mean(&w.iter().map(|s| f(s)).collect::<Vec<_>>()).unwrap_or(0.0)
    };
    let mut names: Vec<String> = devices.to_vec();
    if names.is_empty() {
        for s in w {
            for d in &s.disks {
                if !names.contains(&d.name) {
                    names.push(d.name.clone());
                }
            }
        }
    }
    let mut disks: Vec<DiskFigures> = names
        .into_iter()
        .map(|name| {
            let of = |s: &HostSample| s.disks.iter().find(|d| d.name == name).cloned();
            let util = avg(&|s| of(s).map(|d| d.util_pct).unwrap_or(0.0));
            let iops = avg(&|s| of(s).map(|d| d.r_s + d.w_s).unwrap_or(0.0));
            let mb_s = avg(&|s| of(s).map(|d| d.rmb_s + d.wmb_s).unwrap_or(0.0));
            let awaits: Vec<f64> = w
                .iter()
                .filter_map(|s| of(s).filter(|d| d.r_s + d.w_s > 0.0).map(|d| d.await_ms()))
                .collect();
            let await_ms = mean(&awaits).unwrap_or(0.0);
            let await_change_pct = match linear_fit(&awaits) {
                Some((slope, _)) if await_ms > 0.0 => {
                    slope * (awaits.len() - 1) as f64 / await_ms * 100.0
                }
                _ => 0.0,
            };
            DiskFigures {
                name,
                util_pct: util,
                await_ms,
                await_change_pct,
                iops,
                mb_s,
            }
        })
        .collect();
    disks.sort_by(|a, b| b.util_pct.total_cmp(&a.util_pct));
    disks
}

/// Each NIC's figures over the window.
fn nic_figures(w: &[&HostSample]) -> Vec<NicFigures> {
    let avg = |f: &dyn Fn(&HostSample) -> f64| {
        mean(&w.iter().map(|s| f(s)).collect::<Vec<_>>()).unwrap_or(0.0)
    };
    let mut nic_names: Vec<String> = Vec::new();
    for s in w {
        for x in &s.nics {
            if !nic_names.contains(&x.name) {
                nic_names.push(x.name.clone());
            }
        }
    }
    nic_names
        .into_iter()
        .map(|name| {
            let of = |s: &HostSample| s.nics.iter().find(|x| x.name == name).cloned();
            let speed = w.iter().find_map(|s| of(s).and_then(|x| x.speed_mbit));
            NicFigures {
                util_pct: speed.map(|_| avg(&|s| of(s).and_then(|x| x.util_pct()).unwrap_or(0.0))),
                drops_s: avg(&|s| of(s).map(|x| x.rx_drops_s + x.tx_drops_s).unwrap_or(0.0)),
                speed_mbit: speed,
                name,
            }
        })
        .collect()
}

/// Each cgroup's pressure over the window, with whose processes it held.
fn cgroup_figures(w: &[&HostSample]) -> Vec<CgroupPressure> {
    let mut cgroups: Vec<CgroupPressure> = Vec::new();
    let mut paths: Vec<&str> = Vec::new();
    for s in w {
        for c in &s.cgroups {
            if !paths.contains(&c.path.as_str()) {
                paths.push(&c.path);
            }
        }
    }
    for path in paths {
        let mut roles: Vec<Role> = Vec::new();
        let mut parts = Vec::new();
        for s in w {
            for c in s.cgroups.iter().filter(|c| c.path == path) {
                roles.extend(&c.roles);
                parts.push((c.pressure, s.interval_ms as f64));
            }
        }
        roles.sort();
        roles.dedup();
        if let Some(p) = Pressure::over(&parts) {
            cgroups.push(CgroupPressure {
                path: path.to_string(),
                roles,
                pressure: p,
            });
        }
    }
    cgroups
}
