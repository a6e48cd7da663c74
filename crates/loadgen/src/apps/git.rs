//! The `git` workload: seed 004's GitWorkload (openshift/svt `test-git.sh`) on a local
//! repository. Per iteration, in the tenant's `git/` directory: clone (over git's file://
//! transport, as a network clone would pack and unpack), status, tar -z, untar, rm — and a
//! `sync` of the tenant's file system (qoslab's addition: the write-back of what the steps
//! dirtied is charged to this tenant, not to the next scale point). The seed's figure is
//! the iteration's total time.
//!
//! The repository is generated, not downloaded: [`RepoSpec`] fixes the number of files,
//! their total size and a seed; the tree (text-like files, mostly small, in nested
//! directories) and therefore the commit id are the same on every machine. It is built once
//! into a cache directory as a bare repository and reused.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::apps::proc;
use crate::apps::rng::Rng;
use crate::apps::{App, Failure, Iteration, Step, TenantApp, TenantEnv};

/// Bump when the generator changes: cached repositories of older versions are not reused.
const GENERATOR_VERSION: u32 = 1;

/// The generated repository's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoSpec {
    pub files: u32,
    /// Total bytes of file content.
    pub bytes: u64,
    pub seed: u64,
}

impl Default for RepoSpec {
    /// About the size of the seed's Eclipse Che clone (~200 MB): 20,000 files, 200 MiB.
    fn default() -> RepoSpec {
        RepoSpec {
            files: 20_000,
            bytes: 200 << 20,
            seed: 4,
        }
    }
}

impl RepoSpec {
    fn key(&self) -> String {
        format!(
            "repo-v{GENERATOR_VERSION}-{}f-{}b-s{}",
            self.files, self.bytes, self.seed
        )
    }

    /// File sizes: log-uniform weights over 1..256, scaled to `bytes` (many small files,
    /// a few large ones, like a source tree).
    fn sizes(&self) -> Vec<u64> {
        let mut r = Rng::new(self.seed ^ 0x5A17);
        let w: Vec<f64> = (0..self.files).map(|_| 2f64.powf(r.unit() * 8.0)).collect();
        let total: f64 = w.iter().sum();
        let mut sizes: Vec<u64> = w
            .iter()
            .map(|x| (x / total * self.bytes as f64) as u64)
            .collect();
        let sum: u64 = sizes.iter().sum();
        if let Some(last) = sizes.last_mut() {
            *last += self.bytes.saturating_sub(sum);
        }
        sizes
    }

    fn path_of(i: u32) -> PathBuf {
        PathBuf::from(format!(
            "src/m{:02}/p{:02}/File{:05}.txt",
            i % 64,
            (i / 64) % 16,
            i
        ))
    }

    /// Write the tree under `dir`.
    pub fn write_tree(&self, dir: &Path) -> std::io::Result<()> {
        const WORDS: &[&str] = &[
            "let", "fn", "return", "if", "else", "match", "struct", "impl", "pub", "use", "volume",
            "policy", "tenant", "iops", "floor", "ceiling", "request", "reply", "buffer", "offset",
            "length", "error", "result", "value", "index", "count", "{", "}", "(", ")", ";", "=",
            "+", "->", "0", "1", "42", "4096", "self",
        ];
        let mut r = Rng::new(self.seed);
        for (i, size) in self.sizes().into_iter().enumerate() {
            let p = dir.join(Self::path_of(i as u32));
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent)?;
            }
            let mut f = BufWriter::new(File::create(&p)?);
            let mut written = 0u64;
            let mut col = 0;
            while written < size {
                let w = WORDS[r.below(WORDS.len() as u64) as usize];
                let piece = if col > 72 {
                    col = 0;
                    "\n"
                } else {
                    col += w.len() + 1;
                    w
                };
                let left = (size - written) as usize;
                let b = &piece.as_bytes()[..piece.len().min(left)];
                f.write_all(b)?;
                written += b.len() as u64;
                if written < size && piece != "\n" {
                    f.write_all(b" ")?;
                    written += 1;
                }
            }
            f.flush()?;
        }
        Ok(())
    }
}

/// A built bare repository.
#[derive(Debug, Clone)]
pub struct BareRepo {
    pub path: PathBuf,
    pub commit: String,
    pub spec: RepoSpec,
}

fn git() -> Command {
    let mut c = Command::new("git");
    // No user or system configuration may change what is built or how it is cloned.
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "qoslab")
        .env("GIT_AUTHOR_EMAIL", "qoslab@localhost")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_NAME", "qoslab")
        .env("GIT_COMMITTER_EMAIL", "qoslab@localhost")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z");
    c
}

fn output(step: &str, c: &mut Command) -> Result<String, Failure> {
    let o = lifecycle::children::output(c, lifecycle::children::OnParentDeath::Term)
        .map_err(|e| Failure::classify(step, format!("cannot run git: {e}")))?;
    if !o.status.success() {
        return Err(Failure::classify(
            step,
            format!(
                "{}: {}",
                o.status,
                proc::tail(&String::from_utf8_lossy(&o.stderr))
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Build the repository of `spec` in `cache` unless it is there already (complete).
/// Concurrent builders of the same spec wait for one another (flock).
pub fn build_repo(cache: &Path, spec: RepoSpec) -> Result<BareRepo, Failure> {
    let step = "build repository";
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Failure::classify(step, format!("{what} {}: {e}", p.display()))
    };
    fs::create_dir_all(cache).map_err(|e| io("creating", cache, e))?;
    let key = spec.key();
    let repo = cache.join(format!("{key}.git"));
    let marker = repo.join("qoslab-complete");
    let lock_path = cache.join(format!("{key}.lock"));
    let lock = File::create(&lock_path).map_err(|e| io("creating", &lock_path, e))?;
    // SAFETY: flock on a descriptor we own; blocks until other builders finish.
    unsafe {
        libc::flock(lock.as_raw_fd(), libc::LOCK_EX);
    }
    if !marker.exists() {
        let _ = fs::remove_dir_all(&repo);
        let work = cache.join(format!("{key}.work-{}", std::process::id()));
        let _ = fs::remove_dir_all(&work);
        spec.write_tree(&work)
            .map_err(|e| io("writing the tree in", &work, e))?;
        output(
            step,
            git()
                .arg("-C")
                .arg(&work)
                .args(["init", "-q", "-b", "main"]),
        )?;
        output(step, git().arg("-C").arg(&work).args(["add", "-A"]))?;
        output(
            step,
            git()
                .arg("-C")
                .arg(&work)
                .args(["commit", "-q", "-m", "qoslab generated tree"]),
        )?;
        output(
            step,
            git().args(["clone", "-q", "--bare"]).arg(&work).arg(&repo),
        )?;
        output(
            step,
            git()
                .arg("-C")
                .arg(&repo)
                .args(["repack", "-a", "-d", "-q"]),
        )?;
        fs::remove_dir_all(&work).map_err(|e| io("removing", &work, e))?;
        fs::write(&marker, "").map_err(|e| io("writing", &marker, e))?;
    }
    let commit = output(step, git().arg("-C").arg(&repo).args(["rev-parse", "HEAD"]))?;
    Ok(BareRepo {
        path: repo,
        commit,
        spec,
    })
}

/// The git application over one built repository.
pub struct GitApp {
    pub repo: BareRepo,
}

impl App for GitApp {
    fn name(&self) -> &'static str {
        "git"
    }

    fn start(&self, env: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure> {
        let dir = env.data_dir.join("git");
        fs::create_dir_all(&dir)
            .map_err(|e| Failure::classify("start", format!("creating {}: {e}", dir.display())))?;
        Ok(Box::new(GitTenant {
            repo: self.repo.path.clone(),
            fs_root: env.data_dir.clone(),
            dir,
            timeout: env.timeout,
        }))
    }
}

struct GitTenant {
    repo: PathBuf,
    fs_root: PathBuf,
    dir: PathBuf,
    timeout: Duration,
}

impl GitTenant {
    fn steps(&self, deadline: Instant, steps: &mut Vec<Step>) -> Result<(), Failure> {
        let work = self.dir.join("work");
        let repo_dir = work.join("repo");
        let tarball = work.join("repo.tar.gz");
        let untar = work.join("untar");
        let url = format!("file://{}", self.repo.display());
        let limit = self.timeout;
        let mut run = |name: &str, c: &mut Command| -> Result<(), Failure> {
            let secs = proc::step(name, c, deadline, limit)?;
            steps.push(Step {
                name: name.to_string(),
                secs,
            });
            Ok(())
        };
        run("prepare", Command::new("rm").arg("-rf").arg(&work))?;
        fs::create_dir_all(&untar)
            .map_err(|e| Failure::classify("prepare", format!("{}: {e}", untar.display())))?;
        run(
            "clone",
            git()
                .args([
                    "-c",
                    "protocol.file.allow=always",
                    "clone",
                    "-q",
                    "--no-hardlinks",
                ])
                .arg(&url)
                .arg(&repo_dir),
        )?;
        run(
            "status",
            git()
                .arg("-C")
                .arg(&repo_dir)
                .args(["status", "--porcelain"]),
        )?;
        run(
            "tar",
            Command::new("tar")
                .arg("-zcf")
                .arg(&tarball)
                .arg("-C")
                .arg(&work)
                .arg("repo"),
        )?;
        run(
            "untar",
            Command::new("tar")
                .arg("-zxf")
                .arg(&tarball)
                .arg("-C")
                .arg(&untar),
        )?;
        run("rm", Command::new("rm").arg("-rf").arg(&work))?;
        run("sync", Command::new("sync").arg("-f").arg(&self.fs_root))?;
        Ok(())
    }
}

impl TenantApp for GitTenant {
    fn iteration(&mut self, _n: u32) -> Iteration {
        let t0 = Instant::now();
        let mut it = Iteration::default();
        let r = self.steps(t0 + self.timeout, &mut it.steps);
        it.secs = t0.elapsed().as_secs_f64();
        it.failure = r.err();
        it
    }

    fn stop(&mut self) -> Result<(), Failure> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_add_up_and_are_mostly_small() {
        let s = RepoSpec {
            files: 1000,
            bytes: 10 << 20,
            seed: 1,
        };
        let sizes = s.sizes();
        assert_eq!(sizes.len(), 1000);
        assert_eq!(sizes.iter().sum::<u64>(), 10 << 20);
        let mut sorted = sizes.clone();
        sorted.sort();
        let median = sorted[500];
        let mean = (10u64 << 20) / 1000;
        assert!(
            median < mean,
            "median {median} should be below the mean {mean}"
        );
        assert_eq!(s.sizes(), sizes, "deterministic");
    }

    #[test]
    fn the_repository_and_its_commit_are_deterministic_and_cached() {
        let base = crate::test_dir("apps-git");
        let spec = RepoSpec {
            files: 200,
            bytes: 256 << 10,
            seed: 9,
        };
        let a = build_repo(&base.join("a"), spec).unwrap();
        let b = build_repo(&base.join("b"), spec).unwrap();
        assert_eq!(a.commit, b.commit, "same spec, same commit on any machine");
        assert_eq!(a.commit.len(), 40);
        let other = build_repo(&base.join("a"), RepoSpec { seed: 10, ..spec }).unwrap();
        assert_ne!(other.commit, a.commit);
        // Cached: a second build returns at once with the same repository.
        let t = Instant::now();
        let again = build_repo(&base.join("a"), spec).unwrap();
        assert_eq!(again.commit, a.commit);
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn an_iteration_times_the_seeds_steps_and_leaves_nothing_behind() {
        let base = crate::test_dir("apps-git-it");
        let repo = build_repo(
            &base.join("cache"),
            RepoSpec {
                files: 100,
                bytes: 128 << 10,
                seed: 2,
            },
        )
        .unwrap();
        let app = GitApp { repo };
        let env = TenantEnv {
            tenant: "t0".into(),
            data_dir: base.join("fs"),
            scratch_dir: base.join("scratch"),
            timeout: Duration::from_secs(60),
        };
        fs::create_dir_all(&env.data_dir).unwrap();
        let mut t = app.start(&env).unwrap();
        let it = t.iteration(1);
        assert!(it.ok(), "{:?}", it.failure);
        let names: Vec<&str> = it.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["prepare", "clone", "status", "tar", "untar", "rm", "sync"]
        );
        assert!(!env.data_dir.join("git/work").exists());
        t.stop().unwrap();
    }

    #[test]
    fn a_clone_of_a_missing_repository_is_an_application_failure() {
        let base = crate::test_dir("apps-git-bad");
        let app = GitApp {
            repo: BareRepo {
                path: base.join("nope.git"),
                commit: String::new(),
                spec: RepoSpec::default(),
            },
        };
        let env = TenantEnv {
            tenant: "t0".into(),
            data_dir: base.to_path_buf(),
            scratch_dir: base.to_path_buf(),
            timeout: Duration::from_secs(30),
        };
        let it = app.start(&env).unwrap().iteration(1);
        let f = it.failure.expect("must fail");
        assert_eq!(
            (f.kind, f.step.as_str()),
            (crate::apps::FailureKind::App, "clone")
        );
        assert!(f.message.contains("nope.git"), "{}", f.message);
    }
}
