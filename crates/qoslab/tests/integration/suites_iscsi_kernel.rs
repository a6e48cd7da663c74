//! Seed 002's block suite over iSCSI the seed's way: the load generator attaches the LUN
//! with its kernel initiator ("mount the iSCSI device to each load generator") and fio runs
//! on the disk with `libaio direct=1`, driven over ssh and fio's client/server mode. The
//! load generator is a qemu guest of the test bed with open-iscsi (`Spec::vm_iscsi`:
//! Debian's kernel with its initiator, this machine's iscsid, iscsiadm, sshd and fio), on
//! the bed's bridge beside the coordinator, where the node's iSCSI target listens; this
//! machine's kernel has no initiator.
//!
//! - `--targets login+iscsi://ADDR:PORT/IQN/LUN?initiator=...{host}`: the guest starts
//!   iscsid, makes the run's own interface with its own initiator name (`{host}` made
//!   `h0`), discovers, logs in, finds the LUN's disk in sysfs;
//! - a LUN hidden from the guest (masked to another initiator) stops the suite before any
//!   load, naming the host, the step and the LUN, and the guest is logged out after;
//! - a LUN holding ext4 is refused without `--destroy-data URL`, naming the URL to give
//!   it, and taken with it (the measured run's);
//! - fio on the attached disk is held to the LUN's 200 IOPS ceiling: at most +3% (a
//!   ceiling: a neighbour's load cannot push a rate above it); more than 10% under it is a
//!   shortfall the starved-host rule judges (`RealTime`: inconclusive on a starved host,
//!   never a failure for a neighbour's load);
//! - afterwards no session, interface or iscsid the run started is left on the guest, and
//!   no connection on the node; nor after a SIGTERM while fio runs.
//!
//! One guest, so it is one CPU hog's worth of load and runs in the `light` group, beside
//! the heavy group's measurements, as `iscsi_kernel`'s guest does (docs/TESTING.md). A
//! neighbour's load can only make it slower: the rate's shortfall, and the suite's own
//! real-time limit that a starved guest may miss (its fio server listening within 10 s),
//! are judged by the starved-host rule (inconclusive on a starved host); the other limits
//! give minutes to what takes seconds (the boot 180 s, a run 240 s).
//!
//! What only a second guest checked moved or went: the merge of several load generators
//! into "All clients" is checked by
//! `suites::block_suite_merges_two_load_generators_and_nfs_refuses_a_local_directory`; a
//! volume's ceiling as one budget for several load generators by `suites_nfs` (the QoS is
//! the volume's, whatever the protocol); `{host}` giving each host its own initiator name
//! by `suites`' unit tests (`iscsi_login_tests.rs`; here h0 logs in as `lg-h0`). Two hosts'
//! refusals listed in one error, with the other host logged out, are no longer checked end
//! to end: the guest's logout after a refusal is, for both kinds (no disk; refused after
//! login).
//!
//! Cost (29 Nov 2026, this 2-core machine, `flock /work/wt/heavy.lock cargo nextest run
//! --features e2e -p qoslab --test integration -E 'test(/suites_iscsi_kernel/)'`): 46.8 s,
//! 48.2 s and 48.2 s wall, 188.5, 192.4 and 190.8 IOPS, other helpers' builds at times
//! beside it; of it the guest's boot 13-15 s, the masked LUN's run 6 s, the refusal's 5 s,
//! the measured run 11 s, the SIGTERM run 9 s. Beside a CPU hog (`sh -c 'while :; do :;
//! done'` in the same session): 60.3 s, 179.1 IOPS, inconclusive (starved-host: runnable
//! tasks waited for a CPU 63% of the window); beside a `nice -n -10` one: 47.8 s, 192.5
//! IOPS. An earlier `nice -n -10` run, while two other sessions built (their own
//! autogroups), starved the guest 9-fold (boot 127 s) until its fio server missed its
//! 10 s and the run failed: that is now a shortfall the starved-host rule judges (not
//! re-run under that load). Two guests, in the heavy group, took 81-92 s.

use std::time::{Duration, Instant};

use testbed::{Spec, Testbed};

use crate::bench_util::{Dir, QOSLAB};
use crate::iscsi_node::iscsi_port;
use crate::realtime::RealTime;
use crate::suites::{bench, last_run};
use crate::suites_nfs::suite_args_on;
use crate::util::{heavy, run, Node};

const IQN: &str = "iqn.2026-01.lab.qoslab:suite";
/// The guest's initiator name: `{host}` is the guest's name (h0).
const INITIATOR: &str = "iqn.2026-01.lab.qoslab:lg-{host}";
/// The only initiator LUN 1 is mapped to: not the guest.
const OTHER: &str = "iqn.2026-01.lab.qoslab:lg-other";
/// LUN 0's ceiling.
const CEILING: f64 = 200.0;
/// How long a logged-out session's connection may take to close on the node.
const SETTLE: Duration = Duration::from_secs(5);
/// The measured job's fio runtime (`--runtime`), in seconds, and its ramp (`--ramp`):
/// none, the bound below needs none.
const RUNTIME_S: f64 = 3.0;
const RAMP: &str = "0s";

/// `--suite iscsi` on h0 against `target`: fio's `runtime` after no ramp, then `extra`.
fn args<'a>(target: &'a str, runtime: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = suite_args_on(
        "iscsi",
        "h0",
        target,
        &["--runtime", runtime, "--ramp", RAMP],
    );
    a.extend_from_slice(extra);
    a
}

/// LUN 0: 256 MiB under the ceiling, seen by h0; LUN 1: seen by another initiator only.
fn node_config() -> String {
    format!(
        "[[policy]]\nname = \"lun200\"\nfixed = {{ max_throughput_iops = {CEILING} }}\n\
         [[volume]]\nname = \"lun0\"\nsize = \"256MiB\"\npolicy = \"lun200\"\n\
         [[volume]]\nname = \"hidden\"\nsize = \"16MiB\"\n\
         [iscsi]\niqn = \"{IQN}\"\n\
         [[iscsi.lun]]\nvolume = \"lun0\"\ninitiators = [\"{}\"]\n\
         [[iscsi.lun]]\nvolume = \"hidden\"\ninitiators = [\"{OTHER}\"]\n",
        INITIATOR.replace("{host}", "h0"),
    )
}

/// What the run left on guest `h`: its iSCSI sessions, qoslab interfaces and iscsid (over
/// the bed's multiplexed ssh: one connection for all the checks).
fn left_on(h: &hosts::Host) -> String {
    let o = h
        .run(
            "echo sessions $(ls /sys/class/iscsi_session | wc -l); \
             echo ifaces $(ls /etc/iscsi/ifaces 2>/dev/null | grep -c qoslab); \
             echo iscsid $(pidof iscsid | wc -w)",
        )
        .unwrap_or_else(|e| panic!("ssh {}: {e}", h.name));
    format!("{}{}", o.stdout, o.stderr)
}

/// The node's established iSCSI connections (on its listening `port`), once they have had
/// up to `settle` to close after a logout.
fn node_connections(port: u16, settle: Duration) -> String {
    let deadline = Instant::now() + settle;
    loop {
        let o = run(
            std::process::Command::new("ss").args([
                "-Htn",
                "state",
                "established",
                &format!("( sport = :{port} )"),
            ]),
            Duration::from_secs(10),
        )
        .ok();
        if o.stdout.trim().is_empty() || Instant::now() > deadline {
            return o.stdout.trim().to_string();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Nothing of the run is left on the guest or the node (`when`: after what).
fn nothing_left(h0: &hosts::Host, port: u16, when: &str) {
    let left = left_on(h0);
    assert_eq!(left, "sessions 0\nifaces 0\niscsid 0\n", "h0 {when}");
    assert_eq!(
        node_connections(port, SETTLE),
        "",
        "connections left on the node {when}"
    );
}

/// A real-time bound of the suite's own that a starved guest breaks: `fio --server` must
/// listen within 10 s of its start (`hosts::remote`), which a TCG guest starved by a
/// neighbour may miss. Such a failure (the run failed with that message) is returned, for
/// the starved-host rule to judge; any other outcome is the test's to check.
fn starved_guest(code: Option<i32>, err: &str) -> Option<String> {
    (!matches!(code, Some(0 | 3)) && err.contains("did not listen on port"))
        .then(|| err.trim().to_string())
}

/// The measured run (`out`: its report) attached `lun0` on h0 with h0's own name, and its
/// one job on h0 was held to the ceiling.
fn held_to_the_ceiling(d: &Dir, out: &str, lun0: &str, rt: &mut RealTime) {
    let h0_name = INITIATOR.replace("{host}", "h0");
    // The guest attached the LUN with its own name and checked the disk as a block target
    // of an iSCSI session, at the volume's size.
    assert!(
        out.lines().any(|l| l.starts_with("h0: /dev/sd")
            && l.ends_with(&format!(
                " on block (256.0 MiB available), logged in to {lun0} as {h0_name}"
            ))),
        "h0 attached the LUN: {out}"
    );
    // One load generator: fio's client reports it alone (no merged "All clients").
    let run_json = last_run(d);
    let jobs: Vec<&serde_json::Value> = run_json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["workload"] == "iscsi")
        .collect();
    assert_eq!(jobs.len(), 1, "{}", run_json["jobs"]);
    let res = jobs[0]["results"].as_array().unwrap();
    assert_eq!(res.len(), 1, "{res:?}");
    assert!(
        res[0]["client"].as_str().unwrap().starts_with("h0:"),
        "{res:?}"
    );
    let iops = res[0]["write"]["iops"].as_f64().unwrap();
    assert_eq!(res[0]["read"]["iops"].as_f64(), Some(0.0), "{res:?}");
    eprintln!(
        "4k randwrite on h0: {iops:.1} IOPS (ceiling {CEILING}, fio {RUNTIME_S} s after {RAMP})"
    );
    // The bound. The pacer spaces the LUN's requests exactly, 5 ms apart at 200 IOPS: over
    // fio's 3 s it completes 600, plus the pacer's 5 ms of burst (1 request) and one at
    // each edge of the window: at most 602 / 3 s = 200.7 IOPS (+0.3%), with or without a
    // ramp (a ramp only lets the queue fill first, which the pacer makes no faster). Above
    // +3% (the bound, iscsi_kernel's too) the ceiling leaked: a plain failure, a
    // neighbour's load cannot push a rate above a ceiling. Below it: fio's runtime also
    // counts draining its 32 queued writes at the end (160 ms at 200 IOPS) without
    // counting them, so the figure reads 200 x 3 / 3.16 = 190 (-5%; measured 186-193).
    // Rate is lost beyond that only when the queue runs dry: a TCG guest spends CPU per
    // request, and one stalled more than the 32 requests' 160 ms by a neighbour (the light
    // group runs beside the heavy one) falls short. More than 10% short is a shortfall the
    // starved-host rule judges (`RealTime`): inconclusive on a starved host, else a failure.
    assert!(
        iops <= CEILING * 1.03,
        "{iops:.1} IOPS above the {CEILING} IOPS ceiling (+3%)\n{out}"
    );
    if iops < CEILING * 0.90 {
        rt.short(format!(
            "{iops:.1} IOPS, more than 10% under the {CEILING} IOPS ceiling"
        ));
    }
}

#[test]
fn seed002_iscsi_suite_kernel_attached_on_qemu_guest_hosts() {
    let _g = heavy();
    let t0 = Instant::now();
    let bed = Testbed::build(&Spec {
        hosts: 0,
        vm_hosts: 1,
        vm_iscsi: true,
        ..Spec::default()
    })
    .unwrap();
    let booted = t0.elapsed();
    assert!(bed.hosts.iter().all(|h| h.qemu), "{:?}", bed.hosts);
    let h0 = bed.suite_hosts().unwrap().remove(0);
    let addr = bed.coordinator_addr.clone();
    // Beyond loopback the node asks every initiator for CHAP, which the suite does not
    // log in with yet: the bed's bridge is a /24 of this machine's own, a network we trust.
    let node = Node::start_with(
        &node_config(),
        &["--listen-iscsi", &format!("{addr}:0"), "--insecure-iscsi"],
    );
    let port = iscsi_port(&node);
    let url = |lun: u16, wait: &str| {
        format!("login+iscsi://{addr}:{port}/{IQN}/{lun}?initiator={INITIATOR}{wait}")
    };
    let d = Dir::new("suites-iscsi-kernel");
    let runtime = format!("{RUNTIME_S}s");
    let h0_name = INITIATOR.replace("{host}", "h0");

    // LUN 1 is masked to another initiator: h0 logs in and finds no disk for it. The suite
    // stops before any load, naming the host, the step and the LUN; h0 is logged out.
    let phase = Instant::now();
    let masked = url(1, "&wait=1");
    let (code, out, err) = bench(&d, &bed, &args(&masked, "1s", &[]));
    assert_eq!(code, Some(2), "{out}{err}");
    eprintln!(
        "LUN 1, masked from h0 ({:?}): {}",
        phase.elapsed(),
        err.trim()
    );
    assert!(err.contains("1 target(s) not usable"), "{err}");
    assert!(
        err.contains(&format!(
            "h0: {masked}: no LUN 1: logged in to {IQN} as {h0_name}, no disk for LUN 1 after 1 s"
        )),
        "h0 refused at its LUN: {err}"
    );
    nothing_left(&h0, port, "after the masked LUN");

    // LUN 0 holds an ext4 file system (made on the volume's file on this host): h0
    // attaches it and is refused to write it without consent, naming the URL to give
    // --destroy-data. The suite stops before any load; h0 is logged out.
    let mkfs = run(
        std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(node.volume_file("lun0")),
        Duration::from_secs(60),
    );
    assert!(mkfs.status.success(), "{mkfs}");
    let phase = Instant::now();
    let lun0 = url(0, "");
    let (code, out, err) = bench(&d, &bed, &args(&lun0, "1s", &[]));
    assert_eq!(code, Some(2), "{out}{err}");
    eprintln!("LUN 0 with ext4 ({:?}): {}", phase.elapsed(), err.trim());
    assert!(err.contains("1 target(s) not usable"), "{err}");
    assert!(
        err.contains(&format!(
            "host h0: refusing to write {lun0}: attached as /dev/sd"
        )) && err.contains(&format!(
            "ext4 signature at offset 0x438 (name it in --destroy-data {lun0} to overwrite it)"
        )),
        "h0 refused to write the ext4 LUN: {err}"
    );
    nothing_left(&h0, port, "after the refusal");

    let mut rt = RealTime::start();
    let phase = Instant::now();
    // LUN 0's ext4 is overwritten with consent: the URL as given.
    // One job, random writes (they overwrite the ext4: consent taken), and no prepare step:
    // a block device needs no file laid out, and the ceiling needs one run to be checked.
    let measured = [
        "--jobs",
        "fio.write.random",
        "--skip-prepare",
        "--destroy-data",
        &lun0,
    ];
    let (code, out, err) = bench(&d, &bed, &args(&lun0, &runtime, &measured));
    eprintln!(
        "iscsi suite on a qemu guest (kernel initiator): {:?} (boot {booted:?})\n{out}",
        phase.elapsed()
    );
    if let Some(timeout) = starved_guest(code, &err) {
        rt.short(format!("the measured run: {timeout}"));
    } else {
        // 0: every verdict held; 3: a steady-state verdict inconclusive.
        assert!(
            matches!(code, Some(0 | 3)),
            "{out}{err}\n--- node ---\n{}",
            node.stderr()
        );
        held_to_the_ceiling(&d, &out, &lun0, &mut rt);
    }
    // Logged out, the interface and iscsid gone: the guest is as the suite found it.
    nothing_left(&h0, port, "after the measured run");
    rt.finish();

    // SIGTERM while the guest is logged in and fio runs a measured job (no prepare step):
    // the session is logged out.
    let cfg = bed.ssh_config.display().to_string();
    let mut a = args(&lun0, "60s", &measured);
    a.extend(["--ssh-config", &cfg, "--db", "sig.db"]);
    // Its stderr, for the one way it may end by itself: a starved guest's fio server late.
    let err_path = d.path().join("sig.err");
    let mut child = std::process::Command::new(QOSLAB)
        .arg("bench")
        .args(&a)
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let mut rt = RealTime::start();
    let start = Instant::now();
    // Whether the run ended by itself before it was signalled: only a starved guest's
    // late fio server may end it (a shortfall the starved-host rule judges).
    let ended = |child: &mut std::process::Child, rt: &mut RealTime| -> bool {
        let Some(status) = child.try_wait().unwrap() else {
            return false;
        };
        let err = std::fs::read_to_string(&err_path).unwrap_or_default();
        let timeout = starved_guest(status.code(), &err)
            .unwrap_or_else(|| panic!("the run ended before SIGTERM: {status}\n{err}"));
        rt.short(format!("the SIGTERM run, before fio ran: {timeout}"));
        true
    };
    // A loaded machine makes these slow; only a hang reaches the bench helper's limit.
    let limit = Duration::from_secs(240);
    let mut signalled = false;
    while !ended(&mut child, &mut rt) {
        if !left_on(&h0).starts_with("sessions 1\n") {
            assert!(start.elapsed() < limit, "the guest never logged in");
            std::thread::sleep(Duration::from_millis(300));
            continue;
        }
        let during = node_connections(port, Duration::ZERO);
        if during.is_empty() {
            // The guest's session stays in its sysfs while its kernel logs in again (a
            // connection dropped on a slow guest): look again until the limit. Once seen,
            // the node's connections are the guest's one.
            assert!(
                start.elapsed() < limit,
                "the guest's session never had a connection on the node"
            );
            std::thread::sleep(Duration::from_millis(300));
            continue;
        }
        assert_eq!(
            during.lines().count(),
            1,
            "the guest's connection: {during}"
        );
        // fio's client (the suite's child) drives the guest: a measured job is running.
        let pid = child.id().to_string();
        let fio = run(
            std::process::Command::new("pgrep").args(["-P", &pid, "-x", "fio"]),
            Duration::from_secs(10),
        );
        if !fio.status.success() {
            assert!(start.elapsed() < limit, "fio never started");
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        std::thread::sleep(Duration::from_secs(1));
        let kill = run(
            std::process::Command::new("kill").args(["-TERM", &pid]),
            Duration::from_secs(10),
        );
        assert!(kill.status.success(), "{kill}");
        let status = child.wait().unwrap();
        eprintln!("SIGTERM mid-suite: {status} after {:?}", start.elapsed());
        assert!(!status.success(), "{status}");
        signalled = true;
        break;
    }
    eprintln!("SIGTERM sent while fio ran: {signalled}");
    nothing_left(&h0, port, "after SIGTERM");
    rt.finish();
    drop(node);
    drop(bed);
    eprintln!(
        "suites_iscsi_kernel: {:.1} s wall",
        t0.elapsed().as_secs_f64()
    );
}
