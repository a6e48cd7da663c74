//! One scale point on a qoslab node: every class's tenants claim fresh volumes (created
//! through the node, under the class's policy), mounted tenants get their file systems,
//! every tenant runs its application for the plan's iterations (started together), the
//! node's own counters are read around it, and everything is torn down again (file
//! systems, volumes). A failure to set a tenant up is that tenant's failure for every
//! iteration; the point goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fio_group::FioGroup;
use super::fio_mix::{MixOptions, MixTarget, MixTenant};
use super::runner::{run_point_with, GroupApp, TenantRun, TenantSpec};
use loadgen::apps::git::{BareRepo, GitApp};
use loadgen::apps::redis::RedisApp;
use loadgen::apps::{App, Failure, TenantApp, TenantEnv};
use mounts::{AttachOptions, Session};
use serde::{Deserialize, Serialize};
use storage_node::config::VolumeSpec;
use storage_node::stats::OpKind;
use storage_node::Node;

use super::load::{LoadSample, LoadSampler};
use super::spec::{AppSpec, TenantsSpec};

/// The node's view of one tenant's volume over the point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VolumeCounters {
    pub tenant: String,
    pub class: String,
    pub ops: u64,
    pub ceiling_wait_ns: u64,
    pub floor_wait_ns: u64,
    /// Time the node spent on the volume's requests, queueing included (ns, summed).
    #[serde(default)]
    pub lat_ns: u64,
    /// The volume's effective limits (IOPS; 0: none).
    pub ceiling_iops: u64,
    pub floor_iops: u64,
}

/// What one point produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// Tenants per class.
    pub tenants: usize,
    pub runs: Vec<TenantRun>,
    pub volumes: Vec<VolumeCounters>,
    /// Seconds the iterations took (setup and teardown excluded).
    pub secs: f64,
    /// Host and node load over the iterations (from the tool sets).
    pub load: LoadSample,
    /// The tool sets' host series over the iterations (stored with the point).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<toolsets::HostSeries>,
    /// Teardown problems (the point's results stand; the next run cleans leftovers).
    pub teardown_errors: Vec<String>,
    /// fio's output of the last iteration (the fio classes' jobs), JSON text.
    pub fio_output: Option<String>,
    /// The fio job file of the fio classes.
    pub fio_jobfile: Option<String>,
}

/// Where a point runs.
pub struct PointEnv<'a> {
    pub node: &'a Arc<Node>,
    /// The node's unix socket (NBD URIs).
    pub socket: &'a Path,
    /// The mount session (None when no class mounts).
    pub session: Option<&'a Session>,
    /// Sockets, logs, fio job files.
    pub scratch: PathBuf,
    /// The git classes' repositories.
    pub repos: &'a BTreeMap<String, BareRepo>,
}

/// An application that cannot start: its tenant's setup failed.
struct SetupFailed(Failure);

impl App for SetupFailed {
    fn name(&self) -> &'static str {
        "setup"
    }
    fn start(&self, _: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure> {
        Err(self.0.clone())
    }
}

fn uri(socket: &Path, volume: &str) -> String {
    format!("nbd+unix:///{volume}?socket={}", socket.display())
}

fn counters(node: &Node, name: &str) -> (u64, u64, u64, u64) {
    node.volumes()
        .into_iter()
        .find(|v| v.name == name)
        .map(|v| {
            use std::sync::atomic::Ordering::Relaxed;
            let s = &v.stats;
            (
                s.ops(OpKind::Read) + s.ops(OpKind::Write) + s.ops(OpKind::Other),
                s.ceiling_wait_ns.load(Relaxed),
                s.floor_wait_ns.load(Relaxed),
                s.latency.iter().map(|h| h.sum_ns()).sum(),
            )
        })
        .unwrap_or_default()
}

/// Run point `n` (tenants per class).
pub fn run(spec: &TenantsSpec, n: usize, env: &PointEnv<'_>) -> PointResult {
    let timeout = Duration::from_secs_f64(spec.timeout);
    // 1. Volumes and file systems.
    struct Tenant {
        class: usize,
        name: String,
        dir: Option<PathBuf>,
        setup: Option<Failure>,
    }
    let mut tenants = Vec::new();
    for (ci, c) in spec.classes.iter().enumerate() {
        for i in 0..n {
            let name = TenantsSpec::volume_name(&c.name, n, i);
            let mut t = Tenant {
                class: ci,
                name: name.clone(),
                dir: None,
                setup: None,
            };
            let _ = std::fs::remove_file(env.node.volume_path(&name));
            let vs = VolumeSpec {
                name: name.clone(),
                size: c.size,
                snapshot_reserve_percent: c.snapshot_reserve_percent,
                read_only: false,
                description: format!("tenants: class {}, point {n}", c.name),
                policy: c.policy.clone(),
            };
            if let Err(e) = env.node.add_volume(&vs) {
                t.setup = Some(Failure::classify("create volume", e.to_string()));
            } else if c.app.mounts() {
                match env.session {
                    Some(s) => {
                        match s.attach(&name, &uri(env.socket, &name), &AttachOptions::new(c.fs)) {
                            Ok(m) => t.dir = Some(m.mount_dir),
                            Err(e) => t.setup = Some(Failure::classify("mount", e.to_string())),
                        }
                    }
                    None => t.setup = Some(Failure::classify("mount", "no mount session".into())),
                }
            }
            tenants.push(t);
        }
    }
    // 2. Applications.
    let mut owned_apps: Vec<Box<dyn App>> = Vec::new();
    let mut app_of: Vec<Option<usize>> = Vec::new();
    let mut fio = Vec::new();
    let mut fio_classes = Vec::new();
    let mut fio_size = 0;
    for t in &tenants {
        let c = &spec.classes[t.class];
        if let Some(f) = &t.setup {
            owned_apps.push(Box::new(SetupFailed(f.clone())));
            app_of.push(Some(owned_apps.len() - 1));
            continue;
        }
        match &c.app {
            AppSpec::Git(_) => match env.repos.get(&c.name) {
                Some(r) => {
                    owned_apps.push(Box::new(GitApp { repo: r.clone() }));
                    app_of.push(Some(owned_apps.len() - 1));
                }
                None => {
                    owned_apps.push(Box::new(SetupFailed(Failure::classify(
                        "repository",
                        format!("no repository for class {}", c.name),
                    ))));
                    app_of.push(Some(owned_apps.len() - 1));
                }
            },
            AppSpec::Redis(r) => {
                owned_apps.push(Box::new(RedisApp { spec: r.clone() }));
                app_of.push(Some(owned_apps.len() - 1));
            }
            AppSpec::Fio {
                mix,
                iodepth,
                rate_iops,
                size,
            } => {
                fio_size = fio_size.max(*size);
                fio.push(MixTenant {
                    name: t.name.clone(),
                    target: MixTarget::Nbd(uri(env.socket, &t.name)),
                    mix: *mix,
                    iodepth: *iodepth,
                    rate_iops: *rate_iops,
                });
                fio_classes.push(c.name.clone());
                app_of.push(None);
            }
        }
    }
    let specs: Vec<TenantSpec> = tenants
        .iter()
        .zip(&app_of)
        .filter_map(|(t, a)| {
            a.map(|a| TenantSpec {
                class: spec.classes[t.class].name.clone(),
                app: owned_apps[a].as_ref(),
                env: TenantEnv {
                    tenant: t.name.clone(),
                    data_dir: t
                        .dir
                        .clone()
                        .unwrap_or_else(|| env.scratch.join("unmounted")),
                    scratch_dir: env.scratch.clone(),
                    timeout,
                },
            })
        })
        .collect();
    let group = (!fio.is_empty()).then(|| FioGroup {
        classes: fio_classes,
        tenants: fio,
        opts: MixOptions {
            runtime_secs: spec.runtime.ceil() as u32,
            ramp_secs: spec.ramp.ceil() as u32,
            size: fio_size,
            ..MixOptions::default()
        },
        scratch: env.scratch.join(format!("fio-n{n}")),
        timeout: timeout.max(Duration::from_secs_f64(spec.runtime + spec.ramp + 120.0)),
        last_output: std::sync::Mutex::new(None),
    });
    let groups: Vec<&dyn GroupApp> = group.iter().map(|g| g as &dyn GroupApp).collect();
    // 3. Run, with the node's counters and the load around it.
    let before: Vec<_> = tenants
        .iter()
        .map(|t| counters(env.node, &t.name))
        .collect();
    let sampler = LoadSampler::start(env.node.data_dir());
    let t0 = Instant::now();
    let runs = run_point_with(&specs, &groups, spec.iterations);
    let secs = t0.elapsed().as_secs_f64();
    let (load, hosts) = sampler.stop();
    let volumes = tenants
        .iter()
        .zip(before)
        .map(|(t, b)| {
            let a = counters(env.node, &t.name);
            let limits = env
                .node
                .volumes()
                .into_iter()
                .find(|v| v.name == t.name)
                .map(|v| v.limits());
            VolumeCounters {
                tenant: t.name.clone(),
                class: spec.classes[t.class].name.clone(),
                ops: a.0 - b.0,
                ceiling_wait_ns: a.1 - b.1,
                floor_wait_ns: a.2 - b.2,
                lat_ns: a.3.saturating_sub(b.3),
                ceiling_iops: limits.map(|l| l.ceiling.iops).unwrap_or(0),
                floor_iops: limits.map(|l| l.floor.iops).unwrap_or(0),
            }
        })
        .collect();
    // 4. Teardown: file systems, then volumes. The volume files are removed by a few
    // threads at once: on a host file system mounted with `discard`, each unlink of a
    // written file waits for its discards (250 files took minutes one at a time).
    let mut teardown_errors = Vec::new();
    let mut files = Vec::new();
    for t in &tenants {
        if t.dir.is_some() {
            if let Some(s) = env.session {
                if let Err(e) = s.detach(&t.name) {
                    teardown_errors.push(e.to_string());
                }
            }
        }
        if env.node.remove_volume(&t.name).is_some() {
            files.push(env.node.volume_path(&t.name));
        }
    }
    let chunk = files.len().div_ceil(8).max(1);
    std::thread::scope(|s| {
        for part in files.chunks(chunk) {
            s.spawn(move || {
                for f in part {
                    let _ = std::fs::remove_file(f);
                }
            });
        }
    });
    let fio_output = group.as_ref().and_then(|g| {
        g.last_output
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    });
    let fio_jobfile = group
        .as_ref()
        .and_then(|g| super::fio_mix::job_file(&g.tenants, &g.opts).ok());
    PointResult {
        tenants: n,
        runs,
        volumes,
        secs,
        load,
        hosts,
        teardown_errors,
        fio_output,
        fio_jobfile,
    }
}
