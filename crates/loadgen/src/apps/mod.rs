//! Application drivers run by tenants on their own file systems (seed 004), behind one
//! small seam: an [`App`] starts per tenant ([`App::start`]: servers, directories), then
//! runs timed iterations ([`TenantApp::iteration`]) and stops. An iteration never panics
//! and never aborts the sweep: an application error, a timeout or a full file system
//! (ENOSPC) is a [`Failure`] of that iteration, with its message.
//!
//! - [`git`]: seed 004's script on a deterministic generated repository (clone, status,
//!   tar, untar, rm, plus a sync so write-back is charged to the tenant).
//! - [`redis`]: a redis-server per tenant (data and AOF on the tenant's file system), a
//!   YCSB-like load phase then run phase from a built-in client: ops/s per phase.
//! - [`build`]: seed 004's Jenkins: concurrent C builds (gcc, make) per tenant, their
//!   dependency cache and workspaces on the tenant's file system; builds and failed builds.
//! - [`broker`]: seed 004's JBoss AMQ: an Apache ActiveMQ broker per tenant (KahaDB on the
//!   tenant's file system), its own producer and consumer tools; messages/s in and out,
//!   lost messages counted by sequence number.
//!
//! The tenants family (`workloads::tenants`) runs them over scale points; fio tenants are
//! the family's own (one fio, one job per tenant).

pub mod broker;
pub mod build;
pub mod git;
pub mod proc;
pub mod redis;
pub(crate) mod rng;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why an iteration failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The file system ran out of space (ENOSPC).
    NoSpace,
    /// The step did not finish within the iteration's time limit.
    Timeout,
    /// Any other application error.
    App,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::NoSpace => "enospc",
            FailureKind::Timeout => "timeout",
            FailureKind::App => "app_error",
        }
    }
}

/// A failed step, with the application's own message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    pub step: String,
    pub message: String,
}

impl Failure {
    /// A failure whose kind is read from the message: ENOSPC when the text says so.
    pub fn classify(step: &str, message: String) -> Failure {
        Failure {
            kind: if is_enospc(&message) {
                FailureKind::NoSpace
            } else {
                FailureKind::App
            },
            step: step.to_string(),
            message,
        }
    }

    pub fn timeout(step: &str, limit: Duration) -> Failure {
        Failure {
            kind: FailureKind::Timeout,
            step: step.to_string(),
            message: format!("{step} did not finish within {:.0}s", limit.as_secs_f64()),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} in {}: {}",
            self.kind.as_str(),
            self.step,
            self.message
        )
    }
}

/// Whether an application's message reports ENOSPC (strerror's text, the errno name, or
/// redis's AOF error, which quotes strerror).
pub fn is_enospc(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("no space left on device") || m.contains("enospc")
}

/// One timed step of an iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub name: String,
    pub secs: f64,
}

/// A figure an iteration produced (e.g. redis's load ops/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

impl Metric {
    pub fn new(name: &str, value: f64, unit: &str) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit: unit.into(),
        }
    }
}

/// One iteration's outcome: the steps that ran (a failed step is the last), figures, and
/// the failure if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Iteration {
    pub steps: Vec<Step>,
    pub metrics: Vec<Metric>,
    /// Wall time of the whole iteration.
    pub secs: f64,
    pub failure: Option<Failure>,
}

impl Iteration {
    pub fn ok(&self) -> bool {
        self.failure.is_none()
    }

    /// Record a timed step.
    pub fn add_step(&mut self, name: impl Into<String>, secs: f64) {
        self.steps.push(Step {
            name: name.into(),
            secs,
        });
    }

    /// Record a figure.
    pub fn add_metric(&mut self, name: &str, value: f64, unit: &str) {
        self.metrics.push(Metric::new(name, value, unit));
    }

    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }
}

/// Where a tenant's application runs.
#[derive(Debug, Clone)]
pub struct TenantEnv {
    pub tenant: String,
    /// The tenant's file system (its data lives here).
    pub data_dir: PathBuf,
    /// A directory off the tenant's file system for sockets and logs.
    pub scratch_dir: PathBuf,
    /// Time limit of one iteration (and of start).
    pub timeout: Duration,
}

/// An application workload.
pub trait App: Send + Sync {
    /// Its name in plans and tables (`git`, `redis`).
    fn name(&self) -> &'static str;
    /// Prepare one tenant (start its server, create its directories).
    fn start(&self, env: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure>;
}

/// One tenant's running application.
pub trait TenantApp: Send {
    /// Run iteration `n` (from 1) and time its steps.
    fn iteration(&mut self, n: u32) -> Iteration;
    /// Stop (servers shut down, processes gone). Called once; also done on drop.
    fn stop(&mut self) -> Result<(), Failure>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_is_recognised_in_the_applications_own_words() {
        for m in [
            "fatal: write error: No space left on device",
            "tar: repo/x: Cannot write: No space left on device",
            "MISCONF Errors writing to the AOF file: No space left on device",
            "write failed: ENOSPC",
        ] {
            assert_eq!(
                Failure::classify("s", m.into()).kind,
                FailureKind::NoSpace,
                "{m}"
            );
        }
        assert_eq!(
            Failure::classify("clone", "fatal: repository not found".into()).kind,
            FailureKind::App
        );
    }
}
