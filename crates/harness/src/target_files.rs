//! The files a run writes on a path target (`--target DIR`: `DIR/fiotest`, dbench's
//! layout; `--target FILE`): a default size that fits the file system's free space when
//! the plan gives none, and removal at the end of what the run created (unless
//! `--keep-files`, and never a file that was there before), also on SIGINT/SIGTERM/SIGHUP.
//! The summary says what was written where ([`WrittenFiles::finish`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
            "{}: {} MiB free, too little for a test file (give fio's size= in the plan)",
            dir.display(),
            free >> 20
        ));
    }
    Ok(Some(size))
}

/// The files a run may write on a path target, noted before it starts.
pub struct WrittenFiles {
    /// (file, existed before the run).
    files: Vec<(PathBuf, bool)>,
    /// Files to remove on a signal (the ones that did not exist), emptied when kept.
    on_signal: Arc<Mutex<Vec<PathBuf>>>,
    _guard: Option<lifecycle::Guard>,
}

impl WrittenFiles {
    /// Note whether the file a run will write (`Target::written_file`) exists now.
    pub fn track(file: Option<PathBuf>) -> WrittenFiles {
        let files: Vec<(PathBuf, bool)> = file
            .into_iter()
            .map(|f| {
                let existed = f.exists();
                (f, existed)
            })
            .collect();
        let new: Vec<PathBuf> = files
            .iter()
            .filter(|(_, e)| !e)
            .map(|(f, _)| f.clone())
            .collect();
        let on_signal = Arc::new(Mutex::new(new));
        let guard = (!files.is_empty()).then(|| {
            let list = on_signal.clone();
            lifecycle::register(lifecycle::Phase::Local, move || {
                for f in list.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                    let _ = std::fs::remove_file(f);
                }
            })
        });
        WrittenFiles {
            files,
            on_signal,
            _guard: guard,
        }
    }

    /// The run is over: remove the files it created unless `keep`; one line per file
    /// saying what was written where and what became of it.
    pub fn finish(self, keep: bool) -> Vec<String> {
        let mut notes = Vec::new();
        for (f, existed) in &self.files {
            let Ok(m) = std::fs::metadata(f) else {
                continue;
            };
            let size = crate::target_files::human(m.len());
            let what = if *existed {
                "it was there before the run: kept".to_string()
            } else if keep {
                "kept (--keep-files)".to_string()
            } else {
                match std::fs::remove_file(f) {
                    Ok(()) => "removed (--keep-files keeps it)".to_string(),
                    Err(e) => format!("could not remove it: {e}"),
                }
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

/// Bytes in IEC units ("3.7 GiB").
pub fn human(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
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
            notes[0].ends_with("fiotest (2.0 KiB): removed (--keep-files keeps it)"),
            "{notes:?}"
        );
        assert!(!d.join("fiotest").exists());
        // Kept when asked.
        let w = WrittenFiles::track(t.clone());
        std::fs::write(d.join("fiotest"), b"x").unwrap();
        assert!(w.finish(true)[0].ends_with("kept (--keep-files)"));
        // There before: never removed.
        let w = WrittenFiles::track(t.clone());
        assert!(w.finish(false)[0].ends_with("it was there before the run: kept"));
        assert!(d.join("fiotest").exists());
        assert_eq!(human(3_900_000_000), "3.6 GiB");
    }
}
