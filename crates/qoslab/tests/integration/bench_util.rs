//! Helpers for the `qoslab bench` tests (self-contained: a temp dir, running the binary with
//! a time limit, `fio --server` processes on free loopback ports).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const QOSLAB: &str = env!("CARGO_BIN_EXE_qoslab");

/// The workspace's temporary-directory guard (test-support), under the name these tests use.
pub use test_support::TestDir as Dir;

/// Run qoslab in `dir` with `args`; fail the test if it takes longer than `limit`. Output
/// is read while the child runs (a child writing more than a pipe holds would otherwise
/// block forever on a parent that waits first).
pub fn qoslab(dir: &Dir, args: &[&str], limit: Duration) -> Output {
    qoslab_pid(dir, args, limit).1
}

/// [`qoslab`], with the process's id (what names its per-run files).
pub fn qoslab_pid(dir: &Dir, args: &[&str], limit: Duration) -> (u32, Output) {
    let mut cmd = Command::new(QOSLAB);
    cmd.args(["--log-level", "warn"])
        .args(args)
        .current_dir(dir.path())
        .env_remove("QOSLAB_DB");
    output_within_pid(cmd, &format!("qoslab {args:?}"), limit)
}

/// Run `cmd` (`what` names it in a failure) with no stdin and its output piped; fail the
/// test if it takes longer than `limit`. Output is read while the child runs.
pub fn output_within(cmd: Command, what: &str, limit: Duration) -> Output {
    output_within_pid(cmd, what, limit).1
}

/// [`output_within`], with the child's process id (what names its per-run files).
pub fn output_within_pid(mut cmd: Command, what: &str, limit: Duration) -> (u32, Output) {
    spawn_within(&mut cmd, what, limit).unwrap_or_else(|e| panic!("running {what}: {e}"))
}

/// Start `cmd` with no stdin and its output piped (read while it runs) and wait for it;
/// fail the test if it takes longer than `limit` (`what` names it). The child's process
/// id and its output; `Err` when it could not start.
pub fn spawn_within(
    cmd: &mut Command,
    what: &str,
    limit: Duration,
) -> std::io::Result<(u32, Output)> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|s| Box::new(s) as _));
    let err = drain(child.stderr.take().map(|s| Box::new(s) as _));
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} took over {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.join().unwrap_or_default()),
                String::from_utf8_lossy(&err.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let pid = child.id();
    let o = Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    Ok((pid, o))
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `qoslab ARGS` in `dir` refused as a usage error (exit 2, nothing run, `limit` at most):
/// its stderr, for the caller to check that it names what was wrong.
pub fn usage_error(dir: &Dir, args: &[&str], limit: Duration) -> String {
    let o = qoslab(dir, args, limit);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "qoslab {args:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    err
}

/// `qoslab bench p.toml --db r.db --no-tools ARGS...` in `d` (a minute at most): its exit
/// code, stdout and stderr.
pub fn bench_plan(d: &Dir, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["bench", "p.toml", "--db", "r.db", "--no-tools"];
    all.extend_from_slice(args);
    let o = qoslab(d, &all, Duration::from_secs(60));
    let (out, err) = text(&o);
    (o.status.code(), out, err)
}

/// A `fio --server` on 127.0.0.1 and a free port, killed on drop.
pub struct FioServer {
    pub port: u16,
    child: Child,
}

impl FioServer {
    pub fn start() -> FioServer {
        let port = test_support::free_port();
        let child = Command::new("fio")
            .arg(format!("--server=ip:127.0.0.1,{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("fio must be installed (scripts/test.sh installs it)");
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "fio --server on {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        FioServer { port, child }
    }

    pub fn client_arg(&self) -> String {
        format!("127.0.0.1,{}", self.port)
    }
}

impl Drop for FioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plan: one 500 IOPS volume and one randread workload with `expect`.
pub fn plan_500(expect: &[&str]) -> String {
    let list: Vec<String> = expect.iter().map(|e| format!("{e:?}")).collect();
    format!(
        r#"[bench]
name = "qos500"
runtime = "2s"
ramp = "1s"
mmap_reads = false

[[policy]]
name = "QoS_500iops"
fixed = {{ max_throughput_iops = 500 }}

[[volume]]
name = "vol500"
size = "100GB"
policy = "QoS_500iops"

[[workload]]
name = "randread"
volume = "vol500"
fio = {{ rw = "randread", bs = "4k", iodepth = 16, size = "1G" }}
expect = [{}]
"#,
        list.join(", ")
    )
}

/// `qoslab results export RUN --format FORMAT --db r.db` in `dir`: how a test reads back
/// the run it stored.
pub fn export(dir: &Dir, run: &str, format: &str, limit: Duration) -> Output {
    qoslab(
        dir,
        &["results", "export", run, "--format", format, "--db", "r.db"],
        limit,
    )
}

/// `qoslab report last --db DB -o HTML` in `dir`, which must succeed (`limit` at most):
/// the report's path and what the command printed.
pub fn report_last(dir: &Dir, db: &str, html: &str, limit: Duration) -> (PathBuf, String) {
    let o = qoslab(dir, &["report", "last", "--db", db, "-o", html], limit);
    (dir.path().join(html), succeeded(&o))
}

/// Run 1 of the results database `db` in `dir`, exported as JSON.
pub fn json_run(dir: &Dir, db: &str) -> serde_json::Value {
    let o = qoslab(
        dir,
        &["results", "export", "1", "--format", "json", "--db", db],
        Duration::from_secs(60),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("export is JSON ({e}): {out}"))
}

/// The harness's directories in the temp dir that belong to process `pid`
/// (`qoslab-...-PID-...`).
pub fn temp_dirs_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("qoslab-") && n.contains(&format!("-{pid}-")))
        .collect()
}

/// The table `kind`/`name` of an exported run.
pub fn table<'a>(run: &'a serde_json::Value, kind: &str, name: &str) -> &'a serde_json::Value {
    run["tables"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["kind"] == kind && t["name"] == name))
        .unwrap_or_else(|| panic!("no table {kind}/{name} in {}", run["tables"]))
}

/// A row's cell in column `col` of an exported table.
pub fn cell<'a>(
    t: &'a serde_json::Value,
    row: &'a serde_json::Value,
    col: &str,
) -> &'a serde_json::Value {
    let i = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == col)
        .unwrap_or_else(|| panic!("no column {col}"));
    &row[i]
}

/// The output of a `qoslab` run that must exit 0: its stdout.
pub fn succeeded(o: &Output) -> String {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    out
}

/// The rows `sql` selects from the results store `db` in `dir`, every column read as text.
pub fn stored_rows(dir: &Dir, db: &str, sql: &str) -> Vec<Vec<String>> {
    let c = rusqlite::Connection::open(dir.path().join(db)).expect("results store");
    let mut st = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = st.column_count();
    let rows = st
        .query_map([], |r| {
            (0..n)
                .map(|i| r.get::<_, String>(i))
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .and_then(|rows| rows.collect::<Result<Vec<Vec<String>>, _>>())
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows
}

/// Every job file the run in `db` stored (`jobs.jobfile`), by job name, in job order.
pub fn job_files(dir: &Dir, db: &str) -> Vec<(String, String)> {
    stored_rows(dir, db, "SELECT name, jobfile FROM jobs ORDER BY seq")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect()
}

/// Every job file reached its LUN through fio's libiscsi engine, as the harness's
/// initiator, at a loopback portal.
pub fn assert_over_libiscsi(files: &[(String, String)]) {
    assert!(!files.is_empty(), "no jobs stored");
    for (name, f) in files {
        assert!(
            f.contains("ioengine=libiscsi")
                && f.contains("initiator=iqn.2026-01.lab.qoslab:bench")
                && f.contains("filename=iscsi\\://127.0.0.1\\:")
                && !f.contains("uri="),
            "job {name} did not go over iSCSI:\n{f}"
        );
    }
}

/// Every verdict of an exported run's jobs (`results export --format json`: `jobs`).
pub fn verdicts(jobs: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    jobs.iter()
        .flat_map(|j| j["verdicts"].as_array().into_iter().flatten())
        .collect()
}

/// Whether verdict `v` is inconclusive for a reason the host gave (its CPU starved, noisy,
/// or the load generator CPU-bound): what a promise measured on a busy machine honestly
/// is, never a failure (docs/TESTING.md).
pub fn inconclusive_for_the_host(v: &serde_json::Value) -> bool {
    v["outcome"] == "inconclusive"
        && v["reason"].as_str().is_some_and(|r| {
            ["client-cpu-bound", "noisy-host", "starved-host"]
                .iter()
                .any(|h| r.starts_with(h))
        })
}

/// The verdicts among `verdicts` whose expectation starts with `prefix`.
pub fn expecting<'a>(
    verdicts: &[&'a serde_json::Value],
    prefix: &str,
) -> Vec<&'a serde_json::Value> {
    verdicts
        .iter()
        .copied()
        .filter(|x| x["expectation"].as_str().unwrap_or("").starts_with(prefix))
        .collect()
}
