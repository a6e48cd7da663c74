//! `qoslab bench`'s rules for a file, directory or block-device target, checked before
//! anything runs (docs/BENCH.md, "Targets are never damaged by surprise"), and
//! `--dry-run`: the fio jobs and every path they would touch, with no I/O.
//!
//! - a path that does not exist is refused unless `--create` (a new file; a trailing `/`
//!   names a directory that exists: `Target::parse`);
//! - an existing file, and `DIR/fiotest` in a directory target, is refused unless
//!   `--overwrite`: the run writes into it and its data is destroyed;
//! - a block device is refused unless `--overwrite` (mounted or swap: always);
//! - an iSCSI LUN is refused unless `--overwrite` when the plan writes (a plan whose fio
//!   jobs only read runs without it);
//! - the bytes the plan's own jobs lay out must fit the file system's free space.

use std::path::{Path, PathBuf};

use fio::fmt::human;
use harness::nfs_client::NfsFile;
use harness::target::Target;
use harness::target_files::{check_space, Place};
use harness::{Accepts, Plan};

pub use harness::target_files::Allow;

/// The file the run writes on `target` and tracks (created: removed after; there before:
/// written only with `--overwrite`). None: not a path target, a block device, or a
/// directory the family lays out itself.
pub fn written_file(target: &Target, accepts: Accepts) -> Option<PathBuf> {
    match (target, accepts.dir_file) {
        (Target::Path(p), _) if accepts.own_directory && p.is_dir() => None,
        (Target::Path(p), Some(name)) if p.is_dir() => Some(p.join(name)),
        (t, _) => t.written_file(),
    }
}

/// The files in NFS exports the run writes (fio's nfs engine: `fiotest` in each export's
/// root), one per export URL the target reaches.
pub fn nfs_files(target: &Target) -> Vec<NfsFile> {
    let urls: Vec<String> = match target {
        Target::Nfs(u) => vec![u.clone()],
        Target::NodeVolume { uri, .. } => vec![uri.clone()],
        Target::NodeVolumes { volumes, .. } => volumes.iter().map(|v| v.uri.clone()).collect(),
        _ => Vec::new(),
    };
    urls.into_iter()
        .filter(|u| u.starts_with("nfs://"))
        .map(|url| NfsFile {
            url,
            name: harness::nfs::FILE.to_string(),
        })
        .collect()
}

/// Every file the run writes and tracks: [`written_file`], [`nfs_files`] and the plan's
/// own (`FamilyPlan::own_files`: a ramp's systems' targets).
pub fn written_places(target: &Target, accepts: Accepts, plan: &Plan) -> Vec<Place> {
    let mut places: Vec<Place> = written_file(target, accepts)
        .map(Place::Local)
        .into_iter()
        .chain(nfs_files(target).into_iter().map(Place::Nfs))
        .collect();
    for f in plan.body.own_files().into_iter().map(Place::Local) {
        if !places.contains(&f) {
            places.push(f);
        }
    }
    places
}

/// Check a path target against the rules above; an export's `fiotest` follows the
/// existing-file rule too (other targets pass).
pub fn admit(target: &Target, accepts: Accepts, plan: &Plan, allow: Allow) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    if let Target::Iscsi(url) = target {
        return lun(url, plan, allow.overwrite);
    }
    if let Target::NodeVolumes { volumes, .. } = target {
        for v in volumes {
            if let Some(l) = v.lun.as_ref().filter(|l| l.existing) {
                node_lun(v, l, plan, allow.overwrite)?;
            }
        }
    }
    for f in nfs_files(target) {
        match f.attrs() {
            Ok(Some((len, _))) => refuse_existing(
                Path::new(&f.display()),
                len,
                allow.overwrite,
                " (in the export: the file fio's nfs engine writes)",
            )?,
            Ok(None) => {}
            // Unseen: fio will say what is wrong with the export; it is never removed.
            Err(e) => eprintln!(
                "qoslab: cannot look for {} before the run: {e}",
                f.display()
            ),
        }
    }
    let Target::Path(p) = target else {
        return Ok(());
    };
    if accepts.own_directory && !p.is_dir() {
        // A family that lays out a directory of its own writes nothing else: it refuses
        // any other path itself, naming what it takes (an --overwrite would not help).
        return Ok(());
    }
    match std::fs::metadata(p) {
        Ok(m) if m.file_type().is_block_device() => device(p, allow.overwrite)?,
        Ok(m) if m.is_dir() => {
            if let Some(f) = written_file(target, accepts) {
                if let Ok(fm) = std::fs::metadata(&f) {
                    refuse_existing(
                        &f,
                        fm.len(),
                        allow.overwrite,
                        " (the file a directory target's jobs write; remove it if it is a \
                         leftover)",
                    )?;
                }
            }
        }
        _ => harness::target_files::admit_path(p, allow, "--target").map_err(anyhow::Error::msg)?,
    }
    if let Some(f) = written_file(target, accepts) {
        let jobs: Vec<(String, Vec<(String, String)>)> = plan
            .body
            .fio_jobs()
            .iter()
            .map(|j| (j.at.clone(), j.options()))
            .collect();
        if !jobs.is_empty() {
            check_space(&f, &jobs).map_err(anyhow::Error::msg)?;
        }
    }
    Ok(())
}

/// An existing file the run would write into: refused unless `overwrite`.
fn refuse_existing(f: &Path, len: u64, overwrite: bool, why: &str) -> anyhow::Result<()> {
    if overwrite {
        return Ok(());
    }
    anyhow::bail!(harness::target_files::existing(f, len, "--target", why))
}

/// A block device: never when mounted or swap; otherwise only with `overwrite`, naming
/// what it holds.
fn device(p: &Path, overwrite: bool) -> anyhow::Result<()> {
    let dev = p.display().to_string();
    let st = hosts::devices::inspect(&hosts::Host::local(), &dev)
        .map_err(|e| anyhow::anyhow!("--target {dev}: {e}"))?;
    if !st.mounts.is_empty() || st.swap {
        anyhow::bail!(
            "--target {dev}: in use ({}): a mounted or swap device is never written",
            st.reasons().join("; ")
        );
    }
    if overwrite {
        return Ok(());
    }
    let holds = match st.reasons() {
        r if r.is_empty() => "no signature was found, which does not mean it is empty".into(),
        r => format!("it holds: {}", r.join("; ")),
    };
    anyhow::bail!(
        "--target {dev}: a block device of {}: the run writes to it and its data will be \
         destroyed ({holds}). Nothing was written. --overwrite allows that",
        human(st.size_bytes)
    )
}

/// What the plan writes, when it writes: the first of its fio jobs that writes (where the
/// plan asks for it), or its family's own work (a family that starts no fio jobs of its
/// own cannot be told read-only before it runs). None: every job only reads.
fn plan_writes(plan: &Plan) -> Option<String> {
    let jobs = plan.body.fio_jobs();
    if jobs.is_empty() {
        return Some(format!("the {} family's work", plan.family));
    }
    jobs.into_iter().find(|j| j.writes()).map(|j| j.at)
}

/// An iSCSI LUN: it holds a user's blocks like a block device, so a plan that writes to
/// it runs only with `overwrite`; a plan that only reads runs without it.
fn lun(url: &str, plan: &Plan, overwrite: bool) -> anyhow::Result<()> {
    let Some(writer) = plan_writes(plan) else {
        return Ok(());
    };
    if overwrite {
        return Ok(());
    }
    let what = harness::iscsi::IscsiUrl::parse(url)
        .map(|u| u.describe())
        .unwrap_or_else(|_| "a LUN".into());
    anyhow::bail!(
        "--target {url}: an iSCSI LUN ({what}): the run writes to it ({writer}) and its data \
         will be destroyed. Nothing was written. --overwrite allows that; a plan that only \
         reads runs without it"
    )
}

/// A running node's own LUN a plan's volume is driven through (`--node`): like any LUN,
/// written only with `overwrite` (a LUN the run made is new, and is not checked).
fn node_lun(
    v: &harness::target::VolumeOnNode,
    l: &harness::target::LunOnNode,
    plan: &Plan,
    overwrite: bool,
) -> anyhow::Result<()> {
    if overwrite {
        return Ok(());
    }
    let jobs = plan.body.fio_jobs();
    let writer = if jobs.is_empty() {
        Some(format!("the {} family's work", plan.family))
    } else {
        jobs.into_iter()
            .find(|j| j.volume.as_deref() == Some(v.name.as_str()) && j.writes())
            .map(|j| j.at)
    };
    let Some(writer) = writer else {
        return Ok(());
    };
    anyhow::bail!(
        "volume {:?}: the node's own LUN {} ({}): the run writes to it ({writer}) and its data \
         will be destroyed. Nothing was written (what the run made on the node is deleted). \
         --overwrite allows that; a plan that only reads runs without it",
        v.name,
        l.path,
        harness::iscsi::IscsiUrl::parse(&l.url)
            .map(|u| u.describe())
            .unwrap_or_else(|_| l.url.clone())
    )
}

/// Where a dry run's jobs would go: a resolved target, or a description of one that
/// is made only when the run starts (the plan's volumes on `--node`).
pub enum DryTarget<'a> {
    Resolved(&'a Target),
    Described(String),
}

/// `--dry-run`: the fio jobs the run would start (one iteration) and every path it would
/// touch, printed; nothing runs, nothing is written.
pub fn dry_run(plan: &Plan, target: DryTarget, written: &[Place], db: &Path) -> String {
    let jobs = plan.body.fio_jobs();
    let tmp = std::env::temp_dir().display().to_string();
    let pid = std::process::id();
    let on = match &target {
        DryTarget::Resolved(t) => t.describe(),
        DryTarget::Described(d) => d.clone(),
    };
    let mut out = format!(
        "qoslab bench --dry-run: {} on {on}: {} fio job(s) an iteration, {} iteration(s). \
         Nothing ran and nothing was written.\n\nPaths the run would write:\n",
        plan.common.name,
        jobs.len(),
        plan.common.iterations
    );
    for place in written {
        let len = match place {
            Place::Local(f) => std::fs::metadata(f).ok().map(|m| m.len()),
            Place::Nfs(f) => f.attrs().ok().flatten().map(|a| a.0),
        };
        let what = match len {
            Some(len) => format!(
                "an existing file ({}): written into, its data destroyed (--overwrite); left in place",
                human(len)
            ),
            None => "a new file: created, removed at the end unless --keep-files".into(),
        };
        let shown = match place {
            Place::Local(f) => f.display().to_string(),
            Place::Nfs(f) => f.display(),
        };
        out.push_str(&format!("  {shown}  {what}\n"));
    }
    if let DryTarget::Resolved(Target::Iscsi(url)) = target {
        match plan_writes(plan) {
            Some(w) => out.push_str(&format!(
                "  {url}  the LUN itself, written to ({w}): its data destroyed (--overwrite)\n"
            )),
            None => out.push_str(&format!("  {url}  the LUN: only read, nothing written\n")),
        }
    }
    if let DryTarget::Resolved(Target::Path(p)) = target {
        if written.is_empty() && p.is_dir() {
            out.push_str(&format!(
                "  {}/  the {} family's own files, laid out and removed by it\n",
                p.display().to_string().trim_end_matches('/'),
                plan.family
            ));
        } else if written.is_empty() {
            out.push_str(&format!(
                "  {}  the target itself, its data destroyed\n",
                p.display()
            ));
        }
    }
    let mut temp = vec![
        ("fio", "fio's job files"),
        ("fiologs", "fio's per-window logs"),
    ];
    if matches!(target, DryTarget::Resolved(Target::Embedded)) {
        temp.push(("bench", "the embedded node's volumes and socket"));
    }
    for (tag, what) in temp {
        out.push_str(&format!(
            "  {tmp}/qoslab-{tag}-{pid}-N/  {what}, removed at the end\n"
        ));
    }
    out.push_str(&format!(
        "  {}  the results store: the run's rows\n",
        db.display()
    ));
    if jobs.is_empty() {
        out.push_str(&format!(
            "\nThe {} family's steps (it starts its own work):\n",
            plan.family
        ));
        for s in plan.steps() {
            out.push_str(&format!("  {}\n", s.label));
        }
        return out;
    }
    out.push_str("\nThe fio jobs, as fio would read them (the harness adds its log options):\n");
    for mut j in jobs {
        let reach = match &target {
            DryTarget::Resolved(Target::Embedded) => {
                let vol = j.volume.as_deref().unwrap_or("bench");
                let lun = plan
                    .common
                    .node
                    .as_ref()
                    .and_then(|n| n.iscsi.luns.iter().find(|l| l.volume == vol));
                match lun {
                    Some(l) => format!(
                        "# on volume {vol} of the embedded node (made for the run), its LUN {} \
                         over iSCSI (fio's libiscsi engine)\n",
                        l.number
                    ),
                    None => format!("# on volume {vol} of the embedded node (made for the run)\n"),
                }
            }
            DryTarget::Resolved(t) => {
                for (k, v) in t.options_for(j.volume.as_deref()) {
                    j.file.global.set(&k, v);
                }
                String::new()
            }
            DryTarget::Described(d) => format!(
                "# on volume {} of {d}\n",
                j.volume.as_deref().unwrap_or("?")
            ),
        };
        out.push_str(&format!("\n# {}\n{reach}{}", j.at, j.file.render()));
    }
    out
}
