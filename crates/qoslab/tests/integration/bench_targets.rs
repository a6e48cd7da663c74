//! Issue 31: your storage is never damaged by surprise. An existing file is refused unless
//! `--overwrite` (and then never called "kept"); a path that does not exist is refused
//! unless `--create`, and with a trailing `/` it must be a directory that exists; the
//! free-space check uses the plan's own sizes (a 16 MiB plan fits a 20 MiB tmpfs, a 64 MiB
//! plan does not fit 40 MiB); `--dry-run` prints the jobs and paths and writes nothing.
//!
//! Cost: four 1 s fio jobs on 4-16 MiB files (~8 s); the refusals run no fio.

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
    let (code, out, err) = bench(&d, &file, &[]);
    assert_eq!(code, Some(2), "{out}\n{err}");
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
    let (code, _, err) = bench(&d, &dir, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("fiotest is an existing file"), "{err}");
    assert_eq!(std::fs::read(dir.join("fiotest")).unwrap(), data);
    // With --overwrite: written into, said so, left in place.
    let (code, out, err) = bench(&d, &file, &["--overwrite"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "wrote {} (4.0 MiB): there before the run: written into (--overwrite), its former data overwritten; left in place",
            file.display()
        )),
        "{out}"
    );
    assert!(!out.contains("kept"), "{out}");
    assert!(file.exists());
}

#[test]
fn a_missing_path_is_made_only_with_create_and_a_trailing_slash_is_a_directory() {
    require_tool("fio");
    let d = Dir::new("missing-path");
    d.write("p.toml", &plan("4M"));
    let typo = d.path().join("typo");
    let (code, out, err) = bench(&d, &typo, &[]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("typo: no such file or directory. Nothing was written. --create makes it"),
        "{err}"
    );
    let slash = format!("{}/", typo.display());
    let (code, _, err) = bench(&d, Path::new(&slash), &["--create"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no such directory (a trailing / names a directory that exists"),
        "{err}"
    );
    assert!(!typo.exists(), "nothing was made");
    assert_eq!(names(d.path()), ["p.toml"]);
    // --create: a new file, written, listed and removed.
    let (code, out, err) = bench(&d, &typo, &["--create"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "wrote {} (4.0 MiB): created by the run: removed (--keep-files keeps it)",
            typo.display()
        )),
        "{out}"
    );
    assert!(!typo.exists());
}

#[test]
fn free_space_is_judged_by_the_plans_own_sizes_and_a_dry_run_writes_nothing() {
    require_tool("fio");
    let d = Dir::new("space");
    // The cases: 16 MiB on a 20 MiB tmpfs runs; 64 MiB on 40 MiB is refused.
    let fs20 = SmallFs::tmpfs(20);
    d.write("p.toml", &plan("16M"));
    let (code, out, err) = bench(&d, &fs20.mnt, &[]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("fiotest (16.0 MiB): created by the run: removed"),
        "{out}"
    );
    assert!(names(&fs20.mnt).is_empty(), "{:?}", names(&fs20.mnt));
    let fs40 = SmallFs::tmpfs(40);
    d.write("p.toml", &plan("64M"));
    let (code, out, err) = bench(&d, &fs40.mnt, &[]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("fiotest: the plan's jobs lay out 64.0 MiB there (p.toml:7: workload \"w\"), and its file system has 40.0 MiB free"),
        "{err}"
    );
    assert!(names(&fs40.mnt).is_empty());
    // A dry run: the job as fio reads it and every path, nothing written or stored.
    std::fs::remove_file(d.path().join("r.db")).unwrap();
    d.write("p.toml", &plan("16M"));
    let (code, out, err) = bench(&d, &fs40.mnt, &["--dry-run"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
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

/// A ramp's `[[system]] target` is a plan's own path: the same rules (no I/O runs).
#[test]
fn a_ramp_systems_own_file_is_written_only_with_overwrite() {
    let d = Dir::new("ramp-target");
    let data = d.write("data.img", "the user's data");
    d.write(
        "p.toml",
        &format!(
            "[ramp]\nruns = 1\ncycle = \"1s\"\nruntime = \"1s\"\nspan = \"1MiB\"\n\n[[system]]\nname = \"s1\"\n\
             target = \"{}\"\nmin_iops = 100\nmax_iops = 100\n",
            data.display()
        ),
    );
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
}
