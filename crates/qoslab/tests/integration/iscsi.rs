//! `qoslab iscsi serve` with real initiators: libiscsi's iscsi-ls (discovery and login,
//! CHAP, LUN masking) and fio's libiscsi ioengine, and the target killed with `kill -9`
//! in the middle of FUA writes and SYNCHRONIZE CACHEs (the in-process protocol tests
//! and the conformance suite are in crates/iscsi-server/tests).

use std::future::Future;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iscsi_server::client::Client;

use crate::nfs_util::ServeProc;
use crate::util::{first_difference, pattern, require_tool, run, TempDir};

const IQN: &str = "iqn.2026-01.lab.qoslab:e2e";
const OTHER_INITIATOR: &str = "iqn.2026-01.lab.qoslab:not-mapped";

/// `qoslab iscsi serve` on a loopback port with these options; killed on drop.
fn iscsi_serve(args: &[String]) -> ServeProc {
    ServeProc::start_serve(
        &["iscsi", "serve", "--iqn", IQN],
        "qoslab iscsi: serving",
        args.to_vec(),
    )
}

/// Run `session` to its end on a fresh single-threaded runtime, with an iSCSI client
/// connected (not logged in yet) to 127.0.0.1:`port` as `initiator`.
pub fn with_initiator<T, F: Future<Output = T>>(
    port: u16,
    initiator: &str,
    session: impl FnOnce(Client) -> F,
) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        session(Client::connect(addr, initiator).await.unwrap()).await
    })
}

/// libiscsi's `iscsi-ls ARGS` (30 s at most).
pub fn iscsi_ls(args: &[&str]) -> crate::util::Out {
    run(Command::new("iscsi-ls").args(args), Duration::from_secs(30))
}

/// `iscsi-ls -s` listed LUN `lun` and a LUN of `size` (its last block's offset in MiB,
/// rounded down, as iscsi-ls prints it: `63M` for 64 MiB).
pub fn lists_lun(ls: &crate::util::Out, lun: u16, size: &str) -> bool {
    ls.stdout.contains(&format!("Lun:{lun}")) && ls.stdout.contains(&format!("(Size:{size})"))
}

#[test]
fn libiscsi_discovers_logs_in_and_sees_only_its_luns() {
    require_tool("fio");
    require_libiscsi();
    let dir = TempDir::new("iscsi-libiscsi");
    let srv = iscsi_serve(&[
        "--lun".into(),
        format!("{},size=64MiB", dir.join("shared.img").display()),
        "--lun".into(),
        format!(
            "{},size=32MiB,lun=3,initiators={}",
            dir.join("mine.img").display(),
            "iqn.2026-01.lab.qoslab:libiscsi"
        ),
    ]);
    let portal = format!("iscsi://127.0.0.1:{}", srv.port);
    // Discovery and login as the mapped initiator: both LUNs with their sizes (iscsi-ls
    // prints the last block's offset in MiB, rounded down: 63M for 64 MiB).
    let ls = iscsi_ls(&["-i", "iqn.2026-01.lab.qoslab:libiscsi", "-s", &portal]).ok();
    assert!(
        ls.stdout
            .contains(&format!("Target:{IQN} Portal:127.0.0.1:{},1", srv.port)),
        "{ls}"
    );
    assert!(lists_lun(&ls, 0, "63M"), "{ls}");
    assert!(lists_lun(&ls, 3, "31M"), "{ls}");
    // Another initiator sees LUN 0 only.
    let ls = iscsi_ls(&["-i", OTHER_INITIATOR, "-s", &portal]).ok();
    assert!(
        ls.stdout.contains("Lun:0") && !ls.stdout.contains("Lun:3"),
        "{ls}"
    );
    // fio's libiscsi ioengine writes and verifies 8 MiB through the target.
    let target = format!(
        "iscsi\\://127.0.0.1\\:{}/{}/0",
        srv.port,
        IQN.replace(':', "\\:")
    );
    // fio saves its verify state (`verify_state_save`) in its working directory: the
    // test's temp dir, so it never lands in the source tree.
    let fio = run(
        Command::new("fio").current_dir(dir.path()).args([
            "--name=verify",
            "--ioengine=libiscsi",
            &format!("--filename={target}"),
            "--rw=randwrite",
            "--bs=64k",
            "--size=8M",
            "--iodepth=8",
            "--verify=crc32c",
            "--do_verify=1",
            "--output-format=json",
        ]),
        Duration::from_secs(60),
    );
    assert!(
        fio.status.success() && fio.stdout.contains("\"error\" : 0"),
        "{fio}\n{}",
        srv.log()
    );
}

#[test]
fn chap_logs_in_with_the_secret_and_refuses_others() {
    require_libiscsi();
    let dir = TempDir::new("iscsi-chap");
    let chap = dir.join("chap");
    std::fs::write(&chap, "alice s3cret-s3cret\n").unwrap();
    let srv = iscsi_serve(&[
        "--lun".into(),
        format!("{},size=16MiB", dir.join("lun.img").display()),
        "--chap-file".into(),
        chap.display().to_string(),
    ]);
    let ok = iscsi_ls(&[
        "-s",
        &format!("iscsi://alice%s3cret-s3cret@127.0.0.1:{}", srv.port),
    ])
    .ok();
    assert!(ok.stdout.contains("Lun:0"), "{ok}");
    for url in [
        format!("iscsi://alice%wrong-secret@127.0.0.1:{}", srv.port),
        format!("iscsi://127.0.0.1:{}", srv.port),
    ] {
        let bad = iscsi_ls(&["-s", &url]);
        assert!(!bad.stdout.contains("Lun:"), "{url}: {bad}");
    }
    assert!(srv.log().contains("login refused"), "{}", srv.log());
}

pub fn require_libiscsi() {
    for t in ["iscsi-ls", "iscsi-inq"] {
        assert!(
            Command::new("which")
                .arg(t)
                .output()
                .is_ok_and(|o| o.status.success()),
            "`{t}` is not installed: run scripts/test.sh (it installs libiscsi-bin)"
        );
    }
}

#[test]
fn acknowledged_fua_writes_and_synchronize_cache_survive_kill9() {
    let dir = TempDir::new("iscsi-kill9");
    let img = dir.join("lun.img");
    let mut srv = iscsi_serve(&["--lun".into(), format!("{},size=64MiB", img.display())]);
    const BLOCK: usize = 64 << 10;
    let data = Arc::new(pattern(34, 48 << 20));
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let port = srv.port;
    let writer = {
        let (data, acked, stop) = (data.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            with_initiator(port, "iqn.2026-01.lab.qoslab:writer", |mut c| async move {
                assert_eq!(c.login(IQN, &[("InitialR2T", "No")]).await, (0, 0));
                let mut off = 0usize;
                let mut round = 0u32;
                while !stop.load(Ordering::Relaxed) && off + 4 * BLOCK <= data.len() {
                    // Even rounds: four FUA writes. Odd rounds: four plain writes, then
                    // SYNCHRONIZE CACHE. Either way a round is acknowledged when its
                    // last answer is GOOD.
                    let fua = round.is_multiple_of(2);
                    for i in 0..4 {
                        let o = off + i * BLOCK;
                        let lba = (o / 512) as u32;
                        let mut cdb = vec![0x2a, if fua { 0x08 } else { 0 }];
                        cdb.extend_from_slice(&lba.to_be_bytes());
                        cdb.extend_from_slice(&[0, 0, (BLOCK / 512) as u8, 0]);
                        match c
                            .try_command(0, &cdb, BLOCK as u32, &data[o..o + BLOCK])
                            .await
                        {
                            Some(r) if r.status == 0 => {}
                            _ => return, // the target is gone
                        }
                    }
                    if !fua {
                        let sync = [0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0];
                        match c.try_command(0, &sync, 0, &[]).await {
                            Some(r) if r.status == 0 => {}
                            _ => return,
                        }
                    }
                    off += 4 * BLOCK;
                    acked.store(off as u64, Ordering::SeqCst); // acknowledged: must survive
                    round += 1;
                }
            })
        })
    };
    while acked.load(Ordering::SeqCst) < 4 << 20 {
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            !writer.is_finished(),
            "the writer stopped early; target log:\n{}",
            srv.log()
        );
    }
    srv.kill9(); // SIGKILL while writes and syncs are in flight
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let acked = acked.load(Ordering::SeqCst) as usize;
    // What the file holds (the target's page cache survives its process), and what an
    // initiator reads from a restarted target.
    let on_disk = std::fs::read(&img).unwrap();
    assert!(
        on_disk[..acked] == data[..acked],
        "{acked} acknowledged bytes in the file: {:?}",
        first_difference(&on_disk[..acked], &data[..acked])
    );
    srv.restart();
    let port = srv.port;
    let read_back = std::thread::spawn(move || {
        with_initiator(port, "iqn.2026-01.lab.qoslab:reader", |mut c| async move {
            assert_eq!(c.login(IQN, &[]).await, (0, 0));
            let mut got = Vec::with_capacity(acked);
            while got.len() < acked {
                let lba = (got.len() / 512) as u32;
                let mut cdb = vec![0x28, 0];
                cdb.extend_from_slice(&lba.to_be_bytes());
                cdb.extend_from_slice(&[0, 0x08, 0x00, 0]); // 2048 blocks: 1 MiB
                let r = c.command(0, &cdb, 1 << 20, &[]).await;
                assert_eq!(r.status, 0);
                got.extend_from_slice(&r.data);
            }
            got.truncate(acked);
            got
        })
    });
    let got = read_back.join().unwrap();
    assert!(
        got[..] == data[..acked],
        "read back after the restart: {:?}",
        first_difference(&got, &data[..acked])
    );
}

/// Beyond loopback the standalone target needs `--chap-file` and `initiators=` on every
/// LUN: without them it refuses to start, naming each, before it makes any LUN file.
#[test]
fn beyond_loopback_the_standalone_target_refuses_to_serve_open_luns() {
    let dir = TempDir::new("iscsi-open");
    let img = dir.join("lun.img");
    let out = run(
        Command::new(crate::util::QOSLAB)
            .args(["iscsi", "serve", "--listen", "0.0.0.0:0", "--lun"])
            .arg(format!("{},size=1MiB", img.display())),
        Duration::from_secs(20),
    )
    .refused();
    assert!(
        out.stderr
            .contains("refusing to serve iSCSI on non-loopback address 0.0.0.0:0")
            && out.stderr.contains("no --chap-file")
            && out.stderr.contains("is open to every initiator")
            && out.stderr.contains("--insecure"),
        "{out}"
    );
    assert!(!img.exists(), "a refused start made {}", img.display());
}
