//! qoslab's own load generators, for the workloads fio cannot measure honestly
//! (docs/BENCH.md and docs/S3-BENCH.md say why): [`genio`], the GenIO-like generator behind the
//! `ramp` family, [`apps`], the application drivers of the `tenants` family (git and redis
//! on tenant file systems), and [`s3`], the S3 benchmark driver behind the `s3` family
//! (Debian's fio has no http engine, and no S3 benchmark can be installed here).
//!
//! Invariants: a generator reads only tokio's clock (its timing logic is unit-tested in
//! paused time against a fake target) and reaches storage only through its target trait
//! ([`genio::IoTarget`]); it knows nothing of plans, verdicts or the results store.

pub mod apps;
pub mod genio;
pub mod s3;

/// A fresh directory under the system temp dir, removed when the guard drops (unit tests).
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> test_dir::TestDir {
    test_dir::TestDir::new(&format!("loadgen-{tag}"))
}

#[cfg(test)]
pub(crate) use test_support as test_dir;
