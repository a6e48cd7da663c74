//! `qos-core`: the sans-IO heart of qoslab's quality of service.
//!
//! # Invariants
//!
//! * **No clock, no I/O.** Nothing in this crate reads the wall clock
//!   (`Instant`, `SystemTime`) or performs I/O. Time is a [`Nanos`] value —
//!   nanoseconds since an arbitrary epoch — always passed in by the caller, so
//!   every behaviour is deterministic and testable in virtual time ([`sim`]).
//! * **Typed errors, no panics on input.** Parsers and validators return
//!   [`UnitError`] / [`PolicyError`] whose messages name the offending input and
//!   the accepted forms; arithmetic on inputs is checked or saturating.
//! * **ONTAP semantics.** Sizes use decimal `KB…TB` and binary `KiB…TiB`;
//!   throughput `MB/s` means 2^20 bytes per second; adaptive densities are per
//!   decimal TB; 0 in a limit means "not enforced".
//!
//! # Modules
//!
//! * [`units`] — parse/format sizes, throughputs, IOPS-per-capacity.
//! * [`accounting`] — how many operations a request counts for (whole, NFS transfers,
//!   a SolidFire-style cost curve).
//! * [`array`] — an emulated array: per-direction cost by request size, service latency.
//! * [`policy`] — fixed and adaptive policy groups and their validation.
//! * [`credit`] — burst credits: baseline, burst rate, bucket (vendor presets in [`presets`]).
//! * [`limits`] — a policy plus a volume's space → effective ceiling and floor.
//! * [`mclock`] — the node-wide mClock scheduler (floors, ceilings, weights).
//! * [`pacer`] — the per-flow ceiling enforcer (smooth two-dimensional GCRA).
//! * [`sim`] — a small closed-loop discrete-event simulator for virtual-time tests.
//!
//! # The scheduler seam
//!
//! [`Pacer::admit`] is the seam between request arrival and dispatch: it maps
//! `(now, ops, bytes)` to a dispatch time and never blocks. Beside it, [`mclock`]
//! arbitrates between flows for a node's capacity and honours floors
//! ([`EffectiveLimits::floor`]); the pacer stays the per-flow ceiling, applied to
//! each flow regardless of how the scheduler orders them.

#![warn(missing_docs)]

pub mod accounting;
pub mod array;
pub mod credit;
mod curve;
pub mod limits;
pub mod mclock;
pub mod pacer;
pub mod policy;
pub mod presets;
pub mod rate;
pub mod sim;
pub mod units;

pub use accounting::{Accounting, AccountingError, CostCurve, MILLI};
pub use array::{ArrayModel, Direction, Latency, ServiceCurve, ServiceLatency};
pub use credit::{ontap_tolerance, Burst, BurstShape, CreditLane, CreditStatus, Credits};
pub use limits::{burst_limits, effective_limits, iops_for, EffectiveLimits, Rate, VolumeSpace};
pub use mclock::{Charge, Dispatched, FlowId, FlowSpec, MClock, Phase};
pub use pacer::{Pacer, BURST_WINDOW};
pub use policy::{
    default_adaptive_groups, AdaptivePolicy, Allocation, BlockSize, BurstPolicy, FixedPolicy,
    Policy, PolicyError, ProvisionedPolicy, MAX_WEIGHT,
};
pub use presets::Model;
pub use units::{
    format_size, parse_iops_per_capacity, parse_seconds, parse_size, parse_throughput, IopsPerTb,
    Throughput, UnitError,
};

/// Time in nanoseconds since an arbitrary, caller-chosen epoch.
pub type Nanos = u64;
