//! Verdicts that hold on a loaded machine (issue 35): the two failures a busy host caused,
//! reproduced beside the load that caused them.
//!
//! - EBS gp2 on a running node (`--profile provisioned --model ebs-gp2 --node`) beside two
//!   CPU hogs niced *above* the node and fio (nice -10, in the test's own session: Linux's
//!   autogroups share the CPUs fairly between sessions, so a hog niced in a session of its
//!   own would not be above them) and a `dd conv=fsync` loop: before issue 35
//!   every verdict failed (`burst 2174 IOPS for 1.00 s, then 1408 IOPS, FAIL 0/3`) and the
//!   diagnosis called 1,495 IOPS "332% of the 450 IOPS ceiling: the QoS policy held it";
//! - the same beside hogs at normal priority, the writer and a qemu TCG guest (the CI run's
//!   load: `iops_after_credits = 294.29, want 297..303`, FAIL).
//!
//! Either run now passes or is inconclusive: a shortfall measured on a starved host names
//! the starvation with the kernel's pressure figures (`starved-host`), and a node and a
//! client that counted apart name the side that lagged; the pressure figures are in the
//! run's diagnosis and its report, and no diagnosis calls a figure above the ceiling held
//! by it. Each run is ~20 s of fio plus the profile's waits, beside the load (~40 s).

use std::time::Duration;

use serde_json::Value;
use toolsets::testing::{Hostile, HostileSpec};

use crate::bench_util::{report_last, text, Dir};
use crate::provisioned::{gp2_profile, last_run, GP2_NODE, LIMIT};
use crate::util::{heavy, require_fio_nbd, Node};

/// The gp2 profile on a running node beside `load`; the run, its summary and its report.
fn gp2_beside(tag: &str, load: HostileSpec) -> (Value, String, String) {
    let node = Node::start(GP2_NODE);
    let d = Dir::new(tag);
    let url = node.api_url();
    let hostile = Hostile::run(load, 300).expect("the hostile load starts");
    // Let the load take hold (the guest boots, the writer's first fsync).
    std::thread::sleep(Duration::from_secs(3));
    let o = gp2_profile(&d, &url);
    drop(hostile);
    let (out, err) = text(&o);
    eprintln!("{out}");
    let run = last_run(&d);
    // Passed, or inconclusive (exit 3): never failed.
    match o.status.code() {
        Some(0) => assert_eq!(run["status"], "passed", "{out}\n{err}"),
        Some(3) => assert_eq!(run["status"], "inconclusive", "{out}\n{err}"),
        c => panic!("exit {c:?}: the run failed on a loaded machine:\n{out}\n{err}"),
    }
    let (report, _) = report_last(&d, "r.db", "report.html", LIMIT);
    let html = std::fs::read_to_string(report).unwrap();
    (run, out, html)
}

/// What both runs must show, whatever the load did to them.
fn holds_on_a_loaded_machine(run: &Value, out: &str, html: &str) {
    let jobs = run["jobs"].as_array().unwrap();
    let mut inconclusive = 0;
    for j in jobs {
        // Two CPU-bound hogs on this 2-CPU machine beside fio and the node: the diagnosis
        // says the measurement was starved (the host, or fio in particular).
        let b = j["diagnosis"]["bottleneck"].as_str().unwrap_or("");
        assert!(
            ["starved-host", "client-cpu-bound", "noisy-host"].contains(&b),
            "{}: {}",
            j["name"],
            j["diagnosis"]
        );
        // No diagnosis calls a figure above the ceiling held by it.
        let d = &j["diagnosis"];
        let reason = d["reason"].as_str().unwrap_or("");
        if let Some(pct) = reason
            .split(" of the ")
            .next()
            .and_then(|h| h.rsplit(" is ").next())
            .and_then(|p| p.strip_suffix('%'))
            .and_then(|p| p.parse::<f64>().ok())
        {
            assert!(
                pct <= 103.0 || !reason.contains("held it"),
                "{}: {reason}",
                j["name"]
            );
        }
        // The diagnosis carries the host's pressure over the job's window.
        let figures = d["figures"].as_array().unwrap();
        assert!(
            figures
                .iter()
                .any(|f| f["name"] == "cpu pressure (some)" && f["value"].is_number()),
            "{}: no pressure figures in {d}",
            j["name"]
        );
        for v in j["verdicts"].as_array().unwrap() {
            match v["outcome"].as_str() {
                Some("pass") => {}
                Some("inconclusive") => {
                    inconclusive += 1;
                    // A named cause with the pressure figures: the host's, or a lagging
                    // side's with what the host was doing meanwhile.
                    let r = v["reason"].as_str().unwrap_or("");
                    let named = ["starved-host", "noisy-host", "client-cpu-bound"]
                        .iter()
                        .any(|b| r.starts_with(b))
                        || r.contains(" lagged; ");
                    assert!(named, "{}: no named cause: {v}", j["name"]);
                    assert!(
                        r.contains("pressure"),
                        "{}: no pressure figures: {v}",
                        j["name"]
                    );
                }
                _ => panic!(
                    "{}: a verdict failed on a loaded machine: {v}\n{out}",
                    j["name"]
                ),
            }
        }
    }
    if inconclusive > 0 {
        // The report shows why, figures included.
        assert!(html.contains("INCONCLUSIVE"), "the report's verdicts");
        assert!(
            html.contains("pressure"),
            "the pressure figures in the report"
        );
    }
}

#[test]
fn gp2_on_a_node_beside_niced_hogs_and_an_fsync_writer_never_fails_a_promise() {
    let _g = heavy();
    require_fio_nbd();
    let (run, out, html) = gp2_beside(
        "hostile-niced",
        HostileSpec {
            hogs: 2,
            nice: -10,
            writer: true,
            guest: false,
        },
    );
    holds_on_a_loaded_machine(&run, &out, &html);
}

#[test]
fn gp2_on_a_node_beside_hogs_a_writer_and_a_tcg_guest_never_fails_a_promise() {
    let _g = heavy();
    require_fio_nbd();
    let (run, out, html) = gp2_beside(
        "hostile-guest",
        HostileSpec {
            hogs: 2,
            nice: 0,
            writer: true,
            guest: true,
        },
    );
    holds_on_a_loaded_machine(&run, &out, &html);
}
