//! Child processes that die with this process, however it ends: SIGINT, SIGTERM, SIGHUP
//! (the teardown, then `exit`), a panic, or a SIGKILL of this process alone, which no
//! handler sees. Each child asks the kernel for a parent-death signal
//! (`prctl(PR_SET_PDEATHSIG)`) before it runs its program.
//!
//! The kernel sends that signal when the *thread* that forked the child exits, not the
//! process (prctl(2)): a child spawned from a short-lived thread would be killed when that
//! thread ends. So every child is forked by one thread that lives as long as the process
//! ([`spawn`] hands the `Command` to it and takes the `Child` back). A parent that died
//! between the fork and the `prctl` is caught by comparing `getppid()` with the pid
//! recorded before the fork: the child then exits at once.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

/// What a child gets when this process dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnParentDeath {
    /// SIGTERM: the program stops in its own way (its children too).
    Term,
    /// SIGTERM, with SIGPIPE ignored: for a program that writes to its stdout as it stops
    /// and must not die of the pipe this process's exit closed before it has stopped its
    /// own children. fio prints "terminating on signal 15" before it tells its job
    /// processes to stop: killed by SIGPIPE there, it would leave them running. These are
    /// the load generators (fio, applications): a caught signal's teardown sends them
    /// SIGTERM first of all ([`stop_load_generators`]), so they stop at once rather than
    /// when this process exits, after a teardown that may wait on a busy disk.
    TermNoPipe,
    /// SIGKILL, for programs that may ignore SIGTERM.
    Kill,
    /// No signal: the child outlives this process on purpose. For attachments a state file
    /// records and the next run (or `qoslab tenants cleanup`) undoes in order: an nbdfuse
    /// killed under a loop device and a mounted file system would leave a mount that fails
    /// its I/O instead of one that can be taken down, and a command running inside such
    /// mounts keeps them busy until the cleanup stops it.
    Stay,
}

impl OnParentDeath {
    fn signal(self) -> libc::c_int {
        match self {
            OnParentDeath::Term | OnParentDeath::TermNoPipe => libc::SIGTERM,
            OnParentDeath::Kill => libc::SIGKILL,
            OnParentDeath::Stay => 0,
        }
    }
}

type Request = (Command, Sender<(Command, io::Result<Child>)>);

/// The spawner thread's inbox (started on first use; it never exits).
fn spawner() -> &'static Mutex<Sender<Request>> {
    static INBOX: OnceLock<Mutex<Sender<Request>>> = OnceLock::new();
    INBOX.get_or_init(|| {
        let (tx, rx) = channel::<Request>();
        let started = std::thread::Builder::new()
            .name("qoslab-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let r = cmd.spawn();
                    let _ = reply.send((cmd, r));
                }
            });
        if let Err(e) = started {
            // Without the thread every spawn fails with this error (below).
            eprintln!("qoslab: cannot start the child-spawning thread: {e}");
        }
        Mutex::new(tx)
    })
}

/// Start `cmd` so that it gets `on_death`'s signal when this process dies (see the module
/// docs). Like [`Command::spawn`]; `cmd` keeps its configuration.
pub fn spawn(cmd: &mut Command, on_death: OnParentDeath) -> io::Result<Child> {
    if let (OnParentDeath::TermNoPipe, Some(sig)) = (on_death, crate::received()) {
        // The teardown has stopped the load generators: none starts after it.
        return Err(io::Error::other(format!(
            "not started: stopping on signal {sig}"
        )));
    }
    let parent = std::process::id();
    let sig = on_death.signal();
    let ignore_pipe = on_death == OnParentDeath::TermNoPipe;
    // SAFETY: prctl, getppid, signal and _exit are async-signal-safe; nothing is
    // allocated. (std has reset SIGPIPE to its default before these closures run.)
    unsafe {
        cmd.pre_exec(move || {
            if ignore_pipe {
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            }
            if sig == 0 {
                return Ok(());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                libc::_exit(128 + sig);
            }
            Ok(())
        });
    }
    let (tx, rx) = channel();
    let owned = std::mem::replace(cmd, Command::new(""));
    let result = spawn_on_spawner(cmd, owned, tx, rx);
    if let (Ok(child), true) = (&result, ignore_pipe) {
        track(child.id());
    }
    result
}

/// Hand `owned` to the spawner thread and take it back into `cmd`, with its result.
fn spawn_on_spawner(
    cmd: &mut Command,
    owned: Command,
    tx: Sender<(Command, io::Result<Child>)>,
    rx: std::sync::mpsc::Receiver<(Command, io::Result<Child>)>,
) -> io::Result<Child> {
    let sent = spawner()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((owned, tx));
    if let Err(std::sync::mpsc::SendError((owned, _))) = sent {
        *cmd = owned;
        return Err(io::Error::other("the child-spawning thread is gone"));
    }
    let (back, result) = rx
        .recv()
        .map_err(|_| io::Error::other("the child-spawning thread is gone"))?;
    *cmd = back;
    result
}

/// The load generators started with [`OnParentDeath::TermNoPipe`]: (pid, start time).
/// A pid counts only while its start time matches, so a reaped and reused pid is never
/// signalled; entries that no longer match are dropped at each new spawn.
static LOAD_GENERATORS: Mutex<Vec<(u32, u64)>> = Mutex::new(Vec::new());

/// A process's start time (clock ticks since boot, /proc/PID/stat's 22nd field), or None
/// when it is gone or a zombie.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

fn track(pid: u32) {
    let Some(start) = start_time(pid) else {
        return;
    };
    let mut live = LOAD_GENERATORS.lock().unwrap_or_else(|p| p.into_inner());
    live.retain(|&(p, s)| start_time(p) == Some(s));
    live.push((pid, start));
}

/// SIGTERM to every load generator still running (the first step of a caught signal's
/// teardown): fio stops its job processes at their next I/O completion.
pub fn stop_load_generators() -> usize {
    let live = std::mem::take(&mut *LOAD_GENERATORS.lock().unwrap_or_else(|p| p.into_inner()));
    let mut n = 0;
    for (pid, start) in live {
        if start_time(pid) == Some(start) {
            // SAFETY: a signal to our own child, checked alive by its start time.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            n += 1;
        }
    }
    n
}

/// Like [`Command::output`] through [`spawn`]: stdin from /dev/null, stdout and stderr
/// captured.
pub fn output(cmd: &mut Command, on_death: OnParentDeath) -> io::Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    spawn(cmd, on_death)?.wait_with_output()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_get_the_parent_death_signal_and_keep_their_configuration() {
        // (That the signal comes when this process dies is the e2e tier's proof:
        // `bench_interrupted` kills qoslab alone and sees fio gone.)
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo $PPID"]);
        let out = output(&mut cmd, OnParentDeath::Kill).unwrap();
        assert!(out.status.success());
        let ppid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(ppid, std::process::id(), "forked by this process");
        // The command is given back as it was: it runs again.
        assert!(output(&mut cmd, OnParentDeath::Term)
            .unwrap()
            .status
            .success());
        // From a thread that ends at once: the child outlives the thread (it was forked by
        // the spawner, which lives on).
        let child = std::thread::spawn(|| {
            spawn(
                Command::new("sleep").arg("5").stdout(Stdio::null()),
                OnParentDeath::Kill,
            )
            .unwrap()
        })
        .join()
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut child = child;
        assert!(child.try_wait().unwrap().is_none(), "still running");
        child.kill().unwrap();
        child.wait().unwrap();
        let e = spawn(&mut Command::new("/nonexistent/x"), OnParentDeath::Kill).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_caught_signals_teardown_stops_load_generators_first_and_only_them() {
        use std::os::unix::process::ExitStatusExt;
        let mut gen = spawn(Command::new("sleep").arg("30"), OnParentDeath::TermNoPipe).unwrap();
        let mut other = spawn(Command::new("sleep").arg("30"), OnParentDeath::Term).unwrap();
        assert_eq!(stop_load_generators(), 1, "the one load generator");
        assert_eq!(gen.wait().unwrap().signal(), Some(libc::SIGTERM));
        assert!(
            other.try_wait().unwrap().is_none(),
            "other children are the phases'"
        );
        other.kill().unwrap();
        other.wait().unwrap();
        // Reaped: its pid is never signalled again.
        assert_eq!(stop_load_generators(), 0);
    }
}
