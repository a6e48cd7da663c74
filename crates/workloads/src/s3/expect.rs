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
use harness::verdict::Verdict;

const METRICS: &str = "ops_per_s, mib_per_s, lat_mean_ms, lat_p50_ms, lat_p90_ms, lat_p99_ms, lat_max_ms, ttfb_p50_ms, ttfb_p99_ms, errors";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Le,
    Lt,
    Ge,
    Gt,
    Approx,
}

/// A parsed expectation.
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    pub text: String,
    /// None: ALL.
    op: Option<String>,
    metric: String,
    cmp: Cmp,
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
        let rest = rest.trim_start();
        let (cmp, rest) = [
            ("<=", Cmp::Le),
            (">=", Cmp::Ge),
            ("~=", Cmp::Approx),
            ("<", Cmp::Lt),
            (">", Cmp::Gt),
        ]
        .iter()
        .find_map(|(t, c)| rest.strip_prefix(t).map(|r| (*c, r)))
        .ok_or_else(|| err("expected an operator: <=, <, >=, >, ~="))?;
        let (num, tol) = match rest.split_once("+-") {
            Some((n, t)) => {
                let pct = t
                    .trim()
                    .strip_suffix('%')
                    .and_then(|p| p.trim().parse::<f64>().ok())
                    .filter(|p| p.is_finite() && (0.0..100.0).contains(p))
                    .ok_or_else(|| err("tolerance: expected a percentage like 2%"))?;
                (n, pct / 100.0)
            }
            None => (rest, 0.0),
        };
        let value: f64 = num
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| err(&format!("{:?} is not a non-negative number", num.trim())))?;
        if cmp == Cmp::Approx && tol == 0.0 {
            return Err(err(
                "~= needs a tolerance, e.g. `GET.ops_per_s ~= 200 +-2%`",
            ));
        }
        Ok(Expect {
            text: s.to_string(),
            op,
            metric: metric.to_string(),
            cmp,
            value,
            tolerance: tol,
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
        let (v, t) = (self.value, self.tolerance);
        let (passed, bound) = match self.cmp {
            Cmp::Le => (m <= v * (1.0 + t), format!("<= {}", v * (1.0 + t))),
            Cmp::Lt => (m < v * (1.0 + t), format!("< {}", v * (1.0 + t))),
            Cmp::Ge => (m >= v * (1.0 - t), format!(">= {}", v * (1.0 - t))),
            Cmp::Gt => (m > v * (1.0 - t), format!("> {}", v * (1.0 - t))),
            Cmp::Approx => (
                (m - v).abs() <= v * t,
                format!("{} .. {}", v * (1.0 - t), v * (1.0 + t)),
            ),
        };
        let detail = format!(
            "{} = {m:.3}, want {bound}{}",
            self.text.split_whitespace().next().unwrap_or(""),
            if t > 0.0 {
                format!(" ({v} +-{}%)", t * 100.0)
            } else {
                String::new()
            }
        );
        Verdict::plain(self.text.clone(), m, bound, passed, detail)
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
        assert_eq!(v.bound, "196 .. 204");
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
            ("GET.ops_per_s > x", "not a non-negative number"),
            ("GET.ops_per_s ~= 5 +-x", "tolerance"),
        ] {
            let e = Expect::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
