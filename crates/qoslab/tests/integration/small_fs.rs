//! Small file systems to inject storage failures into a node's data directory: a loop-
//! mounted ext4 image (a real 16 TiB file-size limit), a size-limited tmpfs (a disk that
//! fills), and a read-only bind mount over a directory (new opens, creates and renames
//! fail with EROFS). Each is unmounted and removed on drop, also when the test panics;
//! mounts a SIGKILLed test run left are removed by the next one (their names carry the
//! owner's pid).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::TempDir;

const TAG: &str = "qoslab-it-smallfs-";

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn mounted_below(prefix: &str) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut v: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|m| m.contains(prefix))
        .map(str::to_string)
        .collect();
    // Innermost first.
    v.sort_by_key(|m| std::cmp::Reverse(m.len()));
    v
}

fn unmount(path: &str) {
    if sh(&["umount", path]).is_err() {
        let _ = sh(&["umount", "-l", path]);
    }
}

/// Unmount what test processes that no longer run left behind.
fn clean_stale() {
    for m in mounted_below(TAG) {
        let pid = m
            .split(TAG)
            .nth(1)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                unmount(&m);
            }
        }
    }
}

/// A mounted file system (or a bind mount), torn down on drop.
pub struct SmallFs {
    /// The mount point; create data directories below it.
    pub mnt: PathBuf,
    /// Extra mounts stacked on paths below `mnt` (read-only binds), innermost last.
    binds: Vec<PathBuf>,
    _dir: TempDir,
}

impl SmallFs {
    fn base(tag: &str) -> (TempDir, PathBuf) {
        clean_stale();
        let dir = TempDir::new(&format!("smallfs-{tag}"));
        let name = format!("{TAG}{}-{tag}", std::process::id());
        let mnt = dir.join(&name);
        std::fs::create_dir_all(&mnt).unwrap();
        (dir, mnt)
    }

    /// An ext4 file system of `mib` MiB with 4 KiB blocks in a loop-mounted image.
    pub fn ext4(mib: u64) -> SmallFs {
        let (dir, mnt) = Self::base("ext4");
        let img = dir.join("fs.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(mib << 20)
            .unwrap();
        let img_s = img.to_str().unwrap();
        sh(&["mkfs.ext4", "-q", "-F", "-b", "4096", img_s]).expect("mkfs.ext4 (e2fsprogs)");
        sh(&["mount", "-o", "loop", img_s, mnt.to_str().unwrap()]).expect("mount -o loop");
        SmallFs {
            mnt,
            binds: Vec::new(),
            _dir: dir,
        }
    }

    /// A tmpfs of `mib` MiB.
    pub fn tmpfs(mib: u64) -> SmallFs {
        let (dir, mnt) = Self::base("tmpfs");
        let opt = format!("size={mib}m,mode=0755");
        sh(&[
            "mount",
            "-t",
            "tmpfs",
            "-o",
            &opt,
            "tmpfs",
            mnt.to_str().unwrap(),
        ])
        .expect("mount tmpfs");
        SmallFs {
            mnt,
            binds: Vec::new(),
            _dir: dir,
        }
    }

    /// Fill the file system (a file `filler` written until ENOSPC); `unfill` removes it.
    pub fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.mnt.join("filler")).unwrap();
        for chunk in [1 << 20, 4096, 512, 1] {
            let buf = vec![0xa5u8; chunk];
            while f.write_all(&buf).is_ok() {}
        }
        let _ = f.sync_all();
    }

    pub fn unfill(&self) {
        std::fs::remove_file(self.mnt.join("filler")).unwrap();
    }

    /// Stack a read-only bind mount on `path` (below `mnt`): opens, creates and renames
    /// through the path fail with EROFS; descriptors opened before keep working.
    pub fn read_only(&mut self, path: &Path) {
        let p = path.to_str().unwrap();
        sh(&["mount", "--bind", p, p]).expect("bind mount");
        self.binds.push(path.to_path_buf());
        sh(&["mount", "-o", "remount,bind,ro", p]).expect("remount read-only");
    }

    /// Remove the read-only bind mounts.
    pub fn writable(&mut self) {
        while let Some(b) = self.binds.pop() {
            unmount(b.to_str().unwrap());
        }
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        self.writable();
        for m in mounted_below(self.mnt.to_str().unwrap()) {
            unmount(&m);
        }
    }
}
