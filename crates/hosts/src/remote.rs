//! Long-lived processes on a host: iperf3 servers, `fio --server`.
//!
//! A process is started as `setsid timeout LEASE CMD` in the background, its output in a
//! log file under the suite's run directory on the host, its pid (= its process group, as
//! `setsid` made it a group leader) returned to us. Stopping sends SIGTERM to the group,
//! then SIGKILL if it lingers. Every process is stopped when its [`RemoteProc`] is dropped
//! and, through the process's [`lifecycle`] (remote phase), when the coordinator gets SIGINT/SIGTERM/SIGHUP; the lease
//! ends it even if the coordinator is killed outright.

use std::time::{Duration, Instant};

use crate::error::{ErrorKind, HostError};
use crate::quote;
use crate::ssh::{tail, Host};

/// A process running on a host until stopped (or its lease ends).
#[derive(Debug)]
pub struct RemoteProc {
    host: Host,
    pub label: String,
    pub pid: u32,
    pub log_path: String,
    stopped: bool,
    _guard: lifecycle::Guard,
}

/// The script that stops process group `pid`: TERM, KILL after ~2 s, and it waits (up to
/// ~12 s) until the group is gone, so a caller that checks right after finds nothing.
fn stop_script(pid: u32) -> String {
    format!(
        "kill -TERM -{pid} 2>/dev/null || exit 0; i=0; while kill -0 -{pid} 2>/dev/null; do \
         i=$((i+1)); [ $i -eq 20 ] && kill -KILL -{pid} 2>/dev/null; [ $i -ge 120 ] && break; \
         sleep 0.1; done; true"
    )
}

impl RemoteProc {
    /// Start `cmd` (a shell command line) on `host` in `rundir` (created if needed), for at
    /// most `lease`. `label` names its log file (`rundir/label.log`).
    pub fn start(
        host: &Host,
        rundir: &str,
        label: &str,
        cmd: &str,
        lease: Duration,
    ) -> Result<RemoteProc, HostError> {
        let dir = quote(rundir);
        let log = format!("{rundir}/{label}.log");
        let script = format!(
            "mkdir -p {dir} && cd {dir} && {{ setsid timeout -s TERM {} sh -c {} >{} 2>&1 </dev/null & echo $!; }}",
            lease.as_secs().max(1),
            quote(&format!("exec {cmd}")),
            quote(&log)
        );
        let out = host.run_ok(&script)?;
        let pid: u32 = out.trim().parse().map_err(|_| {
            host.err(ErrorKind::Parse {
                what: format!("pid of {label}"),
                detail: format!("{out:?}"),
            })
        })?;
        let (h, p) = (host.clone(), pid);
        let guard = lifecycle::register(lifecycle::Phase::Remote, move || {
            let _ = h.run(&stop_script(p));
        });
        Ok(RemoteProc {
            host: host.clone(),
            label: label.to_string(),
            pid,
            log_path: log,
            stopped: false,
            _guard: guard,
        })
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Wait until something on the host listens on TCP `port` (the process's log is in the
    /// error if it died or never listened).
    pub fn wait_listening(&self, port: u16, timeout: Duration) -> Result<(), HostError> {
        // /proc/net/tcp{,6}: local address "ADDR:PORT" in hex, state 0A = LISTEN.
        let pat = format!(":{port:04X} [0-9A-F:]* 0A ");
        let script = format!(
            "grep -q {} /proc/net/tcp /proc/net/tcp6 2>/dev/null && echo up || {{ kill -0 {} 2>/dev/null && echo wait || echo dead; }}",
            quote(&pat),
            self.pid
        );
        let start = Instant::now();
        loop {
            let state = self.host.run_ok(&script)?;
            match state.trim() {
                "up" => return Ok(()),
                "dead" => {
                    return Err(self.host.err(ErrorKind::Other(format!(
                        "{} exited before listening on port {port}: {}",
                        self.label,
                        self.log_tail()
                    ))))
                }
                _ if start.elapsed() > timeout => {
                    return Err(self.host.err(ErrorKind::Other(format!(
                        "{} did not listen on port {port} within {timeout:?}: {}",
                        self.label,
                        self.log_tail()
                    ))))
                }
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// Whether the process is still running.
    pub fn alive(&self) -> bool {
        self.host
            .run(&format!("kill -0 -{}", self.pid))
            .map(|o| o.code == 0)
            .unwrap_or(false)
    }

    /// The last lines of the process's output.
    pub fn log_tail(&self) -> String {
        self.host
            .run(&format!("tail -n 5 {}", quote(&self.log_path)))
            .map(|o| tail(&o.stdout, 5))
            .unwrap_or_default()
    }

    /// Stop the process (idempotent).
    pub fn stop(&mut self) -> Result<(), HostError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        self.host.run_ok(&stop_script(self.pid)).map(|_| ())
    }
}

impl Drop for RemoteProc {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// `iperf3 -s -p PORT`, listening.
pub fn iperf3_server(
    host: &Host,
    rundir: &str,
    port: u16,
    lease: Duration,
) -> Result<RemoteProc, HostError> {
    let name = format!("iperf3-{port}");
    listening(
        host,
        rundir,
        &name,
        &format!("iperf3 -s -p {port}"),
        port,
        lease,
    )
}

/// `fio --server=,PORT` (all addresses), listening.
pub fn fio_server(
    host: &Host,
    rundir: &str,
    port: u16,
    lease: Duration,
) -> Result<RemoteProc, HostError> {
    let name = format!("fio-server-{port}");
    listening(
        host,
        rundir,
        &name,
        &format!("fio --server=,{port}"),
        port,
        lease,
    )
}

/// A server `cmd` started as `name`, once it listens on `port` (within 10 s).
fn listening(
    host: &Host,
    rundir: &str,
    name: &str,
    cmd: &str,
    port: u16,
    lease: Duration,
) -> Result<RemoteProc, HostError> {
    let p = RemoteProc::start(host, rundir, name, cmd, lease)?;
    p.wait_listening(port, Duration::from_secs(10))?;
    Ok(p)
}

/// Remove a run directory on a host (best effort).
pub fn remove_rundir(host: &Host, rundir: &str) {
    if rundir.len() > 5 && rundir.starts_with('/') {
        let _ = host.run(&format!("rm -rf -- {}", quote(rundir)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::free_port;

    fn pids_of(pattern: &str) -> String {
        let o = std::process::Command::new("pgrep")
            .args(["-f", pattern])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    #[test]
    fn a_local_server_listens_and_is_stopped_on_drop() {
        let h = Host::local();
        let dir = std::env::temp_dir().join(format!("qoslab-remote-{}", std::process::id()));
        let dir = dir.display().to_string();
        // Removed when the test ends, passing or not.
        struct Rundir<'a>(&'a Host, &'a str);
        impl Drop for Rundir<'_> {
            fn drop(&mut self) {
                remove_rundir(self.0, self.1);
            }
        }
        let _rundir = Rundir(&h, &dir);
        let port = free_port();
        // A listener that needs nothing but python3 (a test dependency already).
        let cmd = format!(
            "python3 -c 'import socket,time; s=socket.socket(); s.bind((\"127.0.0.1\",{port})); s.listen(); time.sleep(600)' qoslab-remote-test-{port}"
        );
        let p = RemoteProc::start(&h, &dir, "listener", &cmd, Duration::from_secs(60)).unwrap();
        p.wait_listening(port, Duration::from_secs(10)).unwrap();
        assert!(p.alive());
        let pat = format!("qoslab-remote-test-{port}");
        assert!(!pids_of(&pat).is_empty());
        drop(p);
        assert_eq!(pids_of(&pat), "", "stopped with its process group");
        let bad = RemoteProc::start(
            &h,
            &dir,
            "bad",
            "sh -c 'echo boom; exit 1'",
            Duration::from_secs(5),
        )
        .unwrap();
        let e = bad
            .wait_listening(free_port(), Duration::from_secs(5))
            .unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
    }
}
