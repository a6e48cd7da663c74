//! qoslab's workload families, one folder each, behind the harness's seam
//! ([`harness::Family`], [`harness::FamilyPlan`]) and `report`'s ([`report::ReportHooks`]):
//!
//! - [`fio_plan`]: `[[workload]]` tables: fio jobs from raw options, or a job set by name;
//! - [`dbench`]: LogDNA's dbench (nine fio jobs and its summary block; `--profile dbench`);
//! - [`isolation`]: floors against a noisy neighbour on an emulated controller, with the
//!   FIFO control (`--profile isolation`);
//! - [`ramp`]: GenIO-style ramps on qoslab's own generator (`[ramp]`, `[[system]]`,
//!   `--profile ramp`);
//! - [`s3`]: the S3 benchmark on qoslab's own driver (`[s3]`, `[[s3.test]]`,
//!   `--profile s3`), GOSBench's plans and warp's analysis, many load generators over ssh;
//! - [`provisioned`]: seed 003's FSx workshop against a provisioned spec: cached reads,
//!   burst then baseline, 1 vs 16 connections, IOPS; or a volume model's burst
//!   (`[provisioned]`, `--profile provisioned`);
//! - [`suite`]: seed 002's system suites over ssh (`--suite network|disks|nfs|iscsi|block|dir`,
//!   `[suite]` and `[[host]]`).
//!
//! [`node_setup`] puts a plan's policies and volumes on a running node (`--node`).
//!
//! [`registry`] lists them: adding a family is its folder, its `mod` line here and one line
//! there (docs/CODEMAP.md walks through it).

pub mod dbench;
pub mod demo;
pub mod fio_plan;
pub mod isolation;
pub mod node_setup;
pub mod provisioned;
pub mod ramp;
pub mod registry;
pub mod s3;
pub mod suite;
pub mod tenants;

pub use registry::{export, hooks, registry, WorkloadFamily, FAMILIES};

/// A family's own flags (its `clap::Args`) from the command line's matches; clap's error
/// as a [`harness::PlanError`].
pub(crate) fn family_flags<A: clap::FromArgMatches>(
    m: &clap::ArgMatches,
) -> Result<A, harness::PlanError> {
    A::from_arg_matches(m).map_err(|e| harness::PlanError(e.to_string()))
}

/// A family's own flags from a `--profile` request: the command line's, or the defaults
/// when the request carries none.
pub(crate) fn profile_flags<A: clap::FromArgMatches + Default>(
    req: &harness::ProfileRequest,
) -> Result<A, harness::PlanError> {
    req.args.map_or_else(|| Ok(A::default()), family_flags)
}

/// A plan's number, integer or float (`scale = 1` as `scale = 1.0`).
pub(crate) fn toml_number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// `12113.42` -> "12,113.42" (the seed's number style): every family's tables and lines
/// group digits this way.
pub fn thousands(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s
        .split_once('.')
        .map(|(a, b)| (a, Some(b)))
        .unwrap_or((&s, None));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// `--hosts` with `--client`: the remote load generators whose tool sets are sampled.
pub use suite::remote_tools;
