//! node.toml's `[[lun]]`, `[[igroup]]` and `[[lun_map]]` applied in process: once when new,
//! never again while unchanged (API changes survive), again when edited; served to the
//! mapped initiator only; the CHAP rule beyond loopback stops a start, naming the line.

use std::sync::Arc;

use crate::api::query::parse_query;
use crate::api::ControlPlane;
use crate::NodeConfig;

/// node.toml's node sections and its `[iscsi]`, as `qoslab serve` reads them.
struct Declared {
    cfg: NodeConfig,
    iscsi: iscsi_server::IscsiSettings,
}

impl std::ops::Deref for Declared {
    type Target = NodeConfig;
    fn deref(&self) -> &NodeConfig {
        &self.cfg
    }
}

const A: &str = "iqn.2026-01.lab.example:a";
const B: &str = "iqn.2026-01.lab.example:b";
const C: &str = "iqn.2026-01.lab.example:c";

fn config(listen: &str, size: &str, initiators: &str, number: u16) -> Declared {
    let text = format!(
            "[[policy]]\nname = \"gold\"\nfixed.max_throughput = \"500iops\"\n\
             [[volume]]\nname = \"db\"\nsize = \"16MiB\"\n\
             [iscsi]\nlisten = \"{listen}\"\n\
             [[lun]]\npath = \"/vol/db/lun1\"\nsize = \"{size}\"\nos_type = \"linux\"\npolicy = \"gold\"\n\
             [[igroup]]\nname = \"g\"\nos_type = \"linux\"\ninitiators = [{initiators}]\n\
             [[lun_map]]\nlun = \"/vol/db/lun1\"\nigroup = \"g\"\nlogical_unit_number = {number}\n"
        );
    let cfg = NodeConfig::parse(&text, "node.toml").unwrap();
    let src = storage_node::config::Src::new(&text, "node.toml");
    let iscsi = iscsi_server::config::parse(&src, &cfg).unwrap();
    Declared { cfg, iscsi }
}

fn open(d: &test_support::TestDir, cfg: &Declared) -> Arc<ControlPlane> {
    let cp = ControlPlane::open(cfg, d, Arc::default()).unwrap();
    cp.san().set_iscsi_settings(cfg.iscsi.clone());
    cp
}

/// (number, node volume) of each LUN `initiator` sees.
fn seen(cp: &ControlPlane, initiator: &str) -> Vec<(u16, String)> {
    cp.node
        .san()
        .visible(initiator)
        .into_iter()
        .map(|m| (m.number, m.volume))
        .collect()
}

fn luns(cp: &ControlPlane) -> serde_json::Value {
    let q = parse_query("fields=*").unwrap();
    cp.san().list_luns(&q).map_err(|e| e.message).unwrap().body
}

#[test]
fn declarations_apply_when_new_or_edited_and_api_changes_survive_an_unchanged_file() {
    let d = test_support::TestDir::new("san-declared");
    let cfg = config("127.0.0.1:3260", "1MiB", &format!("\"{A}\""), 3);
    let cp = open(&d, &cfg);
    assert_eq!(cp.san().apply_declarations(&cfg.san), Ok(3));
    assert_eq!(seen(&cp, A), [(3, "db:lun1".to_string())]);
    assert!(seen(&cp, B).is_empty(), "B is in no igroup");
    // GET /api/storage/luns lists it like any LUN.
    let l = luns(&cp);
    assert_eq!(l["num_records"], 1, "{l}");
    let r = &l["records"][0];
    assert_eq!(r["name"], "/vol/db/lun1", "{r}");
    assert_eq!(r["space"]["size"], 1 << 20, "{r}");
    assert_eq!(r["os_type"], "linux", "{r}");
    assert_eq!(r["qos_policy"]["name"], "gold", "{r}");
    assert_eq!(r["qos_policy"]["inherited_from_volume"], false, "{r}");
    assert_eq!(r["lun_maps"][0]["logical_unit_number"], 3, "{r}");
    assert_eq!(r["lun_maps"][0]["igroup"]["name"], "g", "{r}");
    // Unchanged: nothing is applied again.
    assert_eq!(cp.san().apply_declarations(&cfg.san), Ok(0));
    // A change through the API (B added) survives a restart with the same file.
    let g = cp.lock().san.igroups[0].uuid.clone();
    cp.san()
        .add_initiators(&g, format!(r#"{{"name": "{B}"}}"#).as_bytes())
        .map_err(|e| e.message)
        .unwrap();
    drop(cp);
    let cp = open(&d, &cfg);
    assert_eq!(cp.san().apply_declarations(&cfg.san), Ok(0));
    assert_eq!(
        seen(&cp, B),
        [(3, "db:lun1".to_string())],
        "the API's change is kept"
    );
    // Edited: the LUN grows, the igroup is the file's initiators (B, added through the
    // API, goes; C comes), the map moves.
    let both = format!("\"{A}\", \"{C}\"");
    let edited = config("127.0.0.1:3260", "2MiB", &both, 4);
    drop(cp);
    let cp = open(&d, &edited);
    assert_eq!(cp.san().apply_declarations(&edited.san), Ok(3));
    assert_eq!(seen(&cp, A), [(4, "db:lun1".to_string())]);
    assert_eq!(seen(&cp, C), [(4, "db:lun1".to_string())]);
    assert!(seen(&cp, B).is_empty(), "B is not in the file's igroup");
    let l = luns(&cp);
    assert_eq!(l["records"][0]["space"]["size"], 2 << 20, "{l}");
    // A shrink is refused as over REST, naming the declaration.
    let shrunk = config("127.0.0.1:3260", "1MiB", &both, 4);
    drop(cp);
    let cp = open(&d, &shrunk);
    let e = cp.san().apply_declarations(&shrunk.san).unwrap_err();
    assert!(
        e.starts_with("node.toml:10: lun \"/vol/db/lun1\": ") && e.contains("space.size"),
        "{e}"
    );
}

#[test]
fn beyond_loopback_a_node_toml_map_without_chap_stops_the_start_naming_its_line() {
    let d = test_support::TestDir::new("san-declared-chap");
    let cfg = config("192.0.2.10:3260", "1MiB", &format!("\"{A}\""), 0);
    let cp = open(&d, &cfg);
    let e = cp.san().apply_declarations(&cfg.san).unwrap_err();
    assert!(
        e.starts_with(&format!(
            "node.toml:19: lun_map (\"/vol/db/lun1\" to igroup \"g\"): refused: initiator {A:?} \
             of igroup \"g\" would see LUN /vol/db/lun1 without CHAP"
        )) && e.contains("--insecure-iscsi"),
        "{e}"
    );
    assert!(seen(&cp, A).is_empty(), "nothing was mapped");
    // The LUN and igroup this start made are gone again, their file too.
    assert_eq!(luns(&cp)["num_records"], 0);
    assert!(cp.lock().san.igroups.is_empty());
    assert!(!d.join("volumes/db:lun1.img").exists());
    // --insecure-iscsi: all three are made.
    cp.san().set_insecure_iscsi(true);
    assert_eq!(cp.san().apply_declarations(&cfg.san), Ok(3));
    assert_eq!(seen(&cp, A), [(0, "db:lun1".to_string())]);
    assert!(d.join("volumes/db:lun1.img").exists());
}
