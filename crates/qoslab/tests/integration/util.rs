//! Shared test machinery: a running `qoslab serve` (the [`Node`] guard), running external
//! tools with a time limit, fio, and deterministic data patterns.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::json::Json;

/// The qoslab binary under test (built by cargo for this test target).
pub const QOSLAB: &str = env!("CARGO_BIN_EXE_qoslab");

/// How long `qoslab serve` may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a SIGTERMed node may take to exit in `stop()`.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

const TOOLS_HINT: &str = "run the project's test script, scripts/test.sh, which installs the \
     integration-test tools (fio with the nbd ioengine, libnbd-bin for nbdinfo/nbdcopy, \
     qemu-utils for qemu-img, nbdkit); these tests never skip";

/// Whether `tool ARG` runs and exits 0 (output discarded).
fn runs_ok(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Fail (never skip) unless `tool` can be run.
pub fn require_tool(tool: &str) {
    let ok = runs_ok(tool, "--version");
    assert!(
        ok,
        "required tool `{tool}` is not installed or does not run: {TOOLS_HINT}"
    );
}

/// Fail (never skip) unless every program in `tools` is on PATH (scripts/install-deps.sh
/// installs them).
pub fn require_on_path(tools: &[&str]) {
    for t in tools {
        assert!(
            on_path(t),
            "`{t}` is not installed: run scripts/install-deps.sh (these tests never skip)"
        );
    }
}

/// Whether a program `tool` is in one of PATH's directories.
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// Fail unless fio is installed and was built with the nbd ioengine.
pub fn require_fio_nbd() {
    require_tool("fio");
    let ok = runs_ok("fio", "--enghelp=nbd");
    assert!(
        ok,
        "fio has no `nbd` ioengine (it must be built with libnbd): {TOOLS_HINT}"
    );
}

/// The workspace's temporary-directory guard (test-support), under the name these tests use.
pub use test_support::TestDir as TempDir;

/// A `qoslab serve` process on a unix socket in its own temp dir; killed and cleaned up
/// on drop.
pub struct Node {
    // Declared first so it is dropped after `Drop::drop` has killed the child.
    dir: TempDir,
    config: PathBuf,
    socket: PathBuf,
    child: Option<Child>,
    starts: u32,
    ready: Vec<String>,
    /// Extra `qoslab serve` arguments (see [`Node::start_with`]).
    extra: Vec<String>,
}

impl Node {
    /// Write `config_toml` as node.toml in a fresh temp dir and start a node on it.
    pub fn start(config_toml: &str) -> Node {
        Node::start_with(config_toml, &[])
    }

    /// Like [`Node::start`], with extra `qoslab serve` flags. Unless they include
    /// `--listen-http`, the REST API listens on a free loopback port ([`Node::api_url`]),
    /// over plain HTTP (`--insecure-http`: most tests speak raw HTTP/1.1 bytes);
    /// [`Node::start_https`] keeps the node's default, HTTPS.
    pub fn start_with(config_toml: &str, extra: &[&str]) -> Node {
        Node::start_in(TempDir::new("node"), config_toml, extra)
    }

    /// A node with the API on HTTPS (its certificate generated in the data dir).
    pub fn start_https(config_toml: &str, extra: &[&str]) -> Node {
        Node::start_https_in(TempDir::new("node"), config_toml, extra)
    }

    /// Like [`Node::start_with`], in `dir` (its data directory `dir/data`).
    pub fn start_in(dir: TempDir, config_toml: &str, extra: &[&str]) -> Node {
        let mut args: Vec<&str> = extra.to_vec();
        if !args.contains(&"--insecure-http") {
            args.push("--insecure-http");
        }
        Node::start_https_in(dir, config_toml, &args)
    }

    pub fn start_https_in(dir: TempDir, config_toml: &str, extra: &[&str]) -> Node {
        let config = dir.join("node.toml");
        fs::write(&config, config_toml).expect("writing node.toml");
        let socket = dir.join("nbd.sock");
        let mut node = Node {
            dir,
            config,
            socket,
            child: None,
            starts: 0,
            ready: Vec::new(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        if !node.extra.iter().any(|a| a == "--listen-http") {
            node.extra.push("--listen-http".into());
            node.extra.push("127.0.0.1:0".into());
        }
        node.spawn();
        node
    }

    fn stderr_path(&self) -> PathBuf {
        self.dir.join(format!("stderr.{}.log", self.starts))
    }

    fn spawn(&mut self) {
        assert!(self.child.is_none(), "node already running");
        self.starts += 1;
        let stderr = fs::File::create(self.stderr_path()).expect("creating stderr log");
        let mut child = Command::new(QOSLAB)
            .arg("serve")
            .arg("--config")
            .arg(&self.config)
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--listen-unix")
            .arg(&self.socket)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {QOSLAB}: {e}"));
        // Forward stdout lines; keep draining after "ready" so the node never blocks.
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        self.child = Some(child);
        let deadline = Instant::now() + READY_TIMEOUT;
        self.ready.clear();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    let is_ready = line.starts_with("qoslab: ready");
                    self.ready.push(line);
                    if is_ready {
                        // Collect the per-volume lines printed with it.
                        while let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
                            self.ready.push(l);
                        }
                        return;
                    }
                }
                Err(e) => {
                    let status = self
                        .child
                        .as_mut()
                        .and_then(|c| c.try_wait().ok().flatten());
                    self.kill();
                    panic!(
                        "qoslab serve did not print `qoslab: ready` ({}; exit status {status:?})\n\
                         stdout so far: {:?}\nstderr:\n{}",
                        match e {
                            mpsc::RecvTimeoutError::Timeout =>
                                format!("timed out after {READY_TIMEOUT:?}"),
                            mpsc::RecvTimeoutError::Disconnected => "stdout closed".into(),
                        },
                        self.ready,
                        self.stderr()
                    );
                }
            }
        }
    }

    /// Base URL of the node's REST API (from its `qoslab: api: URL` line).
    pub fn api_url(&self) -> String {
        self.listener("api").to_string()
    }

    /// Where the node's `front` (`api`, `nfs`, `s3`, `iscsi`) listens: the first word of
    /// its `qoslab: FRONT: ADDR ...` startup line.
    pub fn listener(&self, front: &str) -> &str {
        self.listener_word(front)
            .unwrap_or_else(|| panic!("no `qoslab: {front}:` line in {:?}", self.ready))
    }

    /// The port of `listener(front)` (its ADDR is `HOST:PORT`).
    pub fn listener_port(&self, front: &str) -> u16 {
        self.listener_word(front)
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no `qoslab: {front}:` line in {:?}", self.ready))
    }

    fn listener_word(&self, front: &str) -> Option<&str> {
        let prefix = format!("qoslab: {front}: ");
        self.ready
            .iter()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|l| l.split_whitespace().next())
    }

    /// Replace node.toml (takes effect at the next start).
    pub fn rewrite_config(&self, config_toml: &str) {
        fs::write(&self.config, config_toml).expect("writing node.toml");
    }

    /// Send SIGKILL and reap the process (a crash: nothing is flushed or synced).
    pub fn kill9(&mut self) {
        self.kill();
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// NBD URI of a volume on this node.
    pub fn uri(&self, vol: &str) -> String {
        format!("nbd+unix:///{vol}?socket={}", self.socket.display())
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The backing file of a volume.
    pub fn volume_file(&self, vol: &str) -> PathBuf {
        self.data_dir().join("volumes").join(format!("{vol}.img"))
    }

    /// A scratch path in the node's temp dir (removed with it).
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Write `data` at the start of volume `vol` with nbdcopy (from the scratch file
    /// `src.img`; nbdcopy flushes the volume at the end), `limit` at the most.
    pub fn nbdcopy_in(&self, vol: &str, data: &[u8], limit: Duration) {
        let src = self.scratch("src.img");
        fs::write(&src, data).expect("writing src.img");
        run(Command::new("nbdcopy").arg(&src).arg(self.uri(vol)), limit).ok();
    }

    /// The ready line and the per-volume lines printed at startup.
    pub fn ready_output(&self) -> &[String] {
        &self.ready
    }

    /// Everything the current (or last) process wrote to stderr.
    pub fn stderr(&self) -> String {
        fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("node is not running").id()
    }

    /// Send a signal by name ("TERM", "INT", "KILL") with kill(1).
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .expect("running kill");
        assert!(st.success(), "kill -{sig} {} failed", self.pid());
    }

    /// Wait up to `timeout` for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut().expect("node is not running");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = child.try_wait().expect("waiting for qoslab") {
                self.child = None;
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM and wait for exit; panics (with stderr) if it takes longer than 20 s.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal("TERM");
        match self.wait_exit(STOP_TIMEOUT) {
            Some(st) => st,
            None => {
                self.kill();
                panic!(
                    "qoslab did not exit within {STOP_TIMEOUT:?} of SIGTERM; stderr:\n{}",
                    self.stderr()
                );
            }
        }
    }

    /// Start the node again (same config, data dir and socket) after `stop()`.
    pub fn start_again(&mut self) {
        self.spawn();
    }

    /// Panics unless the process is still running.
    pub fn assert_alive(&mut self) {
        let child = self.child.as_mut().expect("node is not running");
        if let Some(st) = child.try_wait().expect("try_wait") {
            self.child = None;
            panic!("qoslab died: {st}; stderr:\n{}", self.stderr());
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let err = self.stderr();
            let tail: Vec<&str> = err.lines().rev().take(40).collect();
            eprintln!("---- qoslab stderr (last 40 lines) ----");
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
    }
}

/// Captured result of an external command.
pub struct Out {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub what: String,
}

impl Out {
    /// Panics, showing the command and its output, unless it exited 0.
    pub fn ok(self) -> Out {
        assert!(self.status.success(), "{self}");
        self
    }

    /// Assert the command exited 2: what qoslab does for a usage error or a request the
    /// node refused.
    pub fn refused(self) -> Out {
        assert_eq!(self.status.code(), Some(2), "{self}");
        self
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} exited with {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.what, self.status, self.stdout, self.stderr
        )
    }
}

/// Run a command to completion with a time limit (killed and failed past it).
pub fn run(cmd: &mut Command, timeout: Duration) -> Out {
    let what = format!("{cmd:?}");
    let (_, o) = crate::bench_util::spawn_within(cmd, &what, timeout)
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}: {TOOLS_HINT}"));
    Out {
        status: o.status,
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        what,
    }
}

/// fio's result for one (group-reported) job.
pub struct FioResult {
    pub json: Json,
    pub out: String,
}

impl FioResult {
    fn job(&self) -> &Json {
        self.json.at("jobs.0")
    }
    /// IOPS in direction `dir` ("read", "write", "trim").
    pub fn iops(&self, dir: &str) -> f64 {
        self.job().at(dir).at("iops").f64()
    }
    /// Bandwidth in MiB/s (fio's JSON `bw` is KiB/s).
    pub fn mib_s(&self, dir: &str) -> f64 {
        self.job().at(dir).at("bw").f64() / 1024.0
    }
    pub fn ios(&self, dir: &str) -> u64 {
        self.job().at(dir).at("total_ios").u64()
    }
    /// Direction `dir` ran (IOPS above 0) and completed exactly `ios` I/Os (`what` names
    /// the pass in a failure).
    pub fn assert_ios(&self, dir: &str, ios: u64, what: &str) {
        assert!(self.iops(dir) > 0.0, "{what}: {dir} IOPS\n{}", self.out);
        assert_eq!(self.ios(dir), ios, "{what}\n{}", self.out);
    }
}

/// The common part of every fio command line: nbd engine, this URI, JSON to stdout.
pub fn fio_command(uri: &str, args: &[&str]) -> Command {
    let mut c = Command::new("fio");
    c.arg("--name=job")
        .arg("--ioengine=nbd")
        .arg(format!("--uri={uri}"))
        .arg("--group_reporting")
        .arg("--output-format=json")
        // No verify state files in the working directory.
        .arg("--verify_state_save=0")
        .current_dir(std::env::temp_dir());
    c.args(args);
    c
}

/// Run fio (nbd engine) against `uri` with job options `args`; asserts exit status 0 and
/// `error == 0` in every job of the JSON report.
pub fn fio(uri: &str, args: &[&str]) -> FioResult {
    require_fio_nbd();
    let out = run(&mut fio_command(uri, args), Duration::from_secs(120));
    let json = Json::parse_from_first_brace(&out.stdout)
        .unwrap_or_else(|e| panic!("fio printed no JSON report ({e})\n{out}"));
    assert!(out.status.success(), "{out}");
    for (i, job) in json.at("jobs").arr().iter().enumerate() {
        assert_eq!(
            job.at("error").u64(),
            0,
            "fio job {i} reported an error\n{out}"
        );
    }
    FioResult {
        json,
        out: format!("{out}"),
    }
}

/// Deterministic pseudo-random bytes (xorshift64*), different for each seed.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Index and values of the first difference between two byte strings, for messages.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("lengths differ: {} vs {}", a.len(), b.len()));
    }
    a.iter().zip(b).position(|(x, y)| x != y).map(|i| {
        format!(
            "first difference at byte {i}: {:#04x} vs {:#04x}",
            a[i], b[i]
        )
    })
}

/// Assert two byte strings are equal without printing megabytes on failure.
#[track_caller]
pub fn assert_same_bytes(what: &str, got: &[u8], want: &[u8]) {
    if let Some(d) = first_difference(got, want) {
        panic!("{what}: {d}");
    }
}

static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Serializes the tests that move a lot of data or measure rates, so that on a small
/// machine a rate measurement never shares the CPUs with a 64 MiB copy from this suite.
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|p| p.into_inner())
}

/// A node config of one plain 64 MiB volume, `vol`.
pub const VOL_64MIB: &str = "[[volume]]\nname = \"vol\"\nsize = \"64MiB\"\n";

/// A node config of one volume, `volume` (`size`), under one fixed policy, `policy`
/// (`limits`: its keys, as in `max_throughput_iops = 500`).
pub fn one_volume_config(policy: &str, limits: &str, volume: &str, size: &str) -> String {
    format!(
        "[[policy]]\nname = \"{policy}\"\nfixed = {{ {limits} }}\n\n\
         [[volume]]\nname = \"{volume}\"\nsize = \"{size}\"\npolicy = \"{policy}\"\n"
    )
}
