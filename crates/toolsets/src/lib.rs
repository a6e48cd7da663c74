//! Host tool sets, pbench-style: while a job runs, sample every second what the classic
//! tools report — mpstat (per-CPU usr/sys/iowait/irq/steal/idle), vmstat (run queue,
//! memory, swap and paging), `iostat -x` (per-disk r/s, w/s, MB/s, await, aqu-sz, %util),
//! sar -n DEV (per-NIC bytes, packets, drops), pidstat (CPU of fio, the node, the harness
//! and the busiest other processes; the I/O of fio and the node) and the kernel's pressure
//! stall information — from `/proc`, parsed by procfs-core.
//!
//! - [`source`]: the seam. A [`ProcSource`] returns the raw files; [`LocalProc`] reads this
//!   machine, and a remote transport runs [`source::SNAPSHOT_SCRIPT`] and hands its output to
//!   [`RawSnapshot::from_framed`]. Every host is parsed and computed by the same code.
//! - [`counters`]: one instant's cumulative counters (procfs-core's parsers).
//! - [`pressure`]: the kernel's pressure stall information (PSI) of the host and of the
//!   cgroups fio and the node run in: the share of each interval runnable tasks waited.
//! - [`rates`]: two instants → one [`HostSample`] (pure; the classic tools' formulas).
//! - [`roles`]: whose process is whose (fio, node, harness, kernel, other).
//! - [`sampler`]: one thread per host; [`Sampler::stop`] returns the [`HostSeries`].
//! - [`device`]: the block devices behind a path (the node's data directory, a target).
//! - [`listener`]: the local process serving an address (a node running here on its own).
//!
//! **Invariants:** the sampler never blocks the caller (its own threads, stopped by a
//! condition variable); a host that cannot be read yields a series with errors, never a
//! panic; a sample is a rate over the host's own clock (`/proc/uptime`, as iostat does); the
//! sampler's own CPU is measured (`HostSeries::overhead`).

pub mod cgroup;
pub mod counters;
pub mod device;
pub mod listener;
pub mod pressure;
pub mod rates;
pub mod roles;
pub mod sample;
pub mod sampler;
pub mod source;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use pressure::Pressure;
pub use roles::{Role, Roles, ThreadRule, GENERATOR_THREADS, NODE_THREADS};
pub use sample::{
    CgroupPressure, CpuPct, DiskRates, HostSample, HostSeries, NicRates, Overhead, ProcCpu, RoleCpu,
};
pub use sampler::{HostSpec, Sampler, DEFAULT_PERIOD};
pub use source::{HostConsts, JobFiles, LocalProc, ProcSource, RawSnapshot, SourceError};
