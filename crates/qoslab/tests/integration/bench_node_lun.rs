//! Issue 34: `qoslab bench PLAN --node URL` with a plan volume declared a LUN
//! (`[[iscsi.lun]]`): the run makes the volume, LUN `/vol/db/bench` in it, an igroup of the
//! harness's initiator and the map over the node's REST API, drives the LUN with fio's
//! libiscsi engine at the node's iSCSI listener (`--listen-iscsi`), judges the plan's
//! 400 IOPS ceiling on the node's samples of the LUN's block volume (`db:bench`), and
//! deletes what it made while the node's own LUN, igroup and map stay, on SIGTERM too. A
//! node without iSCSI is refused before anything is made; the node's own LUN at the
//! plan's path is written only with `--overwrite`. The plan's other `[iscsi]` keys:
//! `lun`, `block_size = 512` and `initiators` of the harness alone honoured; a taken
//! number, a 4096-byte block, another initiator and another target name refused at the
//! plan's line before anything is made.
//!
//! Cost: ~8 s (a 2 s job after a 1 s ramp; a run stopped 1.5 s into its job), and ~3 s
//! for the keys (refusals, then a 1 s job). Light group: its timed checks are the
//! ceiling, an upper bound a neighbour cannot break, and a shortfall, a real-time bound a
//! starved host makes inconclusive (`RealTime`); 400 IOPS of fio and the node are less
//! than the CPU hog every measuring test survives (as bench_iscsi).

use std::process::Output;
use std::time::Duration;

use crate::api_util::Api;
use crate::bench_util::{
    assert_over_libiscsi, job_files, json_run, qoslab, stored_rows, text, Dir,
};
use crate::iscsi::require_libiscsi;
use crate::iscsi_node::iscsi_port;
use crate::realtime::RealTime;
use crate::util::{heavy, require_tool, Node};

const LIMIT: Duration = Duration::from_secs(60);
const LUNS: &str = "/api/storage/luns?fields=name";
const IGROUPS: &str = "/api/protocols/san/igroups?fields=name";
const MAPS: &str = "/api/protocols/san/lun-maps?fields=*";
const VOLUMES: &str = "/api/storage/volumes?fields=name";

/// The node's own: a volume `keep` with LUN `/vol/keep/l0`, mapped to igroup `hosts`.
const NODE: &str = "[[volume]]\nname = \"keep\"\nsize = \"64MiB\"\n";

const PLAN: &str = r#"[bench]
name = "lun-on-node"
runtime = "2s"
ramp = "1s"

[[policy]]
name = "iops400"
fixed = { max_throughput_iops = 400 }

[[volume]]
name = "db"
size = "256MiB"
policy = "iops400"

[[iscsi.lun]]
volume = "db"

[[workload]]
name = "db-mix"
volume = "db"
fio = { rw = "randrw", bs = "4k", iodepth = 16 }
expect = ["iops <= policy.ceiling +-3%"]
"#;

/// The names of a collection's records (`field`: `name`, or a map's LUN path).
fn names(api: &Api, path: &str, field: &[&str]) -> Vec<String> {
    let v = api.get_ok(path);
    let mut out: Vec<String> = v["records"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {v}"))
        .iter()
        .map(|r| {
            field
                .iter()
                .fold(r, |r, f| &r[*f])
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

/// `bench p.toml --node URL --db DB EXTRA...`: the arguments of every run here.
fn bench_args<'a>(url: &'a str, db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["bench", "p.toml", "--node", url, "--db", db];
    args.extend_from_slice(extra);
    args
}

/// `qoslab bench p.toml --node URL --db DB EXTRA...` in `d`: the output and its text.
fn bench_on(d: &Dir, url: &str, db: &str, extra: &[&str]) -> (Output, String, String) {
    let o = qoslab(d, &bench_args(url, db, extra), LIMIT);
    let (out, err) = text(&o);
    (o, out, err)
}

/// What the node has is only its own: volume `keep`, its LUN, igroup `hosts` and the map
/// (`when`: after what).
fn only_the_nodes_own(api: &Api, when: &str) {
    assert_eq!(names(api, LUNS, &["name"]), ["/vol/keep/l0"], "{when}");
    assert_eq!(names(api, IGROUPS, &["name"]), ["hosts"], "{when}");
    assert_eq!(
        names(api, MAPS, &["lun", "name"]),
        ["/vol/keep/l0"],
        "{when}"
    );
    assert_eq!(names(api, VOLUMES, &["name"]), ["keep"], "{when}");
}

/// `qoslab bench p.toml --node URL` for 60 s in the background, once it has mapped its LUN.
fn started_and_mapped(d: &Dir, url: &str, api: &Api) -> std::process::Child {
    let mut child = std::process::Command::new(crate::util::QOSLAB)
        .args(["--log-level", "warn"])
        .args(bench_args(
            url,
            "r3.db",
            &["--runtime", "60s", "--ramp", "0s"],
        ))
        .current_dir(d.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("qoslab bench");
    let since = std::time::Instant::now();
    while names(api, MAPS, &["lun", "name"]).len() < 2 {
        if since.elapsed() > LIMIT || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            panic!("the run never mapped its LUN");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

#[test]
fn a_plans_lun_on_a_running_node_is_made_driven_over_iscsi_judged_and_removed() {
    require_tool("fio");
    require_libiscsi();
    let _g = heavy();
    let mut rt = RealTime::start();
    let d = Dir::new("node-lun");
    d.write("p.toml", PLAN);

    // A node without iSCSI: refused, naming the volume and the flag; nothing made there.
    let plain = Node::start(NODE);
    let (o, out, err) = bench_on(&d, &plain.api_url(), "r.db", &[]);
    assert_ne!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains(&format!(
            "volume \"db\" is a LUN in the plan's [[iscsi.lun]], and --node {} serves no iSCSI",
            plain.api_url()
        )) && err.contains("start the node with --listen-iscsi"),
        "{err}"
    );
    let api = Api::new(&plain.api_url());
    let policies = |api: &Api| names(api, "/api/storage/qos/policies?fields=name", &["name"]);
    assert!(!policies(&api).contains(&"iops400".to_string()));
    assert_eq!(names(&api, VOLUMES, &["name"]), ["keep"]);
    drop(plain);

    let node = Node::start_with(NODE, &["--listen-iscsi", "127.0.0.1:0"]);
    let port = iscsi_port(&node);
    let url = node.api_url();
    let api = Api::new(&url);
    let policies_before = policies(&api);
    api.create(
        "/api/storage/luns",
        r#"{"name": "/vol/keep/l0", "os_type": "linux", "space": {"size": 1048576}}"#,
    );
    api.create(
        "/api/protocols/san/igroups",
        r#"{"name": "hosts", "os_type": "linux", "initiators": [{"name": "iqn.1993-08.org.debian:01:h"}]}"#,
    );
    api.create(
        "/api/protocols/san/lun-maps",
        r#"{"lun": {"name": "/vol/keep/l0"}, "igroup": {"name": "hosts"}}"#,
    );

    // The dry run says how the volume is reached; nothing is made.
    let (o, out, err) = bench_on(&d, &url, "r.db", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("; db over the node's iSCSI target: its LUN /vol/db/bench (made and mapped to iqn.2026-01.lab.qoslab:bench when missing))"),
        "{out}"
    );
    assert_eq!(names(&api, LUNS, &["name"]), ["/vol/keep/l0"]);

    // The run writes to the LUN it made: no --overwrite is needed.
    let (o, out, err) = bench_on(&d, &url, "r.db", &[]);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("PASS iops <= policy.ceiling +-3%"), "{out}");
    assert!(!out.contains("not applied"), "{out}");
    // Judged on the node's samples of the LUN's block volume, fio's figure beside them.
    assert!(out.contains(" at the node (fio "), "{out}");
    for line in [
        "LUN /vol/db/bench, igroup qoslab_bench_",
        "volume db is reached over iSCSI: LUN /vol/db/bench (LUN 0 of iqn.",
        "its samples the node's block volume db:bench",
        "deleted what the run created on the node: map of /vol/db/bench to qoslab_bench_",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }

    // fio drove the LUN over iSCSI as the harness's initiator at the node's listener.
    let files = job_files(&d, "r.db");
    assert_eq!(files.len(), 1, "{files:?}");
    assert_over_libiscsi(&files);
    assert!(
        files[0]
            .1
            .contains(&format!("filename=iscsi\\://127.0.0.1\\:{port}/")),
        "{}",
        files[0].1
    );
    let sampled = stored_rows(&d, "r.db", "SELECT DISTINCT volume FROM node_samples");
    assert!(
        sampled.contains(&vec!["db:bench".to_string()]),
        "{sampled:?}"
    );

    // The stored run judged it: the verdict passed, at or under the ceiling.
    let run = json_run(&d, "r.db");
    let job = &run["jobs"][0];
    let rw = &job["results"][0];
    let iops =
        rw["read"]["iops"].as_f64().unwrap_or(0.0) + rw["write"]["iops"].as_f64().unwrap_or(0.0);
    eprintln!("LUN /vol/db/bench on --node, 400 IOPS ceiling: fio {iops:.0} IOPS");
    assert!(iops > 0.0 && iops <= 400.0 * 1.03, "{iops}\n{run}");
    let stored = job.to_string();
    assert!(
        stored.contains("iops <= policy.ceiling +-3%") && stored.contains("at the node (fio"),
        "{stored}"
    );
    if iops < 300.0 {
        rt.short(format!(
            "the LUN got {iops:.0} IOPS of its 400 IOPS ceiling"
        ));
    }

    // What the run made is gone; the node's own LUN, igroup and map remain.
    only_the_nodes_own(&api, "after the run");
    assert_eq!(policies(&api), policies_before);

    // SIGTERM while fio drives the LUN: the run's map, LUN and igroup are deleted too.
    let mut child = started_and_mapped(&d, &url, &api);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let since = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if since.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("qoslab bench still running {LIMIT:?} after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
    only_the_nodes_own(&api, "after SIGTERM");

    // SIGKILL leaves them; the next run on the node deletes them first (their comments
    // name a run of this boot whose process is gone).
    let mut child = started_and_mapped(&d, &url, &api);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_eq!(
        names(&api, LUNS, &["name"]),
        ["/vol/db/bench", "/vol/keep/l0"]
    );
    assert_eq!(names(&api, IGROUPS, &["name"]).len(), 2);
    let (_, out, err) = bench_on(&d, &url, "r4.db", &["--runtime", "1s", "--ramp", "0s"]);
    assert!(
        out.contains("deleted LUN /vol/db/bench, igroup qoslab_bench_")
            && out.contains(", volume db a killed run left on"),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    only_the_nodes_own(&api, "after the run that followed SIGKILL");
    // A killed run's policies are not marked: its policy stays, deleted here.
    api.req("DELETE", "/api/storage/qos/policies?name=iops400", None);
    assert_eq!(policies(&api), policies_before);

    // The node's own LUN at the plan volume's path is used as it is: a plan that writes to
    // it is refused without --overwrite, and what the run made for it is deleted.
    api.create(
        "/api/storage/volumes",
        r#"{"name": "db", "size": 268435456}"#,
    );
    api.create(
        "/api/storage/luns",
        r#"{"name": "/vol/db/bench", "os_type": "linux", "space": {"size": 1048576}}"#,
    );
    let (o, out, err) = bench_on(&d, &url, "r2.db", &[]);
    assert_eq!(o.status.code(), Some(2), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains(&format!(
            "volume \"db\": the node's own LUN /vol/db/bench (LUN 0 of \
             iqn.2026-01.lab.qoslab:target0 at 127.0.0.1:{port}): the run writes to it \
             (p.toml:21: workload \"db-mix\") and its data will be destroyed"
        )) && err.contains("--overwrite allows that"),
        "{err}"
    );
    assert!(!d.path().join("r2.db").exists(), "nothing is stored");
    assert_eq!(
        names(&api, LUNS, &["name"]),
        ["/vol/db/bench", "/vol/keep/l0"]
    );
    assert_eq!(names(&api, IGROUPS, &["name"]), ["hosts"]);
    assert_eq!(names(&api, MAPS, &["lun", "name"]), ["/vol/keep/l0"]);
    assert_eq!(policies(&api), policies_before);
    rt.finish();
}

/// A plan's LUN with the keys of node.toml's `[[iscsi.lun]]` beyond `volume`.
const KEYS_PLAN: &str = r#"[bench]
name = "lun-keys"
runtime = "1s"
ramp = "0s"

[[volume]]
name = "db"
size = "64MiB"

[[iscsi.lun]]
volume = "db"
lun = 5
block_size = 512
initiators = ["iqn.2026-01.lab.qoslab:bench"]

[[workload]]
name = "db-read"
volume = "db"
fio = { rw = "randread", bs = "4k", iodepth = 4 }
"#;

/// What the node has is its own only: volume `keep`, LUN `/vol/keep/l0`, igroup `benchers`.
fn nothing_made(api: &Api, when: &str) {
    assert_eq!(names(api, VOLUMES, &["name"]), ["keep"], "{when}");
    assert_eq!(names(api, LUNS, &["name"]), ["/vol/keep/l0"], "{when}");
    assert_eq!(names(api, IGROUPS, &["name"]), ["benchers"], "{when}");
}

#[test]
fn a_plans_lun_keys_on_a_running_node_are_honoured_or_refused_before_anything_is_made() {
    require_tool("fio");
    require_libiscsi();
    let _g = heavy();
    let d = Dir::new("node-lun-keys");
    let node = Node::start_with(NODE, &["--listen-iscsi", "127.0.0.1:0"]);
    let port = iscsi_port(&node);
    let url = node.api_url();
    let api = Api::new(&url);
    // The node's own igroup of the harness's initiator shows it LUN /vol/keep/l0 at 5.
    api.create(
        "/api/storage/luns",
        r#"{"name": "/vol/keep/l0", "os_type": "linux", "space": {"size": 1048576}}"#,
    );
    api.create(
        "/api/protocols/san/igroups",
        r#"{"name": "benchers", "os_type": "linux", "initiators": [{"name": "iqn.2026-01.lab.qoslab:bench"}]}"#,
    );
    api.create(
        "/api/protocols/san/lun-maps",
        r#"{"lun": {"name": "/vol/keep/l0"}, "igroup": {"name": "benchers"}, "logical_unit_number": 5}"#,
    );
    let refused = |plan: &str, extra: &[&str], want: &str| {
        d.write("p.toml", plan);
        let (o, out, err) = bench_on(&d, &url, "k.db", extra);
        assert_eq!(o.status.code(), Some(2), "stdout:\n{out}\nstderr:\n{err}");
        assert!(err.contains(want), "{want}\n{err}");
        nothing_made(&api, want);
    };

    // lun = 5: that initiator sees the node's LUN there already.
    refused(
        KEYS_PLAN,
        &[],
        &format!(
            "p.toml:12: iscsi.lun[0] (volume \"db\"): lun = 5: the run maps LUN /vol/db/bench \
             to iqn.2026-01.lab.qoslab:bench at 5, and on --node {url} that initiator sees LUN \
             /vol/keep/l0 at 5 already (igroup \"benchers\")"
        ),
    );
    // A 4096-byte block: the node's REST LUNs are 512-byte; refused on a dry run too.
    let b4k = KEYS_PLAN.replace("block_size = 512", "block_size = 4096");
    let want = "p.toml:13: iscsi.lun[0] (volume \"db\"): block_size = 4096: with --node the run \
                makes LUN /vol/db/bench through the running node's REST API, and the node \
                serves such LUNs with 512-byte blocks";
    refused(&b4k, &["--dry-run"], want);
    refused(&b4k, &[], want);
    // Other initiators: the run's igroup holds the harness's only.
    refused(
        &KEYS_PLAN.replace(
            "initiators = [\"iqn.2026-01.lab.qoslab:bench\"]",
            "initiators = [\"iqn.2026-01.lab.qoslab:bench\", \"iqn.1993-08.org.debian:01:h\"]",
        ),
        &[],
        "p.toml:14: iscsi.lun[0] (volume \"db\"): initiators = [\"iqn.2026-01.lab.qoslab:bench\", \
         \"iqn.1993-08.org.debian:01:h\"]: with --node the run maps LUN /vol/db/bench to an \
         igroup of its own holding iqn.2026-01.lab.qoslab:bench only",
    );
    // The target's name is the node's.
    refused(
        &KEYS_PLAN.replace(
            "[[iscsi.lun]]\n",
            "[iscsi]\niqn = \"iqn.2026-01.lab.qoslab:other\"\n\n[[iscsi.lun]]\n",
        ),
        &[],
        &format!(
            "p.toml:11: iscsi.iqn = \"iqn.2026-01.lab.qoslab:other\": with --node fio logs in to \
             the running node's target, and --node {url} names it iqn.2026-01.lab.qoslab:target0"
        ),
    );

    // lun = 6, block_size = 512, the harness's initiator alone: honoured, as the dry run says.
    d.write("p.toml", &KEYS_PLAN.replace("lun = 5", "lun = 6"));
    let (o, out, err) = bench_on(&d, &url, "k.db", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains(
            "; db over the node's iSCSI target: its LUN /vol/db/bench (made and mapped to \
             iqn.2026-01.lab.qoslab:bench when missing; at LUN 6 (the plan's lun); 512-byte \
             blocks (the plan's block_size); seen by iqn.2026-01.lab.qoslab:bench only (the \
             plan's initiators))"
        ),
        "{out}"
    );
    nothing_made(&api, "after the dry run");
    let (o, out, err) = bench_on(&d, &url, "k.db", &[]);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    for line in [
        "map of /vol/db/bench to qoslab_bench_".to_string(),
        format!(
            "volume db is reached over iSCSI: LUN /vol/db/bench (LUN 6 of \
             iqn.2026-01.lab.qoslab:target0 at 127.0.0.1:{port})"
        ),
    ] {
        assert!(out.contains(&line), "{line}\n{out}");
    }
    let files = job_files(&d, "k.db");
    assert_over_libiscsi(&files);
    let filename = files[0]
        .1
        .lines()
        .find(|l| l.starts_with("filename="))
        .unwrap_or_default()
        .to_string();
    assert!(filename.ends_with("/6"), "{filename}");
    nothing_made(&api, "after the run");
}
