//! How the harness talks to a running node's REST API (`qoslab bench --node URL`): the
//! volume lookup ([`crate::target::node_volume`]) and the node sampler's
//! ([`crate::node_sampler::RestProbe`]) per-window metrics both go through [`NodeApi`].
//!
//! One implementation today, [`PlainHttp`] (a small blocking HTTP/1.1 GET with a per-call
//! timeout). The CLI picks the implementation in one place (`qoslab`'s `bench::node_api`),
//! so switching to another client (HTTPS, a token) changes that one function.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

/// A node's REST API, read-only.
pub trait NodeApi: Send + Sync {
    /// `GET path` (e.g. `/api/storage/volumes?fields=name,metric`): the JSON body of a 2xx
    /// reply, or a readable error (which names the address).
    fn get(&self, path: &str, timeout: Duration) -> Result<serde_json::Value, String>;
}

/// A running node as the harness reaches it: its URL (what the results store records) and
/// the client that reads its API. Equal when the URLs are.
#[derive(Clone)]
pub struct NodeHandle {
    url: String,
    api: Arc<dyn NodeApi>,
}

impl NodeHandle {
    pub fn new(url: &str, api: Arc<dyn NodeApi>) -> NodeHandle {
        NodeHandle {
            url: url.trim_end_matches('/').to_string(),
            api,
        }
    }

    /// The node at `url` through [`PlainHttp`].
    pub fn plain(url: &str) -> NodeHandle {
        NodeHandle::new(url, Arc::new(PlainHttp::new(url)))
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn get(&self, path: &str, timeout: Duration) -> Result<serde_json::Value, String> {
        self.api.get(path, timeout)
    }
}

impl std::fmt::Debug for NodeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NodeHandle").field(&self.url).finish()
    }
}

impl PartialEq for NodeHandle {
    fn eq(&self, other: &NodeHandle) -> bool {
        self.url == other.url
    }
}

impl Eq for NodeHandle {}

/// Plain HTTP/1.1 (`http://HOST:PORT`), one connection per request.
pub struct PlainHttp {
    url: String,
}

impl PlainHttp {
    pub fn new(url: &str) -> PlainHttp {
        PlainHttp {
            url: url.trim_end_matches('/').to_string(),
        }
    }
}

impl NodeApi for PlainHttp {
    fn get(&self, path: &str, timeout: Duration) -> Result<serde_json::Value, String> {
        let body = http_get(&self.url, path, timeout)?;
        serde_json::from_str(&body).map_err(|e| {
            format!(
                "{}{path}: the reply is not JSON ({e}): {body:.200}",
                self.url
            )
        })
    }
}

/// A plain HTTP/1.1 GET (no TLS); the body of a 2xx reply.
pub fn http_get(url: &str, path: &str, timeout: Duration) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
    let host = rest.split('/').next().unwrap_or(rest);
    let addr = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let sock = std::net::ToSocketAddrs::to_socket_addrs(&addr)
        .map_err(|e| format!("{addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: no address"))?;
    let mut s =
        std::net::TcpStream::connect_timeout(&sock, timeout).map_err(|e| format!("{addr}: {e}"))?;
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    // One write: a request split over several segments can race the server's reply.
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)
        .map_err(|e| format!("{addr}: {e}"))?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{addr}: malformed HTTP reply"))?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if !status.starts_with('2') {
        return Err(format!("{url}{path}: HTTP {status}"));
    }
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    if !chunked {
        return Ok(body.to_string());
    }
    let (mut out, mut rest) = (String::new(), body);
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).map_err(|_| "bad chunk".to_string())?;
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    Ok(out)
}
