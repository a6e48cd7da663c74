//! qoslab's benchmark harness: what every workload family shares.
//!
//! - [`plan`]: the plan model and the common parser (`[bench]`, the embedded node's
//!   `[[policy]]`/`[[volume]]`/`[capacity]`); [`family`]: the seam a workload family
//!   implements ([`family::Family`], [`family::FamilyPlan`]) and the [`family::Registry`]
//!   that dispatches plan tables and `--profile` names;
//! - [`run`]: the run loop; [`context`]: what a step works with; [`fio_job`]: one fio job
//!   as a step; [`outcome`]: the one rule from stored records to a run's status, exit code
//!   and summary; [`ui`]: where human output goes;
//! - [`target`]: the embedded node, NBD URIs, paths, `--node` volumes ([`node_api`]);
//!   [`target_files`]: what a run writes on a path or NFS target (sizes, clean-up;
//!   [`nfs_client`] reaches an export's file);
//! - [`store`]: the SQLite results store and its record model; [`verdict`]: expectations,
//!   judged on a qoslab node's own counters where it keeps the promise ([`kept`]);
//!   [`series`], [`recording`], [`node_sampler`]: time series; [`ops`]: per-operation
//!   results of request/response drivers (S3); [`host`]: host facts.
//!
//! Validation happens at the edge: a plan is checked once, when parsed and configured;
//! everything after trusts it. The harness never names a family (docs: ARCHITECTURE.md).

pub mod assessment;
pub mod context;
pub mod family;
pub mod fio_job;
pub mod host;
pub mod iscsi;
pub mod local_node;
pub mod nfs;
pub mod nfs_client;
pub mod node_api;
pub mod node_sampler;
pub mod node_spec;
pub mod ops;
pub mod outcome;
pub mod plan;
pub mod recording;
pub mod run;
pub mod series;
pub mod store;
pub mod target;
pub mod target_files;
mod tempdirs;
pub mod ui;
pub mod verdict;
pub use verdict::kept;

pub use context::{Prepare, RunContext, RunError, RunHeader, Step};
pub use family::{Accepts, Family, FamilyPlan, JobSet, Options, Plan, ProfileRequest, Registry};
pub use outcome::Outcome;
pub use outcome::{RunTally, Status};
pub use plan::{Common, PlanError, PlanSource};
pub use run::{run, RunEnv};
