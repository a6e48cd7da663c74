//! A plan's setup on a running node (`qoslab bench PLAN --node URL`): each volume the plan's
//! work names is looked up on the node; the plan's `[[policy]]` and `[[volume]]` tables the
//! node lacks are created there through its REST API (ONTAP's shapes), and deleted again
//! when the run ends, also on SIGINT/SIGTERM/SIGHUP (the lifecycle's remote phase). What
//! the node already has is used as it is, never changed or deleted. A created volume's
//! comment names the run (`qoslab bench run BOOT_ID:PID:START`): a run SIGKILL'ed on this
//! host leaves volumes the next run on the same node deletes, never a live run's (the
//! tenants family's volumes carry the same kind of mark: [`run_marker`], [`stale`]).
//! A plan's volume declared a LUN (`[[iscsi.lun]]`) is reached over the node's iSCSI
//! target, through a LUN inside it ([`lun`]).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use harness::node_api::{query_value as enc, NodeHandle};
use harness::node_spec::NodeSpec;
use harness::plan::WrittenIscsi;
use harness::target::{lookup_volume, Target, VolumeOnNode};
use storage_node::NodeConfig;

pub mod lun;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The comment prefix of a volume a bench run created.
const MARK: &str = "qoslab bench run ";

/// This process as a run marker: `BOOT_ID:PID:START` (a stand-in when /proc cannot tell).
pub fn run_marker() -> String {
    let me = || -> Option<String> {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let pid = std::process::id();
        let start = mounts::sys::start_time(pid)?;
        Some(format!("{}:{pid}:{start}", boot.trim()))
    };
    me().unwrap_or_else(|| format!("?:{}:?", std::process::id()))
}

/// Whether a volume comment that starts with `mark` names a run of boot `boot` whose
/// process is gone.
pub fn stale(comment: &str, mark: &str, boot: &str) -> bool {
    let Some(rest) = comment.strip_prefix(mark) else {
        return false;
    };
    let id = rest.split(';').next().unwrap_or("");
    let mut f = id.split(':');
    match (
        f.next(),
        f.next().and_then(|p| p.parse::<u32>().ok()),
        f.next().and_then(|s| s.parse::<u64>().ok()),
    ) {
        (Some(b), Some(pid), Some(start)) if b == boot => !mounts::sys::alive(pid, start),
        _ => false,
    }
}

/// What a run created on the node (deleted at the end, or on a signal): this module's
/// and the tenants family's.
#[derive(Default)]
pub(crate) struct Created {
    pub(crate) volumes: Vec<String>,
    pub(crate) policies: Vec<String>,
    /// LUNs as (uuid, path), igroups as (uuid, name), maps as (LUN uuid, igroup uuid,
    /// what, for messages): [`lun`]'s.
    pub(crate) luns: Vec<(String, String)>,
    pub(crate) igroups: Vec<(String, String)>,
    pub(crate) maps: Vec<(String, String, String)>,
}

/// The run's records, also after a panic elsewhere.
pub(crate) fn lock(created: &Mutex<Created>) -> MutexGuard<'_, Created> {
    created.lock().unwrap_or_else(|p| p.into_inner())
}

/// What [`NodeSetup::apply`] made and used, for its notes.
#[derive(Default)]
struct Made {
    policies: Vec<String>,
    volumes: Vec<String>,
    /// The SAN objects, as [`lun::ensure`] words them.
    san: Vec<String>,
    /// Volumes used as the node has them.
    used: Vec<String>,
}

/// The node's iSCSI target when the plan reaches volumes over LUNs, checked before
/// anything is made (none: refused), with what the plan wrote of it and of its LUNs.
fn node_target(
    api: &NodeHandle,
    written: &WrittenIscsi,
    lun_volumes: &[&String],
) -> Result<Option<(String, String)>, String> {
    let Some(v) = lun_volumes.first() else {
        return Ok(None);
    };
    let url = api.url().to_string();
    let svc = api
        .get("/api/protocols/san/iscsi/services?fields=*", TIMEOUT)
        .map_err(|e| format!("--node {url}: {e}"))?;
    let t = lun::target_of(&svc, &url, v)?;
    lun::check_plan(api, &svc, written, lun_volumes)?;
    Ok(Some(t))
}

/// The plan's setup on a node, undone on drop.
pub struct NodeSetup {
    api: NodeHandle,
    created: Arc<Mutex<Created>>,
    /// The volumes the plan's work runs on, as the node reports them.
    pub volumes: Vec<VolumeOnNode>,
    /// What was created, what was used as the node had it (for the banner and summary).
    pub notes: Vec<String>,
    _guard: lifecycle::Guard,
}

impl NodeSetup {
    /// Make the volumes `wanted` (the plan's work's volumes) available on the node: look
    /// each up; create the ones the plan declares and the node lacks (and their missing
    /// policies, from the plan's `[[policy]]`). A volume neither has is an error naming it.
    /// `written`: what the plan's `[iscsi]` wrote beyond its LUNs' volumes (honoured or
    /// refused before anything is made: [`lun`]).
    pub fn apply(
        api: &NodeHandle,
        plan: Option<&NodeSpec>,
        written: &WrittenIscsi,
        wanted: &[String],
    ) -> Result<NodeSetup, String> {
        let lun_volumes: Vec<&String> = wanted
            .iter()
            .filter(|w| plan.is_some_and(|p| p.iscsi.luns.iter().any(|l| &l.volume == *w)))
            .collect();
        let plan = plan.map(|p| &p.cfg);
        written.check_on_node(wanted).map_err(|e| e.0)?;
        let target = node_target(api, written, &lun_volumes)?;
        let (created, guard) = created_with_teardown(api, "--node");
        let mut setup = NodeSetup {
            api: api.clone(),
            created,
            volumes: Vec::new(),
            notes: Vec::new(),
            _guard: guard,
        };
        let marker = run_marker();
        setup.clean_stale(&marker)?;
        let mut made = Made::default();
        for name in wanted {
            setup.volume(name, plan, &marker, &mut made)?;
        }
        // The LUN volumes: each one's LUN, mapped to the harness's initiator.
        if let Some(target) = target {
            let mut reach = lun::Reach {
                target,
                igroup: None,
                marker: marker.clone(),
                mark: MARK,
                written: written.clone(),
            };
            for v in setup
                .volumes
                .iter_mut()
                .filter(|v| lun_volumes.contains(&&v.name))
            {
                let size = plan
                    .and_then(|p| p.volumes.iter().find(|s| s.name == v.name))
                    .map_or(v.size, |s| s.size);
                v.lun = Some(lun::ensure(
                    api,
                    &setup.created,
                    &mut reach,
                    &v.name,
                    size,
                    v.policy.as_deref(),
                    &mut made.san,
                )?);
            }
        }
        // The plan's other policies are part of its setup too.
        for p in plan.map(|p| p.policies.as_slice()).unwrap_or_default() {
            if !made.policies.contains(&p.name) && setup.ensure_policy(&p.name, plan)? {
                made.policies.push(p.name.clone());
            }
        }
        setup.note(&made);
        Ok(setup)
    }

    /// Delete what runs killed on this host left on the node (LUNs, volumes), with a note.
    fn clean_stale(&mut self, marker: &str) -> Result<(), String> {
        let mut cleaned = lun::clean_stale(&self.api, marker, MARK)?;
        cleaned.extend(
            clean_stale(&self.api, marker, MARK)?
                .into_iter()
                .map(|v| format!("volume {v}")),
        );
        if !cleaned.is_empty() {
            self.notes.push(format!(
                "deleted {} a killed run left on {}",
                cleaned.join(", "),
                self.api.url()
            ));
        }
        Ok(())
    }

    /// Volume `name`: the node's own when it has it, else created from the plan's
    /// `[[volume]]` (and its policy); an error when neither has it.
    fn volume(
        &mut self,
        name: &String,
        plan: Option<&NodeConfig>,
        marker: &str,
        made: &mut Made,
    ) -> Result<(), String> {
        let api = self.api.clone();
        let url = api.url().to_string();
        let lookup = |name: &str| lookup_volume(&api, name).map_err(|e| e.to_string());
        if let Some(v) = lookup(name)? {
            made.used.push(name.clone());
            self.volumes.push(v);
            return Ok(());
        }
        let Some(spec) = plan.and_then(|p| p.volumes.iter().find(|v| &v.name == name)) else {
            return Err(format!(
                "volume {name:?} is neither on --node {url} nor declared in the plan's [[volume]] \
                 (create it with `qoslab volume create`, or declare it)"
            ));
        };
        if let Some(pol) = &spec.policy {
            if self.ensure_policy(pol, plan)? {
                made.policies.push(pol.clone());
            }
        }
        let mut body = serde_json::json!({
            "name": name,
            "size": spec.size,
            "space": {"snapshot": {"reserve_percent": spec.snapshot_reserve_percent}},
            "comment": format!("{MARK}{marker}; deleted when the run ends"),
        });
        if let Some(p) = &spec.policy {
            body["qos"] = serde_json::json!({"policy": {"name": p}});
        }
        api.send("POST", "/api/storage/volumes", Some(&body), TIMEOUT)
            .map_err(|e| format!("--node {url}: creating volume {name:?}: {e}"))?;
        self.lock().volumes.push(name.clone());
        made.volumes.push(name.clone());
        let v = lookup(name)?
            .ok_or_else(|| format!("--node {url}: volume {name:?} vanished after creation"))?;
        self.volumes.push(v);
        Ok(())
    }

    /// The banner's notes: what was created, what was used, which volumes go over iSCSI.
    fn note(&mut self, made: &Made) {
        let url = self.api.url().to_string();
        if !made.policies.is_empty() || !made.volumes.is_empty() || !made.san.is_empty() {
            let mut what = Vec::new();
            if !made.policies.is_empty() {
                what.push(format!("policies {}", made.policies.join(", ")));
            }
            if !made.volumes.is_empty() {
                what.push(format!("volumes {}", made.volumes.join(", ")));
            }
            if !made.san.is_empty() {
                what.push(made.san.join(", "));
            }
            self.notes.push(format!(
                "created on {url} for this run (deleted at its end): {}",
                what.join("; ")
            ));
        }
        if !made.used.is_empty() {
            self.notes.push(format!(
                "used as the node has them: volumes {}",
                made.used.join(", ")
            ));
        }
        for v in &self.volumes {
            if let Some(l) = &v.lun {
                self.notes.push(format!(
                    "volume {} is reached over iSCSI: LUN {} ({}{}), its samples the node's \
                     block volume {}",
                    v.name,
                    l.path,
                    harness::iscsi::IscsiUrl::parse(&l.url)
                        .map(|u| u.describe())
                        .unwrap_or_else(|_| l.url.clone()),
                    if l.existing { ", the node's own" } else { "" },
                    l.node_name
                ));
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Created> {
        lock(&self.created)
    }

    /// Create policy `name` from the plan unless the node has it; whether it was created.
    fn ensure_policy(&self, name: &str, plan: Option<&NodeConfig>) -> Result<bool, String> {
        let declared = plan.map(|p| p.policies.as_slice()).unwrap_or_default();
        ensure_policy(&self.api, &self.created, name, declared, "", "")
    }

    /// The run's target: these volumes on the node.
    pub fn target(&self) -> Target {
        Target::NodeVolumes {
            node: self.api.clone(),
            volumes: self.volumes.clone(),
        }
    }

    /// Delete what this run created (LUN maps, LUNs, igroups, volumes, then policies); one
    /// line per problem, and
    /// what was deleted.
    pub fn close(self) -> (Vec<String>, Vec<String>) {
        let gone = {
            let c = self.lock();
            c.maps
                .iter()
                .map(|m| format!("map of {}", m.2))
                .chain(c.luns.iter().map(|l| format!("LUN {}", l.1)))
                .chain(c.igroups.iter().map(|g| format!("igroup {}", g.1)))
                .chain(c.volumes.iter().map(|v| format!("volume {v}")))
                .chain(c.policies.iter().map(|p| format!("policy {p}")))
                .collect()
        };
        (delete_all(&self.api, &self.created), gone)
    }
}

impl Drop for NodeSetup {
    fn drop(&mut self) {
        for e in delete_all(&self.api, &self.created) {
            eprintln!("qoslab: --node teardown: {e}");
        }
    }
}

/// Delete the volumes of runs on this host (their comments start with `mark`) whose
/// process is gone (SIGKILL'ed); their names.
pub(crate) fn clean_stale(
    api: &NodeHandle,
    marker: &str,
    mark: &str,
) -> Result<Vec<String>, String> {
    let boot = marker.split(':').next().unwrap_or("");
    let list = api
        .get("/api/storage/volumes?fields=name,comment", TIMEOUT)
        .map_err(|e| {
            format!(
                "--node {}: {e} (is `qoslab serve` running with its API there?)",
                api.url()
            )
        })?;
    let mut out = Vec::new();
    for r in list["records"].as_array().into_iter().flatten() {
        let (Some(name), Some(comment)) = (r["name"].as_str(), r["comment"].as_str()) else {
            continue;
        };
        if stale(comment, mark, boot) {
            delete_volume(api, name)?;
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// Delete volume `name` on the node.
pub fn delete_volume(api: &NodeHandle, name: &str) -> Result<(), String> {
    api.send(
        "DELETE",
        &format!("/api/storage/volumes?name={}", enc(name)),
        None,
        TIMEOUT,
    )
    .map(|_| ())
    .map_err(|e| format!("deleting volume {name} on {}: {e}", api.url()))
}

/// Delete what a run created: its LUN maps, LUNs and igroups, its volumes, then its
/// policies; the errors.
pub(crate) fn delete_all(api: &NodeHandle, created: &Mutex<Created>) -> Vec<String> {
    let mut c = lock(created);
    let mut errors = lun::delete_made(api, &mut c);
    for v in std::mem::take(&mut c.volumes) {
        if let Err(e) = delete_volume(api, &v) {
            errors.push(e);
        }
    }
    for p in std::mem::take(&mut c.policies) {
        if let Err(e) = api.send(
            "DELETE",
            &format!("/api/storage/qos/policies?name={}", enc(&p)),
            None,
            TIMEOUT,
        ) {
            errors.push(format!("deleting policy {p} on {}: {e}", api.url()));
        }
    }
    errors
}

/// A run's record of what it creates on the node, deleted by the process's teardown
/// (the lifecycle's remote phase, on SIGINT/SIGTERM/SIGHUP too) while the guard lives;
/// `who` names the run in the teardown's errors.
pub(crate) fn created_with_teardown(
    api: &NodeHandle,
    who: &'static str,
) -> (Arc<Mutex<Created>>, lifecycle::Guard) {
    let created = Arc::new(Mutex::new(Created::default()));
    let guard = {
        let (api, created) = (api.clone(), created.clone());
        lifecycle::register(lifecycle::Phase::Remote, move || {
            for e in delete_all(&api, &created) {
                eprintln!("qoslab: {who} teardown: {e}");
            }
        })
    };
    (created, guard)
}

/// Create policy `name` on the node from its declaration in `declared` unless the node
/// has it (recorded in `created` for the run's clean-up); whether it was created. `whose`
/// and `hint` complete the errors (" (of a [[class]])", what to check when unreachable).
pub(crate) fn ensure_policy(
    api: &NodeHandle,
    created: &Mutex<Created>,
    name: &str,
    declared: &[storage_node::config::PolicySpec],
    whose: &str,
    hint: &str,
) -> Result<bool, String> {
    let url = api.url();
    let found = api
        .get(
            &format!("/api/storage/qos/policies?name={}&fields=name", enc(name)),
            TIMEOUT,
        )
        .map_err(|e| format!("--node {url}: {e}{hint}"))?;
    if found["records"].as_array().is_some_and(|r| !r.is_empty()) {
        return Ok(false);
    }
    let Some(spec) = declared.iter().find(|p| p.name == name) else {
        return Err(format!(
            "policy {name:?}{whose} is neither on --node {url} nor declared in the plan's [[policy]]"
        ));
    };
    let mut body = control_plane::api::model::policy_json(&spec.policy);
    body.insert("name".into(), name.into());
    api.send(
        "POST",
        "/api/storage/qos/policies",
        Some(&serde_json::Value::Object(body)),
        TIMEOUT,
    )
    .map_err(|e| format!("--node {url}: creating policy {name:?}: {e}"))?;
    lock(created).policies.push(name.to_string());
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_gone_run_of_this_boot_is_stale() {
        let m = run_marker();
        let boot = m.split(':').next().unwrap();
        // This process is alive: never stale.
        assert!(!stale(&format!("{MARK}{m}; x"), MARK, boot));
        // A pid with another start time is gone.
        let pid = std::process::id();
        assert!(stale(&format!("{MARK}{boot}:{pid}:1; x"), MARK, boot));
        // Another boot (or host), another mark, or no marker: left alone.
        assert!(!stale(&format!("{MARK}other-boot:{pid}:1; x"), MARK, boot));
        assert!(!stale(
            &format!("qoslab tenants run {boot}:{pid}:1"),
            MARK,
            boot
        ));
        assert!(!stale("someone's volume", MARK, boot));
        assert!(!stale(&format!("{MARK}garbage"), MARK, boot));
    }
}
