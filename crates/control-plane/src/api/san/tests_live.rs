//! The SAN resources in process: maps checked against node.toml's LUNs (numbers) and the
//! CHAP rule beyond loopback (no test listens beyond loopback: `ControlPlane::open`
//! binds nothing, so the rule is checked here with a non-loopback `[iscsi] listen`).

use std::sync::Arc;

use crate::api::ControlPlane;
use crate::NodeConfig;

const A: &str = "iqn.2026-01.lab.example:a";
const B: &str = "iqn.2026-01.lab.example:b";

fn open(dir: &test_support::TestDir, iscsi: &str) -> Arc<ControlPlane> {
    let text = format!(
        "[[volume]]\nname = \"db\"\nsize = \"16MiB\"\n\
         [[volume]]\nname = \"cfg\"\nsize = \"1MiB\"\n{iscsi}"
    );
    let cfg = NodeConfig::parse(&text, "node.toml").unwrap();
    let src = storage_node::config::Src::new(&text, "node.toml");
    let settings = iscsi_server::config::parse(&src, &cfg).unwrap();
    let cp = ControlPlane::open(&cfg, dir, Arc::default()).unwrap();
    cp.san().set_iscsi_settings(settings);
    cp
}

fn post(
    cp: &ControlPlane,
    what: &str,
    body: &str,
) -> Result<serde_json::Value, (u16, String, String)> {
    let san = cp.san();
    let r = match what {
        "lun" => san.create_lun(body.as_bytes()),
        "igroup" => san.create_igroup(body.as_bytes()),
        _ => san.create_map(body.as_bytes()),
    };
    r.map(|r| r.body)
        .map_err(|e| (e.status, e.target, e.message))
}

fn lun_and_igroup(cp: &ControlPlane, initiator: &str) {
    post(
        cp,
        "lun",
        r#"{"name": "/vol/db/l1", "os_type": "linux", "space": {"size": 1048576}}"#,
    )
    .unwrap();
    post(
        cp,
        "igroup",
        &format!(
            r#"{{"name": "g", "os_type": "linux", "initiators": [{{"name": "{initiator}"}}]}}"#
        ),
    )
    .unwrap();
}

const MAP: &str = r#"{"lun": {"name": "/vol/db/l1"}, "igroup": {"name": "g"}}"#;

#[test]
fn beyond_loopback_a_map_to_an_initiator_without_chap_is_refused_unless_insecure() {
    let d = test_support::TestDir::new("san-exposure");
    let cp = open(&d, "[iscsi]\nlisten = \"192.0.2.10:3260\"\n");
    lun_and_igroup(&cp, A);
    let (status, target, msg) = post(&cp, "map", MAP).unwrap_err();
    assert_eq!((status, target.as_str()), (409, "igroup"), "{msg}");
    assert!(
        msg.contains(&format!(
            "initiator {A:?} of igroup \"g\" would see LUN /vol/db/l1 without CHAP"
        )) && msg.contains("--insecure-iscsi"),
        "{msg}"
    );
    assert!(
        cp.san().exposure_problems().is_empty(),
        "nothing was mapped"
    );
    // --insecure-iscsi: the same map is made; the start check then finds it.
    cp.san().set_insecure_iscsi(true);
    let m = post(&cp, "map", MAP).unwrap();
    assert_eq!(m["logical_unit_number"], 0);
    assert!(cp.san().exposure_problems().is_empty());
    cp.san().set_insecure_iscsi(false);
    let p = cp.san().exposure_problems();
    assert_eq!(p.len(), 1, "{p:?}");
    // Adding an initiator without CHAP to the mapped igroup is refused too.
    let g = cp.lock().san.igroups[0].uuid.clone();
    let e = cp
        .san()
        .add_initiators(&g, format!(r#"{{"name": "{B}"}}"#).as_bytes())
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        (e.status, e.target.as_str()),
        (409, "name"),
        "{}",
        e.message
    );
    assert!(e.message.contains(B), "{}", e.message);
}

#[test]
fn beyond_loopback_a_map_to_chap_initiators_is_made() {
    let d = test_support::TestDir::new("san-chap");
    let cp = open(
        &d,
        &format!(
            "[iscsi]\nlisten = \"192.0.2.10:3260\"\n\
             [[iscsi.credentials]]\ninitiator = \"default\"\nauthentication_type = \"deny\"\n\
             [[iscsi.credentials]]\ninitiator = \"{A}\"\nauthentication_type = \"chap\"\n\
             chap_file = \"a.chap\"\n"
        ),
    );
    lun_and_igroup(&cp, A);
    post(&cp, "map", MAP).unwrap();
    // `deny` initiators never log in: adding one exposes nothing.
    let g = cp.lock().san.igroups[0].uuid.clone();
    cp.san()
        .add_initiators(&g, format!(r#"{{"name": "{B}"}}"#).as_bytes())
        .map_err(|e| e.message)
        .unwrap();
    assert!(cp.san().exposure_problems().is_empty());
}

#[test]
fn numbers_never_clash_with_node_toml_luns_or_other_igroups_and_state_survives_reopen() {
    let d = test_support::TestDir::new("san-numbers");
    let iscsi = format!(
        "[iscsi]\nlisten = \"127.0.0.1:3260\"\n\
         [[iscsi.lun]]\nvolume = \"cfg\"\n\
         [[iscsi.lun]]\nvolume = \"db\"\nlun = 1\ninitiators = [\"{B}\"]\n"
    );
    let cp = open(&d, &iscsi);
    lun_and_igroup(&cp, A);
    // node.toml's LUN 0 is every initiator's: an explicit 0 is refused, naming it.
    let (status, target, msg) = post(
        &cp,
        "map",
        r#"{"lun": {"name": "/vol/db/l1"}, "igroup": {"name": "g"}, "logical_unit_number": 0}"#,
    )
    .unwrap_err();
    assert_eq!(
        (status, target.as_str()),
        (409, "logical_unit_number"),
        "{msg}"
    );
    assert!(msg.contains("node.toml's LUN 0 (volume \"cfg\")"), "{msg}");
    // The next free number for A is 1 (node.toml's LUN 1 is B's only).
    let m = post(&cp, "map", MAP).unwrap();
    assert_eq!(m["logical_unit_number"], 1);
    // A second igroup with A and B: B sees node.toml's 1, A sees l1 at 1: the next is 2.
    post(
        &cp,
        "lun",
        r#"{"name": "/vol/db/l2", "os_type": "linux", "space": {"size": 4096}}"#,
    )
    .unwrap();
    post(
        &cp,
        "igroup",
        &format!(r#"{{"name": "g2", "os_type": "linux", "initiators": [{{"name": "{A}"}}, {{"name": "{B}"}}]}}"#),
    )
    .unwrap();
    let m = post(
        &cp,
        "map",
        r#"{"lun": {"name": "/vol/db/l2"}, "igroup": {"name": "g2"}}"#,
    )
    .unwrap();
    assert_eq!(m["logical_unit_number"], 2);
    // What the node serves: A sees l1 at 1 and l2 at 2; B sees l2 at 2.
    let seen = |i: &str| -> Vec<(u16, String)> {
        cp.node
            .san()
            .visible(i)
            .into_iter()
            .map(|m| (m.number, m.volume))
            .collect()
    };
    assert_eq!(
        seen(A),
        [(1, "db:l1".to_string()), (2, "db:l2".to_string())]
    );
    assert_eq!(seen(B), [(2, "db:l2".to_string())]);
    // A map list shows its keys without fields= (a map has no uuid or name of its own).
    let q = crate::api::query::parse_query("").unwrap();
    let list = cp.san().list_maps(&q).map_err(|e| e.message).unwrap().body;
    assert_eq!(list["num_records"], 2, "{list}");
    assert_eq!(list["records"][0]["logical_unit_number"], 1, "{list}");
    assert_eq!(list["records"][0]["lun"]["name"], "/vol/db/l1", "{list}");
    assert_eq!(list["records"][1]["igroup"]["name"], "g2", "{list}");
    drop(cp);
    let cp = open(&d, &iscsi);
    assert_eq!(
        cp.node.san().visible(A).len(),
        2,
        "the maps are published again at start"
    );
    assert!(
        cp.node.block_volume("db:l2").is_some(),
        "the LUNs are served"
    );
}

#[test]
fn a_lun_is_held_by_its_own_policy_or_else_its_volumes() {
    let d = test_support::TestDir::new("san-qos");
    let cp = open(&d, "");
    for (name, iops) in [("p", 100), ("q", 200)] {
        let body = format!(r#"{{"name": "{name}", "fixed": {{"max_throughput_iops": {iops}}}}}"#);
        cp.policies()
            .create(body.as_bytes())
            .map_err(|e| e.message)
            .unwrap();
    }
    let db = cp
        .lock()
        .volumes
        .iter()
        .find(|v| v.name == "db")
        .unwrap()
        .uuid
        .clone();
    let set_volume = |p: &str| {
        let body = format!(r#"{{"qos": {{"policy": {{"name": "{p}"}}}}}}"#);
        cp.volumes()
            .patch(&db, body.as_bytes())
            .map_err(|e| e.message)
            .unwrap();
    };
    set_volume("p");
    lun_and_igroup(&cp, A);
    let ceiling = || cp.node.volume("db:l1").unwrap().limits().ceiling.iops;
    assert_eq!(ceiling(), 100, "the volume's policy");
    let lun = cp.lock().san.luns[0].uuid.clone();
    let patch = |body: &str| {
        cp.san()
            .patch_lun(&lun, body.as_bytes())
            .map(|r| r.body)
            .map_err(|e| (e.status, e.target, e.message))
    };
    let r = patch(r#"{"qos_policy": {"name": "q"}}"#).unwrap();
    assert_eq!(r["qos_policy"]["name"], "q");
    assert_eq!(r["qos_policy"]["inherited_from_volume"], false);
    assert_eq!(ceiling(), 200, "its own policy");
    set_volume("none");
    assert_eq!(ceiling(), 200, "its own policy, whatever its volume's");
    // A policy a LUN holds cannot be deleted.
    let q = cp
        .lock()
        .policies
        .iter()
        .find(|p| p.row.name == "q")
        .unwrap()
        .row
        .uuid
        .clone();
    let e = cp.policies().delete(&q).map(|_| ()).unwrap_err();
    assert_eq!(e.status, 409);
    assert!(e.message.contains("/vol/db/l1"), "{}", e.message);
    let r = patch(r#"{"qos_policy": null}"#).unwrap();
    assert_eq!(r["qos_policy"], serde_json::json!({}));
    assert_eq!(ceiling(), 0, "its volume's: none");
    set_volume("p");
    assert_eq!(ceiling(), 100, "it follows its volume's policy");
    // Grow; shrinking is refused naming the field.
    let r = patch(r#"{"space": {"size": 2097152}}"#).unwrap();
    assert_eq!(r["space"]["size"], 2097152);
    assert_eq!(cp.node.volume("db:l1").unwrap().size(), 2097152);
    let (status, target, msg) = patch(r#"{"space": {"size": 1048576}}"#).unwrap_err();
    assert_eq!((status, target.as_str()), (400, "space.size"), "{msg}");
}

/// A LUN's file is `VOLUME:LUN.img` in one directory, and a file name holds at most 255
/// bytes: a path whose two names are each valid (up to 128 characters) but together too
/// long is refused as a 400 naming `name` and the limit, before any file is made (it was
/// a 500, ENAMETOOLONG from creating the file). At the limit, the LUN is made.
#[test]
fn a_lun_whose_file_name_would_be_too_long_is_a_400_naming_the_limit() {
    let d = test_support::TestDir::new("san-long");
    let cp = open(&d, "");
    let vol = "v".repeat(128);
    cp.volumes()
        .create(format!(r#"{{"name": "{vol}", "size": 1048576}}"#).as_bytes())
        .map_err(|e| e.message)
        .unwrap();
    let lun = |name: &str| {
        post(
            &cp,
            "lun",
            &format!(
                r#"{{"name": "/vol/{vol}/{name}", "os_type": "linux", "space": {{"size": 4096}}}}"#
            ),
        )
    };
    let (status, target, msg) = lun(&"l".repeat(128)).unwrap_err();
    assert_eq!((status, target.as_str()), (400, "name"), "{msg}");
    assert!(
        msg.contains("255") && msg.contains("250"),
        "names the limit: {msg}"
    );
    let files = || std::fs::read_dir(d.join("volumes")).unwrap().count();
    let before = files();
    // 128 + 122 = 250 characters: `VOLUME:LUN.img` is 255 bytes, the most a name holds.
    let made = lun(&"l".repeat(122)).map_err(|e| e.2).unwrap();
    assert_eq!(made["location"]["logical_unit"], "l".repeat(122));
    assert_eq!(files(), before + 1, "its file");
}

/// A map's `svm` was parsed and ignored: one other than the igroup's (the node's SVM) is
/// refused as the other SAN POSTs refuse it (409 svm_mismatch), the node's own is taken.
#[test]
fn a_map_naming_another_svm_is_refused() {
    let d = test_support::TestDir::new("san-map-svm");
    let cp = open(&d, "");
    lun_and_igroup(&cp, A);
    for (svm, target) in [
        (r#"{"name": "other"}"#, "svm.name"),
        (
            r#"{"uuid": "11111111-2222-3333-4444-555555555555"}"#,
            "svm.uuid",
        ),
    ] {
        let body = format!(
            r#"{{"lun": {{"name": "/vol/db/l1"}}, "igroup": {{"name": "g"}}, "svm": {svm}}}"#
        );
        let (status, t, msg) = post(&cp, "map", &body).unwrap_err();
        assert_eq!((status, t.as_str()), (409, target), "{msg}");
        assert!(
            cp.san()
                .list_maps(&crate::api::query::parse_query("").unwrap())
                .unwrap()
                .body["num_records"]
                == 0
        );
    }
    let (n, u) = (
        crate::api::svms::DEFAULT_SVM,
        crate::api::svms::derived_uuid(crate::api::svms::DEFAULT_SVM),
    );
    let body = format!(
        r#"{{"lun": {{"name": "/vol/db/l1"}}, "igroup": {{"name": "g"}}, "svm": {{"name": "{n}", "uuid": "{u}"}}}}"#
    );
    post(&cp, "map", &body).map_err(|e| e.2).unwrap();
}

/// A LUN's `svm.uuid` was not checked (only its name): a uuid other than its volume's
/// SVM's is refused as the name is (409 svm_mismatch naming svm.uuid); its own is taken.
#[test]
fn a_lun_naming_another_svm_uuid_is_refused() {
    let d = test_support::TestDir::new("san-lun-svm-uuid");
    let cp = open(&d, "");
    let lun = |name: &str, uuid: &str| {
        post(
            &cp,
            "lun",
            &format!(
                r#"{{"name": "/vol/db/{name}", "os_type": "linux", "space": {{"size": 4096}}, "svm": {{"uuid": "{uuid}"}}}}"#
            ),
        )
    };
    let (status, t, msg) = lun("l1", "11111111-2222-3333-4444-555555555555").unwrap_err();
    assert_eq!((status, t.as_str()), (409, "svm.uuid"), "{msg}");
    assert!(
        msg.contains("11111111-2222-3333-4444-555555555555"),
        "{msg}"
    );
    let own = crate::api::svms::derived_uuid(crate::api::svms::DEFAULT_SVM);
    let made = lun("l1", &own).map_err(|e| e.2).unwrap();
    assert_eq!(made["svm"]["uuid"], own.as_str());
}

/// GET of one initiator ignored `fields=`: it is projected as the list is.
#[test]
fn one_initiator_honours_fields() {
    let d = test_support::TestDir::new("san-initiator-fields");
    let cp = open(&d, "");
    lun_and_igroup(&cp, A);
    let q = |s: &str| crate::api::query::parse_query(s).unwrap();
    let list = cp.san().list_igroups(&q("fields=uuid")).unwrap().body;
    let uuid = list["records"][0]["uuid"].as_str().unwrap().to_string();
    let route = super::SanRoute::Initiator(uuid.clone(), A.to_string());
    let one = |f: &str| {
        cp.san()
            .dispatch(&hyper::Method::GET, route.clone(), b"", &q(f))
            .map_err(|e| e.message)
            .unwrap()
            .body
    };
    assert_eq!(one("fields=name"), serde_json::json!({"name": A}));
    assert_eq!(
        one("")["igroup"]["uuid"],
        uuid.as_str(),
        "no fields=: everything"
    );
}
