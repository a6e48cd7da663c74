//! `qoslab compare` on canned runs: plans with iterations run through the harness's loop
//! (fake fio whose IOPS change per iteration), stored, loaded back and compared by their
//! iterations' spread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use fio::FakeFio;
use harness::store::{RunRecord, Store};
use harness::target::Target;
use harness::ui::Quiet;
use report::compare::{compare, MetricDelta, MIN_NOISE, MIN_NOISE_MEASURED};

use crate::support::run_with;

fn fixture() -> String {
    std::fs::read_to_string(format!(
        "{}/../fio/tests/fixtures/randread_500iops_msec.out",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Runs a one-job plan `iops.len()` times (its iterations), fio reporting `iops[k]` IOPS on
/// iteration k.
fn canned_run(store: &mut Store, iops: &[f64]) -> RunRecord {
    let text = format!(
        "[bench]\nname = \"cmp\"\nruntime = \"3s\"\niterations = {}\n\
         [[workload]]\nname = \"r\"\nfio = {{ rw = \"randread\", bs = \"4k\" }}\n",
        iops.len()
    );
    let mut plan = workloads::registry().parse(&text, "p.toml").unwrap();
    let values: Arc<Vec<f64>> = Arc::new(iops.to_vec());
    let k = Arc::new(AtomicUsize::new(0));
    let base = fixture();
    let fake = FakeFio::new(move |_| {
        let i = k.fetch_add(1, Ordering::SeqCst);
        base.replacen(
            "\"iops\" : 479.692996",
            &format!("\"iops\" : {}", values[i]),
            1,
        )
    });
    let target = Target::Nbd("nbd://127.0.0.1/x".into());
    let out = run_with(&mut plan, &target, &fake, store, &mut Quiet).unwrap();
    assert_eq!(out.record.jobs.len(), iops.len());
    store.load_run(out.record.id).unwrap()
}

fn iops(a: &RunRecord, b: &RunRecord) -> MetricDelta {
    let c = compare(a, b);
    assert_eq!(c.jobs.len(), 1, "{c:?}");
    c.jobs[0].metric("iops").unwrap().clone()
}

#[test]
fn stored_iterations_decide_what_compare_flags() {
    let mut store = Store::in_memory().unwrap();
    let a = canned_run(&mut store, &[1000.0, 1002.0, 998.0]);
    let b = canned_run(&mut store, &[1030.0, 1031.0, 1029.0]);
    let noisy = canned_run(&mut store, &[800.0, 1200.0, 1000.0]);
    let once = canned_run(&mut store, &[1030.0]);
    let once_more = canned_run(&mut store, &[1040.0]);

    // Tight iterations: +3% is beyond their noise (Welch, floored at 1%).
    let d = iops(&a, &b);
    assert_eq!((d.a.n, d.b.n, d.basis), (3, 3, "welch"), "{d:?}");
    assert!((d.a.stddev - 2.0).abs() < 1e-9, "{d:?}");
    assert!(d.flagged && d.verdict == "better", "{d:?}");
    assert_eq!(d.noise, MIN_NOISE_MEASURED);

    // The same +3% against noisy iterations is within their noise.
    let d = iops(&noisy, &b);
    assert!((d.change.unwrap() - 0.03).abs() < 1e-9, "{d:?}");
    assert!(!d.flagged && d.noise > 0.3, "{d:?}");

    // One side iterated: its spread stands for both.
    let d = iops(&a, &once);
    assert_eq!((d.basis, d.df), ("one-side", Some(2.0)), "{d:?}");
    assert!(d.flagged, "{d:?}");

    // Neither iterated: only a change beyond 5% is flagged.
    let d = iops(&once, &once_more);
    assert_eq!((d.basis, d.noise), ("no-spread", MIN_NOISE), "{d:?}");
    assert!(!d.flagged, "+1% without any spread: {d:?}");
}
