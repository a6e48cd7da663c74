//! What the tenants tests share: the tools they require, the processes and loop devices
//! they watch, the `[tenants]` table of their plans, a process's exit after a signal and
//! the report's charts rendered in headless Chromium.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bench_util::{cell, report_last, table, Dir, QOSLAB};
use crate::report::{assert_page_whole, png_size, render};
/// (Shared with the other suites: it lives in util.)
pub use crate::util::require_on_path;

/// The tools of the build and broker applications on mounted file systems, and ActiveMQ.
pub fn require_app_tools() {
    require_on_path(&[
        "nbdfuse",
        "losetup",
        "mkfs.ext4",
        "gcc",
        "make",
        "ar",
        "java",
    ]);
    assert!(
        Path::new(loadgen::apps::broker::activemq::HOME)
            .join("bin/activemq.jar")
            .is_file(),
        "ActiveMQ is not installed (Debian package activemq): run scripts/install-deps.sh"
    );
}

/// Live (not zombie) processes whose command line starts with `program` and names a path
/// under `base` (nbdfuse serving a run there; brokers and clients whose data is there).
pub fn processes_under(program: &str, base: &Path) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'));
            let cmd = String::from_utf8_lossy(&cmd);
            !zombie && cmd.starts_with(program) && cmd.contains(&*base.to_string_lossy())
        })
        .count()
}

/// Live JVMs (brokers and their clients) whose command line names a path under `base`.
pub fn java_under(base: &Path) -> usize {
    processes_under("java", base)
}

/// A plan's `[tenants]` table: `points`, one iteration, a 5-minute limit, mounts and
/// caches under the test's directory, then `extra` lines.
pub fn tenants_table(dir: &Dir, points: &str, extra: &str) -> String {
    format!(
        "[tenants]\npoints = {points}\niterations = 1\ntimeout = \"5m\"\nbase_dir = \"{d}/mounts\"\ncache_dir = \"{d}/cache\"\n{extra}\n",
        d = dir.path().display()
    )
}

/// The summary table of a run on a target whose QoS is its own: `n` rows (points x
/// classes), each with no failure, a positive mean and the QoS named as the target's.
pub fn summary_on_a_target(run: &Value, n: usize) -> &Value {
    let s = table(run, "tenants", "summary");
    let rows = s["rows"].as_array().unwrap();
    assert_eq!(rows.len(), n, "points x classes: {s}");
    for r in rows {
        assert_eq!(cell(s, r, "failed"), 0, "{r}");
        assert!(cell(s, r, "mean").as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(
            cell(s, r, "qos"),
            "not enforced by qoslab: the target's own",
            "{r}"
        );
    }
    s
}

/// Loop devices over sparse files in a test directory, detached on drop.
pub struct Loops(pub Vec<String>);

impl Loops {
    /// `sizes[i]` bytes for the i-th device.
    pub fn new(dir: &Dir, sizes: &[u64]) -> Loops {
        let mut v = Loops(Vec::new());
        for (i, size) in sizes.iter().enumerate() {
            let f = dir.path().join(format!("disk{i}.img"));
            std::fs::File::create(&f).unwrap().set_len(*size).unwrap();
            let o = std::process::Command::new("losetup")
                .args(["-f", "--show"])
                .arg(&f)
                .output()
                .unwrap();
            assert!(o.status.success(), "losetup: {o:?}");
            v.0.push(String::from_utf8(o.stdout).unwrap().trim().to_string());
        }
        v
    }

    /// The devices as `--target` takes them.
    pub fn target(&self) -> String {
        self.0.join(",")
    }
}

impl Drop for Loops {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = std::process::Command::new("losetup")
                .args(["-d", d])
                .status();
        }
    }
}

/// A sweep of 2 broker tenants producing for 120 s (`args`: more `bench` arguments, e.g.
/// `--target`), started in the background; returns once both brokers and their producers
/// and consumers (6 JVMs) run.
pub fn start_broker_sweep(dir: &Dir, args: &[&str]) -> Child {
    let plan = dir.write(
        "plan.toml",
        &format!(
            "{}\n[[class]]\nname = \"amq\"\nsize = \"256MiB\"\napp = \"broker\"\nbroker = {{ secs = 120 }}\n",
            tenants_table(dir, "[2]", "")
        ),
    );
    let log = dir.path().join("out.log");
    let mut child = Command::new(QOSLAB)
        .args(["--log-level", "warn", "bench"])
        .arg(&plan)
        .args(["--db", "r.db"])
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(log.with_extension("err")).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(240);
    while java_under(dir.path()) < 6 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "qoslab exited early: {}",
            std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
        );
        assert!(
            Instant::now() < deadline,
            "the brokers and their clients did not all start within 240 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

/// Send `sig` to `child` and wait (at most `limit`) for it to exit.
pub fn signal_and_wait(child: &mut Child, sig: i32, limit: Duration) -> ExitStatus {
    // SAFETY: signalling our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, sig) };
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("qoslab did not exit within {limit:?} of signal {sig}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `qoslab report` of the last run in `dir/r.db`, rendered by headless Chromium: every
/// chart the page expects is drawn, `titles` are among them, no console error, and the
/// screenshot has the window's size. Returns the dumped DOM.
pub fn report_draws_its_charts(dir: &Dir, titles: &[&str]) -> String {
    crate::util::require_tool("chromium");
    let (report, _) = report_last(dir, "r.db", "report.html", Duration::from_secs(60));
    let (dom, stderr, png) = render(dir.path(), &report, "1280,3000");
    let expected = assert_page_whole(&dom, &stderr, "the tenants report");
    assert!(expected >= titles.len(), "{expected} charts expected");
    for t in titles {
        assert!(
            dom.contains(t),
            "chart {t:?} missing from the rendered report"
        );
    }
    assert_eq!(png_size(&png), (1280, 3000));
    dom
}
