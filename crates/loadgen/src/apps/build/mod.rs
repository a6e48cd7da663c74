//! The `build` workload (seed 004's Jenkins: three builds triggered at once per instance,
//! failed builds counted). Each tenant has a generated C project ([`gen`]) on its file
//! system, a dependency cache there (Maven's `~/.m2`: kept across iterations, shared by
//! the tenant's builds) and a workspace per build. Per iteration, `builds` builds run at
//! once, each:
//!
//! 1. **checkout**: the project copied into a fresh workspace (`cp -a`);
//! 2. **resolve**: every dependency archive the cache lacks is copied in from the
//!    repository (written to a temporary name, then renamed, as a resolver does), and every
//!    cached archive is checked against the repository's manifest (size and digest) — an
//!    incomplete archive in the cache fails the build, as the seed's incomplete jars did;
//! 3. **compile**: `make` with gcc (objects, a static library, the program linked with the
//!    dependencies), gcc's temporary files in the workspace;
//! 4. **verify**: every object, the library and the program are whole ([`verify`]);
//! 5. **test**: the program runs and must print the checksum the generator computed;
//! 6. **archive**: the program and its output copied to the tenant's archive.
//!
//! Then the tenant's file system is synced (its write-back charged to this iteration). A
//! build fails when a tool fails (with its message: ENOSPC, a compiler error), an artifact
//! is incomplete, or the test's output is wrong. Metrics: `builds`, `failed_builds` (every
//! iteration, failed or not: the seed's table counts builds) and `build_s`, the mean
//! duration of the iteration's successful builds.
//!
//! The dependency repository (the "remote" a resolver downloads from) is built once per
//! spec into a cache directory, like the git workload's repository ([`build_deps`]).

pub mod gen;
pub mod verify;

use std::fs::{self, File};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::apps::proc;
use crate::apps::{App, Failure, Iteration, Metric, TenantApp, TenantEnv};
pub use gen::BuildSpec;

/// One dependency archive of the repository, as its manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub name: String,
    pub size: u64,
    pub fnv1a: u64,
}

/// A built dependency repository.
#[derive(Debug, Clone)]
pub struct DepRepo {
    pub dir: PathBuf,
    pub artifacts: Vec<Artifact>,
}

fn run_tool(step: &str, cmd: &mut Command) -> Result<(), Failure> {
    let limit = Duration::from_secs(600);
    proc::step(step, cmd, Instant::now() + limit, limit).map(|_| ())
}

/// Build the dependency repository of `spec` in `cache` unless it is there already
/// (complete: its manifest is written last). Concurrent builders wait for one another.
pub fn build_deps(cache: &Path, spec: &BuildSpec) -> Result<DepRepo, Failure> {
    let step = "build dependency repository";
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Failure::classify(step, format!("{what} {}: {e}", p.display()))
    };
    fs::create_dir_all(cache).map_err(|e| io("creating", cache, e))?;
    let key = spec.deps_key();
    let dir = cache.join(&key);
    let manifest = dir.join("manifest.json");
    let lock_path = cache.join(format!("{key}.lock"));
    let lock = File::create(&lock_path).map_err(|e| io("creating", &lock_path, e))?;
    // SAFETY: flock on a descriptor we own; blocks until other builders finish.
    unsafe {
        libc::flock(lock.as_raw_fd(), libc::LOCK_EX);
    }
    if let Ok(text) = fs::read_to_string(&manifest) {
        if let Ok(artifacts) = serde_json::from_str::<Vec<Artifact>>(&text) {
            return Ok(DepRepo { dir, artifacts });
        }
    }
    let _ = fs::remove_dir_all(&dir);
    let work = cache.join(format!("{key}.work-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| io("creating", &work, e))?;
    fs::create_dir_all(&dir).map_err(|e| io("creating", &dir, e))?;
    let mut artifacts = Vec::new();
    for k in 0..spec.deps {
        for (name, bytes) in gen::dep_sources(spec, k) {
            let p = work.join(name);
            fs::write(&p, bytes).map_err(|e| io("writing", &p, e))?;
        }
        let (c, s) = (format!("dep{k:03}.c"), format!("blob{k:03}.S"));
        let (co, so) = (format!("dep{k:03}.o"), format!("blob{k:03}.o"));
        for (src, obj) in [(&c, &co), (&s, &so)] {
            run_tool(
                step,
                Command::new("gcc")
                    .current_dir(&work)
                    .args(["-O1", "-c", src, "-o", obj]),
            )?;
        }
        let name = gen::dep_archive(k);
        run_tool(
            step,
            Command::new("ar")
                .current_dir(&work)
                .args(["rcs", &name, &co, &so]),
        )?;
        let bytes = fs::read(work.join(&name)).map_err(|e| io("reading", &work, e))?;
        verify::archive(&bytes).map_err(|e| Failure::classify(step, format!("{name}: {e}")))?;
        let dest = dir.join(&name);
        fs::write(&dest, &bytes).map_err(|e| io("writing", &dest, e))?;
        artifacts.push(Artifact {
            name,
            size: bytes.len() as u64,
            fnv1a: verify::fnv1a(&bytes),
        });
    }
    let text = serde_json::to_string_pretty(&artifacts).unwrap_or_default();
    let tmp = dir.join("manifest.json.tmp");
    fs::write(&tmp, text).map_err(|e| io("writing", &tmp, e))?;
    fs::rename(&tmp, &manifest).map_err(|e| io("renaming", &manifest, e))?;
    let _ = fs::remove_dir_all(&work);
    Ok(DepRepo { dir, artifacts })
}

/// The build application over one dependency repository.
pub struct BuildApp {
    pub spec: BuildSpec,
    pub deps: DepRepo,
}

impl App for BuildApp {
    fn name(&self) -> &'static str {
        "build"
    }

    /// Write the project into the tenant's `build/src` (the repository its builds check
    /// out) and make the dependency cache. A tenant that cannot start (ENOSPC writing its
    /// project) fails every iteration's builds, counted (the seed counts every triggered
    /// build).
    fn start(&self, env: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure> {
        Ok(match self.prepare(env) {
            Ok(t) => Box::new(t),
            Err(failure) => Box::new(FailedBuilds {
                failure,
                builds: self.spec.builds,
            }),
        })
    }
}

impl BuildApp {
    fn prepare(&self, env: &TenantEnv) -> Result<BuildTenant, Failure> {
        let step = "start";
        let root = env.data_dir.join("build");
        let src = root.join("src");
        let _ = fs::remove_dir_all(&src);
        for (rel, text) in gen::project(&self.spec) {
            let p = src.join(rel);
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| Failure::classify(step, format!("{}: {e}", parent.display())))?;
            }
            fs::write(&p, text)
                .map_err(|e| Failure::classify(step, format!("{}: {e}", p.display())))?;
        }
        for d in ["cache", "ws", "archive"] {
            let p = root.join(d);
            fs::create_dir_all(&p)
                .map_err(|e| Failure::classify(step, format!("{}: {e}", p.display())))?;
        }
        Ok(BuildTenant {
            spec: self.spec,
            repo: self.deps.clone(),
            expected: format!("checksum {:08x}", gen::expected_checksum(&self.spec)),
            fs_root: env.data_dir.clone(),
            root,
            timeout: env.timeout,
        })
    }
}

/// A build tenant that could not start (its volume did not mount, its project could not
/// be written): every iteration fails with that reason, its builds counted as failed.
pub struct FailedBuilds {
    pub failure: Failure,
    pub builds: u32,
}

impl App for FailedBuilds {
    fn name(&self) -> &'static str {
        "build"
    }

    fn start(&self, _env: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure> {
        Ok(Box::new(FailedBuilds {
            failure: self.failure.clone(),
            builds: self.builds,
        }))
    }
}

impl TenantApp for FailedBuilds {
    fn iteration(&mut self, _n: u32) -> Iteration {
        Iteration {
            metrics: all_failed(self.builds),
            failure: Some(self.failure.clone()),
            ..Iteration::default()
        }
    }

    fn stop(&mut self) -> Result<(), Failure> {
        Ok(())
    }
}

struct BuildTenant {
    spec: BuildSpec,
    repo: DepRepo,
    /// What the built program must print.
    expected: String,
    fs_root: PathBuf,
    root: PathBuf,
    timeout: Duration,
}

/// One build's outcome.
struct BuildRun {
    secs: f64,
    failure: Option<Failure>,
}

impl BuildTenant {
    /// Resolve the dependencies into the tenant's cache: copy what is missing, check all.
    fn resolve(&self, k: u32, deadline: Instant) -> Result<(), Failure> {
        let step = "resolve";
        let cache = self.root.join("cache");
        for a in &self.repo.artifacts {
            let dest = cache.join(&a.name);
            if !dest.exists() {
                let tmp = cache.join(format!(".{}.part-b{k}", a.name));
                let r = proc::step(
                    step,
                    Command::new("cp")
                        .arg(self.repo.dir.join(&a.name))
                        .arg(&tmp),
                    deadline,
                    self.timeout,
                );
                if let Err(f) = r {
                    let _ = fs::remove_file(&tmp);
                    return Err(f);
                }
                fs::rename(&tmp, &dest).map_err(|e| {
                    Failure::classify(step, format!("renaming into {}: {e}", dest.display()))
                })?;
            }
            let bytes = fs::read(&dest)
                .map_err(|e| Failure::classify(step, format!("{}: {e}", dest.display())))?;
            if bytes.len() as u64 != a.size || verify::fnv1a(&bytes) != a.fnv1a {
                return Err(Failure::classify(
                    step,
                    format!(
                        "incomplete artifact in the dependency cache: {} is {} of {} bytes{}",
                        dest.display(),
                        bytes.len(),
                        a.size,
                        if bytes.len() as u64 == a.size {
                            " with the wrong digest"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every object, the library and the program are whole.
    fn verify(&self, ws: &Path) -> Result<(), Failure> {
        let fail = |e: String| Failure::classify("verify", format!("incomplete artifact: {e}"));
        for i in 0..self.spec.units {
            verify::file(&ws.join(format!("obj/unit{i:04}.o")), verify::elf).map_err(fail)?;
        }
        verify::file(&ws.join("obj/main.o"), verify::elf).map_err(fail)?;
        let members = verify::file(&ws.join("lib/libapp.a"), verify::archive).map_err(fail)?;
        if members != self.spec.units as usize {
            return Err(fail(format!(
                "{}: {members} objects, {} expected",
                ws.join("lib/libapp.a").display(),
                self.spec.units
            )));
        }
        verify::file(&ws.join("bin/app"), verify::elf).map_err(fail)
    }

    fn build(&self, k: u32, n: u32, deadline: Instant) -> Result<(), Failure> {
        let limit = self.timeout;
        let src = self.root.join("src");
        let ws = self.root.join("ws").join(format!("b{k}"));
        proc::step(
            "checkout",
            Command::new("rm").arg("-rf").arg(&ws),
            deadline,
            limit,
        )?;
        proc::step(
            "checkout",
            Command::new("cp").arg("-a").arg(&src).arg(&ws),
            deadline,
            limit,
        )?;
        self.resolve(k, deadline)?;
        let tmp = ws.join("tmp");
        fs::create_dir_all(&tmp)
            .map_err(|e| Failure::classify("compile", format!("{}: {e}", tmp.display())))?;
        proc::step(
            "compile",
            Command::new("make")
                .arg("-C")
                .arg(&ws)
                .arg(format!("-j{}", self.spec.jobs))
                .arg(format!("DEPS={}", self.root.join("cache").display()))
                .env("TMPDIR", &tmp),
            deadline,
            limit,
        )?;
        self.verify(&ws)?;
        let (_, out) = proc::output(
            "test",
            Command::new(ws.join("bin/app")).current_dir(&ws),
            deadline,
            limit,
        )?;
        if out.trim() != self.expected {
            return Err(Failure::classify(
                "test",
                format!(
                    "the program printed {:?}, expected {:?}",
                    proc::tail(&out),
                    self.expected
                ),
            ));
        }
        fs::write(ws.join("bin/test-output.txt"), &out)
            .map_err(|e| Failure::classify("test", format!("writing the test output: {e}")))?;
        // The archive keeps each build slot's latest build (Jenkins' "keep the last").
        let dest = self.root.join("archive").join(format!("b{k}"));
        let _ = fs::remove_dir_all(&dest);
        fs::create_dir_all(&dest)
            .map_err(|e| Failure::classify("archive", format!("{}: {e}", dest.display())))?;
        proc::step(
            "archive",
            Command::new("cp")
                .arg(ws.join("bin/app"))
                .arg(ws.join("bin/test-output.txt"))
                .arg(&dest),
            deadline,
            limit,
        )?;
        fs::write(
            dest.join("build.txt"),
            format!("iteration {n}, build {k}\n"),
        )
        .map_err(|e| Failure::classify("archive", format!("{}: {e}", dest.display())))
    }
}

impl TenantApp for BuildTenant {
    fn iteration(&mut self, n: u32) -> Iteration {
        let t0 = Instant::now();
        let deadline = t0 + self.timeout;
        let this = &*self;
        let runs: Vec<BuildRun> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..this.spec.builds)
                .map(|k| {
                    s.spawn(move || {
                        let b0 = Instant::now();
                        let r = this.build(k, n, deadline);
                        BuildRun {
                            secs: b0.elapsed().as_secs_f64(),
                            failure: r.err(),
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| BuildRun {
                        secs: 0.0,
                        failure: Some(Failure::classify("build", "build thread panicked".into())),
                    })
                })
                .collect()
        });
        let mut it = Iteration::default();
        for (k, r) in runs.iter().enumerate() {
            it.add_step(format!("build {k}"), r.secs);
        }
        // The first failed build is the iteration's failure (its step names the build).
        it.failure = runs.iter().enumerate().find_map(|(k, r)| {
            r.failure.as_ref().map(|f| Failure {
                kind: f.kind,
                step: format!("build {k}: {}", f.step),
                message: f.message.clone(),
            })
        });
        match proc::step(
            "sync",
            Command::new("sync").arg("-f").arg(&self.fs_root),
            deadline,
            self.timeout,
        ) {
            Ok(secs) => it.add_step("sync", secs),
            Err(f) => {
                it.failure.get_or_insert(f);
            }
        }
        let ok: Vec<f64> = runs
            .iter()
            .filter(|r| r.failure.is_none())
            .map(|r| r.secs)
            .collect();
        let failed = runs.len() - ok.len();
        it.add_metric("builds", runs.len() as f64, "builds");
        it.add_metric("failed_builds", failed as f64, "builds");
        if !ok.is_empty() {
            it.add_metric("build_s", ok.iter().sum::<f64>() / ok.len() as f64, "s");
        }
        it.secs = t0.elapsed().as_secs_f64();
        it
    }

    fn stop(&mut self) -> Result<(), Failure> {
        Ok(())
    }
}

/// An iteration's metrics for `builds` builds that all failed (a tenant that could not
/// start: its builds count, as the seed's table counts every triggered build).
pub fn all_failed(builds: u32) -> Vec<Metric> {
    vec![
        Metric::new("builds", builds as f64, "builds"),
        Metric::new("failed_builds", builds as f64, "builds"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> BuildSpec {
        BuildSpec {
            builds: 2,
            units: 3,
            functions: 4,
            deps: 2,
            dep_bytes: 64 << 10,
            seed: 9,
            jobs: 1,
        }
    }

    #[test]
    fn builds_pass_then_an_incomplete_cached_dependency_fails_them() {
        let d = crate::test_dir("build");
        let spec = small();
        let deps = build_deps(&d.path().join("cache"), &spec).unwrap();
        assert_eq!(deps.artifacts.len(), 2);
        let data = d.path().join("fs");
        fs::create_dir_all(&data).unwrap();
        let app = BuildApp { spec, deps };
        let env = TenantEnv {
            tenant: "t0".into(),
            data_dir: data.clone(),
            scratch_dir: d.path().join("scratch"),
            timeout: Duration::from_secs(300),
        };
        let mut t = app.start(&env).unwrap();
        let it = t.iteration(1);
        assert!(it.ok(), "{:?}", it.failure);
        assert_eq!(it.metric("builds"), Some(2.0));
        assert_eq!(it.metric("failed_builds"), Some(0.0));
        assert!(it.metric("build_s").unwrap() > 0.0);
        let archived = fs::read_to_string(data.join("build/archive/b1/test-output.txt")).unwrap();
        assert_eq!(
            archived.trim(),
            format!("checksum {:08x}", gen::expected_checksum(&spec))
        );
        // Truncate a cached dependency, as the seed's incomplete jars were.
        let cached = data.join("build/cache").join(gen::dep_archive(1));
        let len = fs::metadata(&cached).unwrap().len();
        File::options()
            .write(true)
            .open(&cached)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
        let it = t.iteration(2);
        let f = it
            .failure
            .clone()
            .expect("a truncated dependency fails the builds");
        assert!(f.step.ends_with("resolve"), "{f}");
        assert!(f.message.contains("incomplete artifact"), "{f}");
        assert_eq!(it.metric("failed_builds"), Some(2.0));
        t.stop().unwrap();
    }
}
