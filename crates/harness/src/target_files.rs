//! The files a run writes on a path target (`--target DIR`: `DIR/fiotest`, dbench's
//! layout; `--target FILE`): the bytes the plan's own jobs lay out there, checked against
//! the file system's free space before anything runs ([`check_space`]); a default size
//! that fits when a job gives none; and removal at the end of what the run created
//! (unless `--keep-files`), also on SIGINT/SIGTERM/SIGHUP. A file that was there before is
//! written only with `--overwrite` (the CLI's rule) and never removed. The summary says
//! what was written where and what became of it ([`WrittenFiles::finish`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fio::fmt::human;

/// What the command line allows on a path target: `--overwrite` (write into an existing
/// file or a block device) and `--create` (make a path that does not exist).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allow {
    pub overwrite: bool,
    pub create: bool,
}

/// The rules for a path the run writes as a whole (a file, or a block device), checked
/// before anything runs: a path that does not exist is made only with `--create`; an
/// existing file or a block device is written only with `--overwrite` (its data is
/// destroyed). `what` names the path in the message (`--target`, `system "s1": target`).
pub fn admit_path(p: &Path, allow: Allow, what: &str) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let shown = p.display();
    match std::fs::metadata(p) {
        Err(_) if allow.create => Ok(()),
        Err(_) => Err(format!(
            "{what} {shown}: no such file or directory. Nothing was written. --create makes \
             it a new file for the run (removed at the end unless --keep-files); to use a \
             directory, make it first"
        )),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) if allow.overwrite => Ok(()),
        Ok(m) if m.file_type().is_block_device() => Err(format!(
            "{what} {shown}: a block device: the run writes to it and its data will be \
             destroyed. Nothing was written. --overwrite allows that"
        )),
        Ok(m) if m.is_file() => Err(existing(p, m.len(), what, "")),
        Ok(_) => Err(format!(
            "{what} {shown}: not a file, a directory or a block device"
        )),
    }
}

/// The refusal of an existing file the run would write into (`why`: what it is to the
/// run, or "").
pub fn existing(f: &Path, len: u64, what: &str, why: &str) -> String {
    format!(
        "{what}: {} is an existing file ({}){why}: the run writes into it and its data will \
         be destroyed. Nothing was written. --overwrite allows that; or give a directory (the \
         run writes DIR/fiotest there and removes it) or a new path with --create",
        f.display(),
        human(len)
    )
}

/// The most a default size takes: fio's files are laid out before the first I/O, so a
/// default never costs more than this, nor more than half the free space.
pub const DEFAULT_SIZE_CAP: u64 = 1 << 30;

/// The smallest default size worth running (below it the target is full: an error).
pub const DEFAULT_SIZE_MIN: u64 = 16 << 20;

/// The file fio writes on a path target `p` (`Target::written_file` asks): DIR/fiotest for
/// a directory, the path itself for a file; None for block and character devices.
pub fn file_of(p: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    if p.is_dir() {
        return Some(p.join("fiotest"));
    }
    match std::fs::metadata(p) {
        Ok(m) if m.file_type().is_block_device() || m.file_type().is_char_device() => None,
        _ => Some(p.to_path_buf()),
    }
}

/// Bytes free for an unprivileged writer on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs on a NUL-terminated path into a zeroed struct we own.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64)
}

/// fio's `size` for a job on `file` that names none: half the free space, at most
/// [`DEFAULT_SIZE_CAP`], in whole MiB; None when the file already has a size (fio then
/// uses it). `Err` when the file system has less than [`DEFAULT_SIZE_MIN`] to give.
pub fn default_size(file: &Path) -> Result<Option<u64>, String> {
    if std::fs::metadata(file).is_ok_and(|m| m.len() > 0) {
        return Ok(None);
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let Some(free) = free_bytes(dir) else {
        return Ok(Some(DEFAULT_SIZE_CAP));
    };
    let size = (free / 2).min(DEFAULT_SIZE_CAP) & !((1 << 20) - 1);
    if size < DEFAULT_SIZE_MIN {
        return Err(format!(
            "{}: {} free, too little for a default-sized test file (half the free space, at \
             least {}): give the jobs a size",
            dir.display(),
            human(free),
            human(DEFAULT_SIZE_MIN)
        ));
    }
    Ok(Some(size))
}

/// The furthest byte of the file a job with fio `options` lays out (its `offset`, plus
/// `offset_increment` for each job after the first of `numjobs`, plus its `size`); a
/// percentage is of `file_len` (the file as it is). `None`: the job names no size
/// (the target's default, or the file's own length, applies).
pub fn extent(options: &[(String, String)], file_len: u64) -> Result<Option<u64>, String> {
    let get = |name: &str| {
        options
            .iter()
            .rev()
            .find(|(k, _)| fio::options::listed(k).is_some_and(|o| o.name == name))
            .map(|(_, v)| v.as_str())
    };
    let bytes = |name: &str| -> Result<u64, String> {
        match get(name) {
            None => Ok(0),
            Some(v) => match v.strip_suffix('%') {
                Some(p) => p
                    .parse::<u64>()
                    .map(|p| file_len / 100 * p.min(100))
                    .map_err(|_| format!("{name} = {v:?}")),
                None => fio::options::size_bytes(v).map_err(|e| format!("{name} = {v:?}: {e}")),
            },
        }
    };
    if get("size").is_none() {
        return Ok(None);
    }
    let jobs = get("numjobs")
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(1);
    let end = bytes("offset")?
        .saturating_add(bytes("offset_increment")?.saturating_mul(jobs.saturating_sub(1)))
        .saturating_add(bytes("size")?);
    Ok(Some(end))
}

/// Whether the jobs (a label and fio options each) fit in `file`: the furthest byte any
/// lays out against the file system's free space plus what the file holds now. Jobs
/// without a size get [`default_size`] (an error when too little is free for one).
pub fn check_space(file: &Path, jobs: &[(String, Vec<(String, String)>)]) -> Result<(), String> {
    let len = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    let mut need: Option<(u64, &str)> = None;
    let mut no_size: Vec<&str> = Vec::new();
    for (label, opts) in jobs {
        match extent(opts, len).map_err(|e| format!("{label}: {e}"))? {
            Some(n) if need.is_none_or(|(m, _)| n > m) => need = Some((n, label)),
            Some(_) => {}
            None => no_size.push(label),
        }
    }
    if let Some(first) = no_size.first() {
        if let Some(d) = default_size(file).map_err(|e| format!("{first} names no size: {e}"))? {
            if need.is_none_or(|(m, _)| d > m) {
                need = Some((d, first));
            }
        }
    }
    let Some((need, label)) = need else {
        return Ok(());
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let Some(free) = free_bytes(dir) else {
        return Ok(());
    };
    if need > free.saturating_add(len) {
        return Err(format!(
            "{}: the plan's jobs lay out {} there ({label}), and its file system has {} free{}: \
             give the jobs a smaller size, or another target",
            file.display(),
            human(need),
            human(free),
            if len > 0 {
                format!(" beside the file's {}", human(len))
            } else {
                String::new()
            }
        ));
    }
    Ok(())
}

/// Where a file a run writes lives: this machine, or an NFS export (`--target nfs://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Local(PathBuf),
    Nfs(crate::nfs_client::NfsFile),
}

/// A file's length and modification time: whether a run wrote it.
type Stamp = (u64, Option<std::time::SystemTime>);

impl Place {
    /// Its stamp, `None` when it is not there (or cannot be seen: `Err`).
    fn stamp(&self) -> Result<Option<Stamp>, String> {
        match self {
            Place::Local(f) => Ok(std::fs::metadata(f)
                .ok()
                .map(|m| (m.len(), m.modified().ok()))),
            Place::Nfs(f) => Ok(f.attrs()?.map(|(len, (s, ns))| {
                let t = std::time::UNIX_EPOCH + std::time::Duration::new(s.into(), ns);
                (len, Some(t))
            })),
        }
    }

    fn remove(&self) -> Result<(), String> {
        match self {
            Place::Local(f) => std::fs::remove_file(f).map_err(|e| e.to_string()),
            Place::Nfs(f) => f.remove(),
        }
    }

    fn display(&self) -> String {
        match self {
            Place::Local(f) => f.display().to_string(),
            Place::Nfs(f) => f.display(),
        }
    }
}

/// A file before the run: absent (the run creates it: removed after), there (written only
/// with `--overwrite`, never removed), or not seen (never removed).
#[derive(Debug, Clone, PartialEq)]
enum Before {
    Absent,
    There(Stamp),
    Unseen(String),
}

/// The files a run may write on its target, noted before it starts.
pub struct WrittenFiles {
    files: Vec<(Place, Before)>,
    /// Files to remove on a signal (the ones that did not exist), emptied when kept.
    on_signal: Arc<Mutex<Vec<Place>>>,
    _guard: Option<lifecycle::Guard>,
}

impl WrittenFiles {
    /// Note whether the file a run will write (`Target::written_file`) exists now.
    pub fn track(file: Option<PathBuf>) -> WrittenFiles {
        Self::track_places(file.map(Place::Local).into_iter().collect())
    }

    /// Note whether each of `places` exists now (one that cannot be seen counts as there:
    /// it is never removed).
    pub fn track_places(places: Vec<Place>) -> WrittenFiles {
        let files: Vec<(Place, Before)> = places
            .into_iter()
            .map(|p| {
                let before = match p.stamp() {
                    Ok(None) => Before::Absent,
                    Ok(Some(s)) => Before::There(s),
                    Err(e) => Before::Unseen(e),
                };
                (p, before)
            })
            .collect();
        let new: Vec<Place> = files
            .iter()
            .filter(|(_, before)| *before == Before::Absent)
            .map(|(f, _)| f.clone())
            .collect();
        let on_signal = Arc::new(Mutex::new(new));
        let guard = (!files.is_empty()).then(|| {
            let list = on_signal.clone();
            let remote = files.iter().any(|(p, _)| matches!(p, Place::Nfs(_)));
            let phase = if remote {
                lifecycle::Phase::Remote
            } else {
                lifecycle::Phase::Local
            };
            lifecycle::register(phase, move || {
                for f in list.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                    let _ = f.remove();
                }
            })
        });
        WrittenFiles {
            files,
            on_signal,
            _guard: guard,
        }
    }

    /// The run is over: remove the files it created unless `keep`; one line per file it
    /// wrote, saying where and what became of it (a file it did not touch: no line).
    pub fn finish(self, keep: bool) -> Vec<String> {
        let mut notes = Vec::new();
        for (f, before) in &self.files {
            let now = match f.stamp() {
                Ok(Some(now)) => now,
                Ok(None) => continue,
                // Never silent: the run may have written it, and nothing was removed.
                Err(e) => {
                    let when = match before {
                        Before::Unseen(_) => "before or after the run",
                        _ => "after the run",
                    };
                    notes.push(format!(
                        "could not see {} {when} ({e}): the run may have written it; \
                         nothing removed",
                        f.display()
                    ));
                    continue;
                }
            };
            let size = human(now.0);
            let what = match before {
                Before::There(b) if *b == now => continue,
                Before::There(_) => "there before the run: written into (--overwrite), its \
                                     former data overwritten; left in place"
                    .to_string(),
                Before::Unseen(e) => {
                    format!("left in place (whether it was there before is unknown: {e})")
                }
                Before::Absent if keep => "created by the run: kept (--keep-files)".to_string(),
                Before::Absent => match f.remove() {
                    Ok(()) => "created by the run: removed (--keep-files keeps it)".to_string(),
                    Err(e) => format!("created by the run: could not remove it: {e}"),
                },
            };
            notes.push(format!("wrote {} ({size}): {what}", f.display()));
        }
        self.on_signal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_removes_what_it_wrote_and_keeps_what_was_there() {
        let dir = test_support::TestDir::new("target-files");
        let d = dir.path().to_path_buf();
        let t = file_of(&d);
        assert_eq!(t, Some(d.join("fiotest")));
        let size = default_size(&d.join("fiotest")).unwrap().unwrap();
        assert!(
            (DEFAULT_SIZE_MIN..=DEFAULT_SIZE_CAP).contains(&size),
            "{size}"
        );
        assert_eq!(size % (1 << 20), 0);
        // Written by the run: removed, and said so.
        let w = WrittenFiles::track(t.clone());
        std::fs::write(d.join("fiotest"), vec![0u8; 2048]).unwrap();
        assert_eq!(default_size(&d.join("fiotest")).unwrap(), None);
        let notes = w.finish(false);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].ends_with(
                "fiotest (2.0 KiB): created by the run: removed (--keep-files keeps it)"
            ),
            "{notes:?}"
        );
        assert!(!d.join("fiotest").exists());
        // Kept when asked.
        let w = WrittenFiles::track(t.clone());
        std::fs::write(d.join("fiotest"), b"x").unwrap();
        assert!(w.finish(true)[0].ends_with("created by the run: kept (--keep-files)"));
        // There before and not written: no line; written into: said so, never "kept".
        let w = WrittenFiles::track(t.clone());
        assert!(w.finish(false).is_empty());
        let w = WrittenFiles::track(t.clone());
        std::fs::write(d.join("fiotest"), b"xy").unwrap();
        let notes = w.finish(false);
        assert!(
            notes[0].ends_with("fiotest (2 B): there before the run: written into (--overwrite), its former data overwritten; left in place"),
            "{notes:?}"
        );
        assert!(d.join("fiotest").exists());
        assert_eq!(human(3_900_000_000), "3.6 GiB");
    }

    #[test]
    fn a_file_that_cannot_be_seen_is_never_passed_over_in_silence() {
        // An export nothing answers for (port 1 on loopback: refused at once).
        let f = crate::nfs_client::NfsFile {
            url: "nfs://127.0.0.1/gone?nfsport=1&mountport=1".into(),
            name: "fiotest".into(),
        };
        let notes = WrittenFiles::track_places(vec![Place::Nfs(f)]).finish(false);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "could not see nfs://127.0.0.1/gone/fiotest before or after the run ("
            ) && notes[0].ends_with("): the run may have written it; nothing removed"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_plans_sizes_decide_what_it_needs() {
        let o = |kv: &[(&str, &str)]| -> Vec<(String, String)> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(extent(&o(&[("rw", "read")]), 0), Ok(None));
        assert_eq!(extent(&o(&[("size", "16M")]), 0), Ok(Some(16 << 20)));
        // dbench's sequential jobs: 4 jobs 500 MiB apart, 2 GiB each: 3.5 GiB.
        let seq = o(&[
            ("size", "2G"),
            ("numjobs", "4"),
            ("offset_increment", "500M"),
        ]);
        assert_eq!(extent(&seq, 0), Ok(Some(3 * (500 << 20) + (2 << 30))));
        assert_eq!(
            extent(&o(&[("size", "50%"), ("offset", "1M")]), 100 << 20),
            Ok(Some(51 << 20))
        );
        assert_eq!(
            extent(&o(&[("blocksize", "4k"), ("size", "1k")]), 0),
            Ok(Some(1024))
        );
        // The tmpfs cases: 16 MiB fits 20 MiB, 64 MiB does not fit 40 MiB.
        let dir = test_support::TestDir::new("space");
        let file = dir.path().join("fiotest");
        let free = free_bytes(dir.path()).unwrap();
        let job = |size: u64| vec![("w".to_string(), o(&[("size", &size.to_string())]))];
        assert!(check_space(&file, &job(free / 2)).is_ok());
        let e = check_space(&file, &job(free + (1 << 30))).unwrap_err();
        assert!(
            e.contains("the plan's jobs lay out") && e.contains("(w)"),
            "{e}"
        );
    }
}
