//! Expectations (`iops <= 500 +-3%`) and their verdicts.
//!
//! Grammar (whitespace between tokens is optional):
//! ```text
//! expectation := metric op rhs [tolerance]
//! metric      := [read. | write.] (iops | iops_mean | iops_steady | bw | bw_mean | bw_steady
//!                | lat_mean_us | lat_p50_us | lat_p90_us | lat_p99_us | lat_p999_us)
//! op          := <= | < | >= | > | ~=
//! rhs         := operand [(* | /) number]
//! operand     := number [unit] | policy.ceiling | policy.floor
//! unit        := bw: B/s KB/s MB/s GB/s (x1000) KiB/s MiB/s GiB/s (x1024)
//!                latency: ns us ms s    iops: k (x1000)
//! tolerance   := +-N%      (required for ~=)
//! ```
//! `policy.ceiling` is the volume's effective ceiling in the metric's dimension (IOPS for
//! iops metrics, bytes/s for bw metrics). Tolerance widens the bound in the lenient
//! direction: `iops <= 500 +-3%` passes up to 515; `iops >= 500 +-3%` passes from 485.
//!
//! A family with metrics and references of its own (the `provisioned` family's
//! `burst_duration ~= spec.burst_seconds +-5%`) reuses the same grammar after the metric:
//! [`parse_bound`] (operator, a number with units or a name the family knows, factor,
//! tolerance) and [`judge`] (the verdict, worded as here); [`Kind`] adds `Secs` for
//! durations (`s`, `ms`) and `Number` for metrics whose name carries the unit (the S3
//! family's `GET.ops_per_s ~= 200 +-2%`). The grammar is parsed here and nowhere else.

use assess::{Check, Diagnosis, Outcome, Quantity, Sense};
use serde::{Deserialize, Serialize};

use fio::JobResult;

mod bound;
pub mod kept;

use bound::rate;
pub use bound::{judge, parse_bound, parse_value, shown, Bound, BoundOperand};

/// A volume's effective limits (0 = unlimited), as the harness records them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub ceiling_iops: u64,
    pub ceiling_bps: u64,
    pub floor_iops: u64,
    pub floor_bps: u64,
}

impl From<qos_core::EffectiveLimits> for Limits {
    fn from(l: qos_core::EffectiveLimits) -> Limits {
        Limits {
            ceiling_iops: l.ceiling.iops,
            ceiling_bps: l.ceiling.bytes_per_sec,
            floor_iops: l.floor.iops,
            floor_bps: l.floor.bytes_per_sec,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dir {
    Both,
    Read,
    Write,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Metric {
    Iops,
    IopsMean,
    /// The median of the 500 ms windows in steady state (all windows when none is
    /// steady): a rate one starved window cannot move (`assess::steady::robust_rate`).
    IopsSteady,
    Bw,
    BwMean,
    BwSteady,
    LatMeanUs,
    LatP50Us,
    LatP90Us,
    LatP99Us,
    LatP999Us,
}

const METRICS: &str =
    "iops, iops_mean, iops_steady, bw, bw_mean, bw_steady, lat_mean_us, lat_p50_us, lat_p90_us, lat_p99_us, lat_p999_us (optionally prefixed read. or write.)";

/// What a metric measures, which decides the units its bounds may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// I/Os per second (`k` = 1,000).
    Iops,
    /// Bytes per second (`MB/s` x1000, `MiB/s` x1024, ...).
    Bw,
    /// Latency, microseconds (`ns`, `us`, `ms`, `s`).
    Lat,
    /// A duration, seconds (`ms`, `s`).
    Secs,
    /// A plain number in the metric's own unit, named by the metric (`ops_per_s`,
    /// `lat_p99_ms`): no unit suffix.
    Number,
}

impl Metric {
    pub fn kind(self) -> Kind {
        match self {
            Metric::Iops | Metric::IopsMean | Metric::IopsSteady => Kind::Iops,
            Metric::Bw | Metric::BwMean | Metric::BwSteady => Kind::Bw,
            _ => Kind::Lat,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Le,
    Lt,
    Ge,
    Gt,
    Approx,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Operand {
    Number(f64),
    Ceiling,
    Floor,
}

/// A parsed expectation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expectation {
    pub text: String,
    pub dir: Dir,
    pub metric: Metric,
    pub op: Op,
    pub operand: Operand,
    /// Multiplier applied to the operand (`* 0.95`; `/ 2` is stored as 0.5).
    pub factor: f64,
    /// Fraction, e.g. 0.03 for `+-3%`.
    pub tolerance: f64,
}

/// Why an expectation does not parse (the message says what is allowed).
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct ExpectError(pub String);

/// One expectation's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub expectation: String,
    /// The measured value in the metric's unit (IOPS, bytes/s, microseconds).
    pub measured: f64,
    /// The bound the measurement was compared with, tolerance included ("<= 515").
    pub bound: String,
    /// The bound held (`outcome` is `pass`).
    pub passed: bool,
    /// Human explanation, e.g. "iops = 479.7, want <= 515 (500 +-3%)".
    pub detail: String,
    /// pass, fail, or inconclusive: a failure the job's bottleneck explains
    /// (docs/DIAGNOSIS.md).
    pub outcome: Outcome,
    /// Why a failure is inconclusive (or stays a failure although the measurement was
    /// discredited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Verdict {
    /// The measured value for a person: bandwidth metrics in IEC units (as the detail and
    /// the bound say it), anything else to 4 significant digits.
    pub fn measured_text(&self) -> String {
        let name = self
            .expectation
            .split(|c: char| c.is_whitespace() || "<>~=".contains(c))
            .next()
            .unwrap_or("");
        if name.starts_with("bw") {
            rate(self.measured)
        } else {
            fio::fmt::sig(self.measured)
        }
    }

    /// The one constructor: `passed` is `outcome == pass`, so they never disagree.
    pub fn new(
        expectation: String,
        measured: f64,
        bound: String,
        detail: String,
        outcome: Outcome,
    ) -> Verdict {
        Verdict {
            expectation,
            measured,
            bound,
            passed: outcome == Outcome::Pass,
            detail,
            outcome,
            reason: None,
        }
    }

    /// A verdict decided without a diagnosis (pass or fail).
    pub fn plain(
        expectation: String,
        measured: f64,
        bound: String,
        passed: bool,
        detail: String,
    ) -> Verdict {
        let outcome = if passed { Outcome::Pass } else { Outcome::Fail };
        Verdict::new(expectation, measured, bound, detail, outcome)
    }

    /// With `reason` (why a failure is inconclusive, or stays one).
    pub fn because(mut self, reason: Option<String>) -> Verdict {
        self.reason = reason;
        self
    }

    /// Failed whatever was measured (the job reported an I/O error): `detail` says why.
    pub fn failed(mut self, detail: String) -> Verdict {
        self.passed = false;
        self.outcome = Outcome::Fail;
        self.detail = detail;
        self
    }

    /// Apply a job's diagnosis to this verdict (see [`assess::judge`]).
    pub fn judged(mut self, check: &Check, diagnosis: Option<&Diagnosis>) -> Verdict {
        let j = assess::judge(check, diagnosis);
        self.outcome = j.outcome;
        self.passed = j.outcome == Outcome::Pass;
        self.reason = j.reason;
        self
    }

    /// PASS, FAIL or INCONCLUSIVE.
    pub fn label(&self) -> &'static str {
        self.outcome.label()
    }

    /// "; REASON" after a detail, or nothing.
    pub fn reason_note(&self) -> String {
        self.reason
            .as_ref()
            .map(|r| format!("; {r}"))
            .unwrap_or_default()
    }
}

/// What a verdict is judged with besides fio's result: the job's 500 ms windows (for the
/// `_steady` metrics), its diagnosis (for inconclusive outcomes), and the node's samples of
/// its volume (a throughput check is then judged on them, [`crate::kept`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    pub fio: &'a [crate::series::FioSample],
    pub diagnosis: Option<&'a Diagnosis>,
    /// The job ended with an I/O error.
    pub io_error: bool,
    /// The node's samples and the job's volume (empty: the target is not a qoslab node).
    pub node: &'a [crate::series::NodeSample],
    pub volume: Option<&'a str>,
    /// The judged window on fio's clock (the job's runtime after its ramp), ms.
    pub span_ms: u64,
}

fn err(text: &str, what: impl std::fmt::Display) -> ExpectError {
    ExpectError(format!("expectation {text:?}: {what}"))
}

impl Expectation {
    pub fn parse(text: &str) -> Result<Expectation, ExpectError> {
        let s = text.trim();
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(s.len());
        let (name, rest) = s.split_at(end);
        let (dir, base) = match name.split_once('.') {
            Some(("read", m)) => (Dir::Read, m),
            Some(("write", m)) => (Dir::Write, m),
            Some(_) => {
                return Err(err(
                    text,
                    format!("unknown metric {name:?}; allowed: {METRICS}"),
                ))
            }
            None => (Dir::Both, name),
        };
        let metric = match base {
            "iops" => Metric::Iops,
            "iops_mean" => Metric::IopsMean,
            "iops_steady" => Metric::IopsSteady,
            "bw_steady" => Metric::BwSteady,
            "bw" => Metric::Bw,
            "bw_mean" => Metric::BwMean,
            "lat_mean_us" => Metric::LatMeanUs,
            "lat_p50_us" => Metric::LatP50Us,
            "lat_p90_us" => Metric::LatP90Us,
            "lat_p99_us" => Metric::LatP99Us,
            "lat_p999_us" => Metric::LatP999Us,
            _ => {
                return Err(err(
                    text,
                    format!("unknown metric {name:?}; allowed: {METRICS}"),
                ))
            }
        };
        let kind = metric.kind();
        let is_policy =
            |n: &str| matches!(n, "policy.ceiling" | "ceiling" | "policy.floor" | "floor");
        let b = parse_bound(
            text,
            rest,
            kind,
            &is_policy,
            ", policy.ceiling or policy.floor",
        )?;
        let operand = match &b.operand {
            BoundOperand::Number(n) => Operand::Number(*n),
            BoundOperand::Name(n) if n.ends_with("ceiling") => Operand::Ceiling,
            BoundOperand::Name(_) => Operand::Floor,
        };
        if kind == Kind::Lat && !matches!(operand, Operand::Number(_)) {
            return Err(err(
                text,
                "latency metrics compare with numbers, not policy limits",
            ));
        }
        Ok(Expectation {
            text: s.to_string(),
            dir,
            metric,
            op: b.op,
            operand,
            factor: b.factor,
            tolerance: b.tolerance,
        })
    }

    /// The measured value for this expectation's metric and direction.
    pub fn measure(&self, r: &JobResult) -> f64 {
        self.measure_with(r, &[])
    }

    /// The per-window series of this expectation's direction (both summed per window).
    fn windows(&self, fio: &[crate::series::FioSample], bw: bool) -> Vec<f64> {
        let mut by_t: std::collections::BTreeMap<u64, f64> = std::collections::BTreeMap::new();
        for s in fio {
            let wanted = match self.dir {
                Dir::Read => s.direction == "read",
                Dir::Write => s.direction == "write",
                Dir::Both => s.direction == "read" || s.direction == "write",
            };
            if wanted {
                *by_t.entry(s.t_ms).or_default() += if bw { s.bw_bytes } else { s.iops };
            }
        }
        by_t.into_values().collect()
    }

    /// [`measure`](Self::measure), with the job's windows for the `_steady` metrics (fio's
    /// mean when there are none).
    pub fn measure_with(&self, r: &JobResult, fio: &[crate::series::FioSample]) -> f64 {
        let d = |f: &dyn Fn(&fio::DirStats) -> f64| match self.dir {
            Dir::Read => f(&r.read),
            Dir::Write => f(&r.write),
            Dir::Both => f(&r.read) + f(&r.write),
        };
        let lat = |f: &dyn Fn(&fio::DirStats) -> f64| -> f64 {
            match self.dir {
                Dir::Read => f(&r.read) / 1000.0,
                Dir::Write => f(&r.write) / 1000.0,
                // Both directions: I/O-weighted mean (means), worst (percentiles).
                Dir::Both => {
                    let (a, b) = (&r.read, &r.write);
                    let n = a.total_ios + b.total_ios;
                    if self.metric == Metric::LatMeanUs {
                        if n == 0 {
                            0.0
                        } else {
                            (f(a) * a.total_ios as f64 + f(b) * b.total_ios as f64)
                                / n as f64
                                / 1000.0
                        }
                    } else {
                        f(a).max(f(b)) / 1000.0
                    }
                }
            }
        };
        match self.metric {
            Metric::Iops => d(&|s| s.iops),
            Metric::IopsMean => d(&|s| s.iops_mean),
            Metric::IopsSteady => assess::steady::robust_rate(&self.windows(fio, false))
                .unwrap_or_else(|| d(&|s| s.iops_mean)),
            Metric::Bw => d(&|s| s.bw_bytes as f64),
            Metric::BwMean => d(&|s| s.bw_mean_bytes),
            Metric::BwSteady => assess::steady::robust_rate(&self.windows(fio, true))
                .unwrap_or_else(|| d(&|s| s.bw_mean_bytes)),
            Metric::LatMeanUs => lat(&|s| s.lat_mean_ns),
            Metric::LatP50Us => lat(&|s| s.p50_ns as f64),
            Metric::LatP90Us => lat(&|s| s.p90_ns as f64),
            Metric::LatP99Us => lat(&|s| s.p99_ns as f64),
            Metric::LatP999Us => lat(&|s| s.p999_ns as f64),
        }
    }

    /// Judge a result. `limits` are the effective limits of the volume under test (`None`
    /// when the target is not an embedded node).
    pub fn check(&self, r: &JobResult, limits: Option<&Limits>) -> Verdict {
        self.check_with(r, limits, &Evidence::default())
    }

    /// Judge a result with the job's windows and diagnosis: a failure the diagnosis
    /// explains is `inconclusive`.
    pub fn check_with(&self, r: &JobResult, limits: Option<&Limits>, ev: &Evidence) -> Verdict {
        let measured = self.measure_with(r, ev.fio);
        let fail = |detail: String| {
            Verdict::plain(self.text.clone(), measured, String::new(), false, detail)
        };
        let base = match self.operand {
            Operand::Number(n) => n,
            Operand::Ceiling | Operand::Floor => {
                let Some(l) = limits else {
                    return fail(
                        "the target is not an embedded node: the volume's limits are unknown"
                            .into(),
                    );
                };
                let (what, v) = match (self.operand, self.metric.kind()) {
                    (Operand::Ceiling, Kind::Iops) => ("IOPS ceiling", l.ceiling_iops),
                    (Operand::Ceiling, _) => ("bandwidth ceiling", l.ceiling_bps),
                    (_, Kind::Iops) => ("IOPS floor", l.floor_iops),
                    _ => ("bandwidth floor", l.floor_bps),
                };
                if v == 0 {
                    return fail(format!("the volume has no {what} (unlimited)"));
                }
                v as f64
            }
        };
        let target = base * self.factor;
        let name = self
            .text
            .split(|c: char| c.is_whitespace() || "<>~=".contains(c))
            .next()
            .unwrap_or("");
        let v = judge(
            &self.text,
            name,
            measured,
            self.op,
            target,
            self.tolerance,
            self.factor != 1.0 || !matches!(self.operand, Operand::Number(_)),
        );
        let check = Check {
            passed: v.passed,
            quantity: if self.metric.kind() == Kind::Lat {
                Quantity::Latency
            } else {
                Quantity::Throughput
            },
            sense: match self.op {
                Op::Le | Op::Lt => Sense::AtMost,
                Op::Ge | Op::Gt => Sense::AtLeast,
                Op::Approx => Sense::Around,
            },
            measured,
            target,
            io_error: ev.io_error,
        };
        match kept::judged_on_node(self, &v, &check, ev) {
            Some(on_node) => on_node,
            None => v.judged(&check, ev.diagnosis),
        }
    }
}

#[cfg(test)]
mod tests;
