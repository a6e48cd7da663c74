//! Real hosts on one machine, for the system suites' tests.
//!
//! ```text
//!  root ns: qt<tag>c 10.213.Y.1 (the coordinator: ssh, fio --client)
//!     │ veth
//!  ns qltb-<tag>-sw: bridge ── port qt<tag>hNb (tc htb: host N's ingress) ── veth ──┐
//!  ns qltb-<tag>-hN: eth0 10.213.Y.(10+N) (tc htb: host N's egress, per-peer classes)
//!                    own UTS name hN, sshd on :22 (host key + client key made for the run)
//! ```
//!
//! A link's rate holds both ways (egress shaped on the host's eth0, ingress on its bridge
//! port). A slow *pair* is a class on each end's egress matched by the peer's address
//! (`u32 match ip dst`), so only traffic between those two hosts is held to it.
//!
//! Every name carries the run's tag (pid and a counter); everything is undone when the
//! [`Testbed`] drops, and on SIGINT/SIGTERM/SIGHUP through `hosts::cleanup`. A run killed
//! with SIGKILL leaves its owner file behind (`/tmp/qoslab-testbed/<tag>/owner`: pid and
//! start time); the next [`Testbed::build`] (or [`clean_stale`]) finds the owner gone and
//! removes that run's namespaces, processes, loop devices and files. Only the bed's own
//! addresses (10.213.Y.0/24 on its own interfaces) ever carry traffic.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

pub mod vm;

const BASE: &str = "/tmp/qoslab-testbed";
const NS_PREFIX: &str = "qltb-";

/// What to build.
#[derive(Debug, Clone)]
pub struct Spec {
    pub hosts: usize,
    /// Each host's link rate, Mbit/s, both directions.
    pub link_mbit: u32,
    /// Pairs `(a, b, mbit)` held to a lower rate, both directions.
    pub slow_pairs: Vec<(usize, usize, u32)>,
    /// Loop devices per host (namespace hosts only).
    pub disks_per_host: usize,
    pub disk_bytes: u64,
    /// Qemu guest hosts after the namespace hosts (`h<hosts>`, ...): Debian's kernel with
    /// its NFS client, sshd and fio ([`vm`]). Their link is shaped toward the guest only
    /// (on its tap); no slow pairs or disks.
    pub vm_hosts: usize,
    /// The guests also carry the Linux iSCSI initiator (`vm::ISCSI_MODULES`,
    /// `vm::ISCSI_PROGRAMS`: iscsid, iscsiadm), for suites that log in to LUNs.
    pub vm_iscsi: bool,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            hosts: 3,
            link_mbit: 1000,
            slow_pairs: Vec::new(),
            disks_per_host: 0,
            disk_bytes: 128 << 20,
            vm_hosts: 0,
            vm_iscsi: false,
        }
    }
}

/// A loop device and its backing file.
#[derive(Debug, Clone, Serialize)]
pub struct LoopDisk {
    pub dev: String,
    pub backing: PathBuf,
}

/// One namespace host.
#[derive(Debug, Clone, Serialize)]
pub struct BedHost {
    /// The ssh alias in the bed's ssh_config (`h0`, `h1`, ...), also its hostname.
    pub name: String,
    pub ns: String,
    pub addr: String,
    pub disks: Vec<LoopDisk>,
    /// A qemu guest ([`vm`]) rather than a namespace; `ns` is then the switch's.
    pub qemu: bool,
}

/// What must be undone (shared with the signal handler).
#[derive(Debug, Default, Clone)]
struct Resources {
    dir: PathBuf,
    namespaces: Vec<String>,
    root_links: Vec<String>,
    loops: Vec<String>,
    sshd: Vec<u32>,
    vms: Vec<u32>,
}

/// A running bed; dropped = gone.
pub struct Testbed {
    pub tag: String,
    pub dir: PathBuf,
    pub ssh_config: PathBuf,
    pub coordinator_addr: String,
    pub hosts: Vec<BedHost>,
    res: Arc<Mutex<Resources>>,
    sshd: Vec<Child>,
    vms: Vec<Child>,
    _guard: Option<lifecycle::Guard>,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);
static BUILD: Mutex<()> = Mutex::new(());

fn base36(mut n: u64) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = Vec::new();
    loop {
        s.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    s.reverse();
    String::from_utf8(s).unwrap_or_default()
}

/// Run a program; its stdout, or an error with its stderr.
pub fn run(prog: &str, args: &[&str]) -> Result<String, String> {
    let o = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!(
            "{prog} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// A new ed25519 key pair without a passphrase at `path` (and `path.pub`).
pub fn keygen(path: &Path) -> Result<(), String> {
    let f = path.display().to_string();
    let args = [
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "qoslab-testbed",
        "-f",
        &f,
    ];
    run("ssh-keygen", &args).map(|_| ())
}

fn ip(args: &[&str]) -> Result<String, String> {
    run("ip", args)
}

fn in_ns(ns: &str, prog: &str, args: &[&str]) -> Result<String, String> {
    let mut a = vec!["netns", "exec", ns, prog];
    a.extend_from_slice(args);
    ip(&a)
}

/// `ip netns exec NS PROG ...` for a process that outlives the call (a host's sshd, a
/// guest's qemu); the caller adds PROG's arguments. `ip netns exec` gives it a mount
/// namespace of its own, a copy of this machine's mounts at that moment; where mounts are
/// private (no `shared:` in /proc/self/mountinfo), an unmount never reaches the copy, so a
/// file system another test mounted under /tmp (ext4 on a loop device over nbdfuse) would
/// stay alive, and its loop device busy past that test's teardown, until this process
/// exits. So the copies of the mounts under /tmp are lazily unmounted first (deepest
/// first): a bed's process never uses them (its run directories are plain directories,
/// and what it mounts later it mounts in its own namespace).
pub(crate) fn in_ns_daemon(ns: &str, prog: impl AsRef<std::ffi::OsStr>) -> Command {
    const DROP_TMP_MOUNTS: &str = "awk '$5 ~ \"^/tmp/\" {print $5}' /proc/self/mountinfo \
        | sort -r | while read -r m; do umount -l \"$(printf '%b' \"$m\")\" 2>/dev/null; done;";
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "sh", "-c"])
        .arg(format!("{DROP_TMP_MOUNTS} exec \"$0\" \"$@\""))
        .arg(prog);
    c
}

/// `pid starttime` of a process (start time in clock ticks since boot, field 22 of stat).
fn owner_id(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let mut fields = after.split_whitespace();
    // A zombie (killed, not yet reaped) owns nothing any more.
    if matches!(fields.next()?, "Z" | "X") {
        return None;
    }
    let start = fields.nth(18)?;
    Some(format!("{pid} {start}"))
}

fn list_namespaces() -> Vec<String> {
    ip(&["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

fn teardown(r: &Resources) {
    for pid in r.sshd.iter().chain(&r.vms) {
        unsafe_kill(*pid);
    }
    stop_namespace_processes(&r.namespaces);
    for l in &r.loops {
        let _ = run("losetup", &["-d", l]);
    }
    // Hosts first, the switch last (its veth ends go with it).
    for ns in r.namespaces.iter().rev() {
        let _ = ip(&["netns", "del", ns]);
    }
    for l in &r.root_links {
        let _ = ip(&["link", "del", l]);
    }
    if r.dir.starts_with(BASE) {
        let _ = std::fs::remove_dir_all(&r.dir);
    }
}

fn unsafe_kill(pid: u32) {
    let _ = run("kill", &["-KILL", &pid.to_string()]);
}

fn namespace_pids(namespaces: &[String]) -> Vec<String> {
    namespaces
        .iter()
        .flat_map(|ns| {
            ip(&["netns", "pids", ns])
                .unwrap_or_default()
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Everything running in the namespaces (sshd sessions, iperf3, fio servers): SIGTERM
/// first, so a session's shell runs its exit traps (a shell killed outright can leave a
/// lock file behind on the machine's shared file system), SIGKILL for what is left after
/// two seconds.
fn stop_namespace_processes(namespaces: &[String]) {
    let pids = namespace_pids(namespaces);
    if pids.is_empty() {
        return;
    }
    let mut args = vec!["-TERM"];
    args.extend(pids.iter().map(String::as_str));
    let _ = run("kill", &args);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && !namespace_pids(namespaces).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in namespace_pids(namespaces) {
        if let Ok(p) = pid.parse() {
            unsafe_kill(p);
        }
    }
}

/// Remove what killed runs left behind: namespaces, processes, loop devices, files of every
/// tag whose owner process is gone. Returns the tags removed.
pub fn clean_stale() -> Vec<String> {
    match machine_lock() {
        Ok(_lock) => clean_stale_locked(),
        Err(e) => {
            eprintln!("testbed: {e}");
            Vec::new()
        }
    }
}

/// The machine-wide build lock (`/tmp/qoslab-testbed/.lock`): beds are built by several
/// processes at once (nextest runs each test in its own), and one's stale-run sweep must
/// never see another's bed half made (a directory without its owner file yet), nor two
/// beds pick the same free subnet. Held from the sweep to the coordinator's address.
fn machine_lock() -> Result<std::fs::File, String> {
    std::fs::create_dir_all(BASE).map_err(|e| format!("{BASE}: {e}"))?;
    let path = Path::new(BASE).join(".lock");
    let f = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.lock().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(f)
}

fn clean_stale_locked() -> Vec<String> {
    let mut removed = Vec::new();
    let namespaces = list_namespaces();
    let mut tags: Vec<String> = std::fs::read_dir(BASE)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    for ns in &namespaces {
        if let Some(tag) = ns.strip_prefix(NS_PREFIX).and_then(|r| r.split('-').next()) {
            if !tags.iter().any(|t| t == tag) {
                tags.push(tag.to_string());
            }
        }
    }
    for tag in tags {
        let dir = Path::new(BASE).join(&tag);
        let owner = std::fs::read_to_string(dir.join("owner")).unwrap_or_default();
        let alive = owner
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .and_then(owner_id)
            .is_some_and(|id| id == owner.trim());
        if alive {
            continue;
        }
        let loops = run(
            "losetup",
            &["--list", "--noheadings", "--output", "NAME,BACK-FILE"],
        )
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (name, back) = (it.next()?, it.next()?);
            back.starts_with(dir.to_str()?).then(|| name.to_string())
        })
        .collect();
        let mut ns: Vec<String> = namespaces
            .iter()
            .filter(|n| n.starts_with(&format!("{NS_PREFIX}{tag}-")))
            .cloned()
            .collect();
        // The switch namespace last.
        ns.sort_by_key(|n| n.ends_with("-sw"));
        teardown(&Resources {
            dir,
            namespaces: ns,
            root_links: vec![format!("qt{tag}c")],
            loops,
            sshd: Vec::new(),
            vms: Vec::new(),
        });
        removed.push(tag);
    }
    removed
}

/// A /24 no interface or route of the root namespace uses yet.
fn free_subnet(seed: u32) -> Result<String, String> {
    let used = format!(
        "{}{}",
        ip(&["-4", "-o", "addr"]).unwrap_or_default(),
        ip(&["-4", "route"]).unwrap_or_default()
    );
    (0..256u32)
        .map(|i| format!("10.213.{}", (seed + i) % 256))
        .find(|p| !used.contains(&format!("{p}.")))
        .ok_or_else(|| "no free 10.213.Y.0/24 subnet".to_string())
}

impl Testbed {
    /// Build the bed (root required). Stale leftovers of killed runs are removed first.
    pub fn build(spec: &Spec) -> Result<Testbed, String> {
        if spec.hosts + spec.vm_hosts == 0 || spec.hosts + spec.vm_hosts > 200 {
            return Err(format!(
                "hosts: {} + {} qemu guests (allowed 1..=200 in all)",
                spec.hosts, spec.vm_hosts
            ));
        }
        for &(a, b, _) in &spec.slow_pairs {
            if a >= spec.hosts || b >= spec.hosts || a == b {
                return Err(format!("slow pair ({a}, {b}): hosts are 0..{}", spec.hosts));
            }
        }
        let _lock = BUILD.lock().unwrap_or_else(|e| e.into_inner());
        let machine = machine_lock()?;
        clean_stale_locked();
        let pid = std::process::id();
        let tag = format!(
            "{}{}",
            base36(pid as u64),
            base36(COUNTER.fetch_add(1, Ordering::Relaxed) as u64 % 36)
        );
        let dir = Path::new(BASE).join(&tag);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let owner = owner_id(pid).ok_or("cannot read own /proc entry")?;
        std::fs::write(dir.join("owner"), &owner).map_err(|e| e.to_string())?;
        let res = Arc::new(Mutex::new(Resources {
            dir: dir.clone(),
            ..Default::default()
        }));
        let r2 = res.clone();
        let guard = lifecycle::register(lifecycle::Phase::Infrastructure, move || {
            teardown(&r2.lock().unwrap_or_else(|e| e.into_inner()))
        });
        let mut bed = Testbed {
            tag: tag.clone(),
            dir: dir.clone(),
            ssh_config: dir.join("ssh_config"),
            coordinator_addr: String::new(),
            hosts: Vec::new(),
            res,
            sshd: Vec::new(),
            vms: Vec::new(),
            _guard: Some(guard),
        };
        let net = free_subnet(pid % 256)?;
        bed.setup(spec, net, machine)?;
        Ok(bed)
    }

    fn note(&self, f: impl FnOnce(&mut Resources)) {
        f(&mut self.res.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn setup(&mut self, spec: &Spec, net: String, machine: std::fs::File) -> Result<(), String> {
        let tag = self.tag.clone();
        let sw = format!("{NS_PREFIX}{tag}-sw");
        ip(&["netns", "add", &sw])?;
        self.note(|r| r.namespaces.push(sw.clone()));
        let br = "br0";
        in_ns(&sw, "ip", &["link", "add", br, "type", "bridge"])?;
        in_ns(&sw, "ip", &["link", "set", br, "up"])?;
        // The coordinator's leg, in the root namespace.
        let (c, cb) = (format!("qt{tag}c"), format!("qt{tag}cb"));
        ip(&[
            "link", "add", &c, "type", "veth", "peer", "name", &cb, "netns", &sw,
        ])?;
        self.note(|r| r.root_links.push(c.clone()));
        self.coordinator_addr = format!("{net}.1");
        ip(&["addr", "add", &format!("{net}.1/24"), "dev", &c])?;
        // The subnet is taken: other beds may be built now.
        drop(machine);
        ip(&["link", "set", &c, "up"])?;
        in_ns(&sw, "ip", &["link", "set", &cb, "master", br, "up"])?;

        self.keys(spec, &net)?;
        for i in 0..spec.hosts {
            let name = format!("h{i}");
            let ns = format!("{NS_PREFIX}{tag}-{name}");
            let addr = format!("{net}.{}", 10 + i);
            ip(&["netns", "add", &ns])?;
            self.note(|r| r.namespaces.insert(r.namespaces.len() - 1, ns.clone()));
            let port = format!("qt{tag}h{i}b");
            ip(&[
                "link", "add", "eth0", "netns", &ns, "type", "veth", "peer", "name", &port,
                "netns", &sw,
            ])?;
            in_ns(
                &ns,
                "ip",
                &["addr", "add", &format!("{addr}/24"), "dev", "eth0"],
            )?;
            in_ns(&ns, "ip", &["link", "set", "lo", "up"])?;
            in_ns(&ns, "ip", &["link", "set", "eth0", "up"])?;
            in_ns(&sw, "ip", &["link", "set", &port, "master", br, "up"])?;
            // Egress on the host, ingress on its bridge port.
            let slow: Vec<(String, u32)> = spec
                .slow_pairs
                .iter()
                .filter_map(|&(a, b, m)| match (a == i, b == i) {
                    (true, _) => Some((format!("{net}.{}", 10 + b), m)),
                    (_, true) => Some((format!("{net}.{}", 10 + a), m)),
                    _ => None,
                })
                .collect();
            shape(&ns, "eth0", spec.link_mbit, &slow)?;
            shape(&sw, &port, spec.link_mbit, &[])?;
            let mut disks = Vec::new();
            for k in 0..spec.disks_per_host {
                disks.push(self.loop_disk(&format!("{name}-d{k}.img"), spec.disk_bytes)?);
            }
            self.hosts.push(BedHost {
                name,
                ns,
                addr,
                disks,
                qemu: false,
            });
        }
        for i in 0..self.hosts.len() {
            self.start_sshd(i)?;
        }
        self.start_vms(spec, &net, &sw)?;
        for h in &self.hosts {
            if h.qemu {
                // TCG: the guest's kernel boots in seconds to tens of seconds beside a
                // busy machine.
                wait_port(&h.addr, 22, Duration::from_secs(180)).map_err(|e| {
                    let console = self.dir.join(format!("{}.console", h.name));
                    format!("{e}\n{}", vm::console_tail(&console))
                })?;
            } else {
                wait_port(&h.addr, 22, Duration::from_secs(10))?;
            }
        }
        Ok(())
    }

    /// The qemu guest hosts: one initramfs for all, a tap on the bridge each.
    fn start_vms(&mut self, spec: &Spec, net: &str, sw: &str) -> Result<(), String> {
        if spec.vm_hosts == 0 {
            return Ok(());
        }
        let initrd = vm::initramfs(&self.dir, spec.vm_iscsi)?;
        for k in 0..spec.vm_hosts {
            let i = spec.hosts + k;
            let (name, addr) = (format!("h{i}"), format!("{net}.{}", 10 + i));
            let tap = format!("qt{}v{k}", self.tag);
            in_ns(sw, "ip", &["tuntap", "add", "dev", &tap, "mode", "tap"])?;
            in_ns(sw, "ip", &["link", "set", &tap, "master", "br0", "up"])?;
            shape(sw, &tap, spec.link_mbit, &[])?;
            let mac = format!("52:54:00:d5:{:02x}:{:02x}", (i >> 8) & 0xff, i & 0xff);
            let console = self.dir.join(format!("{name}.console"));
            let child = vm::boot(sw, &tap, &initrd, &name, &addr, &mac, &console)?;
            self.note(|r| r.vms.push(child.id()));
            self.vms.push(child);
            self.hosts.push(BedHost {
                name,
                ns: sw.to_string(),
                addr,
                disks: Vec::new(),
                qemu: true,
            });
        }
        Ok(())
    }

    fn keys(&self, spec: &Spec, net: &str) -> Result<(), String> {
        let d = &self.dir;
        let s = |p: &str| d.join(p).display().to_string();
        for k in ["host_key", "id_ed25519"] {
            keygen(Path::new(&s(k)))?;
        }
        let host_pub =
            std::fs::read_to_string(d.join("host_key.pub")).map_err(|e| e.to_string())?;
        let host_pub = host_pub
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        std::fs::copy(d.join("id_ed25519.pub"), d.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        let mut known = String::new();
        let mut cfg = String::new();
        for i in 0..spec.hosts + spec.vm_hosts {
            let addr = format!("{net}.{}", 10 + i);
            known.push_str(&format!("{addr} {host_pub}\n"));
            cfg.push_str(&format!("Host h{i}\n  HostName {addr}\n"));
        }
        cfg.push_str(&format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
            s("id_ed25519"),
            s("known_hosts")
        ));
        std::fs::write(d.join("known_hosts"), known).map_err(|e| e.to_string())?;
        std::fs::write(&self.ssh_config, cfg).map_err(|e| e.to_string())?;
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        Ok(())
    }

    fn start_sshd(&mut self, i: usize) -> Result<(), String> {
        let h = self.hosts[i].clone();
        let d = &self.dir;
        let s = |p: &str| d.join(p).display().to_string();
        // The host's own home: its sessions never run this machine's dotfiles (root's
        // ~/.bashrc, which bash sources for every ssh command: a pyenv init there cost
        // 0.3 s a session, and 60 s once a killed session left pyenv's lock behind).
        let home = d.join(format!("home-{}", h.name));
        std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
        let cfg = format!(
            "Port 22\nListenAddress {}\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\n\
             PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
             PrintMotd no\nLogLevel ERROR\nMaxSessions 64\nMaxStartups 64:30:128\nSetEnv HOME={}\n",
            h.addr,
            s("host_key"),
            s(&format!("sshd-{}.pid", h.name)),
            s("authorized_keys"),
            home.display()
        );
        let path = d.join(format!("sshd-{}.conf", h.name));
        std::fs::write(&path, cfg).map_err(|e| e.to_string())?;
        let sshd = which("sshd").ok_or("sshd not found (install openssh-server)")?;
        // Its own UTS namespace, so `hostname` on the host says hN; normal priority, as a
        // real host's sshd (and what runs under it: iperf3, fio) would have, whatever
        // niceness the test runner has (`nice cargo test`).
        let child = in_ns_daemon(&h.ns, "unshare")
            .args(["--uts", "sh", "-c"])
            .arg(format!(
                "renice -n 0 -p $$ >/dev/null 2>&1; hostname {} && exec {} -D -e -f {}",
                h.name,
                sshd,
                path.display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(d.join(format!("sshd-{}.log", h.name)))
                    .map_err(|e| e.to_string())?,
            )
            .spawn()
            .map_err(|e| format!("starting sshd: {e}"))?;
        self.note(|r| r.sshd.push(child.id()));
        self.sshd.push(child);
        Ok(())
    }

    fn loop_disk(&self, file: &str, bytes: u64) -> Result<LoopDisk, String> {
        let backing = self.dir.join(file);
        let f = std::fs::File::create(&backing).map_err(|e| e.to_string())?;
        f.set_len(bytes).map_err(|e| e.to_string())?;
        let b = backing.display().to_string();
        let dev = run("losetup", &["--find", "--show", "--direct-io=on", &b])
            .or_else(|_| run("losetup", &["--find", "--show", &b]))?
            .trim()
            .to_string();
        self.note(|r| r.loops.push(dev.clone()));
        Ok(LoopDisk { dev, backing })
    }

    /// ssh options that select the bed's config (`-F FILE`).
    pub fn ssh_options(&self) -> Vec<String> {
        vec!["-F".into(), self.ssh_config.display().to_string()]
    }

    /// `h0,h1,...`
    pub fn host_list(&self) -> String {
        self.hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// An ssh transport for the bed (multiplexed, control sockets in the bed's directory).
    pub fn ssh_config(&self) -> Arc<hosts::SshConfig> {
        Arc::new(hosts::SshConfig {
            options: self.ssh_options(),
            control_dir: Some(self.dir.join("cm")),
            ..Default::default()
        })
    }

    /// The bed's hosts as suite hosts.
    pub fn suite_hosts(&self) -> Result<Vec<hosts::Host>, String> {
        hosts::parse_hosts(&self.host_list(), self.ssh_config()).map_err(|e| e.to_string())
    }

    /// The JSON a script can read (`testbed up` prints it).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "tag": self.tag,
            "ssh_config": self.ssh_config,
            "coordinator_addr": self.coordinator_addr,
            "hosts": self.hosts,
        })
    }

    /// Namespace names this bed owns.
    pub fn namespaces(&self) -> Vec<String> {
        self.res
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .namespaces
            .clone()
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for h in &self.hosts {
            let _ = Command::new("ssh")
                .args(self.ssh_options())
                .args([
                    "-o",
                    &format!("ControlPath={}/cm/%C", self.dir.display()),
                    "-O",
                    "exit",
                    &h.name,
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        for c in self.sshd.iter_mut().chain(&mut self.vms) {
            let _ = c.kill();
            let _ = c.wait();
        }
        teardown(&self.res.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// HTB on `dev`: everything at `mbit`, traffic to each slow peer at its own rate.
fn shape(ns: &str, dev: &str, mbit: u32, slow: &[(String, u32)]) -> Result<(), String> {
    let tc = |args: &[&str]| in_ns(ns, "tc", args);
    let rate = |m: u32| format!("{m}mbit");
    // An HTB class `id` under `parent`: `rate` guaranteed, up to `ceil`.
    let class = |parent: &str, id: &str, rate_mbit: u32, ceil_mbit: u32| {
        tc(&[
            "class",
            "add",
            "dev",
            dev,
            "parent",
            parent,
            "classid",
            id,
            "htb",
            "rate",
            &rate(rate_mbit),
            "ceil",
            &rate(ceil_mbit),
        ])
    };
    tc(&[
        "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10",
    ])?;
    class("1:", "1:1", mbit, mbit)?;
    let reserved: u32 = slow.iter().map(|s| s.1).sum();
    let rest = mbit.saturating_sub(reserved).max(1);
    class("1:1", "1:10", rest, mbit)?;
    for (k, (dst, m)) in slow.iter().enumerate() {
        let id = format!("1:{}", 20 + k);
        class("1:1", &id, *m, *m)?;
        tc(&[
            "filter",
            "add",
            "dev",
            dev,
            "parent",
            "1:",
            "protocol",
            "ip",
            "prio",
            "1",
            "u32",
            "match",
            "ip",
            "dst",
            &format!("{dst}/32"),
            "flowid",
            &id,
        ])?;
    }
    Ok(())
}

fn wait_port(addr: &str, port: u16, timeout: Duration) -> Result<(), String> {
    let start = Instant::now();
    let sa: std::net::SocketAddr = format!("{addr}:{port}")
        .parse()
        .map_err(|e| format!("{addr}: {e}"))?;
    loop {
        if std::net::TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "nothing listens on {addr}:{port} after {timeout:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn which(prog: &str) -> Option<String> {
    [
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
    ]
    .iter()
    .map(|d| format!("{d}/{prog}"))
    .find(|p| Path::new(p).exists())
}
