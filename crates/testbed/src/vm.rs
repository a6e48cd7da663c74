//! Qemu guest hosts: a load generator with a Linux kernel NFS client, which this machine's
//! kernel (and so a namespace host) lacks.
//!
//! ```text
//!  ns qltb-<tag>-sw: bridge ── tap qt<tag>vN (tc htb: the guest's ingress)
//!                              └─ qemu-system-x86_64 (TCG, run in the switch namespace)
//!                                   Debian's kernel + a busybox initramfs:
//!                                   eth0 (e1000) 10.213.Y.(10+N), hostname hN,
//!                                   sshd on :22 (the bed's host key and client key),
//!                                   fio, the NFS client modules (mount -t nfs)
//! ```
//!
//! The initramfs carries this machine's own `sshd` and `fio` with every library `ldd`
//! names (same paths as here), static busybox for the shell and its tools, and the kernel
//! modules of the NFS client and the NIC (a test that attaches iSCSI LUNs adds the
//! initiator's: [`ISCSI_MODULES`], [`ISCSI_PROGRAMS`]; a bed's guests carry them and
//! `wipefs` with `Spec::vm_iscsi`). One image per bed, shared by its guests: each
//! guest reads its name and address from the kernel command line. The qemu process lives
//! in the switch namespace (its tap is there), so the bed's teardown kills it with the
//! namespace's other processes; it also dies with the thread that built the bed (parent
//! death signal), and a bed killed outright is cleaned by the next build like any other.
//!
//! Kernel and qemu come from `QOSLAB_CACHE` (default `/var/cache/qoslab`), where
//! `scripts/install-deps.sh` unpacks Debian's `linux-image-amd64` and `qemu-system-x86`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const HINT: &str =
    "run scripts/install-deps.sh, which unpacks qemu-system-x86 and Debian's kernel into QOSLAB_CACHE";

/// The kernel modules of the NFS client (in load order) and the guest's NIC.
const MODULES: [&str; 9] = [
    "netfs", "fscache", "sunrpc", "grace", "lockd", "nfs_acl", "nfs", "nfsv3", "e1000",
];

/// Programs copied into the guest with their libraries (`ldd`), at the same paths.
const PROGRAMS: [&str; 2] = ["sshd", "fio"];

/// The Linux iSCSI initiator's kernel side (the transport, libiscsi, iscsi_tcp), the SCSI
/// disk with its integrity helpers, and ext4 with its journal, in load order: what a
/// guest adds ([`add_modules`]) to log in with open-iscsi and make a file system on a LUN.
pub const ISCSI_MODULES: [&str; 19] = [
    "crct10dif_common",
    "crct10dif_generic",
    "crc-t10dif",
    "crc64",
    "crc64_rocksoft_generic",
    "crc64-rocksoft",
    "t10-pi",
    "scsi_common",
    "scsi_mod",
    "sd_mod",
    "scsi_transport_iscsi",
    "libiscsi",
    "libiscsi_tcp",
    "iscsi_tcp",
    "crc16",
    "mbcache",
    "jbd2",
    "crc32c_generic",
    "ext4",
];

/// open-iscsi's daemon and tool, mkfs.ext4 and fio: the initiator's user space.
pub const ISCSI_PROGRAMS: [&str; 4] = ["iscsid", "iscsiadm", "mkfs.ext4", "fio"];

/// Guest RAM, MiB: the initramfs (~70 MiB, most of it fio's and sshd's libraries) is
/// unpacked into it, and fio's buffers and the NFS client's page cache live beside it.
const GUEST_MIB: u32 = 768;

/// `QOSLAB_CACHE` (default `/var/cache/qoslab`).
fn cache() -> PathBuf {
    PathBuf::from(std::env::var("QOSLAB_CACHE").unwrap_or_else(|_| "/var/cache/qoslab".into()))
}

/// qemu-system-x86_64 and its firmware directories.
fn qemu() -> Result<(PathBuf, Vec<PathBuf>), String> {
    let q = cache().join("qemu");
    let bin = q.join("usr/bin/qemu-system-x86_64");
    if !bin.is_file() {
        return Err(format!("{} missing: {HINT}", bin.display()));
    }
    Ok((
        bin,
        vec![q.join("usr/share/seabios"), q.join("usr/share/qemu")],
    ))
}

/// Debian's kernel image and its modules directory.
fn kernel() -> Result<(PathBuf, PathBuf), String> {
    let k = cache().join("kernel");
    let boot = k.join("boot");
    let vmlinuz = std::fs::read_dir(&boot)
        .map_err(|e| format!("{}: {e}: {HINT}", boot.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .ok_or_else(|| format!("no vmlinuz in {}: {HINT}", boot.display()))?;
    let version = vmlinuz
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .trim_start_matches("vmlinuz-")
        .to_string();
    Ok((vmlinuz, k.join("lib/modules").join(version)))
}

/// `NAME.ko` somewhere under `dir`.
fn find_module(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = find_module(&p, name) {
                return Some(f);
            }
        } else if p.file_name().and_then(|n| n.to_str()) == Some(&format!("{name}.ko")) {
            return Some(p);
        }
    }
    None
}

fn copy(src: &Path, root: &Path) -> Result<(), String> {
    let rel = src.strip_prefix("/").unwrap_or(src);
    let dst = root.join(rel);
    if let Some(p) = dst.parent() {
        std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    std::fs::copy(src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
    Ok(())
}

/// The shared libraries `ldd` says `prog` loads (and the loader).
fn libraries(prog: &str) -> Result<Vec<PathBuf>, String> {
    let out = crate::run("ldd", &[prog])?;
    if out.contains("not found") {
        return Err(format!("{prog}: a library is missing:\n{out}"));
    }
    Ok(out
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let p = match l.split_once("=>") {
                Some((_, r)) => r.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            p.starts_with('/').then(|| PathBuf::from(p))
        })
        .collect())
}

const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin:/usr/local/bin:/usr/local/sbin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /run/sshd; mount -t devpts devpts /dev/pts; mount -t tmpfs tmp /tmp
for m in $(cat /modules/order); do insmod /modules/$m.ko || echo "QOSLAB-GUEST insmod $m failed"; done
for w in $(cat /proc/cmdline); do case $w in qoslab.name=*) name=${w#*=};; qoslab.addr=*) addr=${w#*=};; esac; done
hostname "$name"
ip link set lo up; ip link set eth0 up; ip addr add "$addr" dev eth0
/usr/sbin/sshd -e -f /etc/ssh/sshd_config && echo "QOSLAB-GUEST sshd up on $addr"
while true; do sleep 3600; done
"#;

const SSHD_CONFIG: &str =
    "Port 22\nHostKey /etc/ssh/host_key\nAuthorizedKeysFile /root/.ssh/authorized_keys\n\
PermitRootLogin prohibit-password\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPrintMotd no\nLogLevel ERROR\n\
MaxSessions 64\nMaxStartups 64:30:128\n";

/// Lay out a guest's root file system in `root`: its directories, static busybox, the
/// NFS client's and the NIC's modules with their load order (`/modules/order`), and
/// `/init` running `init`. The bed's guests and the kernel client test both boot one.
pub fn guest_root(root: &Path, init: &str) -> Result<(), String> {
    for d in [
        "bin",
        "modules",
        "proc",
        "sys",
        "dev",
        "tmp",
        "mnt",
        "run",
        "root/.ssh",
    ] {
        std::fs::create_dir_all(root.join(d)).map_err(|e| format!("{d}: {e}"))?;
    }
    std::fs::copy("/bin/busybox", root.join("bin/busybox"))
        .map_err(|e| format!("/bin/busybox: {e} (install busybox-static)"))?;
    copy_modules(root, &MODULES)?;
    write(&root.join("modules/order"), &MODULES.join("\n"))?;
    write(&root.join("init"), init)?;
    set_mode(&root.join("init"), 0o755)
}

/// Pack `root` into a newc initramfs at `img`, then remove `root`.
pub fn pack(root: &Path, img: &Path) -> Result<(), String> {
    crate::run(
        "sh",
        &[
            "-c",
            &format!(
                "cd '{}' && find . | cpio -o -H newc --quiet > '{}'",
                root.display(),
                img.display()
            ),
        ],
    )?;
    let _ = std::fs::remove_dir_all(root);
    Ok(())
}

fn write(p: &Path, text: &str) -> Result<(), String> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))
}

fn set_mode(p: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// Copy `programs` (found on PATH or in /usr/sbin, /sbin) into the guest root `root` with
/// every library `ldd` names, at the same paths.
pub fn add_programs(root: &Path, programs: &[&str]) -> Result<(), String> {
    for prog in programs {
        let path = crate::which(prog)
            .or_else(|| {
                ["/usr/sbin", "/sbin"]
                    .iter()
                    .map(|d| format!("{d}/{prog}"))
                    .find(|p| Path::new(p).is_file())
            })
            .ok_or_else(|| format!("{prog} not found on this machine: {HINT}"))?;
        copy(Path::new(&path), root)?;
        for lib in libraries(&path)? {
            copy(&lib, root)?;
        }
    }
    Ok(())
}

/// Add `modules` (after [`guest_root`]'s own) to the guest root `root`: copied from
/// Debian's kernel and appended to `/modules/order`, which `/init` loads in order.
pub fn add_modules(root: &Path, modules: &[&str]) -> Result<(), String> {
    copy_modules(root, modules)?;
    let order = root.join("modules/order");
    let mut all =
        std::fs::read_to_string(&order).map_err(|e| format!("{}: {e}", order.display()))?;
    for m in modules {
        all.push('\n');
        all.push_str(m);
    }
    write(&order, &all)
}

/// Copy `modules` from Debian's kernel into the guest root's `/modules` (`NAME.ko`).
fn copy_modules(root: &Path, modules: &[&str]) -> Result<(), String> {
    let (_, dir) = kernel()?;
    for m in modules {
        let src = find_module(&dir, m)
            .ok_or_else(|| format!("module {m}.ko not in {}: {HINT}", dir.display()))?;
        std::fs::copy(&src, root.join(format!("modules/{m}.ko")))
            .map_err(|e| format!("{}: {e}", src.display()))?;
    }
    Ok(())
}

/// Build the guests' initramfs in `dir` from the bed's keys (`dir/host_key`,
/// `dir/authorized_keys`), with the iSCSI initiator if `iscsi`; returns the image.
pub fn initramfs(dir: &Path, iscsi: bool) -> Result<PathBuf, String> {
    let root = dir.join("guest-root");
    guest_root(&root, INIT)?;
    add_programs(&root, &PROGRAMS)?;
    if iscsi {
        add_modules(&root, &ISCSI_MODULES)?;
        // fio is in the image already; the block suites' device check reads signatures
        // with wipefs (hosts::devices).
        let more: Vec<&str> = ISCSI_PROGRAMS
            .into_iter()
            .filter(|p| !PROGRAMS.contains(p))
            .chain(["wipefs"])
            .collect();
        add_programs(&root, &more)?;
    }
    // sshd finds users through NSS; glibc loads libnss_files for /etc/passwd.
    let nss = Path::new("/lib/x86_64-linux-gnu/libnss_files.so.2");
    if nss.exists() {
        copy(nss, &root)?;
    }
    write(
        &root.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/bin/false\n",
    )?;
    write(&root.join("etc/group"), "root:x:0:\nnogroup:x:65534:\n")?;
    write(&root.join("etc/shadow"), "root:*:1::::::\nsshd:*:1::::::\n")?;
    write(&root.join("etc/ssh/sshd_config"), SSHD_CONFIG)?;
    std::fs::copy(dir.join("host_key"), root.join("etc/ssh/host_key"))
        .map_err(|e| format!("host key: {e}"))?;
    set_mode(&root.join("etc/ssh/host_key"), 0o600)?;
    std::fs::copy(
        dir.join("authorized_keys"),
        root.join("root/.ssh/authorized_keys"),
    )
    .map_err(|e| format!("authorized_keys: {e}"))?;
    let img = dir.join("guest-initrd.cpio");
    pack(&root, &img)?;
    Ok(img)
}

/// qemu and its arguments for a guest of `mib` MiB (one CPU, no display) booting Debian's
/// kernel with `initrd`: its console on `serial` (qemu's `-serial`), `cmdline` after the
/// quiet console settings, one e1000 NIC on `netdev` (qemu's `-netdev`, id `n0`) with
/// `nic` appended to its `-device` (`,mac=...`). The caller puts a launcher in front
/// (`ip netns exec`, `timeout`).
pub fn qemu_args(
    initrd: &Path,
    mib: u32,
    serial: &str,
    cmdline: &str,
    netdev: &str,
    nic: &str,
) -> Result<(PathBuf, Vec<OsString>), String> {
    let (bin, firmware) = qemu()?;
    let (vmlinuz, _) = kernel()?;
    let mut a: Vec<OsString> = Vec::new();
    for f in firmware {
        a.extend(["-L".into(), f.into()]);
    }
    for x in [
        "-m",
        &mib.to_string(),
        "-smp",
        "1",
        "-nographic",
        "-no-reboot",
        "-nodefaults",
        "-serial",
        serial,
    ] {
        a.push(x.into());
    }
    a.extend(["-kernel".into(), vmlinuz.into()]);
    a.extend(["-initrd".into(), initrd.into()]);
    a.push("-append".into());
    a.push(format!("console=ttyS0 panic=-1 quiet loglevel=3 {cmdline}").into());
    a.extend(["-netdev".into(), format!("{netdev},id=n0").into()]);
    a.extend([
        "-device".into(),
        format!("e1000,netdev=n0,romfile={nic}").into(),
    ]);
    Ok((bin, a))
}

/// The process `cmd` starts dies with the thread that starts it (`PR_SET_PDEATHSIG`).
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl in the child before exec (async-signal-safe). Launchers (`ip netns
    // exec`, `timeout`) exec qemu in the same process or stay its parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Boot guest `name` on tap `tap` of the switch namespace `sw`, at `addr/24`; its console
/// goes to `console`.
pub fn boot(
    sw: &str,
    tap: &str,
    initrd: &Path,
    name: &str,
    addr: &str,
    mac: &str,
    console: &Path,
) -> Result<Child, String> {
    let (bin, args) = qemu_args(
        initrd,
        GUEST_MIB,
        &format!("file:{}", console.display()),
        &format!("qoslab.name={name} qoslab.addr={addr}/24"),
        &format!("tap,ifname={tap},script=no,downscript=no"),
        &format!(",mac={mac}"),
    )?;
    let mut cmd = crate::in_ns_daemon(sw, bin);
    cmd.args(args);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
        std::fs::File::create(console.with_extension("qemu.log"))
            .map_err(|e| format!("{}: {e}", console.display()))?,
    );
    die_with_parent(&mut cmd);
    cmd.spawn().map_err(|e| format!("starting qemu: {e}"))
}

/// The last lines of a guest's console and qemu's own messages (for an error).
pub fn console_tail(console: &Path) -> String {
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let text = format!(
        "{}{}",
        read(console),
        read(&console.with_extension("qemu.log"))
    );
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
