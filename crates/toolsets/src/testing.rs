//! Test resources for the diagnosis's acceptance tests (feature `testing`): a CPU burner
//! pinned to one CPU, a hostile neighbour ([`Hostile`]: CPU hogs niced above the test and
//! an fsync writer), a loop device that detaches itself, a temp directory removed on drop
//! ([`TestDir`]), and a slow device (a loop device
//! over nbdkit's delay filter through nbdfuse) that a few requests saturate. All are torn
//! down when dropped and none outlives the test process for long: the burner runs under
//! `timeout`; the loop device has `LO_FLAGS_AUTOCLEAR`, so the kernel detaches it when its
//! last user closes it (on success, failure, panic or SIGKILL alike); nbdfuse gets SIGTERM
//! when the thread that started it ends (`PR_SET_PDEATHSIG`) and unmounts itself.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A shell busy loop pinned to one CPU with `taskset`, for at most `max_secs`.
pub struct Burner {
    child: Child,
}

impl Burner {
    pub fn pinned(cpu: u32, max_secs: u32) -> io::Result<Burner> {
        let child = Command::new("timeout")
            .arg(max_secs.to_string())
            .args(["taskset", "-c", &cpu.to_string()])
            .args(["sh", "-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Burner { child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        // timeout's process group holds the shell: signal the group, then reap.
        // SAFETY: kill(2) on the process group of the child this value owns.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A hostile neighbour for tests that must hold on a loaded machine (what
/// `scripts/stress-tests.sh --hostile` runs beside the whole real-time set).
#[derive(Debug, Clone, Copy, Default)]
pub struct HostileSpec {
    /// Shell busy loops …
    pub hogs: u32,
    /// … at this niceness (negative: above the test's own processes; needs root).
    pub nice: i32,
    /// A writer looping `dd bs=1M count=64 conv=fsync` into a directory of its own (the
    /// disk's queue and the kernel's writeback busy).
    pub writer: bool,
    /// A qemu TCG guest (Debian's kernel from `QOSLAB_CACHE`, a busybox init that spins):
    /// one emulated CPU's worth of translation, timers and I/O threads.
    pub guest: bool,
}

/// Running [`HostileSpec`] processes: each under `timeout max_secs` in its own process
/// group, killed with its group when this is dropped.
pub struct Hostile {
    children: Vec<Child>,
    _dir: TestDir,
}

/// A busybox initramfs whose init spins, for the TCG guest.
fn spinning_initramfs(dir: &Path) -> io::Result<PathBuf> {
    let root = dir.join("guest");
    std::fs::create_dir_all(root.join("bin"))?;
    let busybox = Command::new("sh")
        .args(["-c", "command -v busybox"])
        .output()?;
    let busybox = String::from_utf8_lossy(&busybox.stdout).trim().to_string();
    if busybox.is_empty() {
        return Err(io::Error::other(
            "busybox is not installed (scripts/install-deps.sh)",
        ));
    }
    std::fs::copy(&busybox, root.join("bin/busybox"))?;
    let init = root.join("init");
    std::fs::write(&init, "#!/bin/busybox sh\nwhile :; do :; done\n")?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&init, std::fs::Permissions::from_mode(0o755))?;
    let img = dir.join("guest.cpio");
    let ok = Command::new("sh")
        .current_dir(&root)
        .arg("-c")
        .arg(format!(
            "find . | cpio -o -H newc --quiet > '{}'",
            img.display()
        ))
        .status()?
        .success();
    if !ok {
        return Err(io::Error::other(
            "cpio could not pack the guest's initramfs",
        ));
    }
    Ok(img)
}

impl Hostile {
    /// The spec's processes, for at most `max_secs`.
    pub fn run(spec: HostileSpec, max_secs: u32) -> io::Result<Hostile> {
        let mut h = Hostile::start(spec.hogs, spec.nice, spec.writer, max_secs)?;
        if spec.guest {
            let cache = PathBuf::from(
                std::env::var("QOSLAB_CACHE").unwrap_or_else(|_| "/var/cache/qoslab".into()),
            );
            let q = cache.join("qemu");
            let kernel = std::fs::read_dir(cache.join("kernel/boot"))?
                .flatten()
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
                })
                .ok_or_else(|| {
                    io::Error::other("no kernel in QOSLAB_CACHE: scripts/install-deps.sh")
                })?;
            let img = spinning_initramfs(h._dir.path())?;
            let child = Command::new("timeout")
                .arg(max_secs.to_string())
                .arg(q.join("usr/bin/qemu-system-x86_64"))
                .arg("-L")
                .arg(q.join("usr/share/seabios"))
                .arg("-L")
                .arg(q.join("usr/share/qemu"))
                .args([
                    "-accel",
                    "tcg",
                    "-m",
                    "256",
                    "-nographic",
                    "-no-reboot",
                    "-nic",
                    "none",
                ])
                .arg("-kernel")
                .arg(kernel)
                .arg("-initrd")
                .arg(img)
                .args(["-append", "console=ttyS0 panic=-1 quiet"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            h.children.push(child);
        }
        Ok(h)
    }

    /// `hogs` busy loops at niceness `nice` and, with `writer`, the fsync writer.
    pub fn start(hogs: u32, nice: i32, writer: bool, max_secs: u32) -> io::Result<Hostile> {
        let dir = TestDir::new("hostile");
        let mut children = Vec::new();
        let spawn = |args: &[&str]| {
            Command::new("timeout")
                .arg(max_secs.to_string())
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
        };
        let n = nice.to_string();
        for _ in 0..hogs {
            children.push(spawn(&[
                "nice",
                "-n",
                &n,
                "sh",
                "-c",
                "while :; do :; done",
            ])?);
        }
        if writer {
            let file = dir.path().join("fsync.dat");
            let script = format!(
                "while :; do dd if=/dev/zero of='{}' bs=1M count=64 conv=fsync 2>/dev/null; done",
                file.display()
            );
            children.push(spawn(&["sh", "-c", &script])?);
        }
        Ok(Hostile {
            children,
            _dir: dir,
        })
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        for c in &mut self.children {
            // SAFETY: kill(2) on the process group of a child this value owns (timeout's).
            unsafe {
                libc::kill(-(c.id() as i32), libc::SIGKILL);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_SET_STATUS64: libc::c_ulong = 0x4C04;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_SET_DIRECT_IO: libc::c_ulong = 0x4C08;
const LO_FLAGS_AUTOCLEAR: u32 = 4;

/// `struct loop_info64` (linux/loop.h).
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// A loop device over a file of `size` bytes, detached when dropped (and by the kernel when
/// the process dies). With `direct_io` the loop device reads and writes its backing file
/// with O_DIRECT, so its requests wait for the disk under it (without, they are served
/// from the page cache at memory speed and the CPU is the limit).
pub struct LoopDevice {
    dev: Option<File>,
    path: PathBuf,
    backing: PathBuf,
    remove_backing: bool,
}

fn ioctl_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl LoopDevice {
    /// Needs root. `backing` is created (and removed on drop).
    pub fn new(backing: &Path, size: u64, direct_io: bool) -> io::Result<LoopDevice> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(backing)?;
        file.set_len(size)?;
        drop(file);
        let mut lo = LoopDevice::attach(backing, direct_io)?;
        lo.remove_backing = true;
        Ok(lo)
    }

    /// A loop device over an existing file (left in place on drop).
    pub fn attach(backing: &Path, direct_io: bool) -> io::Result<LoopDevice> {
        let file = OpenOptions::new().read(true).write(true).open(backing)?;
        let control = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/loop-control")?;
        // Another process may take the free device between the two calls: retry.
        for _ in 0..20 {
            // SAFETY: ioctl on an open fd with no argument.
            let n = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) };
            if n < 0 {
                return Err(ioctl_err("LOOP_CTL_GET_FREE"));
            }
            let path = PathBuf::from(format!("/dev/loop{n}"));
            let dev = OpenOptions::new().read(true).write(true).open(&path)?;
            // SAFETY: LOOP_SET_FD takes the backing fd as its argument.
            let rc = unsafe {
                libc::ioctl(
                    dev.as_raw_fd(),
                    LOOP_SET_FD,
                    file.as_raw_fd() as libc::c_ulong,
                )
            };
            if rc < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EBUSY) {
                    continue;
                }
                return Err(ioctl_err("LOOP_SET_FD"));
            }
            // SAFETY: all-zero is a valid loop_info64.
            let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
            info.lo_flags = LO_FLAGS_AUTOCLEAR;
            let name = backing.as_os_str().as_encoded_bytes();
            let k = name.len().min(63);
            info.lo_file_name[..k].copy_from_slice(&name[..k]);
            // SAFETY: a pointer to a live, correctly laid out loop_info64.
            let rc = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_STATUS64, &info) };
            if rc < 0 {
                let e = ioctl_err("LOOP_SET_STATUS64");
                // SAFETY: detach what was just attached.
                unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD, 0) };
                return Err(e);
            }
            if direct_io {
                // SAFETY: LOOP_SET_DIRECT_IO takes 0 or 1.
                let rc = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_DIRECT_IO, 1) };
                if rc < 0 {
                    let e = ioctl_err("LOOP_SET_DIRECT_IO");
                    // SAFETY: detach what was just attached.
                    unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD, 0) };
                    return Err(e);
                }
            }
            return Ok(LoopDevice {
                dev: Some(dev),
                path,
                backing: backing.to_path_buf(),
                remove_backing: false,
            });
        }
        Err(io::Error::other("no free loop device after 20 tries"))
    }

    /// `/dev/loopN`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `loopN`, as `/proc/diskstats` names it.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Some(dev) = self.dev.take() {
            // Detach now (autoclear would do it at the last close, which is this one
            // unless a straggler still holds the device).
            // SAFETY: ioctl on the fd this value owns.
            unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD, 0) };
        }
        if self.remove_backing {
            let _ = std::fs::remove_file(&self.backing);
        }
    }
}

/// A device that saturates: a loop device (direct I/O) over a FUSE file served by nbdfuse
/// from `nbdkit memory` behind the delay filter, so every request takes at least `delay_ms`
/// whatever the CPU does. Needs root, nbdfuse (libnbd-bin) and nbdkit.
pub struct SlowDevice {
    // Drop order: the loop device first, then the FUSE mount, then the directory.
    lo: Option<LoopDevice>,
    nbdfuse: Option<Child>,
    mnt: PathBuf,
    dir: PathBuf,
}

impl SlowDevice {
    pub fn new(dir: &Path, size_mib: u64, delay_ms: u32) -> io::Result<SlowDevice> {
        use std::os::unix::process::CommandExt;
        let mnt = dir.join("mnt");
        std::fs::create_dir_all(&mnt)?;
        let mut cmd = Command::new("nbdfuse");
        cmd.arg(&mnt)
            .args([
                "--command",
                "nbdkit",
                "-s",
                "--exit-with-parent",
                "--filter=delay",
            ])
            .arg("memory")
            .arg(format!("{size_mib}M"))
            .arg(format!("delay-read={delay_ms}ms"))
            .arg(format!("delay-write={delay_ms}ms"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let mut dev = SlowDevice {
            lo: None,
            nbdfuse: Some(child),
            mnt: mnt.clone(),
            dir: dir.to_path_buf(),
        };
        let file = mnt.join("nbd");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !file.exists() {
            if std::time::Instant::now() > deadline {
                return Err(io::Error::other("nbdfuse did not mount within 10 s"));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        dev.lo = Some(LoopDevice::attach(&file, true)?);
        Ok(dev)
    }

    pub fn path(&self) -> &Path {
        self.lo.as_ref().map(|l| l.path()).unwrap_or(Path::new(""))
    }

    pub fn name(&self) -> String {
        self.lo.as_ref().map(|l| l.name()).unwrap_or_default()
    }
}

impl Drop for SlowDevice {
    fn drop(&mut self) {
        self.lo = None;
        if let Ok(c) = std::ffi::CString::new(self.mnt.as_os_str().as_encoded_bytes()) {
            // SAFETY: a valid C string; a lazy unmount of our own mount.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if let Some(mut c) = self.nbdfuse.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir(&self.mnt);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

pub use test_support::TestDir;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_device_attaches_and_is_gone_after_drop() {
        let dir = TestDir::new("toolsets-loop");
        let backing = dir.join("backing");
        let name;
        {
            let lo = LoopDevice::new(&backing, 8 << 20, true)
                .expect("a loop device (this test needs root, as CI has)");
            name = lo.name();
            let size: u64 = std::fs::read_to_string(format!("/sys/block/{name}/size"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(size * 512, 8 << 20);
            let autoclear =
                std::fs::read_to_string(format!("/sys/block/{name}/loop/autoclear")).unwrap();
            assert_eq!(autoclear.trim(), "1");
            let dio = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio")).unwrap();
            assert_eq!(dio.trim(), "1");
        }
        assert!(
            !Path::new(&format!("/sys/block/{name}/loop")).exists(),
            "{name} still attached"
        );
        assert!(!backing.exists());
    }

    #[test]
    fn a_burner_burns_and_dies_with_its_value() {
        let b = Burner::pinned(0, 30).unwrap();
        let pid = b.pid();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        drop(b);
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }
}
