//! The driver against the in-memory fake, in tokio's paused time (exact rates), and the
//! line protocol end to end.

use std::sync::Arc;
use std::time::Duration;

use super::analysis::{analyze, HostRecords};
use super::driver::{Driver, OpRecord};
use super::fake::FakeStore;
use super::protocol::{serve, Command, Event, Lines};
use super::spec::{Endpoint, Op, SizeDist, Stop, TestSpec, Weights};
use super::target::ObjectTarget;

fn spec(weights: Weights, stop: Stop) -> TestSpec {
    TestSpec {
        name: "t".into(),
        weights,
        sizes: SizeDist::LogNormal {
            min: 1024,
            max: 64 << 10,
        },
        objects: 20,
        buckets: vec!["b1".into(), "b2".into()],
        prefix: "qb/0/".into(),
        clients: 4,
        stop,
        list_max_keys: 100,
        timeout: Duration::from_secs(5),
        seed: 42,
    }
}

async fn collect(d: &mut Driver) -> (Vec<OpRecord>, super::driver::RunOutcome) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = d.run(tx).await;
    let mut v = Vec::new();
    while let Ok(r) = rx.try_recv() {
        v.push(r);
    }
    (v, out)
}

/// 4 clients at a 10 ms service time: 400 requests/s, 70/20/10 of them GET/PUT/DELETE;
/// what the test wrote is gone after `clean`.
#[tokio::test(start_paused = true)]
async fn a_mixed_run_measures_the_service_rate_and_cleans_up() {
    let fake = FakeStore::new(Duration::from_millis(10), Duration::from_millis(2));
    fake.seed("b1", &[("someone-elses", 5)]);
    fake.seed("b2", &[]);
    let target: Arc<dyn ObjectTarget> = Arc::new(fake.clone());
    let w = Weights {
        read: 70,
        write: 20,
        delete: 10,
        ..Weights::default()
    };
    let mut d = Driver::new(spec(w, Stop::Runtime(Duration::from_secs(10))), target);
    let p = d.prepare().await.unwrap();
    assert_eq!(p.objects, 40, "20 per bucket");
    assert_eq!(fake.objects("b1").len(), 21);
    let (recs, out) = collect(&mut d).await;
    assert_eq!(out.errors, 0, "{:?}", out.first_errors);
    assert_eq!(out.ops, recs.len() as u64);
    let a = analyze(
        &[HostRecords {
            host: "",
            ops: &recs,
        }],
        0,
        1_000_000_000,
    );
    assert!(a.window.trimmed);
    let total: f64 = a.summaries.iter().map(|s| s.ops_per_s).sum();
    assert!((total - 400.0).abs() < 4.0, "{total} ops/s, want 400");
    let get = a.summaries.iter().find(|s| s.op == Op::Get).unwrap();
    assert!(
        (get.ops_per_s / total - 0.7).abs() < 0.03,
        "{}",
        get.ops_per_s
    );
    assert_eq!(get.lat.p50_ns, 10_000_000);
    assert_eq!(get.ttfb.unwrap().p99_ns, 2_000_000);
    assert!(get.bytes_per_s > 0.0);
    let put = a.summaries.iter().find(|s| s.op == Op::Put).unwrap();
    assert!(put.ttfb.is_none());
    assert!(get.seg.n >= 8, "{:?}", get.seg);
    // Clean removes what the driver wrote and nothing else.
    let left = d.pooled();
    assert_eq!(d.clean().await.unwrap(), left);
    assert_eq!(fake.objects("b1"), [("someone-elses".to_string(), 5)]);
    assert!(fake.objects("b2").is_empty());
}

#[tokio::test(start_paused = true)]
async fn stop_by_op_count_and_existing_reads() {
    let fake = FakeStore::new(Duration::from_millis(1), Duration::ZERO);
    fake.seed("b1", &[("old/1", 100), ("old/2", 200)]);
    fake.seed("b2", &[]);
    let target: Arc<dyn ObjectTarget> = Arc::new(fake.clone());
    let w = Weights {
        existing_read: 1,
        ..Weights::default()
    };
    let mut d = Driver::new(spec(w, Stop::Ops(100)), target.clone());
    let p = d.prepare().await.unwrap();
    assert_eq!(
        (p.objects, p.existing),
        (0, 2),
        "existing reads need no pool"
    );
    let (recs, _) = collect(&mut d).await;
    assert_eq!(recs.len(), 100);
    assert!(recs
        .iter()
        .all(|r| r.op == Op::Get && (r.bytes == 100 || r.bytes == 200)));
    // Nothing to read: a clear error.
    let empty = FakeStore::new(Duration::from_millis(1), Duration::ZERO);
    empty.seed("b1", &[]);
    empty.seed("b2", &[]);
    let mut d = Driver::new(spec(w, Stop::Ops(10)), Arc::new(empty));
    let e = d.prepare().await.unwrap_err();
    assert_eq!(e.code, "NoObjects");
    assert!(e.message.contains("b1, b2 hold(s) none"), "{e}");
}

/// Deletes without writes empty each client's pool: the clients stop and say why.
#[tokio::test(start_paused = true)]
async fn a_pool_that_runs_dry_stops_the_clients_with_a_reason() {
    let fake = FakeStore::new(Duration::from_millis(1), Duration::ZERO);
    fake.seed("b1", &[]);
    fake.seed("b2", &[]);
    let w = Weights {
        delete: 1,
        ..Weights::default()
    };
    let mut d = Driver::new(
        spec(w, Stop::Runtime(Duration::from_secs(60))),
        Arc::new(fake.clone()),
    );
    d.prepare().await.unwrap();
    let (recs, out) = collect(&mut d).await;
    assert_eq!(recs.len(), 40, "every prepared object deleted once");
    assert!(out.stopped_early.unwrap().contains("write_weight = 0"));
    assert!(fake.objects("b1").is_empty() && fake.objects("b2").is_empty());
}

/// The line protocol end to end (real time, a short run).
#[test]
fn the_line_protocol_runs_a_test_end_to_end() {
    let fake = FakeStore::new(Duration::from_millis(2), Duration::from_millis(1));
    let endpoint = Endpoint {
        url: "http://127.0.0.1:1".into(),
        region: "us-east-1".into(),
        access_key: "a".into(),
        secret_key: "s".into(),
    };
    let w = Weights {
        read: 1,
        write: 1,
        ..Weights::default()
    };
    let mut test = spec(w, Stop::Runtime(Duration::from_millis(1500)));
    test.objects = 2;
    let cmds = [
        Command::Open {
            endpoint,
            test: Box::new(test.clone()),
        },
        Command::CreateBuckets {
            names: test.buckets.clone(),
        },
        Command::Prepare,
        Command::Run { start_unix_ns: 0 },
        Command::Clean,
        Command::DeleteBuckets {
            names: test.buckets.clone(),
        },
        Command::Exit,
    ];
    let input: String = cmds
        .iter()
        .map(|c| serde_json::to_string(c).unwrap() + "\n")
        .collect();
    let mut out = Vec::new();
    let f2 = fake.clone();
    serve(
        &mut Lines {
            input: input.as_bytes(),
            output: &mut out,
        },
        &move |_, _| Ok(Arc::new(f2.clone()) as Arc<dyn ObjectTarget>),
    )
    .unwrap();
    let events: Vec<Event> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|k| k != "ops")
        .collect();
    assert_eq!(
        kinds,
        [
            "hello",
            "opened",
            "buckets",
            "prepared",
            "done",
            "cleaned",
            "buckets_deleted",
            "bye"
        ]
    );
    let n: usize = events
        .iter()
        .map(|e| match e {
            Event::Ops { ops } => ops.len(),
            _ => 0,
        })
        .sum();
    let done = events.iter().find_map(|e| match e {
        Event::Done { outcome, .. } => Some(outcome.clone()),
        _ => None,
    });
    assert_eq!(done.unwrap().ops, n as u64);
    assert!(n > 100, "{n} records");
    match &events[2] {
        Event::Buckets { created, existed } => {
            assert_eq!(created, &test.buckets);
            assert!(existed.is_empty());
        }
        e => panic!("{e:?}"),
    }
    assert!(fake.buckets().is_empty(), "buckets deleted");
    // A command before `open`, and garbage.
    let mut out = Vec::new();
    let r = serve(
        &mut Lines {
            input: "{\"cmd\":\"prepare\"}\nnot json\n".as_bytes(),
            output: &mut out,
        },
        &|_, _| unreachable!(),
    );
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("no test opened yet"), "{text}");
    assert!(r.unwrap_err().contains("command \"not json\""));
}
