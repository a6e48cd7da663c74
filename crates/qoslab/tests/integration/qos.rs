//! QoS ceilings end to end: real fio through the real binary, measured by fio.

use crate::util::{fio, heavy, Node};

#[test]
fn iops_ceiling_holds_at_500() {
    let _g = heavy();
    let node = Node::start(
        r#"
[[policy]]
name = "p500"
fixed = { max_throughput_iops = 500 }

[[volume]]
name = "vol"
size = "64MiB"
policy = "p500"
"#,
    );
    assert!(
        node.ready_output()
            .iter()
            .any(|l| l.contains("vol") && l.contains("ceiling 500 IOPS")),
        "ready output names the ceiling: {:?}",
        node.ready_output()
    );
    let r = fio(
        &node.uri("vol"),
        &[
            "--rw=randread",
            "--bs=4k",
            "--iodepth=16",
            "--time_based",
            "--runtime=5",
            "--ramp_time=1",
        ],
    );
    let iops = r.iops("read");
    eprintln!("500-IOPS volume: fio measured {iops:.1} IOPS");
    assert!(
        (450.0..=505.0).contains(&iops),
        "500-IOPS volume measured {iops:.1} IOPS (want 450..=505)\n{}",
        r.out
    );
}

#[test]
fn bandwidth_ceiling_holds_at_100_mib_s() {
    let _g = heavy();
    let node = Node::start(
        r#"
[[policy]]
name = "p100m"
fixed = { max_throughput_mbps = 100 }

[[volume]]
name = "vol"
size = "256MiB"
policy = "p100m"
"#,
    );
    let r = fio(
        &node.uri("vol"),
        &[
            "--rw=read",
            "--bs=1M",
            "--iodepth=8",
            "--time_based",
            "--runtime=5",
            "--ramp_time=1",
        ],
    );
    let mib_s = r.mib_s("read");
    eprintln!("100 MB/s volume: fio measured {mib_s:.2} MiB/s");
    assert!(
        (90.0..=101.0).contains(&mib_s),
        "100 MB/s volume measured {mib_s:.1} MiB/s (want 90..=101)\n{}",
        r.out
    );
}
