//! Running one application step as a child process in its own process group, registered
//! for signal teardown, with a deadline, stderr kept for the failure message.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::apps::Failure;

/// Keep at most this much of a failed step's stderr.
const STDERR_TAIL: usize = 2048;

pub fn tail(s: &str) -> String {
    let s = s.trim();
    if s.len() <= STDERR_TAIL {
        return s.to_string();
    }
    let mut i = s.len() - STDERR_TAIL;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    format!("...{}", &s[i..])
}

/// Run `cmd` as step `step`; it must exit 0 before `deadline`. Returns its wall time.
pub fn step(
    step: &str,
    cmd: &mut Command,
    deadline: Instant,
    limit: Duration,
) -> Result<f64, Failure> {
    let t0 = Instant::now();
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Failure::classify(step, format!("cannot start {:?}: {e}", cmd.get_program()))
        })?;
    let _reg = mounts::children::register(child.id());
    let mut err = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                // SAFETY: killpg of the group our child leads (not yet reaped).
                unsafe {
                    libc::killpg(child.id() as i32, libc::SIGKILL);
                }
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(Failure::classify(step, format!("waiting: {e}"))),
        }
    };
    let stderr = reader.join().unwrap_or_default();
    match status {
        None => Err(Failure::timeout(step, limit)),
        Some(s) if s.success() => Ok(t0.elapsed().as_secs_f64()),
        Some(s) => Err(Failure::classify(
            step,
            format!("{:?} exited with {s}: {}", cmd.get_program(), tail(&stderr)),
        )),
    }
}
