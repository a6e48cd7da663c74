//! The CLI (`qoslab policy|volume|stats`) against a real node.

use std::process::Command;
use std::time::Duration;

use crate::util::{run, Node, Out, QOSLAB};

/// `qoslab ARGS --url NODE` (any REST client command).
pub fn cli(node: &Node, args: &[&str]) -> Out {
    run(
        Command::new(QOSLAB)
            .args(args)
            .arg("--url")
            .arg(node.api_url()),
        Duration::from_secs(30),
    )
}

#[test]
fn api_cli_unit_typos_name_the_allowed_forms() {
    let node = Node::start("");
    for (args, flag, forms) in [
        (
            vec!["policy", "create", "p", "--max-throughput", "500iop"],
            "--max-throughput",
            "500iops,100MB/s",
        ),
        (
            vec!["policy", "create", "p", "--peak-iops", "50IOPS/G"],
            "--peak-iops",
            "IOPS/GB",
        ),
        (
            vec![
                "policy",
                "create",
                "p",
                "--peak-iops",
                "5",
                "--peak-iops-allocation",
                "allocated",
            ],
            "--peak-iops-allocation",
            "allocated-space",
        ),
        (
            vec!["volume", "create", "v", "--size", "10XB"],
            "--size",
            "KiB",
        ),
    ] {
        let out = cli(&node, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out}");
        assert!(
            out.stderr.contains(flag) && out.stderr.contains(forms),
            "{args:?}: the error should name {flag} and the allowed forms ({forms}): {out}"
        );
    }
    // Both kinds at once.
    let out = cli(
        &node,
        &[
            "policy",
            "create",
            "p",
            "--max-throughput",
            "5iops",
            "--peak-iops",
            "5",
        ],
    )
    .refused();
    assert!(out.stderr.contains("not both"), "{out}");
    // API errors come back as the CLI's error with status and code.
    let out = cli(&node, &["policy", "delete", "nope"]).refused();
    assert!(out.stderr.contains("no QoS policy named \"nope\""), "{out}");
}

#[test]
fn api_cli_create_list_show_modify_delete_round_trip() {
    let node = Node::start("");
    let ok = |args: &[&str]| cli(&node, args).ok().stdout;
    ok(&[
        "policy",
        "create",
        "QoS_500iops",
        "--max-throughput",
        "500iops",
        "--svm",
        "nfs_svm",
    ]);
    ok(&[
        "policy",
        "create",
        "both",
        "--max-throughput",
        "500iops,100MB/s",
    ]);
    ok(&[
        "policy",
        "create",
        "aQoS",
        "--expected-iops",
        "5IOPS/GB",
        "--peak-iops",
        "50IOPS/GB",
        "--peak-iops-allocation",
        "allocated-space",
    ]);
    let list = ok(&["policy", "list"]);
    for want in [
        "QoS_500iops",
        "max 500iops",
        "500iops,100MB/s",
        "aQoS",
        "peak 50000IOPS/TB",
        "extreme",
    ] {
        assert!(list.contains(want), "policy list lacks {want:?}:\n{list}");
    }
    let show = ok(&["policy", "show", "QoS_500iops"]);
    assert!(
        show.contains("SVM: nfs_svm") && show.contains("max 500iops"),
        "{show}"
    );

    ok(&[
        "volume",
        "create",
        "vol100",
        "--size",
        "100GB",
        "--qos-policy",
        "aQoS",
    ]);
    let show = ok(&["volume", "show", "vol100"]);
    assert!(show.contains("aQoS") && show.contains("4750iops"), "{show}");
    let list = ok(&["volume", "list"]);
    assert!(
        list.contains("vol100") && list.contains("100000000000"),
        "{list}"
    );
    // JSON output parses and carries the API's shape.
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["volume", "show", "vol100", "--output", "json"])).unwrap();
    assert_eq!(json["qos"]["policy"]["name"], "aQoS");

    // In use: refused, naming the volume.
    let out = cli(&node, &["policy", "delete", "aQoS"]).refused();
    assert!(
        out.stderr.contains("vol100") && out.stderr.contains("409"),
        "{out}"
    );

    ok(&["policy", "modify", "aQoS", "--peak-iops", "100IOPS/GB"]);
    let show = ok(&["volume", "show", "vol100"]);
    assert!(show.contains("9500iops"), "{show}");
    ok(&[
        "volume",
        "modify",
        "vol100",
        "--qos-policy",
        "QoS_500iops",
        "--size",
        "200GB",
    ]);
    let show = ok(&["volume", "show", "vol100"]);
    assert!(
        show.contains("500iops") && show.contains("200000000000"),
        "{show}"
    );
    let stats = ok(&["stats", "--iterations", "1"]);
    assert!(
        stats.contains("-total-") && stats.contains("vol100"),
        "{stats}"
    );
    ok(&["volume", "modify", "vol100", "--qos-policy", "none"]);
    ok(&["policy", "delete", "aQoS"]);
    ok(&["volume", "delete", "vol100"]);
    let list = ok(&["volume", "list"]);
    assert!(!list.contains("vol100"), "{list}");
}
