//! The S3 listener bounds its clients (issue 23): a client that trickles its request head
//! one header line a second, or sends nothing, is dropped after HEADER_READ_TIMEOUT; a
//! connection over the cap is closed at once and a freed place is served. Paused tokio
//! time: no 30-second sleeps.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use control_plane::api::ControlPlane;
use s3_server::{S3Options, HEADER_READ_TIMEOUT};
use storage_node::front_end::ServerStats;
use storage_node::NodeConfig;
use test_support::TestDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn start(tag: &str, max_connections: usize) -> (SocketAddr, TestDir) {
    let dir = TestDir::new(&format!("s3bounds-{tag}"));
    let cp = ControlPlane::open(
        &NodeConfig::default(),
        dir.path(),
        Arc::new(ServerStats::default()),
    )
    .unwrap();
    let l = s3_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = l.local_addr().unwrap();
    let opts = S3Options {
        max_connections,
        ..Default::default()
    };
    tokio::spawn(s3_server::serve(l, cp, opts, std::future::pending()));
    (addr, dir)
}

/// An unsigned ListBuckets: any HTTP answer (403 AccessDenied) shows the client was served.
async fn answered(addr: SocketAddr) -> bool {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out).await;
    out.starts_with("HTTP/1.1 ")
}

#[tokio::test(start_paused = true)]
async fn a_trickled_or_silent_request_head_is_dropped() {
    let (addr, _dir) = start("slow", 64).await;
    let t0 = tokio::time::Instant::now();
    let slow = TcpStream::connect(addr).await.unwrap();
    let silent = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = slow.into_split();
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = rd.read_to_end(&mut buf).await;
        tokio::time::Instant::now()
    });
    let writer = tokio::spawn(async move {
        if wr.write_all(b"PUT /b/k HTTP/1.1\r\n").await.is_err() {
            return;
        }
        for i in 0..70 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if wr
                .write_all(format!("X-Slow-{i}: y\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    });
    // Other clients are served meanwhile.
    assert!(answered(addr).await);
    let closed = tokio::time::timeout(Duration::from_secs(70), reader)
        .await
        .expect("the trickling client was still connected after 70 s")
        .unwrap();
    let after = closed - t0;
    assert!(
        after <= HEADER_READ_TIMEOUT + Duration::from_secs(2),
        "dropped after {after:?}"
    );
    writer.abort();
    let mut silent = silent;
    let mut buf = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(5), silent.read_to_end(&mut buf)).await;
    assert!(r.is_ok(), "a silent client outlived the header timeout");
    assert!(answered(addr).await);
}

#[tokio::test]
async fn connections_over_the_cap_are_closed_and_a_freed_place_is_served() {
    let (addr, _dir) = start("cap", 2).await;
    let a = TcpStream::connect(addr).await.unwrap();
    let _b = TcpStream::connect(addr).await.unwrap();
    // Give the accept loop time to take both.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c = TcpStream::connect(addr).await.unwrap();
    let _ = c
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await;
    let mut buf = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut buf)).await;
    assert!(
        matches!(r, Ok(Ok(0)) | Ok(Err(_))),
        "the third connection was served: {:?}",
        String::from_utf8_lossy(&buf)
    );
    drop(a);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(answered(addr).await, "a freed place is served");
}
