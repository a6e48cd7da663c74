//! The bounds every connection is held to, through the real accept loop over loopback
//! TCP (`listen::serve`): time-outs in paused time (no test waits them out), the admission
//! check at accept, the fragment limit.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::{service, spec, Dir};
use nfs_proto::{record, rpc};
use nfs_server::conn::{self, Limits, Shared};
use nfs_server::{ClientMatch, Flavours, Policy, Rule};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

/// A server with one export admitting only 127.0.0.1, serving until the sender drops.
async fn server(d: &Dir, limits: Limits) -> (SocketAddr, watch::Sender<bool>) {
    let svc = service();
    let mut s = spec("/vol", d.path(), None);
    s.policy = Policy {
        name: "one".into(),
        rules: vec![Rule::new(
            ClientMatch::parse("127.0.0.1").unwrap(),
            Flavours::ANY,
            Flavours::ANY,
        )],
    };
    svc.add_export(s).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let cfg = svc.config();
    let sh = Arc::new(Shared {
        svc,
        link: None,
        limits,
        held: conn::held(limits.held_bytes),
        max_record: conn::max_record(cfg.rtmax, cfg.wtmax),
    });
    let (tx, rx) = watch::channel(false);
    tokio::spawn(nfs_server::listen::serve(l, sh, rx));
    (addr, tx)
}

async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(format!("{from}:0").parse().unwrap()).unwrap();
    s.connect(to).await.unwrap()
}

/// A NULL call of the NFS program.
fn null_call(xid: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let at = record::begin(&mut out);
    rpc::encode_call(&mut out, xid, 100003, 3, 0, &rpc::Cred::None, &[]);
    record::finish(&mut out, at);
    out
}

/// Whether the server closed `s` (EOF) rather than answering within `wait`.
async fn closed(s: &mut TcpStream, wait: Duration) -> bool {
    let mut b = [0u8; 64];
    matches!(
        tokio::time::timeout(wait, s.read(&mut b)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_sends_no_call_is_closed_and_an_idle_one_later() {
    let d = Dir::new("bounds-time");
    let (addr, _stop) = server(&d, Limits::default()).await;
    let mut silent = connect_from("127.0.0.1", addr).await;
    let mut used = connect_from("127.0.0.1", addr).await;
    used.write_all(&null_call(1)).await.unwrap();
    let mut b = [0u8; 64];
    assert!(used.read(&mut b).await.unwrap() > 0, "NULL answered");
    // 10 s without a whole call: closed. A connection that made a call is idle, not new.
    assert!(closed(&mut silent, Duration::from_secs(11)).await);
    assert!(!closed(&mut used, Duration::from_secs(300)).await);
    // Idle 6 minutes: closed too (a kernel client reconnects when it next needs to).
    assert!(closed(&mut used, Duration::from_secs(61)).await);
}

#[tokio::test]
async fn clients_no_export_admits_are_closed_before_they_count() {
    let d = Dir::new("bounds-admit");
    let limits = Limits {
        max_connections: 4,
        ..Limits::default()
    };
    let (addr, _stop) = server(&d, limits).await;
    let mut strangers = Vec::new();
    for _ in 0..20 {
        strangers.push(connect_from("127.0.0.2", addr).await);
    }
    for s in &mut strangers {
        assert!(closed(s, Duration::from_secs(5)).await, "refused at accept");
    }
    // The cap of 4 is all the admitted client's: 4 connections served.
    let mut ours = Vec::new();
    for i in 0..4 {
        let mut s = connect_from("127.0.0.1", addr).await;
        s.write_all(&null_call(i)).await.unwrap();
        let mut b = [0u8; 64];
        assert!(s.read(&mut b).await.unwrap() > 0, "connection {i} answered");
        ours.push(s);
    }
}

#[tokio::test]
async fn a_flood_of_empty_fragments_ends_its_connection() {
    let d = Dir::new("bounds-frag");
    let (addr, _stop) = server(&d, Limits::default()).await;
    let mut s = connect_from("127.0.0.1", addr).await;
    // Empty non-last fragments: 65 headers are more than one record may have.
    let flood = vec![0u8; 4 * (nfs_proto::record::MAX_FRAGMENTS + 1)];
    s.write_all(&flood).await.unwrap();
    assert!(closed(&mut s, Duration::from_secs(5)).await);
    // Another connection is served.
    let mut t = connect_from("127.0.0.1", addr).await;
    t.write_all(&null_call(7)).await.unwrap();
    let mut b = [0u8; 64];
    assert!(t.read(&mut b).await.unwrap() > 0);
}

/// The xids of the replies in `bytes` (whole records), in order.
fn reply_xids(mut bytes: &[u8]) -> Vec<u32> {
    let mut xids = Vec::new();
    while let Some((rec, n)) = record::next_record(bytes, 1 << 20).unwrap() {
        xids.push(u32::from_be_bytes(rec[..4].try_into().unwrap()));
        bytes = &bytes[n..];
    }
    assert!(bytes.is_empty(), "{} bytes of a partial reply", bytes.len());
    xids
}

#[tokio::test]
async fn pipelined_calls_past_several_reads_are_all_answered_even_after_the_client_shuts_its_side()
{
    // 20,000 NULL calls (~880 KB) sent at once are several reads of the connection's
    // cap (a record and 64 KiB: 192 KiB): each is answered once, and a client that shuts
    // its side down once it has sent them still gets every reply before the server closes.
    let d = Dir::new("bounds-pipe");
    let (addr, _stop) = server(&d, Limits::default()).await;
    let s = connect_from("127.0.0.1", addr).await;
    let (mut rd, mut wr) = s.into_split();
    let calls: Vec<u8> = (0..20_000).flat_map(null_call).collect();
    let writer = tokio::spawn(async move {
        wr.write_all(&calls).await.unwrap();
        wr.shutdown().await.unwrap();
        wr
    });
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), rd.read_to_end(&mut got))
        .await
        .expect("the server closes once every call is answered")
        .unwrap();
    drop(writer.await.unwrap());
    let mut xids = reply_xids(&got);
    assert_eq!(xids.len(), 20_000, "every call answered once");
    xids.sort_unstable();
    assert!(xids.iter().copied().eq(0..20_000), "each xid once");
}
