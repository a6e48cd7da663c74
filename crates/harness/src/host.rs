//! Host facts: where and with what a run happened (recorded with every run).

use serde::{Deserialize, Serialize};

/// Where and with what a run happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Env {
    pub host: String,
    pub kernel: String,
    pub cpu: String,
    pub fio_version: String,
    pub qoslab_version: String,
}

impl Env {
    /// This machine (hostname, kernel release, CPU model from /proc) and `fio --version`.
    pub fn detect(fio_version: String, qoslab_version: &str) -> Env {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0);
        Env {
            host: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            cpu: format!("{cpu} ({cores} cores)"),
            fio_version,
            qoslab_version: qoslab_version.to_string(),
        }
    }
}
