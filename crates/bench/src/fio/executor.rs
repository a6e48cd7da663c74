//! Executors: run a job file and return fio's parsed JSON output.
//!
//! - [`RealFio`]: `fio --output-format=json JOBFILE` on this machine.
//! - [`RemoteFio`]: fio's client/server mode, `fio --client=HOST,PORT JOBFILE ...` (one pair
//!   per load generator running `fio --server`); results per client plus "All clients".
//! - [`FakeFio`]: canned output for unit tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use super::jobfile::JobFile;
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
    #[error("fio exited with {status} and no JSON output; stderr: {stderr}")]
    Failed { status: String, stderr: String },
    #[error("{0}")]
    Parse(#[from] ParseError),
}

/// Runs fio job files.
pub trait Executor {
    fn run(&self, job: &JobFile) -> Result<FioOutput, ExecError>;
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

fn run_fio(mut cmd: Command) -> Result<FioOutput, ExecError> {
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(ExecError::Spawn)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match FioOutput::parse(&stdout) {
        Ok(o) => Ok(o),
        Err(e) if out.status.success() => Err(e.into()),
        Err(_) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let mut tail: Vec<&str> = stderr.lines().rev().take(8).collect();
            tail.reverse();
            let mut msg = tail.join(" | ");
            if msg.is_empty() {
                msg = stdout.chars().take(400).collect();
            }
            Err(ExecError::Failed {
                status: out.status.to_string(),
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
}

impl RealFio {
    pub fn new(workdir: impl Into<PathBuf>) -> RealFio {
        RealFio {
            workdir: workdir.into(),
            fio: "fio".into(),
        }
    }
}

impl Executor for RealFio {
    fn run(&self, job: &JobFile) -> Result<FioOutput, ExecError> {
        let path = write_jobfile(&self.workdir, job)?;
        let mut cmd = Command::new(&self.fio);
        cmd.arg("--output-format=json").arg(&path);
        run_fio(cmd)
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
    Command::new(fio)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
