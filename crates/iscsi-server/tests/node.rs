//! The node's iSCSI front end in process: a node from a config text with `[[iscsi.lun]]`,
//! its `IscsiFrontEnd` on a loopback port, and the in-process initiator
//! (`iscsi_server::client`). What it proves: the LUN's bytes are its volume's; every SCSI
//! command is one operation in its volume's books (a READ's and a WRITE's bytes counted,
//! the rest "other"); and commands wait for the volume's ceiling in the node's admission
//! core, "other" commands included. Real fio against a running `qoslab serve` is in
//! crates/qoslab/tests/integration/iscsi_node.rs.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use iscsi_server::client::{read10, write10, Client};
use iscsi_server::IscsiFrontEnd;
use storage_node::front_end::FrontEnd;
use storage_node::stats::OpKind;
use storage_node::testing::TestNode;

const TARGET: &str = "iqn.2026-01.lab.qoslab:node-test";
const INITIATOR: &str = "iqn.2026-01.lab.qoslab:host1";

/// A node of `toml` (plus a target named [`TARGET`]) with its iSCSI front end running;
/// the front end stops when the sender drops.
fn start(toml: &str, tag: &str) -> (TestNode, SocketAddr, tokio::sync::watch::Sender<bool>) {
    let toml = format!("{toml}\n[iscsi]\niqn = \"{TARGET}\"\n");
    let n = TestNode::open(&toml, tag);
    let src = storage_node::config::Src::new(&toml, tag);
    let settings = iscsi_server::config::parse(&src, &n.cfg).unwrap();
    let fe = IscsiFrontEnd::bind("127.0.0.1:0".parse().unwrap(), &settings).unwrap();
    let addr = fe.local_addr();
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(Box::new(fe).serve(n.node.clone(), rx));
    (n, addr, tx)
}

async fn login(addr: SocketAddr, initiator: &str) -> Client {
    let mut c = Client::connect(addr, initiator).await.unwrap();
    assert_eq!(c.login(TARGET, &[]).await, (0, 0));
    c
}

const INQUIRY: [u8; 6] = [0x12, 0, 0, 0, 36, 0];
const TEST_UNIT_READY: [u8; 6] = [0; 6];
const READ_CAPACITY_10: [u8; 10] = [0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0];
const SYNCHRONIZE_CACHE_10: [u8; 10] = [0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0];
const REPORT_LUNS: [u8; 12] = [0xa0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];

/// The LUN numbers of REPORT LUNS parameter data (flat addressing, 256 LUNs at most).
fn luns(d: &[u8]) -> Vec<u8> {
    d.chunks(8).skip(1).map(|e| e[1]).collect()
}

/// The last LBA of READ CAPACITY(10) parameter data.
fn last_lba(d: &[u8]) -> u32 {
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_command_is_one_operation_of_its_volume_and_reads_and_writes_count_bytes() {
    let (n, addr, _stop) = start(
        "[[volume]]\nname = \"db\"\nsize = \"16MiB\"\n[[iscsi.lun]]\nvolume = \"db\"\n",
        "iscsi-node-count",
    );
    let vol = n.block_volume("db").unwrap();
    let mut c = login(addr, INITIATOR).await;
    assert_eq!(c.command(0, &INQUIRY, 36, &[]).await.status, 0);
    assert_eq!(c.command(0, &TEST_UNIT_READY, 0, &[]).await.status, 0);
    let cap = c.command(0, &READ_CAPACITY_10, 8, &[]).await;
    // The last LBA of 16 MiB of 512-byte blocks, and the block size.
    assert_eq!(cap.data, [0, 0, 0x7f, 0xff, 0, 0, 2, 0]);
    let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        c.command(0, &write10(8, 16, false), 8192, &data)
            .await
            .status,
        0
    );
    assert_eq!(c.command(0, &SYNCHRONIZE_CACHE_10, 0, &[]).await.status, 0);
    let r = c.command(0, &read10(8, 8), 4096, &[]).await;
    assert_eq!((r.status, &r.data[..]), (0, &data[..4096]));
    // A command to a LUN nobody mapped is answered, never counted.
    assert_ne!(c.command(5, &TEST_UNIT_READY, 0, &[]).await.status, 0);
    // The write is in the volume's own bytes (what NBD serves).
    let mut back = vec![0u8; 8192];
    vol.backend.read_at(&mut back, 8 * 512).unwrap();
    assert_eq!(back, data);
    let s = &vol.stats;
    let counts = [
        s.requests(OpKind::Read),
        s.requests(OpKind::Write),
        s.requests(OpKind::Other),
    ];
    // INQUIRY, TEST UNIT READY, READ CAPACITY and SYNCHRONIZE CACHE are "other".
    assert_eq!(counts, [1, 1, 4]);
    assert_eq!(
        (s.read_bytes.load(Relaxed), s.write_bytes.load(Relaxed)),
        (4096, 8192)
    );
    assert_eq!(s.ops(OpKind::Other), 4, "whole accounting: one op each");
    // REPORT LUNS on LUN 0 is one more "other" operation of the volume.
    assert_eq!(c.command(0, &REPORT_LUNS, 256, &[]).await.status, 0);
    assert_eq!(s.requests(OpKind::Other), 5);
}

/// Every command waits for its volume's ceiling: 20 IOPS spaces commands 50 ms apart, so
/// ten TEST UNIT READYs (each an "other" operation, sent one after another) take at
/// least 9 x 50 ms less the pacer's burst (5 ms) and what a wake-up may run early (the
/// timer slack and a tick, 2 ms a command): 427 ms; 400 is asserted. 2 MiB/s spaces
/// 256 KiB reads 125 ms apart: four take at least 3 x 125 - 5 - 6 = 364 ms; 340 is
/// asserted. A loaded machine only makes them slower: neither bound can be missed by
/// one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_wait_for_the_volumes_ceiling_in_the_nodes_admission_core() {
    let (n, addr, _stop) = start(
        r#"
[[policy]]
name = "slow"
fixed = { max_throughput_iops = 20 }
[[policy]]
name = "narrow"
fixed = { max_throughput_mbps = 2 }
[[volume]]
name = "db"
size = "16MiB"
policy = "slow"
[[volume]]
name = "logs"
size = "16MiB"
policy = "narrow"
[[iscsi.lun]]
volume = "db"
[[iscsi.lun]]
volume = "logs"
"#,
        "iscsi-node-ceiling",
    );
    let mut c = login(addr, INITIATOR).await;
    let t = Instant::now();
    for _ in 0..10 {
        assert_eq!(c.command(0, &TEST_UNIT_READY, 0, &[]).await.status, 0);
    }
    let iops = t.elapsed();
    assert!(
        iops >= Duration::from_millis(400),
        "10 commands under 20 IOPS took {iops:?}"
    );
    let t = Instant::now();
    for i in 0..4u32 {
        let r = c.command(1, &read10(i * 512, 512), 256 << 10, &[]).await;
        assert_eq!(r.status, 0);
    }
    let mbps = t.elapsed();
    assert!(
        mbps >= Duration::from_millis(340),
        "4 x 256 KiB under 2 MiB/s took {mbps:?}"
    );
    let db = n.block_volume("db").unwrap();
    let logs = n.block_volume("logs").unwrap();
    assert_eq!(db.stats.requests(OpKind::Other), 10);
    assert!(db.stats.ceiling_wait_ns.load(Relaxed) > 0);
    assert_eq!(logs.stats.read_bytes.load(Relaxed), 1 << 20);
}

/// LUN masking and the volume's life: an initiator outside a LUN's list does not see it;
/// a volume deleted on the node takes its LUN away (REPORT LUNS no longer lists it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn luns_follow_masking_and_their_volumes() {
    let (n, addr, _stop) = start(
        r#"
[[volume]]
name = "a"
size = "1MiB"
[[volume]]
name = "b"
size = "1MiB"
[[iscsi.lun]]
volume = "a"
[[iscsi.lun]]
volume = "b"
lun = 7
initiators = ["iqn.2026-01.lab.qoslab:host1"]
"#,
        "iscsi-node-masking",
    );
    let mut c = login(addr, INITIATOR).await;
    assert_eq!(
        luns(&c.command(0, &REPORT_LUNS, 256, &[]).await.data),
        [0, 7]
    );
    let mut other = login(addr, "iqn.2026-01.lab.qoslab:host2").await;
    let r = other.command(0, &REPORT_LUNS, 256, &[]).await;
    assert_eq!(luns(&r.data), [0]);
    assert_ne!(other.command(7, &TEST_UNIT_READY, 0, &[]).await.status, 0);
    n.remove_volume("b");
    // The first command after the change reports it (REPORTED LUNS DATA HAS CHANGED);
    // then LUN 7 is gone.
    let _ = c.command(0, &TEST_UNIT_READY, 0, &[]).await;
    assert_eq!(luns(&c.command(0, &REPORT_LUNS, 256, &[]).await.data), [0]);
}

/// A volume grown through the node (as `PATCH /api/storage/volumes` grows it) reaches
/// the sessions already logged in: the next command of each nexus that used the LUN gets
/// CAPACITY DATA HAS CHANGED (unit attention 2Ah/09h, as an array tells its hosts), READ
/// CAPACITY then reports the new size, and the blocks past the old end are written and
/// read. A session that logs in after the growth sees the new size with no attention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grown_volume_reaches_the_sessions_already_logged_in() {
    // Boxed: three sessions' futures outgrow the test thread's stack in a debug build.
    Box::pin(grown_volume()).await
}

async fn grown_volume() {
    let (n, addr, _stop) = start(
        "[[volume]]\nname = \"db\"\nsize = \"1MiB\"\n[[iscsi.lun]]\nvolume = \"db\"\n",
        "iscsi-node-grow",
    );
    let vol = n.block_volume("db").unwrap();
    let mut a = login(addr, INITIATOR).await;
    let mut b = login(addr, "iqn.2026-01.lab.qoslab:host2").await;
    for c in [&mut a, &mut b] {
        let cap = c.command(0, &READ_CAPACITY_10, 8, &[]).await;
        assert_eq!(last_lba(&cap.data), 2047);
    }
    let past = a.command(0, &read10(2048, 8), 4096, &[]).await;
    assert_eq!(
        (past.status, past.asc()),
        (2, (5, 0x21, 0)),
        "LBA out of range"
    );

    n.node.resize_volume(&vol, 2 << 20).unwrap();
    for c in [&mut a, &mut b] {
        let r = c.command(0, &TEST_UNIT_READY, 0, &[]).await;
        assert_eq!((r.status, r.asc()), (2, (6, 0x2a, 0x09)), "{:?}", r.sense);
        let r = c.command(0, &TEST_UNIT_READY, 0, &[]).await;
        assert_eq!(r.status, 0, "the attention is reported once");
        let cap = c.command(0, &READ_CAPACITY_10, 8, &[]).await;
        assert_eq!(last_lba(&cap.data), 4095);
    }
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 241) as u8).collect();
    let w = a.command(0, &write10(2048, 8, false), 4096, &data).await;
    assert_eq!(w.status, 0);
    let r = b.command(0, &read10(2048, 8), 4096, &[]).await;
    assert_eq!((r.status, &r.data[..]), (0, &data[..]));

    let mut late = login(addr, "iqn.2026-01.lab.qoslab:host3").await;
    assert_eq!(late.command(0, &TEST_UNIT_READY, 0, &[]).await.status, 0);
    let cap = late.command(0, &READ_CAPACITY_10, 8, &[]).await;
    assert_eq!(last_lba(&cap.data), 4095);
}

/// LUNs mapped on the node (the control plane's SAN maps, `Node::san`) reach the sessions
/// already logged in: the next command gets REPORTED LUNS DATA HAS CHANGED (unit
/// attention 3Fh/0Eh), REPORT LUNS then lists the map's number for the igroup's
/// initiators only, INQUIRY's serial page is the map's serial, and unmapping takes it away
/// again. A number node.toml gives an initiator stays node.toml's.
#[test]
fn luns_mapped_on_the_node_reach_sessions_already_logged_in() {
    // On a thread of its own with a larger stack: this test's futures together overflow
    // a debug build's 2 MiB test-thread stack.
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(mapped_luns())
        })
        .unwrap()
        .join()
        .unwrap();
}

async fn mapped_luns() {
    use storage_node::san::SanMap;
    let (n, addr, _stop) = start(
        r#"
[[volume]]
name = "a"
size = "1MiB"
[[volume]]
name = "c"
size = "2MiB"
[[iscsi.lun]]
volume = "a"
"#,
        "iscsi-node-san",
    );
    let mut c = login(addr, INITIATOR).await;
    let mut other = login(addr, "iqn.2026-01.lab.qoslab:host2").await;
    assert_eq!(luns(&c.command(0, &REPORT_LUNS, 256, &[]).await.data), [0]);
    let map = |number: u16| SanMap {
        volume: "c".into(),
        number,
        initiators: vec![INITIATOR.to_ascii_uppercase()],
        serial: "Ab3dEf6hIj9L".into(),
    };
    // Number 0 is node.toml's: the map at 0 is not served; at 3 it is.
    n.node.san().set(vec![map(0), map(3)]);
    let r = c.command(0, &TEST_UNIT_READY, 0, &[]).await;
    assert_eq!((r.status, r.asc()), (2, (6, 0x3f, 0x0e)), "{:?}", r.sense);
    assert_eq!(
        luns(&c.command(0, &REPORT_LUNS, 256, &[]).await.data),
        [0, 3]
    );
    // LUN 0 is still node.toml's volume a (1 MiB), not the map's c (2 MiB).
    let cap = c.command(0, &READ_CAPACITY_10, 8, &[]).await;
    assert_eq!(cap.status, 0, "{:?}", cap.asc());
    assert_eq!(last_lba(&cap.data), 2047);
    // The new LUN holds the attention for this nexus too (SPC: every LU the nexus sees).
    let r = c.command(3, &TEST_UNIT_READY, 0, &[]).await;
    assert_eq!(r.asc(), (6, 0x3f, 0x0e));
    let cap = c.command(3, &READ_CAPACITY_10, 8, &[]).await;
    assert_eq!(cap.status, 0, "{:?}", cap.asc());
    assert_eq!(last_lba(&cap.data), 4095);
    let serial = c.command(3, &[0x12, 1, 0x80, 0, 64, 0], 64, &[]).await;
    assert_eq!(&serial.data[4..16], b"Ab3dEf6hIj9L");
    let _ = other.command(0, &TEST_UNIT_READY, 0, &[]).await;
    assert_eq!(
        luns(&other.command(0, &REPORT_LUNS, 256, &[]).await.data),
        [0]
    );
    assert_ne!(other.command(3, &TEST_UNIT_READY, 0, &[]).await.status, 0);
    // Unmapped: gone from the session that saw it.
    n.node.san().set(Vec::new());
    let r = c.command(0, &TEST_UNIT_READY, 0, &[]).await;
    assert_eq!(r.asc(), (6, 0x3f, 0x0e));
    assert_eq!(luns(&c.command(0, &REPORT_LUNS, 256, &[]).await.data), [0]);
    assert_ne!(c.command(3, &TEST_UNIT_READY, 0, &[]).await.status, 0);
}
