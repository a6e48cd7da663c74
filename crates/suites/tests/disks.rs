//! Acceptance: the disks suite on loop devices of 2 namespace hosts. Per-device, per-host
//! (all devices together) and all-hosts results with the sizing rules shown; a device with
//! an ext4 signature is refused without `destroy_data`; nothing outside the given devices is
//! written (checksums of the other devices' backing files before and after).

use suites::disks::{self, DisksPlan};
use suites::jobs::{SeedJob, Timing};
use suites::sizing::Overrides;
use suites::{Session, SuiteError};
use testbed::{run, Spec, Testbed};

fn sum(path: &std::path::Path) -> String {
    run("sha256sum", &[path.to_str().unwrap()]).unwrap()
}

#[test]
fn per_device_per_host_and_all_hosts_with_safety() {
    let bed = Testbed::build(&Spec {
        hosts: 2,
        disks_per_host: 3,
        disk_bytes: 32 << 20,
        ..Spec::default()
    })
    .unwrap();
    let d = |h: usize, k: usize| bed.hosts[h].disks[k].dev.clone();
    // h0's third device holds a file system; h1's second and third are not given.
    run("mkfs.ext4", &["-q", "-F", &d(0, 2)]).unwrap();
    let untouched = [
        &bed.hosts[0].disks[2].backing,
        &bed.hosts[1].disks[1].backing,
        &bed.hosts[1].disks[2].backing,
    ];
    let before: Vec<String> = untouched.iter().map(|p| sum(p)).collect();
    let given_before = sum(&bed.hosts[0].disks[0].backing);

    let s = Session::open(
        bed.suite_hosts().unwrap(),
        &["fio", "wipefs"],
        Box::new(|l| eprintln!("{l}")),
    )
    .unwrap();
    let mut plan = DisksPlan {
        devices: vec![
            ("h0".into(), vec![d(0, 0), d(0, 1), d(0, 2)]),
            ("h1".into(), vec![d(1, 0)]),
        ],
        device_jobs: vec![SeedJob::SingleRandWrite],
        host_jobs: vec![SeedJob::WriteAll],
        all_hosts: true,
        iterations: 2,
        timing: Timing {
            runtime_s: 1,
            ramp_s: 0,
        },
        overrides: Overrides {
            size_bytes: Some(16 << 20),
            ..Overrides::default()
        },
        ..DisksPlan::default()
    };
    // The ext4 device is refused, by name, and nothing runs.
    let e = disks::run(&s, &plan).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, SuiteError::Refused(ref r) if r.len() == 1),
        "{msg}"
    );
    assert!(
        msg.contains(&d(0, 2)) && msg.contains("ext4 signature"),
        "{msg}"
    );
    assert!(msg.contains("--destroy-data"), "{msg}");
    assert_eq!(
        sum(&bed.hosts[0].disks[0].backing),
        given_before,
        "nothing ran"
    );
    // Named in destroy_data, it would be accepted.
    plan.destroy_data = vec![d(0, 2)];
    disks::check_devices(&s, &plan).unwrap();

    // Without it, the suite runs on the other three.
    plan.destroy_data.clear();
    plan.devices[0].1.pop();
    let r = disks::run(&s, &plan).unwrap();
    let text = r.render();
    println!("{text}");
    assert!(
        text.contains("size = 16.0 MiB (given; the rule says"),
        "{text}"
    );
    assert!(text.contains("(HDD)") || text.contains("(SSD)"), "{text}");

    let stages = |st: &str| r.summaries.iter().filter(|m| m.stage == st).count();
    // 3 devices alone; h0's two devices together; both hosts at once.
    assert_eq!(stages("device"), 3, "{text}");
    assert_eq!(stages("host"), 1, "{text}");
    assert_eq!(stages("cluster"), 1, "{text}");
    for m in &r.summaries {
        assert_eq!(m.iops.n, 2, "two iterations: {m:?}");
        assert!(m.iops.mean > 0.0 && m.mib_s.mean > 0.0, "{m:?}");
    }
    for run in r.runs.iter().filter(|r| r.stage == "device") {
        assert_eq!(run.iostat.len(), 1, "iostat of the device itself: {run:?}");
        let st = &run.iostat[0];
        assert_eq!(format!("/dev/{}", st.device), run.targets[0]);
        assert!(st.r_s + st.w_s > 0.0 && st.util_pct > 0.0, "{st:?}");
    }
    let host = r.runs.iter().find(|r| r.stage == "host").unwrap();
    assert_eq!(host.targets, vec![format!("{}:{}", d(0, 0), d(0, 1))]);
    assert!(host.job_files[0].contains(&format!("filename={}:{}", d(0, 0), d(0, 1))));
    assert!(
        host.iostat.iter().all(|st| st.w_s > 0.0),
        "{:?}",
        host.iostat
    );
    let cluster = r.runs.iter().find(|r| r.stage == "cluster").unwrap();
    assert_eq!(cluster.per_client.len(), 2, "{cluster:?}");
    assert_eq!(cluster.merged.client.as_deref(), Some("All clients"));
    let per: u64 = cluster.per_client.iter().map(|c| c.write.total_ios).sum();
    assert_eq!(cluster.merged.write.total_ios, per);
    assert!(serde_json::to_string(&r).unwrap().contains("\"sizing\""));

    drop(s);
    let after: Vec<String> = untouched.iter().map(|p| sum(p)).collect();
    assert_eq!(before, after, "devices not given were not written");
    assert_ne!(
        sum(&bed.hosts[0].disks[0].backing),
        given_before,
        "given devices were"
    );
}
