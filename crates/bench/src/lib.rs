//! qoslab's benchmark harness: fio job files and executors, typed fio results, the dbench
//! profile, plans and expectations, the SQLite results store, exporters, targets and the
//! progress display. See docs/BENCH.md.
//!
//! Validation happens at the edge: [`plan::Plan::parse`] checks a plan once (node setup,
//! workloads, fio options, expectations); everything after trusts it.

pub mod compare;
pub mod dbench;
pub mod export;
pub mod fio;
pub mod fmt;
pub mod genio;
pub mod isolation;
pub mod node_sampler;
pub mod plan;
pub mod progress;
pub mod ramp;
pub mod recording;
pub mod report;
pub mod result;
pub mod run;
pub mod series;
pub mod store;
pub mod target;
pub mod verdict;
