//! A results database written by main before the harness split (tests/fixtures/main-db,
//! see its README; schema 3) opens with the current code (migrated to schema 4 in place:
//! verdict outcomes from `passed`, no diagnoses), every run loads, and every export is
//! byte-for-byte the reviewed one in the fixtures (the files main's `qoslab results export`
//! wrote, updated where the exports gained the verdicts' outcomes, the diagnosis columns and
//! the report's answer section; `UPDATE_SNAPSHOTS=1` rewrites them, then review the diff).
//!
//! The HTML report is the one export not kept here: it renders the run, and the renderer is
//! pinned byte-for-byte by the export snapshots (`tests/snapshots/run.html`, with every
//! table kind these runs hold, and `burst.html`). What this database adds to them is that
//! the loaded run is all the renderer reads: each run renders as the run its reviewed JSON
//! export (the whole `RunRecord`, nothing skipped) describes.

use std::path::{Path, PathBuf};

use harness::store::{RunRecord, Store};
use report::Format;
use test_support::TestDir;
use workloads::export;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/main-db")
}

/// A private copy: opening a database may migrate it, and the fixture must stay as main
/// wrote it. Its directory is removed when the guard drops (also when the test panics).
fn copy_of_main_db() -> (PathBuf, TestDir) {
    let dir = TestDir::new("main-db");
    let path = dir.join("results.db");
    std::fs::copy(fixtures().join("results.db"), &path).unwrap();
    (path, dir)
}

#[test]
fn a_database_written_by_main_loads_and_exports_as_main_did() {
    let (path, _cleanup) = copy_of_main_db();
    let store = Store::open(&path).expect("main's database opens");
    let runs = store.list_runs().unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["qos500", "ramp", "isolation"]);
    for r in &runs {
        let run = store.load_run(r.id).unwrap();
        assert_eq!(run.jobs.len() as i64, r.jobs, "run {}", r.id);
        assert!(run.jobs.iter().all(|j| j.status == "done"), "run {}", r.id);
        for (format, ext) in [
            (Format::Json, "json"),
            (Format::Csv, "csv"),
            (Format::SeriesCsv, "series-csv"),
            (Format::Md, "md"),
        ] {
            let got = export(&run, format);
            if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
                std::fs::write(fixtures().join(format!("run{}.{ext}", r.id)), &got).unwrap();
            }
            let want = std::fs::read(fixtures().join(format!("run{}.{ext}", r.id))).unwrap();
            if got != want {
                let out = path.with_file_name(format!("run{}.{ext}", r.id));
                std::fs::write(&out, &got).unwrap();
                panic!(
                    "run {} exports as {ext} differently from main: got {}, want {}",
                    r.id,
                    out.display(),
                    fixtures().join(format!("run{}.{ext}", r.id)).display()
                );
            }
        }
    }
    for r in &runs {
        let run = store.load_run(r.id).unwrap();
        let json = std::fs::read(fixtures().join(format!("run{}.json", r.id))).unwrap();
        let reviewed: RunRecord = serde_json::from_slice(&json).unwrap();
        assert!(
            export(&run, Format::Html) == export(&reviewed, Format::Html),
            "run {}: the loaded run's HTML report differs from its reviewed JSON's",
            r.id
        );
    }
    // What each profile stored is all there: jobs, series, summary tables; older verdicts
    // are pass or fail as they were, and no job claims a diagnosis it never had.
    let plan = store.load_run(1).unwrap();
    let t = plan.tally();
    assert_eq!((t.pass, t.inconclusive), (plan.verdict_counts().0, 0));
    assert!(plan.jobs.iter().all(|j| j.diagnosis.is_none()));
    assert_eq!(plan.jobs.len(), 10);
    assert!(!plan.series.is_empty());
    let ramp = store.load_run(2).unwrap();
    assert_eq!(ramp.tables[0].kind, "ramp");
    let iso = store.load_run(3).unwrap();
    assert_eq!(iso.tables[0].kind, "isolation");
}
