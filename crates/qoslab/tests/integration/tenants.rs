//! Tenant file systems over a real `qoslab serve` node (seed 004): nbdfuse -> loop (direct
//! I/O) -> mkfs -> mount, as root, with real git, redis-server and fio on them. The life
//! cycle is owned end to end: a SIGTERM'ed run leaves nothing; a SIGKILL'ed one leaves
//! mounts, loops and nbdfuse that the next run (or `qoslab tenants cleanup`) undoes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use loadgen::apps::git::{build_repo, GitApp, RepoSpec};
use loadgen::apps::{App, FailureKind, TenantEnv};
use mounts::{AttachOptions, FsType, Session};

use crate::api_util::Api;
use crate::realtime::RealTime;
use crate::tenants_util::{processes_under, require_on_path};
use crate::util::{heavy, run, Node, TempDir, QOSLAB};

const CONFIG: &str = r#"
[[policy]]
name = "p200"
fixed = { max_throughput_iops = 200 }

[[volume]]
name = "big"
size = "1GiB"

[[volume]]
name = "xfs"
size = "512MiB"

[[volume]]
name = "tiny"
size = "24MiB"

[[volume]]
name = "limited"
size = "512MiB"
policy = "p200"
"#;

/// Fail (never skip) unless the tools are installed (scripts/install-deps.sh does it).
fn require_mount_tools() {
    require_on_path(&[
        "nbdfuse",
        "losetup",
        "mkfs.ext4",
        "mkfs.xfs",
        "git",
        "redis-server",
        "setpriv",
    ]);
}

/// Everything under `base` the kernel still has: mounts, loop devices, nbdfuse processes.
fn leftovers(base: &Path) -> (Vec<PathBuf>, Vec<(String, PathBuf)>, usize) {
    let nbdfuse = processes_under("nbdfuse", base);
    (
        mounts::sys::mounts_under(base),
        mounts::sys::loops_backed_under(base),
        nbdfuse,
    )
}

fn assert_nothing_left(base: &Path) {
    assert_nothing_left_after(base, None);
}

/// [`assert_nothing_left`] after the mount command that wrote `log` (its stdout; its
/// stderr beside it), whose words a failure shows.
fn assert_nothing_left_after(base: &Path, log: Option<&Path>) {
    let said = log.map_or_else(String::new, |l| {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!(
            "\nthe mount command's stdout:\n{}\nits stderr:\n{}",
            read(l),
            read(&l.with_extension("err"))
        )
    });
    let (m, l, n) = leftovers(base);
    assert!(
        m.is_empty() && l.is_empty() && n == 0,
        "left behind: mounts {m:?}, loops {l:?}, nbdfuse {n}{said}"
    );
    let runs: Vec<_> = std::fs::read_dir(base)
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(runs.is_empty(), "run directories left: {runs:?}{said}");
}

/// `qoslab tenants mount ... -- sh -c SCRIPT` in the background; returns once it printed
/// "ready" (the child and its stdout file).
fn spawn_mount(base: &Path, uris: &[String], script: &str, log: &Path) -> Child {
    let mut c = Command::new(QOSLAB);
    c.args(["tenants", "mount", "--base-dir"]).arg(base);
    for u in uris {
        c.arg("--nbd").arg(u);
    }
    c.args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(log).unwrap())
        .stderr(std::fs::File::create(log.with_extension("err")).unwrap());
    let child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(" ready")
    {
        assert!(
            Instant::now() < deadline,
            "mount not ready: {}",
            std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn wait(mut c: Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        if Instant::now() >= deadline {
            let _ = c.kill();
            panic!("qoslab tenants mount did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a `qoslab tenants mount` test starts from: the mount tools, a node of [`CONFIG`],
/// and a temp dir named `name` with the base directory the tenants' file systems go under.
fn mounting(name: &str) -> (Node, TempDir, PathBuf) {
    require_mount_tools();
    let node = Node::start(CONFIG);
    let dir = TempDir::new(name);
    let base = dir.join("base");
    (node, dir, base)
}

#[test]
fn mount_runs_a_command_on_ext4_and_xfs_and_leaves_nothing() {
    let (node, _dir, base) = mounting("tenants-mount");
    for (fs, vol) in [("ext4", "big"), ("xfs", "xfs")] {
        let out = run(
            Command::new(QOSLAB)
                .args(["tenants", "mount", "--fs", fs, "--base-dir"])
                .arg(&base)
                .args(["--nbd", &node.uri(vol), "--"])
                .args(["sh", "-c", "stat -f -c %T \"$QOSLAB_TENANT_0\" && dd if=/dev/zero of=\"$QOSLAB_TENANT_0/f\" bs=1M count=8 conv=fsync status=none && exit 7"]),
            Duration::from_secs(120),
        );
        assert_eq!(
            out.status.code(),
            Some(7),
            "the command's exit status is qoslab's: {out}"
        );
        assert!(out.stdout.contains(&format!("({fs} on /dev/loop")), "{out}");
        assert!(out.stdout.contains("direct I/O on"), "{out}");
        let want_type = if fs == "ext4" { "ext2/ext3" } else { "xfs" };
        assert!(out.stdout.contains(want_type), "statfs type: {out}");
        assert_nothing_left(&base);
    }
    // The data reached the volume: 8 MiB written through the file system are allocated.
    let used = Api::new(&node.api_url()).get_ok("/api/storage/volumes?name=big&fields=space");
    assert!(
        used["records"][0]["space"]["used"].as_u64().unwrap() >= 8 << 20,
        "{used}"
    );
}

#[test]
fn sigterm_tears_everything_down_and_sigkill_leftovers_are_cleaned_by_the_next_run() {
    let (node, dir, base) = mounting("tenants-signals");
    let uris = vec![node.uri("big"), node.uri("xfs")];
    // A busy file system: the command sits in it.
    let busy = "cd \"$QOSLAB_TENANT_1\" && exec sleep 600";

    // SIGTERM: exit 143, nothing left, even with a process keeping the file system busy.
    let c = spawn_mount(&base, &uris, busy, &dir.join("term.log"));
    let (m, l, n) = leftovers(&base);
    assert_eq!(
        (m.len(), l.len(), n),
        (4, 2, 2),
        "two tenants attached: {m:?} {l:?}"
    );
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let st = wait(c, Duration::from_secs(60));
    assert_eq!(st.code(), Some(143), "exit status after SIGTERM");
    assert_nothing_left_after(&base, Some(&dir.join("term.log")));

    // SIGKILL: everything stays (mounts, loops, nbdfuse, the busy process)...
    let c = spawn_mount(&base, &uris, busy, &dir.join("kill1.log"));
    unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
    wait(c, Duration::from_secs(10));
    let (m, l, n) = leftovers(&base);
    assert_eq!(
        (m.len(), l.len(), n),
        (4, 2, 2),
        "a killed run leaves its attachments"
    );
    // ... and `qoslab tenants cleanup` finds the dead run and undoes it.
    let out = run(
        Command::new(QOSLAB)
            .args(["tenants", "cleanup", "--output", "json", "--base-dir"])
            .arg(&base),
        Duration::from_secs(120),
    )
    .ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let r = &v["runs"][0];
    assert_eq!(r["live"], false, "{v}");
    assert_eq!(r["undone"]["unmounted"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(
        r["undone"]["loops_detached"].as_array().unwrap().len(),
        2,
        "{v}"
    );
    assert!(
        r["undone"]["processes_killed"].as_u64().unwrap() >= 1,
        "the busy process: {v}"
    );
    assert!(r["undone"]["errors"].as_array().unwrap().is_empty(), "{v}");
    assert_nothing_left(&base);

    // Killed again: this time the next run cleans up before it starts, never reusing.
    let c = spawn_mount(&base, &uris, busy, &dir.join("kill2.log"));
    let first = std::fs::read_to_string(dir.join("kill2.log")).unwrap();
    unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
    wait(c, Duration::from_secs(10));
    let out = run(
        Command::new(QOSLAB)
            .args(["tenants", "mount", "--base-dir"])
            .arg(&base)
            .args(["--nbd", &uris[0], "--", "true"]),
        Duration::from_secs(120),
    )
    .ok();
    assert!(
        out.stdout.contains("qoslab: stale run-") && out.stdout.contains("cleaned"),
        "{out}"
    );
    let old_run = first
        .lines()
        .find_map(|l| l.strip_prefix("qoslab: run "))
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(
        !out.stdout.contains(&format!("qoslab: run {old_run} ready")),
        "a new run, not the old one"
    );
    assert_nothing_left(&base);
    drop(node);
}

#[test]
fn a_host_that_cannot_mount_is_told_what_is_missing() {
    // As nobody: not root, and (for that user) no /dev/fuse write access is checked too.
    let dir = TempDir::new("tenants-preflight");
    let out = run(
        Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(QOSLAB)
            .args(["tenants", "mount", "--base-dir"])
            .arg(dir.join("base"))
            .args(["--nbd", "nbd://127.0.0.1/x"]),
        Duration::from_secs(30),
    )
    .refused();
    assert!(
        out.stderr.contains("this host cannot mount tenant volumes"),
        "{out}"
    );
    assert!(
        out.stderr.contains("not running as root (uid 65534)"),
        "{out}"
    );
}

/// Two tenants run the git workload at once; the one on a 24 MiB volume runs out of space
/// (ENOSPC, counted as failed with git's message) while the other passes.
#[test]
fn a_tenant_on_a_volume_too_small_for_its_app_fails_with_enospc_and_the_other_passes() {
    require_mount_tools();
    let _h = heavy();
    let node = Node::start(CONFIG);
    let dir = TempDir::new("tenants-enospc");
    let repo = build_repo(
        &dir.join("cache"),
        RepoSpec {
            files: 1500,
            bytes: 40 << 20,
            seed: 4,
        },
    )
    .unwrap();
    let app = GitApp { repo };
    let (session, _) = Session::open(&dir.join("base"), &[FsType::Ext4]).unwrap();
    let opts = AttachOptions::new(FsType::Ext4);
    let tenants: Vec<_> = [("ok", "big"), ("small", "tiny")]
        .iter()
        .map(|(t, v)| session.attach(t, &node.uri(v), &opts).unwrap())
        .collect();
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = tenants
            .iter()
            .map(|t| {
                let app = &app;
                let scratch = dir.join(format!("scratch-{}", t.name));
                s.spawn(move || {
                    let env = TenantEnv {
                        tenant: t.name.clone(),
                        data_dir: t.mount_dir.clone(),
                        scratch_dir: scratch,
                        timeout: Duration::from_secs(240),
                    };
                    let mut a = app.start(&env).unwrap();
                    let it = a.iteration(1);
                    a.stop().unwrap();
                    it
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        results[0].ok(),
        "the big volume passes: {:?}",
        results[0].failure
    );
    let f = results[1].failure.as_ref().expect("the tiny volume fails");
    assert_eq!(f.kind, FailureKind::NoSpace, "{f}");
    assert!(f.message.contains("No space left on device"), "{f}");
    session.close().unwrap();
    assert_nothing_left(&dir.join("base"));
}

fn node_ops(api: &Api, vol: &str, op: &str) -> u64 {
    let text = api.get("/metrics").body;
    text.lines()
        .find(|l| {
            l.starts_with("qoslab_volume_ops_total{")
                && l.contains(&format!("volume=\"{vol}\""))
                && l.contains(&format!("op=\"{op}\""))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {op} ops for {vol} in /metrics"))
}

fn node_read_bytes(api: &Api, vol: &str) -> u64 {
    let text = api.get("/metrics").body;
    text.lines()
        .find(|l| {
            l.starts_with("qoslab_volume_bytes_total{")
                && l.contains(&format!("volume=\"{vol}\""))
                && l.contains("op=\"read\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Drop a file's pages from the page cache (the tenant's file system cache only).
fn drop_file_cache(p: &Path) {
    let f = std::fs::File::open(p).unwrap();
    use std::os::unix::io::AsRawFd;
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// A tenant's fsync'd writes are held to its policy (200 IOPS): the node's write rate stays
/// at the ceiling while the application's own write rate is lower still (each fsync'd 4 KiB
/// write costs the data block plus journal blocks). And with direct I/O on the loop
/// device the page cache sits once, above the file system: a re-read after dropping the
/// file's cached pages goes to the node in full.
#[test]
fn fsyncd_writes_are_held_to_the_policy_and_pages_are_cached_once() {
    require_mount_tools();
    crate::util::require_fio_nbd();
    let _h = heavy();
    let mut rt = RealTime::start();
    let node = Node::start(CONFIG);
    let api = Api::new(&node.api_url());
    let dir = TempDir::new("tenants-fsync");
    let (session, _) = Session::open(&dir.join("base"), &[FsType::Ext4]).unwrap();
    let t = session
        .attach(
            "t0",
            &node.uri("limited"),
            &AttachOptions::new(FsType::Ext4),
        )
        .unwrap();
    assert!(
        t.direct_io,
        "the kernel reports direct I/O on the loop device"
    );
    let file = t.mount_dir.join("data");
    std::fs::write(&file, vec![7u8; 16 << 20]).unwrap();
    run(
        Command::new("sync").arg("-f").arg(&file),
        Duration::from_secs(120),
    )
    .ok();
    let w0 = node_ops(&api, "limited", "write");
    let t0 = Instant::now();
    let out = run(
        Command::new("fio")
            .args([
                "--name=fsync",
                "--rw=randwrite",
                "--bs=4k",
                "--ioengine=psync",
                "--fsync=1",
                "--size=16m",
                "--runtime=6",
                "--time_based",
                "--output-format=json",
            ])
            .arg(format!("--filename={}", file.display())),
        Duration::from_secs(60),
    )
    .ok();
    let secs = t0.elapsed().as_secs_f64();
    let node_wps = (node_ops(&api, "limited", "write") - w0) as f64 / secs;
    let j: serde_json::Value =
        serde_json::from_str(&out.stdout[out.stdout.find('{').unwrap()..]).unwrap();
    let app_wps = j["jobs"][0]["write"]["iops"].as_f64().unwrap();
    eprintln!("fsync'd 4 KiB writes under a 200 IOPS ceiling: app {app_wps:.1}/s, node writes {node_wps:.1}/s over {secs:.1}s");
    assert!(
        node_wps <= 200.0 * 1.05,
        "node writes held to the ceiling: {node_wps:.1}/s"
    );
    // No lower bound near the ceiling: a QD1 writer that fsyncs each write issues one
    // write per round trip (nbdfuse, loop, ext4's journal, the node), so its rate is
    // 1 / round trip, which a CPU hog beside it stretches at will; what it proves in real
    // time is that the ceiling holds and every fsync'd write reaches the node (below).
    // The ceiling's precision is proven in virtual time (storage-node/tests/virtual_time.rs).
    // Every fsync'd write reaches the node, starved or not.
    assert!(
        app_wps <= node_wps,
        "app {app_wps:.1}/s vs node {node_wps:.1}/s"
    );
    // More than 10/s: the writer made progress (60-97/s beside a CPU hog, docs/TESTING.md).
    // A starved host stretches each round trip at will: inconclusive (seen: 8.2/s beside two
    // hogs, an fsync writer and a TCG guest).
    if app_wps <= 10.0 {
        rt.short(format!(
            "fsync'd 4 KiB writes at {app_wps:.1}/s, want > 10/s (node {node_wps:.1}/s)"
        ));
    }

    // Cached once: drop the file's pages (the tenant's cache), re-read: all of it reaches
    // the node; read again without dropping: none of it does.
    drop_file_cache(&file);
    let r0 = node_read_bytes(&api, "limited");
    let _ = std::fs::read(&file).unwrap();
    let cold = node_read_bytes(&api, "limited") - r0;
    let r1 = node_read_bytes(&api, "limited");
    let _ = std::fs::read(&file).unwrap();
    let hot = node_read_bytes(&api, "limited") - r1;
    assert!(
        cold >= 16 << 20,
        "a cold re-read reaches the node: {cold} bytes"
    );
    assert!(
        hot < 1 << 20,
        "a hot re-read is served by the tenant's page cache: {hot} bytes"
    );
    session.close().unwrap();
    assert_nothing_left(&dir.join("base"));
    rt.finish();
}
