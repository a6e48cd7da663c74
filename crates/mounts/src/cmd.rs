//! Running external programs (losetup, mkfs, mount, umount) with a time limit and their
//! stderr kept for the error message.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::MountError;

/// Output of a program that exited 0.
pub struct Output {
    pub stdout: String,
}

/// Run `program args`, wait at most `limit`, and turn a failure into
/// [`MountError::Command`] naming `step`, the command line, the exit status and stderr.
pub fn run(
    step: &str,
    program: &str,
    args: &[&str],
    limit: Duration,
) -> Result<Output, MountError> {
    let line = std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let fail = |detail: String| MountError::Command {
        step: step.to_string(),
        command: line.clone(),
        detail,
    };
    let mut child = lifecycle::children::spawn(
        Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        lifecycle::children::OnParentDeath::Term,
    )
    .map_err(|e| fail(format!("cannot start {program}: {e}")))?;
    // Drain both pipes on threads so a chatty program never blocks on a full pipe.
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(fail(format!("waiting for {program}: {e}"))),
        }
    };
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    match status {
        None => Err(fail(format!(
            "timed out after {limit:?}; stderr: {}",
            stderr.trim()
        ))),
        Some(s) if s.success() => Ok(Output { stdout }),
        Some(s) => Err(fail(format!("{s}; stderr: {}", stderr.trim()))),
    }
}

/// Whether `program` is found on PATH (as `command -v` would).
pub fn on_path(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|d| {
        let p = d.join(program);
        std::fs::metadata(&p)
            .map(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
            .unwrap_or(false)
    })
}
