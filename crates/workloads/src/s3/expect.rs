//! Expectations of an S3 test, judged on its merged per-operation results:
//!
//! ```text
//! expectation := OP "." metric op number [+-N%]
//! OP          := GET | PUT | DELETE | LIST | STAT | ALL      (ALL: every operation)
//! metric      := ops_per_s | mib_per_s | lat_mean_ms | lat_p50_ms | lat_p90_ms
//!              | lat_p99_ms | lat_max_ms | ttfb_p50_ms | ttfb_p99_ms | errors
//! op          := <= | < | >= | > | ~=        (~= needs a tolerance)
//! ```
//!
//! `GET.ops_per_s ~= 200 +-2%` passes from 196 to 204. ALL adds rates and errors and takes
//! the worst latency.

use harness::ops::OpResult;
use harness::verdict::{judge, parse_bound, BoundOperand, Kind, Op, Verdict};

const METRICS: &str = "ops_per_s, mib_per_s, lat_mean_ms, lat_p50_ms, lat_p90_ms, lat_p99_ms, lat_max_ms, ttfb_p50_ms, ttfb_p99_ms, errors";

/// A parsed expectation: the metric here, the bound by the harness's grammar
/// ([`harness::verdict::parse_bound`], the one parser of `op number [+-N%]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    pub text: String,
    /// None: ALL.
    op: Option<String>,
    metric: String,
    cmp: Op,
    value: f64,
    tolerance: f64,
}

impl Expect {
    pub fn parse(text: &str) -> Result<Expect, String> {
        let err = |m: &str| format!("expect {text:?}: {m}");
        let s = text.trim();
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(s.len());
        let (name, rest) = s.split_at(end);
        let (op, metric) = name.split_once('.').ok_or_else(|| {
            err(&format!(
                "expected OP.metric (e.g. GET.ops_per_s), metrics: {METRICS}"
            ))
        })?;
        let op = match op.to_ascii_uppercase().as_str() {
            "ALL" => None,
            o if loadgen::s3::Op::parse(o).is_some() => Some(o.to_string()),
            o => {
                return Err(err(&format!(
                    "unknown operation {o:?}; allowed GET, PUT, DELETE, LIST, STAT, ALL"
                )))
            }
        };
        if !METRICS.split(", ").any(|m| m == metric) {
            return Err(err(&format!(
                "unknown metric {metric:?}; allowed {METRICS}"
            )));
        }
        let b = parse_bound(s, rest, Kind::Number, &|_| false, "").map_err(|e| e.0)?;
        let value = match b.operand {
            BoundOperand::Number(v) => v * b.factor,
            BoundOperand::Name(n) => return Err(err(&format!("{n:?} is not a number"))),
        };
        Ok(Expect {
            text: s.to_string(),
            op,
            metric: metric.to_string(),
            cmp: b.op,
            value,
            tolerance: b.tolerance,
        })
    }

    /// The measured value (None when the operation did not run).
    fn measure(&self, ops: &[&OpResult]) -> Option<f64> {
        let of: Vec<&&OpResult> = ops
            .iter()
            .filter(|o| self.op.as_deref().is_none_or(|op| o.op == op))
            .collect();
        if of.is_empty() {
            return None;
        }
        let ms = |ns: f64| ns / 1e6;
        let worst = |f: &dyn Fn(&OpResult) -> f64| of.iter().map(|o| f(o)).fold(0.0, f64::max);
        Some(match self.metric.as_str() {
            "ops_per_s" => of.iter().map(|o| o.ops_per_s).sum(),
            "mib_per_s" => of.iter().map(|o| o.bytes_per_s).sum::<f64>() / 1048576.0,
            "errors" => of.iter().map(|o| o.errors as f64).sum(),
            "lat_mean_ms" => worst(&|o| ms(o.lat.mean_ns)),
            "lat_p50_ms" => worst(&|o| ms(o.lat.p50_ns as f64)),
            "lat_p90_ms" => worst(&|o| ms(o.lat.p90_ns as f64)),
            "lat_p99_ms" => worst(&|o| ms(o.lat.p99_ns as f64)),
            "lat_max_ms" => worst(&|o| ms(o.lat.max_ns as f64)),
            "ttfb_p50_ms" => worst(&|o| o.ttfb.map(|t| ms(t.p50_ns as f64)).unwrap_or(0.0)),
            _ => worst(&|o| o.ttfb.map(|t| ms(t.p99_ns as f64)).unwrap_or(0.0)),
        })
    }

    /// [`check`](Self::check), and a shortfall in the direction a starved host explains (a
    /// rate too low, a latency too high) inconclusive when `starved` says the load
    /// generator's host was (docs/DIAGNOSIS.md, `starved-host`). Failed requests never are.
    pub fn check_on(&self, ops: &[&OpResult], starved: Option<&assess::Diagnosis>) -> Verdict {
        let v = self.check(ops);
        let quantity = match self.metric.as_str() {
            "errors" => return v,
            "ops_per_s" | "mib_per_s" => assess::Quantity::Throughput,
            _ => assess::Quantity::Latency,
        };
        let check = assess::Check {
            passed: v.passed,
            quantity,
            sense: match self.cmp {
                Op::Le | Op::Lt => assess::Sense::AtMost,
                Op::Ge | Op::Gt => assess::Sense::AtLeast,
                Op::Approx => assess::Sense::Around,
            },
            measured: v.measured,
            target: self.value,
            io_error: false,
        };
        v.judged(&check, starved)
    }

    /// Judge the merged results of a test.
    pub fn check(&self, ops: &[&OpResult]) -> Verdict {
        let Some(m) = self.measure(ops) else {
            return Verdict::plain(
                self.text.clone(),
                0.0,
                String::new(),
                false,
                format!(
                    "no {} requests were measured",
                    self.op.as_deref().unwrap_or("")
                ),
            );
        };
        let name = self.text.split_whitespace().next().unwrap_or("");
        let name = name
            .split(|c: char| "<>~=".contains(c))
            .next()
            .unwrap_or(name);
        judge(
            &self.text,
            name,
            m,
            self.cmp,
            self.value,
            self.tolerance,
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::ops::{OpLatency, SegmentSpread};

    fn r(op: &str, ops_per_s: f64, p99_ms: u64) -> OpResult {
        OpResult {
            client: String::new(),
            op: op.into(),
            ops: 100,
            bytes: 0.0,
            window_start_ms: 0,
            window_ms: 1000,
            ops_per_s,
            bytes_per_s: ops_per_s * 1048576.0,
            lat: OpLatency {
                p99_ns: p99_ms * 1_000_000,
                ..OpLatency::default()
            },
            ttfb: None,
            segments: SegmentSpread::default(),
            total: 100,
            errors: 0,
            error_codes: Default::default(),
        }
    }

    #[test]
    fn parse_and_judge() {
        let get = r("GET", 199.0, 30);
        let put = r("PUT", 10.0, 80);
        let all = [&get, &put];
        let e = Expect::parse("GET.ops_per_s ~= 200 +-2%").unwrap();
        let v = e.check(&all);
        assert!(v.passed, "{v:?}");
        assert_eq!(v.bound, "196..204");
        assert!(
            !Expect::parse("get.ops_per_s ~= 210 +-2%")
                .unwrap()
                .check(&all)
                .passed
        );
        assert!(
            Expect::parse("PUT.mib_per_s >= 10")
                .unwrap()
                .check(&all)
                .passed
        );
        assert!(
            !Expect::parse("ALL.lat_p99_ms < 50")
                .unwrap()
                .check(&all)
                .passed
        );
        assert_eq!(
            Expect::parse("ALL.ops_per_s>0")
                .unwrap()
                .check(&all)
                .measured,
            209.0
        );
        assert!(Expect::parse("ALL.errors <= 0").unwrap().check(&all).passed);
        let v = Expect::parse("DELETE.ops_per_s > 1").unwrap().check(&all);
        assert!(!v.passed && v.detail.contains("no DELETE requests"));
        for (bad, why) in [
            ("ops_per_s > 1", "expected OP.metric"),
            ("COPY.ops_per_s > 1", "unknown operation"),
            ("GET.iops > 1", "unknown metric"),
            ("GET.ops_per_s = 1", "expected an operator"),
            ("GET.ops_per_s ~= 1", "needs a tolerance"),
            ("GET.ops_per_s > x", "expected a number"),
            ("GET.ops_per_s > -1", "expected a number"),
            ("GET.ops_per_s > 5ms", "does not fit this metric"),
            ("GET.ops_per_s ~= 5 +-x", "tolerance"),
        ] {
            let e = Expect::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
