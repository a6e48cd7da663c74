//! Seed 003's workshop over NFS: `qoslab bench --profile provisioned --nas` through the
//! real binary. The embedded node's emulated FSx volume is a NAS volume served over NFSv3
//! on loopback; fio reaches it with its nfs engine (libnfs), one TCP connection per fio job
//! (the seed's `nconnect`), and libnfs splits every 1 MiB request at the node's 64 KiB
//! transfer size, so the node counts sixteen READs (or WRITEs) per fio request, as ONTAP
//! counts NFS operations (docs/NFS.md).
//!
//! The same scale as the NBD story in `provisioned.rs` (FSx 128, caches and buckets
//! x0.0025, rates x0.2): disk baseline 25.6 MB/s, network 30 MB/s bursting to 250 MB/s for
//! 4.5 s, single flow 125 MB/s per TCP connection, provisioned SSD IOPS 614.
//!
//! Real-time figures follow `provisioned.rs`'s rule: a figure the family's own verdict
//! judged is asserted to that verdict's band only when the verdict passed (an inconclusive
//! one must name the client machine; a failed one fails the test). Each band is the spec's
//! figure with the check's tolerance: the step's rate is the median of fio's 500 ms windows
//! and the node's pacers space a backlogged flow exactly, so one 1 MiB request (8.4 ms at
//! 125 MB/s, 4.2 ms at 250) is under 2% of a window; ±5% (±3% for the baseline) is what
//! the seed's check allows. What a busy machine can do is starve fio so its queue runs dry
//! (the client's bound), which the diagnosis reports and the verdict turns inconclusive.
//! Bookkeeping (what the node counted, what the lay-out wrote, the caches) is asserted
//! firmly: it does not depend on timing.

use serde_json::Value;

use crate::nfs::require_fio_nfs;
use crate::provisioned::{f, fsx_workshop, job, row, series, the_story_holds, verdict_passed};
use crate::util::heavy;

const MIB: u64 = 1 << 20;

/// The node's samples of `step`'s job: (read ops, read bytes, write ops, write bytes,
/// other ops) per second, one per 500 ms window.
fn node_samples(run: &Value, step: &str) -> Vec<[f64; 5]> {
    series(run, step)["node"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let g = |k: &str| n[k].as_f64().unwrap_or(0.0);
            [
                g("read_iops"),
                g("read_bps"),
                g("write_iops"),
                g("write_bps"),
                g("other_iops"),
            ]
        })
        .collect()
}

/// Bytes per operation the node counted over `step` in one direction (0: reads, 2:
/// writes): the sum over its windows (each window's rates share one length).
fn bytes_per_op(samples: &[[f64; 5]], dir: usize) -> f64 {
    let ops: f64 = samples.iter().map(|s| s[dir]).sum();
    let bytes: f64 = samples.iter().map(|s| s[dir + 1]).sum();
    assert!(ops > 0.0, "no operations counted: {samples:?}");
    bytes / ops
}

#[test]
fn the_fsx_workshop_over_nfs_tells_the_seeds_story() {
    let _g = heavy();
    require_fio_nfs();
    // The lay-out writes at QD1: fio's nfs engine ends a sized job early deeper.
    let run = fsx_workshop(
        "provisioned-fsx-nas",
        &["--nas"],
        &["1 MiB write, 2 jobs x QD1 (lays out the data set; QD1: fio's nfs engine)"],
    );
    assert!(
        run["target"]
            .as_str()
            .unwrap()
            .ends_with("its volume a NAS volume over NFSv3 (fio's nfs engine)"),
        "{}",
        run["target"]
    );

    // Bookkeeping. The lay-out writes wrote their whole data sets (2 x 9 MiB and 2 x 38
    // MiB): at QD64 fio's nfs engine wrote none of it, and every read then read an empty
    // file.
    for (step, size) in [("mem-write", 9 * MIB), ("nvme-write", 38 * MIB)] {
        let r = &job(&run, step)["results"][0];
        assert_eq!(r["error"], 0, "{step}: {r}");
        assert_eq!(
            r["write"]["io_bytes"].as_u64(),
            Some(2 * size),
            "{step}: {r}"
        );
    }
    // The node counted NFS operations as ONTAP does: libnfs split each 1 MiB request at the
    // node's 64 KiB rtmax/wtmax, so every READ and WRITE it counted moved 64 KiB (NBD
    // counts one 1 MiB operation per request), and opening the file (LOOKUP, GETATTR,
    // ACCESS) counted as "other" operations of no bytes.
    for step in ["mem-read-1", "mem-read-16", "nvme-read"] {
        let s = node_samples(&run, step);
        let per_op = bytes_per_op(&s, 0);
        assert!(
            (per_op - 65536.0).abs() < 1.0,
            "{step}: {per_op} bytes per READ"
        );
        assert!(s.iter().any(|w| w[4] > 0.0), "{step}: no other ops: {s:?}");
    }
    // The WRITEs: `nvme-write` (2 x 38 MiB, seconds); `mem-write` ends (0.2 s) before the
    // node's first 500 ms sample.
    let per_op = bytes_per_op(&node_samples(&run, "nvme-write"), 2);
    assert!(
        (per_op - 65536.0).abs() < 1.0,
        "nvme-write: {per_op} bytes per WRITE"
    );
    // The 16 connections' reads came from the cache too.
    let many = row(&run, "mem-read-16");
    assert_eq!(f(&many, "from_cache_pct"), 100.0, "{many:?}");
    if verdict_passed(&run, "mem-read-16", "bw_burst > step.mem-read-1.bw") {
        let one = row(&run, "mem-read-1");
        assert!(f(&many, "burst") > f(&one, "result"), "{many:?} vs {one:?}");
    }
    // Real time, judged by the family's own verdicts (bands: the module's comment), as
    // over NBD.
    the_story_holds(&run);
}
