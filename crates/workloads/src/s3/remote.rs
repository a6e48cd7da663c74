//! Drivers on load generators: the qoslab binary copied to each host over ssh (the same
//! multiplexed connection and options as every other command: `cat` into a file named by
//! the binary's SHA-256, skipped when the host has it already), then `qoslab s3-driver`
//! run there under a lease (`timeout`), spoken to in JSON lines over ssh's stdin and stdout.
//!
//! The driver ends when its input ends (this process or its ssh connection gone) between
//! phases, at its test's own stop during a run, and at the lease in any case; on SIGINT,
//! SIGTERM or SIGHUP the coordinator also kills it by pid (`hosts::cleanup`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use hosts::{quote, Host};
use loadgen::s3::protocol::{Command, Event};
use sha2::{Digest, Sha256};

/// This binary and its digest (computed once).
pub fn this_binary() -> Result<(PathBuf, String), String> {
    static BIN: OnceLock<Result<(PathBuf, String), String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().map_err(|e| format!("finding the qoslab binary: {e}"))?;
        let mut f =
            std::fs::File::open(&exe).map_err(|e| format!("reading {}: {e}", exe.display()))?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f
                .read(&mut buf)
                .map_err(|e| format!("reading {}: {e}", exe.display()))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        let digest: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Ok((exe, digest))
    })
    .clone()
}

/// Put the binary on `host` (unless it is there already, or the host is this machine).
/// Returns its path there and whether it was copied.
pub fn deploy(host: &Host, exe: &Path, digest: &str) -> Result<(String, bool), String> {
    if host.is_local() {
        return Ok((exe.display().to_string(), false));
    }
    let dir = format!("/tmp/qoslab-driver-{}", &digest[..16.min(digest.len())]);
    let path = format!("{dir}/qoslab");
    let check = format!(
        "test -x {p} && {p} --version 2>/dev/null | grep -q qoslab && echo present || echo absent",
        p = quote(&path)
    );
    let have = host.run_ok(&check).map_err(|e| e.to_string())?;
    if have.trim() == "present" {
        return Ok((path, false));
    }
    let bytes = std::fs::read(exe).map_err(|e| format!("reading {}: {e}", exe.display()))?;
    let tmp = format!("{path}.{}", std::process::id());
    // Copies of other builds unused for a day go (each is the size of the binary).
    let copy = format!(
        "find /tmp -maxdepth 1 -name 'qoslab-driver-*' ! -name {name} -mtime +0 -exec rm -rf {{}} + 2>/dev/null; \
         mkdir -p {d} && cat > {t} && chmod 755 {t} && mv -f {t} {p}",
        name = quote(dir.trim_start_matches("/tmp/")),
        d = quote(&dir),
        t = quote(&tmp),
        p = quote(&path)
    );
    let o = host
        .run_with_input(&copy, Some(&bytes))
        .map_err(|e| e.to_string())?;
    if o.code != 0 {
        return Err(format!(
            "host {}: copying the qoslab binary to {path} failed (exit {}): {}",
            host.name,
            o.code,
            o.stderr.trim()
        ));
    }
    let v = host
        .run(&format!("{} --version", quote(&path)))
        .map_err(|e| e.to_string())?;
    if v.code != 0 || !v.stdout.contains("qoslab") {
        return Err(format!(
            "host {}: the copied qoslab binary does not run there (exit {}): {}",
            host.name,
            v.code,
            v.stderr.trim()
        ));
    }
    Ok((path, true))
}

/// A driver process on a host.
pub struct RemoteDriver {
    host: Host,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    guard: Option<lifecycle::Guard>,
}

impl RemoteDriver {
    /// Start `bin s3-driver` on `host` for at most `lease`; events arrive on the returned
    /// channel (an `error` event when the driver's output ends before it said `bye`).
    pub fn start(
        host: &Host,
        bin: &str,
        lease: Duration,
    ) -> Result<(RemoteDriver, mpsc::Receiver<Event>), String> {
        let script = format!(
            "exec timeout -s TERM {} {} s3-driver",
            lease.as_secs().max(1),
            quote(bin)
        );
        let mut cmd = host.command(&script);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child =
            lifecycle::children::spawn(&mut cmd, lifecycle::children::OnParentDeath::Term)
                .map_err(|e| format!("host {}: starting ssh: {e}", host.name))?;
        let stdout = child.stdout.take();
        let stderr_pipe = child.stderr.take();
        let stderr: Arc<Mutex<VecDeque<String>>> = Arc::default();
        if let Some(p) = stderr_pipe {
            let keep = stderr.clone();
            std::thread::spawn(move || {
                for l in BufReader::new(p).lines().map_while(Result::ok) {
                    let mut k = keep.lock().unwrap_or_else(|e| e.into_inner());
                    if k.len() >= 20 {
                        k.pop_front();
                    }
                    k.push_back(l);
                }
            });
        }
        let (tx, rx) = mpsc::channel();
        if let Some(out) = stdout {
            let name = host.name.clone();
            let errs = stderr.clone();
            std::thread::spawn(move || {
                let mut bye = false;
                for line in BufReader::new(out).lines() {
                    let ev = match line {
                        Ok(l) if l.trim().is_empty() => continue,
                        Ok(l) => {
                            serde_json::from_str::<Event>(&l).unwrap_or_else(|e| Event::Error {
                                message: format!(
                                    "host {name}: unreadable driver output {l:?}: {e}"
                                ),
                            })
                        }
                        Err(e) => Event::Error {
                            message: format!("host {name}: reading the driver's output: {e}"),
                        },
                    };
                    bye |= ev == Event::Bye;
                    if tx.send(ev).is_err() {
                        return;
                    }
                }
                if !bye {
                    // Give the stderr reader a moment to take the last lines.
                    std::thread::sleep(Duration::from_millis(100));
                    let tail: Vec<String> = errs
                        .lock()
                        .map(|v| v.iter().cloned().collect())
                        .unwrap_or_default();
                    let _ = tx.send(Event::Error {
                        message: format!(
                            "host {name}: the driver ended without saying bye: {}",
                            if tail.is_empty() {
                                "no output on stderr".to_string()
                            } else {
                                tail.join(" | ")
                            }
                        ),
                    });
                }
            });
        }
        let stdin = child.stdin.take();
        Ok((
            RemoteDriver {
                host: host.clone(),
                child,
                stdin,
                stderr,
                guard: None,
            },
            rx,
        ))
    }

    /// Once the driver said hello: kill it by pid if this process is interrupted.
    pub fn arm_cleanup(&mut self, pid: u32) {
        let h = self.host.clone();
        self.guard = Some(lifecycle::register(lifecycle::Phase::Remote, move || {
            let _ = h.run(&format!("kill -TERM {pid} 2>/dev/null; true"));
        }));
    }

    pub fn send(&mut self, c: &Command) -> Result<(), String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| format!("host {}: the driver's input is closed", self.host.name))?;
        let mut line = serde_json::to_string(c).map_err(|e| e.to_string())?;
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| {
                format!(
                    "host {}: sending to the driver: {e} (stderr: {})",
                    self.host.name,
                    self.stderr_tail()
                )
            })
    }

    fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .map(|v| v.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }

    /// Close its input and reap ssh (killed if it lingers).
    pub fn finish(mut self) {
        self.stdin = None;
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                self.guard = None;
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RemoteDriver {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
