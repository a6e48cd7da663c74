//! SAN objects declared in node.toml (`[[lun]]`, `[[igroup]]`, `[[lun_map]]`) and driven
//! with qoslab's own `lun` and `igroup` commands, on a running node's iSCSI target: the
//! mapped initiator sees the LUN at its number (libiscsi's iscsi-ls with `-i`), another
//! does not; GET /api/storage/luns lists it; `qoslab lun create|map|unmap|delete` and
//! `qoslab igroup create|add|remove|delete` change what iscsi-ls sees at once; a restart
//! with the same file keeps the API's changes, an edited file applies the edit; beyond
//! loopback a map to an initiator without CHAP stops the start.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::api_cli::cli;
use crate::api_util::Api;
use crate::iscsi::require_libiscsi;
use crate::iscsi_node::iscsi_port;
use crate::san_rest::lun_numbers;
use crate::util::{run, Node, TempDir, QOSLAB};

const IQN: &str = "iqn.2026-01.lab.qoslab:san-config";
const HOST_A: &str = "iqn.2026-01.lab.example:cfg-a";
const HOST_B: &str = "iqn.2026-01.lab.example:cfg-b";
const LUNS: &str = "/api/storage/luns";

fn config(number: u16) -> String {
    format!(
        "[[policy]]\nname = \"gold\"\nfixed.max_throughput = \"500iops\"\n\
         [[volume]]\nname = \"db\"\nsize = \"64MiB\"\n\
         [iscsi]\niqn = \"{IQN}\"\n\
         [[lun]]\npath = \"/vol/db/lun1\"\nsize = \"8MiB\"\nos_type = \"linux\"\npolicy = \"gold\"\n\
         [[igroup]]\nname = \"dbhosts\"\nos_type = \"linux\"\ninitiators = [\"{HOST_A}\"]\n\
         [[lun_map]]\nlun = \"/vol/db/lun1\"\nigroup = \"dbhosts\"\nlogical_unit_number = {number}\n"
    )
}

/// `qoslab ARGS --url NODE`, which must succeed; its standard output.
fn ok(node: &Node, args: &[&str]) -> String {
    cli(node, args).ok().stdout
}

fn json(node: &Node, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--output", "json"]);
    let text = ok(node, &a);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}\n{text}"))
}

/// The record of `list` (a `--output json` list) whose `name` is `name`.
fn record<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["records"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no {name:?} in {list}"))
}

/// A node from node.toml's `[[lun]]`, `[[igroup]]` and `[[lun_map]]`: HOST_A sees LUN 2,
/// HOST_B nothing; GET lists it under its policy. Then qoslab's `lun` and `igroup`
/// commands make a second LUN, an igroup for HOST_B, map, add, remove, unmap and delete,
/// each seen by iscsi-ls at once; a restart keeps them, an edited map number applies.
/// Cost: ~3 s.
#[test]
fn node_toml_san_objects_are_served_and_qoslab_lun_and_igroup_drive_the_target() {
    require_libiscsi();
    let mut node = Node::start_with(&config(2), &["--listen-iscsi", "127.0.0.1:0"]);
    let port = iscsi_port(&node);
    assert_eq!(lun_numbers(port, HOST_A), [2], "node.toml's map");
    assert!(
        lun_numbers(port, HOST_B).is_empty(),
        "HOST_B is in no igroup"
    );
    let api = Api::new(&node.api_url());
    let got = api.get_ok(&format!("{LUNS}?fields=*"));
    assert_eq!(got["num_records"], 1, "{got}");
    let l = &got["records"][0];
    assert_eq!(l["name"], "/vol/db/lun1", "{l}");
    assert_eq!(l["space"]["size"], 8 << 20, "{l}");
    assert_eq!(l["qos_policy"]["name"], "gold", "{l}");
    assert_eq!(l["lun_maps"][0]["igroup"]["name"], "dbhosts", "{l}");
    assert_eq!(l["lun_maps"][0]["logical_unit_number"], 2, "{l}");

    // qoslab lun / qoslab igroup.
    let table = ok(&node, &["lun", "list"]);
    assert!(
        table.contains("/vol/db/lun1") && table.contains("dbhosts=2") && table.contains("gold"),
        "{table}"
    );
    ok(
        &node,
        &[
            "igroup",
            "create",
            "others",
            "--os-type",
            "linux",
            "--initiator",
            HOST_B,
        ],
    );
    let created = json(
        &node,
        &[
            "lun",
            "create",
            "/vol/db/lun2",
            "--size",
            "4MiB",
            "--os-type",
            "linux",
        ],
    );
    assert_eq!(created["name"], "/vol/db/lun2", "{created}");
    assert_eq!(created["qos_policy"]["inherited_from_volume"], Value::Null);
    let mapped = ok(
        &node,
        &["lun", "map", "/vol/db/lun2", "others", "--lun-id", "7"],
    );
    assert!(mapped.contains("at LUN number 7"), "{mapped}");
    assert_eq!(lun_numbers(port, HOST_B), [7], "mapped at once");
    assert_eq!(lun_numbers(port, HOST_A), [2], "HOST_A is not in `others`");
    let list = json(&node, &["lun", "list"]);
    assert_eq!(list["num_records"], 2, "{list}");
    let l2 = record(&list, "/vol/db/lun2");
    assert_eq!(l2["lun_maps"][0]["igroup"]["name"], "others", "{l2}");
    assert_eq!(l2["lun_maps"][0]["logical_unit_number"], 7, "{l2}");
    let groups = json(&node, &["igroup", "list"]);
    let g = record(&groups, "others");
    assert_eq!(g["initiators"][0]["name"], HOST_B, "{g}");

    ok(&node, &["igroup", "add", "others", HOST_A]);
    assert_eq!(
        lun_numbers(port, HOST_A),
        [2, 7],
        "added: sees the igroup's LUN"
    );
    ok(&node, &["igroup", "remove", "others", HOST_A]);
    assert_eq!(lun_numbers(port, HOST_A), [2], "removed: loses it");

    // Refused while mapped: exit 2, the API's 409 and what to do.
    let out = cli(&node, &["lun", "delete", "/vol/db/lun2"]).refused();
    assert!(
        out.stderr.contains("409") && out.stderr.contains("unmap it first"),
        "{out}"
    );
    let out = cli(&node, &["lun", "map", "/vol/db/nope", "others"]).refused();
    assert!(
        out.stderr
            .contains("no LUN named \"/vol/db/nope\" (qoslab lun list shows them)"),
        "{out}"
    );
    let out = cli(
        &node,
        &[
            "lun",
            "create",
            "/vol/db/x",
            "--size",
            "1MiB",
            "--os-type",
            "beos",
        ],
    )
    .refused();
    assert!(out.stderr.contains("os_type = \"beos\""), "{out}");

    let unmapped = json(&node, &["lun", "unmap", "/vol/db/lun2", "others"]);
    assert_eq!(unmapped, serde_json::json!({}));
    assert!(lun_numbers(port, HOST_B).is_empty(), "unmapped at once");
    ok(&node, &["lun", "delete", "/vol/db/lun2"]);
    ok(&node, &["igroup", "delete", "others"]);
    assert_eq!(json(&node, &["lun", "list"])["num_records"], 1);
    assert_eq!(json(&node, &["igroup", "list"])["num_records"], 1);

    // An API change to a declared object survives a restart with the same file...
    ok(&node, &["igroup", "add", "dbhosts", HOST_B]);
    node.stop();
    node.start_again();
    let port = iscsi_port(&node);
    assert_eq!(lun_numbers(port, HOST_A), [2]);
    assert_eq!(lun_numbers(port, HOST_B), [2], "the API's change is kept");
    assert_eq!(
        json(&node, &["lun", "list"])["num_records"],
        1,
        "not made twice"
    );
    // ...and an edited declaration applies.
    node.rewrite_config(&config(3));
    node.stop();
    node.start_again();
    let port = iscsi_port(&node);
    assert_eq!(lun_numbers(port, HOST_A), [3], "the edited map number");
}

/// Beyond loopback, node.toml's map of a LUN to an initiator without CHAP stops the start
/// as the same map over REST is refused: exit 2, naming the declaration's line and the
/// fix, before any listener is bound; a new data directory is removed again. Cost: ~0.3 s.
#[test]
fn beyond_loopback_a_node_toml_map_without_chap_stops_the_start() {
    let dir = TempDir::new("san-config-chap");
    std::fs::write(dir.join("node.toml"), config(2)).unwrap();
    let data = dir.join("data");
    let out = run(
        Command::new(QOSLAB)
            .arg("serve")
            .arg("--config")
            .arg(dir.join("node.toml"))
            .arg("--data-dir")
            .arg(&data)
            .arg("--listen-unix")
            .arg(dir.join("s.sock"))
            .args(["--listen-http", "off", "--listen-iscsi", "0.0.0.0:0"]),
        Duration::from_secs(20),
    )
    .refused();
    assert!(
        out.stderr.contains(&format!(
            "node.toml:19: lun_map (\"/vol/db/lun1\" to igroup \"dbhosts\"): refused: \
             initiator {HOST_A:?} of igroup \"dbhosts\" would see LUN /vol/db/lun1 without CHAP \
             on non-loopback iSCSI listener 0.0.0.0:0"
        )) && out.stderr.contains("--insecure-iscsi"),
        "{out}"
    );
    assert!(!data.exists(), "a refused start left {}", data.display());
}
