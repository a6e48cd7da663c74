//! What one tool-set sample holds, and a host's series of them. Every figure is a rate or a
//! share over the interval that ends at `t_ms` (one second by default), computed as the
//! classic tools compute it: mpstat for CPUs, vmstat for the run queue and swapping,
//! `iostat -x` for disks, sar -n DEV for NICs, pidstat for processes.

use serde::{Deserialize, Serialize};

use crate::pressure::Pressure;
use crate::roles::Role;

/// CPU time shares over the interval, percent of that CPU (or, for the host total, of all
/// CPUs together: 100 = every CPU busy). `usr` includes nice; `irq` includes softirq.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPct {
    pub usr: f64,
    pub sys: f64,
    pub iowait: f64,
    pub irq: f64,
    pub steal: f64,
    pub idle: f64,
}

impl CpuPct {
    /// Everything but idle and iowait.
    pub fn busy(&self) -> f64 {
        (100.0 - self.idle - self.iowait).max(0.0)
    }
}

/// One block device over the interval, as `iostat -x` computes it from `/proc/diskstats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskRates {
    pub name: String,
    /// Reads / writes completed per second.
    pub r_s: f64,
    pub w_s: f64,
    /// MB/s read and written (MB = 2^20 bytes; sectors are 512 bytes).
    pub rmb_s: f64,
    pub wmb_s: f64,
    /// Mean time per completed read / write, queueing included, ms.
    pub r_await_ms: f64,
    pub w_await_ms: f64,
    /// Mean number of requests queued or in service (aqu-sz).
    pub aqu_sz: f64,
    /// Share of the interval with at least one request in flight, percent.
    pub util_pct: f64,
}

impl DiskRates {
    /// Mean time per completed request, both directions (iostat's `await`), ms.
    pub fn await_ms(&self) -> f64 {
        let n = self.r_s + self.w_s;
        if n > 0.0 {
            (self.r_await_ms * self.r_s + self.w_await_ms * self.w_s) / n
        } else {
            0.0
        }
    }
}

/// One network interface over the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NicRates {
    pub name: String,
    pub rx_bytes_s: f64,
    pub tx_bytes_s: f64,
    pub rx_packets_s: f64,
    pub tx_packets_s: f64,
    /// Packets dropped per second, received and sent.
    pub rx_drops_s: f64,
    pub tx_drops_s: f64,
    /// Link speed, Mb/s, when the link has one (not loopback or virtual links).
    pub speed_mbit: Option<u64>,
}

impl NicRates {
    /// The busier direction as a share of the link speed, percent (None without a speed).
    pub fn util_pct(&self) -> Option<f64> {
        let bits = self.rx_bytes_s.max(self.tx_bytes_s) * 8.0;
        self.speed_mbit
            .filter(|s| *s > 0)
            .map(|s| bits / (s as f64 * 1e6) * 100.0)
    }
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Fio => "fio",
            Role::Node => "node",
            Role::Harness => "harness",
            Role::Kernel => "kernel",
            Role::Other => "other",
        }
    }
}

/// One process's CPU over the interval, percent of one core (pidstat's %CPU: 150 = 1.5 cores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcCpu {
    pub pid: i32,
    pub name: String,
    pub role: Role,
    pub cpu_pct: f64,
    /// The CPU it last ran on when sampled (pinned processes always show theirs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cpu: Option<u32>,
    /// Resident memory at the sample, bytes (pidstat -r's RSS; None for a thread part,
    /// whose memory is its process's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Bytes per second it caused to be read from or written to storage (pidstat -d's
    /// kB_rd/s + kB_wr/s, from `/proc/PID/io`): read for fio's and the node's processes
    /// when the source can (None otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_bytes_s: Option<f64>,
}

/// CPU per role, percent of one core. Each process counts its own time plus the time of
/// children it reaped during the interval (cargo's rustc, a shell's short commands) that
/// were not already counted while they ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleCpu {
    pub fio: f64,
    pub node: f64,
    pub harness: f64,
    pub kernel: f64,
    pub other: f64,
}

/// One tool-set sample of one host (`Default`: an empty interval, every figure 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSample {
    /// End of the interval, ms since the sampler started.
    pub t_ms: u64,
    /// Length of the interval on the host's own clock, ms.
    pub interval_ms: u64,
    /// All CPUs together.
    pub cpu: CpuPct,
    /// Per CPU, in `/proc/stat` order.
    pub cpus: Vec<CpuPct>,
    /// Runnable tasks (`procs_running`, vmstat's r) and tasks blocked on I/O (b).
    pub run_queue: u32,
    pub blocked: u32,
    pub mem_used_bytes: u64,
    pub mem_available_bytes: u64,
    pub swap_used_bytes: u64,
    /// Pages swapped in / out per second (vmstat si/so in pages).
    pub swap_in_s: f64,
    pub swap_out_s: f64,
    /// KiB paged in / out per second (vmstat bi/bo).
    pub page_in_kib_s: f64,
    pub page_out_kib_s: f64,
    /// Devices with any I/O in the interval (an absent device was idle).
    pub disks: Vec<DiskRates>,
    /// Interfaces with any traffic in the interval.
    pub nics: Vec<NicRates>,
    pub roles: RoleCpu,
    /// fio's processes, the node, the harness, and the three busiest others.
    pub procs: Vec<ProcCpu>,
    /// The host's pressure stall shares over the interval (None: a kernel without PSI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<Pressure>,
    /// The pressure of the cgroups (v2) that hold fio's and the node's processes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<CgroupPressure>,
}

impl HostSample {
    /// The busiest fio process, percent of one core.
    pub fn fio_max_proc_pct(&self) -> f64 {
        self.procs
            .iter()
            .filter(|p| p.role == Role::Fio)
            .map(|p| p.cpu_pct)
            .fold(0.0, f64::max)
    }

    /// Idle (idle + iowait) of the CPUs fio's processes last ran on, percent, each CPU
    /// weighted by the CPU fio's processes on it used (fio's parent, nearly idle on another
    /// CPU than its pinned workers, does not dilute the workers' CPU); None without fio or
    /// per-CPU figures.
    pub fn fio_cpus_idle_pct(&self) -> Option<f64> {
        let mut weighted = 0.0;
        let mut weights = 0.0;
        let mut plain: Vec<f64> = Vec::new();
        let fio = self.procs.iter().filter(|p| p.role == Role::Fio);
        for (p, c) in fio.filter_map(|p| {
            let c = self.cpus.get(p.last_cpu? as usize)?;
            Some((p, c))
        }) {
            let idle = c.idle + c.iowait;
            weighted += idle * p.cpu_pct.max(0.0);
            weights += p.cpu_pct.max(0.0);
            plain.push(idle);
        }
        if weights > 0.0 {
            Some(weighted / weights)
        } else {
            (!plain.is_empty()).then(|| plain.iter().sum::<f64>() / plain.len() as f64)
        }
    }

    /// Bytes per second the job's processes (fio's, the node's) moved to and from storage;
    /// None when the source could not read their I/O counters.
    pub fn job_io_bytes_s(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .procs
            .iter()
            .filter(|p| matches!(p.role, Role::Fio | Role::Node))
            .filter_map(|p| p.io_bytes_s)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// The busiest process that is neither fio, the node, the harness nor a kernel thread.
    pub fn busiest_other(&self) -> Option<&ProcCpu> {
        self.procs
            .iter()
            .filter(|p| p.role == Role::Other)
            .max_by(|a, b| a.cpu_pct.total_cmp(&b.cpu_pct))
    }

    /// The sample as long-format rows: (metric, instance, value). Instance is a CPU number,
    /// a device, a NIC, a role or `pid:name`, or "" for host-wide figures.
    pub fn rows(&self) -> Vec<(&'static str, String, f64)> {
        let mut r: Vec<(&'static str, String, f64)> = Vec::new();
        let mut cpu = |inst: String, c: &CpuPct| {
            r.push(("cpu_usr_pct", inst.clone(), c.usr));
            r.push(("cpu_sys_pct", inst.clone(), c.sys));
            r.push(("cpu_iowait_pct", inst.clone(), c.iowait));
            r.push(("cpu_irq_pct", inst.clone(), c.irq));
            r.push(("cpu_steal_pct", inst.clone(), c.steal));
            r.push(("cpu_idle_pct", inst, c.idle));
        };
        cpu("all".into(), &self.cpu);
        for (i, c) in self.cpus.iter().enumerate() {
            cpu(i.to_string(), c);
        }
        let host = |m: &'static str, v: f64| (m, String::new(), v);
        r.push(host("run_queue", self.run_queue as f64));
        r.push(host("blocked", self.blocked as f64));
        r.push(host("mem_used_bytes", self.mem_used_bytes as f64));
        r.push(host("mem_available_bytes", self.mem_available_bytes as f64));
        r.push(host("swap_used_bytes", self.swap_used_bytes as f64));
        r.push(host("swap_in_pages_s", self.swap_in_s));
        r.push(host("swap_out_pages_s", self.swap_out_s));
        r.push(host("page_in_kib_s", self.page_in_kib_s));
        r.push(host("page_out_kib_s", self.page_out_kib_s));
        for d in &self.disks {
            let n = || d.name.clone();
            r.push(("disk_r_s", n(), d.r_s));
            r.push(("disk_w_s", n(), d.w_s));
            r.push(("disk_rmb_s", n(), d.rmb_s));
            r.push(("disk_wmb_s", n(), d.wmb_s));
            r.push(("disk_r_await_ms", n(), d.r_await_ms));
            r.push(("disk_w_await_ms", n(), d.w_await_ms));
            r.push(("disk_aqu_sz", n(), d.aqu_sz));
            r.push(("disk_util_pct", n(), d.util_pct));
        }
        for n in &self.nics {
            let i = || n.name.clone();
            r.push(("nic_rx_bytes_s", i(), n.rx_bytes_s));
            r.push(("nic_tx_bytes_s", i(), n.tx_bytes_s));
            r.push(("nic_rx_packets_s", i(), n.rx_packets_s));
            r.push(("nic_tx_packets_s", i(), n.tx_packets_s));
            r.push(("nic_rx_drops_s", i(), n.rx_drops_s));
            r.push(("nic_tx_drops_s", i(), n.tx_drops_s));
        }
        let roles = self.roles;
        for (role, v) in [
            ("fio", roles.fio),
            ("node", roles.node),
            ("harness", roles.harness),
            ("kernel", roles.kernel),
            ("other", roles.other),
        ] {
            r.push(("role_cpu_pct", role.into(), v));
        }
        for p in &self.procs {
            r.push(("proc_cpu_pct", format!("{}:{}", p.pid, p.name), p.cpu_pct));
            if let Some(io) = p.io_bytes_s {
                r.push(("proc_io_bytes_s", format!("{}:{}", p.pid, p.name), io));
            }
        }
        let mut psi = |inst: String, p: &Pressure| {
            r.push(("psi_cpu_some_pct", inst.clone(), p.cpu_some));
            r.push(("psi_cpu_full_pct", inst.clone(), p.cpu_full));
            r.push(("psi_io_some_pct", inst.clone(), p.io_some));
            r.push(("psi_io_full_pct", inst.clone(), p.io_full));
            r.push(("psi_memory_some_pct", inst.clone(), p.memory_some));
            r.push(("psi_memory_full_pct", inst, p.memory_full));
        };
        if let Some(p) = &self.pressure {
            psi(String::new(), p);
        }
        for c in &self.cgroups {
            psi(format!("cgroup:{}", c.path), &c.pressure);
        }
        r
    }
}

/// The sampler's own cost on a host: CPU time of its thread over the wall time it ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    pub cpu_s: f64,
    pub wall_s: f64,
    pub samples: u64,
}

impl Overhead {
    /// Percent of one core.
    pub fn pct_of_core(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.cpu_s / self.wall_s * 100.0
        } else {
            0.0
        }
    }
}

/// One host's samples over a sampling session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSeries {
    pub host: String,
    pub ncpus: u32,
    pub mem_total_bytes: u64,
    pub swap_total_bytes: u64,
    pub samples: Vec<HostSample>,
    /// The sampler thread's own CPU (for this host's reads, parsing and arithmetic).
    pub overhead: Overhead,
    /// Read or parse errors (the first few; a failed read skips that one sample).
    pub errors: Vec<String>,
}

/// The pressure of a cgroup (v2) that holds processes of the job: fio's, the node's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupPressure {
    /// The cgroup's path in the v2 hierarchy ("/" is the root: the whole machine's).
    pub path: String,
    /// Whose processes it holds (fio, node).
    pub roles: Vec<Role>,
    pub pressure: Pressure,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cpus: Vec<CpuPct>, procs: Vec<ProcCpu>) -> HostSample {
        HostSample {
            t_ms: 1000,
            interval_ms: 1000,
            cpus,
            procs,
            ..HostSample::default()
        }
    }

    fn fio(pid: i32, cpu_pct: f64, last_cpu: u32) -> ProcCpu {
        ProcCpu {
            pid,
            name: "fio".into(),
            role: Role::Fio,
            cpu_pct,
            last_cpu: Some(last_cpu),
            rss_bytes: None,
            io_bytes_s: None,
        }
    }

    fn idle(idle: f64) -> CpuPct {
        CpuPct {
            usr: 100.0 - idle,
            idle,
            ..CpuPct::default()
        }
    }

    #[test]
    fn fios_nearly_idle_parent_on_another_cpu_does_not_hide_its_starved_worker() {
        // The worker pinned to CPU 0 (no idle, half of it to a burner); the parent on CPU 1.
        let s = sample(
            vec![idle(0.0), idle(92.0)],
            vec![fio(10, 1.0, 1), fio(11, 50.0, 0)],
        );
        let v = s.fio_cpus_idle_pct().unwrap();
        assert!(v < 5.0, "{v}");
        // Without CPU use to weigh by, the plain mean.
        let s = sample(
            vec![idle(0.0), idle(92.0)],
            vec![fio(10, 0.0, 1), fio(11, 0.0, 0)],
        );
        assert_eq!(s.fio_cpus_idle_pct(), Some(46.0));
        assert_eq!(
            sample(vec![], vec![fio(10, 5.0, 0)]).fio_cpus_idle_pct(),
            None
        );
    }
}
