//! The tenants family on targets other than the embedded node (issue 15): `--target DIR`
//! (a subdirectory per tenant, QoS not qoslab's) and `--node URL` (a volume per tenant
//! created through a running node's REST API under its class's policy, deleted after),
//! block devices (a device per tenant), and the clear errors for the combinations that
//! are not supported. The applications on these targets: tenants_apps_targets.

use std::time::Duration;

use serde_json::Value;

use crate::api_util::{record_names, Api};
use crate::bench_util::{cell, json_run, qoslab, succeeded, table, text, Dir};
use crate::tenants_util::{signal_and_wait, summary_on_a_target, tenants_table, Loops};
use crate::util::{heavy, one_volume_config, require_fio_nbd, Node};

const LIMIT: Duration = Duration::from_secs(300);

fn names(v: &Value) -> Vec<String> {
    let mut n = record_names(v);
    n.sort();
    n
}

#[test]
fn a_directory_target_gives_each_tenant_its_own_subdirectory_and_leaves_nothing() {
    let _h = heavy();
    let dir = Dir::new("tenants-dir");
    // The "array": a directory that already holds something the run must not touch.
    let target = dir.path().join("array");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep.txt"), "theirs").unwrap();
    dir.write(
        "dir.toml",
        &format!(
            r#"
[bench]
name = "tenants-dir"

[[policy]]
name = "std"
fixed = {{ max_throughput_iops = 100 }}

{tenants}
[[class]]
name = "git"
policy = "std"
app = "git"
git = {{ files = 200, bytes = "2MiB", seed = 7 }}

# An expectation the directory cannot have: not judged (no fake verdict).
[[class]]
name = "db"
policy = "std"
app = "fio"
mix = "oltp"
fio_size = "8MiB"
expect_ceiling = 0.05
"#,
            tenants = tenants_table(&dir, "[1, 2]", "runtime = \"2s\"\nramp = \"1s\"")
        ),
    );
    let t = target.to_str().unwrap();
    let out = succeeded(&qoslab(
        &dir,
        &["bench", "dir.toml", "--target", t, "--db", "r.db"],
        LIMIT,
    ));
    assert!(
        out.contains("QoS policies not enforced by qoslab: the target's own")
            && out.contains("expectations of db are not judged"),
        "the banner says the QoS is the target's:\n{out}"
    );
    // Nothing but what was there before.
    let left: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["keep.txt".to_string()]);
    assert_eq!(
        std::fs::read_to_string(target.join("keep.txt")).unwrap(),
        "theirs"
    );

    let run = json_run(&dir, "r.db");
    let s = summary_on_a_target(&run, 4);
    for r in s["rows"].as_array().unwrap() {
        assert!(
            cell(s, r, "ceiling_iops").is_null() && cell(s, r, "qos_ceiling_wait_ms").is_null(),
            "no limits or waits the target does not have: {r}"
        );
        assert!(
            cell(s, r, "node_cpu_pct").is_null() && cell(s, r, "host_cpu_pct").is_number(),
            "no node CPU where there is no node; the host's load is measured: {r}"
        );
    }
    // The fio tenants wrote more than the 100 IOPS "std" would allow on a node: nothing
    // of qoslab's held them.
    let t = table(&run, "tenants", "tenant iterations");
    assert_eq!(t["rows"].as_array().unwrap().len(), 2 * (1 + 2));
    let verdicts: usize = run["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["verdicts"].as_array().map(|v| v.len()).unwrap_or(0))
        .sum();
    assert_eq!(verdicts, 0, "no verdicts against policies the target lacks");
    for name in ["git (git): time (s)", "db (fio): failures"] {
        let t = table(&run, "tenants-seed", name);
        assert_eq!(t["rows"].as_array().unwrap().len(), 2, "{name}: {t}");
    }
}

/// The node's own: a policy and a volume under it, which the runs must leave as they are.
fn node_config() -> String {
    one_volume_config("theirs300", "max_throughput_iops = 300", "keepme", "64MiB")
}

#[test]
fn tenants_on_a_running_node_get_volumes_under_their_class_policy_through_its_api() {
    require_fio_nbd();
    let _h = heavy();
    let node = Node::start(&node_config());
    let url = node.api_url();
    let api = Api::new(&url);
    let dir = Dir::new("tenants-node");
    dir.write(
        "node.toml",
        &format!(
            r#"
[bench]
name = "tenants-node"

# Not on the node: created there for the run, deleted after.
[[policy]]
name = "made200"
fixed = {{ max_throughput_iops = 200 }}

{tenants}
# On ext4 over the volume's NBD address as the API reports it (nbdfuse -> loop -> mount).
[[class]]
name = "repo"
policy = "theirs300"
size = "64MiB"
app = "git"
git = {{ files = 100, bytes = "1MiB", seed = 9 }}

[[class]]
name = "gold"
policy = "made200"
size = "64MiB"
app = "fio"
mix = "random"
fio_size = "16MiB"
expect_ceiling = 0.1

# The node's own policy, used as it is.
[[class]]
name = "silver"
policy = "theirs300"
size = "64MiB"
app = "fio"
mix = "random"
fio_size = "16MiB"
expect_ceiling = 0.1
"#,
            tenants = tenants_table(&dir, "[1, 2]", "runtime = \"3s\"\nramp = \"1s\"")
        ),
    );
    let out = succeeded(&qoslab(
        &dir,
        &["bench", "node.toml", "--node", &url, "--db", "r.db"],
        LIMIT,
    ));
    assert!(
        out.contains("created policy made200 on"),
        "the missing policy is created:\n{out}"
    );
    assert!(out.contains("PASS"), "{out}");
    // Afterwards: the node holds what it held before, and nothing of the run's.
    assert_eq!(
        names(&api.get_ok("/api/storage/volumes")),
        vec!["keepme".to_string()]
    );
    let policies = names(&api.get_ok("/api/storage/qos/policies"));
    assert!(policies.contains(&"theirs300".to_string()), "{policies:?}");
    assert!(!policies.contains(&"made200".to_string()), "{policies:?}");

    let run = json_run(&dir, "r.db");
    let s = table(&run, "tenants", "summary");
    let rows = s["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "2 points x 3 classes: {s}");
    assert!(
        mounts::sys::mounts_under(dir.path()).is_empty(),
        "nothing stays mounted"
    );
    for r in rows {
        if cell(s, r, "class") == "repo" {
            assert_eq!(cell(s, r, "failed"), 0, "git on the mounted volume: {r}");
            assert_eq!(cell(s, r, "ceiling_iops"), 300, "{r}");
            continue;
        }
        let want = if cell(s, r, "class") == "gold" {
            200
        } else {
            300
        };
        assert_eq!(cell(s, r, "ceiling_iops"), want, "the class's policy: {r}");
        assert_eq!(cell(s, r, "qos"), "qoslab", "{r}");
        assert!(
            cell(s, r, "node_cpu_pct").is_number(),
            "the node's process serves from this host: its CPU is measured: {r}"
        );
        assert_eq!(cell(s, r, "failed"), 0, "{r}");
        // The node's own count of the tenants' operations, over REST.
        let node_iops = cell(s, r, "node_iops_per_tenant").as_f64().unwrap();
        assert!(
            node_iops > 0.5 * want as f64 && node_iops < 1.1 * want as f64,
            "{r}"
        );
    }
    let verdicts: Vec<Value> = run["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["verdicts"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(
        verdicts.len(),
        4,
        "a ceiling verdict per fio class and point"
    );
    // The node sampler's windows (its REST metric block) are stored with the points.
    let sampled: Vec<&Value> = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["node"].as_array().into_iter().flatten())
        .filter(|x| x["volume"].as_str().unwrap_or("").starts_with("qlt"))
        .collect();
    assert!(
        sampled
            .iter()
            .any(|x| x["read_iops"].as_f64().unwrap_or(0.0) > 0.0),
        "node samples of the run's volumes: {}",
        run["series"]
    );
}

#[test]
fn targets_the_tenants_family_cannot_use_are_refused_naming_the_flag() {
    let node = Node::start(&node_config());
    let url = node.api_url();
    let dir = Dir::new("tenants-bad");
    let file = dir.write("f.img", "");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--profile",
                "tenants",
                "--apps",
                "fio",
                "--node",
                &url,
                "--volume",
                "keepme",
            ],
            "--volume is a single volume",
        ),
        (
            vec![
                "--profile",
                "tenants",
                "--apps",
                "fio",
                "--target",
                file.to_str().unwrap(),
            ],
            "the tenants family takes a directory",
        ),
        (
            vec![
                "--profile",
                "tenants",
                "--apps",
                "fio",
                "--target",
                "nbd://127.0.0.1:1/x",
            ],
            "an NBD URI or a --volume is a single volume",
        ),
        (
            vec!["--profile", "dbench", "--node", &url],
            "--node needs --volume NAME",
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["bench"];
        a.extend(args.iter().copied());
        a.extend(["--db", "r.db", "--runtime", "1s"]);
        let o = qoslab(&dir, &a, Duration::from_secs(60));
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{a:?} must fail:\n{out}");
        assert!(
            err.contains(want) || out.contains(want),
            "{a:?}: {want:?} not in\n{out}\n{err}"
        );
    }
    // Nothing was created on the node.
    assert_eq!(
        names(&Api::new(&url).get_ok("/api/storage/volumes")),
        vec!["keepme".to_string()]
    );
}

const LONG: &str = r#"
[bench]
name = "tenants-long"

[[policy]]
name = "made100"
fixed = { max_throughput_iops = 100 }

[tenants]
points = [2]
iterations = 1
runtime = "60s"
ramp = "1s"

[[class]]
name = "a"
policy = "made100"
size = "64MiB"
app = "fio"
mix = "random"
fio_size = "16MiB"
"#;

/// Start a long sweep on `url` and wait until its two volumes are on the node.
fn start_long_sweep(dir: &Dir, url: &str, api: &Api) -> std::process::Child {
    dir.write("long.toml", LONG);
    let child = std::process::Command::new(crate::bench_util::QOSLAB)
        .args([
            "--log-level",
            "warn",
            "bench",
            "long.toml",
            "--node",
            url,
            "--db",
            "r.db",
        ])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    loop {
        let v = names(&api.get_ok("/api/storage/volumes"));
        if v.iter().filter(|n| n.starts_with("qlt")).count() == 2 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run's volumes never appeared: {v:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    child
}

/// A running node and a long sweep on it (test directory `tag`), its volumes created.
fn long_sweep_on_a_node(tag: &str) -> (Node, Api, Dir, std::process::Child) {
    require_fio_nbd();
    let node = Node::start(&node_config());
    let url = node.api_url();
    let api = Api::new(&url);
    let dir = Dir::new(tag);
    let child = start_long_sweep(&dir, &url, &api);
    (node, api, dir, child)
}

/// Signal the sweep and wait for it: its exit status and what it printed on stderr.
fn signal_and_wait_err(
    child: &mut std::process::Child,
    sig: i32,
) -> (std::process::ExitStatus, String) {
    let status = signal_and_wait(child, sig, Duration::from_secs(60));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

#[test]
fn a_sigterm_mid_sweep_on_a_running_node_deletes_the_runs_volumes_and_policies() {
    let _h = heavy();
    let (_node, api, _dir, mut child) = long_sweep_on_a_node("tenants-node-term");
    let (status, err) = signal_and_wait_err(&mut child, libc::SIGTERM);
    assert_eq!(status.code(), Some(128 + 15), "{err}");
    assert_eq!(
        names(&api.get_ok("/api/storage/volumes")),
        vec!["keepme".to_string()],
        "{err}"
    );
    let policies = names(&api.get_ok("/api/storage/qos/policies"));
    assert!(!policies.contains(&"made100".to_string()), "{policies:?}");
    assert!(policies.contains(&"theirs300".to_string()), "{policies:?}");
}

#[test]
fn volumes_a_sigkilled_sweep_left_on_the_node_are_deleted_by_the_next_run() {
    let _h = heavy();
    let (node, api, dir, mut child) = long_sweep_on_a_node("tenants-node-kill");
    let url = node.api_url();
    let left = names(&api.get_ok("/api/storage/volumes"));
    let (status, _) = signal_and_wait_err(&mut child, libc::SIGKILL);
    assert_eq!(status.code(), None, "killed");
    assert_eq!(
        names(&api.get_ok("/api/storage/volumes")),
        left,
        "SIGKILL cannot clean"
    );
    // The next run on the node finds them (their run is gone) and deletes them; the
    // policy the killed run made is on the node now, so it is used as it is.
    dir.write(
        "short.toml",
        &LONG
            .replace("points = [2]", "points = [1]")
            .replace("\"60s\"", "\"1s\""),
    );
    let out = succeeded(&qoslab(
        &dir,
        &["bench", "short.toml", "--node", &url, "--db", "r.db"],
        LIMIT,
    ));
    for v in left.iter().filter(|v| v.starts_with("qlt")) {
        assert!(
            out.contains(&format!("deleted volume {v} on")),
            "{v} not reported:\n{out}"
        );
    }
    assert_eq!(
        names(&api.get_ok("/api/storage/volumes")),
        vec!["keepme".to_string()]
    );
}

#[test]
fn block_devices_get_a_tenant_each_and_one_holding_data_is_refused_unless_named() {
    let _h = heavy();
    let dir = Dir::new("tenants-block");
    let loops = Loops::new(&dir, &[32 << 20; 2]);
    dir.write(
        "block.toml",
        r#"
[bench]
name = "tenants-block"

[tenants]
points = [1, 2]
iterations = 1
runtime = "2s"
ramp = "1s"

[[class]]
name = "db"
app = "fio"
mix = "random"
size = "32MiB"
fio_size = "16MiB"
"#,
    );
    let devs = loops.target();
    let run = |extra: &[&str]| {
        let mut a = vec!["bench", "block.toml", "--target", &devs, "--db", "r.db"];
        a.extend_from_slice(extra);
        qoslab(&dir, &a, LIMIT)
    };
    let out = succeeded(&run(&[]));
    assert!(out.contains("a block device per tenant"), "{out}");
    summary_on_a_target(&json_run(&dir, "r.db"), 2);

    // A device holding a file system is refused before anything runs, naming the flag.
    let mkfs = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", &loops.0[1]])
        .status()
        .unwrap();
    assert!(mkfs.success());
    let o = run(&[]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        err.contains(&format!("refusing to write {}", loops.0[1]))
            && err.contains(&format!("--destroy-data {}", loops.0[1]))
            && err.contains("ext4"),
        "{err}"
    );
    // Mounted, it is refused even when named.
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let m = std::process::Command::new("mount")
        .arg(&loops.0[1])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(m.success());
    let o = run(&["--destroy-data", &loops.0[1]]);
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(err.contains("never overwritten"), "{err}");
    // Named in --destroy-data (and not in use), it is taken.
    succeeded(&run(&["--destroy-data", &loops.0[1]]));

    // fio's small_files mix needs a directory: refused on block devices, naming the class
    // and the flag (the applications get a file system made on their device:
    // tenants_apps_targets).
    dir.write(
        "small.toml",
        "[tenants]\npoints = [1]\n[[class]]\nname = \"meta\"\napp = \"fio\"\nmix = \"small_files\"\n",
    );
    let o = qoslab(
        &dir,
        &["bench", "small.toml", "--target", &devs, "--db", "r.db"],
        LIMIT,
    );
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("[[class]] meta") && err.contains("needs a directory target (--target DIR)"),
        "{err}"
    );
}
