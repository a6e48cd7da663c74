//! iostat's per-device figures and vmstat's per-host figures from two snapshots of a
//! host's /proc/diskstats, /proc/stat and /proc/vmstat (parsed with `procfs-core`), taken
//! around each run: what saturated (the seed's "%util close to 100%", "check vmstat").

use procfs_core::{
    DiskStat, DiskStats, ExplicitSystemInfo, FromBufRead, FromBufReadSI, FromRead, KernelStats,
    VmStat as RawVmStat,
};
use serde::Serialize;

use hosts::{ErrorKind, Host, HostError};

/// A host's counters at one moment (its own uptime as the clock).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub uptime_s: f64,
    pub disks: Vec<DiskStat>,
    /// /proc/stat (CPU ticks, context switches, run queue) and /proc/vmstat.
    pub stat: Option<KernelStats>,
    pub vm: Option<RawVmStat>,
}

/// One host over one run, as `vmstat` computes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VmStat {
    pub host: String,
    /// CPU time shares, percent of all CPUs: user (incl. nice), system (incl. irq and
    /// softirq), waiting for I/O, idle, stolen by the hypervisor.
    pub us: f64,
    pub sy: f64,
    pub wa: f64,
    pub id: f64,
    pub st: f64,
    /// Runnable and blocked processes at the end of the run.
    pub r: u32,
    pub b: u32,
    /// Context switches per second.
    pub cs_s: f64,
    /// Pages swapped in and out per second.
    pub si_s: f64,
    pub so_s: f64,
    /// Major page faults per second.
    pub majflt_s: f64,
}

const SECTION: &str = "@@qoslab-iostat@@";

/// One device over one run, as `iostat -x` computes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoStat {
    pub host: String,
    pub device: String,
    pub r_s: f64,
    pub w_s: f64,
    pub rmb_s: f64,
    pub wmb_s: f64,
    pub r_await_ms: f64,
    pub w_await_ms: f64,
    /// Average queue size.
    pub aqu_sz: f64,
    pub util_pct: f64,
}

pub fn snapshot(h: &Host) -> Result<Snapshot, HostError> {
    let out = h.run_ok(&format!(
        "cat /proc/uptime; cat /proc/diskstats; echo {SECTION}; cat /proc/stat; echo {SECTION}; cat /proc/vmstat"
    ))?;
    let sep = format!("{SECTION}\n");
    let mut parts = out.split(&sep);
    let first_part = parts.next().unwrap_or("");
    let (first, rest) = first_part.split_once('\n').unwrap_or((first_part, ""));
    let parse_err = |detail: String| {
        h.err(ErrorKind::Parse {
            what: "/proc/diskstats".into(),
            detail,
        })
    };
    let uptime_s = first
        .split_whitespace()
        .next()
        .and_then(|u| u.parse().ok())
        .ok_or_else(|| parse_err(format!("uptime {first:?}")))?;
    let disks = DiskStats::from_read(rest.as_bytes())
        .map_err(|e| parse_err(e.to_string()))?
        .0;
    // Shares of CPU time do not depend on the tick rate; a host whose /proc/stat or
    // /proc/vmstat does not parse still gets its iostat.
    let si = ExplicitSystemInfo {
        boot_time_secs: 0,
        ticks_per_second: 100,
        page_size: 4096,
        is_little_endian: cfg!(target_endian = "little"),
    };
    let stat = parts
        .next()
        .and_then(|t| KernelStats::from_buf_read(t.as_bytes(), &si).ok());
    let vm = parts
        .next()
        .and_then(|t| RawVmStat::from_buf_read(t.as_bytes()).ok());
    Ok(Snapshot {
        uptime_s,
        disks,
        stat,
        vm,
    })
}

/// The host's vmstat figures between two snapshots (None when /proc/stat was unreadable).
pub fn vm_delta(host: &str, a: &Snapshot, b: &Snapshot) -> Option<VmStat> {
    let (x, y) = (a.stat.as_ref()?, b.stat.as_ref()?);
    let dt = (b.uptime_s - a.uptime_s).max(1e-3);
    let d = |f: fn(&procfs_core::CpuTime) -> u64| f(&y.total).saturating_sub(f(&x.total)) as f64;
    let user = d(|c| c.user + c.nice);
    let sys = d(|c| c.system + c.irq.unwrap_or(0) + c.softirq.unwrap_or(0));
    let wa = d(|c| c.iowait.unwrap_or(0));
    let idle = d(|c| c.idle);
    let st = d(|c| c.steal.unwrap_or(0));
    let all = (user + sys + wa + idle + st).max(1.0);
    let pct = |v: f64| 100.0 * v / all;
    let vm = |k: &str| -> f64 {
        match (a.vm.as_ref(), b.vm.as_ref()) {
            (Some(p), Some(q)) => {
                (q.0.get(k).copied().unwrap_or(0) - p.0.get(k).copied().unwrap_or(0)).max(0) as f64
                    / dt
            }
            _ => 0.0,
        }
    };
    Some(VmStat {
        host: host.to_string(),
        us: pct(user),
        sy: pct(sys),
        wa: pct(wa),
        id: pct(idle),
        st: pct(st),
        r: y.procs_running.unwrap_or(0),
        b: y.procs_blocked.unwrap_or(0),
        cs_s: y.ctxt.saturating_sub(x.ctxt) as f64 / dt,
        si_s: vm("pswpin"),
        so_s: vm("pswpout"),
        majflt_s: vm("pgmajfault"),
    })
}

/// The figures of `devices` (paths or names) between two snapshots.
pub fn delta(host: &str, a: &Snapshot, b: &Snapshot, devices: &[String]) -> Vec<IoStat> {
    let dt = (b.uptime_s - a.uptime_s).max(1e-3);
    let mut out = Vec::new();
    for dev in devices {
        let name = dev.rsplit('/').next().unwrap_or(dev);
        let (Some(x), Some(y)) = (
            a.disks.iter().find(|d| d.name == name),
            b.disks.iter().find(|d| d.name == name),
        ) else {
            continue;
        };
        // The tool sets' iostat -x (toolsets::rates::disk): one computation of these
        // figures in the workspace.
        let r = toolsets::rates::disk(y, x, dt);
        out.push(IoStat {
            host: host.to_string(),
            device: name.to_string(),
            r_s: r.r_s,
            w_s: r.w_s,
            rmb_s: r.rmb_s,
            wmb_s: r.wmb_s,
            r_await_ms: r.r_await_ms,
            w_await_ms: r.w_await_ms,
            aqu_sz: r.aqu_sz,
            util_pct: r.util_pct,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(up: f64, line: &str) -> Snapshot {
        Snapshot {
            uptime_s: up,
            disks: DiskStats::from_read(line.as_bytes()).unwrap().0,
            stat: None,
            vm: None,
        }
    }

    #[test]
    fn vmstat_figures() {
        let si = ExplicitSystemInfo {
            boot_time_secs: 0,
            ticks_per_second: 100,
            page_size: 4096,
            is_little_endian: true,
        };
        let stat = |user: u64, sys: u64, idle: u64, wa: u64, ctxt: u64, r: u32| {
            KernelStats::from_buf_read(
                format!(
                    "cpu  {user} 0 {sys} {idle} {wa} 0 0 0 0 0\nctxt {ctxt}\nbtime 1\nprocesses 5\nprocs_running {r}\nprocs_blocked 1\n"
                )
                .as_bytes(),
                &si,
            )
            .unwrap()
        };
        let vm = |pin: i64| {
            RawVmStat::from_buf_read(format!("pswpin {pin}\npswpout 0\npgmajfault 4\n").as_bytes())
                .unwrap()
        };
        let a = Snapshot {
            uptime_s: 10.0,
            disks: Vec::new(),
            stat: Some(stat(100, 100, 100, 0, 1000, 1)),
            vm: Some(vm(0)),
        };
        // 2 s later: 100 user, 50 system, 40 idle, 10 iowait ticks; 600 switches; 20 pages in.
        let b = Snapshot {
            uptime_s: 12.0,
            disks: Vec::new(),
            stat: Some(stat(200, 150, 140, 10, 1600, 3)),
            vm: Some(vm(20)),
        };
        let v = vm_delta("h", &a, &b).unwrap();
        assert_eq!((v.us, v.sy, v.id, v.wa, v.st), (50.0, 25.0, 20.0, 5.0, 0.0));
        assert_eq!(
            (v.r, v.b, v.cs_s, v.si_s, v.majflt_s),
            (3, 1, 300.0, 10.0, 0.0)
        );
        assert!(vm_delta("h", &snap(1.0, ""), &b).is_none());
    }

    #[test]
    fn iostat_figures() {
        let a = snap(100.0, "7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n");
        // 2 s later: 1000 writes of 8 sectors taking 3000 ms, busy 1500 ms, weighted 4000 ms.
        let b = snap(102.0, "7 0 loop0 0 0 0 0 1000 0 8000 3000 0 1500 4000\n");
        let s = &delta("h", &a, &b, &["/dev/loop0".into(), "/dev/nope".into()])[0];
        assert_eq!(s.device, "loop0");
        assert_eq!((s.w_s, s.r_s), (500.0, 0.0));
        assert!((s.wmb_s - 8000.0 * 512.0 / 2.0 / 1048576.0).abs() < 1e-9);
        assert_eq!((s.w_await_ms, s.util_pct, s.aqu_sz), (3.0, 75.0, 2.0));
    }
}
