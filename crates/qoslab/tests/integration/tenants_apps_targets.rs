//! The applications that need a file system (build, broker, git, redis) on every target of
//! the tenants family (issue 26): block devices (`--target /dev/X,/dev/Y`: a file system
//! made on each device for its tenant, unmounted when the point ends and on SIGTERM), a
//! running node (`--node URL`: volumes through its API, mounted over the NBD address it
//! reports) and a directory (`--target DIR`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::api_util::{record_names, Api};
use crate::bench_util::{cell, json_run, qoslab, succeeded, table, text, Dir};
use crate::tenants_util::{
    java_under, require_app_tools, require_on_path, signal_and_wait, start_broker_sweep,
    summary_on_a_target, tenants_table, Loops,
};
use crate::util::{heavy, one_volume_config, Node};

const LIMIT: Duration = Duration::from_secs(900);

/// Small but real: three builds of a small C project, a broker for 3 s, a git clone of
/// 200 files, 1,000 redis records.
const CLASSES: &str = r#"
[[class]]
name = "build"
app = "build"
build = { units = 8, functions = 8, deps = 2, dep_bytes = "1MiB" }

[[class]]
name = "amq"
app = "broker"
broker = { secs = 3 }

[[class]]
name = "git"
app = "git"
git = { files = 200, bytes = "2MiB", seed = 7 }

[[class]]
name = "redis"
app = "redis"
redis = { records = 1000, operations = 2000, threads = 2 }
"#;

/// Nothing of the run's left: no mount under the test's directory, no JVM.
fn nothing_left(dir: &Dir) {
    assert!(
        mounts::sys::mounts_under(dir.path()).is_empty(),
        "mounts left: {:?}",
        mounts::sys::mounts_under(dir.path())
    );
    assert!(
        mounts::sys::loops_backed_under(&dir.path().join("mounts")).is_empty(),
        "loop devices of the run left"
    );
    assert_eq!(java_under(dir.path()), 0, "no broker or client JVM left");
}

/// The top-level entries of the file system on `dev`, mounted read-only for a moment.
fn entries_on(dir: &Dir, dev: &str) -> Vec<String> {
    let mnt = dir.path().join(format!("check-{}", dev.replace('/', "_")));
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-o", "ro", dev])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ok.success(), "mount -o ro {dev}");
    let mut v: Vec<String> = std::fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    v
}

#[test]
fn apps_on_block_devices_get_a_file_system_made_on_their_device_and_unmounted_after() {
    require_app_tools();
    require_on_path(&["git", "redis-server", "blkid"]);
    let _h = heavy();
    let dir = Dir::new("tenants-apps-block");
    // A device per tenant at the point of 2: 4 classes x 2.
    let loops = Loops::new(&dir, &[128 << 20; 8]);
    let plan = dir.write(
        "block.toml",
        &format!(
            "[bench]\nname = \"apps-block\"\n\n{}{CLASSES}",
            tenants_table(&dir, "[1, 2]", "")
        ),
    );
    let devs = loops.target();
    let bench = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            plan.to_str().unwrap(),
            "--target",
            &devs,
            "--db",
            "r.db",
        ];
        a.extend_from_slice(extra);
        qoslab(&dir, &a, LIMIT)
    };
    let out = succeeded(&bench(&[]));
    assert!(out.contains("a block device per tenant"), "{out}");
    nothing_left(&dir);
    let run = json_run(&dir, "r.db");
    summary_on_a_target(&run, 2 * 4);
    // Each tenant's data went to its device: at the point of 2, the i-th tenant (classes
    // in plan order) had the i-th device; its file system is still there.
    for (dev, app_dir) in [
        (0, "build"),
        (1, "build"),
        (2, "activemq"),
        (4, "git"),
        (6, "redis"),
    ] {
        let e = entries_on(&dir, &loops.0[dev]);
        assert!(
            e.contains(&app_dir.to_string()) && e.contains(&"lost+found".to_string()),
            "{}: {e:?}",
            loops.0[dev]
        );
    }
    let t = table(&run, "tenants", "tenant iterations");
    assert_eq!(t["rows"].as_array().unwrap().len(), 4 * (1 + 2));
    for r in t["rows"].as_array().unwrap() {
        if cell(t, r, "class") == "amq" {
            let m = cell(t, r, "metrics");
            assert!(m["sent"].as_f64().unwrap() > 0.0, "{r}");
            assert_eq!(m["lost"].as_f64(), Some(0.0), "{r}");
        }
    }
    // The devices hold the tenants' file systems now: a new run refuses them until they
    // are named in --destroy-data, as any device holding data.
    let o = bench(&[]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        err.contains(&format!("refusing to write {}", loops.0[0])) && err.contains("ext4"),
        "{err}"
    );
}

#[test]
fn a_sigterm_mid_broker_sweep_on_block_devices_unmounts_them_and_stops_every_jvm() {
    require_app_tools();
    let _h = heavy();
    let dir = Dir::new("tenants-block-term");
    let loops = Loops::new(&dir, &[128 << 20; 2]);
    let mut child = start_broker_sweep(&dir, &["--target", &loops.target()]);
    let mounted = mounts::sys::mounts_under(dir.path());
    assert_eq!(
        mounted.len(),
        2,
        "a file system on each device: {mounted:?}"
    );
    let status = signal_and_wait(&mut child, libc::SIGTERM, Duration::from_secs(120));
    assert_eq!(status.code(), Some(143), "exit status after SIGTERM");
    nothing_left(&dir);
    // The devices are free: not mounted anywhere, no holder.
    for d in &loops.0 {
        let name = Path::new(d)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let holders = std::fs::read_dir(format!("/sys/block/{name}/holders"))
            .map(|r| r.count())
            .unwrap_or(0);
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        assert!(
            holders == 0 && !mounts.lines().any(|l| l.starts_with(&format!("{d} "))),
            "{d} still in use"
        );
    }
}

/// A plan of a build class and a broker class, both under policy `capped` when `policy`.
fn build_and_broker(dir: &Dir, policy: bool) -> std::path::PathBuf {
    let p = if policy { "policy = \"capped\"\n" } else { "" };
    dir.write(
        "plan.toml",
        &format!(
            r#"[bench]
name = "apps"

[[policy]]
name = "capped"
fixed = {{ max_throughput_iops = 400 }}

{tenants}
[[class]]
name = "build"
{p}size = "256MiB"
app = "build"
build = {{ units = 8, functions = 8, deps = 2, dep_bytes = "1MiB" }}

[[class]]
name = "amq"
{p}size = "256MiB"
app = "broker"
broker = {{ secs = 3 }}
"#,
            tenants = tenants_table(dir, "[1, 2]", "")
        ),
    )
}

/// Both classes' summary rows: no failure, a figure, and for the broker nothing lost.
fn apps_passed(run: &Value) {
    let s = table(run, "tenants", "summary");
    let rows = s["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "2 points x 2 classes: {s}");
    for r in rows {
        assert_eq!(cell(s, r, "failed"), 0, "{r}");
        assert!(cell(s, r, "mean").as_f64().unwrap() > 0.0, "{r}");
    }
    let seed = table(run, "tenants-seed", "build (build): builds");
    assert_eq!(seed["rows"][1][1], "6", "3 builds per tenant: {seed}");
    let seed = table(run, "tenants-seed", "amq (broker): throughput (msg/s)");
    assert_eq!(seed["rows"][1][4], "0", "nothing lost: {seed}");
}

#[test]
fn build_and_broker_tenants_on_a_running_node_get_volumes_under_their_policy() {
    require_app_tools();
    let _h = heavy();
    let node = Node::start(&one_volume_config(
        "theirs",
        "max_throughput_iops = 300",
        "keepme",
        "64MiB",
    ));
    let url = node.api_url();
    let api = Api::new(&url);
    let dir = Dir::new("tenants-apps-node");
    let plan = build_and_broker(&dir, true);
    let out = succeeded(&qoslab(
        &dir,
        &[
            "bench",
            plan.to_str().unwrap(),
            "--node",
            &url,
            "--db",
            "r.db",
        ],
        LIMIT,
    ));
    assert!(out.contains("created policy capped on"), "{out}");
    nothing_left(&dir);
    let run = json_run(&dir, "r.db");
    apps_passed(&run);
    let s = table(&run, "tenants", "summary");
    for r in s["rows"].as_array().unwrap() {
        assert_eq!(cell(s, r, "ceiling_iops"), 400, "the class's policy: {r}");
        assert_eq!(cell(s, r, "qos"), "qoslab", "{r}");
        assert!(
            cell(s, r, "node_iops_per_tenant").as_f64().unwrap() > 0.0,
            "the node counted the tenants' I/O: {r}"
        );
    }
    // The node holds what it held before, and nothing of the run's.
    let volumes = record_names(&api.get_ok("/api/storage/volumes"));
    assert_eq!(volumes, vec!["keepme".to_string()]);
}

#[test]
fn build_and_broker_tenants_in_a_directory_run_there_and_leave_nothing() {
    require_app_tools();
    let _h = heavy();
    let dir = Dir::new("tenants-apps-dir");
    let target = dir.path().join("array");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep.txt"), "theirs").unwrap();
    let plan = build_and_broker(&dir, false);
    let out = succeeded(&qoslab(
        &dir,
        &[
            "bench",
            plan.to_str().unwrap(),
            "--target",
            target.to_str().unwrap(),
            "--db",
            "r.db",
        ],
        LIMIT,
    ));
    assert!(
        out.contains("QoS policies not enforced by qoslab: the target's own"),
        "{out}"
    );
    nothing_left(&dir);
    let left: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["keep.txt".to_string()]);
    let run = json_run(&dir, "r.db");
    apps_passed(&run);
    summary_on_a_target(&run, 4);
}
