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

/// The volume `what` held its ceiling: `got` (`unit`, as fio measured it) never above `max`
/// whatever the machine does; below `min` only as a starved host explains (reaching the
/// ceiling needs the CPU). `out` is fio's output.
fn held(rt: &mut RealTime, what: &str, got: f64, unit: &str, (min, max): (f64, f64), out: &str) {
    assert!(
        got <= max,
        "{what} measured {got:.1} {unit} (want <= {max})\n{out}"
    );
    if got < min {
        rt.short(format!("{what} measured {got:.1} {unit} (want >= {min})"));
    }
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
    held(
        &mut rt,
        "500-IOPS volume",
        iops,
        "IOPS",
        (450.0, 505.0),
        &r.out,
    );
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
    held(
        &mut rt,
        "100 MB/s volume",
        mib_s,
        "MiB/s",
        (90.0, 101.0),
        &r.out,
    );
    rt.finish();
}
