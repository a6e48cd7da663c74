//! Issue 31: your storage is never damaged by surprise. An existing file is refused unless
//! `--overwrite` (and then never called "kept"); a path that does not exist is refused
//! unless `--create`, and with a trailing `/` it must be a directory that exists; the
//! free-space check uses the plan's own sizes (a 16 MiB plan fits a 20 MiB tmpfs, a 64 MiB
//! plan does not fit 40 MiB); `--dry-run` prints the jobs and paths and writes nothing;
//! docs/BENCH.md's refusals are the ones printed, word for word.
//!
//! Cost: four 1 s fio jobs on 4-16 MiB files (~8 s); the refusals run no fio (~1 s).

use std::path::Path;

use crate::bench_util::{bench_plan, Dir};
use crate::small_fs::SmallFs;
use crate::util::require_tool;

fn plan(size: &str) -> String {
    format!(
        "[bench]\nruntime = \"1s\"\nramp = \"0s\"\n\n[[workload]]\nname = \"w\"\n\
         fio = {{ rw = \"randwrite\", bs = \"4k\", iodepth = 4, size = \"{size}\", rate_iops = 1000 }}\n"
    )
}

fn bench(d: &Dir, target: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let t = target.display().to_string();
    bench_plan(d, &[&["--target", t.as_str()][..], extra].concat())
}

/// [`bench`], which must succeed: its stdout.
fn ran(d: &Dir, target: &Path, extra: &[&str]) -> String {
    let (code, out, err) = bench(d, target, extra);
    assert_eq!(code, Some(0), "{out}\n{err}");
    out
}

/// [`bench`], which must refuse the run (exit 2): its stderr.
fn refused(d: &Dir, target: &Path, extra: &[&str]) -> String {
    let (code, out, err) = bench(d, target, extra);
    assert_eq!(code, Some(2), "{out}\n{err}");
    err
}

/// The run's output says it wrote 4 MiB at `file`, and what became of the file: `fate`.
fn assert_wrote(out: &str, file: &Path, fate: &str) {
    let line = format!("wrote {} (4.0 MiB): {fate}", file.display());
    assert!(out.contains(&line), "{out}");
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn an_existing_file_is_written_only_with_overwrite_and_never_called_kept() {
    require_tool("fio");
    let d = Dir::new("existing-file");
    d.write("p.toml", &plan("4M"));
    let data: Vec<u8> = (0..64 << 10).map(|i| (i * 7 % 251) as u8).collect();
    let file = d.write("data.img", "");
    std::fs::write(&file, &data).unwrap();
    let err = refused(&d, &file, &[]);
    assert!(
        err.contains(&format!(
            "{} is an existing file (64.0 KiB): the run writes into it and its data will be destroyed. Nothing was written. --overwrite allows that",
            file.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), data, "the file is untouched");
    assert!(!d.path().join("r.db").exists(), "nothing is stored");
    // A directory target whose DIR/fiotest exists: the same rule.
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("fiotest"), &data).unwrap();
    let err = refused(&d, &dir, &[]);
    assert!(err.contains("fiotest is an existing file"), "{err}");
    assert_eq!(std::fs::read(dir.join("fiotest")).unwrap(), data);
    // With --overwrite: written into, said so, left in place.
    let out = ran(&d, &file, &["--overwrite"]);
    assert_wrote(&out, &file, "there before the run: written into (--overwrite), its former data overwritten; left in place");
    assert!(!out.contains("kept"), "{out}");
    assert!(file.exists());
}

#[test]
fn a_missing_path_is_made_only_with_create_and_a_trailing_slash_is_a_directory() {
    require_tool("fio");
    let d = Dir::new("missing-path");
    d.write("p.toml", &plan("4M"));
    let typo = d.path().join("typo");
    let err = refused(&d, &typo, &[]);
    assert!(
        err.contains("typo: no such file or directory. Nothing was written. --create makes it"),
        "{err}"
    );
    let slash = format!("{}/", typo.display());
    let err = refused(&d, Path::new(&slash), &["--create"]);
    assert!(
        err.contains("no such directory (a trailing / names a directory that exists"),
        "{err}"
    );
    assert!(!typo.exists(), "nothing was made");
    assert_eq!(names(d.path()), ["p.toml"]);
    // --create: a new file, written, listed and removed.
    let out = ran(&d, &typo, &["--create"]);
    assert_wrote(
        &out,
        &typo,
        "created by the run: removed (--keep-files keeps it)",
    );
    assert!(!typo.exists());
}

#[test]
fn free_space_is_judged_by_the_plans_own_sizes_and_a_dry_run_writes_nothing() {
    require_tool("fio");
    let d = Dir::new("space");
    // The issue's cases: 16 MiB on a 20 MiB tmpfs runs; 64 MiB on 40 MiB is refused.
    let fs20 = SmallFs::tmpfs(20);
    d.write("p.toml", &plan("16M"));
    let out = ran(&d, &fs20.mnt, &[]);
    assert!(
        out.contains("fiotest (16.0 MiB): created by the run: removed"),
        "{out}"
    );
    assert!(names(&fs20.mnt).is_empty(), "{:?}", names(&fs20.mnt));
    let fs40 = SmallFs::tmpfs(40);
    d.write("p.toml", &plan("64M"));
    let err = refused(&d, &fs40.mnt, &[]);
    assert!(
        err.contains("fiotest: the plan's jobs lay out 64.0 MiB there (p.toml:7: workload \"w\"), and its file system has 40.0 MiB free"),
        "{err}"
    );
    assert!(names(&fs40.mnt).is_empty());
    // A dry run: the job as fio reads it and every path, nothing written or stored.
    std::fs::remove_file(d.path().join("r.db")).unwrap();
    d.write("p.toml", &plan("16M"));
    let out = ran(&d, &fs40.mnt, &["--dry-run"]);
    let fiotest = fs40.mnt.join("fiotest").display().to_string();
    for want in [
        "Nothing ran and nothing was written.".to_string(),
        format!("{fiotest}  a new file: created, removed at the end unless --keep-files"),
        "r.db  the results store".into(),
        "# p.toml:7: workload \"w\"\n[global]\n".into(),
        format!("ioengine=libaio\ndirect=1\nfilename={fiotest}\n"),
        "[w]\nrw=randwrite\nbs=4k\niodepth=4\nsize=16M\n".into(),
    ] {
        assert!(out.contains(&want), "want {want:?} in\n{out}");
    }
    assert!(names(&fs40.mnt).is_empty());
    assert!(!d.path().join("r.db").exists());
}

/// A ramp's `[[system]] target` is a plan's own path: the same rules, and its file is
/// listed and removed like the target's.
#[test]
fn a_ramp_systems_own_file_is_written_only_with_overwrite() {
    let d = Dir::new("ramp-target");
    let data = d.write("data.img", "the user's data");
    let ramp = |target: &Path| {
        format!(
            "[ramp]\nruns = 1\ncycle = \"1s\"\nruntime = \"1s\"\nspan = \"1MiB\"\n\n[[system]]\nname = \"s1\"\n\
             target = \"{}\"\nmin_iops = 100\nmax_iops = 100\n",
            target.display()
        )
    };
    d.write("p.toml", &ramp(&data));
    let (code, out, err) = bench_plan(&d, &[]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "p.toml: system \"s1\": target: {} is an existing file (15 B): the run writes into it and its data will be destroyed",
            data.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "the user's data");
    // A refused run and a dry run write nothing (no summary.csv, no store); the dry run
    // names the file.
    let (code, out, err) = bench_plan(&d, &["--overwrite", "--dry-run"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("Nothing ran and nothing was written."),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}  an existing file", data.display())),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "the user's data");
    assert_eq!(names(d.path()), ["data.img", "p.toml"]);
    // A directory holding the generator's file: the same rule for that file.
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("qoslab-genio.dat"), "kept").unwrap();
    d.write("p.toml", &ramp(&dir));
    let (code, out, err) = bench_plan(&d, &[]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains(
            "qoslab-genio.dat is an existing file (4 B) (the generator's file in a directory)"
        ),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("qoslab-genio.dat")).unwrap(),
        "kept"
    );
    // --create: a new file, written, listed and removed.
    let new = d.path().join("new.img");
    d.write("p.toml", &ramp(&new));
    let (code, out, err) = bench_plan(&d, &["--create", "--no-prefill"]);
    assert!(matches!(code, Some(0) | Some(1)), "{out}\n{err}");
    assert!(
        out.contains(&format!("wrote {} (", new.display()))
            && out.contains("created by the run: removed (--keep-files keeps it)"),
        "{out}"
    );
    assert!(!new.exists());
}

const BENCH_MD: &str = include_str!("../../../../docs/BENCH.md");

/// The refusals docs/BENCH.md prints (its plain fenced lines from "A plan says what to
/// measure" to "Interrupted runs").
fn documented_refusals() -> Vec<&'static str> {
    let from = BENCH_MD
        .find("**A plan says what to measure")
        .expect("BENCH.md has the plan rules");
    let to = BENCH_MD[from..]
        .find("### Interrupted runs")
        .expect("and the interrupted runs after them");
    let mut inside = false;
    let mut lines = Vec::new();
    for l in BENCH_MD[from..from + to].lines().map(str::trim) {
        if l.starts_with("```") {
            inside = !inside;
        } else if inside {
            lines.push(l);
        }
    }
    lines
}

/// docs/BENCH.md's refusals are what qoslab prints, word for word: each case run as the
/// docs name it (relative paths, `p.toml`/`p64.toml`, a 40 MiB file system at `m40`).
#[test]
fn docs_bench_md_shows_the_refusals_as_printed() {
    require_tool("fio");
    let documented = documented_refusals();
    assert!(documented.len() >= 7, "{documented:?}");
    let d = Dir::new("docs-refusals");
    std::fs::create_dir(d.path().join("scratch")).unwrap();
    std::fs::write(d.path().join("data.img"), vec![7u8; 64 << 10]).unwrap();
    let fs40 = SmallFs::tmpfs(40);
    std::os::unix::fs::symlink(&fs40.mnt, d.path().join("m40")).unwrap();
    let on_line_7 = |opt: &str| {
        format!(
            "[bench]\nruntime = \"1s\"\nramp = \"0s\"\n\n[[workload]]\nname = \"w\"\n\
             fio = {{ rw = \"write\", bs = \"4k\", size = \"4M\", {opt} }}\n"
        )
    };
    let mut printed = String::new();
    let mut refuse = |plan_name: &str, plan: &str, target: &str| {
        d.write(plan_name, plan);
        let o = crate::bench_util::qoslab(
            &d,
            &[
                "bench",
                plan_name,
                "--db",
                "r.db",
                "--no-tools",
                "--target",
                target,
            ],
            std::time::Duration::from_secs(60),
        );
        let (out, err) = crate::bench_util::text(&o);
        assert_eq!(o.status.code(), Some(2), "{plan}\n{out}\n{err}");
        printed.push_str(&err);
    };
    refuse(
        "p.toml",
        &on_line_7("\" exec_prerun\" = \"touch /tmp/x\""),
        "scratch",
    );
    refuse(
        "p.toml",
        &on_line_7("write_iolog = \"/any/path\""),
        "scratch",
    );
    refuse(
        "p.toml",
        &on_line_7("rate_iops = 1000").replace("\"4k\"", "\"4kk\""),
        "scratch",
    );
    let ok = plan("4M");
    refuse("p.toml", &ok, "data.img");
    refuse("p.toml", &ok, "scratch/typo");
    refuse("p.toml", &ok, "scratch/typo/");
    // fio on line 6: no ramp key.
    refuse(
        "p64.toml",
        &plan("64M").replace("ramp = \"0s\"\n", ""),
        "m40",
    );
    for line in documented {
        assert!(
            printed.contains(line),
            "docs/BENCH.md prints\n{line}\nqoslab printed\n{printed}"
        );
    }
    assert_eq!(names(&d.path().join("scratch")), Vec::<String>::new());
    assert!(names(&fs40.mnt).is_empty());
    assert_eq!(
        std::fs::read(d.path().join("data.img")).unwrap(),
        vec![7u8; 64 << 10]
    );
}
