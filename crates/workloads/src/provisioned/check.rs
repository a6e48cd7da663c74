//! The provisioned family's expectations: the harness's grammar after the metric
//! ([`harness::verdict::parse_bound`], [`harness::verdict::judge`]) with this family's
//! metrics and names.
//!
//! ```text
//! check   := metric op rhs [tolerance]
//! metric  := iops | bw                                       (the step's steady rate)
//!          | lat_mean_us | lat_p99_us                       (fio's, the whole step)
//!          | iops_burst | bw_burst                           (while credits lasted)
//!          | iops_after_credits | bw_after_credits           (once they ran out)
//!          | burst_duration                                  (seconds)
//! operand := number [unit] | spec.NAME | spec.rate | spec.baseline | spec.burst_seconds
//!          | step.STEP.METRIC
//! ```
//! `iops` and `bw` are the median of fio's 500 ms windows within the step's runtime (its
//! first window left out), or fio's headline figures for a one-pass step; the burst rate
//! is a median too, the after-credits rate the mean of its windows (whole requests per
//! window: [`super::measure::transition`]).
//! `spec.NAME` is a figure of the target's spec (`spec.network.baseline`, `spec.ssd_iops`,
//! `spec.iops.burst`, ...); `spec.rate` the rate the spec says this step reaches while
//! credits last, `spec.baseline` its bucket's baseline, `spec.burst_seconds` how long its
//! bucket lasts at `spec.rate` from full; `step.STEP.METRIC` what an earlier step measured.
//! A bound must be in the metric's dimension (a bandwidth against bytes/s, ...): checked
//! when the plan is configured.

use std::collections::BTreeMap;

use assess::{Quantity, Sense};
use harness::verdict::{judge, parse_bound, Bound, BoundOperand, ExpectError, Kind, Op, Verdict};

/// The metrics a check may measure, with what they count.
pub const METRICS: [(&str, Kind); 9] = [
    ("iops", Kind::Iops),
    ("bw", Kind::Bw),
    ("lat_mean_us", Kind::Lat),
    ("lat_p99_us", Kind::Lat),
    ("iops_burst", Kind::Iops),
    ("bw_burst", Kind::Bw),
    ("iops_after_credits", Kind::Iops),
    ("bw_after_credits", Kind::Bw),
    ("burst_duration", Kind::Secs),
];

fn metric_kind(name: &str) -> Option<Kind> {
    METRICS.iter().find(|m| m.0 == name).map(|m| m.1)
}

fn kind_word(k: Kind) -> &'static str {
    match k {
        Kind::Iops => "IOPS",
        Kind::Bw => "a bandwidth",
        Kind::Lat => "a latency",
        Kind::Secs => "seconds",
        Kind::Number => "a number",
    }
}

/// What names mean in one step's checks: each name's dimension.
pub struct Names<'a> {
    /// `spec.NAME` → its kind.
    pub spec: &'a [(&'a str, Kind)],
    /// The steps before this one (`step.NAME.METRIC`).
    pub steps: &'a [String],
}

impl Names<'_> {
    fn kind(&self, name: &str) -> Option<Kind> {
        if let Some(n) = name.strip_prefix("spec.") {
            return self.spec.iter().find(|s| s.0 == n).map(|s| s.1);
        }
        let rest = name.strip_prefix("step.")?;
        let (step, metric) = rest.rsplit_once('.')?;
        self.steps.iter().any(|s| s == step).then_some(())?;
        metric_kind(metric)
    }

    fn hint(&self) -> String {
        let mut v: Vec<String> = self.spec.iter().map(|s| format!("spec.{}", s.0)).collect();
        if !self.steps.is_empty() {
            v.push(format!(
                "step.STEP.METRIC (STEP one of {})",
                self.steps.join(", ")
            ));
        }
        format!(", or one of {}", v.join(", "))
    }
}

/// One parsed check.

#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub text: String,
    pub metric: &'static str,
    pub bound: Bound,
}

impl Check {
    /// Parse `text` for a step whose names are `names`.
    pub fn parse(text: &str, names: &Names) -> Result<Check, ExpectError> {
        let s = text.trim();
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        let (name, rest) = s.split_at(end);
        let Some(&(metric, kind)) = METRICS.iter().find(|m| m.0 == name) else {
            let all: Vec<&str> = METRICS.iter().map(|m| m.0).collect();
            return Err(ExpectError(format!(
                "expectation {text:?}: unknown metric {name:?}; allowed: {}",
                all.join(", ")
            )));
        };
        let bound = parse_bound(
            text,
            rest,
            kind,
            &|n| names.kind(n).is_some(),
            &names.hint(),
        )?;
        if let BoundOperand::Name(n) = &bound.operand {
            let k = names.kind(n).unwrap_or(kind);
            if k != kind {
                return Err(ExpectError(format!(
                    "expectation {text:?}: {metric} is {}, {n} is {}",
                    kind_word(kind),
                    kind_word(k)
                )));
            }
        }
        Ok(Check {
            text: s.to_string(),
            metric,
            bound,
        })
    }

    /// Whether the check measures the fall from the burst (`burst_duration`, the
    /// after-credits rates): what a fall that was the client's, not the bucket's, leaves
    /// unmeasured.
    fn after_the_fall(&self) -> bool {
        self.metric == "burst_duration" || self.metric.ends_with("_after_credits")
    }

    /// Judge a step: `measured` its metrics, `names` the values of the names it may use.
    /// A metric or name without a value (a burst that never ended, a figure the spec
    /// lacks) fails, saying so. A failure the job's `diagnosis` explains is inconclusive
    /// (docs/DIAGNOSIS.md): a throughput that fell short, or a burst that lasted longer,
    /// while the client machine was the bottleneck.
    ///
    /// A rate the node also measured (`kept`: the steady, burst and after-credits rates on
    /// a qoslab node) is judged on the node's figure, fio's being the cross-check
    /// ([`assess::judge_kept`]).
    ///
    /// `clients_fall`: why fio's fall from the burst rate was the client's, when the node's
    /// bucket says so (`kept::clients_fall`: it still held credits after the fall). A
    /// failed check on what follows the fall (the burst's duration, the after-credits
    /// rates) then measured nothing, and is inconclusive for that reason, with what the
    /// host was doing meanwhile (`assess::meanwhile`: the diagnosis and its pressure).
    pub fn check(
        &self,
        measured: &BTreeMap<String, f64>,
        names: &dyn Fn(&str) -> Option<f64>,
        diagnosis: Option<&assess::Diagnosis>,
        io_error: bool,
        kept: &BTreeMap<String, super::kept::Kept>,
        clients_fall: Option<&str>,
    ) -> Verdict {
        let mut v = self.judged(measured, names, diagnosis, io_error, kept);
        if let Some(reason) = clients_fall {
            if self.after_the_fall() && v.outcome == assess::Outcome::Fail {
                v.outcome = assess::Outcome::Inconclusive;
                v.reason = Some(format!("{reason}{}", assess::meanwhile(diagnosis)));
            }
        }
        v
    }

    /// [`Check::check`] before a client's fall is taken into account.
    fn judged(
        &self,
        measured: &BTreeMap<String, f64>,
        names: &dyn Fn(&str) -> Option<f64>,
        diagnosis: Option<&assess::Diagnosis>,
        io_error: bool,
        kept: &BTreeMap<String, super::kept::Kept>,
    ) -> Verdict {
        let fail = |measured: f64, detail: String| {
            Verdict::plain(self.text.clone(), measured, String::new(), false, detail)
        };
        let Some(&m) = measured.get(self.metric) else {
            let burst = self.metric.contains("burst") || self.metric.contains("credits");
            let v = fail(
                0.0,
                format!(
                    "{} was not measured{}",
                    self.metric,
                    if burst {
                        ": the rate never fell from the burst to the baseline during the step"
                    } else {
                        ""
                    }
                ),
            );
            if !burst {
                return v;
            }
            // A burst that outlasted the step is what a starved client makes (it never drew
            // the credits down at the burst rate): judged like a burst that lasted longer.
            let outlasted = assess::Check {
                passed: false,
                quantity: Quantity::Latency,
                sense: Sense::AtMost,
                measured: f64::INFINITY,
                target: 0.0,
                io_error,
            };
            return v.judged(&outlasted, diagnosis);
        };
        let (base, derived) = match &self.bound.operand {
            BoundOperand::Number(n) => (*n, false),
            BoundOperand::Name(n) => match names(n) {
                Some(v) => (v, true),
                None => return fail(m, format!("{n} has no value for this step")),
            },
        };
        let target = base * self.bound.factor;
        let v = judge(
            &self.text,
            self.metric,
            m,
            self.bound.op,
            target,
            self.bound.tolerance,
            derived || self.bound.factor != 1.0,
        );
        // A longer burst is what a slow client makes: it reads like a latency.
        let later_is_worse = self.metric.starts_with("lat_") || self.metric == "burst_duration";
        let check = assess::Check {
            passed: v.passed,
            quantity: if later_is_worse {
                Quantity::Latency
            } else {
                Quantity::Throughput
            },
            sense: match self.bound.op {
                Op::Le | Op::Lt => Sense::AtMost,
                Op::Ge | Op::Gt => Sense::AtLeast,
                Op::Approx => Sense::Around,
            },
            measured: m,
            target,
            io_error,
        };
        let both = kept
            .get(self.metric)
            .and_then(|k| Some((k.node, k.agreement()?)));
        let Some((node, agreement)) = both else {
            return v.judged(&check, diagnosis);
        };
        let on_node = judge(
            &self.text,
            self.metric,
            node,
            self.bound.op,
            target,
            self.bound.tolerance,
            derived || self.bound.factor != 1.0,
        );
        let shown = |x: f64| harness::verdict::shown(self.metric, x);
        let client = assess::ClientSide {
            passed: v.passed,
            agreement,
        };
        let check = assess::Check {
            passed: on_node.passed,
            measured: node,
            ..check
        };
        let mut j = assess::judge_kept(&check, Some(&client), diagnosis, &shown);
        if let Some(reason) = earned_back(self.metric, node, target, &on_node, kept, &shown) {
            if j.outcome == assess::Outcome::Fail {
                j = assess::Judged {
                    outcome: assess::Outcome::Inconclusive,
                    reason: Some(reason),
                };
            }
        }
        let detail = on_node.detail.replacen(
            ", want",
            &format!(" at the node (fio {}), want", shown(m)),
            1,
        );
        Verdict::new(self.text.clone(), node, on_node.bound, detail, j.outcome).because(j.reason)
    }
}

/// Why an after-credits rate above its bound proves nothing, when it does: the node's own
/// windows in the span fell below the bound and earned at least the requests served above
/// it (a burst bucket refills below its baseline: `Kept::earned_back`). Otherwise it is
/// judged as measured.
fn earned_back(
    metric: &str,
    node: f64,
    target: f64,
    on_node: &Verdict,
    kept: &BTreeMap<String, super::kept::Kept>,
    shown: &dyn Fn(f64) -> String,
) -> Option<String> {
    if !metric.ends_with("_after_credits") || on_node.passed || node <= target {
        return None;
    }
    let (low, earned, spent) = kept.get(metric)?.earned_back(target)?;
    Some(format!(
        "credits earned back: the node served as little as {} in the span, below the \
         baseline {}, earning {earned:.0} requests' credits, and spent {spent:.0} above it: \
         a burst bucket refills below its baseline, so {} over the span is the bucket \
         spending what it earned (a client that could not keep the volume busy), not a \
         broken baseline",
        shown(low),
        shown(target),
        shown(node)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: [(&str, Kind); 4] = [
        ("network.baseline", Kind::Bw),
        ("ssd_iops", Kind::Iops),
        ("rate", Kind::Bw),
        ("burst_seconds", Kind::Secs),
    ];

    fn names(steps: &[String]) -> Names<'_> {
        Names { spec: &SPEC, steps }
    }

    /// A step's measured figures, by metric name.
    fn measured(figures: &[(&str, f64)]) -> BTreeMap<String, f64> {
        figures.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    #[test]
    fn checks_against_the_spec_and_earlier_steps() {
        let steps = vec!["mem-read-1".to_string()];
        let n = names(&steps);
        let m = measured(&[
            ("bw_burst", 1.24e9),
            ("burst_duration", 9.2),
            ("bw_after_credits", 1.52e8),
        ]);
        let vals = |k: &str| match k {
            "spec.network.baseline" => Some(1.5e8),
            "spec.burst_seconds" => Some(9.0),
            "step.mem-read-1.bw" => Some(6.2e8),
            _ => None,
        };
        let v = |t: &str| {
            Check::parse(t, &n)
                .unwrap()
                .check(&m, &vals, None, false, &BTreeMap::new(), None)
        };
        assert!(v("burst_duration ~= spec.burst_seconds +-5%").passed);
        assert!(!v("burst_duration ~= spec.burst_seconds +-1%").passed);
        let x = v("bw_after_credits ~= spec.network.baseline +-3%");
        assert!(x.passed, "{x:?}");
        assert_eq!(
            x.detail,
            "bw_after_credits = 145.0 MiB/s, want 138.8 MiB/s..147.3 MiB/s (from 143.1 MiB/s)"
        );
        assert!(v("bw_burst > step.mem-read-1.bw * 1.5").passed);
        assert!(v("bw_burst >= 1GB/s").passed);
        let x = v("bw > 1");
        assert!(!x.passed && x.detail == "bw was not measured", "{x:?}");
        let x = v("iops_burst > 1");
        assert!(x.detail.contains("never fell"), "{x:?}");
    }

    #[test]
    fn a_burst_that_outlasted_the_step_is_inconclusive_only_when_the_client_was_starved() {
        let steps = vec![];
        let n = names(&steps);
        let m = BTreeMap::new();
        let vals = |_: &str| None;
        let d = |b| assess::Diagnosis {
            bottleneck: b,
            reason: "fio's threads ran 40% of the time".into(),
            figures: vec![],
        };
        let check = |t: &str, b: Option<assess::Bottleneck>, io_error| {
            let d = b.map(d);
            Check::parse(t, &n)
                .unwrap()
                .check(&m, &vals, d.as_ref(), io_error, &BTreeMap::new(), None)
                .outcome
        };
        use assess::{Bottleneck as B, Outcome as O};
        for (t, b, io, want) in [
            ("burst_duration ~= 4.5s +-5%", None, false, O::Fail),
            (
                "burst_duration ~= 4.5s +-5%",
                Some(B::NoisyHost),
                false,
                O::Inconclusive,
            ),
            (
                "bw_burst >= 1MB/s",
                Some(B::ClientCpuBound),
                false,
                O::Inconclusive,
            ),
            (
                "bw_after_credits >= 1MB/s",
                Some(B::NoisyHost),
                true,
                O::Fail,
            ),
            // A figure every step measures is never excused by its absence.
            ("bw >= 1MB/s", Some(B::NoisyHost), false, O::Fail),
        ] {
            assert_eq!(check(t, b, io), want, "{t} with {b:?}, io error {io}");
        }
    }

    #[test]
    fn parse_errors_name_what_is_allowed() {
        let steps = vec!["a".to_string()];
        let n = names(&steps);
        for (t, want) in [
            ("bandwidth > 1", "unknown metric \"bandwidth\"; allowed: iops, bw,"),
            ("bw > spec.nope", "or one of spec.network.baseline, spec.ssd_iops, spec.rate, spec.burst_seconds, step.STEP.METRIC (STEP one of a)"),
            ("bw > spec.ssd_iops", "bw is a bandwidth, spec.ssd_iops is IOPS"),
            ("burst_duration ~= spec.rate +-5%", "burst_duration is seconds, spec.rate is a bandwidth"),
            ("bw > step.b.bw", "expected a number"),
            ("iops > step.a.burst_duration", "iops is IOPS, step.a.burst_duration is seconds"),
            ("burst_duration ~= 5", "needs a tolerance"),
        ] {
            let e = Check::parse(t, &n).unwrap_err().0;
            assert!(e.contains(want), "{t}: {e}");
        }
    }

    /// The hostile stress run's gp2 case: the node's after-credits rate above the baseline.
    /// With a window under the baseline in the span the bucket earned credits back
    /// (inconclusive, said why); without one the baseline was broken (a failure).
    #[test]
    fn an_after_credits_rate_above_the_baseline_is_a_failure_unless_credits_were_earned_back() {
        let steps = Vec::new();
        let n = names(&steps);
        let flow = |after: &dyn Fn(u64) -> f64| -> Vec<(u64, f64)> {
            (1..=30)
                .map(|k| (k * 500, if k <= 10 { 3000.0 } else { after(k) }))
                .collect()
        };
        let vals = |k: &str| (k == "spec.ssd_iops").then_some(300.0);
        let judge = |node: &[(u64, f64)]| {
            let kept = super::super::kept::kept("iops", node, node, Some((3000.0, 300.0)), 1.0);
            let m = measured(&[("iops_after_credits", kept["iops_after_credits"].client)]);
            Check::parse("iops_after_credits ~= spec.ssd_iops +-1%", &n)
                .unwrap()
                .check(&m, &vals, None, false, &kept, None)
        };
        let steady = judge(&flow(&|_| 364.0));
        assert_eq!(steady.outcome, assess::Outcome::Fail, "{steady:?}");
        // Dips to 100 earn 100 requests a window; peaks of 520 spend 110: explained.
        let dipped = judge(&flow(&|k| if k % 2 == 0 { 100.0 } else { 520.0 }));
        assert_eq!(dipped.outcome, assess::Outcome::Inconclusive, "{dipped:?}");
        let why = dipped.reason.clone().unwrap_or_default();
        assert!(
            why.starts_with("credits earned back: the node served as little as 100"),
            "{why}"
        );
        // Dips to 200 earn 50; peaks of 500 spend 100: more than was earned, a failure.
        let overspent = judge(&flow(&|k| if k % 2 == 0 { 200.0 } else { 500.0 }));
        assert_eq!(overspent.outcome, assess::Outcome::Fail, "{overspent:?}");
        // Under the baseline it is judged as measured: a failure here (no diagnosis).
        let low = judge(&flow(&|_| 250.0));
        assert_eq!(low.outcome, assess::Outcome::Fail, "{low:?}");
    }

    /// The CI-like gp2 failure: fio's rate fell at 3.86 s while the node's bucket still held
    /// credits. With the node's word on the fall, the checks on what follows it are
    /// inconclusive with that reason; the burst rate is judged as measured; without it
    /// (a bucket that ran out) the same figures fail.
    #[test]
    fn a_fall_the_node_calls_the_clients_makes_only_what_follows_it_inconclusive() {
        let steps = Vec::new();
        let n = names(&steps);
        let m = measured(&[
            ("burst_duration", 3.86),
            ("iops_after_credits", 1010.0),
            ("iops_burst", 2400.0),
        ]);
        let vals = |k: &str| match k {
            "spec.burst_seconds" => Some(5.0),
            "spec.ssd_iops" => Some(300.0),
            _ => None,
        };
        let why = "fio's rate fell at 3.86 s, but the node's bucket still held 9000 credits \
                   (66% of it) in a sample read at least 0.14 s after that: fio lagged; ...";
        let judge = |t: &str, fall: Option<&str>| {
            Check::parse(t, &n)
                .unwrap()
                .check(&m, &vals, None, false, &BTreeMap::new(), fall)
        };
        use assess::Outcome as O;
        for t in [
            "burst_duration ~= spec.burst_seconds +-5%",
            "iops_after_credits ~= spec.ssd_iops +-1%",
        ] {
            let v = judge(t, Some(why));
            assert_eq!(v.outcome, O::Inconclusive, "{t}: {v:?}");
            assert_eq!(v.reason.as_deref(), Some(why), "{t}");
            assert_eq!(judge(t, None).outcome, O::Fail, "{t}");
        }
        // With the job's diagnosis, what the host was doing meanwhile is said too.
        let d = assess::Diagnosis {
            bottleneck: assess::Bottleneck::StarvedHost,
            reason: "runnable tasks waited for a CPU 79% of the window".into(),
            figures: vec![],
        };
        let v = Check::parse("burst_duration ~= spec.burst_seconds +-5%", &n)
            .unwrap()
            .check(&m, &vals, Some(&d), false, &BTreeMap::new(), Some(why));
        assert_eq!(v.outcome, O::Inconclusive, "{v:?}");
        let r = v.reason.unwrap_or_default();
        assert!(
            r.starts_with(why) && r.contains("; meanwhile starved-host: runnable tasks waited"),
            "{r}"
        );
        let burst = judge("iops_burst >= 2900", Some(why));
        assert_eq!(
            burst.outcome,
            O::Fail,
            "the burst rate is not after the fall"
        );
        assert!(judge("burst_duration ~= 3.9s +-5%", Some(why)).passed);
    }
}
