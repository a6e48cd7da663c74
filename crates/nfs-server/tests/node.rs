//! The NFS front end on a node, over loopback TCP: calls on a NAS volume's handles pass
//! the node's admission core through their connection's gate (a ceiling holds them) and
//! land in the volume's books, as the core counts them; calls nothing can hold are
//! answered on the connection's task and counted the same way.

mod common;

use std::time::{Duration, Instant};

use common::{parse_reply, root_cred, Client, Reply};
use nfs_proto::client::args;
use nfs_proto::nfs3::{self, proc_, StableHow};
use nfs_proto::xdr::put_opaque;
use nfs_proto::{mount, record, rpc};
use nfs_server::conn::Limits;
use nfs_server::NfsFrontEnd;
use storage_node::front_end::FrontEnd;
use storage_node::stats::OpKind;
use storage_node::testing::TestNode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// `n` GETATTRs of `fh` sent at once on one connection; every reply is a success.
async fn getattrs(addr: std::net::SocketAddr, fh: &[u8], n: u32) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut args = Vec::new();
    put_opaque(&mut args, fh);
    let mut out = Vec::new();
    for xid in 1..=n {
        let at = record::begin(&mut out);
        rpc::encode_call(
            &mut out,
            xid,
            nfs3::PROGRAM,
            nfs3::VERSION,
            proc_::GETATTR,
            &root_cred(),
            &args,
        );
        record::finish(&mut out, at);
    }
    s.write_all(&out).await.unwrap();
    let mut xids = Vec::new();
    for _ in 0..n {
        let mut mark = [0u8; 4];
        s.read_exact(&mut mark).await.unwrap();
        let len = (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize;
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).await.unwrap();
        let r = parse_reply(&body);
        assert_eq!(r.status(), 0, "GETATTR {}", r.xid);
        xids.push(r.xid);
    }
    xids.sort();
    assert_eq!(xids, (1..=n).collect::<Vec<_>>());
}

/// `calls` (program, procedure, arguments; version 3) sent at once on one connection, with
/// xids 1.., and their replies in xid order.
async fn exchange(addr: std::net::SocketAddr, calls: &[(u32, u32, Vec<u8>)]) -> Vec<Reply> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut out = Vec::new();
    for (xid, (prog, proc_, args)) in (1..).zip(calls) {
        let at = record::begin(&mut out);
        rpc::encode_call(&mut out, xid, *prog, 3, *proc_, &root_cred(), args);
        record::finish(&mut out, at);
    }
    s.write_all(&out).await.unwrap();
    let mut replies = Vec::new();
    for _ in calls {
        let mut mark = [0u8; 4];
        s.read_exact(&mut mark).await.unwrap();
        let len = (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize;
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).await.unwrap();
        replies.push(parse_reply(&body));
    }
    replies.sort_by_key(|r| r.xid);
    replies
}

/// The node fixture from `toml` (its directory tagged `tag`), its NFS front end serving on
/// loopback, and the root handles of `mounts`; stop it with the sender.
async fn serve(
    tag: &str,
    toml: &str,
    mounts: &[&str],
) -> (
    TestNode,
    std::net::SocketAddr,
    Vec<Vec<u8>>,
    watch::Sender<bool>,
    tokio::task::JoinHandle<()>,
) {
    let node = TestNode::open(toml, tag);
    let nfs = nfs_server::config::parse(&storage_node::config::Src::new(toml, tag)).unwrap();
    let fe = NfsFrontEnd::bind("127.0.0.1:0".parse().unwrap(), &node, &nfs).unwrap();
    let addr = fe.local_addr();
    let mut c = Client::new(fe.service().clone());
    let roots = mounts.iter().map(|m| c.mnt(m).unwrap()).collect();
    let (stop_tx, stop) = watch::channel(false);
    let serving = tokio::spawn(Box::new(fe).serve(node.clone(), stop));
    (node, addr, roots, stop_tx, serving)
}

/// Under an emulated array's 20 ms service latency (a controller of unlimited capacity),
/// every reply is held until its time: the connection's gate admits each call through the
/// controller, runs it, and the reply leaves 20 ms after admission at the earliest.
#[tokio::test]
async fn replies_wait_out_the_arrays_service_latency() {
    let (node, addr, roots, stop, serving) = serve(
        "node-latency",
        "[capacity]\nlatency = { read = { fixed = \"20ms\" }, write = { fixed = \"20ms\" } }\n\
         [[volume]]\nname = \"n\"\nsize = \"1GiB\"\nnas_path = \"/n\"\n",
        &["/n"],
    )
    .await;
    let t0 = Instant::now();
    getattrs(addr, &roots[0], 5).await;
    assert!(
        t0.elapsed() >= Duration::from_millis(20),
        "{:?}",
        t0.elapsed()
    );
    let v = node.volume("n").unwrap();
    assert_eq!(v.stats.ops(OpKind::Other), 5);
    let lat = &v.stats.latency[OpKind::Other as usize];
    assert!(
        lat.sum_ns() >= 5 * 20_000_000,
        "each of 5 calls took at least its 20 ms: {} ns in all",
        lat.sum_ns()
    );
    stop.send_replace(true);
    serving.await.unwrap();
}

#[tokio::test]
async fn calls_on_a_volume_pass_its_gate_and_land_in_its_books() {
    let (node, addr, roots, stop_tx, serving) = serve(
        "node-gate",
        "[[policy]]\nname = \"eight\"\nfixed.max_throughput = \"8iops\"\n\
         [[volume]]\nname = \"n\"\nsize = \"1GiB\"\npolicy = \"eight\"\nnas_path = \"/n\"\n\
         [[volume]]\nname = \"u\"\nsize = \"1GiB\"\nnas_path = \"/u\"\n",
        &["/n", "/u"],
    )
    .await;
    let (limited, free) = (&roots[0], &roots[1]);
    let stats = |v: &str| node.volume(v).unwrap();

    // Nothing holds the unlimited volume's calls: all answered, each one "other"
    // operation in its books.
    getattrs(addr, free, 20).await;
    assert_eq!(stats("u").stats.ops(OpKind::Other), 20);
    assert_eq!(stats("u").stats.requests(OpKind::Other), 20);

    // 9 calls at 8 IOPS: the ceiling holds them. Its bucket lets at most 2 go at once
    // (a burst window of 5 ms, at least one request's interval), the other 7 are spaced
    // 125 ms apart: at least 875 ms, however fast or slow the machine.
    let t0 = Instant::now();
    getattrs(addr, limited, 9).await;
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(7 * 125),
        "9 GETATTRs at 8 IOPS took {took:?}"
    );
    let n = stats("n");
    assert_eq!(n.stats.ops(OpKind::Other), 9);
    assert!(
        n.stats
            .ceiling_wait_ns
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0,
        "the waits are the ceiling's"
    );
    stop_tx.send_replace(true);
    serving.await.unwrap();
}

/// A record is decoded once, however far its call goes: held by a ceiling (then run on the
/// connection's runtime), run on the blocking pool (stable WRITEs, CREATE, a MOUNT call of
/// no volume), or parked past a connection's bound of 2 held calls. A held call that were
/// decoded again (or a parked one parsed again) would count more decodes than records.
#[tokio::test]
async fn a_held_call_is_never_decoded_again() {
    let node = TestNode::open(
        "[[policy]]\nname = \"slow\"\nfixed.max_throughput = \"50iops\"\n\
         [[volume]]\nname = \"n\"\nsize = \"1GiB\"\npolicy = \"slow\"\nnas_path = \"/n\"\n",
        "node-once",
    );
    let nfs = nfs_server::config::NfsSettings::default();
    let fe = NfsFrontEnd::bind("127.0.0.1:0".parse().unwrap(), &node, &nfs)
        .unwrap()
        .limits(Limits {
            conn_calls: 2,
            ..Limits::default()
        });
    let (addr, svc) = (fe.local_addr(), fe.service().clone());
    let mut c = Client::new(svc.clone());
    let root = c.mnt("/n").unwrap();
    let file = c.create(&root, "f").unwrap();
    let (stop_tx, stop) = watch::channel(false);
    let serving = tokio::spawn(Box::new(fe).serve(node.clone(), stop));

    let mut calls = vec![(nfs3::PROGRAM, proc_::GETATTR, args::handle(&root)); 6];
    for i in 0..3u64 {
        let w = args::write(&file, i * 8192, StableHow::FileSync, &[i as u8 + 1; 8192]);
        calls.push((nfs3::PROGRAM, proc_::WRITE, w));
    }
    calls.push((
        nfs3::PROGRAM,
        proc_::CREATE,
        args::create(&root, "g", 0, &[0; 24]),
    ));
    calls.push((mount::PROGRAM, mount::MNT, args::path("/n")));
    let decodes = || {
        svc.counters
            .decodes
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let before = decodes();
    let replies = exchange(addr, &calls).await;
    assert_eq!(
        decodes() - before,
        calls.len() as u64,
        "one decode a record"
    );
    assert_eq!(replies.len(), calls.len());
    for (r, (prog, proc_, _)) in replies.iter().zip(&calls) {
        // MNT from an unreserved port: MNT3ERR_ACCES (13), answered on the blocking pool.
        let want = if *prog == mount::PROGRAM { 13 } else { 0 };
        assert_eq!(r.status(), want, "procedure {proc_} of {prog}: {r:?}");
    }
    // The held paths were taken: the ceiling held calls, stable WRITEs ran on the pool.
    let n = node.volume("n").unwrap();
    assert!(
        n.stats
            .ceiling_wait_ns
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
    assert_eq!(
        svc.counters
            .stable_writes
            .load(std::sync::atomic::Ordering::Relaxed),
        3
    );
    assert_eq!(c.read(&file, 8192, 8192).unwrap().0, vec![2u8; 8192]);
    stop_tx.send_replace(true);
    serving.await.unwrap();
}
