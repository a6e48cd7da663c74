//! The tenants' volumes on a running qoslab node (`qoslab bench --node URL`), through its
//! ONTAP-shaped REST API: each class's policy is created when the node lacks it (from the
//! plan's `[[policy]]`), each tenant's volume is created under it per point, its NBD
//! address read back, and everything this run created is deleted again: at the point's
//! end, at the sweep's end, and on SIGINT/SIGTERM/SIGHUP (a cleanup registered with the
//! mount session's signal thread). Volume names carry the run's tag (`qlt<pid>x<n>-`), so
//! nothing already on the node is ever touched: a name already taken fails that tenant's
//! setup. Each volume's comment names the run (`qoslab tenants run BOOT_ID:PID:START`):
//! a run SIGKILL'ed on this host leaves volumes the next run on the same node deletes
//! (its process is gone: pid and start time, this boot), never those of a live run or of
//! another host.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::node_api::NodeHandle;
use harness::series::NodeSample;
use storage_node::config::PolicySpec;

use super::spec::ClassSpec;

const TIMEOUT: Duration = Duration::from_secs(60);

use harness::node_api::query_value as enc;

use crate::node_setup::{delete_all, delete_volume, Created};

/// The comment prefix that marks a tenants run's volume.
const MARK: &str = "qoslab tenants run ";

/// This process as a run marker: `BOOT_ID:PID:START` (`crate::node_setup`'s, which bench
/// runs on a `--node` mark their volumes with too).
fn me() -> Option<String> {
    Some(crate::node_setup::run_marker())
}

/// Whether a volume comment names a tenants run of this boot whose process is gone.
#[cfg(test)]
fn stale(comment: &str, boot: &str) -> bool {
    crate::node_setup::stale(comment, MARK, boot)
}

/// A running node the tenants' volumes are created on.
pub struct RemoteNode {
    api: NodeHandle,
    tag: String,
    /// This run's marker in its volumes' comments.
    marker: String,
    /// Volumes of killed runs deleted when this one opened.
    pub cleaned: Vec<String>,
    created: Arc<Mutex<Created>>,
    _guard: lifecycle::Guard,
}

/// One volume as the node reports it after creation.
pub struct RemoteVolume {
    pub uri: String,
    pub ceiling_iops: u64,
    pub floor_iops: u64,
}

/// Cumulative counters of a volume (ONTAP's `statistics` raw counters).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCounters {
    pub ops: u64,
    pub lat_ns: u64,
}

impl RemoteNode {
    /// Reach the node and make sure every class's policy exists there: a policy the node
    /// lacks is created from the plan's `[[policy]]` of that name (and deleted at the end);
    /// one neither has is an error naming the class.
    pub fn open(
        api: NodeHandle,
        classes: &[ClassSpec],
        plan_policies: &[PolicySpec],
    ) -> Result<RemoteNode, String> {
        let (created, guard) = crate::node_setup::created_with_teardown(&api, "tenants");
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let marker = me().unwrap_or_else(|| format!("?:{}:?", std::process::id()));
        let cleaned = clean_stale(&api, &marker)?;
        let node = RemoteNode {
            marker,
            cleaned,
            tag: format!(
                "qlt{}x{}",
                std::process::id(),
                SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            ),
            api,
            created,
            _guard: guard,
        };
        let mut wanted: Vec<&str> = classes.iter().filter_map(|c| c.policy.as_deref()).collect();
        wanted.sort();
        wanted.dedup();
        for name in wanted {
            crate::node_setup::ensure_policy(
                &node.api,
                &node.created,
                name,
                plan_policies,
                " (of a [[class]])",
                " (is `qoslab serve` running with its API there?)",
            )?;
        }
        Ok(node)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Created> {
        crate::node_setup::lock(&self.created)
    }

    pub fn url(&self) -> &str {
        self.api.url()
    }

    pub fn api(&self) -> &NodeHandle {
        &self.api
    }

    /// The policies this run created on the node.
    pub fn created_policies(&self) -> Vec<String> {
        self.lock().policies.clone()
    }

    /// The node's name of a tenant's volume (the run's tag, then the tenant).
    pub fn volume_name(&self, tenant: &str) -> String {
        format!("{}-{tenant}", self.tag)
    }

    /// Create a tenant's volume under its class's policy; its NBD address and limits.
    pub fn create(&self, c: &ClassSpec, tenant: &str, n: usize) -> Result<RemoteVolume, String> {
        let name = self.volume_name(tenant);
        let mut body = serde_json::json!({
            "name": name,
            "size": c.size,
            "space": {"snapshot": {"reserve_percent": c.snapshot_reserve_percent}},
            "comment": format!("{MARK}{}; class {}, point {n}", self.marker, c.name),
        });
        if let Some(p) = &c.policy {
            body["qos"] = serde_json::json!({"policy": {"name": p}});
        }
        self.api
            .send("POST", "/api/storage/volumes", Some(&body), TIMEOUT)?;
        self.lock().volumes.push(name.clone());
        match harness::target::node_volume(&self.api, &name) {
            Ok(harness::target::Target::NodeVolume { uri, limits, .. }) => Ok(RemoteVolume {
                uri,
                ceiling_iops: limits.ceiling_iops,
                floor_iops: limits.floor_iops,
            }),
            Ok(_) => Err(format!("volume {name}: no NBD address")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The volume's cumulative operations and latency (zero when unreadable).
    pub fn counters(&self, tenant: &str) -> RawCounters {
        let name = self.volume_name(tenant);
        let Ok(v) = self.api.get(
            &format!("/api/storage/volumes?name={}&fields=statistics", enc(&name)),
            TIMEOUT,
        ) else {
            return RawCounters::default();
        };
        let s = &v["records"][0]["statistics"];
        RawCounters {
            ops: s["iops_raw"]["total"].as_u64().unwrap_or(0),
            lat_ns: s["latency_raw"]["total"].as_u64().unwrap_or(0) * 1000,
        }
    }

    /// Delete a tenant's volume.
    pub fn remove(&self, tenant: &str) -> Result<(), String> {
        let name = self.volume_name(tenant);
        delete_volume(&self.api, &name)?;
        self.lock().volumes.retain(|v| *v != name);
        Ok(())
    }

    /// Delete everything this run still has on the node (volumes, then the policies it
    /// created); the problems, if any.
    pub fn close(&self) -> Vec<String> {
        delete_all(&self.api, &self.created)
    }

    /// The node sampler over a point (the node's per-second QoS waits, as for other
    /// `--node` runs).
    pub fn sample(&self) -> harness::node_sampler::Sampling {
        harness::node_sampler::start(
            Box::new(harness::node_sampler::RestProbe::new(self.api.clone())),
            0,
        )
    }

    /// A volume's QoS waits over the samples (ns summed over its operations): each
    /// window's mean wait per operation times its operations.
    pub fn waits(&self, tenant: &str, samples: &[NodeSample]) -> (u64, u64) {
        let name = self.volume_name(tenant);
        let secs = harness::series::WINDOW_MS as f64 / 1000.0;
        samples
            .iter()
            .filter(|s| s.volume == name)
            .fold((0, 0), |(c, f), s| {
                let ops = s.iops() * secs;
                (
                    c + (s.ceiling_wait_us * 1000.0 * ops) as u64,
                    f + (s.floor_wait_us * 1000.0 * ops) as u64,
                )
            })
    }
}

/// Delete the volumes of tenants runs on this host whose process is gone; their names.
fn clean_stale(api: &NodeHandle, marker: &str) -> Result<Vec<String>, String> {
    crate::node_setup::clean_stale(api, marker, MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_and_tagged() {
        assert_eq!(enc("a b&c"), "a%20b%26c");
        assert_eq!(enc("gold-n2-t0"), "gold-n2-t0");
    }

    #[test]
    fn only_a_gone_run_of_this_boot_is_stale() {
        let m = me().unwrap();
        let boot = m.split(':').next().unwrap();
        // This process is alive: never stale.
        assert!(!stale(&format!("{MARK}{m}; class a, point 1"), boot));
        // A pid with another start time is gone.
        let pid = std::process::id();
        assert!(stale(&format!("{MARK}{boot}:{pid}:1; class a"), boot));
        // Another boot (or host), or no marker: left alone.
        assert!(!stale(&format!("{MARK}other-boot:{pid}:1; class a"), boot));
        assert!(!stale("someone's volume", boot));
        assert!(!stale(&format!("{MARK}garbage"), boot));
    }
}
