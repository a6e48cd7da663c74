//! The workload families through their public API, in one test binary (one link): exports
//! against snapshots, a results database written by main before the split, and plans through
//! the registry and the harness's run loop.

mod burst_exports;
mod compare_runs;
mod demo_flow;
mod export_snapshots;
mod fio_plans;
mod main_db;
mod provisioned_plans;
mod ramp_plans;
mod s3_plans;
mod snapshot;
mod status_rule;
mod suite_plans;
mod support;
