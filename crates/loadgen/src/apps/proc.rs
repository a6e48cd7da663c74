//! Running one application step as a child process in its own process group, registered
//! for signal teardown, with a deadline, stderr kept for the failure message.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
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
    run(step, cmd, deadline, limit, false).map(|(secs, _)| secs)
}

/// As [`step`], and returns what the command printed on stdout too.
pub fn output(
    step: &str,
    cmd: &mut Command,
    deadline: Instant,
    limit: Duration,
) -> Result<(f64, String), Failure> {
    run(step, cmd, deadline, limit, true)
}

fn reader<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut r) = r {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            s = String::from_utf8_lossy(&b).into_owned();
        }
        s
    })
}

/// Start `cmd` in its own process group (so a terminal's Ctrl-C reaches only qoslab, and
/// a teardown can kill the whole group), stdin from /dev/null, registered for the signal
/// teardown while the registration lives; it gets SIGTERM if qoslab dies unseen (SIGKILL:
/// `lifecycle::children`; fio then stops its own job processes).
pub fn spawn_group(cmd: &mut Command) -> std::io::Result<(Child, mounts::children::Registered)> {
    let child = lifecycle::children::spawn(
        cmd.process_group(0).stdin(Stdio::null()),
        lifecycle::children::OnParentDeath::TermNoPipe,
    )?;
    let reg = mounts::children::register(child.id());
    Ok((child, reg))
}

/// Why a started server or tool is not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// It exited first (its status).
    Exited(String),
    /// The deadline passed.
    TimedOut,
}

/// Poll `ready` until it gives a value, failing when `child` exits first or at
/// `deadline`.
pub fn wait_ready<T>(
    child: &mut Child,
    deadline: Instant,
    mut ready: impl FnMut() -> Option<T>,
) -> Result<T, NotReady> {
    loop {
        if let Some(v) = ready() {
            return Ok(v);
        }
        match child.try_wait() {
            Ok(None) => {}
            Ok(Some(s)) => return Err(NotReady::Exited(s.to_string())),
            Err(e) => return Err(NotReady::Exited(e.to_string())),
        }
        if Instant::now() >= deadline {
            return Err(NotReady::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run(
    step: &str,
    cmd: &mut Command,
    deadline: Instant,
    limit: Duration,
    capture: bool,
) -> Result<(f64, String), Failure> {
    let t0 = Instant::now();
    cmd.stdout(if capture {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stderr(Stdio::piped());
    let (mut child, _reg) = spawn_group(cmd).map_err(|e| {
        Failure::classify(step, format!("cannot start {:?}: {e}", cmd.get_program()))
    })?;
    let err = reader(child.stderr.take());
    let out = reader(child.stdout.take());
    let status = wait_until(&mut child, deadline)
        .map_err(|e| Failure::classify(step, format!("waiting: {e}")))?;
    let stderr = err.join().unwrap_or_default();
    let stdout = out.join().unwrap_or_default();
    match status {
        None => Err(Failure::timeout(step, limit)),
        Some(s) if s.success() => Ok((t0.elapsed().as_secs_f64(), stdout)),
        Some(s) => Err(Failure::classify(
            step,
            format!("{:?} exited with {s}: {}", cmd.get_program(), tail(&stderr)),
        )),
    }
}

/// Wait for `child` (the leader of its own process group) until `deadline`; past it, kill
/// its whole group. `None`: killed at the deadline.
pub fn wait_until(
    child: &mut Child,
    deadline: Instant,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    loop {
        match child.try_wait()? {
            Some(s) => return Ok(Some(s)),
            None if Instant::now() >= deadline => {
                kill_group(child);
                return Ok(None);
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// SIGKILL the process group `child` leads, and reap it.
pub fn kill_group(child: &mut Child) {
    // SAFETY: killpg of the group our child leads (not yet reaped, so its id is ours).
    unsafe {
        libc::killpg(child.id() as i32, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// Stop `child` (leader of its own group): SIGTERM to the group, then SIGKILL after
/// `grace`. Returns whether it exited by itself within the grace period.
pub fn stop_group(child: &mut Child, grace: Duration) -> bool {
    if let Ok(Some(_)) = child.try_wait() {
        return true;
    }
    // SAFETY: as in kill_group.
    unsafe {
        libc::killpg(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                kill_group(child);
                return false;
            }
        }
    }
}
