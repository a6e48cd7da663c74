//! Burst and provisioned policies through the CLI. The bursts themselves, measured end to
//! end with fio, are in `provisioned.rs` (the provisioned profile on gp2 and on FSx).

use serde_json::Value;

use crate::api_cli::cli;
use crate::util::Node;

/// The CLI creates burst and provisioned policies, shows them, modifies only a burst, and
/// `qoslab stats` shows a volume's bucket and the file system's resources.
#[test]
fn cli_burst_and_provisioned_policies() {
    let node = Node::start_with(
        "",
        &[
            "--provisioned",
            "fsx-ontap-128",
            "--provisioned-scale",
            "0.001",
        ],
    );
    let ok = |args: &[&str]| cli(&node, args).ok().stdout;
    ok(&[
        "policy",
        "create",
        "sf",
        "--min-throughput",
        "50iops",
        "--max-throughput",
        "1000iops",
        "--burst-throughput",
        "1500iops",
        "--burst-duration",
        "60s",
    ]);
    ok(&[
        "policy",
        "create",
        "gp2",
        "--model",
        "ebs-gp2",
        "--bucket-scale",
        "1/10",
    ]);
    let list = ok(&["policy", "list"]);
    assert!(
        list.contains("burst 1500iops (60s at full burst, starts 100%)"),
        "{list}"
    );
    assert!(
        list.contains("provisioned") && list.contains("model ebs-gp2 bucket x0.1"),
        "{list}"
    );
    // Only a burst flag: it goes into the policy's own kind.
    ok(&["policy", "modify", "sf", "--burst-initial-percent", "50"]);
    assert!(ok(&["policy", "show", "sf"]).contains("starts 50%"));
    ok(&["policy", "modify", "sf", "--no-burst"]);
    assert!(!ok(&["policy", "show", "sf"]).contains("burst"));
    // Mixing a model with fixed limits is refused before any request.
    let out = cli(
        &node,
        &[
            "policy",
            "create",
            "x",
            "--model",
            "ebs-gp2",
            "--max-throughput",
            "5iops",
        ],
    );
    assert!(
        !out.status.success() && out.stderr.contains("provisioned policy"),
        "{out}"
    );
    ok(&[
        "volume",
        "create",
        "v",
        "--size",
        "100GiB",
        "--qos-policy",
        "gp2",
    ]);
    let stats = ok(&["stats", "--iterations", "1"]);
    assert!(
        stats.contains("Burst") && stats.contains("iops 100% constant"),
        "{stats}"
    );
    assert!(
        stats.contains("Provisioned file system fsx-ontap-128"),
        "{stats}"
    );
    assert!(
        stats.contains("network") && stats.contains("150.0MB/s"),
        "{stats}"
    );
    let json = ok(&["stats", "--iterations", "1", "--output", "json"]);
    let v: Value = serde_json::from_str(&json).expect("stats JSON");
    assert_eq!(v["records"][0]["burst"]["iops"]["bucket"], 540_000);
    assert_eq!(v["provisioned"]["model"], "fsx-ontap-128");
}
