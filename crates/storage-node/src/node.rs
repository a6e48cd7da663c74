//! The node: volumes, policies, the scheduler, and the rules that tie them together.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use qos_core::{default_adaptive_groups, effective_limits, Allocation, EffectiveLimits, Policy};
use tokio::sync::watch;

use crate::backend::FileBackend;
use crate::clock::Clock;
use crate::config::NodeConfig;
use crate::errors::NodeError;
use crate::scheduler::{Scheduler, NO_FLOW};
use crate::volume::{lock, Volume};

/// The storage node's shared state.
pub struct Node {
    data_dir: PathBuf,
    volumes: RwLock<BTreeMap<String, Arc<Volume>>>,
    policies: RwLock<BTreeMap<String, Policy>>,
    /// Flows of shared fixed policies, by policy name.
    shared_flows: Mutex<HashMap<String, u32>>,
    default_export: Option<String>,
    pub scheduler: Scheduler,
    pub clock: Clock,
    shutdown: watch::Sender<bool>,
    busy_poll: std::time::Duration,
}

impl Node {
    /// Open the data directory and bring up every configured volume.
    pub fn open(cfg: &NodeConfig, data_dir: &Path) -> Result<Arc<Node>, NodeError> {
        let vol_dir = data_dir.join("volumes");
        std::fs::create_dir_all(&vol_dir).map_err(|source| NodeError::DataDir {
            path: vol_dir.display().to_string(),
            source,
        })?;
        let mut policies: BTreeMap<String, Policy> = default_adaptive_groups()
            .into_iter()
            .map(|(n, p)| (n.to_string(), Policy::Adaptive(p)))
            .collect();
        for p in &cfg.policies {
            policies.insert(p.name.clone(), p.policy);
        }
        let (shutdown, _) = watch::channel(false);
        let node = Arc::new(Node {
            data_dir: data_dir.to_path_buf(),
            volumes: RwLock::new(BTreeMap::new()),
            policies: RwLock::new(policies),
            shared_flows: Mutex::new(HashMap::new()),
            default_export: cfg.default_export.clone(),
            scheduler: Scheduler::default(),
            clock: Clock::new(),
            shutdown,
            busy_poll: std::time::Duration::from_micros(cfg.busy_poll_us),
        });
        for v in &cfg.volumes {
            let path = vol_dir.join(format!("{}.img", v.name));
            let backend = FileBackend::open(&path, v.size, v.read_only, cfg.mmap_reads).map_err(
                |source| NodeError::Volume {
                    name: v.name.clone(),
                    source,
                },
            )?;
            let vol = Arc::new(Volume::new(
                v.name.clone(),
                v.description.clone(),
                v.read_only,
                v.size,
                v.snapshot_reserve_percent,
                Arc::new(backend),
            ));
            node.volumes
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(v.name.clone(), vol.clone());
            node.assign_policy(&vol, v.policy.clone())?;
        }
        Ok(node)
    }

    /// How long a connection spins for its next request before parking.
    pub fn busy_poll(&self) -> std::time::Duration {
        self.busy_poll
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Look up a volume by export name; the empty name means the default export.
    pub fn volume(&self, name: &str) -> Option<Arc<Volume>> {
        let vols = self.volumes.read().unwrap_or_else(|p| p.into_inner());
        if name.is_empty() {
            return match &self.default_export {
                Some(d) => vols.get(d).cloned(),
                None if vols.len() == 1 => vols.values().next().cloned(),
                None => None,
            };
        }
        vols.get(name).cloned()
    }

    /// All volumes, sorted by name.
    pub fn volumes(&self) -> Vec<Arc<Volume>> {
        self.volumes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    pub fn policy(&self, name: &str) -> Option<Policy> {
        self.policies
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// Put `vol` under `policy` (or none), recomputing its limits and flow.
    pub fn assign_policy(&self, vol: &Volume, policy: Option<String>) -> Result<(), NodeError> {
        if let Some(p) = &policy {
            if self.policy(p).is_none() {
                return Err(NodeError::UnknownPolicy(p.clone()));
            }
        }
        let old_flow = vol.flow();
        let was_shared = vol
            .policy()
            .and_then(|p| self.policy(&p))
            .is_some_and(|p| is_shared(&p));
        vol.set_flow(NO_FLOW);
        if old_flow != NO_FLOW && !was_shared {
            self.scheduler.remove_flow(old_flow);
        }
        vol.set_policy(policy);
        self.recompute(vol);
        Ok(())
    }

    /// Recompute a volume's effective limits and push its ceiling to the scheduler.
    pub fn recompute(&self, vol: &Volume) {
        let now = self.clock.now();
        let policy = vol
            .policy()
            .and_then(|p| self.policy(&p).map(|pol| (p, pol)));
        let Some((name, policy)) = policy else {
            vol.set_limits(EffectiveLimits::default());
            return;
        };
        let limits = effective_limits(&policy, &vol.space());
        vol.set_limits(limits);
        let unlimited = limits.ceiling.iops == 0 && limits.ceiling.bytes_per_sec == 0;
        if is_shared(&policy) {
            let mut shared = lock(&self.shared_flows);
            let flow = *shared
                .entry(name)
                .or_insert_with(|| self.scheduler.create_flow(limits.ceiling));
            self.scheduler.set_ceiling(flow, limits.ceiling, now);
            vol.set_flow(if unlimited { NO_FLOW } else { flow });
            return;
        }
        match (vol.flow(), unlimited) {
            (NO_FLOW, true) => {}
            (NO_FLOW, false) => vol.set_flow(self.scheduler.create_flow(limits.ceiling)),
            (f, true) => {
                vol.set_flow(NO_FLOW);
                self.scheduler.remove_flow(f);
            }
            (f, false) => self.scheduler.set_ceiling(f, limits.ceiling, now),
        }
    }

    /// Refresh used space of volumes that were written; recompute limits of those whose
    /// policy depends on it. Called periodically by the server.
    pub fn refresh_used_space(&self) {
        for vol in self.volumes() {
            if vol.refresh_used() && self.depends_on_used(&vol) {
                self.recompute(&vol);
            }
        }
    }

    fn depends_on_used(&self, vol: &Volume) -> bool {
        match vol.policy().and_then(|p| self.policy(&p)) {
            Some(Policy::Adaptive(a)) => {
                a.peak_allocation == Allocation::UsedSpace
                    || a.expected_allocation == Allocation::UsedSpace
            }
            _ => false,
        }
    }

    /// Begin a graceful shutdown: connections stop taking new work.
    pub fn begin_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Make every volume durable (called last on shutdown).
    pub fn sync_all(&self) {
        for v in self.volumes() {
            if let Err(e) = v.backend.flush() {
                tracing::error!(volume = %v.name, "final flush failed: {e}");
            }
        }
    }
}

fn is_shared(p: &Policy) -> bool {
    matches!(p, Policy::Fixed(f) if f.capacity_shared)
}
