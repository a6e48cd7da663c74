//! qoslab's system suites (seed 002, Virtuozzo's benchmarking guide), as library code over
//! the `hosts` crate, independent of the harness:
//!
//! - [`network`]: iperf3 between every ordered pair in turn (connectivity), then every host
//!   sending to every other at once (under load; one server per peer on its own port);
//!   per pair goodput, retransmits, RTT, CPU; per host cumulative in/out; a matrix with
//!   verdicts against the rated NIC speed.
//! - [`disks`]: the seed's seven fio job files ([`jobs`]), sized from each host's facts
//!   ([`sizing`]), per device, then all devices of a host together, then optionally all
//!   hosts at once; prefill, iterations with spread ([`spread`]), iostat per device
//!   ([`iostat`]); a device with anything on it is refused unless named in `destroy_data`.
//! - [`storage`]: the same job set through fio client/server from every load generator on
//!   its own NFS mount, iSCSI/block device or directory, "All clients" merged, after the
//!   seed's prepare step; an NFS export the suite kernel-mounts ([`nfs_mount`]) or an
//!   iSCSI LUN it logs in to with the kernel's initiator ([`iscsi_login`]) on each.
//!
//! [`tools`] samples the `toolsets` crate's tool sets on every host over its ssh transport. fio runs
//! through `bench`'s client/server executor and JSON parsing (`fio --server` on
//! every host, started and always stopped by `hosts::remote`).

pub mod disks;
pub mod fiorun;
pub mod iostat;
pub mod iperf;
pub mod iscsi_login;
pub mod jobs;
pub mod network;
pub mod nfs_mount;
pub mod schedule;
pub mod session;
pub mod sizing;
pub mod spread;
pub mod stall;
pub mod storage;
pub mod tools;

pub use session::Session;

/// Why a suite could not run (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{0}")]
    Preflight(#[from] hosts::PreflightError),
    #[error("{0}")]
    Host(#[from] hosts::HostError),
    #[error("{} device(s) refused:\n  {}", .0.len(), .0.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("\n  "))]
    Refused(Vec<hosts::devices::Refused>),
    #[error("invalid suite input: {0}")]
    Invalid(String),
    #[error("fio on {clients}: {detail}")]
    Fio { clients: String, detail: String },
    #[error("{0}")]
    Io(String),
}
