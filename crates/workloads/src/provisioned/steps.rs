//! The workshop's steps for a spec: seed 003's sections (in-memory cache, NVMe cache, IOPS)
//! for a file system, or burst-then-baseline runs for a volume model; each with its fio
//! options, the figures of the spec it is judged against, and its default checks.

use harness::verdict::Kind;

use super::spec::{FsTarget, Spec, VolumeModel};
use storage_node::provisioned::FsSpec;

const MIB: u64 = 1 << 20;

/// Which bucket a burst step drains (it waits for it to be full first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// A provisioned file system's resource (`network`, `disk`, `disk_iops`).
    Resource(&'static str),
    /// The volume's IOPS or bytes bucket.
    VolumeIops,
    VolumeBytes,
}

impl Bucket {
    pub fn describe(&self) -> String {
        match self {
            Bucket::Resource(r) => format!("the {r} bucket"),
            Bucket::VolumeIops => "the volume's IOPS bucket".into(),
            Bucket::VolumeBytes => "the volume's throughput bucket".into(),
        }
    }
}

/// A step that runs until its bucket is empty and on at the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstStep {
    pub bucket: Bucket,
    /// The bucket's capacity (credits: bytes or I/Os) and baseline (units per second).
    pub capacity: f64,
    pub baseline: f64,
    /// Seconds from full at the step's rate: `capacity / (rate − baseline)`.
    pub seconds: f64,
}

/// The unit a step is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes per second; shown in MB/s (10^6, AWS's unit) for a file system, MiB/s for a
    /// volume (qoslab's MB).
    Bw,
    Iops,
}

/// One step of the workshop.
#[derive(Debug, Clone, PartialEq)]
pub struct StepDef {
    pub name: String,
    /// The seed's section it belongs to.
    pub section: &'static str,
    /// What it does, in the seed's words.
    pub test: String,
    pub connections: u32,
    /// The data set, for the table.
    pub data_set: String,
    /// fio options of its one job section (target and time options come from the run).
    pub options: Vec<(String, String)>,
    /// Seconds, time-based; `None`: one pass over the data set (a write that lays it out).
    pub runtime: Option<f64>,
    pub unit: Unit,
    /// The rate the spec says this step reaches while credits last (`spec.rate`).
    pub rate: Option<f64>,
    pub burst: Option<BurstStep>,
    /// The spec's figures for the table, in words.
    pub spec_text: String,
    /// Default checks.
    pub expect: Vec<String>,
}

impl StepDef {
    /// Its step-relative names: `spec.rate`, `spec.baseline`, `spec.burst_seconds`.
    pub fn value(&self, name: &str) -> Option<f64> {
        match name {
            "rate" => self.rate,
            "baseline" => self.burst.map(|b| b.baseline),
            "burst_seconds" => self.burst.map(|b| b.seconds),
            _ => None,
        }
    }

    /// The kinds of its step-relative names.
    pub fn kinds(&self) -> [(&'static str, Kind); 3] {
        let k = match self.unit {
            Unit::Bw => Kind::Bw,
            Unit::Iops => Kind::Iops,
        };
        [("rate", k), ("baseline", k), ("burst_seconds", Kind::Secs)]
    }

    /// Time it takes, roughly (one-pass writes: the data set at the rate).
    pub fn expected_secs(&self) -> f64 {
        self.runtime.unwrap_or(2.0)
    }
}

/// How long a burst step runs: the burst, then enough of the baseline to measure it.
pub fn burst_runtime(burst_s: f64) -> f64 {
    let t = burst_s + (burst_s * 0.5).max(5.0);
    (t * 2.0).ceil() / 2.0
}

fn opts(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .chain([("group_reporting".to_string(), "1".to_string())])
        .collect()
}

fn mib(x: u64) -> String {
    format!("{}MiB", x / MIB)
}

fn mb(x: f64) -> String {
    format!("{} MB/s", super::spec::mb(x))
}

/// A sequential job over `jobs` x `size` (one connection each on NBD).
fn seq(rw: &str, bs: &str, jobs: u32, qd: u32, size: u64) -> Vec<(String, String)> {
    opts(&[
        ("rw", rw.into()),
        ("bs", bs.into()),
        ("numjobs", jobs.to_string()),
        ("iodepth", qd.to_string()),
        // Bytes: fio reads "MiB" as 10^6 bytes unless kb_base says otherwise.
        ("size", size.to_string()),
        ("offset_increment", size.to_string()),
    ])
}

/// What a write is held to: the disk (every write costs disk bytes).
fn disk_text(f: &FsTarget) -> String {
    let d = &f.spec.disk;
    match d.burst {
        Some(b) => format!(
            "disk burst {}, baseline {}",
            mb(b.rate as f64),
            mb(d.baseline as f64)
        ),
        None => format!("disk {}", mb(d.baseline as f64)),
    }
}

/// The network's rate for `c` connections: its peak (burst or baseline), or each
/// connection's own limit times `c` when that is lower.
fn net_flow(s: &FsSpec, c: u32) -> f64 {
    let net = &s.network;
    let net_peak = net.burst.map_or(net.baseline, |b| b.rate) as f64;
    if s.per_connection == 0 {
        net_peak
    } else {
        net_peak.min(c as f64 * s.per_connection as f64)
    }
}

/// The network's burst at `rate` (None when it has none or `rate` is within its baseline).
fn net_burst(s: &FsSpec, rate: f64) -> Option<BurstStep> {
    let net = &s.network;
    net.burst.and_then(|b| {
        (rate > net.baseline as f64).then(|| BurstStep {
            bucket: Bucket::Resource("network"),
            capacity: b.bucket as f64,
            baseline: net.baseline as f64,
            seconds: b.bucket as f64 / (rate - net.baseline as f64),
        })
    })
}

/// The write that lays out a cache's data set (2 files of `size`): 1 MiB, 2 jobs x QD64,
/// or QD1 over fio's nfs engine ([`fio::sized_job_depth`]).
fn lay_out(
    f: &FsTarget,
    nfs: bool,
    (name, section): (&str, &'static str),
    why: &str,
    size: u64,
) -> StepDef {
    let lay_qd = fio::sized_job_depth(nfs, 64);
    StepDef {
        name: name.into(),
        section,
        test: format!(
            "1 MiB write, 2 jobs x QD{lay_qd} ({why}{})",
            if nfs { "; QD1: fio's nfs engine" } else { "" }
        ),
        connections: 2,
        data_set: format!("2 x {}", mib(size)),
        options: seq("write", "1M", 2, lay_qd, size),
        runtime: None,
        unit: Unit::Bw,
        rate: None,
        burst: None,
        spec_text: disk_text(f),
        expect: Vec::new(),
    }
}

const MEM: &str = "In-memory cache (throughput)";

/// Seed 003's workshop on a file system; `n` is the multi-connection step's connections
/// (`nconnect`), `runtime` the time-based steps' length, `nfs` whether fio reaches it with
/// its nfs engine (a NAS volume, `nfs://`).
pub fn fs_steps(f: &FsTarget, n: u32, runtime: f64, nfs: bool) -> Result<Vec<StepDef>, String> {
    let s = &f.spec;
    let file = f.memory_file();
    let per_job = (2 * file / u64::from(n)) / MIB * MIB;
    if per_job < MIB {
        return Err(format!(
            "the in-memory data set (2 x {}) cannot give {n} connections 1 MiB each: the memory cache is {:.0} MB at this scale (raise --scale or lower --connections)",
            mib(file),
            s.memory_cache as f64 / 1e6
        ));
    }
    let mut steps = vec![lay_out(
        f,
        nfs,
        ("mem-write", MEM),
        "lays out the data set",
        file,
    )];
    steps.push(mem_read_one(s, file, runtime));
    steps.push(mem_read_many(s, n, (file, per_job), runtime));
    if let Some(big) = f.nvme_file() {
        steps.extend(nvme_steps(f, n, big, runtime, nfs));
    }
    Ok(steps)
}

/// One connection: the single-flow limit (while credits last).
fn mem_read_one(s: &FsSpec, file: u64, runtime: f64) -> StepDef {
    let net = &s.network;
    let net_peak = net.burst.map_or(net.baseline, |b| b.rate) as f64;
    let one = net_flow(s, 1);
    let mut expect = vec!["bw >= spec.disk.baseline".to_string()];
    let lasts = net_burst(s, one).is_none_or(|b| b.seconds > runtime * 1.2);
    if lasts {
        expect.push("bw ~= spec.rate +-5%".into());
    }
    StepDef {
        name: "mem-read-1".into(),
        section: MEM,
        test: "1 MiB read, 1 connection, QD128".into(),
        connections: 1,
        data_set: format!("2 x {}", mib(file)),
        options: seq("read", "1M", 1, 128, 2 * file),
        runtime: Some(runtime),
        unit: Unit::Bw,
        rate: Some(one),
        burst: None,
        spec_text: if s.per_connection > 0 && (s.per_connection as f64) < net_peak {
            format!("single flow {}", mb(s.per_connection as f64))
        } else {
            format!("network {}", mb(one))
        },
        expect,
    }
}

/// n connections until the credits run out: burst, then the baseline.
fn mem_read_many(s: &FsSpec, n: u32, (file, per_job): (u64, u64), runtime: f64) -> StepDef {
    let net = &s.network;
    let one = net_flow(s, 1);
    let many = net_flow(s, n);
    let burst = net_burst(s, many);
    let mut expect = vec!["bw >= spec.disk.baseline".to_string()];
    if many > one * 1.05 {
        expect.push("bw_burst > step.mem-read-1.bw".into());
    }
    let (test, runtime_n, spec_text) = match burst {
        Some(b) => {
            expect.extend([
                "bw_burst ~= spec.rate +-5%".to_string(),
                "burst_duration ~= spec.burst_seconds +-5%".to_string(),
                "bw_after_credits ~= spec.baseline +-3%".to_string(),
                "bw_after_credits >= spec.disk.baseline".to_string(),
            ]);
            (
                format!("1 MiB read, {n} connections (nconnect={n}) until the credits run out"),
                burst_runtime(b.seconds),
                format!(
                    "network burst {} for {:.1} s, then baseline {}",
                    mb(many),
                    b.seconds,
                    mb(net.baseline as f64)
                ),
            )
        }
        None => {
            expect.push("bw ~= spec.rate +-5%".into());
            (
                format!("1 MiB read, {n} connections (nconnect={n})"),
                runtime,
                format!("network {}", mb(many)),
            )
        }
    };
    StepDef {
        name: format!("mem-read-{n}"),
        section: MEM,
        test,
        connections: n,
        data_set: format!("2 x {}", mib(file)),
        options: seq("read", "1M", n, (128 / n).max(1), per_job),
        runtime: Some(runtime_n),
        unit: Unit::Bw,
        rate: Some(many),
        burst,
        spec_text,
        expect,
    }
}

/// The NVMe cache's steps: its data set laid out (`big`, larger than the memory cache),
/// read over `n` connections, then 4 KiB writes and reads against the SSD IOPS.
fn nvme_steps(f: &FsTarget, n: u32, big: u64, runtime: f64, nfs: bool) -> Vec<StepDef> {
    let s = &f.spec;
    let net = &s.network;
    let nvme = "NVMe cache (throughput)";
    let set = format!("2 x {}", mib(big));
    let per_job = (2 * big / u64::from(n)) / MIB * MIB;
    let mut steps = vec![lay_out(
        f,
        nfs,
        ("nvme-write", nvme),
        "larger than the memory cache",
        big,
    )];
    steps.push(StepDef {
        name: "nvme-read".into(),
        section: nvme,
        test: format!("1 MiB read, {n} connections (from the NVMe cache)"),
        connections: n,
        data_set: set.clone(),
        options: seq("read", "1M", n, (128 / n).max(1), per_job.max(MIB)),
        runtime: Some(runtime),
        unit: Unit::Bw,
        rate: None,
        burst: None,
        spec_text: format!(
            "disk baseline {} (network {} once credits are spent)",
            mb(s.disk.baseline as f64),
            mb(net.baseline as f64)
        ),
        expect: vec!["bw >= spec.disk.baseline".into()],
    });
    let iops = "IOPS (NVMe cache)";
    for (name, rw, what) in [
        ("iops-write", "write", "write"),
        ("iops-read", "read", "read"),
    ] {
        steps.push(StepDef {
            name: name.into(),
            section: iops,
            test: format!("4 KiB {what}, 2 jobs x QD64"),
            connections: 2,
            data_set: set.clone(),
            options: seq(rw, "4k", 2, 64, big),
            runtime: Some(runtime),
            unit: Unit::Iops,
            rate: None,
            burst: None,
            spec_text: format!("provisioned SSD IOPS {}", s.ssd_iops),
            expect: if s.ssd_iops > 0 {
                vec!["iops >= spec.ssd_iops".into()]
            } else {
                Vec::new()
            },
        });
    }
    steps
}

/// A volume model: each bursting dimension from a full bucket until it is empty and on at
/// the baseline (4 KiB random reads for IOPS, 1 MiB sequential reads for throughput); a
/// volume that does not burst runs at its baseline for `runtime`.
pub fn volume_steps(v: &VolumeModel, runtime: f64) -> Vec<StepDef> {
    let l = &v.limits;
    let span = v.size.min(1 << 30) / MIB * MIB;
    let mut steps = Vec::new();
    let section = "Burst credits";
    let job = |rw: &str, bs: &str, qd: u32| {
        opts(&[
            ("rw", rw.into()),
            ("bs", bs.into()),
            ("iodepth", qd.to_string()),
            ("size", span.to_string()),
            ("randrepeat", "0".into()),
        ])
    };
    for (name, shape, base, bucket, unit) in [
        (
            "iops-burst",
            l.burst.iops,
            l.ceiling.iops,
            Bucket::VolumeIops,
            Unit::Iops,
        ),
        (
            "bw-burst",
            l.burst.bytes,
            l.ceiling.bytes_per_sec,
            Bucket::VolumeBytes,
            Unit::Bw,
        ),
    ] {
        let Some(b) = shape else { continue };
        let secs = b.bucket as f64 / (b.rate - base) as f64;
        let (m, test, options, rate_text) = match unit {
            Unit::Iops => (
                "iops",
                "4 KiB random read, QD16, until the credits run out",
                job("randread", "4k", 16),
                format!("{} IOPS", b.rate),
            ),
            Unit::Bw => (
                "bw",
                "1 MiB read, QD8, until the credits run out",
                job("read", "1M", 8),
                format!("{:.0} MiB/s", b.rate as f64 / MIB as f64),
            ),
        };
        let base_text = match unit {
            Unit::Iops => format!("{base} IOPS"),
            Unit::Bw => format!("{:.0} MiB/s", base as f64 / MIB as f64),
        };
        steps.push(StepDef {
            name: name.into(),
            section,
            test: test.into(),
            connections: 1,
            data_set: mib(span),
            options,
            runtime: Some(burst_runtime(secs)),
            unit,
            rate: Some(b.rate as f64),
            burst: Some(BurstStep {
                bucket,
                capacity: b.bucket as f64,
                baseline: base as f64,
                seconds: secs,
            }),
            spec_text: format!("burst {rate_text} for {secs:.1} s, then baseline {base_text}"),
            expect: vec![
                format!("{m}_burst ~= spec.rate +-5%"),
                "burst_duration ~= spec.burst_seconds +-5%".into(),
                format!("{m}_after_credits ~= spec.baseline +-1%"),
            ],
        });
    }
    if steps.is_empty() {
        steps.push(StepDef {
            name: "iops-baseline".into(),
            section,
            test: "4 KiB random read, QD16 (the volume does not burst)".into(),
            connections: 1,
            data_set: mib(span),
            options: job("randread", "4k", 16),
            runtime: Some(runtime),
            unit: Unit::Iops,
            rate: Some(l.ceiling.iops as f64),
            burst: None,
            spec_text: format!("baseline {} IOPS", l.ceiling.iops),
            expect: vec!["iops ~= spec.iops.baseline +-3%".into()],
        });
    }
    steps
}

/// The steps of `spec`; `nfs`: fio reaches the target with its nfs engine.
pub fn steps(
    spec: &Spec,
    connections: u32,
    runtime: f64,
    nfs: bool,
) -> Result<Vec<StepDef>, String> {
    match spec {
        Spec::Fs(f) => fs_steps(f, connections, runtime, nfs),
        Spec::Volume(v) => Ok(volume_steps(v, runtime)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(t: &str) -> Spec {
        Spec::from_table(&t.parse().unwrap(), "t").unwrap()
    }

    #[test]
    fn the_workshop_on_fsx_128() {
        let s = spec("preset = \"fsx-ontap-128\"\nscale = 0.005\n");
        let st = steps(&s, 16, 2.0, false).unwrap();
        let names: Vec<&str> = st.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mem-write",
                "mem-read-1",
                "mem-read-16",
                "nvme-write",
                "nvme-read",
                "iops-write",
                "iops-read"
            ]
        );
        // One connection: the 625 MB/s single flow, well inside the 20.8 s it can burst.
        assert_eq!(st[1].rate, Some(625e6));
        assert!(st[1].expect.contains(&"bw ~= spec.rate +-5%".to_string()));
        // Sixteen: the network burst, 9900 MB of credits over 1,100 MB/s = 9 s, then 150.
        let b = st[2].burst.unwrap();
        assert_eq!(st[2].rate, Some(1250e6));
        assert!(
            (b.seconds - 9.0).abs() < 1e-9 && b.baseline == 150e6,
            "{b:?}"
        );
        assert_eq!(st[2].runtime, Some(14.0));
        assert_eq!(st[2].value("burst_seconds"), Some(b.seconds));
        assert!(st[2]
            .expect
            .contains(&"bw_burst > step.mem-read-1.bw".to_string()));
        let o = |i: usize, k: &str| st[i].options.iter().find(|o| o.0 == k).map(|o| o.1.clone());
        assert_eq!(o(2, "numjobs").as_deref(), Some("16"));
        assert_eq!(o(2, "iodepth").as_deref(), Some("8"));
        assert_eq!(o(2, "size").as_deref(), Some("2097152"));
        assert_eq!(o(5, "bs").as_deref(), Some("4k"));
        assert_eq!(st[6].expect, ["iops >= spec.ssd_iops"]);
        assert!(
            st[2]
                .spec_text
                .contains("network burst 1250 MB/s for 9.0 s, then baseline 150 MB/s"),
            "{}",
            st[2].spec_text
        );
        // Over NFS the lay-out writes run at QD1 (fio's nfs engine ends a sized job early at
        // a deeper queue) and say so; the read steps are unchanged.
        let nfs = steps(&s, 16, 2.0, true).unwrap();
        for i in [0, 3] {
            let on = |st: &[StepDef], k: &str| {
                st[i].options.iter().find(|o| o.0 == k).map(|o| o.1.clone())
            };
            assert_eq!(on(&st, "iodepth").as_deref(), Some("64"));
            assert_eq!(on(&nfs, "iodepth").as_deref(), Some("1"));
            assert!(nfs[i].test.contains("2 jobs x QD1"), "{}", nfs[i].test);
        }
        assert_eq!(nfs[2].options, st[2].options);
        // Too small a memory cache for 16 connections.
        let tiny = spec("preset = \"fsx-ontap-128\"\nscale = 0.001\n");
        assert!(steps(&tiny, 16, 2.0, false)
            .unwrap_err()
            .contains("raise --scale"));
        assert_eq!(steps(&tiny, 2, 2.0, false).unwrap().len(), 7);
    }

    #[test]
    fn a_tier_without_burst_checks_the_flat_rate() {
        let s = spec("preset = \"fsx-ontap-2048\"\nscale = 0.001\n");
        let st = steps(&s, 16, 2.0, false).unwrap();
        assert_eq!(st[2].burst, None);
        assert!(st[2].expect.contains(&"bw ~= spec.rate +-5%".to_string()));
    }

    #[test]
    fn gp2_bursts_then_holds_its_baseline() {
        let s = spec("model = \"ebs-gp2\"\nsize = \"100GiB\"\nbucket_scale = 0.0025\n");
        let st = steps(&s, 16, 2.0, false).unwrap();
        assert_eq!(st.len(), 1);
        assert_eq!(st[0].name, "iops-burst");
        assert!((st[0].burst.unwrap().seconds - 5.0).abs() < 1e-9);
        assert_eq!(st[0].runtime, Some(10.0));
        assert_eq!(
            st[0].expect,
            [
                "iops_burst ~= spec.rate +-5%",
                "burst_duration ~= spec.burst_seconds +-5%",
                "iops_after_credits ~= spec.baseline +-1%"
            ]
        );
        let big = spec("model = \"ebs-gp2\"\nsize = \"2000GiB\"\n");
        assert_eq!(
            steps(&big, 16, 2.0, false).unwrap()[0].name,
            "iops-baseline"
        );
        let st1 = spec("model = \"ebs-st1\"\nsize = \"1TiB\"\nbucket_scale = 0.001\n");
        assert_eq!(steps(&st1, 16, 2.0, false).unwrap()[0].name, "bw-burst");
    }
}
