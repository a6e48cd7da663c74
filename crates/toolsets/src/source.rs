//! Where `/proc` comes from: the seam between transports and parsers.
//!
//! A [`ProcSource`] hands over the raw bytes of the files one sample needs
//! ([`RawSnapshot`]); every figure is then parsed (procfs-core) and computed here, the same
//! way for every host. [`LocalProc`] reads this machine's files. A remote transport (ssh) runs
//! [`SNAPSHOT_SCRIPT`] on the other host and feeds its output to [`RawSnapshot::from_framed`],
//! so one round trip per sample carries everything; [`CONSTS_SCRIPT`] and
//! [`NIC_SPEEDS_SCRIPT`] do the same for the per-host constants read once at start.

use std::collections::HashMap;
use std::io;

/// The raw text of the files one sample needs, as the kernel wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawSnapshot {
    /// `/proc/uptime`
    pub uptime: Vec<u8>,
    /// `/proc/stat`
    pub stat: Vec<u8>,
    /// `/proc/meminfo`
    pub meminfo: Vec<u8>,
    /// `/proc/vmstat`
    pub vmstat: Vec<u8>,
    /// `/proc/diskstats`
    pub diskstats: Vec<u8>,
    /// `/proc/net/dev`
    pub net_dev: Vec<u8>,
    /// Every process's `/proc/PID/stat`, one line each (processes that vanish while being
    /// read are simply missing).
    pub processes: Vec<u8>,
    /// `/proc/pressure/cpu`, `io`, `memory` (empty on a kernel without PSI).
    pub psi_cpu: Vec<u8>,
    pub psi_io: Vec<u8>,
    pub psi_memory: Vec<u8>,
}

/// Files of the job's own processes (fio's, the node's), read right after a snapshot:
/// their I/O counters and the pressure of the cgroups they are in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFiles {
    /// `/proc/PID/io` of each process that could be read.
    pub io: Vec<(i32, Vec<u8>)>,
    /// Each distinct cgroup v2 of those processes.
    pub cgroups: Vec<CgroupFiles>,
}

/// One cgroup v2 directory's pressure files and the job's processes in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupFiles {
    /// Its path in the hierarchy ("/" for the root).
    pub path: String,
    pub pids: Vec<i32>,
    /// `cpu.pressure`, `io.pressure`, `memory.pressure`.
    pub cpu: Vec<u8>,
    pub io: Vec<u8>,
    pub memory: Vec<u8>,
}

/// A host's constants, read once: clock ticks per second (`CLK_TCK`) and the page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostConsts {
    pub ticks_per_second: u64,
    pub page_size: u64,
}

/// Why a host could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{what}: {detail}")]
    Malformed { what: String, detail: String },
    #[error("{0}")]
    Transport(String),
}

/// A host whose `/proc` can be read. `Send` so a sampler thread can own it.
pub trait ProcSource: Send {
    /// The host's name as shown in reports ("local" for this machine).
    fn host(&self) -> &str;
    /// `CLK_TCK` and the page size (read once, at start).
    fn consts(&mut self) -> Result<HostConsts, SourceError>;
    /// Link speed in Mb/s per NIC that has one (`/sys/class/net/NAME/speed`); loopback and
    /// virtual links report none and are left out. Read once, at start.
    fn nic_speeds(&mut self) -> HashMap<String, u64>;
    /// One sample's raw files.
    fn snapshot(&mut self) -> Result<RawSnapshot, SourceError>;
    /// The `/proc/PID/task/TID/stat` lines of one process's threads, read right after
    /// [`snapshot`](ProcSource::snapshot) (the harness's own process, split by
    /// [`crate::Roles::threads`]). Sources that cannot read them return nothing: the process
    /// is then not split.
    fn threads(&mut self, _pid: i32) -> Result<Vec<u8>, SourceError> {
        Ok(Vec::new())
    }
    /// The I/O counters of `pids` (the job's fio and node processes) and the pressure of
    /// their cgroups, read right after [`snapshot`](ProcSource::snapshot). Sources that
    /// cannot read them return nothing: the job's share of a device's traffic and its
    /// cgroups' pressure are then unknown.
    fn job_files(&mut self, _pids: &[i32]) -> JobFiles {
        JobFiles::default()
    }
}

/// This machine.
#[derive(Debug, Default)]
pub struct LocalProc {
    /// Reused across samples (the sampler runs for the length of a job).
    buf: Vec<u8>,
    /// Where the cgroup v2 hierarchy is mounted (looked up once; None inside: none).
    cgroup2: Option<Option<std::path::PathBuf>>,
}

impl LocalProc {
    pub fn new() -> LocalProc {
        LocalProc::default()
    }
}

fn read(path: &str) -> Result<Vec<u8>, SourceError> {
    std::fs::read(path).map_err(|source| SourceError::Io {
        path: path.to_string(),
        source,
    })
}

impl ProcSource for LocalProc {
    fn host(&self) -> &str {
        "local"
    }

    fn consts(&mut self) -> Result<HostConsts, SourceError> {
        // SAFETY: sysconf has no preconditions.
        let (tck, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if tck <= 0 || page <= 0 {
            return Err(SourceError::Malformed {
                what: "sysconf".into(),
                detail: format!("CLK_TCK {tck}, PAGESIZE {page}"),
            });
        }
        Ok(HostConsts {
            ticks_per_second: tck as u64,
            page_size: page as u64,
        })
    }

    fn nic_speeds(&mut self) -> HashMap<String, u64> {
        let mut out = HashMap::new();
        let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
            return out;
        };
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Ok(s) = std::fs::read_to_string(e.path().join("speed")) {
                if let Some(v) = parse_speed(&s) {
                    out.insert(name, v);
                }
            }
        }
        out
    }

    fn snapshot(&mut self) -> Result<RawSnapshot, SourceError> {
        let mut procs = std::mem::take(&mut self.buf);
        procs.clear();
        // A process may exit between the listing and the read: it is skipped.
        read_stats("/proc", &mut procs)?;
        let snap = RawSnapshot {
            uptime: read("/proc/uptime")?,
            stat: read("/proc/stat")?,
            meminfo: read("/proc/meminfo")?,
            vmstat: read("/proc/vmstat")?,
            diskstats: read("/proc/diskstats")?,
            net_dev: read("/proc/net/dev")?,
            processes: procs.clone(),
            // Absent on kernels without PSI: left empty.
            psi_cpu: std::fs::read("/proc/pressure/cpu").unwrap_or_default(),
            psi_io: std::fs::read("/proc/pressure/io").unwrap_or_default(),
            psi_memory: std::fs::read("/proc/pressure/memory").unwrap_or_default(),
        };
        self.buf = procs;
        Ok(snap)
    }

    fn job_files(&mut self, pids: &[i32]) -> JobFiles {
        let mount = self
            .cgroup2
            .get_or_insert_with(|| {
                let raw = std::fs::read("/proc/self/mountinfo").ok()?;
                crate::cgroup::cgroup2_mount(&raw)
            })
            .clone();
        let mut out = JobFiles::default();
        for &pid in pids {
            if let Ok(io) = std::fs::read(format!("/proc/{pid}/io")) {
                out.io.push((pid, io));
            }
            let Some(mount) = &mount else { continue };
            let Some(path) = std::fs::read(format!("/proc/{pid}/cgroup"))
                .ok()
                .and_then(|raw| crate::cgroup::cgroup2_path(&raw))
            else {
                continue;
            };
            if let Some(c) = out.cgroups.iter_mut().find(|c| c.path == path) {
                c.pids.push(pid);
                continue;
            }
            let dir = mount.join(path.trim_start_matches('/'));
            let file = |n: &str| std::fs::read(dir.join(n)).unwrap_or_default();
            out.cgroups.push(CgroupFiles {
                cpu: file("cpu.pressure"),
                io: file("io.pressure"),
                memory: file("memory.pressure"),
                path,
                pids: vec![pid],
            });
        }
        out
    }

    fn threads(&mut self, pid: i32) -> Result<Vec<u8>, SourceError> {
        let mut out = Vec::new();
        read_stats(&format!("/proc/{pid}/task"), &mut out)?;
        Ok(out)
    }
}

/// Appends every `DIR/*/stat` (one line each) to `out`; entries that vanish while being
/// read are skipped.
fn read_stats(dir: &str, out: &mut Vec<u8>) -> Result<(), SourceError> {
    let entries = std::fs::read_dir(dir).map_err(|source| SourceError::Io {
        path: dir.to_string(),
        source,
    })?;
    let mut path = String::with_capacity(48);
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        path.clear();
        path.push_str(dir);
        path.push('/');
        path.push_str(name);
        path.push_str("/stat");
        if let Ok(mut line) = std::fs::read(&path) {
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            out.extend_from_slice(&line);
        }
    }
    Ok(())
}

/// `/sys/class/net/NAME/speed`: Mb/s, or -1 / an error for links without one.
fn parse_speed(s: &str) -> Option<u64> {
    s.trim()
        .parse::<i64>()
        .ok()
        .filter(|v| *v > 0)
        .map(|v| v as u64)
}

/// Prints one sample's files framed by `@@qoslab NAME` lines (POSIX sh; run it remotely and
/// give the output to [`RawSnapshot::from_framed`]).
pub const SNAPSHOT_SCRIPT: &str =
    "cd /proc && for f in uptime stat meminfo vmstat diskstats net/dev; do \
printf '@@qoslab %s\\n' \"$f\"; cat \"$f\"; done; \
for f in pressure/cpu pressure/io pressure/memory; do \
printf '@@qoslab %s\\n' \"$f\"; cat \"$f\" 2>/dev/null; done; printf '@@qoslab processes\\n'; \
cat [0-9]*/stat 2>/dev/null; true";

/// Prints `CLK_TCK` and the page size, one per line ([`HostConsts::parse`]).
pub const CONSTS_SCRIPT: &str = "getconf CLK_TCK; getconf PAGESIZE";

/// Prints `NAME SPEED` per NIC ([`parse_nic_speeds`]).
pub const NIC_SPEEDS_SCRIPT: &str = "for n in /sys/class/net/*; do \
printf '%s %s\\n' \"${n##*/}\" \"$(cat \"$n/speed\" 2>/dev/null)\"; done";

impl HostConsts {
    /// The output of [`CONSTS_SCRIPT`].
    pub fn parse(text: &str) -> Result<HostConsts, SourceError> {
        let bad = |d: String| SourceError::Malformed {
            what: "getconf CLK_TCK PAGESIZE".into(),
            detail: d,
        };
        let nums: Vec<u64> = text
            .split_whitespace()
            .map(|w| {
                w.parse::<u64>()
                    .map_err(|_| bad(format!("{w:?} is not a number")))
            })
            .collect::<Result<_, _>>()?;
        match nums[..] {
            [t, p] if t > 0 && p > 0 => Ok(HostConsts {
                ticks_per_second: t,
                page_size: p,
            }),
            _ => Err(bad(format!("expected two positive numbers, got {text:?}"))),
        }
    }
}

/// The output of [`NIC_SPEEDS_SCRIPT`].
pub fn parse_nic_speeds(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (name, speed) = l.split_once(' ')?;
            Some((name.to_string(), parse_speed(speed)?))
        })
        .collect()
}

impl RawSnapshot {
    /// The output of [`SNAPSHOT_SCRIPT`]: sections introduced by `@@qoslab NAME` lines.
    /// Every section must be present.
    pub fn from_framed(out: &[u8]) -> Result<RawSnapshot, SourceError> {
        let mut snap = RawSnapshot::default();
        let mut seen = Vec::new();
        let mut current: Option<&mut Vec<u8>> = None;
        for line in out.split_inclusive(|b| *b == b'\n') {
            if let Some(name) = line.strip_prefix(b"@@qoslab ") {
                let name = String::from_utf8_lossy(name).trim().to_string();
                current = Some(match name.as_str() {
                    "uptime" => &mut snap.uptime,
                    "stat" => &mut snap.stat,
                    "meminfo" => &mut snap.meminfo,
                    "vmstat" => &mut snap.vmstat,
                    "diskstats" => &mut snap.diskstats,
                    "net/dev" => &mut snap.net_dev,
                    "processes" => &mut snap.processes,
                    // Optional: a kernel without PSI prints them empty.
                    "pressure/cpu" => &mut snap.psi_cpu,
                    "pressure/io" => &mut snap.psi_io,
                    "pressure/memory" => &mut snap.psi_memory,
                    other => {
                        return Err(SourceError::Malformed {
                            what: "framed /proc snapshot".into(),
                            detail: format!("unknown section {other:?}"),
                        })
                    }
                });
                seen.push(name);
            } else if let Some(buf) = current.as_deref_mut() {
                buf.extend_from_slice(line);
            }
        }
        for need in [
            "uptime",
            "stat",
            "meminfo",
            "vmstat",
            "diskstats",
            "net/dev",
            "processes",
        ] {
            if !seen.iter().any(|s| s == need) {
                return Err(SourceError::Malformed {
                    what: "framed /proc snapshot".into(),
                    detail: format!("section {need:?} is missing"),
                });
            }
        }
        Ok(snap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remote_script_run_here_frames_what_the_local_source_reads() {
        // The real script through a real shell, parsed back: every section present and
        // non-empty, and the process section holds this test's own process.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(SNAPSHOT_SCRIPT)
            .output()
            .unwrap();
        assert!(out.status.success());
        let snap = RawSnapshot::from_framed(&out.stdout).unwrap();
        for (name, s) in [
            ("uptime", &snap.uptime),
            ("stat", &snap.stat),
            ("meminfo", &snap.meminfo),
            ("vmstat", &snap.vmstat),
            ("net/dev", &snap.net_dev),
            ("processes", &snap.processes),
        ] {
            assert!(!s.is_empty(), "{name} empty");
        }
        assert!(snap.stat.starts_with(b"cpu "));
        let me = format!("{} (", std::process::id());
        let procs = String::from_utf8_lossy(&snap.processes);
        assert!(procs.lines().any(|l| l.starts_with(&me)), "own pid missing");

        let consts = std::process::Command::new("sh")
            .arg("-c")
            .arg(CONSTS_SCRIPT)
            .output()
            .unwrap();
        let c = HostConsts::parse(&String::from_utf8_lossy(&consts.stdout)).unwrap();
        assert_eq!(c, LocalProc::new().consts().unwrap());
        let speeds = std::process::Command::new("sh")
            .arg("-c")
            .arg(NIC_SPEEDS_SCRIPT)
            .output()
            .unwrap();
        assert_eq!(
            parse_nic_speeds(&String::from_utf8_lossy(&speeds.stdout)),
            LocalProc::new().nic_speeds()
        );
    }

    #[test]
    fn framing_errors_name_the_section() {
        let e = RawSnapshot::from_framed(b"@@qoslab uptime\n1 2\n").unwrap_err();
        assert!(e.to_string().contains("\"stat\" is missing"), "{e}");
        let e = RawSnapshot::from_framed(b"@@qoslab bogus\n").unwrap_err();
        assert!(e.to_string().contains("unknown section \"bogus\""), "{e}");
        assert!(HostConsts::parse("100\n").is_err());
        assert!(HostConsts::parse("x 4096").is_err());
        assert_eq!(
            HostConsts::parse("100\n4096\n").unwrap(),
            HostConsts {
                ticks_per_second: 100,
                page_size: 4096
            }
        );
        let s = parse_nic_speeds("lo \neth0 10000\nveth1 -1\n");
        assert_eq!(s.len(), 1);
        assert_eq!(s["eth0"], 10000);
    }
}
