//! The node: volumes, policies, the scheduler, and the rules that tie them together.
//! S3 buckets are flows too (`buckets`).

mod buckets;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use qos_core::{
    default_adaptive_groups, effective_limits, ontap_tolerance, Allocation, Policy, VolumeSpace,
};
use tokio::sync::watch;

use crate::backend::FileBackend;
use crate::clock::Clock;
use crate::config::{CeilingMode, MbpsCeilingWithFloor, NodeConfig, VolumeSpec};
use crate::errors::NodeError;
use crate::locks::{lock, read, write};
use crate::nas::{ExportPolicy, NasStore, NasVolume};
use crate::provisioned::ProvisionedFs;
use crate::scheduler::{FlowQos, Scheduler, NO_FLOW};
use crate::volume::Volume;

/// The storage node's shared state.
pub struct Node {
    data_dir: PathBuf,
    volumes: RwLock<BTreeMap<String, Arc<Volume>>>,
    buckets: RwLock<BTreeMap<String, Arc<crate::bucket::Bucket>>>,
    policies: RwLock<BTreeMap<String, Policy>>,
    /// Flows of shared fixed policies, by policy name.
    shared_flows: Mutex<HashMap<String, u32>>,
    pub scheduler: Arc<Scheduler>,
    pub clock: Clock,
    shutdown: watch::Sender<bool>,
    mmap_reads: bool,
    /// Layers over every volume's file (`[backend]`).
    layers: crate::backend::layers::LayerSpec,
    ceiling_mode: CeilingMode,
    /// The emulated provisioned file system (`[provisioned]`), if any.
    provisioned: Option<Arc<ProvisionedFs>>,
    /// Export policies of NAS volumes, by name (`default` is built in).
    export_policies: RwLock<BTreeMap<String, ExportPolicy>>,
    /// Told of every volume added or removed (the NFS front end's exports follow).
    watchers: Mutex<Vec<VolumeWatcher>>,
    /// The next export id the node gives a NAS volume declared without one.
    next_export_id: std::sync::atomic::AtomicU32,
    /// Block volumes served as LUNs by map (the control plane's; the iSCSI target's).
    san: crate::san::SanMaps,
}

/// What happened to a volume ([`Node::watch_volumes`]).
#[derive(Clone)]
pub enum VolumeEvent {
    Added(Arc<Volume>),
    Removed(Arc<Volume>),
}

/// A function told of volume events, synchronously, in the call that made them.
pub type VolumeWatcher = Box<dyn Fn(&VolumeEvent) + Send + Sync>;

impl Node {
    /// Open the data directory and bring up every configured volume.
    pub fn open(cfg: &NodeConfig, data_dir: &Path) -> Result<Arc<Node>, NodeError> {
        let vol_dir = data_dir.join("volumes");
        crate::private::create_dir_all(&vol_dir).map_err(|source| NodeError::DataDir {
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
        let clock = Clock::new();
        let node = Arc::new(Node {
            data_dir: data_dir.to_path_buf(),
            volumes: RwLock::new(BTreeMap::new()),
            buckets: RwLock::new(BTreeMap::new()),
            policies: RwLock::new(policies),
            shared_flows: Mutex::new(HashMap::new()),
            scheduler: Arc::new(Scheduler::with_array(cfg.capacity, cfg.array.clone())),
            clock,
            shutdown,
            mmap_reads: cfg.mmap_reads,
            layers: cfg.layers,
            ceiling_mode: cfg.ceiling_mode,
            provisioned: cfg
                .provisioned
                .clone()
                .map(|spec| Arc::new(ProvisionedFs::new(spec, clock.now()))),
            export_policies: RwLock::new(
                std::iter::once(ExportPolicy::default())
                    .chain(cfg.export_policies.iter().map(|e| e.policy.clone()))
                    .map(|p| (p.name.clone(), p))
                    .collect(),
            ),
            watchers: Mutex::new(Vec::new()),
            next_export_id: std::sync::atomic::AtomicU32::new(1),
            san: crate::san::SanMaps::default(),
        });
        for v in &cfg.volumes {
            node.add_volume(v)?;
        }
        Ok(node)
    }

    /// The backing file of volume `name`.
    pub fn volume_path(&self, name: &str) -> PathBuf {
        self.data_dir.join("volumes").join(format!("{name}.img"))
    }

    /// The directory holding NAS volume `name`'s tree (`DATA_DIR/nas/NAME`; `DATA_DIR/nas`
    /// is 0700).
    pub fn nas_root(&self, name: &str) -> PathBuf {
        self.data_dir.join("nas").join(name)
    }

    /// Bring up a volume (creating its sparse file, or a NAS volume's directory, if
    /// missing) and put it under its policy. Available to NBD clients (a NAS volume: to
    /// the NFS front end) as soon as this returns.
    pub fn add_volume(&self, v: &VolumeSpec) -> Result<Arc<Volume>, NodeError> {
        if let Some(nas) = &v.nas {
            return self.add_nas_volume(v, nas);
        }
        let path = self.volume_path(&v.name);
        let backend =
            FileBackend::open(&path, v.size, v.read_only, self.mmap_reads).map_err(|source| {
                NodeError::Volume {
                    name: v.name.clone(),
                    source,
                }
            })?;
        let vol = Arc::new(Volume::new(
            v.name.clone(),
            v.description.clone(),
            v.read_only,
            v.size,
            v.snapshot_reserve_percent,
            self.layers.wrap(Arc::new(backend)),
        ));
        self.serve_volume(vol, v)
    }

    /// Put a new volume in the catalog under its policy and tell the watchers.
    fn serve_volume(&self, vol: Arc<Volume>, v: &VolumeSpec) -> Result<Arc<Volume>, NodeError> {
        write(&self.volumes).insert(v.name.clone(), vol.clone());
        self.assign_policy(&vol, v.policy.clone())?;
        self.tell(&VolumeEvent::Added(vol.clone()));
        Ok(vol)
    }

    /// A NAS volume: its tree in `DATA_DIR/nas/NAME` (created if missing), its quota the
    /// allocated space (size less the snapshot reserve, as ONTAP shows it to clients).
    fn add_nas_volume(
        &self,
        v: &VolumeSpec,
        nas: &crate::nas::NasSpec,
    ) -> Result<Arc<Volume>, NodeError> {
        let err = |source: std::io::Error| NodeError::Volume {
            name: v.name.clone(),
            source,
        };
        if let Some(other) = self
            .volumes()
            .into_iter()
            .find(|o| o.name != v.name && o.nas.as_ref().is_some_and(|n| n.path == nas.path))
        {
            return Err(err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("junction path {} is volume {}'s", nas.path, other.name),
            )));
        }
        let export_id = self.export_id_for(nas).map_err(err)?;
        let policy = self.export_policy(&nas.export_policy).ok_or_else(|| {
            NodeError::UnknownPolicy(format!("export policy {}", nas.export_policy))
        })?;
        let dir = self.data_dir.join("nas");
        crate::private::create_dir_all(&dir).map_err(err)?;
        let space = qos_core::VolumeSpace {
            size: v.size,
            snapshot_reserve_percent: v.snapshot_reserve_percent,
            used: 0,
        };
        let store =
            Arc::new(NasStore::open(&self.nas_root(&v.name), space.allocated()).map_err(err)?);
        let vol = Volume::new(
            v.name.clone(),
            v.description.clone(),
            v.read_only,
            v.size,
            v.snapshot_reserve_percent,
            store.clone(),
        )
        .with_nas(NasVolume::new(nas.path.clone(), export_id, store, policy));
        self.serve_volume(Arc::new(vol), v)
    }

    /// The export id of a NAS volume about to be served: the declared one (refused when
    /// another volume's handles carry it), else the next one no volume uses.
    fn export_id_for(&self, nas: &crate::nas::NasSpec) -> std::io::Result<u32> {
        use std::sync::atomic::Ordering::Relaxed;
        let used: Vec<(u32, String)> = self
            .volumes()
            .iter()
            .filter_map(|v| v.nas.as_ref())
            .filter(|n| n.path != nas.path)
            .map(|n| (n.export_id, n.path.clone()))
            .collect();
        if let Some(id) = nas.export_id {
            if let Some((_, other)) = used.iter().find(|(u, _)| *u == id) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("export id {id} is already {other}'s"),
                ));
            }
            return Ok(id);
        }
        loop {
            let id = self.next_export_id.fetch_add(1, Relaxed);
            if id != 0 && !used.iter().any(|(u, _)| *u == id) {
                return Ok(id);
            }
        }
    }

    /// The SAN maps: block volumes served as LUNs to igroups' initiators.
    pub fn san(&self) -> &crate::san::SanMaps {
        &self.san
    }

    /// Be told of every volume added or removed from now on (synchronously, in the call
    /// that made the change: a 2xx from the API means the NFS front end has it).
    pub fn watch_volumes(&self, f: VolumeWatcher) {
        lock(&self.watchers).push(f);
    }

    fn tell(&self, e: &VolumeEvent) {
        for w in lock(&self.watchers).iter() {
            w(e);
        }
    }

    /// Count again the trees of NAS volumes that are due ([`crate::nas::RECOUNT_EVERY`]),
    /// so used space (and used-space policies) follow files put in or removed outside NFS.
    /// Blocking: run it on the blocking pool.
    pub fn recount_nas_volumes(&self) {
        for v in self.volumes() {
            let Some(n) = &v.nas else { continue };
            match n.store.recount_if_due() {
                Ok(true) => v.mark_dirty(),
                Ok(false) => {}
                Err(e) => tracing::warn!(volume = %v.name, "counting the NAS volume's tree: {e}"),
            }
        }
    }

    /// An export policy by name.
    pub fn export_policy(&self, name: &str) -> Option<ExportPolicy> {
        read(&self.export_policies).get(name).cloned()
    }

    /// Add or replace an export policy; every NAS volume under it gets the new rules at
    /// once (mounted clients are checked against them at their next call).
    pub fn put_export_policy(&self, policy: ExportPolicy) {
        let name = policy.name.clone();
        write(&self.export_policies).insert(name.clone(), policy.clone());
        for v in self.volumes() {
            if let Some(n) = v.nas.as_ref().filter(|n| n.policy_name() == name) {
                n.set_policy(policy.clone());
            }
        }
    }

    /// Remove an export policy no volume uses (callers check first).
    pub fn remove_export_policy(&self, name: &str) {
        write(&self.export_policies).remove(name);
    }

    /// Put NAS volume `vol` under export policy `name`.
    pub fn assign_export_policy(&self, vol: &Volume, name: &str) -> Result<(), NodeError> {
        let p = self
            .export_policy(name)
            .ok_or_else(|| NodeError::UnknownPolicy(format!("export policy {name}")))?;
        if let Some(n) = &vol.nas {
            n.set_policy(p);
        }
        Ok(())
    }

    /// A block volume (not a NAS volume) by name.
    pub fn block_volume(&self, name: &str) -> Option<Arc<Volume>> {
        self.volume(name).filter(|v| !v.is_nas())
    }

    /// Block volumes, sorted by name.
    pub fn block_volumes(&self) -> Vec<Arc<Volume>> {
        self.volumes().into_iter().filter(|v| !v.is_nas()).collect()
    }

    /// Take a volume out of service: new clients cannot find it, connected ones are closed.
    /// The caller removes its file.
    pub fn remove_volume(&self, name: &str) -> Option<Arc<Volume>> {
        let vol = write(&self.volumes).remove(name)?;
        let _ = self.assign_policy(&vol, None);
        vol.mark_removed();
        self.tell(&VolumeEvent::Removed(vol.clone()));
        Some(vol)
    }

    /// Grow a volume (the file first, then the size clients are checked against).
    pub fn resize_volume(&self, vol: &Volume, size: u64) -> Result<(), NodeError> {
        vol.backend.grow(size).map_err(|source| NodeError::Volume {
            name: vol.name.clone(),
            source,
        })?;
        vol.set_size(size);
        set_nas_quota(vol);
        self.recompute(vol);
        Ok(())
    }

    /// Change a volume's snapshot reserve and recompute its limits.
    pub fn set_snapshot_reserve(&self, vol: &Volume, percent: u8) {
        vol.set_reserve_percent(percent);
        set_nas_quota(vol);
        self.recompute(vol);
    }

    /// Add or replace a policy; every member volume's limits are recomputed at once.
    pub fn put_policy(&self, name: &str, policy: Policy) {
        write(&self.policies).insert(name.to_string(), policy);
        for v in self.members(name) {
            self.recompute(&v);
        }
        for b in self.bucket_members(name) {
            self.recompute_bucket(&b);
        }
    }

    /// Rename a policy, keeping its members and their flows.
    pub fn rename_policy(&self, old: &str, new: &str) {
        {
            let mut pols = write(&self.policies);
            if let Some(p) = pols.remove(old) {
                pols.insert(new.to_string(), p);
            }
        }
        {
            let mut shared = lock(&self.shared_flows);
            if let Some(f) = shared.remove(old) {
                shared.insert(new.to_string(), f);
            }
        }
        for v in self.members(old) {
            v.set_policy(Some(new.to_string()));
        }
        for b in self.bucket_members(old) {
            b.set_policy(Some(new.to_string()));
        }
    }

    /// Remove a policy that no volume uses (callers check membership first).
    pub fn remove_policy(&self, name: &str) {
        write(&self.policies).remove(name);
        if let Some(f) = lock(&self.shared_flows).remove(name) {
            self.scheduler.remove_flow(f, self.clock.now());
        }
    }

    /// Volumes under policy `name`.
    pub fn members(&self, name: &str) -> Vec<Arc<Volume>> {
        self.volumes()
            .into_iter()
            .filter(|v| v.policy().as_deref() == Some(name))
            .collect()
    }

    /// The emulated provisioned file system, if the node has one.
    pub fn provisioned(&self) -> Option<&Arc<ProvisionedFs>> {
        self.provisioned.as_ref()
    }

    /// The gates every request passes (scheduler, provisioned file system), for a front
    /// end's [`Admission`](crate::admission::Admission) or
    /// [`Gate`](crate::admission::Gate) (`Gate::new(node.gates(), node.clock)`).
    pub fn gates(&self) -> crate::admission::Gates {
        crate::admission::Gates {
            scheduler: self.scheduler.clone(),
            fs: self.provisioned.clone(),
        }
    }

    /// How ceilings treat bursts.
    pub fn ceiling_mode(&self) -> CeilingMode {
        self.ceiling_mode
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// A volume by name.
    pub fn volume(&self, name: &str) -> Option<Arc<Volume>> {
        read(&self.volumes).get(name).cloned()
    }

    /// All volumes, sorted by name.
    pub fn volumes(&self) -> Vec<Arc<Volume>> {
        read(&self.volumes).values().cloned().collect()
    }

    pub fn policy(&self, name: &str) -> Option<Policy> {
        read(&self.policies).get(name).cloned()
    }

    /// Put `vol` under `policy` (or none), recomputing its limits and flow.
    pub fn assign_policy(&self, vol: &Volume, policy: Option<String>) -> Result<(), NodeError> {
        self.check_policy(&policy)?;
        let old_flow = vol.flow();
        vol.set_flow(NO_FLOW);
        self.release_flow(vol.policy(), old_flow);
        vol.set_policy(policy);
        self.recompute(vol);
        Ok(())
    }

    /// A volume or bucket may move to `policy` only if it exists (or is none).
    fn check_policy(&self, policy: &Option<String>) -> Result<(), NodeError> {
        match policy {
            Some(p) if self.policy(p).is_none() => Err(NodeError::UnknownPolicy(p.clone())),
            _ => Ok(()),
        }
    }

    /// A volume or bucket under `policy` left `flow`: remove it, unless it is the shared
    /// policy's (other members keep it).
    fn release_flow(&self, policy: Option<String>, flow: u32) {
        let shared = policy
            .and_then(|p| self.policy(&p))
            .is_some_and(|p| is_shared(&p));
        if flow != NO_FLOW && !shared {
            self.scheduler.remove_flow(flow, self.clock.now());
        }
    }

    /// Recompute a volume's effective limits and push them (ceiling, floor, weight) to
    /// the scheduler.
    pub fn recompute(&self, vol: &Volume) {
        let now = self.clock.now();
        let policy = vol
            .policy()
            .and_then(|p| self.policy(&p).map(|pol| (p, pol)));
        let limits = self.limits_of(policy.as_ref().map(|(_, p)| p), &vol.space());
        vol.set_limits(limits);
        vol.set_flow(self.place_flow(policy, &limits, vol.flow(), now));
    }

    /// The limits `policy` (or none) gives an object (volume or bucket) of `space` on
    /// this node: the policy's effective limits, then the node's two ONTAP rules.
    pub(crate) fn limits_of(
        &self,
        policy: Option<&Policy>,
        space: &VolumeSpace,
    ) -> qos_core::EffectiveLimits {
        let mut limits = policy
            .map(|p| effective_limits(p, space))
            .unwrap_or_default();
        if self.scheduler.array().mbps_ceiling_with_floor == MbpsCeilingWithFloor::Ignored
            && !limits.floor.is_unlimited()
        {
            // ONTAP: a policy with a floor does not enforce the MB/s part of its ceiling.
            limits.ceiling.bytes_per_sec = 0;
        }
        // ONTAP's tolerance sits on the ceiling that is enforced.
        if self.ceiling_mode == CeilingMode::Ontap && limits.burst.is_none() {
            limits.burst = ontap_tolerance(limits.ceiling);
        }
        limits
    }

    /// The scheduler flow a volume or bucket with these limits takes, given the flow it
    /// has (`current`): a shared policy's one flow, its own (created, updated or removed),
    /// or [`NO_FLOW`] when nothing needs scheduling.
    fn place_flow(
        &self,
        policy: Option<(String, Policy)>,
        limits: &qos_core::EffectiveLimits,
        current: u32,
        now: qos_core::Nanos,
    ) -> u32 {
        let q = FlowQos {
            ceiling: limits.ceiling,
            floor: limits.floor,
            weight: policy.as_ref().map_or(1, |(_, p)| p.weight()),
            burst: limits.burst,
        };
        let needs = self.scheduler.needs_flow(&q);
        if let Some((name, _)) = policy.filter(|(_, p)| is_shared(p)) {
            let mut shared = lock(&self.shared_flows);
            let flow = *shared
                .entry(name)
                .or_insert_with(|| self.scheduler.create_flow(q, now));
            self.scheduler.set_flow(flow, q, now);
            return if needs { flow } else { NO_FLOW };
        }
        match (current, needs) {
            (NO_FLOW, false) => NO_FLOW,
            (NO_FLOW, true) => self.scheduler.create_flow(q, now),
            (f, false) => {
                self.scheduler.remove_flow(f, self.clock.now());
                NO_FLOW
            }
            (f, true) => {
                self.scheduler.set_flow(f, q, now);
                f
            }
        }
    }

    /// Refresh used space of volumes that were written; recompute limits of those whose
    /// policy depends on it. Called periodically by the running node ([`crate::builder`]).
    pub fn refresh_used_space(&self) {
        for vol in self.volumes() {
            if vol.refresh_used() && self.depends_on_used(&vol) {
                self.recompute(&vol);
            }
        }
        self.refresh_bucket_used_space();
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

/// A NAS volume's quota follows its allocated space (size less the snapshot reserve).
fn set_nas_quota(vol: &Volume) {
    if let Some(n) = &vol.nas {
        n.store.space().set_quota(vol.space().allocated());
    }
}

fn is_shared(p: &Policy) -> bool {
    matches!(p, Policy::Fixed(f) if f.capacity_shared)
}
