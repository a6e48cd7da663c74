//! One scale point: every class's tenants claim fresh storage from the sweep's
//! [`Backend`] (volumes on the embedded node or a `--node`, under the class's policy, or a
//! directory per tenant on a `--target DIR`), mounted tenants get their file systems,
//! every tenant runs its application for the plan's iterations (started together), the
//! node's own counters are read around it, and everything is torn down again (file
//! systems, volumes, directories). A failure to set a tenant up is that tenant's failure for every
//! iteration; the point goes on.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::backend::{Backend, Counters, Place};
use super::fio_group::FioGroup;
use super::fio_mix::{MixOptions, MixTarget, MixTenant};
use super::load::{LoadSample, LoadSampler};
use super::runner::{run_point_with, GroupApp, TenantRun, TenantSpec};
use super::spec::{AppSpec, ClassSpec, TenantsSpec};
use loadgen::apps::broker::BrokerApp;
use loadgen::apps::build::{BuildApp, DepRepo, FailedBuilds};
use loadgen::apps::git::{BareRepo, GitApp};
use loadgen::apps::redis::RedisApp;
use loadgen::apps::{App, Failure, TenantApp, TenantEnv};
use mounts::{AttachOptions, FsType, Session};
use serde::{Deserialize, Serialize};

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
    /// Whether qoslab enforced the classes' policies (false on a directory target: the
    /// target's own QoS applies; no limits, waits or floor/ceiling verdicts then).
    #[serde(default = "yes")]
    pub enforced: bool,
    /// A `--node`'s per-volume samples over the iterations (its REST `metric` windows:
    /// stored with the point's first job, so the report charts them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_samples: Vec<harness::series::NodeSample>,
}

fn yes() -> bool {
    true
}

#[cfg(test)]
impl PointResult {
    /// A point of `tenants` per class over `secs`: these runs and the node's counters,
    /// nothing else measured (unit tests).
    pub(crate) fn of(
        tenants: usize,
        runs: Vec<TenantRun>,
        volumes: Vec<VolumeCounters>,
        secs: f64,
    ) -> PointResult {
        PointResult {
            tenants,
            runs,
            volumes,
            secs,
            load: LoadSample::default(),
            hosts: vec![],
            teardown_errors: vec![],
            fio_output: None,
            fio_jobfile: None,
            enforced: true,
            node_samples: Vec::new(),
        }
    }
}

/// Where a point runs.
pub struct PointEnv<'a> {
    /// Where the tenants' storage comes from.
    pub backend: &'a Backend<'a>,
    /// The mount session (None when no class mounts).
    pub session: Option<&'a Session>,
    /// Sockets, logs, fio job files.
    pub scratch: PathBuf,
    /// The git classes' repositories.
    pub repos: &'a BTreeMap<String, BareRepo>,
    /// The build classes' dependency repositories.
    pub deps: &'a BTreeMap<String, DepRepo>,
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

/// Make tenant `name`'s file system on its storage — a volume (through nbdfuse and a loop
/// device) or a block device itself — and mount it: the tenant's directory.
fn mount(
    session: Option<&Session>,
    name: &str,
    place: &Place,
    fs: FsType,
) -> Result<PathBuf, String> {
    let s = session.ok_or("no mount session")?;
    let opts = AttachOptions::new(fs);
    let t = match place {
        Place::Nbd(u) => s.attach(name, u, &opts),
        Place::Block(d) => s.attach_device(name, d, &opts),
        Place::Dir(d) => return Ok(d.clone()),
    };
    t.map(|t| t.mount_dir).map_err(|e| e.to_string())
}

/// One tenant of a point: its class, name and where its storage went.
struct Tenant {
    class: usize,
    name: String,
    dir: Option<PathBuf>,
    /// Where a fio tenant's I/O goes when it is not a directory (a volume's NBD URI, a
    /// block device).
    io: Option<MixTarget>,
    /// Whether `dir` is a file system this point mounted.
    mounted: bool,
    /// The volume's effective (ceiling, floor) IOPS.
    limits: (u64, u64),
    setup: Option<Failure>,
}

/// Step 1: every class's `n` tenants claim their storage (volumes, file systems).
fn place_tenants(spec: &TenantsSpec, n: usize, env: &PointEnv<'_>) -> Vec<Tenant> {
    let mut tenants = Vec::new();
    for (ci, c) in spec.classes.iter().enumerate() {
        for i in 0..n {
            let name = TenantsSpec::volume_name(&c.name, n, i);
            let mut t = Tenant {
                class: ci,
                name: name.clone(),
                dir: None,
                io: None,
                mounted: false,
                limits: (0, 0),
                setup: None,
            };
            match env.backend.create(c, &name, n, tenants.len()) {
                Err(e) => t.setup = Some(Failure::classify(env.backend.setup_step(), e)),
                Ok((place, ceiling, floor)) => {
                    t.limits = (ceiling, floor);
                    match place {
                        Place::Dir(d) => t.dir = Some(d),
                        // A file system for the application: on the volume (nbdfuse, a
                        // loop device) or made on the block device itself.
                        Place::Nbd(_) | Place::Block(_) if c.app.mounts() => {
                            match mount(env.session, &name, &place, c.fs) {
                                Ok(d) => {
                                    t.dir = Some(d);
                                    t.mounted = true;
                                }
                                Err(e) => t.setup = Some(Failure::classify("mount", e)),
                            }
                        }
                        Place::Nbd(u) => t.io = Some(MixTarget::Nbd(u)),
                        Place::Block(d) => t.io = Some(MixTarget::Block(d.display().to_string())),
                    }
                }
            }
            tenants.push(t);
        }
    }
    tenants
}

/// The application of a tenant of class `c` that is not a fio tenant (`setup`: its
/// setup's failure, if it failed).
fn app_of_class(c: &ClassSpec, setup: Option<&Failure>, env: &PointEnv<'_>) -> Box<dyn App> {
    if let Some(f) = setup {
        return match &c.app {
            // Its builds count as failed (the seed counts every triggered build).
            AppSpec::Build(b) => Box::new(FailedBuilds {
                failure: f.clone(),
                builds: b.builds,
            }),
            _ => Box::new(SetupFailed(f.clone())),
        };
    }
    match &c.app {
        AppSpec::Git(_) => match env.repos.get(&c.name) {
            Some(r) => Box::new(GitApp { repo: r.clone() }),
            None => Box::new(SetupFailed(Failure::classify(
                "repository",
                format!("no repository for class {}", c.name),
            ))),
        },
        AppSpec::Redis(r) => Box::new(RedisApp { spec: r.clone() }),
        AppSpec::Build(b) => match env.deps.get(&c.name) {
            Some(d) => Box::new(BuildApp {
                spec: *b,
                deps: d.clone(),
            }),
            None => Box::new(FailedBuilds {
                failure: Failure::classify(
                    "dependencies",
                    format!("no dependency repository for class {}", c.name),
                ),
                builds: b.builds,
            }),
        },
        AppSpec::Broker(b) => Box::new(BrokerApp { spec: *b }),
        AppSpec::Fio { .. } => unreachable!("fio tenants run as one group"),
    }
}

/// Step 2: the applications. Every tenant's own (`app_of`: its index in `owned`), or its
/// place in the fio classes' one group.
struct Apps {
    owned: Vec<Box<dyn App>>,
    app_of: Vec<Option<usize>>,
    fio: Vec<MixTenant>,
    fio_classes: Vec<String>,
    fio_size: u64,
}

fn apps(spec: &TenantsSpec, tenants: &[Tenant], env: &PointEnv<'_>) -> Apps {
    let mut a = Apps {
        owned: Vec::new(),
        app_of: Vec::new(),
        fio: Vec::new(),
        fio_classes: Vec::new(),
        fio_size: 0,
    };
    for t in tenants {
        let c = &spec.classes[t.class];
        match &c.app {
            AppSpec::Fio {
                mix,
                iodepth,
                rate_iops,
                size,
            } if t.setup.is_none() => {
                a.fio_size = a.fio_size.max(*size);
                a.fio.push(MixTenant {
                    name: t.name.clone(),
                    target: match (&t.io, &t.dir) {
                        (Some(io), _) => io.clone(),
                        (None, Some(d)) => MixTarget::Dir(d.display().to_string()),
                        (None, None) => {
                            MixTarget::Dir(env.scratch.join("unplaced").display().to_string())
                        }
                    },
                    mix: *mix,
                    iodepth: *iodepth,
                    rate_iops: *rate_iops,
                });
                a.fio_classes.push(c.name.clone());
                a.app_of.push(None);
            }
            _ => {
                a.owned.push(app_of_class(c, t.setup.as_ref(), env));
                a.app_of.push(Some(a.owned.len() - 1));
            }
        }
    }
    a
}

/// The fio classes' tenants as one group (None when there are none).
fn fio_group(
    spec: &TenantsSpec,
    n: usize,
    env: &PointEnv<'_>,
    apps: &mut Apps,
    timeout: Duration,
) -> Option<FioGroup> {
    (!apps.fio.is_empty()).then(|| FioGroup {
        classes: std::mem::take(&mut apps.fio_classes),
        tenants: std::mem::take(&mut apps.fio),
        opts: MixOptions {
            runtime_secs: spec.runtime.ceil() as u32,
            ramp_secs: spec.ramp.ceil() as u32,
            size: apps.fio_size,
            ..MixOptions::default()
        },
        scratch: env.scratch.join(format!("fio-n{n}")),
        timeout: timeout.max(Duration::from_secs_f64(spec.runtime + spec.ramp + 120.0)),
        last_output: std::sync::Mutex::new(None),
    })
}

/// The node's counters of each tenant's volume over the point (`before`: at its start).
fn volume_counters(
    spec: &TenantsSpec,
    env: &PointEnv<'_>,
    tenants: &[Tenant],
    before: Vec<Counters>,
    node_samples: &[harness::series::NodeSample],
) -> Vec<VolumeCounters> {
    tenants
        .iter()
        .zip(before)
        .map(|(t, b)| {
            let a = env.backend.counters(&t.name, node_samples);
            VolumeCounters {
                tenant: t.name.clone(),
                class: spec.classes[t.class].name.clone(),
                ops: a.ops.saturating_sub(b.ops),
                ceiling_wait_ns: a.ceiling_wait_ns.saturating_sub(b.ceiling_wait_ns),
                floor_wait_ns: a.floor_wait_ns.saturating_sub(b.floor_wait_ns),
                lat_ns: a.lat_ns.saturating_sub(b.lat_ns),
                ceiling_iops: t.limits.0,
                floor_iops: t.limits.1,
            }
        })
        .collect()
}

/// Step 4: teardown, file systems then the storage; the problems met.
fn teardown(env: &PointEnv<'_>, tenants: &[Tenant]) -> Vec<String> {
    let mut teardown_errors = Vec::new();
    for t in tenants.iter().filter(|t| t.mounted) {
        if let Some(s) = env.session {
            if let Err(e) = s.detach(&t.name) {
                teardown_errors.push(e.to_string());
            }
        }
    }
    let names: Vec<String> = tenants
        .iter()
        .filter(|t| !matches!(&t.setup, Some(f) if f.step == env.backend.setup_step()))
        .map(|t| t.name.clone())
        .collect();
    teardown_errors.extend(env.backend.remove(&names));
    teardown_errors
}

/// Run point `n` (tenants per class).
pub fn run(spec: &TenantsSpec, n: usize, env: &PointEnv<'_>) -> PointResult {
    let timeout = Duration::from_secs_f64(spec.timeout);
    // 1. Volumes and file systems.
    let tenants = place_tenants(spec, n, env);
    // 2. Applications.
    let mut apps = apps(spec, &tenants, env);
    let group = fio_group(spec, n, env, &mut apps, timeout);
    let specs: Vec<TenantSpec> = tenants
        .iter()
        .zip(&apps.app_of)
        .filter_map(|(t, a)| {
            a.map(|a| TenantSpec {
                class: spec.classes[t.class].name.clone(),
                app: apps.owned[a].as_ref(),
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
    let groups: Vec<&dyn GroupApp> = group.iter().map(|g| g as &dyn GroupApp).collect();
    // 3. Run, with the node's counters and the load around it.
    let before: Vec<Counters> = tenants
        .iter()
        .map(|t| env.backend.counters(&t.name, &[]))
        .collect();
    let (roles, node_watched) = env.backend.roles();
    let sampler = LoadSampler::start(env.backend.devices(), roles, node_watched);
    let node_sampling = match env.backend {
        Backend::Remote(r) => Some(r.sample()),
        _ => None,
    };
    let t0 = Instant::now();
    let runs = run_point_with(&specs, &groups, spec.iterations);
    let secs = t0.elapsed().as_secs_f64();
    let node_samples = node_sampling.map(|s| s.finish()).unwrap_or_default();
    let (load, hosts) = sampler.stop();
    let enforced = env.backend.enforces();
    let volumes = if enforced {
        volume_counters(spec, env, &tenants, before, &node_samples)
    } else {
        Vec::new()
    };
    // 4. Teardown: file systems, then the storage.
    let teardown_errors = teardown(env, &tenants);
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
        enforced,
        node_samples,
    }
}
