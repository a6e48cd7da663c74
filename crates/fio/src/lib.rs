//! fio's adapter, and nothing else: job files ([`jobfile`]), the executors that run them
//! ([`executor`]: local fio, fio's client/server mode, a fake for unit tests), fio's JSON
//! output parsed into typed results ([`result`]), its per-window logs parsed into series
//! ([`logs`]), and fio's own number formatting ([`fmt`]).
//!
//! Invariants: options go in job files, never on fio's command line (client/server mode
//! ships the job file as it is); fio's JSON is parsed from its first `{`; latencies are
//! always nanoseconds, from `clat_ns`/`lat_ns`. This crate knows nothing of plans, targets
//! or the results store.

pub mod executor;
pub mod fmt;
pub mod jobfile;
pub mod logs;
pub mod options;
pub mod result;

pub use executor::{ExecError, Executor, FakeFio, LiveSink, RealFio, RemoteFio};
pub use jobfile::{sized_job_depth, JobFile, Section};
pub use logs::FioSample;
pub use result::{DirStats, FioOutput, JobResult};

/// A fresh directory under the system temp dir, removed when the guard drops (unit tests).
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> test_dir::TestDir {
    test_dir::TestDir::new(&format!("fio-{tag}"))
}

#[cfg(test)]
pub(crate) use test_support as test_dir;
