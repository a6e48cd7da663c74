//! fio application mixes for tenants without a mounted file system (NBD URIs, block
//! devices, directories, e.g. one per tenant on an NFS mount of a real array): one job
//! file, one job per tenant, every tenant started together.
//!
//! - [`FioMix::Oltp`]: 8 KiB random I/O, 70% reads / 30% writes, a flush (fsync) after
//!   every write: a database's data files.
//! - [`FioMix::LogAppender`]: 4 KiB sequential writes, fdatasync after each: a write-ahead
//!   log.
//! - [`FioMix::Random`]: 4 KiB random I/O, 70/30, no syncs: the plain IOPS tenant that
//!   checks ceilings at scale (a flush per write would measure the backend's fdatasync
//!   rate instead: 250 tenants flushing share one disk).
//! - [`FioMix::SmallFiles`]: a build: create many small files (fio's `filecreate`), write
//!   them (fsync on close), then stat them all (`filestat`). Directories only.
//!
//! Only the job file is built here; running fio and reading its JSON (one entry per job,
//! named after the tenant) is the harness's.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FioMix {
    Oltp,
    Random,
    LogAppender,
    SmallFiles,
}

impl FioMix {
    pub fn as_str(self) -> &'static str {
        match self {
            FioMix::Oltp => "oltp",
            FioMix::Random => "random",
            FioMix::LogAppender => "log_appender",
            FioMix::SmallFiles => "small_files",
        }
    }

    pub fn parse(s: &str) -> Result<FioMix, String> {
        match s {
            "oltp" => Ok(FioMix::Oltp),
            "random" => Ok(FioMix::Random),
            "log_appender" => Ok(FioMix::LogAppender),
            "small_files" => Ok(FioMix::SmallFiles),
            _ => Err(format!(
                "unknown fio mix {s:?}: expected oltp, random, log_appender or small_files"
            )),
        }
    }
}

/// Where one tenant's job does its I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MixTarget {
    /// An NBD URI (fio's nbd engine).
    Nbd(String),
    /// A block device.
    Block(String),
    /// A directory (the job makes its own files in it).
    Dir(String),
}

/// One tenant's job: its name (the fio job name), target, mix and load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixTenant {
    pub name: String,
    pub target: MixTarget,
    pub mix: FioMix,
    pub iodepth: u32,
    /// An open-loop demand (`rate_iops`, split 70/30 for the mixed mixes); None: as fast
    /// as the volume allows.
    pub rate_iops: Option<u32>,
}

/// What every tenant's job shares.
#[derive(Debug, Clone, PartialEq)]
pub struct MixOptions {
    /// Seconds of measured I/O (time_based), after `ramp_secs`.
    pub runtime_secs: u32,
    pub ramp_secs: u32,
    /// Bytes of the region each job uses (file size, or the first bytes of a device/URI).
    pub size: u64,
    /// Small-file mix: files per tenant and their size.
    pub files: u32,
    pub file_size: u64,
}

impl Default for MixOptions {
    fn default() -> MixOptions {
        MixOptions {
            runtime_secs: 30,
            ramp_secs: 2,
            size: 256 << 20,
            files: 1000,
            file_size: 16 << 10,
        }
    }
}

/// Job names are tenant names; fio reads `[...]` and `;`/`#` specially, and a job file's
/// values must not contain newlines.
fn check_value(what: &str, v: &str) -> Result<(), String> {
    if v.is_empty() || v.contains(['\n', '\r', '[', ']']) || v.starts_with([';', '#']) {
        return Err(format!(
            "{what} {v:?} cannot be written into a fio job file"
        ));
    }
    Ok(())
}

/// `rate_iops` for a mix: fio takes `READS,WRITES` for mixed jobs.
fn rate(mix: FioMix, r: u32) -> String {
    match mix {
        FioMix::Oltp | FioMix::Random => {
            let reads = (r as u64 * 7).div_ceil(10) as u32;
            format!("rate_iops={reads},{}", r - reads.min(r))
        }
        _ => format!("rate_iops={r}"),
    }
}

/// The job file for `tenants`, all started together. The small_files mix runs in phases
/// (not time-based) and cannot share a job file with the time-based mixes.
pub fn job_file(tenants: &[MixTenant], o: &MixOptions) -> Result<String, String> {
    if tenants.is_empty() {
        return Err("no tenants".into());
    }
    let small = tenants
        .iter()
        .filter(|t| t.mix == FioMix::SmallFiles)
        .count();
    if small != 0 && small != tenants.len() {
        return Err(
            "the small_files mix runs in phases and cannot share a fio run with time-based mixes"
                .into(),
        );
    }
    if small == 0 && o.runtime_secs == 0 {
        return Err("runtime must be at least 1 second".into());
    }
    let mut s = String::new();
    let _ = writeln!(s, "# qoslab tenants: {} tenant(s)", tenants.len());
    // Threads, not processes: hundreds of tenants in one fio.
    s.push_str("[global]\nthread=1\nrandrepeat=0\nnorandommap=1\n");
    if small == 0 {
        let _ = writeln!(
            s,
            "time_based=1\nruntime={}s\nramp_time={}s",
            o.runtime_secs, o.ramp_secs
        );
    }
    for t in tenants {
        let name = &t.name;
        check_value("tenant name", name)?;
        let io = |s: &mut String| -> Result<(), String> {
            let _ = writeln!(s, "iodepth={}", t.iodepth.max(1));
            if let Some(r) = t.rate_iops {
                let _ = writeln!(s, "{}", rate(t.mix, r));
            }
            match &t.target {
                MixTarget::Nbd(uri) => {
                    check_value("NBD URI", uri)?;
                    let _ = writeln!(s, "ioengine=nbd\nuri={uri}\nsize={}", o.size);
                }
                MixTarget::Block(dev) => {
                    check_value("block device", dev)?;
                    let _ = writeln!(
                        s,
                        "ioengine=libaio\ndirect=1\nfilename={dev}\nsize={}",
                        o.size
                    );
                }
                MixTarget::Dir(d) => {
                    check_value("directory", d)?;
                    let _ = writeln!(
                        s,
                        "ioengine=libaio\ndirect=1\ndirectory={d}\nfilename={name}.dat\nsize={}",
                        o.size
                    );
                }
            }
            Ok(())
        };
        match t.mix {
            FioMix::Oltp => {
                let _ = writeln!(s, "\n[{name}]\nrw=randrw\nrwmixread=70\nbs=8k\nfsync=1");
                io(&mut s)?;
            }
            FioMix::Random => {
                let _ = writeln!(s, "\n[{name}]\nrw=randrw\nrwmixread=70\nbs=4k");
                io(&mut s)?;
            }
            FioMix::LogAppender => {
                let _ = writeln!(s, "\n[{name}]\nrw=write\nbs=4k\nfdatasync=1");
                io(&mut s)?;
            }
            FioMix::SmallFiles => {
                let MixTarget::Dir(d) = &t.target else {
                    return Err(format!(
                        "tenant {name}: the small_files mix needs a directory target \
                         (it creates files); {:?} is not one",
                        t.target
                    ));
                };
                check_value("directory", d)?;
                let common = format!(
                    "directory={d}/{name}\nnrfiles={}\nfilesize={}\nopenfiles=1\nfile_service_type=sequential\ncreate_on_open=1",
                    o.files.max(1),
                    o.file_size
                );
                // All tenants' creates run together, then all writes, then all stats
                // (stonewall barriers between the phases, not between tenants).
                let _ = writeln!(s, "\n[{name}-create]\nioengine=filecreate\n{common}");
                let _ = writeln!(
                    s,
                    "\n[{name}-write]\nioengine=psync\nrw=write\nbs=4k\nfsync_on_close=1\n{common}"
                );
                let _ = writeln!(s, "\n[{name}-stat]\nioengine=filestat\n{common}");
            }
        }
    }
    if small != 0 {
        s = order_small_files(&s);
    }
    Ok(s)
}

/// Reorder the small-file jobs into three phases (every tenant's create, then write, then
/// stat), each phase's first job carrying `stonewall`, so tenants run each phase together.
fn order_small_files(s: &str) -> String {
    let (head, jobs) = s.split_at(s.find("\n[").map(|i| i + 1).unwrap_or(s.len()));
    let sections: Vec<&str> = jobs
        .split("\n\n")
        .filter(|x| !x.trim().is_empty())
        .collect();
    let mut out = head.to_string();
    for phase in ["-create]", "-write]", "-stat]"] {
        let mut first = true;
        for sec in sections
            .iter()
            .filter(|x| x.lines().next().is_some_and(|l| l.ends_with(phase)))
        {
            out.push('\n');
            out.push_str(sec.trim_end());
            out.push('\n');
            if first && phase != "-create]" {
                out.push_str("stonewall\n");
            }
            first = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: &str, target: MixTarget, mix: FioMix) -> MixTenant {
        MixTenant {
            name: n.to_string(),
            target,
            mix,
            iodepth: 1,
            rate_iops: None,
        }
    }

    #[test]
    fn oltp_over_nbd_is_one_job_per_tenant_with_fsync_after_every_write() {
        let mut a = t(
            "t0",
            MixTarget::Nbd("nbd+unix:///v0?socket=/s".into()),
            FioMix::Oltp,
        );
        a.rate_iops = Some(150);
        a.iodepth = 4;
        let b = t(
            "t1",
            MixTarget::Nbd("nbd+unix:///v1?socket=/s".into()),
            FioMix::Oltp,
        );
        let f = job_file(&[a, b], &MixOptions::default()).unwrap();
        assert_eq!(f.matches("\n[t").count(), 2, "{f}");
        for needle in [
            "rw=randrw",
            "rwmixread=70",
            "bs=8k",
            "fsync=1",
            "uri=nbd+unix:///v1?socket=/s",
            "rate_iops=105,45",
            "iodepth=4",
            "runtime=30s",
            "thread=1",
        ] {
            assert!(f.contains(needle), "{needle} missing:\n{f}");
        }
        assert_eq!(
            f.matches("rate_iops").count(),
            1,
            "only t0 is rate-limited:\n{f}"
        );
    }

    #[test]
    fn log_appender_writes_sequentially_with_fdatasync_and_random_has_no_syncs() {
        let f = job_file(
            &[t(
                "a",
                MixTarget::Block("/dev/loop9".into()),
                FioMix::LogAppender,
            )],
            &MixOptions::default(),
        )
        .unwrap();
        for needle in [
            "rw=write",
            "bs=4k",
            "fdatasync=1",
            "filename=/dev/loop9",
            "direct=1",
        ] {
            assert!(f.contains(needle), "{needle} missing:\n{f}");
        }
        let f = job_file(
            &[t("a", MixTarget::Nbd("nbd://h/v".into()), FioMix::Random)],
            &MixOptions::default(),
        )
        .unwrap();
        assert!(
            f.contains("rw=randrw") && f.contains("bs=4k") && !f.contains("sync"),
            "{f}"
        );
    }

    #[test]
    fn small_files_run_in_three_phases_and_need_directories() {
        let f = job_file(
            &[
                t("a", MixTarget::Dir("/mnt/x".into()), FioMix::SmallFiles),
                t("b", MixTarget::Dir("/mnt/y".into()), FioMix::SmallFiles),
            ],
            &MixOptions {
                files: 50,
                ..Default::default()
            },
        )
        .unwrap();
        let order: Vec<&str> = f
            .lines()
            .filter(|l| l.starts_with('[') && l != &"[global]")
            .collect();
        assert_eq!(
            order,
            [
                "[a-create]",
                "[b-create]",
                "[a-write]",
                "[b-write]",
                "[a-stat]",
                "[b-stat]"
            ],
            "{f}"
        );
        assert_eq!(f.matches("stonewall").count(), 2, "{f}");
        assert!(f.contains("ioengine=filecreate") && f.contains("ioengine=filestat"));
        assert!(f.contains("directory=/mnt/y/b") && f.contains("nrfiles=50"));
        assert!(!f.contains("time_based"));
        let e = job_file(
            &[t(
                "a",
                MixTarget::Nbd("nbd://h/v".into()),
                FioMix::SmallFiles,
            )],
            &MixOptions::default(),
        )
        .unwrap_err();
        assert!(e.contains("needs a directory"), "{e}");
        let e = job_file(
            &[
                t("a", MixTarget::Dir("/d".into()), FioMix::SmallFiles),
                t("b", MixTarget::Dir("/d".into()), FioMix::Random),
            ],
            &MixOptions::default(),
        )
        .unwrap_err();
        assert!(e.contains("cannot share"), "{e}");
    }

    #[test]
    fn names_that_would_break_the_job_file_are_refused() {
        for bad in ["a]b", "a\nb", ";x"] {
            assert!(job_file(
                &[t(bad, MixTarget::Dir("/d".into()), FioMix::Oltp)],
                &MixOptions::default()
            )
            .is_err());
        }
        assert!(FioMix::parse("oltp").is_ok());
        assert!(FioMix::parse("olap")
            .unwrap_err()
            .contains("oltp, random, log_appender or small_files"));
    }
}
