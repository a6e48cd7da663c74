//! A plan's volume declared a LUN (`[[iscsi.lun]] volume = "VOL"`) on a running node
//! (`qoslab bench PLAN --node URL`): the volume is made or used as any plan volume
//! ([`super`]), and fio reaches LUN `/vol/VOL/bench` inside it over the node's
//! iSCSI target, as the harness's initiator ([`harness::iscsi::INITIATOR`]):
//!
//! - the target's address is `/api/protocols/san/iscsi/services`' `listen` (a node started
//!   without `--listen-iscsi` is refused, naming the volume);
//! - the LUN is the node's when it has one at that path (used as it is, never changed or
//!   deleted; written only with `--overwrite`, as any LUN), else made for the run, thin, of
//!   the plan volume's size, without a policy of its own (it takes its volume's);
//! - when no igroup of the node shows the LUN to the harness's initiator, the run makes an
//!   igroup of that initiator (`qoslab_bench_PID_START`) and maps the LUN to it at the
//!   smallest free number;
//! - what the run made (map, LUN, igroup) carries the run's mark like its volumes and is
//!   deleted at the end and on signals ([`super`]'s teardown), and by the next
//!   run on the same node when this one was killed.
//!
//! The node serves the LUN as block volume `VOL:bench`, with its own books: the samples
//! judged for the jobs on VOL are that block volume's (`harness::target::LunOnNode`).
//!
//! The plan's other `[iscsi]` keys (`harness::plan::iscsi_on_node`): `lun = N` is the
//! map's number (refused, before anything is made, when the harness's initiator sees
//! another LUN at N or a node's igroup shows this one at another number); `initiators`
//! (the harness's initiator alone, else refused at the plan's edge) is refused when the
//! node's own igroup that shows the LUN shows it to others too; `iqn` and `alias` must
//! be the node's target's.

use std::sync::Mutex;
use std::time::Duration;

use harness::iscsi::{IscsiUrl, INITIATOR};
use harness::node_api::{query_value as enc, NodeHandle};
use harness::plan::{WrittenIscsi, WrittenLun};
use harness::target::LunOnNode;
use serde_json::{json, Value};

use super::{lock, Created};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The LUN's name inside a plan's volume, and its path: `/vol/VOL/bench`.
pub use harness::plan::iscsi_on_node::{lun_path, LUN_NAME};

/// The node's block volume serving it (the name of its samples): `VOL:bench`.
pub fn node_name(volume: &str) -> String {
    format!("{volume}:{LUN_NAME}")
}

/// The igroup a run makes for the harness's initiator, named after the run's marker
/// (`BOOT:PID:START`): `qoslab_bench_PID_START`.
pub fn igroup_name(marker: &str) -> String {
    let mut f = marker.split(':').skip(1);
    let pid = f.next().unwrap_or("0");
    let start = f.next().unwrap_or("0");
    let keep = |s: &str| -> String { s.chars().filter(char::is_ascii_alphanumeric).collect() };
    format!("qoslab_bench_{}_{}", keep(pid), keep(start))
}

/// A LUN's size for a plan volume of `size` bytes: a multiple of 512, at least 4 KiB (the
/// node's rule for `space.size`).
pub fn lun_size(size: u64) -> u64 {
    (size / 512 * 512).max(4096)
}

/// The node's iSCSI target from `GET /api/protocols/san/iscsi/services?fields=*`: the
/// portal fio connects to (`HOST:PORT`) and the target's name. A listener bound to every
/// address (`0.0.0.0`, `::`) is reached at the API URL's host. `volume` names the plan's
/// volume in the error of a node without iSCSI.
pub fn target_of(
    services: &Value,
    api_url: &str,
    volume: &str,
) -> Result<(String, String), String> {
    let rec = services["records"].as_array().and_then(|r| r.first());
    let listen = rec
        .filter(|r| r["enabled"].as_bool() == Some(true))
        .and_then(|r| r["listen"].as_str());
    let Some(listen) = listen else {
        return Err(format!(
            "volume {volume:?} is a LUN in the plan's [[iscsi.lun]], and --node {api_url} serves \
             no iSCSI (its /api/protocols/san/iscsi/services is not enabled): start the node \
             with --listen-iscsi ADDRESS:PORT (e.g. --listen-iscsi 127.0.0.1:3260), or drop \
             the plan's [[iscsi.lun]] to run the volume over NBD"
        ));
    };
    let iqn = rec
        .and_then(|r| r["target"]["name"].as_str())
        .ok_or_else(|| {
            format!("--node {api_url}: its iSCSI service names no target (target.name)")
        })?;
    let addr: std::net::SocketAddr = listen.parse().map_err(|_| {
        format!("--node {api_url}: its iSCSI service's listen = {listen:?} is not an address:port")
    })?;
    let portal = if addr.ip().is_unspecified() {
        // `url`'s host prints an IPv6 address in brackets, ready for `:PORT`.
        let host = url::Url::parse(api_url)
            .ok()
            .and_then(|u| u.host().map(|h| h.to_string()))
            .ok_or_else(|| format!("--node {api_url}: no host in the URL to reach {listen} at"))?;
        format!("{host}:{}", addr.port())
    } else {
        addr.to_string()
    };
    Ok((portal, iqn.to_string()))
}

/// The number at which an igroup of the node (`GET /api/protocols/san/igroups` records
/// with `initiators` and `lun_maps`) shows LUN `path` to the harness's initiator.
pub fn seen_at(igroups: &Value, path: &str) -> Option<u16> {
    shown_by(igroups, path).map(|s| s.number)
}

/// A map of the node's through which the harness's initiator sees a LUN.
#[derive(Debug, PartialEq, Eq)]
pub struct Shown {
    pub igroup: String,
    pub lun: String,
    pub number: u16,
    /// The igroup's other initiators.
    pub others: Vec<String>,
}

/// Every map of the node's igroups of the harness's initiator.
fn maps_seen(igroups: &Value) -> Vec<Shown> {
    let mut out = Vec::new();
    for g in igroups["records"].as_array().into_iter().flatten() {
        let names: Vec<&str> = g["initiators"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["name"].as_str())
            .collect();
        if !names.iter().any(|n| n.eq_ignore_ascii_case(INITIATOR)) {
            continue;
        }
        for m in g["lun_maps"].as_array().into_iter().flatten() {
            let (Some(lun), Some(number)) = (
                m["lun"]["name"].as_str(),
                m["logical_unit_number"]
                    .as_u64()
                    .and_then(|n| u16::try_from(n).ok()),
            ) else {
                continue;
            };
            out.push(Shown {
                igroup: g["name"].as_str().unwrap_or_default().to_string(),
                lun: lun.to_string(),
                number,
                others: names
                    .iter()
                    .filter(|n| !n.eq_ignore_ascii_case(INITIATOR))
                    .map(|n| n.to_string())
                    .collect(),
            });
        }
    }
    out
}

/// The map of the node's that shows LUN `path` to the harness's initiator.
pub fn shown_by(igroups: &Value, path: &str) -> Option<Shown> {
    maps_seen(igroups).into_iter().find(|m| m.lun == path)
}

/// Refuse what the plan wrote of a LUN (`w`: its `lun`, its `initiators`) that the node's
/// igroups (`igroups`) contradict: checked before anything is made. `url` names the node.
pub fn check_written(igroups: &Value, url: &str, w: &WrittenLun) -> Result<(), String> {
    let path = lun_path(&w.volume);
    if let Some(s) = shown_by(igroups, &path) {
        if let Some(n) = w.lun.as_ref().filter(|n| n.value != s.number) {
            return Err(format!(
                "{}on --node {url} igroup {:?} shows LUN {path} to {INITIATOR} at {} already, \
                 and the run uses that map as it is (it changes nothing of the node's); write \
                 lun = {} or leave the key out",
                w.head(n, "lun", &n.value.to_string()),
                s.igroup,
                s.number,
                s.number
            ));
        }
        if let Some(i) = w.initiators.as_ref().filter(|_| !s.others.is_empty()) {
            let shown: Vec<String> = i.value.iter().map(|n| format!("{n:?}")).collect();
            let others: Vec<String> = s.others.iter().map(|n| format!("{n:?}")).collect();
            return Err(format!(
                "{}on --node {url} igroup {:?} shows LUN {path} to {INITIATOR} and to {} too, \
                 and the run uses that igroup as it is (it changes nothing of the node's); \
                 leave the key out to run on it, or unmap the LUN from that igroup",
                w.head(i, "initiators", &format!("[{}]", shown.join(", "))),
                s.igroup,
                others.join(", ")
            ));
        }
        return Ok(());
    }
    if let Some(n) = &w.lun {
        if let Some(s) = maps_seen(igroups).into_iter().find(|s| s.number == n.value) {
            return Err(format!(
                "{}the run maps LUN {path} to {INITIATOR} at {}, and on --node {url} that \
                 initiator sees LUN {} at {} already (igroup {:?}); choose another number, or \
                 leave the key out (the node picks the smallest free one)",
                w.head(n, "lun", &n.value.to_string()),
                n.value,
                s.lun,
                n.value,
                s.igroup
            ));
        }
    }
    Ok(())
}

/// Check the node's target (`services`: `GET /api/protocols/san/iscsi/services?fields=*`)
/// and igroups against the plan's `[iscsi]` (`written`) for the LUNs of `volumes`, before
/// anything is made; `url` names the node.
pub(crate) fn check_plan(
    api: &NodeHandle,
    services: &Value,
    written: &WrittenIscsi,
    volumes: &[&String],
) -> Result<(), String> {
    let url = api.url();
    let target = &services["records"][0]["target"];
    let name = target["name"].as_str().unwrap_or_default();
    written
        .check_target(url, name, target["alias"].as_str())
        .map_err(|e| e.0)?;
    let asked: Vec<&WrittenLun> = volumes
        .iter()
        .filter_map(|v| written.lun(v))
        .filter(|w| w.lun.is_some() || w.initiators.is_some())
        .collect();
    if asked.is_empty() {
        return Ok(());
    }
    let groups = api
        .get(
            "/api/protocols/san/igroups?fields=uuid,name,initiators,lun_maps",
            TIMEOUT,
        )
        .map_err(|e| format!("--node {url}: listing igroups: {e}"))?;
    asked
        .into_iter()
        .try_for_each(|w| check_written(&groups, url, w))
}

/// What the run needs to reach a plan volume's LUN, found once per run.
pub(crate) struct Reach {
    /// The portal and the target's name.
    pub(crate) target: (String, String),
    /// The igroup this run made for the harness's initiator: (name, uuid).
    pub(crate) igroup: Option<(String, String)>,
    pub(crate) marker: String,
    pub(crate) mark: &'static str,
    /// What the plan's `[iscsi]` wrote (a LUN's `lun`: the map's number).
    pub(crate) written: WrittenIscsi,
}

/// Ensure LUN `/vol/VOLUME/bench` (of the plan volume's `size`) and its map to the
/// harness's initiator: what the run makes is recorded in `created`; `made` gets a line
/// per object made. `volume_policy`: the volume's policy as the node reports it (a LUN of
/// the node's own under another policy is refused: its limits would not be the volume's).
pub(crate) fn ensure(
    api: &NodeHandle,
    created: &Mutex<Created>,
    reach: &mut Reach,
    volume: &str,
    size: u64,
    volume_policy: Option<&str>,
    made: &mut Vec<String>,
) -> Result<LunOnNode, String> {
    let url = api.url().to_string();
    let path = lun_path(volume);
    let existing = ensure_lun(api, created, reach, volume, size, volume_policy, made)?;
    let groups = api
        .get(
            "/api/protocols/san/igroups?fields=uuid,name,initiators,lun_maps",
            TIMEOUT,
        )
        .map_err(|e| format!("--node {url}: listing igroups: {e}"))?;
    let number = match seen_at(&groups, &path) {
        Some(n) => n,
        None => map_lun(api, created, reach, &path, volume, made)?,
    };
    let (portal, iqn) = &reach.target;
    let lun_url = format!("iscsi://{portal}/{iqn}/{number}");
    IscsiUrl::parse(&lun_url).map_err(|e| format!("--node {url}: LUN {path}: {e}"))?;
    Ok(LunOnNode {
        path,
        node_name: node_name(volume),
        url: lun_url,
        existing,
    })
}

/// `volume`'s LUN: the node's own (whether it existed; refused under a policy other than
/// the volume's), or created for the run.
fn ensure_lun(
    api: &NodeHandle,
    created: &Mutex<Created>,
    reach: &Reach,
    volume: &str,
    size: u64,
    volume_policy: Option<&str>,
    made: &mut Vec<String>,
) -> Result<bool, String> {
    let url = api.url();
    let path = &lun_path(volume);
    let found = api
        .get(
            &format!(
                "/api/storage/luns?name={}&fields=uuid,name,qos_policy",
                enc(path)
            ),
            TIMEOUT,
        )
        .map_err(|e| format!("--node {url}: looking up LUN {path}: {e}"))?;
    if let Some(l) = found["records"].as_array().and_then(|r| r.first()) {
        let own = l["qos_policy"]["name"].as_str();
        if own.is_some() && own != volume_policy {
            return Err(format!(
                "--node {url}: LUN {path} (the node's own, used for the plan's volume \
                 {volume:?}) is under policy {:?}, not its volume's ({}): the run judges a \
                 volume's limits; remove its policy or use another volume name",
                own.unwrap_or_default(),
                volume_policy.unwrap_or("none")
            ));
        }
        return Ok(true);
    }
    let body = json!({
        "name": path,
        "os_type": "linux",
        "space": {"size": lun_size(size)},
        "comment": format!("{}{}; deleted when the run ends", reach.mark, reach.marker),
    });
    let r = api
        .send("POST", "/api/storage/luns", Some(&body), TIMEOUT)
        .map_err(|e| format!("--node {url}: creating LUN {path}: {e}"))?;
    let uuid = r["uuid"]
        .as_str()
        .ok_or_else(|| format!("--node {url}: creating LUN {path}: no uuid in {r}"))?;
    lock(created)
        .luns
        .push((uuid.to_string(), path.to_string()));
    made.push(format!("LUN {path}"));
    Ok(false)
}

/// The run's igroup for the harness's initiator: (name, uuid), made at its first LUN.
fn run_igroup(
    api: &NodeHandle,
    created: &Mutex<Created>,
    reach: &mut Reach,
    made: &mut Vec<String>,
) -> Result<(String, String), String> {
    if let Some(g) = &reach.igroup {
        return Ok(g.clone());
    }
    let url = api.url();
    let name = igroup_name(&reach.marker);
    let body = json!({
        "name": name,
        "protocol": "iscsi",
        "os_type": "linux",
        "initiators": [{"name": INITIATOR}],
        "comment": format!("{}{}; deleted when the run ends", reach.mark, reach.marker),
    });
    let r = api
        .send("POST", "/api/protocols/san/igroups", Some(&body), TIMEOUT)
        .map_err(|e| format!("--node {url}: creating igroup {name}: {e}"))?;
    let uuid = r["uuid"]
        .as_str()
        .ok_or_else(|| format!("--node {url}: creating igroup {name}: no uuid in {r}"))?;
    lock(created).igroups.push((uuid.to_string(), name.clone()));
    made.push(format!("igroup {name} ({INITIATOR})"));
    reach.igroup = Some((name.clone(), uuid.to_string()));
    Ok((name, uuid.to_string()))
}

/// Map LUN `path` to the run's igroup (at the plan's `lun` when it wrote one); the number.
fn map_lun(
    api: &NodeHandle,
    created: &Mutex<Created>,
    reach: &mut Reach,
    path: &str,
    volume: &str,
    made: &mut Vec<String>,
) -> Result<u16, String> {
    let url = api.url().to_string();
    let (gname, _) = run_igroup(api, created, reach, made)?;
    let mut body = json!({"lun": {"name": path}, "igroup": {"name": gname}});
    let asked = reach
        .written
        .lun(volume)
        .and_then(|w| Some((w, w.lun.as_ref()?)));
    if let Some((_, n)) = asked {
        body["logical_unit_number"] = json!(n.value);
    }
    let r = api
        .send("POST", "/api/protocols/san/lun-maps", Some(&body), TIMEOUT)
        .map_err(|e| match asked {
            Some((w, n)) => format!(
                "{}--node {url} refuses to map LUN {path} to igroup {gname} at {}: {e}",
                w.head(n, "lun", &n.value.to_string()),
                n.value
            ),
            None => format!("--node {url}: mapping LUN {path} to igroup {gname}: {e}"),
        })?;
    let (Some(lu), Some(gu), Some(n)) = (
        r["lun"]["uuid"].as_str(),
        r["igroup"]["uuid"].as_str(),
        r["logical_unit_number"]
            .as_u64()
            .and_then(|n| u16::try_from(n).ok()),
    ) else {
        return Err(format!(
            "--node {url}: mapping LUN {path}: no lun, igroup or number in {r}"
        ));
    };
    lock(created)
        .maps
        .push((lu.to_string(), gu.to_string(), format!("{path} to {gname}")));
    made.push(format!("map of {path} to {gname} at LUN {n}"));
    Ok(n)
}

/// `DELETE path` on the node; `what` names the object in the error.
fn delete(api: &NodeHandle, path: &str, what: &str) -> Result<(), String> {
    api.send("DELETE", path, None, TIMEOUT)
        .map(|_| ())
        .map_err(|e| format!("{what} on {}: {e}", api.url()))
}

/// Delete the LUNs and igroups (and their maps) of runs on this host whose comments start
/// with `mark` and whose process is gone; their names.
pub(crate) fn clean_stale(
    api: &NodeHandle,
    marker: &str,
    mark: &str,
) -> Result<Vec<String>, String> {
    let boot = marker.split(':').next().unwrap_or("");
    let stale = |r: &&Value| {
        r["comment"]
            .as_str()
            .is_some_and(|c| super::stale(c, mark, boot))
    };
    let unmap = |lun: &str, igroup: &str| {
        let path = format!("/api/protocols/san/lun-maps/{lun}/{igroup}");
        delete(api, &path, "unmapping a killed run's LUN")
    };
    let records = |v: &Value| v["records"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    // Each stale LUN's maps, then the LUN; then each stale igroup's maps, then the igroup
    // (the node refuses to delete one still mapped). A map names its other end.
    for (noun, collection, other_end) in [
        ("LUN", "/api/storage/luns", "igroup"),
        ("igroup", "/api/protocols/san/igroups", "lun"),
    ] {
        // A node without SAN objects (an older qoslab) has none to clean: its volumes'
        // clean-up says what is wrong when the node is unreachable.
        let fields = format!("{collection}?fields=uuid,name,comment,lun_maps");
        let Ok(list) = api.get(&fields, TIMEOUT) else {
            return Ok(out);
        };
        for o in records(&list).iter().filter(stale) {
            let uuid = o["uuid"].as_str().unwrap_or_default();
            for m in o["lun_maps"].as_array().into_iter().flatten() {
                let other = m[other_end]["uuid"].as_str().unwrap_or_default();
                let (lun, igroup) = if noun == "LUN" {
                    (uuid, other)
                } else {
                    (other, uuid)
                };
                unmap(lun, igroup)?;
            }
            let what = format!("deleting a killed run's {noun}");
            delete(api, &format!("{collection}/{uuid}"), &what)?;
            out.push(format!("{noun} {}", o["name"].as_str().unwrap_or(uuid)));
        }
    }
    Ok(out)
}

/// Delete what a run made on the node's SAN side, maps first (a LUN or igroup still
/// mapped is refused); the errors.
pub(crate) fn delete_made(api: &NodeHandle, c: &mut Created) -> Vec<String> {
    let mut errors = Vec::new();
    for (lun, igroup, what) in std::mem::take(&mut c.maps) {
        let path = format!("/api/protocols/san/lun-maps/{lun}/{igroup}");
        errors.extend(delete(api, &path, &format!("unmapping {what}")).err());
    }
    for (uuid, path) in std::mem::take(&mut c.luns) {
        let p = format!("/api/storage/luns/{uuid}");
        errors.extend(delete(api, &p, &format!("deleting LUN {path}")).err());
    }
    for (uuid, name) in std::mem::take(&mut c.igroups) {
        let p = format!("/api/protocols/san/igroups/{uuid}");
        errors.extend(delete(api, &p, &format!("deleting igroup {name}")).err());
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_volumes_lun_is_bench_inside_it_served_as_vol_colon_bench() {
        assert_eq!(lun_path("db"), "/vol/db/bench");
        assert_eq!(node_name("db"), "db:bench");
        assert_eq!(
            igroup_name("0f3a-boot:4242:987654"),
            "qoslab_bench_4242_987654"
        );
        // A stand-in marker still gives a valid name (letters, digits, _).
        assert_eq!(igroup_name("?:17:?"), "qoslab_bench_17_");
        assert_eq!(lun_size(1 << 30), 1 << 30);
        assert_eq!(lun_size(1000), 4096);
        assert_eq!(lun_size(10_000_000), 9_999_872);
    }

    #[test]
    fn the_target_is_the_services_listener_else_a_clear_refusal() {
        let svc = |enabled: bool, listen: Option<&str>| {
            json!({"records": [{"enabled": enabled, "listen": listen,
                "target": {"name": "iqn.2026-01.lab.qoslab:n0"}}]})
        };
        let api = "https://node.example:8443";
        assert_eq!(
            target_of(&svc(true, Some("127.0.0.1:3261")), api, "db").unwrap(),
            ("127.0.0.1:3261".into(), "iqn.2026-01.lab.qoslab:n0".into())
        );
        // Bound to every address: reached at the API's host.
        assert_eq!(
            target_of(&svc(true, Some("0.0.0.0:3260")), api, "db")
                .unwrap()
                .0,
            "node.example:3260"
        );
        assert_eq!(
            target_of(&svc(true, Some("[::]:3260")), "http://[fd00::5]:80/", "db")
                .unwrap()
                .0,
            "[fd00::5]:3260"
        );
        assert_eq!(
            target_of(&svc(true, Some("[::1]:3260")), api, "db")
                .unwrap()
                .0,
            "[::1]:3260"
        );
        for off in [svc(false, None), svc(true, None), json!({"records": []})] {
            let e = target_of(&off, api, "db").unwrap_err();
            assert!(
                e.starts_with("volume \"db\" is a LUN in the plan's [[iscsi.lun]], and --node https://node.example:8443 serves no iSCSI")
                    && e.contains("start the node with --listen-iscsi"),
                "{e}"
            );
        }
        let e = target_of(&svc(true, Some("nowhere")), api, "db").unwrap_err();
        assert!(
            e.contains("listen = \"nowhere\" is not an address:port"),
            "{e}"
        );
    }

    #[test]
    fn a_lun_is_seen_only_through_an_igroup_of_the_bench_initiator() {
        let groups = json!({"records": [
            {"name": "hosts", "initiators": [{"name": "iqn.1993-08.org.debian:01:h"}],
             "lun_maps": [{"lun": {"name": "/vol/db/bench"}, "logical_unit_number": 0}]},
            {"name": "bench", "initiators": [{"name": "IQN.2026-01.lab.qoslab:BENCH"}],
             "lun_maps": [{"lun": {"name": "/vol/logs/bench"}, "logical_unit_number": 2},
                          {"lun": {"name": "/vol/db/bench"}, "logical_unit_number": 5}]}
        ]});
        assert_eq!(seen_at(&groups, "/vol/db/bench"), Some(5));
        assert_eq!(seen_at(&groups, "/vol/logs/bench"), Some(2));
        assert_eq!(seen_at(&groups, "/vol/other/bench"), None);
        assert_eq!(seen_at(&json!({}), "/vol/db/bench"), None);
    }

    fn written(lun: Option<u16>, initiators: bool) -> WrittenLun {
        let at = |line: usize| format!("p.toml:{line}");
        WrittenLun {
            index: 0,
            volume: "db".into(),
            lun: lun.map(|value| harness::plan::Written { value, at: at(7) }),
            block_size: None,
            initiators: initiators.then(|| harness::plan::Written {
                value: vec![INITIATOR.to_string()],
                at: at(8),
            }),
        }
    }

    #[test]
    fn the_plans_lun_number_and_initiators_are_refused_where_the_nodes_igroups_differ() {
        let url = "http://127.0.0.1:8080";
        let groups = |initiators: serde_json::Value, lun: &str, n: u16| {
            json!({"records": [{"name": "hosts", "initiators": initiators,
                "lun_maps": [{"lun": {"name": lun}, "logical_unit_number": n}]}]})
        };
        let bench_only = json!([{"name": INITIATOR}]);
        let shared = json!([{"name": INITIATOR}, {"name": "iqn.1993-08.org.debian:01:h"}]);
        // The harness's initiator sees another LUN at the plan's number.
        let e = check_written(
            &groups(bench_only.clone(), "/vol/keep/l0", 3),
            url,
            &written(Some(3), false),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "p.toml:7: iscsi.lun[0] (volume \"db\"): lun = 3: the run maps LUN /vol/db/bench to \
             iqn.2026-01.lab.qoslab:bench at 3, and on --node http://127.0.0.1:8080 that \
             initiator sees LUN /vol/keep/l0 at 3 already (igroup \"hosts\"); choose another \
             number, or leave the key out (the node picks the smallest free one)"
        );
        // Another number is free; another initiator's maps do not count.
        check_written(
            &groups(bench_only.clone(), "/vol/keep/l0", 3),
            url,
            &written(Some(4), false),
        )
        .unwrap();
        check_written(
            &groups(
                json!([{"name": "iqn.1993-08.org.debian:01:h"}]),
                "/vol/keep/l0",
                3,
            ),
            url,
            &written(Some(3), true),
        )
        .unwrap();
        // The node's igroup shows this LUN already, at another number: the run would use it.
        let e = check_written(
            &groups(bench_only.clone(), "/vol/db/bench", 0),
            url,
            &written(Some(3), false),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "p.toml:7: iscsi.lun[0] (volume \"db\"): lun = 3: on --node http://127.0.0.1:8080 \
             igroup \"hosts\" shows LUN /vol/db/bench to iqn.2026-01.lab.qoslab:bench at 0 \
             already, and the run uses that map as it is (it changes nothing of the node's); \
             write lun = 0 or leave the key out"
        );
        check_written(
            &groups(bench_only, "/vol/db/bench", 3),
            url,
            &written(Some(3), true),
        )
        .unwrap();
        // ... to other initiators too: the plan's list (the harness's alone) would not hold.
        let e = check_written(
            &groups(shared.clone(), "/vol/db/bench", 3),
            url,
            &written(Some(3), true),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "p.toml:8: iscsi.lun[0] (volume \"db\"): initiators = \
             [\"iqn.2026-01.lab.qoslab:bench\"]: on --node http://127.0.0.1:8080 igroup \"hosts\" \
             shows LUN /vol/db/bench to iqn.2026-01.lab.qoslab:bench and to \
             \"iqn.1993-08.org.debian:01:h\" too, and the run uses that igroup as it is (it \
             changes nothing of the node's); leave the key out to run on it, or unmap the LUN \
             from that igroup"
        );
        check_written(
            &groups(shared, "/vol/db/bench", 3),
            url,
            &written(Some(3), false),
        )
        .unwrap();
        assert_eq!(
            shown_by(
                &groups(json!([{"name": INITIATOR}]), "/vol/db/bench", 2),
                "/vol/db/bench"
            ),
            Some(Shown {
                igroup: "hosts".into(),
                lun: "/vol/db/bench".into(),
                number: 2,
                others: Vec::new()
            })
        );
    }
}
