//! What the isolation scenario runs: the spec (validated once), its embedded nodes, and
//! the fio job file of one step.

use fio::jobfile::fio_time;
use fio::{JobFile, Section};
use harness::recording::SeriesRecorder;
use harness::target::EmbeddedNode;

/// What to run. [`IsolationSpec::default`] is seed 001 scaled to a laptop.
#[derive(Debug, Clone, PartialEq)]
pub struct IsolationSpec {
    /// The emulated controller's capacity, IOPS.
    pub capacity_iops: u64,
    /// Number of protected volumes.
    pub protected: usize,
    /// Each protected volume's floor, and the rate it is driven at.
    pub floor_iops: u64,
    /// fio iodepth of each protected volume.
    pub protected_qd: u32,
    /// fio iodepth of the bully.
    pub bully_qd: u32,
    /// fio jobs (processes, each with its own NBD connection or iSCSI session) per
    /// protected volume and for the bully; each runs at its share of the volume's rate
    /// and at the volume's iodepth. [`jobs_for`] is what a rate needs.
    pub protected_jobs: u32,
    pub bully_jobs: u32,
    /// Number of steps from 1x to `max_load` x the remaining capacity.
    pub steps: u32,
    pub max_load: f64,
    /// fio block size (bytes) and rw mode, for every volume.
    pub bs: u64,
    pub rw: String,
    /// Per step, seconds.
    pub runtime: f64,
    pub ramp: f64,
    /// Also run the control (FIFO, no floors).
    pub control: bool,
    /// How fio reaches the volumes: NBD, or each volume a LUN over iSCSI.
    pub protocol: Protocol,
}

/// How fio reaches the embedded node's volumes (`--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Protocol {
    /// fio's nbd engine on the node's unix socket.
    #[default]
    Nbd,
    /// Each volume a LUN (`[[iscsi.lun]]`) of the node's target on a loopback TCP port,
    /// fio's libiscsi engine (a session per job); every SCSI command one operation.
    Iscsi,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Nbd => "nbd",
            Protocol::Iscsi => "iscsi",
        }
    }

    /// "NBD" or "iSCSI", for people.
    pub fn shown(self) -> &'static str {
        match self {
            Protocol::Nbd => "NBD",
            Protocol::Iscsi => "iSCSI",
        }
    }

    /// What a volume is called over it, one or more ("volume(s)", "LUN(s)").
    pub fn units(self) -> &'static str {
        match self {
            Protocol::Nbd => "volume(s)",
            Protocol::Iscsi => "LUN(s)",
        }
    }

    /// How fio reaches the volumes, for the run's header and plan text.
    pub fn path(self) -> &'static str {
        match self {
            Protocol::Nbd => "NBD (fio's nbd engine, unix socket)",
            Protocol::Iscsi => "iSCSI (each volume a LUN; fio's libiscsi engine, loopback TCP)",
        }
    }
}

impl Default for IsolationSpec {
    fn default() -> Self {
        IsolationSpec {
            capacity_iops: 20_000,
            protected: 2,
            floor_iops: 5_000,
            protected_qd: 16,
            bully_qd: 64,
            protected_jobs: 1,
            bully_jobs: 1,
            steps: 5,
            max_load: 2.0,
            bs: 4096,
            rw: "randread".into(),
            runtime: 5.0,
            ramp: 1.0,
            control: true,
            protocol: Protocol::Nbd,
        }
    }
}

/// The IOPS one fio job (one process, one NBD connection) is planned to drive: seed 001's
/// figures on a 16-core machine saw one job top out at 137k IOPS at QD128; half of that
/// leaves room for a smaller load generator.
pub const JOB_IOPS: u64 = 60_000;

/// The fio jobs a rate needs (at least 1).
pub fn jobs_for(iops: u64) -> u32 {
    iops.div_ceil(JOB_IOPS).max(1) as u32
}

/// Which run of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// mClock: floors enforced.
    Floors,
    /// FIFO: the same node without floor QoS.
    Control,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Floors => "floors",
            Mode::Control => "control",
        }
    }
}

impl IsolationSpec {
    /// Check the spec once, at the edge; messages name the option and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        if !(100..=10_000_000).contains(&self.capacity_iops) {
            return Err(format!(
                "capacity {} IOPS: allowed 100 to 10,000,000",
                self.capacity_iops
            ));
        }
        if !(1..=16).contains(&self.protected) {
            return Err(format!(
                "protected volumes {}: allowed 1 to 16",
                self.protected
            ));
        }
        let floors = self.floor_iops * self.protected as u64;
        if self.floor_iops == 0 || floors >= self.capacity_iops {
            return Err(format!(
                "floors {} x {} IOPS = {floors} IOPS must be above 0 and leave capacity for the bully (capacity {} IOPS)",
                self.protected, self.floor_iops, self.capacity_iops
            ));
        }
        for (what, qd) in [
            ("protected iodepth", self.protected_qd),
            ("bully iodepth", self.bully_qd),
        ] {
            if !(1..=1024).contains(&qd) {
                return Err(format!("{what} {qd}: allowed 1 to 1024"));
            }
        }
        for (what, n) in [
            ("protected jobs", self.protected_jobs),
            ("bully jobs", self.bully_jobs),
        ] {
            if !(1..=64).contains(&n) {
                return Err(format!("{what} {n}: allowed 1 to 64"));
            }
        }
        if !(1..=20).contains(&self.steps) {
            return Err(format!("steps {}: allowed 1 to 20", self.steps));
        }
        if !(self.max_load >= 1.0 && self.max_load <= 10.0) {
            return Err(format!("max load {}x: allowed 1 to 10", self.max_load));
        }
        if !(512..=(4 << 20)).contains(&self.bs) || !self.bs.is_multiple_of(512) {
            return Err(format!(
                "block size {}: allowed 512 B to 4 MiB, a multiple of 512",
                self.bs
            ));
        }
        if !matches!(
            self.rw.as_str(),
            "randread" | "randwrite" | "randrw" | "read" | "write" | "rw"
        ) {
            return Err(format!(
                "rw {:?}: allowed randread, randwrite, randrw, read, write, rw",
                self.rw
            ));
        }
        if !(self.runtime > 0.0 && self.runtime <= 3600.0 && (0.0..=600.0).contains(&self.ramp)) {
            return Err("runtime must be in (0, 3600] s and ramp in [0, 600] s".into());
        }
        Ok(())
    }

    /// Capacity left after the floors.
    pub fn remaining(&self) -> u64 {
        self.capacity_iops - self.floor_iops * self.protected as u64
    }

    /// The bully's load per step, as multiples of the remaining capacity.
    pub fn loads(&self) -> Vec<f64> {
        let n = self.steps.max(1);
        (0..n)
            .map(|k| {
                if n == 1 {
                    self.max_load
                } else {
                    1.0 + (self.max_load - 1.0) * f64::from(k) / f64::from(n - 1)
                }
            })
            .collect()
    }

    /// Names of the protected volumes.
    pub fn protected_names(&self) -> Vec<String> {
        (1..=self.protected)
            .map(|i| format!("protected-{i}"))
            .collect()
    }

    /// The embedded node of one mode.
    pub fn node_toml(&self, mode: Mode) -> String {
        let mut t = format!(
            "[capacity]\niops = {}\ndiscipline = \"{}\"\n\n[[policy]]\nname = \"floor\"\nfixed = {{ min_throughput_iops = {} }}\n",
            self.capacity_iops,
            match mode {
                Mode::Floors => "mclock",
                Mode::Control => "fifo",
            },
            self.floor_iops
        );
        for v in self.protected_names() {
            t.push_str(&format!(
                "\n[[volume]]\nname = \"{v}\"\nsize = \"10GB\"\nsnapshot_reserve_percent = 0\npolicy = \"floor\"\n"
            ));
        }
        t.push_str(
            "\n[[volume]]\nname = \"bully\"\nsize = \"10GB\"\nsnapshot_reserve_percent = 0\n",
        );
        if self.protocol == Protocol::Iscsi {
            // LUN 0, 1, ... for the protected volumes, the bully last.
            for v in self
                .protected_names()
                .iter()
                .chain(["bully".to_string()].iter())
            {
                t.push_str(&format!("\n[[iscsi.lun]]\nvolume = \"{v}\"\n"));
            }
        }
        t
    }

    /// A one-paragraph description (stored as the run's plan text).
    pub fn describe(&self) -> String {
        format!(
            "# qoslab bench --profile isolation\n# {} protected volume(s) at a {} IOPS floor (driven at that rate, iodepth {}), \
             a bully (no policy, iodepth {}) offered {}..{} IOPS in {} step(s) ({:.2}x..{:.2}x the remaining {} IOPS), \
             {} {} B, {} s per step (+{} s ramp), emulated controller {} IOPS, over {}; control run (FIFO): {}\n\n{}",
            self.protected,
            self.floor_iops,
            self.protected_qd,
            self.bully_qd,
            self.bully_iops(self.loads()[0]),
            self.bully_iops(self.max_load),
            self.steps,
            self.loads()[0],
            self.max_load,
            self.remaining(),
            self.rw,
            self.bs,
            self.runtime,
            self.ramp,
            self.capacity_iops,
            self.protocol.path(),
            if self.control { "yes" } else { "no" },
            self.node_toml(Mode::Floors)
        )
    }

    /// The bully's offered IOPS at `load` x the remaining capacity.
    pub fn bully_iops(&self, load: f64) -> u64 {
        (self.remaining() as f64 * load).round() as u64
    }

    /// The fio job file of one step (`logs`: ask each job for its time-series logs,
    /// numbered from `first_seq`). Over iSCSI, every volume must be a LUN of `node` (the
    /// node of [`Self::node_toml`]); the error names the one that is not.
    pub fn job_file(
        &self,
        node: &EmbeddedNode,
        load: f64,
        logs: Option<(&SeriesRecorder, usize)>,
    ) -> Result<JobFile, String> {
        let mut f = JobFile::new();
        let many = self.protected_jobs > 1 || self.bully_jobs > 1;
        if many {
            // One result per volume: each section its own group, its jobs reported as one.
            f.global.set("group_reporting", "1");
        }
        // Each volume's own option: its NBD URI, or its LUN's (escaped) libiscsi URL.
        let target = |v: &str| -> Result<(String, String), String> {
            match self.protocol {
                Protocol::Nbd => Ok(("uri".into(), node.uri(v))),
                Protocol::Iscsi => {
                    let url = node.iscsi_url(v).ok_or_else(|| {
                        format!("isolation over iSCSI: volume {v:?} is no LUN of the node")
                    })?;
                    harness::iscsi::options(&url)
                        .into_iter()
                        .find(|(k, _)| k == "filename")
                        .ok_or_else(|| format!("isolation over iSCSI: no filename for {url}"))
                }
            }
        };
        let section = |name: String, opt: (String, String), qd: u32, iops: u64, jobs: u32| {
            let mut s = Section::new(name);
            s.set(&opt.0, opt.1);
            s.set("iodepth", qd.to_string());
            // fio's rate_iops is per job: each job drives its share.
            s.set("rate_iops", iops.div_ceil(jobs as u64).to_string());
            if many {
                s.set("new_group", "1");
                s.set("numjobs", jobs.to_string());
            }
            s
        };
        match self.protocol {
            Protocol::Nbd => {
                f.global.set("ioengine", "nbd");
            }
            Protocol::Iscsi => {
                f.global.set("ioengine", "libiscsi");
                f.global.set("initiator", harness::iscsi::INITIATOR);
            }
        }
        f.global.set("rw", self.rw.clone());
        f.global.set("bs", self.bs.to_string());
        f.global.set("time_based", "1");
        f.global.set("runtime", fio_time(self.runtime));
        if self.ramp > 0.0 {
            f.global.set("ramp_time", fio_time(self.ramp));
        }
        for v in self.protected_names() {
            let opt = target(&v)?;
            f.jobs.push(section(
                v,
                opt,
                self.protected_qd,
                self.floor_iops,
                self.protected_jobs,
            ));
        }
        f.jobs.push(section(
            "bully".into(),
            target("bully")?,
            self.bully_qd,
            self.bully_iops(load),
            self.bully_jobs,
        ));
        if let Some((rec, first)) = logs {
            for (i, s) in f.jobs.iter_mut().enumerate() {
                rec.add_section_log_options(first + i, s);
            }
        }
        Ok(f)
    }
}
