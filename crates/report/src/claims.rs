//! The report's answer, in words: each verdict as the claim it checks and the number it
//! measured ("read_iops on vol500 held its 500 IOPS ceiling: 499.7 IOPS measured"), from
//! the expectation, the volume's recorded limits and the measurement. Pure.
//!
//! Expectations in the harness's grammar (`iops_steady ~= policy.ceiling +-3%`) become
//! sentences; any other verdict (a family's own: the isolation control, the provisioned
//! checks) reads as its expectation and detail.

use harness::store::{JobRecord, RunRecord, SUPERSEDED};
use harness::verdict::{Expectation, Kind, Metric, Op, Operand, Verdict};

/// One claim of a run: what was checked, in words, and how it came out.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub outcome: assess::Outcome,
    pub text: String,
}

/// What a run without checks measured, a line per job (a job's headline figures as fio
/// prints them, what limited it): the answer when nothing was judged.
pub fn measured(run: &RunRecord) -> Vec<String> {
    use fio::fmt;
    run.jobs
        .iter()
        .filter(|j| j.status != SUPERSEDED)
        .filter_map(|j| {
            let r = j.primary()?;
            let dirs: Vec<String> = [("read", &r.read), ("write", &r.write)]
                .into_iter()
                .filter(|(_, d)| d.active())
                .map(|(dir, d)| {
                    format!(
                        "{dir} {} IOPS, {}, mean latency {}",
                        fmt::iops(d.iops_text()),
                        fmt::bw(d.bw_text()),
                        fmt::lat(d.lat_mean_ns)
                    )
                })
                .collect();
            if dirs.is_empty() {
                return None;
            }
            let on = j
                .volume
                .as_deref()
                .map(|v| format!(" on {v}"))
                .unwrap_or_default();
            let limited = j
                .diagnosis
                .as_ref()
                .map(|d| format!(" (limited by: {})", d.bottleneck.as_str()))
                .unwrap_or_default();
            Some(format!(
                "{} / {}{on}: {}{limited}",
                j.workload,
                j.name,
                dirs.join("; ")
            ))
        })
        .collect()
}

/// Every counted verdict of `run` as a claim, those that did not pass first (run order
/// within each group).
pub fn claims(run: &RunRecord) -> Vec<Claim> {
    let mut out: Vec<Claim> = run
        .jobs
        .iter()
        .filter(|j| j.status != SUPERSEDED)
        .flat_map(|j| {
            j.verdicts.iter().map(move |v| Claim {
                outcome: v.outcome,
                text: sentence(run, j, v),
            })
        })
        .collect();
    out.sort_by_key(|c| c.outcome == assess::Outcome::Pass);
    out
}

/// A value of `kind` with its unit.
fn value(kind: Kind, v: f64) -> String {
    match kind {
        Kind::Iops => {
            if v.abs() < 10_000.0 && (v - v.round()).abs() < 1e-9 {
                format!("{v:.0} IOPS")
            } else {
                format!("{} IOPS", fio::fmt::sig(v))
            }
        }
        Kind::Bw => fio::fmt::rate(v),
        Kind::Lat => fio::fmt::lat(v * 1000.0),
        Kind::Secs => format!("{} s", fio::fmt::sig(v)),
        Kind::Number => fio::fmt::sig(v),
    }
}

fn metric_words(m: Metric) -> &'static str {
    match m {
        Metric::Iops => "IOPS",
        Metric::IopsMean => "mean IOPS",
        Metric::IopsSteady => "steady IOPS",
        Metric::Bw => "bandwidth",
        Metric::BwMean => "mean bandwidth",
        Metric::BwSteady => "steady bandwidth",
        Metric::LatMeanUs => "mean latency",
        Metric::LatP50Us => "p50 latency",
        Metric::LatP90Us => "p90 latency",
        Metric::LatP99Us => "p99 latency",
        Metric::LatP999Us => "p99.9 latency",
    }
}

/// The sentence of one verdict of job `j`.
pub fn sentence(run: &RunRecord, j: &JobRecord, v: &Verdict) -> String {
    let who = match &j.volume {
        Some(vol) if *vol != j.name => format!("{} on {vol}", j.name),
        Some(vol) => vol.clone(),
        None => j.name.clone(),
    };
    let tail = match (&v.outcome, &v.reason) {
        (assess::Outcome::Inconclusive, Some(r)) => format!(" (inconclusive: {r})"),
        (assess::Outcome::Inconclusive, None) => " (inconclusive)".to_string(),
        _ => String::new(),
    };
    let Ok(e) = Expectation::parse(&v.expectation) else {
        return format!("{who}: {}: {}{tail}", v.expectation, v.detail);
    };
    // A verdict that never measured (the job failed, limits unknown) says why.
    if v.measured == 0.0 && v.outcome != assess::Outcome::Pass && !v.detail.contains(" = ") {
        return format!("{who}: {}: {}{tail}", v.expectation, v.detail);
    }
    let kind = e.metric.kind();
    let pass = v.outcome == assess::Outcome::Pass;
    let limits = j
        .volume
        .as_deref()
        .and_then(|n| run.volumes.iter().find(|x| x.name == n))
        .map(|x| x.limits);
    let scaled = |what: String| {
        if e.factor == 1.0 {
            what
        } else {
            format!("{:.0}% of {what}", e.factor * 100.0)
        }
    };
    let tol = if e.tolerance > 0.0 {
        format!(" (within {:.0}%)", e.tolerance * 100.0)
    } else {
        String::new()
    };
    let claim = match e.operand {
        Operand::Ceiling | Operand::Floor => {
            let floor = e.operand == Operand::Floor;
            let limit = limits.map(|l| match (floor, kind) {
                (false, Kind::Iops) => l.ceiling_iops,
                (false, _) => l.ceiling_bps,
                (true, Kind::Iops) => l.floor_iops,
                (true, _) => l.floor_bps,
            });
            let noun = if floor { "floor" } else { "ceiling" };
            let its = scaled(match limit {
                Some(x) if x > 0 => format!("its {} {noun}", value(kind, x as f64)),
                _ => format!("its {noun}"),
            });
            let verb = match (floor, e.op, pass) {
                (false, Op::Approx, true) => "held",
                (false, Op::Approx, false) => "missed",
                (false, Op::Le | Op::Lt, true) => "stayed under",
                (false, Op::Le | Op::Lt, false) => "went over",
                (false, Op::Ge | Op::Gt, true) => "reached",
                (false, Op::Ge | Op::Gt, false) => "fell short of",
                (true, Op::Le | Op::Lt, true) => "stayed under",
                (true, Op::Le | Op::Lt, false) => "went over",
                (true, _, true) => "got",
                (true, _, false) => "fell below",
            };
            format!("{who} {verb} {its}{tol}")
        }
        Operand::Number(n) => {
            let target = scaled(value(kind, n));
            let m = metric_words(e.metric);
            let verb = match (e.op, pass) {
                (Op::Le | Op::Lt, true) => "stayed at or under",
                (Op::Le | Op::Lt, false) => "went over",
                (Op::Ge | Op::Gt, true) => "reached",
                (Op::Ge | Op::Gt, false) => "fell short of",
                (Op::Approx, true) => "came to",
                (Op::Approx, false) => "missed",
            };
            format!("{who}: {m} {verb} {target}{tol}")
        }
    };
    let measured = match e.metric {
        Metric::IopsSteady | Metric::BwSteady => {
            format!("{} measured (steady)", value(kind, v.measured))
        }
        Metric::IopsMean | Metric::BwMean => format!("{} measured (mean)", value(kind, v.measured)),
        _ => format!("{} measured", value(kind, v.measured)),
    };
    format!("{claim}: {measured}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::store::VolumeRecord;
    use harness::verdict::Limits;

    fn run_with(
        expect: &str,
        measured: f64,
        outcome: assess::Outcome,
    ) -> (RunRecord, JobRecord, Verdict) {
        let run = RunRecord {
            volumes: vec![VolumeRecord {
                name: "vol500".into(),
                size: 100_000_000_000,
                snapshot_reserve_percent: 5,
                policy: Some("QoS_500iops".into()),
                limits: Limits {
                    ceiling_iops: 500,
                    ceiling_bps: 100 << 20,
                    floor_iops: 200,
                    floor_bps: 0,
                },
            }],
            ..Default::default()
        };
        let j = JobRecord {
            id: 1,
            seq: 1,
            workload: "w".into(),
            name: "read_iops".into(),
            volume: Some("vol500".into()),
            iteration: 1,
            status: "done".into(),
            ..Default::default()
        };
        let v = Verdict::new(
            expect.into(),
            measured,
            String::new(),
            format!("x = {measured}"),
            outcome,
        );
        (run, j, v)
    }

    #[test]
    fn claims_read_as_sentences_with_their_numbers() {
        use assess::Outcome::*;
        for (expect, measured, outcome, want) in [
            ("iops_steady ~= policy.ceiling +-3%", 499.7, Pass, "read_iops on vol500 held its 500 IOPS ceiling (within 3%): 499.7 IOPS measured (steady)"),
            ("iops <= policy.ceiling +-3%", 612.0, Fail, "read_iops on vol500 went over its 500 IOPS ceiling (within 3%): 612 IOPS measured"),
            ("bw_steady ~= policy.ceiling +-3%", 104_857_600.0, Pass, "read_iops on vol500 held its 100.0 MiB/s ceiling (within 3%): 100.0 MiB/s measured (steady)"),
            ("iops >= policy.floor * 0.98", 150.0, Fail, "read_iops on vol500 fell below 98% of its 200 IOPS floor: 150 IOPS measured"),
            ("lat_mean_us < 50ms", 8002.6, Pass, "read_iops on vol500: mean latency stayed at or under 50.00 ms: 8.003 ms measured"),
            ("iops >= 1000", 800.0, Inconclusive, "read_iops on vol500: IOPS fell short of 1000 IOPS: 800 IOPS measured (inconclusive)"),
        ] {
            let (run, j, v) = run_with(expect, measured, outcome);
            assert_eq!(sentence(&run, &j, &v), want, "{expect}");
        }
        // A family's own verdict reads as it was written.
        let (run, j, mut v) = run_with("x", 1.0, Fail);
        v.expectation =
            "control (no floors): a protected volume falls below 98% of its target".into();
        v.detail = "without floors the worst was p1 at step 2: 61.0% of its target".into();
        assert_eq!(
            sentence(&run, &j, &v),
            "read_iops on vol500: control (no floors): a protected volume falls below 98% of its target: without floors the worst was p1 at step 2: 61.0% of its target"
        );
    }
}
