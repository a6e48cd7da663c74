//! Which block devices hold a path on this machine: the devices whose `%util` and await
//! decide whether a job was device-bound.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

fn name_of(major: u64, minor: u64) -> Option<(String, Option<String>)> {
    let sys = format!("/sys/dev/block/{major}:{minor}");
    let real = std::fs::canonicalize(&sys).ok()?;
    let name = real.file_name()?.to_string_lossy().into_owned();
    // A partition's parent directory is its disk.
    let parent = if Path::new(&sys).join("partition").exists() {
        real.parent()
            .and_then(|p| p.file_name())
            .map(|p| p.to_string_lossy().into_owned())
    } else {
        None
    };
    Some((name, parent))
}

/// The `/proc/diskstats` names of the device holding `path` (a block device itself, or the
/// file system a file or directory lives on), its disk when it is a partition, and, for a
/// loop device, the devices holding its backing file. Empty when none can be found (tmpfs,
/// overlay without a block device): every device is then considered.
pub fn backing_devices(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    add(path, &mut out, 0);
    out
}

fn add(path: &Path, out: &mut Vec<String>, depth: u32) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = (libc::major(dev) as u64, libc::minor(dev) as u64);
    let Some((name, parent)) = name_of(major, minor) else {
        return;
    };
    for n in std::iter::once(name.clone()).chain(parent) {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    if depth < 4 {
        let backing = format!("/sys/block/{name}/loop/backing_file");
        if let Ok(f) = std::fs::read_to_string(backing) {
            add(Path::new(f.trim()), out, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_s_devices_are_in_diskstats_or_there_are_none() {
        let here = std::env::current_dir().unwrap();
        let devs = backing_devices(&here);
        let stats = std::fs::read_to_string("/proc/diskstats").unwrap();
        for d in &devs {
            assert!(
                stats
                    .lines()
                    .any(|l| l.split_whitespace().nth(2) == Some(d)),
                "{d} not in /proc/diskstats"
            );
        }
        assert!(backing_devices(Path::new("/no/such/path")).is_empty());
    }
}
