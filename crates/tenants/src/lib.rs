//! The tenant sweep (seed 004): storage classes whose tenants claim volumes on a qoslab
//! node, real applications on mounted file systems (git, redis) or fio on the volumes,
//! swept over scale points; per point and class the failures, the distribution of the
//! tenants' figures, fairness, first/last done, the node's QoS waits and the load.
//!
//! - [`spec`]: the `[tenants]` and `[[class]]` tables, validated once.
//! - [`point`]: one scale point on a node (volumes, mounts, applications, teardown).
//! - [`rows`]: what is stored: a summary row per point and class, a row per tenant.
//! - [`load`]: host and process load over a point, from /proc.

pub mod charts;
pub mod load;
pub mod point;
pub mod rows;
pub mod spec;
pub mod sweep;
pub mod verdicts;
/// The report's SVG chart types (the bench crate's today; the report crate's after the split).
pub use bench::report::svg as charts_svg;
