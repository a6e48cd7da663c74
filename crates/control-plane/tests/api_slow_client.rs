//! The REST front end drops a client that never finishes its request head (a slowloris),
//! after HEADER_READ_TIMEOUT, without disturbing other clients. Paused tokio time: no
//! 30-second sleep.

use std::sync::Arc;
use std::time::Duration;

use control_plane::api::http::{self, HttpConfig, HEADER_READ_TIMEOUT};
use control_plane::api::ControlPlane;
use storage_node::front_end::ServerStats;
use storage_node::NodeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn get(addr: std::net::SocketAddr) -> String {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"GET /api/storage/volumes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_finishes_its_request_head_is_dropped() {
    let dir = test_support::TestDir::new("slow");
    let cfg = NodeConfig::default();
    let cp = ControlPlane::open(&cfg, &dir, Arc::new(ServerStats::default())).unwrap();
    let listener = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(http::serve(
        listener,
        cp,
        HttpConfig {
            auth: Arc::new(control_plane::api::auth::Auth::new(None, None)),
            max_connections: storage_node::conn_limit::DEFAULT_MAX_CONNECTIONS,
            tls: None,
        },
    ));

    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /api/storage/volumes HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Other clients are served meanwhile.
    assert!(get(addr).await.starts_with("HTTP/1.1 200"));

    let mut buf = Vec::new();
    let read = tokio::time::timeout(
        HEADER_READ_TIMEOUT + Duration::from_secs(5),
        slow.read_to_end(&mut buf),
    )
    .await;
    assert!(
        read.is_ok(),
        "the slow client was not dropped within the timeout"
    );
    // Closed (possibly after a 408): nothing left to read.
    assert!(
        buf.is_empty() || String::from_utf8_lossy(&buf).contains("408"),
        "{buf:?}"
    );
    assert!(get(addr).await.starts_with("HTTP/1.1 200"));
}
