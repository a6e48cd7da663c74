//! A results database written by main before the harness split (tests/fixtures/main-db,
//! see its README) opens with the current code, every run loads, and every export is
//! byte-for-byte what main's `qoslab results export` wrote for it.

use std::path::{Path, PathBuf};

use harness::store::Store;
use report::Format;
use workloads::export;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/main-db")
}

/// A private copy: opening a database may migrate it, and the fixture must stay as main
/// wrote it.
fn copy_of_main_db() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qoslab-main-db-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("results.db");
    std::fs::copy(fixtures().join("results.db"), &path).unwrap();
    path
}

#[test]
fn a_database_written_by_main_loads_and_exports_as_main_did() {
    let path = copy_of_main_db();
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
            (Format::Html, "html"),
        ] {
            let want = std::fs::read(fixtures().join(format!("run{}.{ext}", r.id))).unwrap();
            let got = export(&run, format);
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
    // What each profile stored is all there: jobs, series, summary tables.
    let plan = store.load_run(1).unwrap();
    assert_eq!(plan.jobs.len(), 10);
    assert!(!plan.series.is_empty());
    let ramp = store.load_run(2).unwrap();
    assert_eq!(ramp.tables[0].kind, "ramp");
    let iso = store.load_run(3).unwrap();
    assert_eq!(iso.tables[0].kind, "isolation");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
