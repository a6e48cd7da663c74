//! `qoslab bench` with plans, for real: the embedded node, real fio (2 s runs), verdicts,
//! exit statuses, the results store and its exports.

use std::time::Duration;

use crate::bench_util::{export, plan_500, qoslab, temp_dirs_of, text, usage_error, Dir};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_500_iops_plan_passes_and_is_stored_and_exported() {
    let d = Dir::new("pass");
    d.write(
        "p.toml",
        &plan_500(&["iops <= 500 +-3%", "iops_mean ~= policy.ceiling +-3%"]),
    );
    let o = qoslab(&d, &["bench", "p.toml", "--db", "r.db"], LIMIT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("PASS iops <= 500 +-3%"), "{out}");
    assert!(out.contains("run 1: PASSED"), "{out}");

    let o = qoslab(&d, &["results", "list", "--db", "r.db"], LIMIT);
    let (out, _) = text(&o);
    assert!(out.contains("qos500") && out.contains("passed"), "{out}");

    let o = export(&d, "last", "csv", LIMIT);
    let (csv, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let row = csv.lines().nth(1).unwrap_or_default();
    assert!(
        row.starts_with("1,1,randread,randread,vol500,1,done,,read,"),
        "{csv}"
    );

    let o = export(&d, "1", "json", LIMIT);
    let (json, _) = text(&o);
    assert!(
        json.contains("\"schema\": \"qoslab.bench.run/1\""),
        "{json}"
    );
    assert!(json.contains("\"ceiling_iops\": 500"), "{json}");
    assert!(json.contains("\"fio_version\": \"fio-3"), "{json}");

    let o = qoslab(&d, &["results", "show", "1", "--db", "r.db"], LIMIT);
    let (md, _) = text(&o);
    assert!(
        md.contains("| vol500 | 100000000000 | 5% | QoS_500iops | 500 | - |"),
        "{md}"
    );
}

#[test]
fn a_wrong_expectation_exits_1_and_names_the_failed_check() {
    let d = Dir::new("fail");
    d.write("p.toml", &plan_500(&["iops <= 500 +-3%", "iops >= 1000"]));
    let o = qoslab(&d, &["bench", "p.toml", "--db", "r.db"], LIMIT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("FAILED: randread on vol500: iops >= 1000: iops = "),
        "{out}"
    );
    assert!(
        out.contains("verdicts: 1 pass, 1 fail, 0 inconclusive"),
        "{out}"
    );
}

#[test]
fn a_malformed_plan_is_rejected_naming_the_key() {
    let d = Dir::new("bad");
    for (plan, want) in [
        (
            "[[workload]]\nprofil = \"dbench\"\n",
            "p.toml:2: unknown field `profil`, expected one of",
        ),
        (
            "[[workload]]\nprofile = \"dbnch\"\n",
            "p.toml:2: workload \"workload1\": profile = \"dbnch\": allowed profiles: dbench",
        ),
        (
            "[bench]\nruntime = \"fast\"\n[[workload]]\nprofile = \"dbench\"\n",
            "p.toml:2: bench.runtime: invalid duration \"fast\"",
        ),
        (
            "[[workload]]\nprofile = \"dbench\"\nexpect = [\"iops =< 5\"]\n",
            "expect[0]: expectation \"iops =< 5\": expected an operator",
        ),
    ] {
        d.write("p.toml", plan);
        let err = usage_error(&d, &["bench", "p.toml", "--db", "r.db"], LIMIT);
        assert!(err.contains(want), "{plan}\nwant: {want}\nstderr: {err}");
    }
    assert!(
        !d.path().join("r.db").exists(),
        "nothing runs for a bad plan"
    );
}

/// `qoslab bench p.toml --db DB` in `d`, its stdout and stderr made by `out`, once its job
/// runs (the embedded node's data and fio's job files exist).
fn running(d: &Dir, db: &str, out: fn() -> std::process::Stdio) -> std::process::Child {
    let child = std::process::Command::new(crate::bench_util::QOSLAB)
        .args(["bench", "p.toml", "--db", db])
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(out())
        .stderr(out())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while temp_dirs_of(child.id()).len() < 2 {
        assert!(start.elapsed() < LIMIT, "the run never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

#[test]
fn a_killed_runs_node_data_and_job_files_are_removed_by_the_next_run() {
    let d = Dir::new("killed");
    d.write("p.toml", &plan_500(&["iops <= 500 +-3%"]));
    let mut child = running(&d, "k.db", std::process::Stdio::null);
    let pid = child.id();
    let left = temp_dirs_of(pid);
    child.kill().unwrap(); // SIGKILL: nothing of the run can clean up
    child.wait().unwrap();
    // Its fio, orphaned, reads job files from the run's directory.
    let _ = std::process::Command::new("pkill")
        .args(["-KILL", "-f", &format!("qoslab-fio-{pid}-")])
        .status();
    assert_eq!(temp_dirs_of(pid), left, "SIGKILL leaves them");
    let o = qoslab(&d, &["bench", "p.toml", "--db", "r.db"], LIMIT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert_eq!(temp_dirs_of(pid), Vec::<String>::new(), "{left:?}");
}

/// A run whose parent went away (nobody reads its stdout or stderr any more) still ends on
/// SIGTERM, its teardown done: was, the signal thread's `eprintln!` panicked on EPIPE, the
/// teardown never ran, and the process waited for it for ever (found as a `qoslab bench`
/// left behind by a killed test, holding its lock file open for 40 minutes).
#[test]
fn sigterm_with_nobody_reading_its_output_still_tears_down_and_exits_143() {
    use std::process::{Command, Stdio};
    let d = Dir::new("orphan");
    d.write(
        "p.toml",
        &plan_500(&["iops <= 500 +-3%"]).replace("runtime = \"2s\"", "runtime = \"60s\""),
    );
    let mut child = running(&d, "o.db", Stdio::piped);
    let pid = child.id();
    let start = std::time::Instant::now();
    // Its parent is gone, as far as its output goes.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let term = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // The teardown stops fio and the node: seconds. 60 s is the run it cut short.
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) + LIMIT {
            let _ = child.kill();
            panic!("qoslab bench never exited after SIGTERM with its output unread");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(temp_dirs_of(pid), Vec::<String>::new(), "its teardown ran");
}
