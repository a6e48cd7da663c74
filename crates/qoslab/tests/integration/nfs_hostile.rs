//! Hostile NFS clients against the node (`qoslab serve --listen-nfs`), each a finding of
//! issue 32 reproduced with the raw RPC client of `nfs_util`: a flood of empty fragments,
//! pipelined WRITEs held by a 2 IOPS ceiling (memory, clients that leave, SIGTERM), idle
//! connections from an address no policy admits, descriptors across many handles, export
//! ids that collided, the privacy walk over a NAS tree, root, AUTH_NONE and reserved ports
//! as the export policy says, and NAS sizes.
//!
//! Cost: ~25 s in all (the WRITE flood ~10 s, the rest a node start or two each).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, Instant};

use nfs_proto::nfs3::{self, proc_, StableHow};
use nfs_proto::rpc::Cred;
use nfs_proto::xdr::{put_opaque, put_u32};
use nfs_proto::{mount, portmap, record};

use crate::api_util::Api;
use crate::nfs_node::nfs_port;
use crate::nfs_util::{connect_from, sattr, status_and_verifier, sys_cred, Wire};
use crate::util::{heavy, one_volume_config, Node};

const NFS: &[&str] = &["--listen-nfs", "127.0.0.1:0"];

/// The node's resident memory (VmRSS), in MiB.
fn rss_mib(node: &Node) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{}/status", node.pid())).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|k| k.parse::<f64>().ok())
        .map(|k| k / 1024.0)
        .expect("VmRSS")
}

/// The node's open descriptors (a connection it still serves holds one).
fn fds(node: &Node) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", node.pid()))
        .unwrap()
        .count()
}

fn getattr(w: &mut Wire, fh: &[u8]) -> Result<(u32, Vec<u8>), u32> {
    let mut a = Vec::new();
    put_opaque(&mut a, fh);
    w.nfs(proc_::GETATTR, &a)
}

/// A stream of empty fragments is cut off after at most 64 (was: 256 MiB of them took the
/// node from 70 to 558 MiB and 18 s of CPU); no MOUNT needed, other clients served.
#[test]
fn a_flood_of_empty_fragments_is_cut_off() {
    let node = Node::start_with(
        "[[volume]]\nname = \"v\"\nsize = \"64MiB\"\nnas_path = \"/v\"\n",
        NFS,
    );
    let p = nfs_port(&node);
    let before = rss_mib(&node);
    let mut s = connect_from(
        "127.0.0.1".parse().unwrap(),
        format!("127.0.0.1:{p}").parse().unwrap(),
        false,
    );
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let chunk = vec![0u8; 1 << 20]; // 262,144 empty fragments
    let mut sent = 0usize;
    while sent < 64 << 20 {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            // the node stopped reading, or closed: which, the read below tells
            Err(_) => break,
        }
    }
    // Closed by the node (EOF or a reset), not merely slow to read.
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 64];
    let closed = match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    assert!(
        closed,
        "{sent} bytes of empty fragments and the connection is open"
    );
    let mut w = Wire::connect(p);
    assert!(!w.mount("/v").is_empty(), "others are served");
    assert!(
        rss_mib(&node) < before + 32.0,
        "{before} -> {} MiB",
        rss_mib(&node)
    );
}

/// 20 connections x 256 pipelined 64 KiB WRITEs to a 2 IOPS volume: held calls are
/// bounded (was: RSS 70 -> 391 MiB); when the clients leave, their calls are dropped and
/// the ceiling's reservations given back (was: the writes ran on for 42 min, 19 slots
/// taken, the next client queued behind them); SIGTERM drains within its deadline.
#[test]
fn a_held_write_flood_is_bounded_dropped_with_its_clients_and_drained() {
    let _g = heavy();
    let config = one_volume_config("two", "max_throughput_iops = 2", "slow", "1GiB");
    let mut node = Node::start_with(&format!("{config}nas_path = \"/slow\"\n"), NFS);
    let p = nfs_port(&node);
    let base = rss_mib(&node);
    let mut setup = Wire::connect(p);
    let root = setup.mount("/slow");
    let files: Vec<Vec<u8>> = (0..20)
        .map(|i| setup.create(&root, &format!("f{i}")))
        .collect();
    let idle_fds = fds(&node);
    // Each client pipelines its WRITEs for 3 s (the node stops reading it long before).
    let flood = |files: Vec<Vec<u8>>, hold: bool| {
        files
            .into_iter()
            .map(|fh| {
                std::thread::spawn(move || {
                    let mut w = Wire::connect(p);
                    let mut rec = Vec::new();
                    for i in 0..256u64 {
                        let at = record::begin(&mut rec);
                        let mut a = Vec::new();
                        nfs3::encode_write(
                            &mut a,
                            &fh,
                            i << 16,
                            StableHow::Unstable,
                            &[7u8; 65536],
                        );
                        nfs_proto::rpc::encode_call(
                            &mut rec,
                            i as u32 + 1,
                            100003,
                            3,
                            proc_::WRITE,
                            &w.cred,
                            &a,
                        );
                        record::finish(&mut rec, at);
                    }
                    w.send_all_within(&rec, Duration::from_secs(3));
                    if hold {
                        std::thread::sleep(Duration::from_secs(60));
                    }
                    // The client goes away (a reset: what it had queued is lost with it).
                    w.reset();
                })
            })
            .collect::<Vec<_>>()
    };
    let clients = flood(files.clone(), false);
    let mut peak = 0.0f64;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        peak = peak.max(rss_mib(&node));
        std::thread::sleep(Duration::from_millis(100));
    }
    for c in clients {
        c.join().unwrap();
    }
    // Held records: 64 MiB for the node, 4 MiB a connection (20 x 4 is more: the node's
    // bound is the one); each connection's read buffer a record and 64 KiB more (192 KiB);
    // 16 MiB for tasks and the allocator's slack (measured: +69 to +71 MiB in all; main
    // 90b7f52, unbounded: +92 to +127 in this test, +321 in the issue's).
    let bound = 64.0 + 20.0 * 0.19 + 16.0;
    eprintln!("held WRITE flood: RSS {base:.0} -> peak {peak:.0} MiB (bound +{bound:.0})");
    assert!(peak - base < bound, "RSS {base:.0} -> {peak:.0} MiB");
    // The clients are gone: within 2 peer checks (1 s each) the node closes their
    // connections, dropping their held calls and giving their reservations back; then a
    // new client's WRITE waits for no one (2 IOPS: 0.5 s at most; was: queued behind
    // ~10 min of abandoned writes).
    let deadline = Instant::now() + Duration::from_secs(5);
    while fds(&node) > idle_fds && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        fds(&node) <= idle_fds,
        "the node still holds {} descriptors more",
        fds(&node) - idle_fds
    );
    let t = Instant::now();
    let mut w = Wire::connect(p);
    let xid = w.send_write(&files[0], 0, StableHow::Unstable, b"next");
    let (rx, accept, body) = w.recv();
    let waited = t.elapsed();
    assert_eq!(
        (rx, accept, status_and_verifier(&body, true).0),
        (xid, 0, 0)
    );
    assert!(
        waited < Duration::from_secs(5),
        "the next client waited {waited:?}"
    );
    // SIGTERM while 5 clients hold calls: answers in flight get the drain time (5 s),
    // then the node exits (was ~42 min).
    let _holders = flood(files[..5].to_vec(), true);
    std::thread::sleep(Duration::from_secs(2));
    let t = Instant::now();
    node.stop();
    let took = t.elapsed();
    eprintln!("SIGTERM with held calls: exited in {took:?}");
    assert!(took < Duration::from_secs(15), "{took:?}");
}

/// 1,030 idle connections from an address no export admits, and the admitted client still
/// mounts (was: locked out: no time-out, and the cap counted before the policy). MOUNT's
/// EXPORT lists only what the caller is admitted to; the portmapper answers it.
#[test]
fn unadmitted_idle_connections_never_lock_out_an_admitted_client() {
    let node = Node::start_with(
        r#"
[[export_policy]]
name = "one"
rule = [{ clients = ["127.0.0.1"], superuser = ["sys"] }]

[[export_policy]]
name = "elsewhere"
rule = [{ clients = ["192.0.2.0/24"] }]

[[volume]]
name = "one"
size = "64MiB"
nas_path = "/one"
export_policy = "one"

[[volume]]
name = "other"
size = "64MiB"
nas_path = "/other"
export_policy = "elsewhere"
"#,
        NFS,
    );
    let p = nfs_port(&node);
    let to = format!("127.0.0.1:{p}").parse().unwrap();
    let mut strangers: Vec<TcpStream> = (0..1030)
        .map(|_| connect_from("127.0.0.2".parse().unwrap(), to, false))
        .collect();
    let mut w = Wire::connect(p);
    let root = w.mount("/one");
    let f = w.create(&root, "in");
    assert!(getattr(&mut w, &f).unwrap().0 == 0);
    for s in strangers.iter_mut().take(50) {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 8];
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)), "closed at accept");
    }
    // EXPORT: only /one; the portmapper knows NFS's port.
    let xid = w.send(mount::PROGRAM, 3, mount::EXPORT, &[]);
    let (rx, _, body) = w.recv();
    assert_eq!(rx, xid);
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("/one") && !text.contains("/other"), "{text}");
    let mut a = Vec::new();
    portmap::encode_getport(&mut a, 100003, 3);
    let body = w.call(portmap::PROGRAM, 2, portmap::GETPORT, &a);
    assert_eq!(u32::from_be_bytes(body[..4].try_into().unwrap()), p as u32);
    // MNT of an export that does not admit this client (another does): MNT3ERR_ACCES.
    assert_eq!(w.try_mount("/other"), Err(13));
}

/// A node with a low open-file limit (1,024) and many handles used: the exports'
/// descriptor cache stays within one budget, CREATE works and NBD still accepts (was: each
/// export cached 4,096 descriptors; past the limit every CREATE failed NFS3ERR_IO and the
/// NBD listener logged 3,770 "Too many open files" a second).
#[test]
fn many_handles_stay_within_the_nodes_descriptor_budget() {
    let lim = libc::rlimit {
        rlim_cur: 1024,
        rlim_max: 1024,
    };
    // SAFETY: lowers this test process's limit (each test is its own process); the node
    // inherits it.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    let node = Node::start_with(
        "[[volume]]\nname = \"v\"\nsize = \"64MiB\"\nnas_path = \"/v\"\n",
        &["--listen-nfs", "127.0.0.1:0", "--max-connections", "16"],
    );
    let tree = node.data_dir().join("nas/v");
    for i in 0..1500 {
        std::fs::write(tree.join(format!("f{i}")), b"x").unwrap();
    }
    let mut w = Wire::connect(nfs_port(&node));
    let root = w.mount("/v");
    for i in 0..1500 {
        let fh = w.lookup(&root, &format!("f{i}")).unwrap();
        let mut a = Vec::new();
        put_opaque(&mut a, &fh);
        nfs_proto::xdr::put_u64(&mut a, 0);
        put_u32(&mut a, 1);
        assert_eq!(w.nfs(proc_::READ, &a).unwrap().0, 0, "READ f{i}");
    }
    let fds = std::fs::read_dir(format!("/proc/{}/fd", node.pid()))
        .unwrap()
        .count();
    assert!(fds < 1024 - 100, "the node holds {fds} descriptors of 1024");
    w.create(&root, "after");
    // NBD accepts and greets.
    let mut nbd = std::os::unix::net::UnixStream::connect(node.socket()).unwrap();
    let mut greeting = [0u8; 8];
    nbd.read_exact(&mut greeting).unwrap();
    assert_eq!(&greeting, b"NBDMAGIC");
    assert!(
        !node.stderr().contains("Too many open files"),
        "{}",
        node.stderr()
    );
}

/// Two junction paths whose old 32-bit hashes collided are two exports with their own
/// stored ids (was: the second silently unexported the first, across restarts); a deleted
/// volume's id is never given again.
#[test]
fn export_ids_are_stored_never_derived_from_names_never_reused() {
    let mut node = Node::start_with("", NFS);
    let api = Api::new(&node.api_url());
    for (name, path) in [("a", "/vol352449"), ("b", "/vol1219916")] {
        api.create(
            "/api/storage/volumes",
            &format!(r#"{{"name": "{name}", "size": "16MiB", "nas": {{"path": "{path}"}}}}"#),
        );
    }
    let mut w = Wire::connect(nfs_port(&node));
    let ra = w.mount("/vol352449");
    let rb = w.mount("/vol1219916");
    let id = |fh: &[u8]| u32::from_be_bytes(fh[2..6].try_into().unwrap());
    assert_ne!(id(&ra), id(&rb));
    let fa = w.create(&ra, "in-a");
    let fb = w.create(&rb, "in-b");
    node.stop();
    node.start_again();
    let mut w = Wire::connect(nfs_port(&node));
    assert_eq!(
        getattr(&mut w, &fa).unwrap().0,
        0,
        "a's handle after a restart"
    );
    assert_eq!(
        getattr(&mut w, &fb).unwrap().0,
        0,
        "b's handle after a restart"
    );
    let api = Api::new(&node.api_url());
    let uuid = api.uuid_of("/api/storage/volumes", "a");
    assert_eq!(
        api.req("DELETE", &format!("/api/storage/volumes/{uuid}"), None)
            .status,
        200
    );
    api.create(
        "/api/storage/volumes",
        r#"{"name": "c", "size": "16MiB", "nas": {"path": "/vol352449"}}"#,
    );
    let rc = w.mount("/vol352449");
    assert!(![id(&ra), id(&rb)].contains(&id(&rc)), "a new id, not a's");
    assert_eq!(getattr(&mut w, &fa).unwrap().0, 70, "a's old handle: STALE");
}

/// A restart never rewrites clients' modes (was: the privacy walk entered `nas/`: 644 ->
/// 600, 2775 -> 700, 1777 -> 700, 4755 -> 700, a read-only 0444 file became 0600); the
/// data directory's own files stay private.
#[test]
fn a_restart_leaves_the_modes_clients_set() {
    let mut node = Node::start_with(
        "[[volume]]\nname = \"v\"\nsize = \"64MiB\"\nnas_path = \"/v\"\n",
        NFS,
    );
    let tree = node.data_dir().join("nas/v");
    let modes = [
        ("f0644", false, 0o644),
        ("d2775", true, 0o2775),
        ("d1777", true, 0o1777),
        ("f4755", false, 0o4755),
        ("f0444", false, 0o444),
    ];
    for (n, dir, m) in modes {
        let path = tree.join(n);
        if dir {
            std::fs::create_dir(&path).unwrap();
        } else {
            std::fs::write(&path, b"x").unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).unwrap();
    }
    std::fs::set_permissions(&tree, std::fs::Permissions::from_mode(0o755)).unwrap();
    node.stop();
    node.start_again();
    for (n, _, m) in modes {
        let got = std::fs::metadata(tree.join(n)).unwrap().mode() & 0o7777;
        assert_eq!(got, m, "{n}");
    }
    assert_eq!(std::fs::metadata(&tree).unwrap().mode() & 0o7777, 0o755);
    let state = std::fs::metadata(node.data_dir().join("state.db"))
        .unwrap()
        .mode()
        & 0o777;
    assert_eq!(state, 0o600, "the node's own files stay private");
}

/// Root, AUTH_NONE and reserved ports as ONTAP's options say (was: root never squashed,
/// AUTH_NONE admitted by `sys`, no reserved-port rule; a local unprivileged user created
/// a root-owned 04755 file over loopback).
#[test]
fn root_auth_none_and_reserved_ports_as_the_policy_says() {
    let node = Node::start_with(
        r#"
[nfs]
nfs_rootonly = true

[[export_policy]]
name = "sysonly"
rule = [{ clients = ["::ffff:127.0.0.1"], ro_rule = ["sys"], rw_rule = ["sys"], allow_suid = false, superuser = ["sys"] }]

[[volume]]
name = "v"
size = "64MiB"
nas_path = "/v"
export_policy = "sysonly"

[[volume]]
name = "d"
size = "64MiB"
nas_path = "/d"
"#,
        NFS,
    );
    let p = nfs_port(&node);
    let from = "127.0.0.1".parse().unwrap();
    // A local user's client (an unprivileged port): no MOUNT (mount_rootonly, ONTAP's
    // default), and with nfs_rootonly no call at all.
    let mut user = Wire::connect_from(from, p, false);
    assert_eq!(user.try_mount("/v"), Err(13), "MNT3ERR_ACCES");
    let mut w = Wire::connect(p);
    let root = w.mount("/v"); // an IPv4-mapped rule matches the IPv4 client
    assert_eq!(getattr(&mut user, &root), Err(101), "AUTH_ERROR");
    // `sys` does not admit AUTH_NONE.
    w.cred = Cred::None;
    assert_eq!(getattr(&mut w, &root).unwrap().0, 13, "NFS3ERR_ACCES");
    // allow_suid false: root's 04755 is 0755.
    w.cred = sys_cred(0, 0, &[]);
    let f = w.create(&root, "suid");
    let mut a = Vec::new();
    put_opaque(&mut a, &f);
    a.extend_from_slice(&sattr(Some(0o4755), None, None, None));
    put_u32(&mut a, 0);
    assert_eq!(w.nfs(proc_::SETATTR, &a).unwrap().0, 0);
    let m = std::fs::metadata(node.data_dir().join("nas/v/suid"))
        .unwrap()
        .mode();
    assert_eq!(m & 0o7777, 0o755, "setuid not honoured");
    // The default policy keeps root on loopback; a new file is the caller's.
    let d = w.mount("/d");
    w.cred = sys_cred(1000, 1000, &[]);
    assert_eq!(
        w.nfs(proc_::CREATE, &{
            let mut a = Vec::new();
            nfs3::encode_diropargs(&mut a, &d, b"mine");
            put_u32(&mut a, 1);
            a.extend_from_slice(&sattr(Some(0o644), None, None, None));
            a
        })
        .unwrap()
        .0,
        13,
        "uid 1000 may not create in root's 0755 volume root"
    );
}

/// A NAS volume's size is a quota with the limits of a block volume's (was: created at
/// 1 PiB, refused at 17 TiB by the file system's largest file).
#[test]
fn nas_sizes_have_the_limits_of_creation() {
    let node = Node::start_with("", &[]);
    let api = Api::new(&node.api_url());
    let v = api.create(
        "/api/storage/volumes",
        r#"{"name": "big", "size": "1TiB", "nas": {"path": "/big"}}"#,
    );
    let uuid = v["uuid"].as_str().unwrap();
    let r = api.req(
        "PATCH",
        &format!("/api/storage/volumes/{uuid}"),
        Some(r#"{"size": "17TiB"}"#),
    );
    assert!(r.status < 300, "{r:?}");
    let r = api.req(
        "PATCH",
        &format!("/api/storage/volumes/{uuid}"),
        Some(r#"{"size": "2PiB"}"#),
    );
    assert_eq!(r.status, 400, "past 1 PiB, as at creation: {r:?}");
}
