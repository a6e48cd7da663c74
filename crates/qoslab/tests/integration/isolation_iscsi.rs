//! Seed 001's floors on LUNs (issue 34): the isolation profile over iSCSI — the embedded
//! node serves the protected volumes and the bully as LUNs on a loopback port, fio drives
//! them with its libiscsi engine (a session per job, every SCSI command one operation) —
//! holds the protected LUNs' floors where the FIFO control does not. And a plan's volume
//! declared a LUN (`[[iscsi.lun]]`) is driven over iSCSI under its volume's policy.
//!
//! The scale is what this 2-core machine sustains over libiscsi with a debug node: fio's
//! libiscsi engine got 7,464 IOPS from one unthrottled LUN at QD32 and 5,739 from three
//! LUNs at QD16/16/64 together (4 KiB random reads, 29 Nov 2026, with other helpers'
//! builds running). A 3,000 IOPS controller is about half of that: two protected LUNs at
//! a 750 IOPS floor, a bully offered 1,500 then 3,000 IOPS.
//!
//! Cost: ~15 s for the profile (2 modes x 2 steps x 3 s, node starts), ~8 s for the plan
//! (heavy group: both time fio).

use std::time::Duration;

use crate::bench_util::{
    assert_over_libiscsi, cell, expecting, inconclusive_for_the_host, job_files, json_run, qoslab,
    table, text, verdicts, Dir,
};
use crate::iscsi::require_libiscsi;
use crate::realtime::RealTime;
use crate::util::{heavy, require_tool};

const LIMIT: Duration = Duration::from_secs(120);
const FLOOR: f64 = 750.0;

#[test]
fn isolation_over_iscsi_holds_protected_luns_floors_where_fifo_does_not() {
    require_tool("fio");
    require_libiscsi();
    let _g = heavy();
    let mut rt = RealTime::start();
    let d = Dir::new("isolation-iscsi");
    let o = qoslab(
        &d,
        &[
            "bench",
            "--profile",
            "isolation",
            "--protocol",
            "iscsi",
            "--capacity-iops",
            "3000",
            "--steps",
            "2",
            "--runtime",
            "2s",
            "--ramp",
            "1s",
            "--db",
            "r.db",
        ],
        LIMIT,
    );
    let (out, err) = text(&o);
    let code = o.status.code();
    // 3: a verdict inconclusive (this machine's CPU, not the node, explains it).
    assert!(
        matches!(code, Some(0 | 1 | 3)),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        out.contains("isolation over iSCSI: 2 protected LUN(s) at a 750 IOPS floor"),
        "{out}"
    );
    assert!(
        out.contains("Protected LUNs over iSCSI (target 750 IOPS each)"),
        "{out}"
    );

    let run = json_run(&d, "r.db");
    assert!(
        run["target"]
            .as_str()
            .is_some_and(|t| t.contains("over iSCSI (each volume a LUN")),
        "{}",
        run["target"]
    );
    let plan = run["plan_text"].as_str().unwrap_or_default();
    assert_eq!(plan.matches("[[iscsi.lun]]").count(), 3, "{plan}");
    assert_over_libiscsi(&job_files(&d, "r.db"));

    // The harness's verdicts: each protected LUN's floor at both steps holds, or is
    // inconclusive naming this machine (the diagnosis: the load generator's CPU, other
    // work, a starved host), never failed; the control's own verdict says the bully hurt.
    let jobs = run["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 12, "2 modes x 2 steps x 3 LUNs: {run}");
    let verdicts = verdicts(jobs);
    let floors = expecting(&verdicts, "iops >= 750 * 0.98");
    assert_eq!(floors.len(), 4, "{run}");
    for v in &floors {
        eprintln!("floor verdict: {} {}", v["outcome"], v["detail"]);
        assert!(
            v["outcome"] == "pass" || inconclusive_for_the_host(v),
            "a protected LUN's floor failed over iSCSI: {v}\n{out}"
        );
    }
    let control = expecting(&verdicts, "control");
    assert_eq!(control.len(), 1, "{run}");

    // The figures, from the step table: with floors each protected LUN got its floor
    // (within the 2% the verdicts allow); in FIFO, at the bully's top step, each fell
    // below it. A starved host may explain a floor short (RealTime decides); a control
    // that held means the scenario proved nothing, which a starved load generator (a
    // bully unable to offer its load) may also explain.
    let t = table(&run, "isolation", "isolation");
    let rows = t["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 12, "{t}");
    for r in rows {
        assert_eq!(*cell(t, r, "protocol"), "iscsi", "{t}");
    }
    let protected = |mode: &str, step: u64| -> Vec<(String, f64)> {
        rows.iter()
            .filter(|r| *cell(t, r, "mode") == mode && *cell(t, r, "step") == step)
            .filter(|r| *cell(t, r, "role") == "protected")
            .map(|r| {
                (
                    cell(t, r, "volume").as_str().unwrap_or("?").to_string(),
                    cell(t, r, "iops").as_f64().unwrap_or(0.0),
                )
            })
            .collect()
    };
    for step in [1, 2] {
        let got = protected("floors", step);
        assert_eq!(got.len(), 2, "{t}");
        for (lun, iops) in got {
            eprintln!("floors step {step}: {lun} {iops:.0} IOPS (floor 750)");
            if iops < FLOOR * 0.98 {
                rt.short(format!(
                    "with floors, {lun} got {iops:.0} IOPS at step {step}; want >= 735"
                ));
            }
        }
    }
    let fifo = protected("control", 2);
    assert_eq!(fifo.len(), 2, "{t}");
    for (lun, iops) in &fifo {
        eprintln!("control step 2: {lun} {iops:.0} IOPS (floor 750)");
        if *iops >= FLOOR * 0.9 {
            rt.short(format!(
                "without floors, {lun} still got {iops:.0} IOPS at the bully's top step; \
                 want < 675 (90% of its floor)"
            ));
        }
    }
    // Whatever the host: the emulated controller served at most its 3,000 IOPS.
    for mode in ["floors", "control"] {
        for step in [1, 2] {
            let served: f64 = rows
                .iter()
                .filter(|r| *cell(t, r, "mode") == mode && *cell(t, r, "step") == step)
                .map(|r| cell(t, r, "iops").as_f64().unwrap_or(0.0))
                .sum();
            assert!(
                served <= 3000.0 * 1.03,
                "{mode} step {step}: {served:.0} IOPS, over the 3,000 IOPS controller: {t}"
            );
        }
    }
    // The exit status agrees with the stored verdicts.
    let outcome = |o: &str| verdicts.iter().filter(|x| x["outcome"] == o).count();
    let want = match (outcome("fail"), outcome("inconclusive")) {
        (0, 0) => 0,
        (0, _) => 3,
        _ => 1,
    };
    assert_eq!(code, Some(want), "exit status vs verdicts\n{out}");
    if control[0]["passed"] == true {
        let detail = control[0]["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("(a LUN over iSCSI) at step"),
            "the control's verdict names what was measured: {detail}"
        );
    } else {
        rt.short(format!("the control's own verdict failed: {}", control[0]));
    }
    rt.finish();
}

#[test]
fn a_plans_lun_is_driven_over_iscsi_under_its_volumes_ceiling() {
    require_tool("fio");
    require_libiscsi();
    let _g = heavy();
    let mut rt = RealTime::start();
    let d = Dir::new("plan-lun");
    d.write(
        "p.toml",
        r#"[bench]
runtime = "2s"
ramp = "1s"

[[policy]]
name = "iops400"
fixed = { max_throughput_iops = 400 }

[[volume]]
name = "db"
size = "1GiB"
policy = "iops400"

[[volume]]
name = "logs"
size = "1GiB"

[[iscsi.lun]]
volume = "db"
block_size = 4096

[[workload]]
name = "db-read"
volume = "db"
fio = { rw = "randread", bs = "4k", iodepth = 16 }
expect = ["iops <= policy.ceiling +-3%"]

[[workload]]
name = "logs-read"
volume = "logs"
fio = { rw = "randread", bs = "4k", iodepth = 4 }
"#,
    );
    // The dry run says how each job reaches its volume.
    let o = qoslab(&d, &["bench", "p.toml", "--dry-run", "--db", "r.db"], LIMIT);
    let (out, err) = text(&o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("# on volume db of the embedded node (made for the run), its LUN 0 over iSCSI (fio's libiscsi engine)"),
        "{out}"
    );
    assert!(
        out.contains("# on volume logs of the embedded node (made for the run)\n"),
        "{out}"
    );

    let o = qoslab(&d, &["bench", "p.toml", "--db", "r.db"], LIMIT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("PASS iops <= policy.ceiling +-3%"), "{out}");
    let files = job_files(&d, "r.db");
    assert_eq!(files.len(), 2, "{files:?}");
    // db's job went over iSCSI; logs (no LUN) stayed on NBD.
    assert_over_libiscsi(&files[..1]);
    assert!(
        files[1].1.contains("ioengine=nbd") && files[1].1.contains("uri=nbd+unix:///logs?"),
        "{}",
        files[1].1
    );
    let run = json_run(&d, "r.db");
    let iops = |name: &str| {
        run["jobs"]
            .as_array()
            .and_then(|j| j.iter().find(|j| j["name"] == name))
            .map(|j| j["results"][0]["read"]["iops"].as_f64().unwrap_or(0.0))
            .unwrap_or_else(|| panic!("no job {name}: {run}"))
    };
    let (db, logs) = (iops("db-read"), iops("logs-read"));
    eprintln!("db (LUN, 400 IOPS ceiling) {db:.0} IOPS; logs (NBD, no policy) {logs:.0} IOPS");
    // The ceiling held the LUN (a ceiling exceeded is never the host's doing), and the
    // LUN did run: over 300 IOPS through libiscsi.
    assert!(db <= 400.0 * 1.03 && db > 0.0, "{db}");
    assert!(logs > 0.0, "{logs}");
    if db < 300.0 {
        rt.short(format!("the LUN got {db:.0} IOPS of its 400 IOPS ceiling"));
    }
    rt.finish();
}
