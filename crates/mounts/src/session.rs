//! A run's tenant mounts: [`Session::open`] cleans stale runs and takes a fresh, locked
//! run directory; [`Session::attach`] builds nbdfuse -> loop -> mkfs -> mount for one
//! tenant, recording every step; [`Session::close`] (or drop, or a signal) undoes it all.

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::state::{self, RunState, TenantRecord, RUN_PREFIX, STATE_VERSION};
use crate::teardown::{self, Undone};
use crate::{cmd, preflight, stale, sys, FsType, MountError, StaleRun};

/// How long nbdfuse may take to connect and mount.
const NBDFUSE_READY: Duration = Duration::from_secs(30);
const LOSETUP_LIMIT: Duration = Duration::from_secs(30);
const MOUNT_LIMIT: Duration = Duration::from_secs(60);

/// How one tenant's volume becomes a file system.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    pub fs: FsType,
    /// `losetup --direct-io=on` (default): the loop device bypasses the page cache of
    /// nbdfuse's file, so data is cached once, above the file system, as on a real client.
    pub direct_io: bool,
    /// Time limit for mkfs (it runs under the volume's QoS policy).
    pub mkfs_limit: Duration,
    /// Extra `mount -o` options (e.g. "noatime").
    pub mount_options: Option<String>,
    /// nbdfuse `-C N` (connections to the node; nbdfuse's default is 4 with multi-conn).
    pub connections: Option<u32>,
}

impl AttachOptions {
    pub fn new(fs: FsType) -> AttachOptions {
        AttachOptions {
            fs,
            direct_io: true,
            mkfs_limit: Duration::from_secs(300),
            mount_options: None,
            connections: None,
        }
    }
}

/// A tenant's mounted file system.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub name: String,
    pub fs: FsType,
    /// The file system's root: the tenant's data directory.
    pub mount_dir: PathBuf,
    /// The device the file system is on: the loop device over nbdfuse's file, or the
    /// caller's device ([`Session::attach_device`]).
    pub loop_dev: String,
    /// Whether the kernel actually does direct I/O on the loop device (reported by sysfs).
    pub direct_io: bool,
    /// nbdfuse's pid (0 on a caller's device).
    pub nbdfuse_pid: u32,
}

pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    id: String,
    _lock: File,
    pub(crate) state: Mutex<RunState>,
    children: Mutex<HashMap<String, Child>>,
    pub(crate) closing: AtomicBool,
    /// One teardown at a time (close/drop on the main thread, the signal thread).
    teardown: Mutex<()>,
}

impl Inner {
    /// Persist a new or updated tenant record; fails when the run is closing or the
    /// record was taken away by a teardown (then the caller undoes its own steps).
    fn put(&self, rec: &TenantRecord, insert: bool) -> Result<(), MountError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if self.closing.load(Ordering::SeqCst) {
            return Err(MountError::Closing);
        }
        match st.tenants.iter_mut().find(|t| t.tenant == rec.tenant) {
            Some(_) if insert => return Err(MountError::Duplicate(rec.tenant.clone())),
            Some(t) => *t = rec.clone(),
            None if insert => st.tenants.push(rec.clone()),
            None => return Err(MountError::Closing),
        }
        state::save(&self.dir, &st).map_err(|e| MountError::io("writing state in", &self.dir, e))
    }

    /// Take a tenant's record (and nbdfuse child) out of the run and undo it.
    fn undo(&self, tenant: &str) -> Undone {
        let rec = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let i = st.tenants.iter().position(|t| t.tenant == tenant);
            let rec = i.map(|i| st.tenants.remove(i));
            let _ = state::save(&self.dir, &st);
            rec
        };
        let child = self
            .children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(tenant);
        let mut u = Undone::default();
        if let Some(rec) = rec {
            teardown::tenant(&rec, child, &mut u);
        }
        u
    }
}

impl Inner {
    /// Undo every tenant, then the run directory. Idempotent; concurrent callers wait
    /// for the first.
    fn teardown_all(&self) -> Undone {
        let _one = self.teardown.lock().unwrap_or_else(|p| p.into_inner());
        self.closing.store(true, Ordering::SeqCst);
        let names: Vec<String> = {
            let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st.tenants.iter().map(|t| t.tenant.clone()).collect()
        };
        let mut u = Undone::default();
        for n in names {
            u.merge(self.undo(&n));
        }
        if !self.dir.exists() {
            return u;
        }
        // Belt and braces: anything under the run directory the records missed.
        for m in sys::mounts_under(&self.dir) {
            teardown::unmount(&m, &mut u);
        }
        teardown::detach_loops(&self.dir, &mut u);
        if u.errors.is_empty() && sys::mounts_under(&self.dir).is_empty() {
            if let Err(e) = fs::remove_dir_all(&self.dir) {
                u.errors
                    .push(format!("removing {}: {e}", self.dir.display()));
            }
        }
        u
    }
}

/// One run's tenant mounts. Dropping it tears everything down.
pub struct Session {
    inner: Arc<Inner>,
    /// The signal teardown (the lifecycle's local phase) while the session lives.
    _on_signal: lifecycle::Guard,
}

fn valid_tenant(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl Session {
    /// Check the host can mount `fs_types`, clean up stale runs under `base` (runs whose
    /// process is gone: their lock is free), register the signal teardown, and start a new
    /// run in `base/run-PID-NONCE`. Returns the stale runs that were cleaned.
    pub fn open(base: &Path, fs_types: &[FsType]) -> Result<(Session, Vec<StaleRun>), MountError> {
        Session::open_for(base, fs_types, true)
    }

    /// As [`Session::open`]; with `volumes` false the run only makes file systems on the
    /// caller's block devices ([`Session::attach_device`]), so the host needs no FUSE, loop
    /// devices or nbdfuse.
    pub fn open_for(
        base: &Path,
        fs_types: &[FsType],
        volumes: bool,
    ) -> Result<(Session, Vec<StaleRun>), MountError> {
        preflight::check_for(fs_types, volumes)?;
        fs::create_dir_all(base).map_err(|e| MountError::io("creating", base, e))?;
        let cleaned = stale::cleanup(base)?;
        let pid = std::process::id();
        let nonce = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let id = format!("{RUN_PREFIX}{pid}-{nonce:x}");
        let dir = base.join(&id);
        let lock = state::create_locked(&dir).map_err(|e| MountError::io("locking", &dir, e))?;
        let st = RunState {
            version: STATE_VERSION,
            run: id.clone(),
            pid,
            pid_start: sys::start_time(pid).unwrap_or(0),
            tenants: Vec::new(),
        };
        state::save(&dir, &st).map_err(|e| MountError::io("writing state in", &dir, e))?;
        let inner = Arc::new(Inner {
            dir,
            id,
            _lock: lock,
            state: Mutex::new(st),
            children: Mutex::new(HashMap::new()),
            closing: AtomicBool::new(false),
            teardown: Mutex::new(()),
        });
        let weak = Arc::downgrade(&inner);
        let on_signal = lifecycle::register(lifecycle::Phase::Local, move || {
            if let Some(inner) = weak.upgrade() {
                for e in inner.teardown_all().errors {
                    eprintln!("qoslab: teardown: {e}");
                }
            }
        });
        Ok((
            Session {
                inner,
                _on_signal: on_signal,
            },
            cleaned,
        ))
    }

    /// The run's id (`run-PID-NONCE`).
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The run's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Export `nbd_uri` through nbdfuse, attach it as a loop device, make a file system
    /// and mount it. On any failure the steps already taken are undone.
    pub fn attach(
        &self,
        tenant: &str,
        nbd_uri: &str,
        opts: &AttachOptions,
    ) -> Result<Tenant, MountError> {
        self.attach_with(tenant, nbd_uri, None, opts)
    }

    /// Make a file system on the caller's block device `device` (its contents are
    /// destroyed: the caller checked it may be) and mount it as tenant `tenant`'s, recorded
    /// and torn down (unmounted; the device itself stays) like a volume's. No nbdfuse, no
    /// loop device; `direct_io` does not apply.
    pub fn attach_device(
        &self,
        tenant: &str,
        device: &Path,
        opts: &AttachOptions,
    ) -> Result<Tenant, MountError> {
        self.attach_with(tenant, "", Some(device.display().to_string()), opts)
    }

    fn attach_with(
        &self,
        tenant: &str,
        nbd_uri: &str,
        device: Option<String>,
        opts: &AttachOptions,
    ) -> Result<Tenant, MountError> {
        if !valid_tenant(tenant) {
            return Err(MountError::TenantName(tenant.to_string()));
        }
        let dir = &self.inner.dir;
        let mut rec = TenantRecord {
            tenant: tenant.to_string(),
            nbd_uri: nbd_uri.to_string(),
            fs: opts.fs,
            fuse_dir: dir.join(format!("{tenant}.fuse")),
            mount_dir: dir.join(format!("{tenant}.fs")),
            nbdfuse: None,
            loop_dev: None,
            device,
            mounted: false,
        };
        self.inner.put(&rec, true)?;
        let built = match rec.device.clone() {
            Some(dev) => self.build_on_device(&mut rec, dev, opts),
            None => self.build(&mut rec, opts),
        };
        match built {
            Ok(t) => Ok(t),
            Err(e) => {
                let u = self.inner.undo(tenant);
                if u.errors.is_empty() {
                    Err(e)
                } else {
                    Err(MountError::Undo {
                        cause: Box::new(e),
                        errors: u.errors,
                    })
                }
            }
        }
    }

    fn build(&self, rec: &mut TenantRecord, opts: &AttachOptions) -> Result<Tenant, MountError> {
        let inner = &self.inner;
        for d in [&rec.fuse_dir, &rec.mount_dir] {
            fs::create_dir_all(d).map_err(|e| MountError::io("creating", d, e))?;
        }
        // 1. nbdfuse, in its own process group so a terminal's Ctrl-C reaches only us and we
        // unmount in order.
        let pidfile = inner.dir.join(format!("{}.nbdfuse.pid", rec.tenant));
        let logpath = inner.dir.join(format!("{}.nbdfuse.log", rec.tenant));
        let log = File::create(&logpath).map_err(|e| MountError::io("creating", &logpath, e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| MountError::io("opening", &logpath, e))?;
        let mut c = Command::new("nbdfuse");
        c.arg("-P").arg(&pidfile);
        if let Some(n) = opts.connections {
            c.arg("-C").arg(n.to_string());
        }
        c.arg(&rec.fuse_dir).arg(&rec.nbd_uri);
        use std::os::unix::process::CommandExt;
        c.process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2));
        let child = lifecycle::children::spawn(&mut c, lifecycle::children::OnParentDeath::Stay)
            .map_err(|e| MountError::Command {
                step: "export the volume as a file".into(),
                command: format!("nbdfuse {} {}", rec.fuse_dir.display(), rec.nbd_uri),
                detail: format!("cannot start nbdfuse: {e}"),
            })?;
        let pid = child.id();
        rec.nbdfuse = Some((pid, sys::start_time(pid).unwrap_or(0)));
        let child = wait_ready(child, &pidfile, &logpath, rec)?;
        inner
            .children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(rec.tenant.clone(), child);
        inner.put(rec, false)?;
        // 2. loop device.
        let image = rec.image();
        let image_s = image.to_string_lossy().into_owned();
        let dio = if opts.direct_io {
            "--direct-io=on"
        } else {
            "--direct-io=off"
        };
        let out = cmd::run(
            "attach a loop device",
            "losetup",
            &["--find", "--show", dio, &image_s],
            LOSETUP_LIMIT,
        )?;
        let dev = out.stdout.trim().to_string();
        rec.loop_dev = Some(dev.clone());
        inner.put(rec, false)?;
        // 3, 4. mkfs, mount.
        self.format_and_mount(rec, &dev, opts)?;
        Ok(Tenant {
            name: rec.tenant.clone(),
            fs: opts.fs,
            mount_dir: rec.mount_dir.clone(),
            direct_io: sys::loop_direct_io(&dev).unwrap_or(false),
            loop_dev: dev,
            nbdfuse_pid: pid,
        })
    }

    /// The caller's device: mkfs, mount.
    fn build_on_device(
        &self,
        rec: &mut TenantRecord,
        dev: String,
        opts: &AttachOptions,
    ) -> Result<Tenant, MountError> {
        fs::create_dir_all(&rec.mount_dir)
            .map_err(|e| MountError::io("creating", &rec.mount_dir, e))?;
        self.format_and_mount(rec, &dev, opts)?;
        Ok(Tenant {
            name: rec.tenant.clone(),
            fs: opts.fs,
            mount_dir: rec.mount_dir.clone(),
            loop_dev: dev,
            direct_io: false,
            nbdfuse_pid: 0,
        })
    }

    /// Make the file system on `dev` and mount it at the tenant's mount point.
    fn format_and_mount(
        &self,
        rec: &mut TenantRecord,
        dev: &str,
        opts: &AttachOptions,
    ) -> Result<(), MountError> {
        let inner = &self.inner;
        // mkfs (not discarding: a fresh volume is sparse already).
        let mkfs: (&str, Vec<&str>) = match opts.fs {
            FsType::Ext4 => (
                "mkfs.ext4",
                vec![
                    "-q",
                    "-F",
                    "-E",
                    "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
                    dev,
                ],
            ),
            FsType::Xfs => ("mkfs.xfs", vec!["-q", "-f", "-K", dev]),
        };
        cmd::run("make the file system", mkfs.0, &mkfs.1, opts.mkfs_limit)?;
        if inner.closing.load(Ordering::SeqCst) {
            return Err(MountError::Closing);
        }
        let mnt = rec.mount_dir.to_string_lossy().into_owned();
        let mut args = vec!["-t", opts.fs.as_str()];
        if let Some(o) = &opts.mount_options {
            args.push("-o");
            args.push(o);
        }
        args.push(dev);
        args.push(&mnt);
        cmd::run("mount the file system", "mount", &args, MOUNT_LIMIT)?;
        rec.mounted = true;
        inner.put(rec, false)
    }

    /// Undo one tenant (unmount, detach, stop nbdfuse, remove its directories).
    pub fn detach(&self, tenant: &str) -> Result<Undone, MountError> {
        let u = self.inner.undo(tenant);
        if u.errors.is_empty() {
            Ok(u)
        } else {
            Err(MountError::Teardown(u.errors))
        }
    }

    /// Undo every tenant and remove the run directory.
    pub fn close(self) -> Result<Undone, MountError> {
        let u = self.inner.teardown_all();
        if u.errors.is_empty() {
            Ok(u)
        } else {
            Err(MountError::Teardown(u.errors))
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let u = self.inner.teardown_all();
        if !u.errors.is_empty() {
            // A destructor cannot return the error; leave a trace and the next run's
            // stale cleanup (or `qoslab tenants cleanup`) finishes the job.
            eprintln!(
                "qoslab: tenant mounts of {} were not fully torn down: {}",
                self.inner.id,
                u.errors.join("; ")
            );
        }
    }
}

/// Wait until nbdfuse has written its pid file (it is serving) or has exited.
fn wait_ready(
    mut child: Child,
    pidfile: &Path,
    log: &Path,
    rec: &TenantRecord,
) -> Result<Child, MountError> {
    let deadline = Instant::now() + NBDFUSE_READY;
    loop {
        if fs::read_to_string(pidfile).is_ok_and(|s| !s.trim().is_empty())
            && sys::is_mounted(&rec.fuse_dir)
        {
            return Ok(child);
        }
        let exited = child.try_wait().ok().flatten();
        if exited.is_some() || Instant::now() >= deadline {
            if exited.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
            let text = fs::read_to_string(log).unwrap_or_default();
            return Err(MountError::NbdfuseNotReady {
                uri: rec.nbd_uri.clone(),
                detail: match exited {
                    Some(s) => format!("nbdfuse exited ({s})"),
                    None => format!("not ready within {NBDFUSE_READY:?}"),
                },
                log: text.trim().to_string(),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::valid_tenant;

    #[test]
    fn tenant_names_are_checked() {
        for ok in ["t0", "gold-3", "a.b_c"] {
            assert!(valid_tenant(ok), "{ok}");
        }
        for bad in ["", ".x", "-x", "a/b", "a b", &"x".repeat(65)] {
            assert!(!valid_tenant(bad), "{bad}");
        }
    }
}
