//! The NFS front end with real clients: libnfs's utilities, fio's `nfs` ioengine, a raw
//! client killed in the middle of committed writes (`qoslab nfs serve`, no QoS).

use std::time::Duration;

use crate::json::Json;
use crate::nfs_util::{committed_writes_survive_kill9, NfsProc, Wire};
use crate::util::{first_difference, on_path, pattern, run, TempDir};
use std::process::Command;

const HINT: &str =
    "run scripts/test.sh, which installs libnfs-utils and builds fio with its nfs ioengine";

fn require_on_path(tool: &str) {
    assert!(on_path(tool), "`{tool}` is not installed: {HINT}");
}

pub fn require_fio_nfs() {
    let out = run(
        Command::new("fio").arg("--enghelp=nfs"),
        Duration::from_secs(20),
    );
    assert!(
        out.status.success() && out.stdout.contains("nfs_url"),
        "fio has no nfs ioengine: {HINT}\n{out}"
    );
}

#[test]
fn libnfs_utilities_mount_lookup_read_write_readdir() {
    for t in ["nfs-ls", "nfs-cp", "nfs-cat"] {
        require_on_path(t);
    }
    let dir = TempDir::new("nfs-libnfs");
    let tree = dir.join("vol");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), b"hello from the export\n").unwrap();
    let mut srv = NfsProc::start(&[format!("/vol={},size=64MiB", tree.display())]);
    let ls = run(
        Command::new("nfs-ls").arg(srv.url("/vol")),
        Duration::from_secs(30),
    )
    .ok();
    assert!(
        ls.stdout.contains("a.txt") && ls.stdout.contains("sub"),
        "{ls}"
    );
    let data = pattern(22, 300_000);
    let local = dir.join("up.bin");
    std::fs::write(&local, &data).unwrap();
    run(
        Command::new("nfs-cp")
            .arg(&local)
            .arg(srv.url("/vol/sub/up.bin")),
        Duration::from_secs(30),
    )
    .ok();
    let on_disk = std::fs::read(tree.join("sub/up.bin")).unwrap();
    assert!(
        on_disk == data,
        "written over NFS: {:?}",
        first_difference(&on_disk, &data)
    );
    let back = dir.join("down.bin");
    run(
        Command::new("nfs-cp")
            .arg(srv.url("/vol/sub/up.bin"))
            .arg(&back),
        Duration::from_secs(30),
    )
    .ok();
    let got = std::fs::read(&back).unwrap();
    assert!(
        got == data,
        "read over NFS: {:?}",
        first_difference(&got, &data)
    );
    let cat = run(
        Command::new("nfs-cat").arg(srv.url("/vol/a.txt")),
        Duration::from_secs(30),
    )
    .ok();
    assert_eq!(cat.stdout, "hello from the export\n");
    let sub = run(
        Command::new("nfs-ls").arg(srv.url("/vol/sub")),
        Duration::from_secs(30),
    )
    .ok();
    assert!(sub.stdout.contains("up.bin"), "{sub}");
    // a client outside the export policy (none here but loopback) and an unknown export
    let missing = run(
        Command::new("nfs-ls").arg(srv.url("/nope")),
        Duration::from_secs(30),
    );
    assert!(
        !missing.status.success() && missing.stderr.contains("NOENT"),
        "{missing}"
    );
    let log = srv.stop();
    let calls = log.lines().last().unwrap_or_default().to_string();
    // 300,000 bytes at 64 KiB per call: at least 5 WRITEs and 5 READs
    // (libnfs writes UNSTABLE and COMMITs when it closes the file)
    for (proc_, min) in [("WRITE", 5), ("READ", 5), ("LOOKUP", 1), ("COMMIT", 1)] {
        let n = calls
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{proc_}=")))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        assert!(n >= min, "{proc_}: {n} calls (want >= {min}): {calls}");
    }
    assert!(calls.contains("READDIR"), "{calls}");
}

fn fio_nfs(url: &str, args: &[&str]) -> Json {
    require_fio_nfs();
    let mut c = Command::new("fio");
    c.args([
        "--name=job",
        "--ioengine=nfs",
        "--output-format=json",
        "--verify_state_save=0",
    ])
    .arg(format!("--nfs_url={url}"))
    .args(args)
    .current_dir(std::env::temp_dir());
    let out = run(&mut c, Duration::from_secs(120));
    assert!(out.status.success(), "{out}");
    let json = Json::parse_from_first_brace(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e})\n{out}"));
    assert_eq!(json.at("jobs.0.error").u64(), 0, "{out}");
    json
}

#[test]
fn fio_nfs_engine_writes_verifies_and_reads() {
    let dir = TempDir::new("nfs-fio");
    let tree = dir.join("vol");
    std::fs::create_dir_all(&tree).unwrap();
    let srv = NfsProc::start(&[format!("/vol={}", tree.display())]);
    let url = srv.url("/vol");
    // fio's nfs engine (3.33) ends a sized job early at iodepth > 1 (its event loop returns
    // no events while requests are in flight), so the sized, verified pass runs at QD1.
    let w = fio_nfs(
        &url,
        &[
            "--filename=f.dat",
            "--size=16M",
            "--bs=64k",
            "--rw=write",
            "--iodepth=1",
            "--verify=crc32c",
            "--do_verify=1",
        ],
    );
    assert_eq!(
        w.at("jobs.0.write.total_ios").u64(),
        256,
        "16 MiB in 64 KiB writes"
    );
    assert!(
        w.at("jobs.0.read.total_ios").u64() >= 256,
        "the verify pass read it all back"
    );
    assert_eq!(
        std::fs::metadata(tree.join("f.dat")).unwrap().len(),
        16 << 20
    );
    let r = fio_nfs(
        &url,
        &[
            "--filename=f.dat",
            "--size=16M",
            "--bs=4k",
            "--rw=randread",
            "--iodepth=16",
            "--time_based",
            "--runtime=2",
        ],
    );
    assert!(
        r.at("jobs.0.read.total_ios").u64() > 100,
        "random 4 KiB reads at QD16"
    );
}

#[test]
fn kill9_during_committed_writes_loses_nothing() {
    let dir = TempDir::new("nfs-kill9");
    let tree = dir.join("vol");
    std::fs::create_dir_all(&tree).unwrap();
    let srv = std::cell::RefCell::new(NfsProc::start(&[format!("/vol={}", tree.display())]));
    let port = srv.borrow().port;
    committed_writes_survive_kill9(
        port,
        "/vol",
        || srv.borrow_mut().kill9(),
        || {
            srv.borrow_mut().restart();
            srv.borrow().port
        },
        || srv.borrow().log(),
    );
}

#[test]
fn garbage_over_tcp_gets_rpc_errors_and_the_server_keeps_serving() {
    use nfs_proto::record;
    let dir = TempDir::new("nfs-garbage");
    let tree = dir.join("vol");
    std::fs::create_dir_all(&tree).unwrap();
    let mut srv = NfsProc::start(&[format!("/vol={}", tree.display())]);
    let mut w = Wire::connect(srv.port);
    let root = w.mount("/vol");
    // LOOKUP with its arguments cut short: GARBAGE_ARGS (4), same connection goes on
    let xid = w.send(100003, 3, 3, &root[..7]);
    let (rx, accept, _) = w.recv();
    assert_eq!((rx, accept), (xid, 4));
    // a record of noise is not a call: no reply, and the next call is answered
    let mut noise = Vec::new();
    let at = record::begin(&mut noise);
    noise.extend_from_slice(&crate::util::pattern(5, 3000));
    record::finish(&mut noise, at);
    w.send_raw(&noise);
    let _ = w.create(&root, "still-served");
    // an NFSv4 call: PROG_MISMATCH (2)
    let xid = w.send(100003, 4, 0, &[]);
    assert_eq!(w.recv().0, xid);
    // a record header announcing 2 GiB cannot be skipped: that connection ends, others live
    w.send_raw(&[0xff, 0xff, 0xff, 0xff]);
    assert!(
        w.closed_by_server(),
        "an unframeable record ends its connection"
    );
    let mut w2 = Wire::connect(srv.port);
    assert_eq!(w2.mount("/vol"), root);
    let log = srv.stop();
    assert!(
        log.lines().last().unwrap_or_default().contains("garbage="),
        "{log}"
    );
    assert!(
        !log.lines().last().unwrap_or_default().contains("garbage=0"),
        "garbage was counted: {log}"
    );
}
