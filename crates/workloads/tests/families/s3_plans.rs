//! The s3 family through the registry and the run loop: plan errors with their lines, the
//! command line's rules, and a real run against the embedded S3 node (in-process, the real
//! s3s endpoint and driver) stored, exported in every format and compared.

use fio::FakeFio;
use harness::store::Store;
use harness::target::Target;
use harness::ui::Captured;
use harness::Options;
use workloads::registry;
use workloads::s3::{S3Run, NAME};

use crate::support::{configure_error, profile_with, run_with};

#[test]
fn s3_plan_errors_name_the_line_and_key() {
    let e = |t: &str| registry().parse(t, "p.toml").unwrap_err().0;
    for (bad, want) in [
        ("[s3]\n", "p.toml:1: [s3] has no [[s3.test]]"),
        (
            "[s3]\n[[s3.test]]\nname = \"a\"\nwrite_weight = 1\nobjects = { size_min = \"3GiB\" }\n",
            "p.toml:2: [[s3.test]] \"a\": objects: size_max = 3221225472 B: allowed up to",
        ),
        (
            "[s3]\nendpoint = \"http://x\"\ncolour = 1\n[[s3.test]]\nname = \"a\"\n",
            "unknown field `colour`",
        ),
        (
            "[s3]\n[[s3.test]]\nname = \"a\"\nread_weight = 1\n[[workload]]\nfio = { rw = \"read\" }\n",
            "not both",
        ),
    ] {
        let got = e(bad);
        assert!(got.contains(want), "for:\n{bad}\ngot: {got}\nwant: {want}");
    }
    // An S3 plan has no embedded NBD node; --client is fio's.
    let e = configure_error("[[volume]]\nname = \"v\"\nsize = \"1GB\"\n[s3]\n[[s3.test]]\nname = \"a\"\nread_weight = 1\n");
    assert!(e.contains("declares no [[volume]]"), "{e}");
    let mut p = registry()
        .parse(
            "[s3]\n[[s3.test]]\nname = \"a\"\nread_weight = 1\nworkers = 3\n[bench]\n",
            "p.toml",
        )
        .unwrap();
    let clients = ["h:8765".to_string()];
    let e = p
        .configure(&Options {
            clients: &clients,
            ..Options::default()
        })
        .unwrap_err()
        .0;
    assert!(e.contains("--s3-hosts"), "{e}");
    let e = profile_with(NAME, |r| r.target = true).unwrap_err().0;
    assert!(e.contains("--s3-* options"), "{e}");
}

fn run_profile(store: &mut Store, runtime: f64, iterations: u32) -> i64 {
    let mut plan = profile_with(NAME, |r| {
        r.embedded = true;
        r.runtime = Some(runtime);
        r.ramp = Some(0.5);
    })
    .unwrap();
    plan.common.iterations = iterations;
    plan.configure(&Options::default()).unwrap();
    let mut ui = Captured::default();
    let exec = FakeFio::constant("fio is not used by the s3 family");
    let out = run_with(&mut plan, &Target::Embedded, &exec, store, &mut ui).unwrap();
    assert!(out.passed(), "{:?}\n{}", out.record.status, ui.0);
    assert!(ui.0.contains(" GET "), "{}", ui.0);
    assert!(plan.body_as::<S3Run>().is_some());
    out.record.id
}

/// The default profile (70/20/10 GET/PUT/DELETE, log-normal sizes) against the embedded
/// node: stored per operation with percentiles, TTFB and segments; every export shows
/// the operations; a run compared with itself flags nothing.
#[test]
fn a_profile_run_on_the_embedded_node_is_stored_exported_and_compared() {
    let mut store = Store::in_memory().unwrap();
    // 3 s after a 0.5 s ramp: the window (from the slowest client's first reply, at least
    // the ramp, to the earliest last request's start) holds a whole 1 s segment unless a
    // request takes over 1.5 s. With 2 s it needed every request under 0.5 s, and a
    // loaded machine missed that twice in twelve runs (no segment in the window).
    let a = run_profile(&mut store, 3.0, 2);
    let r = store.load_run(a).unwrap();
    assert_eq!(r.jobs.len(), 2);
    assert!(r.target.contains("embedded qoslab S3 node"), "{}", r.target);
    let j = &r.jobs[0];
    assert_eq!(
        (j.workload.as_str(), j.volume.as_deref()),
        ("s3", Some("qoslab-bench-0"))
    );
    let ops: Vec<&str> = j.ops.iter().map(|o| o.op.as_str()).collect();
    assert_eq!(ops, ["GET", "PUT", "DELETE"]);
    let get = &j.ops[0];
    assert!(get.ops > 10 && get.ops_per_s > 0.0, "{get:?}");
    assert!(get.lat.p50_ns <= get.lat.p90_ns && get.lat.p90_ns <= get.lat.p99_ns);
    assert!(get.lat.p99_ns <= get.lat.max_ns);
    assert!(get.ttfb.is_some_and(|t| t.n == get.ops), "{get:?}");
    assert!(j.ops[1].ttfb.is_none());
    assert_eq!(get.errors, 0, "{:?}", get.error_codes);
    let s = r.series_of(j.id).unwrap();
    assert!(s.ops.iter().any(|o| o.in_window), "{:?}", s.ops);
    assert_eq!(r.tables[0].kind, "s3");
    assert_eq!(r.tables[0].rows.len(), 6, "3 operations x 2 iterations");
    // Every export shows the operations.
    let text = |f| String::from_utf8(workloads::export(&r, f)).unwrap();
    let csv = text(report::Format::Csv);
    assert!(
        csv.lines()
            .any(|l| l.contains(",s3,s3,qoslab-bench-0,1,done,,GET,")),
        "{csv}"
    );
    let series = text(report::Format::SeriesCsv);
    assert!(
        series
            .lines()
            .any(|l| l.contains(",ops,") && l.contains(",PUT,")),
        "{series}"
    );
    let md = text(report::Format::Md);
    assert!(
        md.contains("| GET | ") && md.contains("TTFB p50 (ms)"),
        "{md}"
    );
    // Every row of the results table has the header's columns (operations' rows too).
    let results: Vec<&str> = md
        .split("## Results\n\n")
        .nth(1)
        .expect("a results table")
        .lines()
        .take_while(|l| l.starts_with('|'))
        .collect();
    let cells = |l: &str| l.matches(" | ").count();
    assert!(results.len() > 2, "{md}");
    for row in &results[2..] {
        assert_eq!(cells(row), cells(results[0]), "{row}\n{}", results[0]);
    }
    let json: serde_json::Value = serde_json::from_str(&text(report::Format::Json)).unwrap();
    assert_eq!(json["jobs"][0]["ops"][0]["op"], "GET");
    let html = text(report::Format::Html);
    assert!(html.contains("requests per second") && html.contains("<td>GET</td>"));
    // Compared with itself: nothing moves.
    let c = report::compare::compare(&r, &r);
    assert_eq!(c.flagged(), 0);
    assert!(c.jobs[0]
        .metrics
        .iter()
        .any(|m| m.metric == "GET TTFB p50 ms"));
    let _ = a;
}

/// Seed 002's GOSBench plan, as shipped in examples/, parses with its keys intact.
#[test]
fn the_example_gosbench_plan_is_valid() {
    let p = format!(
        "{}/../../examples/s3-gosbench.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let plan = registry().load(std::path::Path::new(&p), false).unwrap();
    let s3 = &plan.body_as::<S3Run>().unwrap().plan;
    assert_eq!(s3.tests.len(), 2);
    let w = &s3.tests[0];
    assert_eq!(
        w.sizes,
        loadgen::s3::SizeDist::Uniform {
            min: 1024,
            max: 100_000 << 10
        }
    );
    assert_eq!(
        (w.clients, w.runtime, w.weights.write),
        (3, Some(60.0), 100)
    );
    assert_eq!(s3.tests[1].weights.read, 100);
    assert_eq!(s3.conn.region.as_deref(), Some("eu-central-1"));
}
