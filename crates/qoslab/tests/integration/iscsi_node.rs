//! The node serving LUNs over iSCSI (`qoslab serve --listen-iscsi` with node.toml's
//! `[[iscsi.lun]]`): a LUN is its block volume (bytes written over NBD read back over
//! iSCSI; libiscsi's iscsi-ls sees the LUNs its initiator may), and fio's libiscsi
//! ioengine is held to the volume's QoS policy, counted in the volume's books as ONTAP
//! counts SAN operations (the in-process counting tests are in
//! crates/iscsi-server/tests/node.rs).

use std::process::Command;
use std::time::Duration;

use iscsi_server::client::read10;

use crate::api_util::Api;
use crate::iscsi::{iscsi_ls, lists_lun, require_libiscsi, with_initiator};
use crate::json::Json;
use crate::nfs_node::{fio_json, read_ops, within};
use crate::realtime::RealTime;
use crate::util::{first_difference, heavy, pattern, require_tool, run, Node, TempDir, QOSLAB};

const IQN: &str = "iqn.2026-01.lab.qoslab:e2e-node";
const ISCSI: &[&str] = &["--listen-iscsi", "127.0.0.1:0"];

/// The node's iSCSI port, from its `qoslab: iscsi: ADDR` line.
pub fn iscsi_port(n: &Node) -> u16 {
    n.listener_port("iscsi")
}

/// fio's libiscsi engine on LUN `lun` of the node (JSON report, every job's error
/// checked); `args` are job options.
fn fio_iscsi(port: u16, lun: u16, args: &[&str]) -> Json {
    let target = format!(
        "--filename=iscsi\\://127.0.0.1\\:{port}/{}/{lun}",
        IQN.replace(':', "\\:")
    );
    fio_json(&["--ioengine=libiscsi", &target], args)
}

fn config(extra_volumes: &str, luns: &str) -> String {
    format!("{extra_volumes}\n[iscsi]\niqn = \"{IQN}\"\n{luns}")
}

/// What NBD wrote, iSCSI reads: a LUN is its volume. iscsi-ls (discovery, login) lists
/// the LUNs an initiator may see at their volumes' sizes. Cost: ~2 s.
#[test]
fn a_lun_is_its_volume_over_nbd_and_iscsi() {
    require_tool("nbdcopy");
    require_libiscsi();
    let node = Node::start_with(
        &config(
            "[[volume]]\nname = \"db\"\nsize = \"8MiB\"\n\
             [[volume]]\nname = \"private\"\nsize = \"4MiB\"\n",
            "[[iscsi.lun]]\nvolume = \"db\"\n\
             [[iscsi.lun]]\nvolume = \"private\"\nlun = 3\n\
             initiators = [\"iqn.2026-01.lab.qoslab:mine\"]\n",
        ),
        ISCSI,
    );
    let port = iscsi_port(&node);
    let portal = format!("iscsi://127.0.0.1:{port}");
    let ls = |initiator: &str| iscsi_ls(&["-i", initiator, "-s", &portal]).ok();
    // iscsi-ls prints the last block's offset in MiB, rounded down: 7M for 8 MiB.
    let mine = ls("iqn.2026-01.lab.qoslab:mine");
    assert!(mine.stdout.contains(&format!("Target:{IQN}")), "{mine}");
    assert!(lists_lun(&mine, 0, "7M"), "{mine}");
    assert!(lists_lun(&mine, 3, "3M"), "{mine}");
    let other = ls("iqn.2026-01.lab.qoslab:other");
    assert!(
        other.stdout.contains("Lun:0") && !other.stdout.contains("Lun:3"),
        "{other}"
    );
    let data = pattern(34, 8 << 20);
    node.nbdcopy_in("db", &data, Duration::from_secs(60));
    let len = data.len();
    let got = with_initiator(port, "iqn.2026-01.lab.qoslab:reader", |mut c| async move {
        assert_eq!(c.login(IQN, &[]).await, (0, 0));
        let mut got = Vec::with_capacity(len);
        while got.len() < len {
            let lba = (got.len() / 512) as u32;
            let r = c.command(0, &read10(lba, 2048), 1 << 20, &[]).await;
            assert_eq!(r.status, 0);
            got.extend_from_slice(&r.data);
        }
        got
    });
    assert!(
        got == data,
        "read over iSCSI: {:?}",
        first_difference(&got, &data)
    );
}

/// fio's libiscsi engine against two LUNs under fixed policies: 4 KiB random reads held
/// to 400 IOPS, 64 KiB random writes to 8 MiB/s, each within 2%; and the node counted one
/// read operation per fio read. Both run at once. Cost: ~12 s (heavy group).
///
/// Bounds, as over NBD and NFS: the pacer spaces a backlogged flow exactly, so fio's 10 s
/// window counts the rate's completions within one request at each edge (1/4000 at 400
/// IOPS) plus the pacer's 5 ms of burst after the ramp (0.05%). Rate is lost only when
/// the backlog runs dry: at QD32 the queue is 80 ms at 400 IOPS (250 ms at 8 MiB/s of
/// 64 KiB, QD32), longer than a CPU hog beside the run stalls fio. Above the bound fails
/// plainly (a ceiling exceeded); below it is a shortfall the starved-host rule decides.
/// Measured on 29 Nov 2026, alone and beside a `yes` hog alike: 396.9 IOPS (fio's 4000
/// reads over its 10.08 s runtime: -0.8%) and 8.00 MiB/s. The node itself counted 4433
/// reads over fio's 1 s ramp and 10.08 s run, 400.1 a second: the shortfall is fio's
/// window (the 32 reads in flight across the end of the ramp, 80 ms at 400 IOPS), not
/// the ceiling.
#[test]
fn a_luns_ceiling_holds_for_fio_over_libiscsi() {
    require_tool("fio");
    let _g = heavy();
    let mut rt = RealTime::start();
    let node = Node::start_with(
        &config(
            "[[policy]]\nname = \"iops400\"\nfixed = { max_throughput_iops = 400 }\n\
             [[policy]]\nname = \"mib8\"\nfixed = { max_throughput_mbps = 8 }\n\
             [[volume]]\nname = \"db\"\nsize = \"64MiB\"\npolicy = \"iops400\"\n\
             [[volume]]\nname = \"logs\"\nsize = \"64MiB\"\npolicy = \"mib8\"\n",
            "[[iscsi.lun]]\nvolume = \"db\"\n[[iscsi.lun]]\nvolume = \"logs\"\n",
        ),
        ISCSI,
    );
    let port = iscsi_port(&node);
    let api = Api::new(&node.api_url());
    let before = read_ops(&api, "db");
    let timed = [
        "--time_based",
        "--runtime=10",
        "--ramp_time=1",
        "--iodepth=32",
    ];
    // The two LUNs are two volumes under two policies: their runs go side by side.
    let mut a = vec!["--rw=randread", "--bs=4k"];
    a.extend(timed);
    let mut b = vec!["--rw=randwrite", "--bs=64k"];
    b.extend(timed);
    let (r, w) = std::thread::scope(|s| {
        let w = s.spawn(|| fio_iscsi(port, 1, &b));
        (fio_iscsi(port, 0, &a), w.join().expect("the write run"))
    });
    let iops = r.at("jobs.0.read.iops").f64();
    within(&mut rt, "4 KiB random reads, IOPS", iops, 400.0, 2.0);
    // fio's ramp reads are counted by the node but not in fio's totals: at least.
    let counted = read_ops(&api, "db") - before;
    let fio_reads = r.at("jobs.0.read.total_ios").u64();
    assert!(
        counted >= fio_reads,
        "the node counted {counted} reads, fio made {fio_reads}"
    );
    let mib = w.at("jobs.0.write.bw").f64() / 1024.0;
    eprintln!(
        "iSCSI LUNs on the node: 4k randread {iops:.1} IOPS under 400 ({counted} reads \
         counted for fio's {fio_reads}); 64k randwrite {mib:.2} MiB/s under 8"
    );
    within(&mut rt, "64 KiB random writes, MiB/s", mib, 8.0, 2.0);
    rt.finish();
}

/// `[[iscsi.credentials]]` on the node, as ONTAP's iSCSI security: alice proves her CHAP
/// secret (libiscsi's iscsi-ls sees her LUN with it, nothing without it or with a wrong
/// one), bob's entry says none, and every other initiator is denied at login (Login
/// Response 2/2, not authorized) by the `default` entry. Beyond loopback the node refuses
/// to start with a LUN open to every initiator, naming it, before it creates anything
/// (the rule's other cases, and a start that passes it, are unit tests of
/// `iscsi_cmd::prepare`: no test listens beyond loopback). Cost: ~3 s.
#[test]
fn initiators_log_in_as_their_credentials_say_and_an_open_lun_is_refused_beyond_loopback() {
    require_libiscsi();
    const ALICE: &str = "iqn.2026-01.lab.qoslab:alice";
    const BOB: &str = "iqn.2026-01.lab.qoslab:bob";
    let dir = TempDir::new("iscsi-node-chap");
    let secret = dir.join("alice.chap");
    std::fs::write(&secret, "alice alice-secret-1\n").unwrap();
    let creds = format!(
        "[[iscsi.credentials]]\ninitiator = \"default\"\nauthentication_type = \"deny\"\n\
         [[iscsi.credentials]]\ninitiator = \"{ALICE}\"\nauthentication_type = \"chap\"\n\
         chap_file = \"{}\"\n\
         [[iscsi.credentials]]\ninitiator = \"{BOB}\"\nauthentication_type = \"none\"\n",
        secret.display()
    );
    let node = Node::start_with(
        &config(
            "[[volume]]\nname = \"db\"\nsize = \"4MiB\"\n",
            &format!(
                "[[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"{ALICE}\", \"{BOB}\"]\n{creds}"
            ),
        ),
        ISCSI,
    );
    let ready = node.ready_output().join("\n");
    assert!(
        ready.contains("logins: default deny, 2 initiator(s) their own"),
        "{ready}"
    );
    let port = iscsi_port(&node);
    let ls = |initiator: &str, user: &str| {
        let portal = format!("iscsi://{user}127.0.0.1:{port}");
        iscsi_ls(&["-i", initiator, "-s", &portal])
    };
    let alice = ls(ALICE, "alice%alice-secret-1@");
    assert!(alice.stdout.contains("Lun:0"), "{alice}");
    for user in ["", "alice%wrong-secret-2@"] {
        let refused = ls(ALICE, user);
        assert!(
            !refused.stdout.contains("Lun:"),
            "alice as {user:?}: {refused}"
        );
    }
    let bob = ls(BOB, "");
    assert!(bob.stdout.contains("Lun:0"), "{bob}");
    let carol = with_initiator(port, "iqn.2026-01.lab.qoslab:carol", |mut c| async move {
        c.login(IQN, &[]).await
    });
    assert_eq!(
        carol,
        (2, 2),
        "carol's login: want initiator error, not authorized"
    );
    let log = node.stderr();
    assert!(
        log.contains("login refused: initiator \"iqn.2026-01.lab.qoslab:carol\" is denied"),
        "{log}"
    );

    // Beyond loopback: an open LUN is refused before anything is created.
    let serve = |toml: &str, tag: &str| {
        let d = dir.join(tag);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("node.toml"), toml).unwrap();
        let mut cmd = Command::new(QOSLAB);
        cmd.arg("serve")
            .arg("--config")
            .arg(d.join("node.toml"))
            .arg("--data-dir")
            .arg(d.join("data"))
            .arg("--listen-unix")
            .arg(d.join("s.sock"))
            .args(["--listen-http", "off", "--listen-iscsi", "0.0.0.0:0"]);
        (cmd, d.join("data"))
    };
    let open = config(
        "[[volume]]\nname = \"db\"\nsize = \"4MiB\"\n",
        &format!("[[iscsi.lun]]\nvolume = \"db\"\n{creds}"),
    );
    let (mut cmd, data) = serve(&open, "open");
    let out = run(&mut cmd, Duration::from_secs(20)).refused();
    assert!(
        out.stderr
            .contains("refusing to serve iSCSI on non-loopback address 0.0.0.0:0")
            && out
                .stderr
                .contains("LUN 0 (volume \"db\") is open to every initiator")
            && out.stderr.contains("--insecure-iscsi"),
        "{out}"
    );
    assert!(!data.exists(), "a refused start created {}", data.display());
}
