//! The per-operation metrics of a request/response driver's job (the S3 family), each with
//! its values in the job's 1 s segments inside the measured window.

use harness::ops::OpSample;
use harness::store::{JobRecord, RunRecord};

use super::Value;

/// ops/s, MiB/s, mean and p99 latency, TTFB p50 (GETs) per operation of the merged view.
/// The segments give each its own series: ops/s, MiB/s, mean latency, p99 latency and
/// mean TTFB per second (the segments have no TTFB p50; their mean stands in for it).
pub(super) fn values(run: &RunRecord, j: &JobRecord) -> Vec<Value> {
    let series = run.series_of(j.id);
    let mut out = Vec::new();
    for o in harness::ops::primary(&j.ops) {
        if o.ops == 0 {
            continue;
        }
        let segs: Vec<&OpSample> = series
            .map(|s| {
                s.ops
                    .iter()
                    .filter(|x| x.client == o.client && x.op == o.op && x.in_window)
                    .collect()
            })
            .unwrap_or_default();
        let of = |f: &dyn Fn(&OpSample) -> f64| segs.iter().map(|x| f(x)).collect::<Vec<_>>();
        let op = &o.op;
        out.push((
            format!("{op} ops/s"),
            true,
            o.ops_per_s,
            of(&|x| x.ops_per_s),
        ));
        if o.bytes_per_s > 0.0 {
            out.push((
                format!("{op} MiB/s"),
                true,
                o.bytes_per_s / 1048576.0,
                of(&|x| x.bytes_per_s / 1048576.0),
            ));
        }
        out.push((
            format!("{op} lat mean ms"),
            false,
            o.lat.mean_ns / 1e6,
            of(&|x| x.lat_mean_ns / 1e6),
        ));
        out.push((
            format!("{op} lat p99 ms"),
            false,
            o.lat.p99_ns as f64 / 1e6,
            of(&|x| x.lat_p99_ns as f64 / 1e6),
        ));
        if let Some(t) = o.ttfb {
            out.push((
                format!("{op} TTFB p50 ms"),
                false,
                t.p50_ns as f64 / 1e6,
                of(&|x| x.ttfb_mean_ns / 1e6),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{job, run};
    use super::super::*;
    use harness::ops::{OpLatency, OpResult, OpSample, SegmentSpread};
    use harness::series::JobSeries;

    fn s3_run(id: i64, ops_per_s: f64, p99_ms: u64, segs: &[f64]) -> RunRecord {
        let mut j = job(1, "mixed", 1, 1.0, 1);
        j.workload = "s3".into();
        j.results.clear();
        j.ops = vec![OpResult {
            client: String::new(),
            op: "GET".into(),
            ops: 1000,
            bytes: 4096.0 * 1000.0,
            window_start_ms: 1000,
            window_ms: 5000,
            ops_per_s,
            bytes_per_s: ops_per_s * 4096.0,
            lat: OpLatency {
                mean_ns: 5e6,
                p99_ns: p99_ms * 1_000_000,
                ..OpLatency::default()
            },
            ttfb: Some(OpLatency {
                p50_ns: 4_000_000,
                ..OpLatency::default()
            }),
            segments: SegmentSpread::default(),
            total: 1000,
            errors: 0,
            error_codes: Default::default(),
        }];
        let ops = segs
            .iter()
            .enumerate()
            .map(|(i, v)| OpSample {
                client: String::new(),
                op: "GET".into(),
                t_ms: 2000 + 1000 * i as u64,
                dur_ms: 1000,
                ops_per_s: *v,
                bytes_per_s: v * 4096.0,
                errors: 0,
                lat_mean_ns: 5e6,
                lat_p50_ns: 4_000_000,
                lat_p99_ns: p99_ms * 1_000_000,
                ttfb_mean_ns: 4e6,
                in_window: true,
            })
            .collect();
        let mut r = run(id, vec![j]);
        r.series = vec![JobSeries {
            job_id: 1,
            ops,
            ..JobSeries::default()
        }];
        r
    }

    /// Per-operation results: one iteration each, noise from the 1 s segments when wider
    /// than the 5% floor.
    #[test]
    fn operations_are_compared_against_their_segment_noise() {
        // Segments 150..250 ops/s: sd 39.53, SE over 5 = 17.68 each side; Welch se 25.0,
        // df 8 -> t 2.306: noise 2.306 x 25.0 / 200 = 28.8%.
        let noisy = [150.0, 175.0, 200.0, 225.0, 250.0];
        let a = s3_run(1, 200.0, 10, &noisy);
        let b = s3_run(2, 240.0, 10, &noisy);
        let c = compare(&a, &b);
        let m = &c.jobs[0].metrics;
        let names: Vec<&str> = m.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(
            names,
            [
                "GET ops/s",
                "GET MiB/s",
                "GET lat mean ms",
                "GET lat p99 ms",
                "GET TTFB p50 ms"
            ]
        );
        let ops = &m[0];
        let g = ops.a.segments.unwrap();
        assert_eq!((g.n, g.mean), (5, 200.0));
        assert_eq!(
            (ops.basis, ops.df, ops.t),
            ("segments", Some(8.0), Some(2.306))
        );
        let se = (2.0 * g.stddev * g.stddev / 5.0).sqrt();
        assert!((ops.noise - 2.306 * se / 200.0).abs() < 1e-12, "{ops:?}");
        assert!((ops.noise - 0.288).abs() < 1e-3, "{ops:?}");
        assert!(!ops.flagged, "+20% is within 28.8%: {ops:?}");
        assert!(c.rule.ends_with(RULE_SEGMENTS), "{}", c.rule);
        // Flat segments (mean latency): the 5% floor of single runs holds, not 0.
        assert_eq!((m[2].basis, m[2].noise), ("no-spread", MIN_NOISE));
        // Steady segments: the same +20% is flagged; a doubled p99 is worse.
        let steady = [199.0, 200.0, 201.0, 200.0, 200.0];
        let c = compare(
            &s3_run(1, 200.0, 10, &steady),
            &s3_run(2, 240.0, 20, &steady),
        );
        let m = &c.jobs[0].metrics;
        assert!(m[0].flagged && m[0].verdict == "better", "{:?}", m[0]);
        assert_eq!(m[0].noise, MIN_NOISE, "{:?}", m[0]);
        assert!(m[3].flagged && m[3].verdict == "worse", "{:?}", m[3]);
        assert_eq!(c.flagged(), 3, "ops/s, MiB/s and p99");
        let t = text(&c);
        assert!(t.contains("GET ops/s") && t.contains("240.0"), "{t}");
        let j: serde_json::Value = serde_json::from_slice(&json(&c)).unwrap();
        assert_eq!(j["jobs"][0]["metrics"][0]["metric"], "GET ops/s");
        assert_eq!(j["jobs"][0]["metrics"][0]["a"]["segments"]["n"], 5);
        // fio jobs keep their JSON shape (no segments key) and main's rule.
        let f = compare(
            &run(1, vec![job(1, "r", 1, 5.0, 1)]),
            &run(2, vec![job(1, "r", 1, 5.0, 1)]),
        );
        assert_eq!(f.rule, RULE);
        let j: serde_json::Value = serde_json::from_slice(&json(&f)).unwrap();
        assert!(j["jobs"][0]["metrics"][0]["a"].get("segments").is_none());
    }

    /// With iterations, the iterations' Welch test holds unless the segments spread wider.
    #[test]
    fn iterated_operations_take_the_larger_of_the_two_noises() {
        let steady = [199.0, 200.0, 201.0, 200.0, 200.0];
        let mut a = s3_run(1, 200.0, 10, &steady);
        let mut b = s3_run(2, 200.0, 10, &steady);
        for (r, second) in [(&mut a, 180.0), (&mut b, 260.0)] {
            let mut j = r.jobs[0].clone();
            j.id = 2;
            j.iteration = 2;
            j.ops[0].ops_per_s = second;
            r.jobs.push(j);
            let mut s = r.series[0].clone();
            s.job_id = 2;
            r.series.push(s);
        }
        let c = compare(&a, &b);
        let ops = &c.jobs[0].metrics[0];
        assert_eq!((ops.a.n, ops.a.mean, ops.b.mean), (2, 190.0, 230.0));
        assert_eq!(ops.a.segments.unwrap().n, 10, "both iterations' segments");
        assert_eq!(ops.basis, "welch", "{ops:?}");
        assert!(
            !ops.flagged,
            "+21% against sd 14.1 and 42.4 over 2: {ops:?}"
        );
    }
}
