//! `--suite nfs|iscsi|block|dir` (seed 002, "Running the benchmark for NFS and iSCSI"):
//! every load generator runs `fio --server`; the coordinator drives them all at once through
//! fio's client/server mode, each on its own mount or device, and fio merges them into "All
//! clients". First the seed's prepare step (each load generator in turn writes its data
//! set), then each job `iterations` times.
//!
//! Targets are checked on their hosts before any load: `nfs` and `dir` must be writable
//! directories (`nfs`: on an NFS mount), `block` and `iscsi` block devices that pass the
//! same safety check as the disks suite (`iscsi`: a disk of an iSCSI session).
//!
//! An `nfs` target may also be an export URL (`nfs://HOST/PATH?nfsport=P&mountport=P`):
//! each load generator's fio then reaches it with its `nfs` ioengine (libnfs) instead of a
//! kernel mount, and the check is a MOUNT of the export from that load generator. Or a
//! kernel-mounted export (`mount+nfs://...`, [`crate::nfs_mount`]): the suite mounts it on
//! each load generator before the checks (`mount -t nfs`), fio runs on the mounted
//! directory, and the mounts are undone when the suite ends. An `iscsi` or `block` target
//! may be a LUN to log in to (`login+iscsi://...`, [`crate::iscsi_login`]): each load
//! generator's kernel initiator attaches it before the checks, the disk found is the
//! target (the same safety check; `--destroy-data` may name the URL), and the sessions are
//! logged out when the suite ends.

use serde::Serialize;

use crate::fiorun;
use crate::iscsi_login::{self, Attached};
use crate::jobs::{self, SeedJob, Target, Timing};
use crate::nfs_mount::{self, Mounted};
use crate::schedule::{Prepared, Unit, UnitKind};
use crate::sizing::TargetSizing;
use crate::sizing::{self, Overrides};
use crate::{Session, SuiteError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StorageKind {
    Nfs,
    Iscsi,
    Block,
    Dir,
}

impl StorageKind {
    pub fn parse(s: &str) -> Result<StorageKind, String> {
        match s {
            "nfs" => Ok(StorageKind::Nfs),
            "iscsi" => Ok(StorageKind::Iscsi),
            "block" => Ok(StorageKind::Block),
            "dir" => Ok(StorageKind::Dir),
            _ => Err(format!(
                "unknown storage suite {s:?} (allowed: nfs, iscsi, block, dir)"
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            StorageKind::Nfs => "nfs",
            StorageKind::Iscsi => "iscsi",
            StorageKind::Block => "block",
            StorageKind::Dir => "dir",
        }
    }
    fn is_block(self) -> bool {
        matches!(self, StorageKind::Block | StorageKind::Iscsi)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct StoragePlan {
    pub kind: StorageKind,
    /// Each load generator and its mount directory or device.
    pub targets: Vec<(String, String)>,
    pub destroy_data: Vec<String>,
    pub jobs: Vec<SeedJob>,
    pub iterations: u32,
    pub timing: Timing,
    pub prepare: bool,
    pub overrides: Overrides,
    /// RAM of the storage side, when known (the sizing rule's "target node's RAM").
    pub target_ram_bytes: Option<u64>,
    pub fio_port: u16,
}

impl StoragePlan {
    pub fn new(kind: StorageKind) -> StoragePlan {
        StoragePlan {
            kind,
            targets: Vec::new(),
            destroy_data: Vec::new(),
            jobs: vec![
                SeedJob::ReadRandom,
                SeedJob::WriteRandom,
                SeedJob::ReadSeq,
                SeedJob::WriteSeq,
            ],
            iterations: 3,
            timing: Timing {
                runtime_s: 60,
                ramp_s: 2,
            },
            prepare: true,
            overrides: Overrides::default(),
            target_ram_bytes: None,
            fio_port: 8765,
        }
    }
}

/// What a target turned out to be.
#[derive(Debug, Clone, Serialize)]
pub struct TargetInfo {
    pub host: String,
    pub path: String,
    /// File-system type (`nfs4`, `ext4`, ...) or `block`.
    pub fs_type: String,
    /// Free bytes (directory) or size (device); `None` for an nfs:// export.
    pub capacity_bytes: Option<u64>,
    /// The `mount+nfs://` export the suite kernel-mounted at `path`.
    pub mounted_from: Option<String>,
    /// The `login+iscsi://` LUN the suite attached as `path`, and the initiator name its
    /// session logged in with.
    pub attached_from: Option<(String, String)>,
}

/// An `nfs` target given as an export URL rather than a mounted directory.
pub fn is_nfs_url(path: &str) -> bool {
    path.starts_with("nfs://")
}

/// Mount the export at `url` from `host` with fio's nfs engine, reading a file that is not
/// there: the engine prints `Failed to mount ...` when MOUNT fails (unreachable, no such
/// export, refused by its export policy) and a LOOKUP error once mounted. Nothing is
/// written. (fio exits 0 either way, so its output decides.)
fn check_nfs_url(h: &hosts::Host, host: &str, url: &str) -> Result<TargetInfo, SuiteError> {
    let out = h.run(&format!(
        "timeout 60 fio --name=qoslab-probe --ioengine=nfs --nfs_url={} \
         --filename=qoslab.probe.absent --rw=read --bs=4k --size=4k --iodepth=1 \
         --output-format=terse 2>&1",
        hosts::quote(url)
    ))?;
    let text = out.stdout.trim();
    let mounted = text.contains("NFS3ERR_NOENT") && !text.contains("Failed to mount");
    if !mounted {
        let why = text
            .lines()
            .find(|l| l.contains("Failed to mount") || l.contains("engine") || l.contains("fio:"))
            .unwrap_or(text.lines().next().unwrap_or("no output"));
        return Err(SuiteError::Invalid(format!(
            "{host}: {url}: fio's nfs engine could not mount the export from this host: {why}"
        )));
    }
    Ok(TargetInfo {
        host: host.into(),
        path: url.into(),
        fs_type: "nfs3 (fio's nfs engine, libnfs)".into(),
        capacity_bytes: None,
        mounted_from: None,
        attached_from: None,
    })
}

/// What the suite attached on the load generators (undone on drop).
#[derive(Default)]
struct Attachments {
    mounts: Vec<Mounted>,
    logins: Vec<Attached>,
}

fn check_target(
    s: &Session,
    plan: &StoragePlan,
    host: &str,
    path: &str,
    att: &mut Attachments,
) -> Result<TargetInfo, SuiteError> {
    let (_, h) = s.host(host).ok_or_else(|| {
        SuiteError::Invalid(format!("target for {host}, which is not one of the hosts"))
    })?;
    if nfs_mount::is_mount_url(path) {
        if plan.kind != StorageKind::Nfs {
            return Err(SuiteError::Invalid(format!(
                "{host}: {path}: a kernel-mounted export is a target of --suite nfs"
            )));
        }
        let m = Mounted::mount(h, host, path, &format!("{}.nfs", s.rundir))?;
        let dir = m.dir.clone();
        att.mounts.push(m);
        let mut info = check_target(s, plan, host, &dir, att)?;
        info.mounted_from = Some(path.to_string());
        return Ok(info);
    }
    if iscsi_login::is_login_url(path) {
        if !plan.kind.is_block() {
            return Err(SuiteError::Invalid(format!(
                "{host}: {path}: a LUN to log in to is a target of --suite iscsi or block"
            )));
        }
        let a = Attached::attach(h, host, path, &format!("qoslab-{}", s.id))?;
        let (dev, initiator) = (a.device.clone(), a.initiator.clone());
        att.logins.push(a);
        // Consent to overwrite the LUN may name it by its URL: the device is known only now.
        let mut consent = plan.clone();
        if plan.destroy_data.iter().any(|d| d == path) {
            consent.destroy_data.push(dev.clone());
        }
        let mut info = check_target(s, &consent, host, &dev, att).map_err(|e| match e {
            SuiteError::Refused(mut r) => {
                for x in &mut r {
                    x.device = path.to_string();
                    x.reasons.insert(0, format!("attached as {dev}"));
                }
                SuiteError::Refused(r)
            }
            e => e,
        })?;
        info.attached_from = Some((path.to_string(), initiator));
        return Ok(info);
    }
    if plan.kind.is_block() {
        let st = hosts::devices::inspect(h, path)?;
        hosts::devices::check_writable(&st, host, &plan.destroy_data)
            .map_err(|r| SuiteError::Refused(vec![r]))?;
        if plan.kind == StorageKind::Iscsi {
            let name = st.path.rsplit('/').next().unwrap_or("");
            let sys = h.run_ok(&format!(
                "readlink -f /sys/class/block/{}",
                hosts::quote(name)
            ))?;
            if !sys.contains("/session") {
                return Err(SuiteError::Invalid(format!(
                    "{host}: {path} is not a disk of an iSCSI session ({})",
                    sys.trim()
                )));
            }
        }
        return Ok(TargetInfo {
            host: host.into(),
            path: path.into(),
            fs_type: "block".into(),
            capacity_bytes: Some(st.size_bytes),
            mounted_from: None,
            attached_from: None,
        });
    }
    if plan.kind == StorageKind::Nfs && is_nfs_url(path) {
        return check_nfs_url(h, host, path);
    }
    let q = hosts::quote(path);
    let out = h.run(&format!(
        "test -d {q} || {{ echo 'not a directory' >&2; exit 3; }}; test -w {q} || {{ echo 'not writable' >&2; exit 3; }}; t=$(findmnt -n -o FSTYPE -T {q} 2>/dev/null | tail -n 1); if [ -n \"$t\" ]; then echo \"$t\"; else stat -f -c %T {q}; fi; df -P -B1 {q} | tail -n 1"
    ))?;
    if out.code != 0 {
        return Err(SuiteError::Invalid(format!(
            "{host}: {path}: {}",
            out.stderr.trim()
        )));
    }
    let mut lines = out.stdout.lines();
    let fs_type = lines.next().unwrap_or("").trim().to_string();
    let capacity_bytes = Some(
        lines
            .next()
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    );
    if plan.kind == StorageKind::Nfs && !fs_type.starts_with("nfs") {
        return Err(SuiteError::Invalid(format!(
            "{host}: {path} is on {fs_type}, not NFS (mount the share there, or use --suite dir)"
        )));
    }
    Ok(TargetInfo {
        host: host.into(),
        path: path.into(),
        fs_type,
        capacity_bytes,
        mounted_from: None,
        attached_from: None,
    })
}

/// Check every target, size the jobs, start the fio servers and list the units: each load
/// generator's prepare step in turn, then each job x iterations on all generators at once.
pub fn prepare(s: &Session, plan: &StoragePlan) -> Result<(Vec<TargetInfo>, Prepared), SuiteError> {
    if plan.targets.is_empty() {
        return Err(SuiteError::Invalid("no targets given".into()));
    }
    if plan.iterations == 0 || plan.timing.runtime_s == 0 || plan.jobs.is_empty() {
        return Err(SuiteError::Invalid(
            "jobs, iterations and runtime must not be empty or 0".into(),
        ));
    }
    let mut infos = Vec::new();
    let mut errors = Vec::new();
    // Kernel mounts and logins made here live as long as the prepared units (undone on drop).
    let mut att = Attachments::default();
    for (h, p) in &plan.targets {
        match check_target(s, plan, h, p, &mut att) {
            Ok(t) => infos.push(t),
            // One "invalid suite input:" prefix, on the whole list.
            Err(SuiteError::Invalid(m)) => errors.push(m),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(SuiteError::Invalid(format!(
            "{} target(s) not usable:\n  {}",
            errors.len(),
            errors.join("\n  ")
        )));
    }
    let idx: Vec<usize> = plan
        .targets
        .iter()
        .filter_map(|(h, _)| s.host(h).map(|(i, _)| i))
        .collect();
    let mut sizing = Vec::new();
    let mut parts_of = Vec::new();
    for (t, &i) in infos.iter().zip(&idx) {
        let sz = sizing::storage_rule(
            &s.facts[i],
            t.capacity_bytes,
            plan.target_ram_bytes,
            &plan.overrides,
        );
        let target = if plan.kind.is_block() {
            Target::Devices(vec![t.path.clone()])
        } else if t.mounted_from.is_some() {
            Target::Mounted {
                dir: t.path.clone(),
                name: t.host.clone(),
            }
        } else if is_nfs_url(&t.path) {
            Target::Nfs {
                url: t.path.clone(),
                name: t.host.clone(),
            }
        } else {
            Target::Directory(t.path.clone())
        };
        let devs = if plan.kind.is_block() {
            vec![t.path.clone()]
        } else {
            Vec::new()
        };
        sizing.push(TargetSizing {
            host: t.host.clone(),
            targets: vec![t.path.clone()],
            sizing: sz.clone(),
        });
        parts_of.push((i, sz, target, devs));
    }
    let mut units = Vec::new();
    if plan.prepare {
        // The seed prepares each load generator in turn ("in succession").
        for (i, sz, target, devs) in &parts_of {
            units.push(Unit::new(
                s,
                "prepare",
                None,
                UnitKind::Prepare,
                vec![(*i, jobs::prepare_file(sz, target), devs.clone())],
            ));
        }
    }
    for &job in &plan.jobs {
        let parts: Vec<_> = parts_of
            .iter()
            .map(|(i, sz, target, devs)| {
                (
                    *i,
                    jobs::job_file(job, sz, target, plan.timing),
                    devs.clone(),
                )
            })
            .collect();
        for it in 1..=plan.iterations {
            units.push(Unit::new(
                s,
                plan.kind.name(),
                Some(job),
                UnitKind::Measure { iteration: it },
                parts.clone(),
            ));
        }
    }
    let servers = fiorun::start_servers(s, &idx, plan.fio_port)?;
    Ok((
        infos,
        Prepared {
            sizing,
            units,
            unit_secs: f64::from(plan.timing.runtime_s + plan.timing.ramp_s),
            servers,
            mounts: att.mounts,
            logins: att.logins,
        },
    ))
}
