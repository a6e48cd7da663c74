use super::*;
use fio::JobResult;
use harness::store::JobRecord;

pub(super) fn job(seq: u32, name: &str, iteration: u32, iops: f64, p99_us: u64) -> JobRecord {
    let mut r = JobResult::default();
    r.read.iops = iops;
    r.read.iops_mean = iops;
    r.read.total_ios = 100;
    r.read.bw_bytes = (iops * 4096.0) as u64;
    r.read.lat_mean_ns = 1e9 / iops * 16.0;
    r.read.p99_ns = p99_us * 1000;
    JobRecord {
        id: seq as i64,
        seq,
        workload: "w".into(),
        name: name.into(),
        volume: Some("v".into()),
        iteration,
        status: "done".into(),
        results: vec![r],
        ..Default::default()
    }
}

pub(super) fn run(id: i64, jobs: Vec<JobRecord>) -> RunRecord {
    RunRecord {
        id,
        name: format!("r{id}"),
        started_at: "2026-11-22T07:00:00Z".into(),
        finished_at: None,
        status: "passed".into(),
        target: "embedded node".into(),
        executor: "fake".into(),
        runtime_s: 3.0,
        ramp_s: 1.0,
        jobs,
        ..Default::default()
    }
}

/// Iterations 1, 2, ... of job "read" (seq 1, 2, ...) at `iops`, with p99 `p99_us`, then
/// the `others`.
fn reads_then(iops: &[f64], p99_us: u64, others: Vec<JobRecord>) -> Vec<JobRecord> {
    iops.iter()
        .enumerate()
        .map(|(i, x)| job(i as u32 + 1, "read", i as u32 + 1, *x, p99_us))
        .chain(others)
        .collect()
}

fn runs(iops: &[f64]) -> Vec<JobRecord> {
    reads_then(iops, 500, Vec::new())
}

fn iops_delta(a: &[f64], b: &[f64]) -> MetricDelta {
    let c = compare(&run(1, runs(a)), &run(2, runs(b)));
    c.jobs[0].metric("iops").unwrap().clone()
}

/// Two single runs whose own diagnoses discredited the job (noisy host, no steady
/// state): a 10% change is not better or worse at the flat 5% but inconclusive, and the
/// closing line says to measure the noise with --iterations. With iterations the Welch
/// test judges as usual; a clean job is flagged as before.
#[test]
fn changes_on_jobs_the_runs_discredited_are_inconclusive() {
    let noisy = |mut j: JobRecord| {
        j.diagnosis = Some(assess::Diagnosis {
            bottleneck: assess::Bottleneck::NoisyHost,
            reason: "other processes".into(),
            figures: vec![],
        });
        j
    };
    let a = run(
        1,
        vec![
            noisy(job(1, "read", 1, 1000.0, 500)),
            job(2, "clean", 1, 1000.0, 500),
        ],
    );
    let b = run(
        2,
        vec![
            job(1, "read", 1, 900.0, 500),
            job(2, "clean", 1, 900.0, 500),
        ],
    );
    let c = compare(&a, &b);
    let read = &c.jobs[0];
    assert_eq!(read.discredited.as_deref(), Some("A: noisy-host"));
    let iops = read.metric("iops").unwrap();
    assert_eq!((iops.flagged, iops.verdict), (false, "inconclusive"));
    let clean = c.jobs[1].metric("iops").unwrap();
    assert_eq!((clean.flagged, clean.verdict), (true, "worse"));
    assert_eq!(
        c.inconclusive(),
        3,
        "iops, bandwidth and mean latency of the noisy job"
    );
    let t = text(&c);
    assert!(t.contains("inconclusive (A: noisy-host)"), "{t}");
    assert!(t.contains("--iterations 3"), "{t}");
    // With a measured spread the t-test decides, discredited or not.
    let its = |x: &[f64]| -> Vec<JobRecord> { runs(x).into_iter().map(noisy).collect() };
    let c = compare(
        &run(1, its(&[1000.0, 1010.0, 990.0])),
        &run(2, its(&[800.0, 810.0, 790.0])),
    );
    let iops = c.jobs[0].metric("iops").unwrap();
    assert_eq!((iops.flagged, iops.verdict), (true, "worse"));
}

#[test]
fn changes_beyond_the_welch_noise_are_flagged() {
    // A: 1000, 1100, 1050 IOPS (sd 50); B: 900, 990, 945 (sd 45): -10%.
    let a = run(
        1,
        reads_then(
            &[1000.0, 1100.0, 1050.0],
            500,
            vec![job(4, "gone", 1, 10.0, 1)],
        ),
    );
    // p99 doubled with no spread on either side: beyond the 1% floor, worse.
    let b = run(
        2,
        reads_then(
            &[900.0, 990.0, 945.0],
            1000,
            vec![job(4, "new", 1, 10.0, 1)],
        ),
    );
    let c = compare(&a, &b);
    assert_eq!(c.jobs.len(), 1);
    let j = &c.jobs[0];
    let iops = j.metric("iops").unwrap();
    assert_eq!((iops.a.n, iops.a.stddev), (3, 50.0));
    assert!((iops.b.stddev - 45.0).abs() < 1e-9, "{iops:?}");
    assert!((iops.change.unwrap() + 0.10).abs() < 1e-9, "{iops:?}");
    // Welch: se = sqrt(50^2/3 + 45^2/3), df = 3.96 -> t(3) = 3.182.
    let se = (2500.0f64 / 3.0 + 2025.0 / 3.0).sqrt();
    assert_eq!(iops.basis, "welch");
    assert!((iops.stderr.unwrap() - se).abs() < 1e-9, "{iops:?}");
    assert!((iops.df.unwrap() - 3.956).abs() < 1e-3, "{iops:?}");
    assert_eq!(iops.t, Some(3.182));
    assert!((iops.noise - 3.182 * se / 1050.0).abs() < 1e-12, "{iops:?}");
    assert!(!iops.flagged && iops.verdict == "within noise");
    let p99 = j.metric("lat_p99_us").unwrap();
    assert!(p99.flagged && p99.verdict == "worse", "{p99:?}");
    assert_eq!(p99.noise, MIN_NOISE_MEASURED);
    assert_eq!(c.only_in_a, vec!["w/gone@v"]);
    assert_eq!(c.only_in_b, vec!["w/new@v"]);
    assert_eq!(
        c.flagged(),
        1,
        "only p99: latency and bw move within their noise"
    );
    let t = text(&c);
    assert!(t.contains("FLAG worse"), "{t}");
    assert!(t.contains("1050 ± 50.00 n=3"), "{t}");
    // The conclusion leads.
    assert!(
        t.starts_with("1 change(s) beyond the noise: w/read on v lat_p99_us +100.0% (worse)."),
        "{t}"
    );
    assert!(t.contains("% (welch, df 4.0)"), "{t}");
    let j: serde_json::Value = serde_json::from_slice(&json(&c)).unwrap();
    assert_eq!(j["schema"], JSON_SCHEMA);
    assert_eq!(j["jobs"][0]["metrics"][3]["flagged"], true);
    assert_eq!(j["jobs"][0]["metrics"][0]["basis"], "welch");
    assert_eq!(j["jobs"][0]["metrics"][0]["a"]["stddev"], 50.0);
    let h = String::from_utf8(html(&c)).unwrap();
    assert!(h.contains("<tr class=\"worse\">"), "{h}");
}

#[test]
fn tight_iterations_see_small_changes_and_noisy_ones_hide_large_ones() {
    // +3% over five tight iterations each: beyond the noise (a range rule with a 5%
    // floor would not see it).
    let d = iops_delta(
        &[1000.0, 1002.0, 998.0, 1001.0, 999.0],
        &[1030.0, 1031.0, 1029.0, 1030.0, 1030.0],
    );
    assert!(d.flagged && d.verdict == "better", "{d:?}");
    assert_eq!(d.noise, MIN_NOISE_MEASURED, "t x se is far below 1%: {d:?}");
    // +20% over three noisy iterations (sd 200 vs 50): within noise.
    let d = iops_delta(&[800.0, 1200.0, 1000.0], &[1150.0, 1250.0, 1200.0]);
    assert!(!d.flagged, "{d:?}");
    assert!(d.noise > 0.4, "{d:?}");
    // One run iterated, the other once: its stddev stands for both, df = n - 1 = 2.
    let d = iops_delta(&[1000.0, 1100.0, 1050.0], &[1350.0]);
    assert_eq!((d.basis, d.df, d.t), ("one-side", Some(2.0), Some(4.303)));
    let se = 50.0 * (1.0f64 / 3.0 + 1.0).sqrt();
    assert!((d.noise - 4.303 * se / 1050.0).abs() < 1e-12, "{d:?}");
    assert!(d.flagged, "+28.6% > 23.7%: {d:?}");
    let d = iops_delta(&[1000.0, 1100.0, 1050.0], &[1200.0]);
    assert!(!d.flagged, "+14.3% < 23.7%: {d:?}");
    let d = iops_delta(&[1200.0], &[1000.0, 1100.0, 1050.0]);
    assert_eq!((d.basis, d.df), ("one-side", Some(2.0)));
}

#[test]
fn a_run_reports_the_spread_of_its_iterations() {
    let a = run(
        1,
        reads_then(
            &[1000.0, 1100.0, 1050.0],
            500,
            vec![job(4, "once", 1, 10.0, 1)],
        ),
    );
    let s = crate::export::iteration_spreads(&a);
    assert_eq!(s.len(), 1, "single-iteration jobs have no spread");
    assert_eq!(s[0].0, "w / read on v");
    assert_eq!((s[0].1.n, s[0].1.mean), (3, 1050.0));
    assert!((s[0].1.stddev - 50.0).abs() < 1e-9);
    let md = String::from_utf8(crate::export::markdown(&a, &[])).unwrap();
    assert!(
        md.contains("| w / read on v | 3 | 1050 | 50.00 | 4.8% | 1000 | 1100 |"),
        "{md}"
    );
    let h = String::from_utf8(crate::html::render(&a, &[])).unwrap();
    assert!(h.contains("id=\"iterations\""));
}

#[test]
fn single_iterations_use_the_five_percent_floor() {
    let a = run(1, vec![job(1, "read", 1, 500.0, 100)]);
    let b = run(2, vec![job(1, "read", 1, 520.0, 100)]);
    let c = compare(&a, &b);
    let iops = &c.jobs[0].metrics[0];
    assert!(!iops.flagged, "+4% < 5%");
    assert_eq!(
        (iops.basis, iops.noise, iops.stderr),
        ("no-spread", MIN_NOISE, None)
    );
    assert!(text(&c).contains("5.0% (no spread)"), "{}", text(&c));
    let b = run(2, vec![job(1, "read", 1, 530.0, 100)]);
    let c = compare(&a, &b);
    assert!(c.jobs[0].metrics[0].flagged && c.jobs[0].metrics[0].verdict == "better");
}
