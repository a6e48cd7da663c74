//! ONTAP's SAN objects over REST and the clustershell, live on a running node's iSCSI
//! target: a LUN made and mapped through `/api/storage/luns`, `/api/protocols/san/igroups`
//! and `/api/protocols/san/lun-maps` is seen at once by the igroup's initiators (libiscsi's
//! iscsi-ls, iscsi-readcapacity16, iscsi-inq with `-i`) at its number and size, by no
//! other initiator; unmapping hides it; data written over iSCSI and the maps survive a
//! restart; bad requests get 400/404/409 naming the field and value.

use std::process::Command;
use std::time::Duration;

use iscsi_server::client::{read10, write10};
use serde_json::Value;

use crate::api_util::{Api, VOLUMES};
use crate::iscsi::{iscsi_ls, require_libiscsi, with_initiator};
use crate::iscsi_node::iscsi_port;
use crate::util::{pattern, run, Node, Out, QOSLAB};

const IQN: &str = "iqn.2026-01.lab.qoslab:san-rest";
const HOST_A: &str = "iqn.2026-01.lab.example:host-a";
const HOST_B: &str = "iqn.2026-01.lab.example:host-b";
const HOST_C: &str = "iqn.2026-01.lab.example:host-c";
const LUNS: &str = "/api/storage/luns";
const IGROUPS: &str = "/api/protocols/san/igroups";
const MAPS: &str = "/api/protocols/san/lun-maps";
const LIMIT: Duration = Duration::from_secs(30);

/// The LUN numbers iscsi-ls lists for `initiator`, who discovered the target and logged
/// in (none: it sees no LUN; a `Lun:` line without a number fails).
pub fn lun_numbers(port: u16, initiator: &str) -> Vec<u16> {
    let portal = format!("iscsi://127.0.0.1:{port}");
    let ls = iscsi_ls(&["-i", initiator, "-s", &portal]).ok().stdout;
    assert!(ls.contains("Target:"), "{initiator} found no target:\n{ls}");
    ls.lines()
        .filter_map(|l| l.trim().strip_prefix("Lun:"))
        .map(|l| {
            l.split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("a Lun: line without a number: {l:?}\n{ls}"))
        })
        .collect()
}

fn url(port: u16, lun: u16) -> String {
    format!("iscsi://127.0.0.1:{port}/{IQN}/{lun}")
}

/// iscsi-readcapacity16 -s: the LUN's size in bytes as `initiator` sees it.
fn capacity(port: u16, initiator: &str, lun: u16) -> Out {
    run(
        Command::new("iscsi-readcapacity16").args(["-s", "-i", initiator, &url(port, lun)]),
        LIMIT,
    )
}

fn ontap(node: &Node, line: &str) -> Out {
    run(
        Command::new(QOSLAB)
            .args(["ontap", "--url", &node.api_url()])
            .args(line.split_whitespace()),
        LIMIT,
    )
}

fn ontap_ok(node: &Node, line: &str) -> String {
    ontap(node, line).ok().stdout
}

fn config() -> String {
    format!(
        "[[volume]]\nname = \"db\"\nsize = \"64MiB\"\n\
         [[volume]]\nname = \"logs\"\nsize = \"16MiB\"\n\
         [iscsi]\niqn = \"{IQN}\"\n"
    )
}

/// Write `data` at LBA 0 of LUN `lun` as `initiator` (FUA), then read it back.
fn write_and_read(port: u16, initiator: &str, lun: u16, data: &[u8]) -> Vec<u8> {
    with_initiator(port, initiator, |mut c| async move {
        assert_eq!(c.login(IQN, &[]).await, (0, 0));
        let blocks = (data.len() / 512) as u16;
        if !data.is_empty() {
            let w = c
                .command(lun, &write10(0, blocks, true), data.len() as u32, data)
                .await;
            assert_eq!(w.status, 0, "WRITE(10) to LUN {lun}");
        }
        let r = c.command(lun, &read10(0, 256), 256 * 512, &[]).await;
        assert_eq!(r.status, 0, "READ(10) of LUN {lun}");
        r.data
    })
}

/// Over REST: a LUN in a volume, an igroup of one initiator, a map at LUN 5: at once the
/// initiator sees LUN 5 at its size and serial, another sees nothing; growing it shows in
/// READ CAPACITY; the clustershell adds a second LUN mapped at the next free number and
/// an initiator; unmapping hides a LUN; data and maps survive a restart; errors name
/// their field. Cost: ~5 s.
#[test]
fn luns_igroups_and_maps_over_rest_and_the_clustershell_are_live_on_the_target() {
    require_libiscsi();
    let mut node = Node::start_with(&config(), &["--listen-iscsi", "127.0.0.1:0"]);
    let port = iscsi_port(&node);
    let api = Api::new(&node.api_url());
    assert!(lun_numbers(port, HOST_A).is_empty(), "no LUNs yet");

    let lun = api.create(
        LUNS,
        r#"{"name": "/vol/db/lun1", "os_type": "linux", "space": {"size": 8388608}}"#,
    );
    let lun_uuid = lun["uuid"].as_str().unwrap().to_string();
    let serial = lun["serial_number"].as_str().unwrap().to_string();
    assert_eq!(serial.len(), 12, "{lun}");
    assert_eq!(lun["location"]["volume"]["name"], "db");
    assert_eq!(lun["space"]["size"], 8388608);
    assert_eq!(lun["status"]["mapped"], false);
    assert_eq!(lun["svm"]["name"], "qoslab");
    let igroup = api.create(
        IGROUPS,
        &format!(r#"{{"name": "hosts", "protocol": "iscsi", "os_type": "linux", "initiators": [{{"name": "{HOST_A}"}}]}}"#),
    );
    let igroup_uuid = igroup["uuid"].as_str().unwrap().to_string();
    let map = api.create(
        MAPS,
        r#"{"lun": {"name": "/vol/db/lun1"}, "igroup": {"name": "hosts"}, "logical_unit_number": 5}"#,
    );
    assert_eq!(map["logical_unit_number"], 5, "{map}");

    // At once, on the running target.
    assert_eq!(lun_numbers(port, HOST_A), [5]);
    assert!(
        lun_numbers(port, HOST_B).is_empty(),
        "host-b is in no igroup"
    );
    assert_eq!(capacity(port, HOST_A, 5).ok().stdout.trim(), "8388608");
    let inq = run(
        Command::new("iscsi-inq").args(["-i", HOST_A, "-e", "1", "-c", "128", &url(port, 5)]),
        LIMIT,
    )
    .ok();
    assert!(
        inq.stdout.contains(&serial),
        "VPD 0x80 is the API's serial {serial}: {inq}"
    );
    assert!(
        !capacity(port, HOST_B, 5).status.success(),
        "host-b cannot reach LUN 5"
    );
    let got = api.get_ok(&format!("{LUNS}/{lun_uuid}"));
    assert_eq!(got["status"]["mapped"], true);
    assert_eq!(got["lun_maps"][0]["igroup"]["name"], "hosts");

    // Grow it: READ CAPACITY follows.
    api.patch_ok(
        &format!("{LUNS}/{lun_uuid}"),
        r#"{"space": {"size": 16777216}}"#,
    );
    assert_eq!(capacity(port, HOST_A, 5).ok().stdout.trim(), "16777216");

    // The clustershell: a second LUN, mapped at the next free number; an initiator added.
    let out = ontap_ok(
        &node,
        "lun create -vserver qoslab -path /vol/logs/lun2 -size 4m -ostype linux",
    );
    assert!(out.contains("Created a LUN of size 4m (4194304)"), "{out}");
    ontap_ok(
        &node,
        &format!("igroup add -vserver qoslab -igroup hosts -initiator {HOST_C}"),
    );
    let out = ontap_ok(
        &node,
        "lun map -vserver qoslab -path /vol/logs/lun2 -igroup hosts",
    );
    assert!(out.contains("with LUN ID 0"), "{out}");
    assert_eq!(lun_numbers(port, HOST_A), [0, 5]);
    assert_eq!(lun_numbers(port, HOST_C), [0, 5]);
    let shown = ontap_ok(&node, "lun show");
    assert!(
        shown.contains("/vol/db/lun1")
            && shown.contains("/vol/logs/lun2")
            && shown.contains("mapped"),
        "{shown}"
    );
    let mapping = ontap_ok(&node, "lun mapping show");
    assert!(
        mapping.contains("/vol/logs/lun2") && mapping.contains("hosts"),
        "{mapping}"
    );
    let groups = ontap_ok(&node, "igroup show");
    assert!(
        groups.contains(HOST_A) && groups.contains(HOST_C),
        "{groups}"
    );
    let svc = ontap_ok(&node, "vserver iscsi show");
    assert!(svc.contains(IQN) && svc.contains("up"), "{svc}");
    let svc = api.get_ok("/api/protocols/san/iscsi/services?fields=target,enabled,listen");
    assert_eq!(svc["records"][0]["target"]["name"], IQN);
    assert_eq!(svc["records"][0]["enabled"], true);
    assert_eq!(
        svc["records"][0]["listen"].as_str(),
        Some(format!("127.0.0.1:{port}").as_str()),
        "{svc}"
    );

    // Errors name the field and the value.
    let bad = |method: &str, path: &str, body: &str, status: u16, target: &str, says: &str| {
        let r = api.req(method, path, Some(body));
        let msg = r.error(status, target);
        assert!(
            msg.contains(says),
            "{method} {path} {body}: {msg:?} lacks {says:?}"
        );
    };
    bad(
        "POST",
        LUNS,
        r#"{"name": "db/lun9", "os_type": "linux", "space": {"size": 4096}}"#,
        400,
        "name",
        "\"db/lun9\"",
    );
    bad(
        "POST",
        LUNS,
        r#"{"name": "/vol/db/lun9", "os_type": "beos", "space": {"size": 4096}}"#,
        400,
        "os_type",
        "\"beos\"",
    );
    bad(
        "POST",
        LUNS,
        r#"{"name": "/vol/nope/lun9", "os_type": "linux", "space": {"size": 4096}}"#,
        404,
        "name",
        "\"nope\"",
    );
    bad(
        "POST",
        LUNS,
        r#"{"name": "/vol/db/lun1", "os_type": "linux", "space": {"size": 4096}}"#,
        409,
        "name",
        "/vol/db/lun1",
    );
    bad(
        "POST",
        MAPS,
        r#"{"lun": {"name": "/vol/db/lun1"}, "igroup": {"name": "nobody"}}"#,
        404,
        "igroup",
        "\"nobody\"",
    );
    bad(
        "POST",
        IGROUPS,
        r#"{"name": "fc", "protocol": "fcp", "os_type": "linux"}"#,
        400,
        "protocol",
        "\"fcp\"",
    );
    api.create(
        LUNS,
        r#"{"name": "/vol/db/lun3", "os_type": "linux", "space": {"size": 4096}}"#,
    );
    bad(
        "POST",
        MAPS,
        r#"{"lun": {"name": "/vol/db/lun3"}, "igroup": {"name": "hosts"}, "logical_unit_number": 5}"#,
        409,
        "logical_unit_number",
        "5",
    );
    bad(
        "DELETE",
        &format!("{LUNS}/{lun_uuid}"),
        "",
        409,
        "uuid",
        "mapped to igroup(s) \"hosts\"",
    );
    let db = api.uuid_of(VOLUMES, "db");
    bad(
        "DELETE",
        &format!("{VOLUMES}/{db}"),
        "",
        409,
        "uuid",
        "/vol/db/lun1",
    );
    let out = ontap(&node, "lun map -path /vol/db/lun3 -igroup hosts -lun-id 0");
    assert!(
        !out.status.success() && out.stderr.contains("logical_unit_number"),
        "{out}"
    );

    // An igroup made in the clustershell: host-b sees lun3 at the next free number.
    let out = ontap(
        &node,
        &format!("igroup create -igroup fc -protocol fcp -ostype linux -initiator {HOST_B}"),
    );
    assert!(
        !out.status.success() && out.stderr.contains("iSCSI only"),
        "{out}"
    );
    ontap_ok(
        &node,
        &format!("igroup create -vserver qoslab -igroup others -protocol iscsi -ostype linux -initiator {HOST_B}"),
    );
    let out = ontap_ok(&node, "lun map -path /vol/db/lun3 -igroup others");
    assert!(out.contains("with LUN ID 0"), "{out}");
    assert_eq!(lun_numbers(port, HOST_B), [0]);
    assert_eq!(capacity(port, HOST_B, 0).ok().stdout.trim(), "4096");
    let out = ontap(&node, "lun delete -path /vol/db/lun3");
    assert!(
        !out.status.success() && out.stderr.contains("unmap it first"),
        "{out}"
    );
    ontap_ok(&node, "lun unmap -path /vol/db/lun3 -igroup others");
    assert!(lun_numbers(port, HOST_B).is_empty());
    ontap_ok(&node, "lun delete -path /vol/db/lun3");

    // Unmap lun2 through the clustershell: gone at once.
    ontap_ok(
        &node,
        "lun unmap -vserver qoslab -path /vol/logs/lun2 -igroup hosts",
    );
    assert_eq!(lun_numbers(port, HOST_A), [5]);

    // Data written over iSCSI and the maps survive a restart.
    let data = pattern(71, 64 << 10);
    let got = write_and_read(port, HOST_A, 5, &data);
    assert!(
        got[..data.len()] == data[..],
        "read back before the restart"
    );
    // The LUN is a workload of its own: its books count what the initiator did.
    let stats = api.get_ok(&format!("{LUNS}/{lun_uuid}?fields=statistics"));
    let st = &stats["statistics"];
    assert!(st["iops_raw"]["write"].as_u64().unwrap() >= 1, "{stats}");
    assert!(
        st["throughput_raw"]["write"].as_u64().unwrap() >= 64 << 10,
        "{stats}"
    );
    assert!(st["iops_raw"]["read"].as_u64().unwrap() >= 1, "{stats}");
    node.stop();
    node.start_again();
    let port = iscsi_port(&node);
    assert_eq!(lun_numbers(port, HOST_A), [5], "the map is stored");
    assert!(lun_numbers(port, HOST_B).is_empty());
    assert_eq!(capacity(port, HOST_A, 5).ok().stdout.trim(), "16777216");
    let got = write_and_read(port, HOST_A, 5, &[]);
    assert!(got[..data.len()] == data[..], "read back after the restart");
    let api = Api::new(&node.api_url());
    let got = api.get_ok(&format!("{LUNS}/{lun_uuid}"));
    assert_eq!(
        got["serial_number"].as_str(),
        Some(serial.as_str()),
        "a stable serial"
    );
    assert!(got["space"]["used"].as_u64().unwrap() >= 64 << 10, "{got}");

    // Unmap over REST, then the LUN and the volume can go.
    let r = api.req("DELETE", &format!("{MAPS}/{lun_uuid}/{igroup_uuid}"), None);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(lun_numbers(port, HOST_A).is_empty());
    let r = api.req("DELETE", &format!("{LUNS}/{lun_uuid}"), None);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        api.req("DELETE", &format!("{VOLUMES}/{db}"), None).status,
        200
    );
    let left: Value = api.get_ok(LUNS);
    assert_eq!(left["num_records"], 1, "{left}");
}
