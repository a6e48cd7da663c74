//! Pure judgement of results — no I/O, no clock:
//! - [`diagnosis`]: what limited a job (`qos-bound`, `device-bound`, `node-cpu-bound`,
//!   `client-cpu-bound`, `network-bound`, `starved-host`, `noisy-host`, `unconstrained`), with the figures
//!   that decided it, from host tool sets ([`figures`]), the node's counters and fio's result;
//! - [`outcome`]: pass / fail / inconclusive, and the exit status (0, 1, 3) they imply;
//! - [`crosscheck`]: a check judged on a qoslab node's own counters, cross-checked with the
//!   client's figure for the same window;
//! - [`steady`]: the SNIA-PTS steady-state check and a rate one starved sample cannot move;
//! - [`stats`]: mean, stddev, median, least squares, the spread of iterations.
//!
//! **Invariants:** every function is deterministic in its inputs; thresholds are named
//! constants (`diagnosis::limits`, `steady::{MAX_RANGE, MAX_SLOPE_CHANGE}`) documented where
//! they are defined; a failure becomes inconclusive only in the direction its bottleneck
//! explains.

pub mod crosscheck;
pub mod diagnosis;
pub mod figures;
pub mod outcome;
pub mod stats;
pub mod steady;

pub use diagnosis::starved::{self, starvation};
pub use diagnosis::{diagnose, Bottleneck, Diagnosis, Figure, FioFigures, Inputs, NodeFigures};
pub use figures::HostFigures;
pub use outcome::{
    judge, judge_kept, meanwhile, Check, ClientSide, Judged, Outcome, Quantity, Sense, Tally,
};
