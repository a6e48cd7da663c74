#![cfg(feature = "e2e")]
//! The bed's own life: built, reachable, shaped, and gone afterwards — on drop, on SIGTERM,
//! and (for a run killed with SIGKILL) at the next run.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use testbed::{run, Spec, Testbed};

/// One test at a time: they count the machine's namespaces and loop devices before and
/// after. (A bed half built by another process never looks stale to a sweep: the
/// machine-wide build lock.)
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn namespaces() -> String {
    run("ip", &["netns", "list"]).unwrap_or_default()
}

fn loops() -> String {
    run(
        "losetup",
        &["--list", "--noheadings", "--output", "NAME,BACK-FILE"],
    )
    .unwrap_or_default()
}

/// Bed `tag` left nothing: none of its namespaces, none of its loop devices.
fn assert_bed_gone(tag: &str) {
    assert!(
        !namespaces().contains(&format!("qltb-{tag}-")),
        "{}",
        namespaces()
    );
    assert!(
        !loops().contains(&format!("/qoslab-testbed/{tag}/")),
        "{}",
        loops()
    );
}

/// Start `testbed up ARGS` and read its description.
fn spawn_bed(args: &[&str]) -> (std::process::Child, serde_json::Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_testbed"))
        .arg("up")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let desc: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    (child, desc)
}

#[test]
fn built_reachable_and_gone_after_drop() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let bed = Testbed::build(&Spec {
        hosts: 2,
        disks_per_host: 1,
        disk_bytes: 32 << 20,
        ..Spec::default()
    })
    .unwrap();
    let ns = bed.namespaces();
    assert_eq!(ns.len(), 3);
    let hosts = bed.suite_hosts().unwrap();
    for (h, b) in hosts.iter().zip(&bed.hosts) {
        assert_eq!(
            h.addr, b.addr,
            "ssh -G resolves the alias to the bed's address"
        );
        let out = h.run_ok("hostname; ip -4 -o addr show eth0").unwrap();
        assert!(out.starts_with(&format!("{}\n", b.name)), "{out}");
        assert!(out.contains(&format!("inet {}/24", b.addr)), "{out}");
        // Its own home: the machine's dotfiles (root's ~/.bashrc) never run in a session.
        let home = h.run_ok("echo $HOME").unwrap();
        assert_eq!(
            home.trim(),
            bed.dir
                .join(format!("home-{}", b.name))
                .display()
                .to_string()
        );
    }
    // A session still running at teardown is stopped with SIGTERM first: its shell runs
    // its exit trap (a shell killed outright leaves its lock files on the shared disk).
    let trapped = std::env::temp_dir().join(format!("qoslab-bed-trap-{}", std::process::id()));
    let _ = std::fs::remove_file(&trapped);
    let t = trapped.display();
    hosts[0]
        .run_ok(&format!(
            "setsid bash -c 'trap \"touch {t}\" EXIT; touch {t}.set; sleep 600' </dev/null >/dev/null 2>&1 & \
             while [ ! -e {t}.set ]; do sleep 0.05; done; rm {t}.set"
        ))
        .unwrap();
    let disks: Vec<String> = bed.hosts.iter().map(|h| h.disks[0].dev.clone()).collect();
    drop(bed);
    assert!(trapped.exists(), "the session's exit trap did not run");
    let _ = std::fs::remove_file(&trapped);
    let after = namespaces();
    for n in ns {
        assert!(!after.contains(&n), "{n} left behind: {after}");
    }
    let l = loops();
    for d in disks {
        assert!(!l.contains(&format!("{d} ")), "{d} still attached: {l}");
    }
}

#[test]
fn sigterm_tears_down() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (child, desc) = spawn_bed(&["--hosts", "2", "--disks", "1", "--disk-mib", "16"]);
    let tag = desc["tag"].as_str().unwrap().to_string();
    assert!(namespaces().contains(&format!("qltb-{tag}-h0")));
    run("kill", &["-TERM", &child.id().to_string()]).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert_bed_gone(&tag);
    assert!(!std::path::Path::new(&format!("/tmp/qoslab-testbed/{tag}")).exists());
}

#[test]
fn a_killed_runs_leftovers_are_removed_by_the_next_run() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (mut child, desc) = spawn_bed(&["--hosts", "2", "--disks", "1", "--disk-mib", "16"]);
    let tag = desc["tag"].as_str().unwrap().to_string();
    child.kill().unwrap(); // SIGKILL: no cleanup ran
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        namespaces().contains(&format!("qltb-{tag}-h1")),
        "left behind as expected"
    );
    assert!(loops().contains(&format!("/qoslab-testbed/{tag}/")));
    let removed = testbed::clean_stale();
    assert!(removed.contains(&tag), "{removed:?}");
    assert_bed_gone(&tag);
    assert!(!run("ip", &["link"]).unwrap().contains(&format!("qt{tag}c")));
    assert!(
        run("pgrep", &["-f", &format!("qoslab-testbed/{tag}/")]).is_err(),
        "its sshd processes are gone"
    );
}

/// A host's sshd runs in a mount namespace of its own (`ip netns exec`), a copy of the
/// machine's mounts when it started. Where mounts are private, an unmount never reaches
/// that copy: a file system another test had mounted under /tmp would stay alive (and its
/// loop device busy past that test's teardown) until the bed is gone. The bed's processes
/// drop those copies; here a tmpfs mounted before the bed is absent from every one of its
/// host's processes' mount tables.
#[test]
fn a_hosts_processes_hold_no_copy_of_a_tmp_mount_made_before_the_bed() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("qoslab-bed-mount-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display().to_string();
    struct Unmount(String);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = run("umount", &[&self.0]);
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    run(
        "mount",
        &["-t", "tmpfs", "-o", "size=1m", "qoslab-bed-copy", &d],
    )
    .unwrap();
    let _m = Unmount(d.clone());
    let bed = Testbed::build(&Spec {
        hosts: 1,
        ..Spec::default()
    })
    .unwrap();
    let pids = run("ip", &["netns", "pids", &bed.hosts[0].ns]).unwrap();
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert!(!pids.is_empty(), "the host's sshd runs in its namespace");
    for pid in pids {
        let Ok(table) = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")) else {
            continue; // gone meanwhile
        };
        let held: Vec<&str> = table
            .lines()
            .filter(|l| l.split(' ').nth(4) == Some(d.as_str()))
            .collect();
        assert!(
            held.is_empty(),
            "process {pid} holds a copy of {d}: {held:?}"
        );
    }
}
