//! The process's one lifecycle under a signal: a run that holds every kind of resource —
//! a child process sitting in a tenant file system, the mount (nbdfuse, loop device,
//! ext4) over a node's volume, a process on an ssh host, and the namespace test bed that
//! host lives in — gets SIGTERM mid-run. Every teardown phase runs, in order (the remote
//! process can only be stopped over ssh while the bed still stands; the mount can only go
//! once the process in it is dead), the exit status is 143, and nothing is left.
//!
//! The run is this test binary itself, re-executed to run [`drill_child`] (ignored when
//! the suite runs: it is the other half of the test, not a test).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{require_on_path, TempDir};

const READY: &str = "DRILL READY ";

/// Running (a zombie waiting for its new parent to reap it is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

/// Processes in process group `pgid` (zombies excluded).
fn group(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let rest = stat.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            (f.first() != Some(&"Z") && f.get(2)?.parse::<u32>().ok()? == pgid)
                .then(|| e.file_name().to_string_lossy().parse().ok())
                .flatten()
        })
        .collect()
}

fn netns() -> String {
    testbed::run("ip", &["netns", "list"]).unwrap_or_default()
}

#[test]
fn sigterm_mid_run_runs_every_phase_in_order_and_exits_143() {
    require_on_path(&["nbdfuse", "losetup", "mkfs.ext4", "sshd", "ip"]);
    let dir = TempDir::new("drill");
    let err_path = dir.join("child.err");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "signals::drill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("QOSLAB_DRILL_BASE", dir.join("run"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let stderr = || std::fs::read_to_string(&err_path).unwrap_or_default();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready: serde_json::Value = loop {
        match lines.next() {
            // libtest prints "test NAME ... " first, on the same line.
            Some(Ok(l)) => {
                if let Some((_, j)) = l.split_once(READY) {
                    break serde_json::from_str(j).unwrap();
                }
            }
            _ => {
                let _ = child.kill();
                panic!("the drill never got ready:\n{}", stderr());
            }
        }
    };
    let n = |k: &str| ready[k].as_u64().unwrap() as u32;
    let (app, remote, nbdfuse) = (n("app_pid"), n("remote_pgid"), n("nbdfuse_pid"));
    let base = dir.join("run");
    let tag = ready["bed"].as_str().unwrap().to_string();
    // Everything is up: the application in the mount, the mount, the remote process, the bed.
    assert!(alive(app) && alive(nbdfuse), "{ready}");
    assert!(!group(remote).is_empty(), "remote process group {remote}");
    assert_eq!(mounts::sys::mounts_under(&base).len(), 2, "fuse and ext4");
    assert_eq!(mounts::sys::loops_backed_under(&base).len(), 1);
    assert!(netns().contains(&format!("qltb-{tag}-")));

    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "still running 90 s after SIGTERM:\n{}",
            stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = stderr();
    eprintln!("{err}");
    assert_eq!(
        status.code(),
        Some(143),
        "the one exit rule: 128 + 15\n{err}"
    );
    // Every phase, in order, each with something to do.
    let mut at = 0;
    for phase in [
        "child processes",
        "local mounts and files",
        "remote and REST clean-up",
        "test infrastructure",
    ] {
        let line = format!("teardown: {phase} done (");
        let i = err[at..]
            .find(&line)
            .unwrap_or_else(|| panic!("no `{line}` after the previous phase:\n{err}"));
        at += i + line.len();
        assert!(
            !err[at..].starts_with("0 "),
            "{phase}: nothing was registered\n{err}"
        );
    }
    assert!(err.contains("exit 143"), "{err}");
    // Nothing left: the application, the mount, the loop device, nbdfuse, the remote
    // process (stopped over ssh before the bed went), the bed's namespaces.
    assert!(!alive(app), "application {app}");
    assert!(!alive(nbdfuse), "nbdfuse {nbdfuse}");
    assert!(mounts::sys::mounts_under(&base).is_empty());
    assert!(mounts::sys::loops_backed_under(&base).is_empty());
    assert!(group(remote).is_empty(), "remote process group {remote}");
    assert!(!netns().contains(&format!("qltb-{tag}-")), "{}", netns());
    assert!(!Path::new(&format!("/tmp/qoslab-drill-{tag}")).exists());
}

/// The run the test above interrupts: a test bed with one ssh host running a remote
/// process, a node serving a volume mounted as a tenant file system, an application in
/// it. Prints `DRILL READY {json}` and waits for the signal.
#[test]
#[ignore = "the child half of sigterm_mid_run_runs_every_phase_in_order_and_exits_143, which runs it"]
fn drill_child() {
    let base = std::path::PathBuf::from(
        std::env::var("QOSLAB_DRILL_BASE").expect("run by its parent test only"),
    );
    lifecycle::install();
    let bed = testbed::Testbed::build(&testbed::Spec {
        hosts: 1,
        ..testbed::Spec::default()
    })
    .unwrap();
    let hosts = bed.suite_hosts().unwrap();
    let rundir = format!("/tmp/qoslab-drill-{}", bed.tag);
    // Registered before the process: on the signal it runs after the process is stopped.
    let _rundir = {
        let (h, d) = (hosts[0].clone(), rundir.clone());
        lifecycle::register(lifecycle::Phase::Remote, move || {
            hosts::remote::remove_rundir(&h, &d)
        })
    };
    let remote = hosts::remote::RemoteProc::start(
        &hosts[0],
        &rundir,
        "sleeper",
        "sleep 600",
        Duration::from_secs(600),
    )
    .unwrap();
    std::fs::create_dir_all(&base).unwrap();
    // Its directory under the run's, which the parent test removes after the signal.
    let node = nbd_server::testing::NbdTestNode::start_in(
        &base,
        "[[volume]]\nname = \"t0\"\nsize = \"64MiB\"\n",
        "drill-node",
    );
    let (session, _) = mounts::Session::open(&base, &[mounts::FsType::Ext4]).unwrap();
    let t = session
        .attach(
            "t0",
            &node.uri("t0"),
            &mounts::AttachOptions::new(mounts::FsType::Ext4),
        )
        .unwrap();
    use std::os::unix::process::CommandExt;
    // Never waited for: the signal's teardown kills it and the process exits.
    #[allow(clippy::zombie_processes)]
    let app = Command::new("sleep")
        .arg("600")
        .current_dir(&t.mount_dir)
        .process_group(0)
        .spawn()
        .unwrap();
    let _app = mounts::children::register(app.id());
    let ready = serde_json::json!({
        "bed": bed.tag,
        "remote_pgid": remote.pid,
        "app_pid": app.id(),
        "nbdfuse_pid": t.nbdfuse_pid,
    });
    println!("{READY}{ready}");
    // Everything above lives until the signal ends the process.
    loop {
        std::thread::park();
    }
}
