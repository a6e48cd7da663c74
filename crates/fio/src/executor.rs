//! Executors: run a job file and return fio's parsed JSON output.
//!
//! - [`RealFio`]: `fio --output-format=json JOBFILE` on this machine.
//! - [`RemoteFio`]: fio's client/server mode, `fio --client=HOST,PORT JOBFILE ...` (one pair
//!   per load generator running `fio --server`); results per client plus "All clients".
//! - [`FakeFio`]: canned output for unit tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::jobfile::JobFile;
use crate::result::{FioOutput, ParseError};

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("writing job file {path}: {source}")]
    JobFile {
        path: String,
        source: std::io::Error,
    },
    #[error("running fio: {0} (is fio installed and on PATH?)")]
    Spawn(std::io::Error),
    /// fio failed without a result to show (no JSON, or a report no job of which carries
    /// the error): `stderr` is all it wrote there (its first lines in the message).
    #[error("fio exited with {status}: {}", first_lines(stderr, 3))]
    Failed { status: String, stderr: String },
    /// fio reported no error, yet no job moved a byte and it said why on stderr (fio 3.33's
    /// nfs engine: `Failed to open f: ... NFS3ERR_NOENT`, exit 0): an error, not a
    /// measurement of zero.
    #[error("fio did no I/O: {}", first_lines(stderr, 3))]
    NoIo { stderr: String },
    #[error("{0}")]
    Parse(#[from] ParseError),
}

/// The first `n` non-empty lines of fio's stderr, joined with " | " (what a person reads
/// first; the whole text is stored).
pub fn first_lines(stderr: &str, n: usize) -> String {
    stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(n)
        .collect::<Vec<_>>()
        .join(" | ")
}

impl ExecError {
    /// Everything worth keeping about the failure: the message and, for a fio that failed,
    /// all of its stderr.
    pub fn full_text(&self) -> String {
        match self {
            ExecError::Failed { status, stderr } => {
                format!("fio exited with {status}; fio said:\n{}", stderr.trim_end())
            }
            ExecError::NoIo { stderr } => {
                format!("fio did no I/O; fio said:\n{}", stderr.trim_end())
            }
            other => other.to_string(),
        }
    }
}

/// What `fio --parse-only` said about a job file: its complaint, condensed to the lines
/// that name the problem (`fio: failed parsing rw=randred`, `Bad option <iodeth=16>`,
/// `Did you mean iodepth?`, the valid values).
pub fn parse_only_complaint(stdout: &str, stderr: &str) -> String {
    let mut lines: Vec<String> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.ends_with("dropped"))
        .map(str::to_string)
        .collect();
    let values: Vec<&str> = stdout
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("valid values:")
                .or_else(|| l.strip_prefix(':'))?;
            l.split_whitespace().next()
        })
        .collect();
    if !values.is_empty() {
        lines.push(format!("valid values: {}", values.join(", ")));
    }
    if lines.is_empty() {
        lines.push(first_lines(stdout, 3));
    }
    lines.join("; ")
}

/// Runs fio job files.
pub trait Executor {
    fn run(&self, job: &JobFile) -> Result<FioOutput, ExecError>;
    /// Check a job file without running it (`fio --parse-only`): `Err` holds fio's
    /// complaint. Executors that cannot check accept everything.
    fn parse_only(&self, job: &JobFile) -> Result<(), String> {
        let _ = job;
        Ok(())
    }
    /// A short description for the results store ("local fio", "fio clients a:1,b:2").
    fn describe(&self) -> String;
}

fn write_jobfile(dir: &Path, job: &JobFile) -> Result<PathBuf, ExecError> {
    let name = job
        .jobs
        .first()
        .map(|s| s.name.clone())
        .unwrap_or_else(|| "job".into());
    let path = dir.join(format!("{name}.fio"));
    std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(&path, job.render()))
        .map_err(|source| ExecError::JobFile {
            path: path.display().to_string(),
            source,
        })?;
    Ok(path)
}

/// fio dies with this process (SIGTERM: fio then stops its job processes, and fio's client
/// tells its servers to stop; SIGPIPE ignored, so its "terminating" line on the pipe our
/// exit closed does not kill it before it has).
const ON_DEATH: lifecycle::children::OnParentDeath = lifecycle::children::OnParentDeath::TermNoPipe;

fn run_fio(mut cmd: Command) -> Result<FioOutput, ExecError> {
    let out = lifecycle::children::output(cmd.stdin(Stdio::null()), ON_DEATH)
        .map_err(ExecError::Spawn)?;
    finish(
        out.status,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    )
}

/// Called about once a second while fio runs with the live rate (I/Os per second, all
/// jobs and directions) computed from fio's status reports.
pub type LiveSink = std::sync::Arc<dyn Fn(f64) + Send + Sync>;

/// Run fio with `--status-interval=1`: its stdout is then a series of JSON documents, each
/// opened by a line `{` and closed by a line `}` (after a possible non-JSON line from the
/// nbd engine). Interim documents feed `live`; the last one is the result.
fn run_fio_live(mut cmd: Command, live: &LiveSink) -> Result<FioOutput, ExecError> {
    use std::io::{BufRead, BufReader, Read};
    cmd.arg("--status-interval=1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = lifecycle::children::spawn(&mut cmd, ON_DEATH).map_err(ExecError::Spawn)?;
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        })
    });
    let mut all = String::new();
    let mut last_doc: Option<String> = None;
    if let Some(out) = child.stdout.take() {
        let (mut doc, mut in_doc) = (String::new(), false);
        let mut prev: Option<(std::time::Instant, u64)> = None;
        for line in BufReader::new(out).lines() {
            let line = line.map_err(ExecError::Spawn)?;
            all.push_str(&line);
            all.push('\n');
            if line == "{" {
                in_doc = true;
                doc.clear();
            }
            if !in_doc {
                continue;
            }
            doc.push_str(&line);
            doc.push('\n');
            if line == "}" {
                in_doc = false;
                if let Some(ios) = total_ios(&doc) {
                    let now = std::time::Instant::now();
                    if let Some((t, n)) = prev {
                        let dt = now.duration_since(t).as_secs_f64();
                        if dt > 0.05 {
                            live(ios.saturating_sub(n) as f64 / dt);
                        }
                    }
                    prev = Some((now, ios));
                }
                last_doc = Some(std::mem::take(&mut doc));
            }
        }
    }
    let status = child.wait().map_err(ExecError::Spawn)?;
    let stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    finish(status, last_doc.as_deref().unwrap_or(&all), &stderr)
}

/// I/Os completed so far by all jobs of one fio status document.
fn total_ios(doc: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(doc).ok()?;
    let jobs = v.get("jobs")?.as_array()?;
    Some(
        jobs.iter()
            .flat_map(|j| {
                ["read", "write", "trim"].map(|d| j[d]["total_ios"].as_u64().unwrap_or(0))
            })
            .sum(),
    )
}

/// Turn fio's exit status and output into a result or a readable error.
fn finish(
    status: std::process::ExitStatus,
    stdout: &str,
    stderr: &str,
) -> Result<FioOutput, ExecError> {
    match FioOutput::parse(stdout) {
        // fio failed, yet no job carries the error (it could not connect, open or lay
        // out its files, and printed an empty report): its stderr is the reason.
        Ok(o) if !status.success() && o.jobs.iter().all(|j| j.error == 0) => {
            Err(ExecError::Failed {
                status: status.to_string(),
                stderr: if stderr.trim().is_empty() {
                    "(nothing on stderr)".into()
                } else {
                    stderr.to_string()
                },
            })
        }
        // No job moved a byte, none carries an error, and fio said why: the reason.
        Ok(o)
            if !o.jobs.is_empty()
                && o.jobs
                    .iter()
                    .all(|j| j.error == 0 && !j.read.active() && !j.write.active())
                && !stderr.trim().is_empty() =>
        {
            Err(ExecError::NoIo {
                stderr: stderr.to_string(),
            })
        }
        Ok(mut o) => {
            o.stderr = stderr.to_string();
            Ok(o)
        }
        Err(e) if status.success() => Err(e.into()),
        Err(_) => {
            let msg = if stderr.trim().is_empty() {
                stdout.chars().take(400).collect()
            } else {
                stderr.to_string()
            };
            Err(ExecError::Failed {
                status: status.to_string(),
                stderr: msg,
            })
        }
    }
}

/// Local fio.
pub struct RealFio {
    /// Where job files are written.
    pub workdir: PathBuf,
    /// The fio binary (default "fio").
    pub fio: String,
    /// Where live rates go while fio runs (fio then reports status every second).
    pub live: Option<LiveSink>,
}

impl RealFio {
    pub fn new(workdir: impl Into<PathBuf>) -> RealFio {
        RealFio {
            workdir: workdir.into(),
            fio: "fio".into(),
            live: None,
        }
    }
}

/// `fio --parse-only JOBFILE` with `fio`: fio's complaint when it exits non-zero.
fn parse_only_with(fio: &str, dir: &Path, job: &JobFile) -> Result<(), String> {
    let path = write_jobfile(dir, job).map_err(|e| e.to_string())?;
    let out = lifecycle::children::output(
        Command::new(fio)
            .arg("--parse-only")
            .arg(&path)
            .stdin(Stdio::null()),
        ON_DEATH,
    )
    .map_err(|e| format!("running fio --parse-only: {e} (is fio installed and on PATH?)"))?;
    let _ = std::fs::remove_file(&path);
    if out.status.success() {
        return Ok(());
    }
    Err(parse_only_complaint(
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    ))
}

impl Executor for RealFio {
    fn parse_only(&self, job: &JobFile) -> Result<(), String> {
        parse_only_with(&self.fio, &self.workdir, job)
    }

    fn run(&self, job: &JobFile) -> Result<FioOutput, ExecError> {
        let path = write_jobfile(&self.workdir, job)?;
        let mut cmd = Command::new(&self.fio);
        cmd.arg("--output-format=json").arg(&path);
        match &self.live {
            Some(live) => run_fio_live(cmd, live),
            None => run_fio(cmd),
        }
    }

    fn describe(&self) -> String {
        "local fio".into()
    }
}

/// fio client/server mode: the job file is sent to every `fio --server`.
pub struct RemoteFio {
    pub workdir: PathBuf,
    pub fio: String,
    /// `HOST,PORT` (fio's syntax; `HOST` alone means port 8765).
    pub clients: Vec<String>,
}

impl RemoteFio {
    pub fn new(workdir: impl Into<PathBuf>, clients: Vec<String>) -> RemoteFio {
        RemoteFio {
            workdir: workdir.into(),
            fio: "fio".into(),
            clients,
        }
    }
}

impl Executor for RemoteFio {
    /// Checked by this machine's fio (the load generators run the same job file).
    fn parse_only(&self, job: &JobFile) -> Result<(), String> {
        parse_only_with(&self.fio, &self.workdir, job)
    }

    fn run(&self, job: &JobFile) -> Result<FioOutput, ExecError> {
        let path = write_jobfile(&self.workdir, job)?;
        let mut cmd = Command::new(&self.fio);
        cmd.arg("--output-format=json");
        for c in &self.clients {
            cmd.arg(format!("--client={c}")).arg(&path);
        }
        run_fio(cmd)
    }

    fn describe(&self) -> String {
        format!("fio clients {}", self.clients.join(" "))
    }
}

type Canned = Box<dyn Fn(&JobFile) -> String + Send + Sync>;

/// Canned output: a function from the job file to what fio would print. Records every job
/// file it was given.
pub struct FakeFio {
    canned: Canned,
    pub seen: Mutex<Vec<JobFile>>,
}

impl FakeFio {
    pub fn new(canned: impl Fn(&JobFile) -> String + Send + Sync + 'static) -> FakeFio {
        FakeFio {
            canned: Box::new(canned),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Always the same output.
    pub fn constant(stdout: impl Into<String>) -> FakeFio {
        let s = stdout.into();
        FakeFio::new(move |_| s.clone())
    }
}

impl Executor for FakeFio {
    fn run(&self, job: &JobFile) -> Result<FioOutput, ExecError> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(job.clone());
        Ok(FioOutput::parse(&(self.canned)(job))?)
    }

    fn describe(&self) -> String {
        "fake fio".into()
    }
}

/// `fio --version`, e.g. "fio-3.33" (empty if fio does not run).
pub fn fio_version(fio: &str) -> String {
    lifecycle::children::output(
        Command::new(fio).arg("--version").stdin(Stdio::null()),
        ON_DEATH,
    )
    .ok()
    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    .unwrap_or_default()
}

#[cfg(test)]
mod complaint_tests {
    use super::*;

    /// fio 3.33's own words for two typos (captured from `fio --parse-only`).
    #[test]
    fn parse_only_complaints_keep_fios_words() {
        let c = parse_only_complaint(
            "        valid values: read       Sequential read\n                    : write      Sequential write\n                    : randread   Random read\n",
            "fio: failed parsing rw=randred\nfio: job j dropped\n",
        );
        assert_eq!(
            c,
            "fio: failed parsing rw=randred; valid values: read, write, randread"
        );
        let c = parse_only_complaint(
            "",
            "Bad option <iodeth=16>\nDid you mean iodepth?\nfio: job j dropped\n",
        );
        assert_eq!(c, "Bad option <iodeth=16>; Did you mean iodepth?");
        assert_eq!(first_lines("\na\n\nb\nc\nd\n", 3), "a | b | c");
    }
}

#[cfg(test)]
mod live_tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A stand-in for fio printing what fio prints with `--status-interval`: the nbd
    /// engine's banner, two interim status documents, then the final report (a real fio
    /// 3.33 capture: 1,500 reads).
    fn fake_fio(dir: &Path) -> PathBuf {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/randread_500iops_msec.out"
        );
        let script = dir.join("fake-fio.sh");
        let doc = |ios: u64| {
            format!(
                "{{\n\"jobs\" : [ {{ \"read\" : {{ \"total_ios\" : {ios} }}, \"write\" : {{ \"total_ios\" : 0 }} }} ]\n}}\n"
            )
        };
        let body = format!(
            "#!/bin/sh\necho 'fio: connected to NBD server'\ncat <<'A'\n{}A\nsleep 0.2\ncat <<'B'\n{}B\nsleep 0.2\ngrep -v '^fio: connected' '{fixture}'\n",
            doc(100),
            doc(300)
        );
        std::fs::write(&script, body).unwrap();
        let mut perm = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&script, perm).unwrap();
        script
    }

    #[test]
    fn a_failed_fio_with_an_empty_report_is_an_error_with_its_stderr() {
        use std::os::unix::process::ExitStatusExt;
        // What fio 3.33 prints for an nbd URI it cannot connect to: exit 1, a report
        // whose job has error 0 and no I/O, the reason on stderr.
        let report = r#"{"fio version": "fio-3.33", "jobs": [{"jobname": "r", "groupid": 0, "error": 0,
            "read": {"io_bytes": 0, "iops": 0.0, "bw_bytes": 0}, "write": {"io_bytes": 0, "iops": 0.0, "bw_bytes": 0}}]}"#;
        let stderr = "fio: nbd_connect_uri: nbd_connect_uri: connect: No such file or directory\n";
        let e = finish(std::process::ExitStatus::from_raw(1 << 8), report, stderr).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fio exited with exit status: 1: fio: nbd_connect_uri: nbd_connect_uri: connect: No such file or directory"
        );
        assert!(e.full_text().ends_with(
            "fio said:\nfio: nbd_connect_uri: nbd_connect_uri: connect: No such file or directory"
        ));
        // The same report with exit 0 is a result; with fio's reason on stderr (its nfs
        // engine failing to open a file, exit 0) it is that error.
        assert!(finish(std::process::ExitStatus::from_raw(0), report, "").is_ok());
        let nfs = "Failed to open f: open call failed with \"NFS: Lookup of /f failed with NFS3ERR_NOENT(-2)\"\n";
        let e = finish(std::process::ExitStatus::from_raw(0), report, nfs).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fio did no I/O: Failed to open f: open call failed with \"NFS: Lookup of /f failed with NFS3ERR_NOENT(-2)\""
        );
    }

    #[test]
    fn status_documents_feed_the_live_rate_and_the_last_one_is_the_result() {
        let dir = crate::test_dir("live");
        let rates = Arc::new(Mutex::new(Vec::new()));
        let sink_rates = rates.clone();
        let mut fio = RealFio::new(dir.path());
        fio.fio = fake_fio(&dir).display().to_string();
        fio.live = Some(Arc::new(move |r| sink_rates.lock().unwrap().push(r)));
        let job = JobFile::default();
        let out = fio.run(&job).expect("final document parses");
        let total: u64 = out.jobs.iter().map(|j| j.read.total_ios).sum();
        assert_eq!(total, 1500, "the result is the final report");
        let rates = rates.lock().unwrap().clone();
        // 100 -> 300 I/Os over ~0.2 s, then 300 -> 1500 over ~0.2 s.
        assert_eq!(rates.len(), 2, "{rates:?}");
        assert!(rates.iter().all(|r| *r > 0.0), "{rates:?}");
        assert!(rates[1] > rates[0], "{rates:?}");
    }
}
