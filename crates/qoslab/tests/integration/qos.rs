//! QoS ceilings end to end: real fio through the real binary, measured by fio.

use crate::realtime::RealTime;
use crate::util::{fio, heavy, one_volume_config, FioResult, Node};

/// A node with one volume, `vol` (`size`), under the fixed policy `policy` (`limits`: its
/// keys), and fio's run on it: `args`, time based, 5 s after a 1 s ramp.
fn fio_under_ceiling(policy: &str, limits: &str, size: &str, args: &[&str]) -> (Node, FioResult) {
    let node = Node::start(&one_volume_config(policy, limits, "vol", size));
    let mut a = args.to_vec();
    a.extend(["--time_based", "--runtime=5", "--ramp_time=1"]);
    let r = fio(&node.uri("vol"), &a);
    (node, r)
}

#[test]
fn iops_ceiling_holds_at_500() {
    let _g = heavy();
    let mut rt = RealTime::start();
    let (node, r) = fio_under_ceiling(
        "p500",
        "max_throughput_iops = 500",
        "64MiB",
        &["--rw=randread", "--bs=4k", "--iodepth=16"],
    );
    assert!(
        node.ready_output()
            .iter()
            .any(|l| l.contains("vol") && l.contains("ceiling 500 IOPS")),
        "ready output names the ceiling: {:?}",
        node.ready_output()
    );
    let iops = r.iops("read");
    eprintln!("500-IOPS volume: fio measured {iops:.1} IOPS");
    // The ceiling holds whatever the machine does: never above it.
    assert!(
        iops <= 505.0,
        "500-IOPS volume measured {iops:.1} IOPS (want <= 505)\n{}",
        r.out
    );
    // Reaching it needs the CPU: a starved host makes a shortfall inconclusive.
    if iops < 450.0 {
        rt.short(format!(
            "500-IOPS volume measured {iops:.1} IOPS (want >= 450)"
        ));
    }
    rt.finish();
}

#[test]
fn bandwidth_ceiling_holds_at_100_mib_s() {
    let _g = heavy();
    let mut rt = RealTime::start();
    let (_node, r) = fio_under_ceiling(
        "p100m",
        "max_throughput_mbps = 100",
        "256MiB",
        &["--rw=read", "--bs=1M", "--iodepth=8"],
    );
    let mib_s = r.mib_s("read");
    eprintln!("100 MB/s volume: fio measured {mib_s:.2} MiB/s");
    assert!(
        mib_s <= 101.0,
        "100 MB/s volume measured {mib_s:.1} MiB/s (want <= 101)\n{}",
        r.out
    );
    if mib_s < 90.0 {
        rt.short(format!(
            "100 MB/s volume measured {mib_s:.1} MiB/s (want >= 90)"
        ));
    }
    rt.finish();
}
