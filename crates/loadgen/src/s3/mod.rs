//! The S3 benchmark driver: GOSBench's workload vocabulary (weights per operation, object
//! size and count distributions, buckets, parallel clients, stop by runtime or operation
//! count, clean after) and warp's analysis (a window where every client runs, per-operation
//! throughput per 1 s segment, latency percentiles, time to first byte, errors by code).
//!
//! - [`spec`]: what one driver runs ([`spec::TestSpec`], [`spec::Endpoint`]);
//! - [`target`]: the object-store seam ([`target::ObjectTarget`] hands out one
//!   [`target::ObjectClient`] per benchmark client); [`http`] is S3 over HTTP (rusty-s3's
//!   signing, hyper's connections), [`fake`] an in-memory store on tokio's clock;
//! - [`driver`]: buckets, the pool of objects, the clients' loop, clean-up; every request
//!   becomes an [`driver::OpRecord`];
//! - [`analysis`]: records of one or many hosts → per-operation summaries and segments;
//! - [`protocol`]: how a coordinator drives a driver (JSON lines over ssh for
//!   `qoslab s3-driver`, channels in-process).
//!
//! Like [`crate::genio`], the driver reads only tokio's clock and reaches storage only through
//! its target trait; it knows nothing of plans or the results store.

pub mod analysis;
pub mod driver;
pub mod fake;
pub mod http;
pub mod protocol;
pub mod spec;
pub mod target;

pub use analysis::{analyze, Analysis, HostRecords, OpSummary, Segment, ALL_HOSTS};
pub use driver::{Driver, OpRecord};
pub use spec::{Endpoint, Op, SizeDist, Stop, TestSpec, Weights};
pub use target::{ObjectClient, ObjectTarget, S3Error};

#[cfg(test)]
mod tests;
