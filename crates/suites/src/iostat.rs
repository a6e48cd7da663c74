//! iostat's per-device figures from two /proc/diskstats snapshots of a host (parsed with
//! `procfs-core`), taken around each run: what saturated (the seed's "%util close to 100%").

use procfs_core::{DiskStat, DiskStats, FromRead};
use serde::Serialize;

use hosts::{ErrorKind, Host, HostError};

/// A host's counters at one moment (its own uptime as the clock).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub uptime_s: f64,
    pub disks: Vec<DiskStat>,
}

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
    let out = h.run_ok("cat /proc/uptime; cat /proc/diskstats")?;
    let (first, rest) = out.split_once('\n').unwrap_or((&out, ""));
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
    Ok(Snapshot { uptime_s, disks })
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
        let d = |f: fn(&DiskStat) -> u64| f(y).saturating_sub(f(x)) as f64;
        let (reads, writes) = (d(|s| s.reads), d(|s| s.writes));
        let per = |t: f64, n: f64| if n > 0.0 { t / n } else { 0.0 };
        out.push(IoStat {
            host: host.to_string(),
            device: name.to_string(),
            r_s: reads / dt,
            w_s: writes / dt,
            rmb_s: d(|s| s.sectors_read) * 512.0 / dt / 1048576.0,
            wmb_s: d(|s| s.sectors_written) * 512.0 / dt / 1048576.0,
            r_await_ms: per(d(|s| s.time_reading), reads),
            w_await_ms: per(d(|s| s.time_writing), writes),
            aqu_sz: d(|s| s.weighted_time_in_progress) / (dt * 1000.0),
            util_pct: (d(|s| s.time_in_progress) / (dt * 10.0)).min(100.0),
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
        }
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
