//! Verdicts that cannot lie: pass, fail, or inconclusive when the failure is one the
//! diagnosed bottleneck explains; and the exit status a run's outcomes imply.
//!
//! A failing check becomes `inconclusive` only when
//! - the job's bottleneck says the measurement was the limit (`client-cpu-bound`,
//!   `noisy-host`), and
//! - the failure is in the direction that bottleneck explains: throughput too low (IOPS or
//!   bandwidth below a lower bound, or below an approximate target) or latency too high.
//!
//! A ceiling exceeded, a latency below a bound, an I/O error: those a starved client cannot
//! cause, so they stay failures. A pass stays a pass.
//!
//! A check judged on a qoslab node's own counters ([`judge_kept`]) carries the client's
//! figure for the same window: when the two differ beyond the run's noise *and* would judge
//! the check differently, it is inconclusive, naming the side that lagged
//! ([`crate::crosscheck`]); otherwise the node's figure decides as above.

use serde::{Deserialize, Serialize};

use crate::crosscheck::Agreement;
use crate::diagnosis::{Bottleneck, Diagnosis};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Inconclusive,
    Fail,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Fail => "fail",
        }
    }

    /// PASS, FAIL, INCONCLUSIVE: how terminals and reports print it.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Inconclusive => "INCONCLUSIVE",
            Outcome::Fail => "FAIL",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        [Outcome::Pass, Outcome::Inconclusive, Outcome::Fail]
            .into_iter()
            .find(|o| o.as_str() == s)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a check measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Quantity {
    /// IOPS or bandwidth: more is better.
    Throughput,
    /// Latency: less is better.
    Latency,
}

/// How a check bounds its figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sense {
    /// `>=`, `>`: fails when the figure is too low.
    AtLeast,
    /// `<=`, `<`: fails when the figure is too high.
    AtMost,
    /// `~=`: fails on either side of `target`.
    Around,
}

/// One check's result before the diagnosis is applied.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub passed: bool,
    pub quantity: Quantity,
    pub sense: Sense,
    pub measured: f64,
    /// The nominal target (tolerance aside): which side of it a `~=` failure fell on.
    pub target: f64,
    /// The job ended with an I/O error (fio's `error` or a failed run).
    pub io_error: bool,
}

/// A check's outcome and, when not plainly a pass, why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub outcome: Outcome,
    /// Why a failure was made inconclusive, or why it stays a failure although the
    /// bottleneck discredits the measurement. None for a plain pass or failure.
    pub reason: Option<String>,
}

/// The client's side of a check judged on the node's counters: whether the client's
/// figure passes the same bound, and how it agrees with the node's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClientSide {
    pub passed: bool,
    pub agreement: Agreement,
}

/// What the host was doing meanwhile, for a reason that names a side that lagged:
/// "; meanwhile BOTTLENECK: WHY (PRESSURE)", the job's diagnosis with the host's pressure
/// figures; empty without a diagnosis.
pub fn meanwhile(diagnosis: Option<&Diagnosis>) -> String {
    diagnosis
        .map(|d| {
            let pressure = match d.pressure_note() {
                Some(p) if !d.reason.contains("pressure over the window") => format!(" ({p})"),
                _ => String::new(),
            };
            format!("; meanwhile {}: {}{pressure}", d.bottleneck, d.reason)
        })
        .unwrap_or_default()
}

/// The check's outcome, judged on the node's figure (`check`) with the client's figure as
/// the cross-check (module docs).
pub fn judge_kept(
    check: &Check,
    client: Option<&ClientSide>,
    diagnosis: Option<&Diagnosis>,
    show: &dyn Fn(f64) -> String,
) -> Judged {
    if let Some(c) = client {
        if let Some(side) = c.agreement.lagging() {
            if c.passed != check.passed && !check.io_error {
                let (yes, no) = if check.passed {
                    ("the node's", "fio's")
                } else {
                    ("fio's", "the node's")
                };
                let host = meanwhile(diagnosis);
                return Judged {
                    outcome: Outcome::Inconclusive,
                    reason: Some(format!(
                        "{}: {} lagged; {yes} figure passes, {no} does not, so this check proves nothing{host}",
                        c.agreement.describe(show),
                        side.as_str()
                    )),
                };
            }
        }
    }
    judge(check, diagnosis)
}

/// The check's outcome given the job's diagnosis.
pub fn judge(check: &Check, diagnosis: Option<&Diagnosis>) -> Judged {
    if check.passed {
        return Judged {
            outcome: Outcome::Pass,
            reason: None,
        };
    }
    let Some(d) = diagnosis.filter(|d| d.bottleneck.discredits_measurement()) else {
        return Judged {
            outcome: Outcome::Fail,
            reason: None,
        };
    };
    if check.io_error {
        return Judged {
            outcome: Outcome::Fail,
            reason: Some(format!(
                "{}, but the job had an I/O error, which {} cannot cause",
                d.bottleneck, d.bottleneck
            )),
        };
    }
    let too_low = match check.sense {
        Sense::AtLeast => true,
        Sense::AtMost => false,
        Sense::Around => check.measured < check.target,
    };
    let explained = match check.quantity {
        Quantity::Throughput => too_low,
        Quantity::Latency => !too_low,
    };
    let effect = match check.quantity {
        Quantity::Throughput => "less throughput",
        Quantity::Latency => "more latency",
    };
    let who = match d.bottleneck {
        Bottleneck::ClientCpuBound => "a load generator short of CPU",
        Bottleneck::StarvedHost => "a starved host",
        _ => "a host shared with other work",
    };
    if explained {
        Judged {
            outcome: Outcome::Inconclusive,
            reason: Some(format!(
                "{}: {}; {who} measures {effect} than the target gives, so this failure proves nothing",
                d.bottleneck, d.reason
            )),
        }
    } else {
        let what = match (check.quantity, too_low) {
            (Quantity::Throughput, false) => "a throughput above its bound",
            (Quantity::Latency, true) => "a latency below its bound",
            _ => "this failure",
        };
        Judged {
            outcome: Outcome::Fail,
            reason: Some(format!(
                "{} does not explain {what}: it stays a failure",
                d.bottleneck
            )),
        }
    }
}

/// Exit status: every check passed.
pub const EXIT_PASS: i32 = 0;
/// Exit status: a check failed (or, with `--strict`, was inconclusive).
pub const EXIT_FAIL: i32 = 1;
/// Exit status: nothing failed, but some checks were inconclusive (2 is the usage-error
/// status of the command line parser).
pub const EXIT_INCONCLUSIVE: i32 = 3;

/// Outcome counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub pass: usize,
    pub fail: usize,
    pub inconclusive: usize,
}

impl Tally {
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Tally {
        let mut t = Tally::default();
        for o in outcomes {
            t.add(*o);
        }
        t
    }

    pub fn add(&mut self, o: Outcome) {
        match o {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Inconclusive => self.inconclusive += 1,
        }
    }

    pub fn total(&self) -> usize {
        self.pass + self.fail + self.inconclusive
    }

    /// The run's outcome: fail if any failed, inconclusive if any was, else pass (also for
    /// a run with no checks).
    pub fn outcome(&self) -> Outcome {
        if self.fail > 0 {
            Outcome::Fail
        } else if self.inconclusive > 0 {
            Outcome::Inconclusive
        } else {
            Outcome::Pass
        }
    }

    /// 0 all passed, 1 any failed, 3 none failed but some inconclusive; `strict` counts an
    /// inconclusive check as a failure.
    pub fn exit_code(&self, strict: bool) -> i32 {
        match self.outcome() {
            Outcome::Pass => EXIT_PASS,
            Outcome::Fail => EXIT_FAIL,
            Outcome::Inconclusive if strict => EXIT_FAIL,
            Outcome::Inconclusive => EXIT_INCONCLUSIVE,
        }
    }

    /// "61 pass, 0 fail, 2 inconclusive" (not "N passed, N failed": CI systems read that
    /// line as a test runner's closing line).
    pub fn summary(&self) -> String {
        format!(
            "{} pass, {} fail, {} inconclusive",
            self.pass, self.fail, self.inconclusive
        )
    }
}
