//! Reaching a host: the `ssh` binary (OpenSSH) with connection multiplexing, or the local
//! shell for `localhost`.
//!
//! Options the user passes (`-F FILE`, `-o Port=2222`, `-i KEY`, `-J JUMP`) go before
//! qoslab's own, and ssh takes the first value it is given for an option, so the user's
//! win. qoslab adds `BatchMode=yes` (never prompt: a missing key is an error, not a hang),
//! `ConnectTimeout`, and `ControlMaster=auto` + `ControlPath` + `ControlPersist` so every
//! command after the first reuses one connection per host.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{classify_ssh, ErrorKind, HostError};

/// `ssh -o` options a plan file may set (case-insensitive): how to reach and authenticate
/// to its hosts. Everything else is refused in a plan (`-o ProxyCommand=...` and
/// `LocalCommand` run programs here, `ControlPath` and `UserKnownHostsFile` write paths):
/// the command line's `--ssh-opt` is the user's own and takes any.
pub const PLAN_SSH_OPTIONS: &[&str] = &[
    "Port",
    "User",
    "IdentityFile",
    "IdentitiesOnly",
    "ConnectTimeout",
    "ConnectionAttempts",
    "ServerAliveInterval",
    "ServerAliveCountMax",
    "StrictHostKeyChecking",
    "BatchMode",
    "Compression",
    "LogLevel",
    "AddressFamily",
    "TCPKeepAlive",
    "HostKeyAlias",
    "HostKeyAlgorithms",
    "Ciphers",
    "MACs",
    "KexAlgorithms",
    "PubkeyAcceptedAlgorithms",
    "PreferredAuthentications",
    "ProxyJump",
];

/// Whether ssh arguments from a plan file are all allowed: `-o KEY=VALUE` or `-oKEY=VALUE`
/// with KEY in [`PLAN_SSH_OPTIONS`], `-p PORT`, `-l USER`, `-i FILE`, `-J JUMP`. `Err`
/// names the first that is not, and why.
pub fn check_plan_options(args: &[String]) -> Result<(), String> {
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.strip_prefix('-') {
            Some(rest) if !rest.is_empty() => rest.split_at(1),
            _ => return Err(format!("{a:?}: not an ssh option")),
        };
        let value = if inline.is_empty() {
            it.next()
                .ok_or_else(|| format!("{a:?}: its value is missing"))?
                .as_str()
        } else {
            inline
        };
        match flag {
            "p" | "l" | "i" | "J" => {}
            "o" => {
                let key = value.split(['=', ' ']).next().unwrap_or_default();
                if !PLAN_SSH_OPTIONS.iter().any(|k| k.eq_ignore_ascii_case(key)) {
                    return Err(format!(
                        "-o {value:?}: a plan may set only {} (ProxyCommand and LocalCommand \
                         run programs here; give other options on the command line with \
                         --ssh-opt)",
                        PLAN_SSH_OPTIONS.join(", ")
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "-{flag}: a plan may give -o KEY=VALUE, -p, -l, -i or -J (others on the \
                     command line with --ssh-opt)"
                ))
            }
        }
    }
    Ok(())
}

/// How hosts are reached over ssh.
#[derive(Debug, Clone)]
pub struct SshConfig {
    /// The ssh binary.
    pub ssh: String,
    /// Options passed to every ssh invocation before qoslab's own (they take precedence).
    pub options: Vec<String>,
    pub connect_timeout: Duration,
    /// Where the control sockets live (`None`: no multiplexing). Keep the path short: a unix
    /// socket path is at most 107 bytes and ssh appends a 40-character hash.
    pub control_dir: Option<PathBuf>,
    /// How long an idle master connection stays up.
    pub persist: Duration,
}

impl Default for SshConfig {
    fn default() -> SshConfig {
        SshConfig {
            ssh: "ssh".into(),
            options: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            control_dir: Some(
                std::env::temp_dir().join(format!("qoslab-ssh-{}", std::process::id())),
            ),
            persist: Duration::from_secs(60),
        }
    }
}

impl SshConfig {
    /// The arguments before the destination.
    fn args(&self) -> Vec<String> {
        let mut a = self.options.clone();
        a.extend(
            [
                "-o",
                "BatchMode=yes",
                "-o",
                &format!("ConnectTimeout={}", self.connect_timeout.as_secs().max(1)),
            ]
            .map(String::from),
        );
        if let Some(dir) = &self.control_dir {
            a.extend([
                "-o".into(),
                "ControlMaster=auto".into(),
                "-o".into(),
                format!("ControlPath={}/%C", dir.display()),
                "-o".into(),
                format!("ControlPersist={}", self.persist.as_secs().max(1)),
            ]);
        }
        a
    }
}

/// How commands reach a host.
#[derive(Debug, Clone)]
pub enum Transport {
    /// `sh -c` on this machine.
    Local,
    Ssh(Arc<SshConfig>),
}

/// One machine of a suite.
#[derive(Debug, Clone)]
pub struct Host {
    /// As the user named it: an ssh destination (alias, `user@host`) or `localhost`.
    pub name: String,
    /// The address peers and the coordinator use for data (iperf3, fio client/server).
    pub addr: String,
    pub transport: Transport,
}

/// A finished command.
#[derive(Debug, Clone)]
pub struct Output {
    /// The exit status (`-1` when killed by a signal).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Host {
    /// This machine, without ssh.
    pub fn local() -> Host {
        Host {
            name: "localhost".into(),
            addr: "127.0.0.1".into(),
            transport: Transport::Local,
        }
    }

    /// A host reached over ssh; `addr` is resolved with `ssh -G` when not given.
    pub fn ssh(name: &str, addr: Option<&str>, cfg: Arc<SshConfig>) -> Result<Host, HostError> {
        if let Some(dir) = &cfg.control_dir {
            create_private_dir(dir).map_err(|e| {
                HostError::new(
                    name,
                    ErrorKind::Spawn(format!("control dir {}", dir.display()), e),
                )
            })?;
        }
        let addr = match addr {
            Some(a) => a.to_string(),
            None => resolve_hostname(name, &cfg)?,
        };
        Ok(Host {
            name: name.into(),
            addr,
            transport: Transport::Ssh(cfg),
        })
    }

    /// The command that runs `script` on the host (through the remote user's shell).
    pub fn command(&self, script: &str) -> Command {
        match &self.transport {
            Transport::Local => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(script);
                c
            }
            Transport::Ssh(cfg) => {
                let mut c = Command::new(&cfg.ssh);
                c.args(cfg.args()).arg(&self.name).arg("--").arg(script);
                c
            }
        }
    }

    /// Run `script` and wait; a failing ssh (not the remote command) is an error.
    pub fn run(&self, script: &str) -> Result<Output, HostError> {
        self.run_with_input(script, None)
    }

    /// Like [`Host::run`], feeding `input` to the command's stdin.
    pub fn run_with_input(&self, script: &str, input: Option<&[u8]>) -> Result<Output, HostError> {
        let mut cmd = self.command(script);
        cmd.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child =
            lifecycle::children::spawn(&mut cmd, lifecycle::children::OnParentDeath::Term)
                .map_err(|e| self.err(ErrorKind::Spawn(self.program(), e)))?;
        if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
            let data = data.to_vec();
            // A thread, so a remote command that does not read its input cannot block us.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&data);
            });
        }
        let out = child
            .wait_with_output()
            .map_err(|e| self.err(ErrorKind::Spawn(self.program(), e)))?;
        let o = Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        if o.code == 255 && matches!(self.transport, Transport::Ssh(_)) {
            if let Some(kind) = classify_ssh(&o.stderr) {
                return Err(self.err(kind));
            }
        }
        Ok(o)
    }

    /// Run `script`; a non-zero exit is an error carrying its stderr. Returns stdout.
    pub fn run_ok(&self, script: &str) -> Result<String, HostError> {
        let o = self.run(script)?;
        if o.code != 0 {
            return Err(self.err(ErrorKind::Command {
                cmd: short(script),
                code: o.code,
                stderr: tail(&o.stderr, 6),
            }));
        }
        Ok(o.stdout)
    }

    pub fn err(&self, kind: ErrorKind) -> HostError {
        HostError::new(self.name.clone(), kind)
    }

    fn program(&self) -> String {
        match &self.transport {
            Transport::Local => "sh".into(),
            Transport::Ssh(c) => c.ssh.clone(),
        }
    }

    pub fn is_local(&self) -> bool {
        matches!(self.transport, Transport::Local)
    }

    /// Close the multiplexed master connection (`ssh -O exit`), if any.
    pub fn disconnect(&self) {
        if let Transport::Ssh(cfg) = &self.transport {
            if cfg.control_dir.is_some() {
                let _ = Command::new(&cfg.ssh)
                    .args(cfg.args())
                    .args(["-O", "exit"])
                    .arg(&self.name)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

/// Close every host's master connection and remove the control directories left empty
/// (`/tmp/qoslab-ssh-PID`): a master unlinks its socket as it exits, so the directory is
/// removed once the last one is gone (waiting up to ~2 s for them).
pub fn disconnect_all(hosts: &[Host]) {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for h in hosts {
        h.disconnect();
        if let Transport::Ssh(cfg) = &h.transport {
            if let Some(d) = &cfg.control_dir {
                if !dirs.contains(d) {
                    dirs.push(d.clone());
                }
            }
        }
    }
    for d in dirs {
        for _ in 0..40 {
            match std::fs::remove_dir(&d) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                // Not empty yet (a master still exiting) or still in use by another set
                // of hosts of this process: try again shortly, then leave it.
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}

/// The hostname ssh would connect to for `dest` after applying its config (`ssh -G`).
fn resolve_hostname(dest: &str, cfg: &SshConfig) -> Result<String, HostError> {
    let out = lifecycle::children::output(
        Command::new(&cfg.ssh)
            .args(&cfg.options)
            .arg("-G")
            .arg(dest),
        lifecycle::children::OnParentDeath::Term,
    )
    .map_err(|e| HostError::new(dest, ErrorKind::Spawn(cfg.ssh.clone(), e)))?;
    if !out.status.success() {
        return Err(HostError::new(
            dest,
            ErrorKind::Ssh(tail(&String::from_utf8_lossy(&out.stderr), 3)),
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("hostname ").map(|h| h.trim().to_string()))
        .ok_or_else(|| {
            HostError::new(
                dest,
                ErrorKind::Parse {
                    what: "ssh -G".into(),
                    detail: "no hostname line".into(),
                },
            )
        })
}

fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Parse a host list: `NAME[=ADDR],...`. `NAME` is an ssh destination or `localhost`;
/// `ADDR` is the data address peers use (default: the HostName ssh resolves for `NAME`).
pub fn parse_hosts(list: &str, cfg: Arc<SshConfig>) -> Result<Vec<Host>, HostError> {
    let mut hosts: Vec<Host> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, addr) = match item.split_once('=') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (item, None),
        };
        if name.is_empty() || name.starts_with('-') || name.contains(char::is_whitespace) {
            return Err(HostError::new(
                item,
                ErrorKind::Other(format!(
                    "not a host name: {item:?} (expected NAME or NAME=ADDRESS, comma-separated)"
                )),
            ));
        }
        if hosts.iter().any(|h| h.name == name) {
            return Err(HostError::new(name, ErrorKind::Other("named twice".into())));
        }
        let h = if name == "localhost" && addr.is_none() {
            Host::local()
        } else {
            Host::ssh(name, addr, cfg.clone())?
        };
        hosts.push(h);
    }
    if hosts.is_empty() {
        return Err(HostError::new(
            list,
            ErrorKind::Other("no hosts given".into()),
        ));
    }
    Ok(hosts)
}

pub(crate) fn short(script: &str) -> String {
    let s = script.trim().replace('\n', "; ");
    if s.chars().count() > 120 {
        format!("{}...", s.chars().take(117).collect::<String>())
    } else {
        s
    }
}

pub(crate) fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_options_come_first_so_they_win() {
        let cfg = SshConfig {
            options: vec![
                "-F".into(),
                "/x/cfg".into(),
                "-o".into(),
                "ConnectTimeout=3".into(),
            ],
            control_dir: Some("/tmp/c".into()),
            ..SshConfig::default()
        };
        let a = cfg.args();
        assert_eq!(&a[..4], ["-F", "/x/cfg", "-o", "ConnectTimeout=3"]);
        assert!(a.contains(&"ControlPath=/tmp/c/%C".to_string()));
        assert!(a.contains(&"BatchMode=yes".to_string()));
    }

    #[test]
    fn localhost_runs_locally() {
        let h = Host::local();
        let o = h.run("echo hi; echo err >&2; exit 3").unwrap();
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (3, "hi\n", "err\n")
        );
        let e = h.run_ok("echo nope >&2; exit 2").unwrap_err();
        assert!(e.to_string().contains("exited with 2: nope"), "{e}");
        let o = h.run_with_input("cat", Some(b"abc")).unwrap();
        assert_eq!(o.stdout, "abc");
    }

    #[test]
    fn host_lists() {
        let cfg = Arc::new(SshConfig {
            control_dir: None,
            ..SshConfig::default()
        });
        let hs = parse_hosts("localhost, a=10.0.0.2", cfg.clone()).unwrap();
        assert!(hs[0].is_local());
        assert_eq!(
            (hs[1].name.as_str(), hs[1].addr.as_str()),
            ("a", "10.0.0.2")
        );
        assert!(parse_hosts("a=1,a=2", cfg.clone()).is_err());
        assert!(parse_hosts(" , ", cfg.clone()).is_err());
        let e = parse_hosts("-oProxyCommand=x", cfg).unwrap_err();
        assert!(e.to_string().contains("not a host name"), "{e}");
    }
}

#[cfg(test)]
mod plan_option_tests {
    use super::check_plan_options;

    fn ok(a: &[&str]) -> bool {
        check_plan_options(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>()).is_ok()
    }

    #[test]
    fn a_plan_reaches_hosts_but_runs_nothing_here() {
        assert!(ok(&[
            "-oPort=2222",
            "-o",
            "User=lab",
            "-i",
            "key",
            "-p",
            "22",
            "-J",
            "jump"
        ]));
        assert!(ok(&["-o", "stricthostkeychecking=no"]));
        for bad in [
            &["-oProxyCommand=touch /tmp/x"][..],
            &["-o", "ProxyCommand touch /tmp/x"],
            &["-o", "LocalCommand=id", "-o", "PermitLocalCommand=yes"],
            &["-oControlPath=/etc/x"],
            &["-F", "cfg"],
            &["-o"],
            &["ProxyCommand=x"],
        ] {
            assert!(!ok(bad), "{bad:?}");
        }
    }
}
