//! Acceptance: the block suite through fio client/server on 2 namespace load generators,
//! each on its own loop device: the prepare step, then per-client and merged ("All
//! clients") results stored. The dir suite the same way on a directory per generator, and
//! an `nfs` target that is not on NFS refused before any load.

use suites::jobs::{SeedJob, Timing};
use suites::sizing::Overrides;
use suites::storage::{self, StorageKind, StoragePlan};
use suites::Session;
use testbed::{Spec, Testbed};

#[test]
fn block_and_dir_suites_store_per_client_and_merged_results() {
    let bed = Testbed::build(&Spec {
        hosts: 2,
        disks_per_host: 1,
        disk_bytes: 32 << 20,
        ..Spec::default()
    })
    .unwrap();
    let s = Session::open(
        bed.suite_hosts().unwrap(),
        &["fio", "wipefs"],
        Box::new(|l| eprintln!("{l}")),
    )
    .unwrap();
    let timing = Timing {
        runtime_s: 1,
        ramp_s: 0,
    };
    let mut plan = StoragePlan::new(StorageKind::Block);
    plan.targets = bed
        .hosts
        .iter()
        .map(|h| (h.name.clone(), h.disks[0].dev.clone()))
        .collect();
    plan.jobs = vec![SeedJob::ReadRandom, SeedJob::WriteRandom];
    plan.iterations = 1;
    plan.timing = timing;
    plan.overrides = Overrides {
        numjobs: Some(1),
        ..Overrides::default()
    };
    let r = storage::run(&s, &plan).unwrap();
    let text = r.render();
    println!("{text}");
    // The sizing rule: capped so the data set fits the 32 MiB device; 3 x RAM flagged.
    assert!(text.contains("capped to"), "{text}");
    assert!(text.contains("caches may hold the data set"), "{text}");
    assert_eq!(r.runs.len(), 2);
    for run in &r.runs {
        assert_eq!(run.hosts, vec!["h0", "h1"]);
        assert_eq!(run.per_client.len(), 2, "{run:?}");
        let clients: Vec<&str> = run
            .per_client
            .iter()
            .map(|c| c.client.as_deref().unwrap())
            .collect();
        assert!(clients.iter().any(|c| c.starts_with("h0:")), "{clients:?}");
        assert!(clients.iter().any(|c| c.starts_with("h1:")), "{clients:?}");
        assert_eq!(run.merged.client.as_deref(), Some("All clients"));
        let per: u64 = run
            .per_client
            .iter()
            .map(|c| c.read.total_ios + c.write.total_ios)
            .sum();
        assert_eq!(run.merged.read.total_ios + run.merged.write.total_ios, per);
        assert!(per > 0);
        assert_eq!(
            run.iostat.len(),
            2,
            "each generator's device: {:?}",
            run.iostat
        );
    }
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"All clients\""));

    // dir: a directory per load generator (the same file system here, separate dirs).
    let dirs: Vec<String> = bed
        .hosts
        .iter()
        .map(|h| {
            bed.dir
                .join(format!("mnt-{}", h.name))
                .display()
                .to_string()
        })
        .collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut plan = StoragePlan::new(StorageKind::Dir);
    plan.targets = vec![
        ("h0".into(), dirs[0].clone()),
        ("h1".into(), dirs[1].clone()),
    ];
    plan.jobs = vec![SeedJob::WriteSeq];
    plan.iterations = 1;
    plan.timing = timing;
    plan.overrides = Overrides {
        numjobs: Some(2),
        size_bytes: Some(8 << 20),
        iodepth: None,
    };
    let r = storage::run(&s, &plan).unwrap();
    assert_eq!(r.runs[0].per_client.len(), 2);
    // The prepare step wrote each job's file, which the measured jobs used (fio's server
    // prefixes a file name with the client's address).
    for (d, h) in dirs.iter().zip(&bed.hosts) {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                format!("{}.qoslab.0", h.addr),
                format!("{}.qoslab.1", h.addr)
            ]
        );
        for n in names {
            let len = std::fs::metadata(std::path::Path::new(d).join(n))
                .unwrap()
                .len();
            assert_eq!(len, 8 << 20);
        }
    }

    plan.kind = StorageKind::Nfs;
    let e = storage::run(&s, &plan).unwrap_err().to_string();
    assert!(e.contains("not NFS"), "{e}");
}
