//! Acceptance of the system suites (issue 17) through the real `qoslab` binary, on
//! namespace hosts (3 hosts with 250 Mbit/s links, h0-h1 held to 50 Mbit/s, three 32 MiB
//! loop devices each; torn down at the end of each test, on failure too), one test per
//! suite so that only the one that measures the machine (network goodput against a shaped
//! link) runs in the `heavy` group:
//!
//! - network: the matrix finds the throttled pair, and only it, below its threshold; the
//!   other pairs within 10% of their 250 Mbit/s shaping; retransmits recorded;
//! - disks: per-device, per-host and all-hosts results with the sizing rules shown; a
//!   device with an ext4 signature refused without --destroy-data and taken with it;
//!   nothing outside the given devices written (checksums);
//! - block through fio client/server on 2 load generators: per-client and merged results;
//!   nfs on a directory that is not on NFS refused;
//! - every suite's report rendered by headless Chromium; results exported as CSV and JSON;
//! - every run, refused ones too, removes its log, run and ssh control directories; SIGTERM
//!   during a suite leaves no remote server, run directory or ssh control directory.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use testbed::{run, Spec, Testbed};

use crate::bench_util::{qoslab, qoslab_pid, report_last, text, Dir, QOSLAB};
use crate::realtime::RealTime;
use crate::report::{assert_page_whole, render};
use crate::util::{heavy, require_tool};

const LIMIT: Duration = Duration::from_secs(240);

fn sum(p: &Path) -> String {
    run("sha256sum", &[p.to_str().unwrap()]).unwrap()
}

/// `qoslab bench ARGS --ssh-config CFG --db r.db`: (exit code, stdout, stderr). The run,
/// refused ones too, left none of its per-run directories in /tmp.
pub fn bench(d: &Dir, bed: &Testbed, args: &[&str]) -> (Option<i32>, String, String) {
    let cfg = bed.ssh_config.display().to_string();
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--ssh-config", &cfg, "--db", "r.db"]);
    let (pid, o) = qoslab_pid(d, &all, LIMIT);
    let (out, err) = text(&o);
    let left = leftovers(pid);
    assert!(
        left.is_empty(),
        "qoslab bench {args:?} left in /tmp: {left:?}"
    );
    (o.status.code(), out, err)
}

/// What a qoslab process `pid` left in /tmp: a suite's fio log directory, its run
/// directory on the (namespace) hosts, its ssh control directory.
fn leftovers(pid: u32) -> Vec<String> {
    let mine = [
        format!("qoslab-suite-logs-{pid}-"),
        format!("qoslab-run-{pid}-"),
        format!("qoslab-ssh-{pid}"),
    ];
    std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| mine.iter().any(|m| n == m || n.starts_with(m.as_str())))
        .collect()
}

/// The last run as exported JSON.
pub fn last_run(d: &Dir) -> Value {
    let o = qoslab(
        d,
        &[
            "results", "export", "last", "--format", "json", "--db", "r.db",
        ],
        LIMIT,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Each stored job of `workload` with its results, checked to be one entry per load
/// generator of `hosts` (`HOST:PORT`) and fio's merged "All clients".
pub fn per_client<'a>(
    run: &'a Value,
    workload: &str,
    hosts: &[&str],
) -> Vec<(&'a Value, &'a Vec<Value>)> {
    let jobs = run["jobs"].as_array().unwrap().iter();
    jobs.filter(|j| j["workload"] == workload)
        .map(|j| {
            let res = j["results"].as_array().unwrap();
            let clients: Vec<&str> = res.iter().map(|x| x["client"].as_str().unwrap()).collect();
            assert_eq!(clients.len(), hosts.len() + 1, "{clients:?}");
            for h in hosts {
                let h = format!("{h}:");
                assert!(clients.iter().any(|c| c.starts_with(&h)), "{clients:?}");
            }
            assert!(clients.contains(&"All clients"), "{clients:?}");
            (j, res)
        })
        .collect()
}

fn table<'a>(run: &'a Value, kind: &str, name: Option<&str>) -> &'a Value {
    run["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == kind && name.is_none_or(|n| t["name"] == n))
        .unwrap_or_else(|| panic!("no table {kind} {name:?} in {}", run["tables"]))
}

/// The rows of a stored table as maps column -> value.
fn rows(t: &Value) -> Vec<serde_json::Map<String, Value>> {
    let cols: Vec<String> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            cols.iter()
                .cloned()
                .zip(r.as_array().unwrap().iter().cloned())
                .collect()
        })
        .collect()
}

/// The last run's report rendered in Chromium: every chart drawn, no script error.
fn report_renders(d: &Dir, name: &str) -> String {
    let (html, _) = report_last(d, "r.db", &format!("{name}.html"), LIMIT);
    let (dom, stderr, png) = render(d.path(), &html, "1280,3000");
    let expected = assert_page_whole(&dom, &stderr, name);
    assert!(expected >= 1, "{name}: charts expected {expected}");
    assert!(png.len() > 30_000, "{name}: screenshot {} bytes", png.len());
    dom
}

/// The hosts' links, shaped by tc, and the slow pair's. A pair passes at 90% of the
/// rated speed (the suite's rule) and TCP's goodput over a shaped link is ~95% of it
/// (1448 payload bytes in a 1514-byte frame), so a pair has 5% for scheduling. At
/// 1 Gbit/s iperf3 and the veths needed most of a core, and beside other work pairs read
/// 754 and 819 Mbit/s; at 250 Mbit/s the CPU is a quarter of that, and the shaper, not the
/// machine, sets the rate.
const LINK_MBIT: u32 = 250;
const SLOW_MBIT: u32 = 50;

/// The namespace hosts every test here runs on.
fn bed() -> Testbed {
    for t in ["chromium", "fio", "iperf3"] {
        require_tool(t);
    }
    Testbed::build(&Spec {
        hosts: 3,
        link_mbit: LINK_MBIT,
        slow_pairs: vec![(0, 1, SLOW_MBIT)],
        disks_per_host: 3,
        disk_bytes: 32 << 20,
        vm_hosts: 0,
        vm_iscsi: false,
    })
    .unwrap()
}

#[test]
fn network_suite_finds_the_throttled_pair_and_draws_its_heat_map() {
    let _g = heavy();
    let bed = bed();
    network(&Dir::new("suites-network"), &bed);
}

#[test]
fn disks_suite_sizes_refuses_a_file_system_and_writes_only_the_given_devices() {
    let bed = bed();
    disks(&Dir::new("suites-disks"), &bed);
}

#[test]
fn block_suite_merges_two_load_generators_and_nfs_refuses_a_local_directory() {
    let bed = bed();
    storage(&Dir::new("suites-block"), &bed);
}

#[test]
fn sigterm_mid_suite_leaves_no_server_run_directory_or_ssh_directory() {
    let bed = bed();
    signals(&Dir::new("suites-signals"), &bed);
}

/// Light group (docs/TESTING.md): iperf3 at 250 and 50 Mbit/s over veth is a fraction of a
/// core, and every rate bound here is an upper bound or a `RealTime` shortfall. Beside a
/// CPU hog (29 Nov 2026) it passed in 58.7 s with 238-239 Mbit/s on the fast pairs
/// (threshold 225) and 48 on the slow one.
fn network(d: &Dir, bed: &Testbed) {
    let started = Instant::now();
    // Goodput below a link's rate is what a starved machine produces (iperf3 and the
    // shaping's softirqs wait for a CPU): those shortfalls are real-time bounds
    // (docs/TESTING.md); a pair above its rate, or the slow pair passing, is not.
    let mut rt = RealTime::start();
    // 5 s per test after a 1 s omit: a scheduling hiccup of a fraction of a second on a
    // shared 2-core machine does not decide a pair. veth reports 10000 Mb/s; the links are
    // shaped to LINK_MBIT.
    let rated = LINK_MBIT.to_string();
    let (code, out, err) = bench(
        d,
        bed,
        &[
            "--suite",
            "network",
            "--hosts",
            "h0,h1,h2",
            "--rated-mbps",
            &rated,
            "--runtime",
            "5s",
            "--ramp",
            "1s",
        ],
    );
    eprintln!("network suite: {:?}\n{out}", started.elapsed());
    // The slow pair fails its verdict (exit 1); measured while a host of the pair waited
    // for a CPU at least 25% of the test (the bed's hosts share this machine's two CPUs
    // with the test beside this one), the suite calls its miss inconclusive and names the
    // figure instead (exit 3, when nothing else failed). Both are the product's rule
    // (unit-tested in suites::stall and suites::network); which one applies is the
    // machine's doing.
    match code {
        Some(1) => {}
        Some(3) if out.contains("h0 -> h1") && out.contains("(inconclusive, starved-host: ") => {}
        _ => panic!("the slow pair fails its verdict\n{out}\n{err}"),
    }
    // The terminal matrix marks exactly the slow pair.
    assert!(out.contains("connectivity (one pair at a time)"), "{out}");
    assert!(
        out.contains("h0 -> h1") && out.contains("BELOW THRESHOLD"),
        "{out}"
    );
    let run = last_run(d);
    let conn = rows(table(
        &run,
        "suite-network-pairs",
        Some("connectivity (one pair at a time)"),
    ));
    assert_eq!(conn.len(), 6);
    let mut failing: Vec<String> = conn
        .iter()
        .filter(|r| r["pass"] == false)
        .map(|r| {
            format!(
                "{}->{}",
                r["from"].as_str().unwrap(),
                r["to"].as_str().unwrap()
            )
        })
        .collect();
    failing.sort();
    let slow_pair = ["h0->h1", "h1->h0"];
    assert!(
        slow_pair.iter().all(|p| failing.contains(&p.to_string())),
        "the slow pair fails: {failing:?}\n{out}"
    );
    if failing != slow_pair {
        rt.short(format!("failing pairs {failing:?}, want {slow_pair:?}"));
    }
    for r in &conn {
        let g = r["goodput_mbps"].as_f64().unwrap();
        let pair = format!(
            "{}->{}",
            r["from"].as_str().unwrap(),
            r["to"].as_str().unwrap()
        );
        if slow_pair.contains(&pair.as_str()) {
            // Held by its SLOW_MBIT classes (and working).
            let slow = f64::from(SLOW_MBIT);
            assert!(g <= slow * 1.1, "{r:?}\n{out}");
            if g <= slow * 0.5 {
                rt.short(format!("{pair}: {g:.0} Mbit/s, want > {:.0}", slow * 0.5));
            }
        } else {
            let link = f64::from(LINK_MBIT);
            assert!(g <= link * 1.1, "within 10% of {link} Mbit/s: {r:?}\n{out}");
            if g < link * 0.9 {
                rt.short(format!(
                    "{pair}: {g:.0} Mbit/s, want within 10% of {link} Mbit/s"
                ));
            }
        }
        assert!(r["retransmits"].is_u64(), "retransmits recorded: {r:?}");
        assert!(r["rtt_mean_us"].as_f64().unwrap() > 0.0, "{r:?}");
        assert_eq!(r["threshold_mbps"], f64::from(LINK_MBIT) * 0.9);
    }
    // A job per pair (connectivity and under load) and per host, with iperf3's JSON and
    // verdicts.
    let jobs = run["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 6 + 6 + 3, "{}", run["jobs"]);
    assert!(jobs.iter().all(|j| j["status"] == "done"));
    let slow = jobs
        .iter()
        .find(|j| j["workload"] == "network/connectivity" && j["name"] == "h0 -> h1")
        .unwrap();
    assert!(slow["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["passed"] == false && v["expectation"].as_str().unwrap().contains("goodput")));
    let load = rows(table(
        &run,
        "suite-network-pairs",
        Some("under load (all pairs at once)"),
    ));
    assert_eq!(load.len(), 6);
    assert!(load
        .iter()
        .all(|r| r["goodput_mbps"].as_f64().unwrap() > 0.0));
    let per_second = rows(table(&run, "suite-network-intervals", None));
    assert!(per_second.len() >= 6 * 4, "{per_second:?}");
    let hosts = rows(table(&run, "suite-network-hosts", None));
    assert!(
        hosts
            .iter()
            .all(|h| h["out_mbps"].as_f64().unwrap() <= f64::from(LINK_MBIT) * 1.05),
        "{hosts:?}"
    );

    // Exports: CSV with a row per job, the tables as long CSV.
    let o = qoslab(
        d,
        &[
            "results", "export", "last", "--format", "csv", "--db", "r.db",
        ],
        LIMIT,
    );
    let csv = String::from_utf8(o.stdout).unwrap();
    assert_eq!(csv.lines().count(), 1 + 15, "{csv}");
    assert!(
        csv.contains(",network/connectivity,h0 -> h1,h0->h1,1,done,"),
        "{csv}"
    );
    let o = qoslab(
        d,
        &[
            "results",
            "export",
            "last",
            "--format",
            "tables-csv",
            "--db",
            "r.db",
        ],
        LIMIT,
    );
    let tcsv = String::from_utf8(o.stdout).unwrap();
    assert!(
        tcsv.starts_with("run_id,kind,table,row,column,value\n"),
        "{tcsv}"
    );
    assert!(
        tcsv.contains("suite-network-pairs,connectivity (one pair at a time),"),
        "{tcsv}"
    );

    // The heat map marks the slow pair in words, not colour alone (missed on a starved
    // host, the words add that it is inconclusive).
    let dom = report_renders(d, "network");
    assert!(dom.contains("Network mesh"), "heat map section");
    assert_eq!(
        dom.matches(">BELOW 90%").count(),
        failing.len(),
        "each failing cell says so (the two slow ones on an unstarved host)"
    );
    let mesh = &dom[dom.find("Network mesh").unwrap()..];
    // A pair missed on a starved host is listed apart from the failing ones.
    let starved_slow = conn.iter().any(|r| {
        let pair = format!(
            "{}->{}",
            r["from"].as_str().unwrap(),
            r["to"].as_str().unwrap()
        );
        slow_pair.contains(&pair.as_str()) && !r["starved"].as_str().unwrap_or_default().is_empty()
    });
    let sentence = if failing == slow_pair && !starved_slow {
        "Failing: h0 → h1 (BELOW 90%), h1 → h0 (BELOW 90%).".to_string()
    } else {
        "h0 → h1 (BELOW 90%".to_string()
    };
    assert!(
        mesh.contains(&sentence)
            && mesh.contains("h0 → h1 (BELOW 90%")
            && mesh.contains("h1 → h0 (BELOW 90%"),
        "{}",
        &mesh[..3000.min(mesh.len())]
    );
    rt.finish();
}

fn disks(d: &Dir, bed: &Testbed) {
    let dev = |h: usize, k: usize| bed.hosts[h].disks[k].dev.clone();
    let backing = |h: usize, k: usize| bed.hosts[h].disks[k].backing.clone();
    // h0's third device holds a file system.
    run("mkfs.ext4", &["-q", "-F", &dev(0, 2)]).unwrap();
    let all: Vec<(usize, usize)> = (0..3).flat_map(|h| (0..3).map(move |k| (h, k))).collect();
    let before: Vec<String> = all.iter().map(|&(h, k)| sum(&backing(h, k))).collect();
    let list = |devs: &[(usize, usize)]| {
        devs.iter()
            .map(|&(h, k)| format!("h{h}:{}", dev(h, k)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let common = [
        "--suite",
        "disks",
        "--jobs",
        "fio.write.single.randwrite",
        "--size",
        "16MiB",
        "--ramp",
        "0s",
    ];
    // The ext4 device is refused by name, before anything runs.
    let with_ext4 = list(&[(0, 0), (0, 1), (0, 2), (1, 0)]);
    let mut args = common.to_vec();
    args.extend_from_slice(&[
        "--hosts",
        "h0,h1",
        "--devices",
        &with_ext4,
        "--runtime",
        "3s",
    ]);
    let (code, out, err) = bench(d, bed, &args);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("1 device(s) refused"), "{err}");
    assert!(
        err.contains(&format!("refusing to write {}: ext4 signature", dev(0, 2)))
            && err.contains(&format!("--destroy-data {}", dev(0, 2))),
        "{err}"
    );
    let now: Vec<String> = all.iter().map(|&(h, k)| sum(&backing(h, k))).collect();
    assert_eq!(now, before, "nothing was written");

    // Without it: each device alone, h0's two together, both hosts at once; 2 iterations
    // of 3 s (6 windows: the steady-state check judges the last 5 but the final one).
    let given = [(0, 0), (0, 1), (1, 0)];
    let devices = list(&given);
    let mut args = common.to_vec();
    args.extend_from_slice(&[
        "--hosts",
        "h0,h1",
        "--devices",
        &devices,
        "--runtime",
        "3s",
        "--iterations",
        "2",
        "--all-hosts",
    ]);
    let started = Instant::now();
    let (code, out, err) = bench(d, bed, &args);
    eprintln!("disks suite: {:?}\n{out}", started.elapsed());
    // Loop devices on a shared machine need not reach steady state: a moving figure is
    // inconclusive (3), never a failure or an error.
    assert!(matches!(code, Some(0 | 3)), "{out}{err}");
    if code == Some(3) {
        // "INCONCLUSIVE: JOB on WHERE: steady state (SNIA PTS ...): not steady: ..."
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with("INCONCLUSIVE: ")
                    && l.contains(": steady state (SNIA PTS")),
            "{out}"
        );
        assert!(out.contains("not in steady state"), "{out}");
    }
    assert!(
        out.contains("size = 16.0 MiB (given; the rule says"),
        "sizing shown: {out}"
    );
    assert!(
        out.contains("numjobs = 2 cores / 2 = 1 (HDD)") || out.contains("(SSD)"),
        "{out}"
    );
    assert!(out.contains("device: each device alone: 3 job(s)"), "{out}");
    assert!(
        out.contains("host: all devices of a host together: 1 job(s)"),
        "{out}"
    );
    assert!(out.contains("cluster: every host at once"), "{out}");
    let r = last_run(d);
    let sums = rows(table(&r, "suite-fio", None));
    let stage = |s: &str| sums.iter().filter(|m| m["stage"] == s).count();
    assert_eq!(
        (stage("device"), stage("host"), stage("cluster")),
        (3, 1, 1),
        "{sums:?}"
    );
    for m in &sums {
        assert_eq!(m["iterations"], 2, "{m:?}");
        assert!(m["iops_mean"].as_f64().unwrap() > 0.0, "{m:?}");
        assert!(m["iops_cv_pct"].is_number(), "spread: {m:?}");
        assert!(
            ["yes", "NO"].contains(&m["steady"].as_str().unwrap()),
            "judged: {m:?}"
        );
    }
    let sizing = rows(table(&r, "suite-sizing", None));
    assert_eq!(sizing.len(), 4, "3 devices and h0's pair: {sizing:?}");
    assert!(sizing
        .iter()
        .all(|s| s["how"].as_str().unwrap().contains("given; the rule says")));
    // The cluster run: per client and "All clients", adding up.
    let clients = rows(table(&r, "suite-clients", None));
    let cluster: Vec<_> = clients
        .iter()
        .filter(|c| c["stage"] == "cluster" && c["iteration"] == 1)
        .collect();
    assert_eq!(cluster.len(), 3, "{cluster:?}");
    let total = |c: &serde_json::Map<String, Value>| c["total_ios"].as_u64().unwrap();
    let merged = cluster
        .iter()
        .find(|c| c["client"] == "All clients")
        .unwrap();
    assert_eq!(
        total(merged),
        cluster
            .iter()
            .filter(|c| c["client"] != "All clients")
            .map(|c| total(c))
            .sum::<u64>()
    );
    // iostat of the device itself beside each device result; fio's windows as series.
    let iostat = rows(table(&r, "suite-iostat", None));
    for &(h, k) in &given {
        let name = dev(h, k).rsplit('/').next().unwrap().to_string();
        assert!(
            iostat.iter().any(|s| s["stage"] == "device"
                && s["device"] == name.as_str()
                && s["w_s"].as_f64().unwrap() > 0.0),
            "{name}: {iostat:?}"
        );
    }
    assert!(
        r["series"].as_array().unwrap().len() >= 10,
        "a series per measured job"
    );
    let after: Vec<String> = all.iter().map(|&(h, k)| sum(&backing(h, k))).collect();
    for (i, &(h, k)) in all.iter().enumerate() {
        if given.contains(&(h, k)) {
            assert_ne!(after[i], before[i], "h{h} disk {k} was given and written");
        } else {
            assert_eq!(
                after[i], before[i],
                "h{h} disk {k} was not given: untouched"
            );
        }
    }
    report_renders(d, "disks");

    // Named in --destroy-data, the ext4 device is taken.
    let only = list(&[(0, 2)]);
    let mut args = common.to_vec();
    let ext4 = dev(0, 2);
    args.extend_from_slice(&[
        "--hosts",
        "h0",
        "--devices",
        &only,
        "--destroy-data",
        &ext4,
        "--runtime",
        "1s",
        "--iterations",
        "1",
        "--skip-prepare",
    ]);
    let (code, out, err) = bench(d, bed, &args);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("overwritten although it holds: ext4 signature"),
        "{out}"
    );
    assert_ne!(sum(&backing(0, 2)), before[2]);
}

fn storage(d: &Dir, bed: &Testbed) {
    // block: h1 and h2 as load generators, each on its own loop device.
    let targets = format!(
        "h1:{},h2:{}",
        bed.hosts[1].disks[1].dev, bed.hosts[2].disks[1].dev
    );
    let started = Instant::now();
    let (code, out, err) = bench(
        d,
        bed,
        &[
            "--suite",
            "block",
            "--hosts",
            "h1,h2",
            "--targets",
            &targets,
            "--jobs",
            "fio.read.random,fio.write.random",
            "--iterations",
            "1",
            "--runtime",
            "2s",
            "--ramp",
            "0s",
            "--numjobs",
            "1",
        ],
    );
    eprintln!("block suite: {:?}\n{out}", started.elapsed());
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("caches may hold the data set"),
        "3 x RAM flagged: {out}"
    );
    assert!(out.contains("per client (last iteration"), "{out}");
    let r = last_run(d);
    let measured = per_client(&r, "block", &["h1", "h2"]);
    assert_eq!(measured.len(), 2, "{}", r["jobs"]);
    for (_, res) in measured {
        let ios = |x: &Value| {
            x["read"]["total_ios"].as_u64().unwrap() + x["write"]["total_ios"].as_u64().unwrap()
        };
        let merged = res.iter().find(|x| x["client"] == "All clients").unwrap();
        let per: u64 = res
            .iter()
            .filter(|x| x["client"] != "All clients")
            .map(ios)
            .sum();
        assert!(per > 0);
        assert_eq!(ios(merged), per);
    }
    let dom = report_renders(d, "block");
    assert!(
        dom.contains("each load generator and the merged figure"),
        "per-client chart"
    );
    // nfs on a directory that is not an NFS mount: refused before any load.
    let dir = bed.dir.join("not-nfs");
    std::fs::create_dir_all(&dir).unwrap();
    let t = format!("h1:{}", dir.display());
    let (code, out, err) = bench(
        d,
        bed,
        &[
            "--suite",
            "nfs",
            "--hosts",
            "h1",
            "--targets",
            &t,
            "--runtime",
            "1s",
        ],
    );
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("not NFS"), "{err}");
}

/// SIGTERM while a suite runs: its iperf3 servers, remote run directory and ssh control
/// directory are gone afterwards.
fn signals(d: &Dir, bed: &Testbed) {
    let cfg = bed.ssh_config.display().to_string();
    let mut child = std::process::Command::new(QOSLAB)
        .args([
            "bench",
            "--suite",
            "network",
            "--hosts",
            "h0,h2",
            "--runtime",
            "30s",
            "--ssh-config",
            &cfg,
            "--db",
            "sig.db",
        ])
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let run_dir = || {
        std::fs::read_dir("/tmp")
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with(&format!("qoslab-run-{pid}-")))
    };
    // iperf3 servers in this bed's namespaces only (other tests run their own beside it).
    let servers = || {
        let mut found = Vec::new();
        for h in &bed.hosts {
            let o = std::process::Command::new("ip")
                .args(["netns", "pids", &h.ns])
                .output()
                .unwrap();
            for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                if cmd.contains("iperf3 -s -p 3000") {
                    found.push(format!("{}: {pid} {}", h.name, cmd.trim()));
                }
            }
        }
        found.join("; ")
    };
    let start = Instant::now();
    // The first pair is measuring once its client runs (servers started, run dir made).
    while run_dir().is_none() || servers().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the suite never started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    run("kill", &["-TERM", &pid.to_string()]).unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert_eq!(run_dir(), None, "remote run directory removed");
    assert_eq!(servers(), "", "iperf3 servers stopped");
    assert!(
        !Path::new(&format!("/tmp/qoslab-ssh-{pid}")).exists(),
        "ssh control directory removed"
    );
    let logs = leftovers(pid);
    assert!(logs.is_empty(), "local log directory removed: {logs:?}");
}
