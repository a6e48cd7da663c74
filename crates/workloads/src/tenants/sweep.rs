//! A whole sweep's shared state: the mount session (when a class mounts) and the git
//! classes' repositories, prepared once; then one [`point`](super::point) per scale point.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use loadgen::apps::build::{build_deps, DepRepo};
use loadgen::apps::git::{build_repo, BareRepo};
use mounts::{FsType, Session, StaleRun};

use super::backend::{Backend, TargetKind};
use super::point::{self, PointEnv, PointResult};
use super::spec::{AppSpec, TenantsSpec};

pub struct Sweep {
    pub spec: TenantsSpec,
    session: Option<Session>,
    repos: BTreeMap<String, BareRepo>,
    deps: BTreeMap<String, DepRepo>,
    scratch: PathBuf,
    /// Stale runs the mount session cleaned when it opened.
    pub cleaned: Vec<StaleRun>,
}

impl Sweep {
    /// Check the host and open the mount session (if any class mounts and the tenants get
    /// volumes or block devices, not directories; every missing piece is named: a block
    /// device needs no FUSE, loop device or nbdfuse), and build (or find cached) the git
    /// classes' repositories and the build classes' dependencies.
    pub fn prepare(spec: TenantsSpec, scratch: &Path, target: TargetKind) -> Result<Sweep, String> {
        let mut fs: Vec<FsType> = spec
            .classes
            .iter()
            .filter(|c| c.app.mounts())
            .map(|c| c.fs)
            .collect();
        fs.sort_by_key(|f| f.as_str());
        fs.dedup();
        let (session, cleaned) = if target != TargetKind::Dir && spec.mounts() {
            let volumes = target == TargetKind::Volumes;
            let (s, c) =
                Session::open_for(&spec.base_dir, &fs, volumes).map_err(|e| e.to_string())?;
            (Some(s), c)
        } else {
            (None, Vec::new())
        };
        let mut repos = BTreeMap::new();
        let mut deps = BTreeMap::new();
        for c in &spec.classes {
            match &c.app {
                AppSpec::Git(r) => {
                    let repo = build_repo(&spec.cache_dir, *r)
                        .map_err(|f| format!("class {}: {f}", c.name))?;
                    repos.insert(c.name.clone(), repo);
                }
                AppSpec::Build(b) => {
                    let d = build_deps(&spec.cache_dir, b)
                        .map_err(|f| format!("class {}: {f}", c.name))?;
                    deps.insert(c.name.clone(), d);
                }
                AppSpec::Broker(_) => {
                    loadgen::apps::broker::activemq::check_installed()
                        .map_err(|e| format!("class {}: {e}", c.name))?;
                }
                _ => {}
            }
        }
        std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        Ok(Sweep {
            spec,
            session,
            repos,
            deps,
            scratch: scratch.to_path_buf(),
            cleaned,
        })
    }

    /// The repositories the git classes clone (class -> repository).
    pub fn repos(&self) -> &BTreeMap<String, BareRepo> {
        &self.repos
    }

    /// Run the point of `n` tenants per class on `backend`.
    pub fn point(&self, n: usize, backend: &Backend<'_>) -> PointResult {
        point::run(
            &self.spec,
            n,
            &PointEnv {
                backend,
                session: self.session.as_ref(),
                scratch: self.scratch.join(format!("n{n}")),
                repos: &self.repos,
                deps: &self.deps,
            },
        )
    }

    /// Tear down the mount session (also done on drop and on signals).
    pub fn close(self) -> Result<(), String> {
        match self.session {
            Some(s) => s.close().map(|_| ()).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}
