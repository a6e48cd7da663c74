//! From two instants' counters to one sample of rates: pure arithmetic, the classic tools'
//! formulas (checked against sysstat's `iostat.c`/`rd_stats.c` and procps' vmstat).

use std::collections::HashMap;

use procfs_core::CpuTime;

use crate::counters::{Counters, ProcTimes};
use crate::pressure::Pressure;
use crate::roles::Role;
use crate::roles::Roles;
use crate::sample::CgroupPressure;
use crate::sample::{CpuPct, DiskRates, HostSample, NicRates, ProcCpu, RoleCpu};

/// A counter's increase; a counter that went back (device removed and re-added, wrap) counts
/// as no increase, as sysstat does.
fn d(cur: u64, prev: u64) -> u64 {
    cur.saturating_sub(prev)
}

fn cpu_pct(cur: &CpuTime, prev: &CpuTime) -> CpuPct {
    let o = |v: Option<u64>| v.unwrap_or(0);
    // guest and guest_nice are already inside user and nice (proc(5)).
    let usr = d(cur.user, prev.user) + d(cur.nice, prev.nice);
    let sys = d(cur.system, prev.system);
    let idle = d(cur.idle, prev.idle);
    // iowait may go backwards (proc(5)): clamped.
    let iowait = d(o(cur.iowait), o(prev.iowait));
    let irq = d(o(cur.irq), o(prev.irq)) + d(o(cur.softirq), o(prev.softirq));
    let steal = d(o(cur.steal), o(prev.steal));
    let total = usr + sys + idle + iowait + irq + steal;
    if total == 0 {
        return CpuPct {
            idle: 100.0,
            ..CpuPct::default()
        };
    }
    let p = |v: u64| v as f64 / total as f64 * 100.0;
    CpuPct {
        usr: p(usr),
        sys: p(sys),
        iowait: p(iowait),
        irq: p(irq),
        steal: p(steal),
        idle: p(idle),
    }
}

/// iostat -x for one device over `secs` seconds: the one computation of these figures
/// (the tool sets' samples and the suites' per-run `iostat`).
pub fn disk(cur: &procfs_core::DiskStat, prev: &procfs_core::DiskStat, secs: f64) -> DiskRates {
    let reads = d(cur.reads, prev.reads);
    let writes = d(cur.writes, prev.writes);
    let per_s = |v: u64| v as f64 / secs;
    let mb = |sectors: u64| sectors as f64 * 512.0 / 1048576.0 / secs;
    let await_ms = |ticks: u64, ios: u64| {
        if ios > 0 {
            ticks as f64 / ios as f64
        } else {
            0.0
        }
    };
    DiskRates {
        name: cur.name.clone(),
        r_s: per_s(reads),
        w_s: per_s(writes),
        rmb_s: mb(d(cur.sectors_read, prev.sectors_read)),
        wmb_s: mb(d(cur.sectors_written, prev.sectors_written)),
        r_await_ms: await_ms(d(cur.time_reading, prev.time_reading), reads),
        w_await_ms: await_ms(d(cur.time_writing, prev.time_writing), writes),
        // rq_ticks (weighted ms) per second / 1000; tot_ticks (ms busy) per second / 10.
        aqu_sz: per_s(d(
            cur.weighted_time_in_progress,
            prev.weighted_time_in_progress,
        )) / 1000.0,
        util_pct: per_s(d(cur.time_in_progress, prev.time_in_progress)) / 10.0,
    }
}

fn disk_active(cur: &procfs_core::DiskStat, prev: &procfs_core::DiskStat) -> bool {
    d(cur.reads, prev.reads) + d(cur.writes, prev.writes) > 0
        || d(cur.time_in_progress, prev.time_in_progress) > 0
        || d(cur.discards.unwrap_or(0), prev.discards.unwrap_or(0)) > 0
}

/// The CPU each process used in the interval, in ticks, with reaped children credited to
/// their parent minus what was already counted while they ran.
fn proc_ticks(prev: &Counters, cur: &Counters, ticks_per_s: u64) -> HashMap<i32, u64> {
    type Key = (i32, u64);
    let before: HashMap<Key, &ProcTimes> = prev
        .procs
        .iter()
        .map(|p| ((p.pid, p.starttime), p))
        .collect();
    let now: HashMap<Key, &ProcTimes> = cur
        .procs
        .iter()
        .map(|p| ((p.pid, p.starttime), p))
        .collect();
    let prev_uptime_ticks = (prev.uptime_s * ticks_per_s as f64) as u64;
    // What vanished processes had been counted for, by parent: their parent's children
    // counter now includes all of it.
    // When the parent vanished too (bash → cargo → rustc, all reaped in turn), the amount
    // moves up to the nearest ancestor still alive: its children counter now holds it all.
    let alive: std::collections::HashSet<i32> = cur.procs.iter().map(|p| p.pid).collect();
    let prev_parent: HashMap<i32, i32> = prev.procs.iter().map(|p| (p.pid, p.ppid)).collect();
    let mut counted_by_parent: HashMap<i32, u64> = HashMap::new();
    for (k, p) in &before {
        if !now.contains_key(k) {
            let mut ancestor = p.ppid;
            for _ in 0..64 {
                if alive.contains(&ancestor) {
                    break;
                }
                match prev_parent.get(&ancestor) {
                    Some(&pp) if pp != ancestor => ancestor = pp,
                    _ => break,
                }
            }
            *counted_by_parent.entry(ancestor).or_default() += p.own + p.children;
        }
    }
    let mut out = HashMap::new();
    for (k, p) in &now {
        let (own, children) = match before.get(k) {
            Some(b) => (d(p.own, b.own), d(p.children, b.children)),
            // Started during the interval: all of its time is this interval's.
            None if p.starttime >= prev_uptime_ticks => (p.own, p.children),
            // Existed before but was not read then: its time is unknown.
            None => (0, 0),
        };
        let children = children.saturating_sub(counted_by_parent.get(&p.pid).copied().unwrap_or(0));
        out.insert(p.pid, own + children);
    }
    out
}

/// The CPU of one rule's threads of the split process over the interval.
struct ThreadPart {
    /// "qoslab-node threads".
    name: String,
    role: Role,
    ticks: u64,
    /// The busiest matching thread's ticks and the CPU it last ran on.
    busiest: u64,
    last_cpu: Option<u32>,
}

/// The CPU of the split process's threads per rule, one part per rule whose threads ran.
fn thread_ticks(
    prev: &Counters,
    cur: &Counters,
    ticks_per_s: u64,
    roles: &Roles,
) -> Vec<ThreadPart> {
    let before: HashMap<(i32, u64), u64> = prev
        .threads
        .iter()
        .map(|t| ((t.pid, t.starttime), t.own))
        .collect();
    let prev_uptime_ticks = (prev.uptime_s * ticks_per_s as f64) as u64;
    let mut out: Vec<ThreadPart> = Vec::new();
    for t in &cur.threads {
        let Some(rule) = roles.threads.iter().find(|r| t.comm.starts_with(&r.prefix)) else {
            continue;
        };
        let d = match before.get(&(t.pid, t.starttime)) {
            Some(b) => t.own.saturating_sub(*b),
            // Started during the interval: all of its time is this interval's.
            None if t.starttime >= prev_uptime_ticks && !prev.threads.is_empty() => t.own,
            None => 0,
        };
        let name = format!("{} threads", rule.prefix);
        let last_cpu = t.processor.and_then(|c| u32::try_from(c).ok());
        match out.iter_mut().find(|p| p.name == name) {
            Some(p) => {
                p.ticks += d;
                if d > p.busiest {
                    (p.busiest, p.last_cpu) = (d, last_cpu);
                }
            }
            None => out.push(ThreadPart {
                name,
                role: rule.role,
                ticks: d,
                busiest: d,
                last_cpu,
            }),
        }
    }
    out
}

/// The disks active over the interval, with their rates.
fn disk_rates(prev: &Counters, cur: &Counters, secs: f64) -> Vec<DiskRates> {
    let prev_disks: HashMap<&str, &procfs_core::DiskStat> =
        prev.disks.iter().map(|x| (x.name.as_str(), x)).collect();
    cur.disks
        .iter()
        .filter_map(|c| {
            let p = prev_disks.get(c.name.as_str())?;
            disk_active(c, p).then(|| disk(c, p, secs))
        })
        .collect()
}

/// The NICs that moved packets (or dropped some) over the interval, by name.
fn nic_rates(
    prev: &Counters,
    cur: &Counters,
    secs: f64,
    speeds: &HashMap<String, u64>,
) -> Vec<NicRates> {
    let mut nics: Vec<NicRates> = cur
        .nics
        .values()
        .filter_map(|c| {
            let p = prev.nics.get(&c.name)?;
            let per_s = |a: u64, b: u64| d(a, b) as f64 / secs;
            let n = NicRates {
                name: c.name.clone(),
                rx_bytes_s: per_s(c.recv_bytes, p.recv_bytes),
                tx_bytes_s: per_s(c.sent_bytes, p.sent_bytes),
                rx_packets_s: per_s(c.recv_packets, p.recv_packets),
                tx_packets_s: per_s(c.sent_packets, p.sent_packets),
                rx_drops_s: per_s(c.recv_drop, p.recv_drop),
                tx_drops_s: per_s(c.sent_drop, p.sent_drop),
                speed_mbit: speeds.get(&c.name).copied(),
            };
            (n.rx_packets_s + n.tx_packets_s + n.rx_drops_s + n.tx_drops_s > 0.0).then_some(n)
        })
        .collect();
    nics.sort_by(|a, b| a.name.cmp(&b.name));
    nics
}

/// The CPU of each role, and the processes worth naming: the fio and node processes, the
/// harness's (split by thread into its parts), and the three busiest others.
fn proc_cpu(
    prev: &Counters,
    cur: &Counters,
    (ticks_per_s, secs): (u64, f64),
    roles: &Roles,
    role_of: &HashMap<i32, Role>,
) -> (RoleCpu, Vec<ProcCpu>) {
    let mut ticks = proc_ticks(prev, cur, ticks_per_s);
    let pct = |t: u64| t as f64 / ticks_per_s as f64 / secs * 100.0;
    let mut role_cpu = RoleCpu::default();
    let add = |role_cpu: &mut RoleCpu, role: Role, v: f64| match role {
        Role::Fio => role_cpu.fio += v,
        Role::Node => role_cpu.node += v,
        Role::Harness => role_cpu.harness += v,
        Role::Kernel => role_cpu.kernel += v,
        Role::Other => role_cpu.other += v,
    };
    let mut procs: Vec<ProcCpu> = Vec::new();
    let mut others: Vec<ProcCpu> = Vec::new();
    // The harness's process split by thread: each rule's threads become a part of their
    // own (same pid, the rule's role), the rest stays with the process.
    if let Some(pid) = roles.split_pid() {
        let parts = thread_ticks(prev, cur, ticks_per_s, roles);
        let whole = ticks.get(&pid).copied().unwrap_or(0);
        let mut moved = 0;
        for ThreadPart {
            name,
            role,
            ticks: t,
            last_cpu,
            ..
        } in parts
        {
            let t = t.min(whole - moved);
            moved += t;
            add(&mut role_cpu, role, pct(t));
            procs.push(ProcCpu {
                pid,
                name,
                role,
                cpu_pct: pct(t),
                last_cpu,
                rss_bytes: None,
                io_bytes_s: None,
            });
        }
        ticks.insert(pid, whole - moved);
    }
    let io_rate = |pid: i32| match (cur.job_io.get(&pid), prev.job_io.get(&pid)) {
        (Some(c), Some(p)) => Some(d(*c, *p) as f64 / secs),
        _ => None,
    };
    // An embedded node's I/O is its (the harness's) process's: carried by its node part.
    if let Some(part) = procs
        .iter_mut()
        .find(|p| p.role == Role::Node && Some(p.pid) == roles.node_pid)
    {
        part.io_bytes_s = io_rate(part.pid);
    }
    for p in &cur.procs {
        let t = ticks.get(&p.pid).copied().unwrap_or(0);
        let role = role_of.get(&p.pid).copied().unwrap_or(Role::Other);
        let v = pct(t);
        add(&mut role_cpu, role, v);
        let pc = ProcCpu {
            pid: p.pid,
            name: p.comm.clone(),
            role,
            cpu_pct: v,
            last_cpu: p.processor.and_then(|c| u32::try_from(c).ok()),
            rss_bytes: Some(p.rss_bytes),
            io_bytes_s: matches!(role, Role::Fio | Role::Node)
                .then(|| io_rate(p.pid))
                .flatten(),
        };
        match role {
            Role::Fio | Role::Node => procs.push(pc),
            Role::Harness if Some(p.pid) == roles.harness_pid => procs.push(pc),
            Role::Other if t > 0 => others.push(pc),
            _ => {}
        }
    }
    others.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
    procs.extend(others.into_iter().take(3));
    (role_cpu, procs)
}

/// The cgroups of the job's processes, each with whose they are.
fn cgroup_pressure(
    prev: &Counters,
    cur: &Counters,
    secs: f64,
    roles: &Roles,
    role_of: &HashMap<i32, Role>,
) -> Vec<CgroupPressure> {
    cur.cgroups
        .iter()
        .filter_map(|c| {
            let p = prev.cgroups.iter().find(|p| p.path == c.path)?;
            let mut who: Vec<Role> = c
                .pids
                .iter()
                .map(|pid| match role_of.get(pid) {
                    _ if Some(*pid) == roles.node_pid => Role::Node,
                    Some(r) => *r,
                    None => Role::Other,
                })
                .collect();
            who.sort();
            who.dedup();
            Some(CgroupPressure {
                path: c.path.clone(),
                roles: who,
                pressure: Pressure::between(&p.totals, &c.totals, secs),
            })
        })
        .collect()
}

/// The sample for the interval from `prev` to `cur`. `speeds` are NIC link speeds (Mb/s).
pub fn sample(
    prev: &Counters,
    cur: &Counters,
    ticks_per_s: u64,
    roles: &Roles,
    speeds: &HashMap<String, u64>,
    t_ms: u64,
) -> HostSample {
    let secs = (cur.uptime_s - prev.uptime_s).max(0.001);
    let cpus = cur
        .kernel
        .cpu_time
        .iter()
        .zip(&prev.kernel.cpu_time)
        .map(|(c, p)| cpu_pct(c, p))
        .collect();

    let disks = disk_rates(prev, cur, secs);

    let nics = nic_rates(prev, cur, secs, speeds);

    let role_of = roles.classify(&cur.procs);
    let (role_cpu, procs) = proc_cpu(prev, cur, (ticks_per_s, secs), roles, &role_of);

    let cgroups = cgroup_pressure(prev, cur, secs, roles, &role_of);

    let mem = &cur.mem;
    let available = mem
        .mem_available
        .unwrap_or(mem.mem_free + mem.buffers + mem.cached);
    let per_s = |a: u64, b: u64| d(a, b) as f64 / secs;
    HostSample {
        t_ms,
        interval_ms: (secs * 1000.0).round() as u64,
        cpu: cpu_pct(&cur.kernel.total, &prev.kernel.total),
        cpus,
        run_queue: cur.kernel.procs_running.unwrap_or(0),
        blocked: cur.kernel.procs_blocked.unwrap_or(0),
        mem_used_bytes: mem.mem_total.saturating_sub(available),
        mem_available_bytes: available,
        swap_used_bytes: mem.swap_total.saturating_sub(mem.swap_free),
        swap_in_s: per_s(cur.swap_in, prev.swap_in),
        swap_out_s: per_s(cur.swap_out, prev.swap_out),
        page_in_kib_s: per_s(cur.page_in, prev.page_in),
        page_out_kib_s: per_s(cur.page_out, prev.page_out),
        disks,
        nics,
        roles: role_cpu,
        procs,
        pressure: match (&prev.pressure, &cur.pressure) {
            (Some(p), Some(c)) => Some(Pressure::between(p, c, secs)),
            _ => None,
        },
        cgroups,
    }
}
