//! Seed 004's other two applications end to end through `qoslab bench`, as root, on
//! ext4 file systems over the embedded node: concurrent C builds (`app = "build"`: gcc and
//! make, the dependency cache on the tenant's volume) and an Apache ActiveMQ broker per
//! tenant (`app = "broker"`: KahaDB on the volume, ActiveMQ's own producer and consumer),
//! each swept over 1, 2 and 4 tenants of a class without a ceiling, one with a ceiling and
//! one whose volume is too small; and a SIGTERM mid-sweep that must leave no broker JVM,
//! mount or loop device behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::bench_util::{cell, json_run, qoslab, table, text, Dir};
use crate::tenants_util::{
    java_under, report_draws_its_charts, require_app_tools, signal_and_wait, start_broker_sweep,
    tenants_table,
};

/// The sweep's plan: a class without a ceiling, one with `ceiling` IOPS per volume, and
/// one on a 16 MiB volume with `tiny_extra` making it outgrow it.
fn plan(dir: &Dir, app: &str, ceiling: u32, extra: &str, tiny_extra: &str) -> PathBuf {
    dir.write(
        "plan.toml",
        &format!(
            r#"
[bench]
name = "tenants-{app}"

[[policy]]
name = "capped"
fixed = {{ max_throughput_iops = {ceiling} }}

{tenants}
[[class]]
name = "free"
size = "256MiB"
app = "{app}"
{extra}

[[class]]
name = "capped"
policy = "capped"
size = "256MiB"
app = "{app}"
{extra}

# Too small: its tenants fail with ENOSPC while their neighbours pass.
[[class]]
name = "tiny"
size = "16MiB"
app = "{app}"
{tiny_extra}
"#,
            tenants = tenants_table(dir, "[1, 2, 4]", ""),
        ),
    )
}

/// Run the plan; returns the summary output and the stored run as JSON.
fn sweep(dir: &Dir, plan: &Path) -> (String, Value) {
    let o = qoslab(
        dir,
        &["bench", plan.to_str().unwrap(), "--db", "r.db"],
        Duration::from_secs(1200),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        mounts::sys::mounts_under(dir.path()).is_empty()
            && mounts::sys::loops_backed_under(dir.path()).is_empty(),
        "nothing stays mounted or attached"
    );
    assert_eq!(java_under(dir.path()), 0, "no JVM outlives the run");
    (out, json_run(dir, "r.db"))
}

/// The summary row of `class` at `n` tenants.
fn row<'a>(s: &'a Value, n: u64, class: &str) -> &'a Value {
    s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| cell(s, r, "tenants") == n && cell(s, r, "class") == class)
        .unwrap_or_else(|| panic!("no summary row for {class} at {n}: {s}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Checks common to both applications: every point has its three classes; the free and
/// capped classes never fail; the ceiling is what made the capped class wait (the free
/// class never waits on one); every tiny tenant fails with ENOSPC, in the application's
/// own words (`no_space`: what they are).
fn check_sweep(run: &Value, no_space: &[&str]) {
    let s = table(run, "tenants", "summary");
    assert_eq!(
        s["rows"].as_array().unwrap().len(),
        9,
        "3 points x 3 classes"
    );
    for n in [1, 2, 4] {
        for class in ["free", "capped"] {
            assert_eq!(cell(s, row(s, n, class), "failed"), 0, "{class} at {n}");
        }
        assert_eq!(
            f(cell(s, row(s, n, "free"), "qos_ceiling_wait_ms")),
            0.0,
            "no ceiling, no ceiling wait"
        );
        assert!(
            f(cell(s, row(s, n, "capped"), "qos_ceiling_wait_ms")) > 0.0,
            "the capped class waited on its ceiling at {n}: {}",
            row(s, n, "capped")
        );
        assert_eq!(f(cell(s, row(s, n, "tiny"), "fail_rate_pct")), 100.0);
    }
    let t = table(run, "tenants", "tenant iterations");
    let tiny: Vec<&Value> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| cell(t, r, "class") == "tiny")
        .collect();
    assert_eq!(tiny.len(), 1 + 2 + 4);
    for r in tiny {
        assert_eq!(cell(t, r, "failure"), "enospc", "{r}");
        let m = cell(t, r, "message").as_str().unwrap();
        assert!(no_space.iter().any(|w| m.contains(w)), "{r}");
    }
}

#[test]
fn builds_sweep_1_2_4_tenants_slow_down_under_a_ceiling_and_a_full_volume_fails_them() {
    require_app_tools();
    let _h = crate::util::heavy();
    let dir = Dir::new("tenants-build");
    // 24 MiB of dependencies do not fit the 16 MiB volume's dependency cache.
    let p = plan(&dir, "build", 25, "", "build = { dep_bytes = \"24MiB\" }");
    let (out, run) = sweep(&dir, &p);
    assert!(
        out.contains("| instance | total build | failed build | fail rate (%) | build time (s) |"),
        "the seed's Jenkins table:\n{out}"
    );
    check_sweep(&run, &["No space left on device"]);
    let s = table(&run, "tenants", "summary");
    for n in [1, 2, 4] {
        // Builds write through the page cache; the iteration's sync charges the write-back
        // to the volume, where a 25-IOPS ceiling holds it back: the capped tenants'
        // iterations take longer than the free ones' (same builds, same CPU).
        let free = f(cell(s, row(s, n, "free"), "time_s"));
        let capped = f(cell(s, row(s, n, "capped"), "time_s"));
        assert!(
            capped > free,
            "at {n} tenants a capped iteration took {capped} s, a free one {free} s"
        );
    }
    // The seed's table: every triggered build counted (3 per tenant), the tiny ones failed.
    let seed = table(&run, "tenants-seed", "tiny (build): builds");
    assert_eq!(
        seed["rows"],
        serde_json::json!([
            ["1", "3", "3", "100.0", "-"],
            ["2", "6", "6", "100.0", "-"],
            ["4", "12", "12", "100.0", "-"]
        ])
    );
    let seed = table(&run, "tenants-seed", "free (build): builds");
    assert_eq!(seed["rows"][2][1], "12", "{seed}");
    assert_eq!(seed["rows"][2][2], "0", "{seed}");
    // The stored sweep's report: its curves drawn by a real browser.
    report_draws_its_charts(
        &dir,
        &[
            "build: seconds per build vs tenants (median tenant)",
            "Failed iterations (%) vs tenants",
        ],
    );
}

#[test]
fn broker_sweep_1_2_4_tenants_is_held_to_its_ceiling_loses_nothing_and_a_full_store_fails() {
    require_app_tools();
    let _h = crate::util::heavy();
    let dir = Dir::new("tenants-broker");
    let ceiling = 50;
    // 1 MiB messages fill a 16 MiB volume's KahaDB journal after some 14 messages (none
    // of it is reclaimed: a journal file is freed only when whole); the producer fails
    // there and ends the iteration, however slowly it sends.
    let p = plan(
        &dir,
        "broker",
        ceiling,
        "broker = { secs = 5 }",
        "broker = { secs = 120, message_size = \"1MiB\" }",
    );
    let (out, run) = sweep(&dir, &p);
    assert!(
        out.contains("| project | in | out | sent | lost |"),
        "the broker's table:\n{out}"
    );
    // KahaDB's ENOSPC, or the broker refusing the send because its store limit (set at
    // start to the file system's free space) is reached.
    check_sweep(&run, &["No space left on device", "Store is Full"]);
    let s = table(&run, "tenants", "summary");
    for n in [1, 2, 4] {
        let free = f(cell(s, row(s, n, "free"), "mean"));
        let capped = f(cell(s, row(s, n, "capped"), "mean"));
        // A persistent send is acknowledged only after KahaDB wrote (and synced) it, one
        // send at a time: each acknowledged message costs at least one write, so the
        // capped tenants' messages/s cannot exceed their volumes' IOPS ceiling.
        assert!(
            capped <= ceiling as f64,
            "at {n}: {capped} msg/s through a {ceiling}-IOPS volume"
        );
        assert!(
            free > capped,
            "at {n}: free {free} msg/s, capped {capped} msg/s"
        );
    }
    // Every acknowledged message arrived (the consumer checked sequence numbers).
    let t = table(&run, "tenants", "tenant iterations");
    for r in t["rows"].as_array().unwrap() {
        if cell(t, r, "class") == "tiny" {
            continue;
        }
        let m = cell(t, r, "metrics");
        assert!(f(&m["sent"]) > 0.0, "{r}");
        assert_eq!(f(&m["lost"]), 0.0, "{r}");
        assert!(f(&m["received"]) >= f(&m["sent"]), "{r}");
        assert!(f(&m["out_msgs_per_sec"]) > 0.0, "{r}");
    }
    // The stored sweep's report: its curves drawn by a real browser.
    report_draws_its_charts(
        &dir,
        &[
            "broker: persistent messages/s in per tenant vs tenants (median tenant)",
            "Failed iterations (%) vs tenants",
        ],
    );
}

#[test]
fn sigterm_mid_broker_sweep_leaves_no_broker_mount_or_loop() {
    require_app_tools();
    let _h = crate::util::heavy();
    let dir = Dir::new("tenants-broker-term");
    let mut child = start_broker_sweep(&dir, &[]);
    assert_eq!(
        mounts::sys::mounts_under(dir.path()).len(),
        4,
        "2 tenants attached"
    );
    let status = signal_and_wait(&mut child, libc::SIGTERM, Duration::from_secs(120));
    assert_eq!(status.code(), Some(143), "exit status after SIGTERM");
    assert_eq!(java_under(dir.path()), 0, "no broker or client JVM left");
    assert!(
        mounts::sys::mounts_under(dir.path()).is_empty(),
        "mounts left: {:?}",
        mounts::sys::mounts_under(dir.path())
    );
    assert!(
        mounts::sys::loops_backed_under(dir.path()).is_empty(),
        "loop devices left: {:?}",
        mounts::sys::loops_backed_under(dir.path())
    );
}
