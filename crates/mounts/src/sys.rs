//! What the kernel says is attached: mounts (`/proc/self/mounts`), loop devices
//! (`/sys/block/loop*/loop/backing_file`), processes using a path (`/proc/PID/{cwd,root,
//! exe,fd,maps}`), and a process's identity (start time) so a recycled pid is never killed.

use std::fs;
use std::path::{Path, PathBuf};

/// Whether `p` is `prefix` or lies beneath it (component-wise, not string prefix).
pub fn is_under(p: &Path, prefix: &Path) -> bool {
    p.starts_with(prefix)
}

/// Undo the octal escapes (`\040` for a space) the kernel uses in `/proc/*/mounts`.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|o| o.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(o) if b[i] == b'\\' => {
                out.push((o[0] - b'0') * 64 + (o[1] - b'0') * 8 + (o[2] - b'0'));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Mount points at or beneath `prefix`, deepest first (the order to unmount them in).
pub fn mounts_under(prefix: &Path) -> Vec<PathBuf> {
    let text = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    parse_mounts_under(&text, prefix)
}

fn parse_mounts_under(text: &str, prefix: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|m| PathBuf::from(unescape(m)))
        .filter(|m| is_under(m, prefix))
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    v.dedup();
    v
}

/// Whether something is mounted exactly at `dir`.
pub fn is_mounted(dir: &Path) -> bool {
    mounts_under(dir).iter().any(|m| m == dir)
}

/// Loop devices (`/dev/loopN`) whose backing file is at or beneath `prefix`.
pub fn loops_backed_under(prefix: &Path) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return v;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        if let Some(b) = loop_backing_file(&format!("/dev/{name}")) {
            if is_under(&b, prefix) {
                v.push((format!("/dev/{name}"), b));
            }
        }
    }
    v.sort();
    v
}

/// The backing file of loop device `dev` (`/dev/loopN`), or None when it is detached.
pub fn loop_backing_file(dev: &str) -> Option<PathBuf> {
    let name = dev.strip_prefix("/dev/")?;
    let s = fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let s = s.trim_end_matches('\n');
    let s = s.strip_suffix(" (deleted)").unwrap_or(s);
    Some(PathBuf::from(s))
}

/// Whether loop device `dev` does direct I/O on its backing file.
pub fn loop_direct_io(dev: &str) -> Option<bool> {
    let name = dev.strip_prefix("/dev/")?;
    let s = fs::read_to_string(format!("/sys/block/{name}/loop/dio")).ok()?;
    Some(s.trim() == "1")
}

/// A process's start time (field 22 of `/proc/PID/stat`, clock ticks since boot): with
/// the pid it identifies a process across pid reuse.
pub fn start_time(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: split after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process `pid` that started at `start` is still alive (not a zombie).
pub fn alive(pid: u32, start: u64) -> bool {
    let Ok(s) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(close) = s.rfind(')') else {
        return false;
    };
    let mut f = s[close + 1..].split_whitespace();
    let state = f.next().unwrap_or("");
    state != "Z" && start_time(pid) == Some(start)
}

/// Send `sig` to process `pid` only if it is still the process that started at `start`.
pub fn signal_if_same(pid: u32, start: u64, sig: i32) -> bool {
    if !alive(pid, start) {
        return false;
    }
    // SAFETY: kill(2) with a checked positive pid; at worst ESRCH.
    unsafe { libc::kill(pid as i32, sig) == 0 }
}

/// Every process now: its pid and its `/proc/PID` directory (none when /proc cannot be
/// read).
pub(crate) fn processes() -> Vec<(u32, PathBuf)> {
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((pid, e.path()))
        })
        .collect()
}

/// Processes (other than this one) with their cwd, root, executable, an open file or a
/// mapping at or beneath `prefix`: they keep a file system busy.
pub fn users_of(prefix: &Path) -> Vec<u32> {
    let me = std::process::id();
    let mut v = Vec::new();
    for (pid, base) in processes() {
        if pid == me {
            continue;
        }
        let uses = |p: PathBuf| {
            fs::read_link(p)
                .map(|t| is_under(&t, prefix))
                .unwrap_or(false)
        };
        let mut hit = ["cwd", "root", "exe"].iter().any(|l| uses(base.join(l)));
        if !hit {
            if let Ok(fds) = fs::read_dir(base.join("fd")) {
                hit = fds.flatten().any(|fd| uses(fd.path()));
            }
        }
        if !hit {
            if let Ok(maps) = fs::read_to_string(base.join("maps")) {
                hit = maps
                    .lines()
                    .filter_map(|l| l.find('/').map(|i| &l[i..]))
                    .any(|p| is_under(Path::new(p), prefix));
            }
        }
        if hit {
            v.push(pid);
        }
    }
    v
}

/// SIGKILL every process using `prefix`; returns how many were signalled.
pub fn kill_users(prefix: &Path) -> usize {
    let mut n = 0;
    for pid in users_of(prefix) {
        if let Some(st) = start_time(pid) {
            if signal_if_same(pid, st, libc::SIGKILL) {
                n += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_beneath_a_prefix_deepest_first_with_escapes() {
        let text = "\
/dev/vda / ext4 rw 0 0
/dev/fuse /run/q/run-1/t0.fuse fuse rw 0 0
/dev/loop3 /run/q/run-1/t0.fs ext4 rw 0 0
/dev/loop4 /run/q/run-1/sub/deep\\040dir xfs rw 0 0
/dev/loop5 /run/q/run-10 ext4 rw 0 0
/dev/loop6 /run/qq/run-1/t0.fs ext4 rw 0 0
";
        let v = parse_mounts_under(text, Path::new("/run/q/run-1"));
        assert_eq!(
            v,
            vec![
                PathBuf::from("/run/q/run-1/sub/deep dir"),
                PathBuf::from("/run/q/run-1/t0.fuse"),
                PathBuf::from("/run/q/run-1/t0.fs"),
            ]
        );
    }

    #[test]
    fn under_is_by_component_not_by_string_prefix() {
        assert!(is_under(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(is_under(Path::new("/a/b"), Path::new("/a/b")));
        assert!(!is_under(Path::new("/a/bc"), Path::new("/a/b")));
    }

    #[test]
    fn this_process_has_a_start_time_and_a_wrong_one_is_not_alive() {
        let me = std::process::id();
        let st = start_time(me).expect("own start time");
        assert!(alive(me, st));
        assert!(!alive(me, st + 1));
        assert!(!signal_if_same(me, st + 1, 0));
    }
}
