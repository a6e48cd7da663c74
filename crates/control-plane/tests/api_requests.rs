//! One request's way through the REST front end, over loopback HTTP: routing, the allowed
//! methods, credentials (a bearer token for changes), the body limit, a change and a
//! read of what it made, and /metrics. Each step answers with its status.

use std::sync::Arc;

use control_plane::api::http::{self, HttpConfig, MAX_BODY};
use control_plane::api::ControlPlane;
use storage_node::front_end::ServerStats;
use storage_node::NodeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Send one request (closing after it); the status and the whole response.
async fn send(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    let mut c = TcpStream::connect(addr).await.unwrap();
    let req = format!("{head}\r\nHost: x\r\nConnection: close\r\n\r\n");
    c.write_all(req.as_bytes()).await.unwrap();
    c.write_all(body).await.unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).await.unwrap();
    let status = out
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {out:?}"));
    (status, out)
}

#[tokio::test]
async fn requests_are_routed_checked_and_answered() {
    let dir = test_support::TestDir::new("api-requests");
    let cp = ControlPlane::open(
        &NodeConfig::default(),
        &dir,
        Arc::new(ServerStats::default()),
    )
    .unwrap();
    let listener = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let auth = control_plane::api::auth::Auth::new(Some("sesame".into()), None);
    tokio::spawn(http::serve(
        listener,
        cp,
        HttpConfig {
            auth: Arc::new(auth),
            max_connections: storage_node::conn_limit::DEFAULT_MAX_CONNECTIONS,
            tls: None,
        },
    ));
    let policies = "/api/storage/qos/policies";
    let body = br#"{"name": "p", "fixed": {"max_throughput_iops": 100}}"#;
    let post = |auth: &str| {
        format!(
            "POST {policies} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}{auth}",
            body.len()
        )
    };

    assert_eq!(send(addr, "GET /api/nope HTTP/1.1", b"").await.0, 404);
    assert_eq!(
        send(addr, &format!("PUT {policies} HTTP/1.1"), b"").await.0,
        405
    );
    assert_eq!(
        send(addr, &post(""), body).await.0,
        401,
        "changes need the token"
    );
    let wrong = send(addr, &post("\r\nAuthorization: Bearer nope"), body).await;
    assert_eq!(wrong.0, 401, "{}", wrong.1);
    let too_big = format!(
        "POST {policies} HTTP/1.1\r\nAuthorization: Bearer sesame\r\nContent-Length: {}",
        MAX_BODY + 1
    );
    assert_eq!(send(addr, &too_big, b"").await.0, 413);
    let made = send(addr, &post("\r\nAuthorization: Bearer sesame"), body).await;
    assert_eq!(made.0, 201, "{}", made.1);
    assert!(
        made.1.contains(&format!("location: {policies}/")),
        "{}",
        made.1
    );
    let (status, listed) = send(addr, &format!("GET {policies}?name=p HTTP/1.1"), b"").await;
    assert_eq!(status, 200);
    assert!(listed.contains("\"num_records\": 1"), "{listed}");
    let (status, metrics) = send(addr, "GET /metrics HTTP/1.1", b"").await;
    assert_eq!(status, 200);
    assert!(metrics.contains("qoslab_"), "{metrics}");
}
