//! The seed's seven fio job files (Virtuozzo's guide, "Preparing benchmarks for disks"), as
//! `bench` job files with the sizing rules applied.
//!
//! All seven share `direct=1`, `buffered=0`, `ioengine=libaio`, `fdatasync=32`; they differ
//! in block size, pattern and queue depth. The seed runs them to completion of `size`; qoslab
//! runs them for `runtime` seconds over a region of `size` bytes per job (`time_based`), so
//! iterations take a known time (the seed's "at least 60 s each").

use fio::{JobFile, Section};
use serde::Serialize;

use crate::sizing::Sizing;

/// One of the seed's job files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SeedJob {
    SingleRandWrite,
    SingleSeqWrite,
    WriteAll,
    ReadRandom,
    WriteRandom,
    ReadSeq,
    WriteSeq,
}

impl SeedJob {
    pub const ALL: [SeedJob; 7] = [
        SeedJob::SingleRandWrite,
        SeedJob::SingleSeqWrite,
        SeedJob::WriteAll,
        SeedJob::ReadRandom,
        SeedJob::WriteRandom,
        SeedJob::ReadSeq,
        SeedJob::WriteSeq,
    ];

    /// The seed's file name.
    pub fn name(self) -> &'static str {
        match self {
            SeedJob::SingleRandWrite => "fio.write.single.randwrite",
            SeedJob::SingleSeqWrite => "fio.write.single.seqwrite",
            SeedJob::WriteAll => "fio.write.all",
            SeedJob::ReadRandom => "fio.read.random",
            SeedJob::WriteRandom => "fio.write.random",
            SeedJob::ReadSeq => "fio.read.seq",
            SeedJob::WriteSeq => "fio.write.seq",
        }
    }

    /// By the seed's name, with or without the `fio.` prefix.
    pub fn parse(s: &str) -> Result<SeedJob, String> {
        let want = s.trim();
        SeedJob::ALL
            .into_iter()
            .find(|j| j.name() == want || j.name().strip_prefix("fio.") == Some(want))
            .ok_or_else(|| {
                format!(
                    "unknown job {want:?} (allowed: {})",
                    SeedJob::ALL.map(|j| j.name()).join(", ")
                )
            })
    }

    /// (block size, rw, the file's iodepth)
    pub fn shape(self) -> (&'static str, &'static str, u32) {
        match self {
            SeedJob::SingleRandWrite | SeedJob::WriteAll | SeedJob::WriteRandom => {
                ("4k", "randwrite", 32)
            }
            SeedJob::SingleSeqWrite => ("1m", "write", 32),
            SeedJob::ReadRandom => ("4k", "randread", 32),
            SeedJob::ReadSeq => ("1m", "read", 16),
            SeedJob::WriteSeq => ("1m", "write", 16),
        }
    }
}

/// Where a job's I/O goes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Target {
    /// Raw block devices (several: one job spreads over all, the seed's `fio.write.all`).
    Devices(Vec<String>),
    /// A directory (a file-system mount): one file per job, `qoslab.<jobnum>`, so the
    /// prepared data set is the one every job reads and writes (a `fio --server` prefixes
    /// the name with the client's address: `10.0.0.5.qoslab.0`, the same in every run).
    Directory(String),
    /// An NFS export reached by fio's `nfs` ioengine (libnfs, no kernel mount): `url` is
    /// libnfs's `nfs://HOST/PATH[?nfsport=P&mountport=P]`; `name` (the load generator's)
    /// keeps the generators' files apart in the one export they share: `qoslab.NAME.<jobnum>`.
    Nfs { url: String, name: String },
    /// An NFS export the suite kernel-mounted at `dir` on the load generator
    /// (`mount+nfs://`): the seed's `libaio direct=1`, and the files named as over fio's
    /// nfs engine, `qoslab.NAME.<jobnum>` (`unique_filename=0`: every generator is driven
    /// by the same coordinator, so fio's client-address prefix would not keep them apart
    /// in the export they share).
    Mounted { dir: String, name: String },
}

impl Target {
    fn is_nfs(&self) -> bool {
        matches!(self, Target::Nfs { .. })
    }
}

/// fio's global options for `t`: the seed's `ioengine=libaio direct=1 buffered=0`, or for
/// an NFS export fio's `nfs` engine (libnfs keeps no page cache; `direct`/`buffered` do not
/// apply).
fn engine(g: &mut Section, t: &Target) {
    match t {
        Target::Nfs { url, .. } => {
            g.set("ioengine", "nfs").set("nfs_url", url.as_str());
        }
        _ => {
            g.set("ioengine", "libaio")
                .set("direct", "1")
                .set("buffered", "0");
        }
    }
}

/// Timing of a measured run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    pub runtime_s: u32,
    pub ramp_s: u32,
}

fn target(sec: &mut Section, t: &Target) {
    match t {
        Target::Devices(d) => {
            sec.set("filename", d.join(":"));
        }
        Target::Directory(d) => {
            sec.set("directory", d.as_str());
            sec.set("filename_format", "qoslab.$jobnum");
        }
        Target::Mounted { dir, name } => {
            sec.set("directory", dir.as_str())
                .set("unique_filename", "0")
                .set(
                    "filename_format",
                    format!("qoslab.{}.$jobnum", safe_name(name)),
                );
        }
        Target::Nfs { name, .. } => {
            sec.set(
                "filename_format",
                format!("qoslab.{}.$jobnum", safe_name(name)),
            );
        }
    }
}

/// A host name as a file-name part.
fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The seed's job file `job`, sized, on `t`, for `timing`.
pub fn job_file(job: SeedJob, sizing: &Sizing, t: &Target, timing: Timing) -> JobFile {
    let (bs, rw, depth) = job.shape();
    let mut f = JobFile::new();
    let g = &mut f.global;
    engine(g, t);
    if !t.is_nfs() {
        // fio's nfs engine cannot issue a sync (it fails the job: "unhandled io").
        g.set("fdatasync", "32");
    }
    g.set("group_reporting", "1")
        .set("time_based", "1")
        .set("runtime", format!("{}s", timing.runtime_s))
        .set("ramp_time", format!("{}s", timing.ramp_s));
    let mut j = Section::new(job.name());
    j.set("blocksize", bs)
        .set("rw", rw)
        .set("iodepth", sizing.iodepth.unwrap_or(depth).to_string())
        .set("size", sizing.size_bytes.to_string())
        .set("numjobs", sizing.numjobs.to_string());
    target(&mut j, t);
    f.jobs.push(j);
    f
}

/// Write the region every job uses once, sequentially (1 MiB, QD 16): the prefill for a
/// device, the seed's `prepare-set.fio` for a directory (it creates each job's file). Over
/// fio's nfs engine at QD 1 ([`fio::sized_job_depth`]; the engine creates a file only on a
/// sequential write).
pub fn prepare_file(sizing: &Sizing, t: &Target) -> JobFile {
    let mut f = JobFile::new();
    engine(&mut f.global, t);
    f.global
        .set("blocksize", "1m")
        .set("iodepth", fio::sized_job_depth(t.is_nfs(), 16).to_string())
        .set("rw", "write")
        .set("group_reporting", "1");
    match t {
        Target::Devices(devs) => {
            // One section per device so each gets its whole region.
            for (k, d) in devs.iter().enumerate() {
                let mut s = Section::new(format!("prefill{k}"));
                s.set("filename", d.as_str())
                    .set("size", sizing.size_bytes.to_string());
                f.jobs.push(s);
            }
        }
        Target::Directory(_) | Target::Nfs { .. } | Target::Mounted { .. } => {
            let mut s = Section::new("prepare-set");
            s.set("size", sizing.size_bytes.to_string())
                .set("numjobs", sizing.numjobs.to_string());
            target(&mut s, t);
            f.jobs.push(s);
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizing() -> Sizing {
        Sizing {
            size_bytes: 64 << 20,
            numjobs: 2,
            iodepth: Some(4),
            ssd: false,
            notes: Vec::new(),
        }
    }

    #[test]
    fn seven_jobs_with_the_seeds_options() {
        assert_eq!(SeedJob::ALL.len(), 7);
        let f = job_file(
            SeedJob::SingleRandWrite,
            &sizing(),
            &Target::Devices(vec!["/dev/a".into(), "/dev/b".into()]),
            Timing {
                runtime_s: 60,
                ramp_s: 2,
            },
        );
        let text = f.render();
        for opt in [
            "ioengine=libaio",
            "direct=1",
            "buffered=0",
            "fdatasync=32",
            "[fio.write.single.randwrite]",
            "blocksize=4k",
            "rw=randwrite",
            "iodepth=4",
            "numjobs=2",
            "size=67108864",
            "filename=/dev/a:/dev/b",
            "runtime=60s",
        ] {
            assert!(text.contains(opt), "{opt} missing:\n{text}");
        }
        let ssd = Sizing {
            iodepth: None,
            ..sizing()
        };
        let f = job_file(
            SeedJob::ReadSeq,
            &ssd,
            &Target::Directory("/mnt/t".into()),
            Timing {
                runtime_s: 5,
                ramp_s: 0,
            },
        );
        let text = f.render();
        assert!(
            text.contains("iodepth=16")
                && text.contains("rw=read")
                && text.contains("directory=/mnt/t")
        );
        assert_eq!(SeedJob::parse("read.seq").unwrap(), SeedJob::ReadSeq);
        assert!(SeedJob::parse("nope")
            .unwrap_err()
            .contains("fio.write.all"));
    }

    #[test]
    fn prefill_covers_each_device() {
        let f = prepare_file(
            &sizing(),
            &Target::Devices(vec!["/dev/a".into(), "/dev/b".into()]),
        );
        assert_eq!(f.jobs.len(), 2);
        assert_eq!(f.effective(1, "filename"), Some("/dev/b"));
        let f = prepare_file(&sizing(), &Target::Directory("/d".into()));
        assert_eq!(f.effective(0, "filename_format"), Some("qoslab.$jobnum"));
        assert_eq!(f.effective(0, "numjobs"), Some("2"));
    }

    #[test]
    fn an_nfs_export_through_fios_nfs_engine() {
        let t = Target::Nfs {
            url: "nfs://10.0.0.1/nas?nfsport=2049&mountport=2049".into(),
            name: "root@lg1".into(),
        };
        let timing = Timing {
            runtime_s: 5,
            ramp_s: 1,
        };
        let text = job_file(SeedJob::WriteRandom, &sizing(), &t, timing).render();
        for opt in [
            "ioengine=nfs",
            "nfs_url=nfs://10.0.0.1/nas?nfsport=2049&mountport=2049",
            "filename_format=qoslab.root_lg1.$jobnum",
            "rw=randwrite",
            "iodepth=4",
        ] {
            assert!(text.contains(opt), "{opt} missing:\n{text}");
        }
        for absent in ["libaio", "direct", "fdatasync", "directory="] {
            assert!(!text.contains(absent), "{absent} present:\n{text}");
        }
        let p = prepare_file(&sizing(), &t);
        assert_eq!(p.global.get("iodepth"), Some("1"));
        assert_eq!(p.global.get("ioengine"), Some("nfs"));
        assert_eq!(
            p.effective(0, "filename_format"),
            Some("qoslab.root_lg1.$jobnum")
        );
    }
}
