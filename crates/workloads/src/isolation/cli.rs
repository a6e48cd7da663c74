//! The isolation family's command-line options (added to `qoslab bench`).

use clap::Args;

use super::spec::{IsolationSpec, Protocol};

/// Options of the isolation profile (ignored by other profiles).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Isolation profile (--profile isolation)")]
pub struct IsolationArgs {
    /// Emulated controller capacity, IOPS.
    #[arg(long, value_name = "IOPS", default_value_t = 20_000)]
    pub capacity_iops: u64,
    /// Number of protected volumes.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub protected: usize,
    /// Each protected volume's floor, which it is also driven at (default: half the
    /// capacity split between the protected volumes: 5,000 each for 2 on 20,000).
    #[arg(long, value_name = "IOPS")]
    pub floor_iops: Option<u64>,
    /// fio iodepth of each protected volume.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub protected_qd: u32,
    /// fio iodepth of the bully.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub bully_qd: u32,
    /// fio jobs (processes, each with its own NBD connection or iSCSI session) per
    /// protected volume, each at its share of the floor (default: what the floor needs,
    /// one per 60,000 IOPS).
    #[arg(long, value_name = "N")]
    pub protected_jobs: Option<u32>,
    /// fio jobs for the bully, each at its share of the step's rate (default: what the
    /// top step's rate needs, one per 60,000 IOPS).
    #[arg(long, value_name = "N")]
    pub bully_jobs: Option<u32>,
    /// Steps of the bully's ramp from 1x to --max-load x the capacity the floors leave.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub steps: u32,
    /// The bully's top load, as a multiple of the remaining capacity.
    #[arg(long, value_name = "X", default_value_t = 2.0)]
    pub max_load: f64,
    /// fio block size for every volume.
    #[arg(long, value_name = "SIZE", default_value = "4k")]
    pub bs: String,
    /// fio rw mode for every volume.
    #[arg(long, value_name = "MODE", default_value = "randread")]
    pub rw: String,
    /// Skip the control run (the same scenario with floors disabled).
    #[arg(long)]
    pub no_control: bool,
    /// How fio reaches the volumes: nbd (fio's nbd engine), or iscsi (the embedded node
    /// serves each volume as a LUN on a loopback port; fio's libiscsi engine, every SCSI
    /// command one operation, as ONTAP counts SAN operations).
    #[arg(long, value_name = "PROTOCOL", value_enum, default_value_t = Protocol::Nbd)]
    pub protocol: Protocol,
}

impl IsolationArgs {
    /// The spec; `runtime`/`ramp` per step (defaults 5 s and 1 s). Errors name the option.
    pub fn spec(&self, runtime: Option<f64>, ramp: Option<f64>) -> Result<IsolationSpec, String> {
        let bs = fio_size(&self.bs).map_err(|e| format!("--bs {:?}: {e}", self.bs))?;
        let floor = self
            .floor_iops
            .unwrap_or_else(|| self.capacity_iops / 2 / (self.protected.max(1) as u64));
        let mut spec = IsolationSpec {
            capacity_iops: self.capacity_iops,
            protected: self.protected,
            floor_iops: floor,
            protected_qd: self.protected_qd,
            bully_qd: self.bully_qd,
            steps: self.steps,
            max_load: self.max_load,
            bs,
            rw: self.rw.clone(),
            runtime: runtime.unwrap_or(5.0),
            ramp: ramp.unwrap_or(1.0),
            control: !self.no_control,
            protocol: self.protocol,
            ..IsolationSpec::default()
        };
        spec.protected_jobs = self
            .protected_jobs
            .unwrap_or_else(|| super::spec::jobs_for(floor));
        spec.bully_jobs = self
            .bully_jobs
            .unwrap_or_else(|| super::spec::jobs_for(spec.bully_iops(spec.max_load)));
        spec.validate()
            .map_err(|e| format!("--profile isolation: {e}"))?;
        Ok(spec)
    }
}

/// A size as fio writes it (`4k`, `1m`: powers of 1024) or with a unit (`4KiB`, `4096`).
fn fio_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        _ => return qos_core::parse_size(t).map_err(|e| e.to_string()),
    };
    num.parse::<u64>()
        .map(|n| n * mul)
        .map_err(|_| "expected e.g. 4k, 64k, 1m or 4096".to_string())
}
