#![cfg(feature = "e2e")]
//! libiscsi's conformance suite (`iscsi-test-cu --dataloss`) against qoslab's target and
//! against tgt, the open peer, on this machine, side by side: qoslab must pass at
//! least as many tests of each family (SCSI, iSCSI) as tgt, and fail none but the ones
//! docs/ISCSI.md explains. Cost: ~30-40 s (the suite sleeps 3 s in several reset tests and
//! waits out 3 s time-outs in the CmdSN tests, for each target).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use iscsi_server::{Config, FileLun, LogicalUnit, Server, StaticLun, StaticTarget};
use test_support::{free_port, TestDir};

const QOSLAB_IQN: &str = "iqn.2026-01.lab.qoslab:conformance";
const TGT_IQN: &str = "iqn.2026-01.lab.qoslab:tgt-peer";
const LUN_BYTES: u64 = 256 << 20;

/// The failures docs/ISCSI.md explains (section "libiscsi's suite"), by `Suite.Test`.
const EXPLAINED: &[&str] = &["GetLBAStatus.UnmapSingle", "iSCSIdatasn.iSCSIDataSnInvalid"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    /// Passed by skipping ("[SKIPPED] ... is not implemented", "not removable", ...).
    Skipped,
    Failed,
}

/// `Suite.Test` -> outcome, from the suite's verbose output.
fn outcomes(out: &str) -> BTreeMap<String, Outcome> {
    let mut m = BTreeMap::new();
    let mut suite = String::new();
    let mut current: Option<(String, bool)> = None;
    let finish =
        |m: &mut BTreeMap<String, Outcome>, cur: &mut Option<(String, bool)>, failed: bool| {
            if let Some((name, skipped)) = cur.take() {
                let o = if failed {
                    Outcome::Failed
                } else if skipped {
                    Outcome::Skipped
                } else {
                    Outcome::Passed
                };
                m.insert(name, o);
            }
        };
    for line in out.lines() {
        if let Some(s) = line.strip_prefix("Suite: ") {
            suite = s.trim().to_string();
            continue;
        }
        if let Some(rest) = line.trim_start().strip_prefix("Test: ") {
            let (name, tail) = rest.split_once(" ...").unwrap_or((rest, ""));
            current = Some((format!("{suite}.{}", name.trim()), false));
            if tail.contains("[SKIPPED]") {
                current.as_mut().unwrap().1 = true;
            }
            if tail.trim_end().ends_with("passed") {
                finish(&mut m, &mut current, false);
            } else if tail.trim_end().ends_with("FAILED") {
                finish(&mut m, &mut current, true);
            }
            continue;
        }
        if current.is_some() {
            if line.contains("[SKIPPED]") {
                current.as_mut().unwrap().1 = true;
            }
            let t = line.trim_end();
            if t.ends_with("passed") {
                finish(&mut m, &mut current, false);
            } else if t == "FAILED" || t.ends_with("...FAILED") {
                finish(&mut m, &mut current, true);
            }
        }
    }
    m
}

/// The summary line's (total, passed) for tests.
fn summary(out: &str) -> (usize, usize) {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("tests "))
        .unwrap_or_else(|| panic!("no summary in iscsi-test-cu's output:\n{out}"));
    let n: Vec<usize> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[2])
}

fn run_suite(family: &str, url: &str) -> String {
    let out = Command::new("timeout")
        .args([
            "600",
            "iscsi-test-cu",
            "--dataloss",
            &format!("--test={family}"),
            url,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("iscsi-test-cu runs (scripts/install-deps.sh installs libiscsi-bin)");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("Run Summary"),
        "iscsi-test-cu against {url} did not finish ({}):\n{text}",
        out.status
    );
    text
}

/// tgtd in the foreground on its own control port, killed with this test (and with the
/// thread that started it).
struct Tgt {
    child: Child,
    control: String,
}

impl Drop for Tgt {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tgtadm(control: &str, args: &[&str]) {
    let out = Command::new("tgtadm")
        .args(["-C", control, "--lld", "iscsi"])
        .args(args)
        .output()
        .expect("tgtadm runs (scripts/install-deps.sh installs tgt)");
    assert!(
        out.status.success(),
        "tgtadm {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn start_tgt(dir: &Path, port: u16) -> Tgt {
    // A control port of our own (tgtd's socket is per port), unlikely to meet another's
    // (tgtadm takes at most 32767).
    let control = (20_000 + std::process::id() % 10_000).to_string();
    let mut cmd = Command::new("/usr/sbin/tgtd");
    cmd.args([
        "-f",
        "-C",
        &control,
        "--iscsi",
        &format!("portal=127.0.0.1:{port}"),
    ])
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(dir.join("tgtd.log")).unwrap());
    // SAFETY: prctl in the child before exec; async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let tgt = Tgt {
        child: cmd.spawn().expect("tgtd starts"),
        control,
    };
    // tgtd is up when its control socket answers.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let ok = Command::new("tgtadm")
            .args([
                "-C",
                &tgt.control,
                "--lld",
                "iscsi",
                "--op",
                "show",
                "--mode",
                "target",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "tgtd did not answer within 10 s; see tgtd.log"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let img = dir.join("tgt.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(LUN_BYTES)
        .unwrap();
    let c = tgt.control.clone();
    tgtadm(
        &c,
        &[
            "--op", "new", "--mode", "target", "--tid", "1", "-T", TGT_IQN,
        ],
    );
    tgtadm(
        &c,
        &[
            "--op",
            "new",
            "--mode",
            "logicalunit",
            "--tid",
            "1",
            "--lun",
            "1",
            "-b",
            img.to_str().unwrap(),
        ],
    );
    tgtadm(
        &c,
        &[
            "--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL",
        ],
    );
    tgt
}

/// qoslab's target in process, on a runtime of its own, until the sender is dropped.
fn start_qoslab(
    dir: &Path,
) -> (
    u16,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let lun = FileLun::open(&dir.join("qoslab.img"), Some(LUN_BYTES), 512, false).unwrap();
    let target = StaticTarget {
        name: QOSLAB_IQN.into(),
        alias: None,
        luns: vec![StaticLun {
            number: 0,
            lu: LogicalUnit::new(Arc::new(lun)),
            initiators: None,
        }],
        auth: None,
    };
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let server = Server::bind("127.0.0.1:0", Arc::new(target), Config::default())
                .await
                .unwrap();
            port_tx.send(server.local_addr().unwrap().port()).unwrap();
            let stop = async move {
                let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
            };
            server.run(stop).await.unwrap();
        });
    });
    (port_rx.recv().unwrap(), stop_tx, h)
}

#[test]
fn libiscsi_suite_passes_at_least_as_many_tests_on_qoslab_as_on_tgt() {
    // The LUN files live in memory: the suite's --dataloss writes (two 256 MiB LUNs) kept
    // the disk 97% busy when they were on it, which a measuring test beside this one read
    // as its own device's limit. On tmpfs this test is light (it mostly waits out the
    // suite's sleeps and time-outs).
    let dir = TestDir::new_in(std::path::Path::new("/dev/shm"), "iscsi-conformance");
    let (qport, stop, server) = start_qoslab(&dir);
    let tport = free_port();
    let tgt = start_tgt(&dir, tport);
    let qurl = format!("iscsi://127.0.0.1:{qport}/{QOSLAB_IQN}/0");
    let turl = format!("iscsi://127.0.0.1:{tport}/{TGT_IQN}/1");
    let mut report = String::new();
    let mut unexplained = Vec::new();
    for family in ["SCSI", "iSCSI"] {
        // Both targets at once: most of a run is the suite's own sleeps and time-outs.
        let (q, t) = std::thread::scope(|s| {
            let t = s.spawn(|| run_suite(family, &turl));
            (run_suite(family, &qurl), t.join().expect("tgt's run"))
        });
        let (qo, to) = (outcomes(&q), outcomes(&t));
        let ((qn, qp), (tn, tp)) = (summary(&q), summary(&t));
        assert_eq!(qn, tn, "the same {family} tests ran on both");
        assert_eq!(
            qo.len(),
            qn,
            "every {family} test's outcome parsed from qoslab's run"
        );
        let count = |m: &BTreeMap<String, Outcome>, o| m.values().filter(|v| **v == o).count();
        report += &format!(
            "{family}: qoslab {qp}/{qn} passed ({} by skipping), tgt {tp}/{tn} passed ({} by skipping)\n",
            count(&qo, Outcome::Skipped),
            count(&to, Outcome::Skipped)
        );
        for (name, o) in &qo {
            if *o == Outcome::Failed {
                report += &format!("  qoslab fails {name} (tgt: {:?})\n", to.get(name));
                if !EXPLAINED.contains(&name.as_str()) {
                    unexplained.push(name.clone());
                }
            }
        }
        assert!(
            qp >= tp,
            "{family}: qoslab passed {qp} of {qn}, tgt {tp}\n{report}"
        );
    }
    eprintln!("{report}");
    assert!(
        unexplained.is_empty(),
        "failures docs/ISCSI.md does not explain: {unexplained:?}\n{report}"
    );
    drop(tgt);
    drop(stop);
    server.join().unwrap();
}

#[test]
fn the_parser_reads_cunit_output() {
    let out = "Suite: A\n  Test: One ...passed\n  Test: Two ...    [SKIPPED] X is not implemented.\npassed\n  Test: Three ...    [FAILED] x\nFAILED\n    1. a.c:1 - x\nSuite: B\n  Test: Four ...FAILED\n";
    let m = outcomes(out);
    assert_eq!(m["A.One"], Outcome::Passed);
    assert_eq!(m["A.Two"], Outcome::Skipped);
    assert_eq!(m["A.Three"], Outcome::Failed);
    assert_eq!(m["B.Four"], Outcome::Failed);
    assert_eq!(
        summary("               tests    215    215    213      2        0"),
        (215, 213)
    );
}
