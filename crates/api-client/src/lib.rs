//! A blocking client for a qoslab node's REST API (and any ONTAP-shaped API).
//!
//! HTTPS through ureq and rustls (ring): the server's certificate is verified against a
//! CA file (a node's `DATA_DIR/tls/ca-cert.pem`), or against the Mozilla roots, or not at
//! all ([`Trust::Insecure`], like `curl -k`). Credentials: HTTP basic (an API user) or a
//! bearer token. A non-2xx reply becomes [`ClientError::Api`] carrying ONTAP's
//! `{"error": {"message", "code", "target"}}`.
//!
//! ```no_run
//! use api_client::{Auth, Client, ClientOptions, Trust};
//! let c = Client::new(&ClientOptions {
//!     url: "https://127.0.0.1:8080".into(),
//!     auth: Auth::Basic { user: "admin".into(), password: "Netapp1!".into() },
//!     trust: Trust::CaFile("qoslab-data/tls/ca-cert.pem".into()),
//!     timeout: None,
//! })?;
//! let vols = c.get("/api/storage/volumes?fields=metric")?;
//! # Ok::<(), api_client::ClientError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use ureq::tls::{Certificate, RootCerts, TlsConfig};

/// Where the node's data directory keeps the CA clients trust.
pub fn data_dir_ca(data_dir: &Path) -> PathBuf {
    data_dir.join("tls").join("ca-cert.pem")
}

/// Credentials sent with every request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Auth {
    #[default]
    None,
    Basic {
        user: String,
        password: String,
    },
    Bearer(String),
}

/// How the server's certificate is checked (https:// only).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Trust {
    /// The Mozilla root certificates (a node with a certificate from a public CA).
    #[default]
    PublicRoots,
    /// Certificates in this PEM file are the roots (e.g. `DATA_DIR/tls/ca-cert.pem`).
    CaFile(PathBuf),
    /// No verification at all (curl -k): encrypted, but anyone can pose as the node.
    Insecure,
}

/// How to reach a node.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Base URL, e.g. `https://127.0.0.1:8080` (a path prefix is kept).
    pub url: String,
    pub auth: Auth,
    pub trust: Trust,
    /// Per-request limit (connect, TLS, send, receive); default 60 s.
    pub timeout: Option<Duration>,
}

/// An error reply from the API (ONTAP shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiFailure {
    pub status: u16,
    pub message: String,
    pub code: String,
    pub target: String,
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (HTTP {}, code {}",
            self.message, self.status, self.code
        )?;
        if !self.target.is_empty() {
            write!(f, ", target {}", self.target)?;
        }
        write!(f, ")")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Api(ApiFailure),
    #[error("--url {url:?}: {why}")]
    BadUrl { url: String, why: String },
    #[error("CA file {path}: {why}")]
    CaFile { path: String, why: String },
    #[error("cannot reach the qoslab API at {url}: {why} (is `qoslab serve` running? see --url)")]
    Unreachable { url: String, why: String },
    #[error(
        "TLS with {url} failed: {why}. The node's certificate must be trusted: give \
         --data-dir DIR (trusts DIR/tls/ca-cert.pem) or --cacert FILE, or --insecure to skip \
         the check (as curl -k)"
    )]
    Tls { url: String, why: String },
    #[error("{method} {url}: {why}")]
    Transport {
        method: String,
        url: String,
        why: String,
    },
    #[error("{method} {url}: HTTP {status}: the reply is not JSON: {text}")]
    NotJson {
        method: String,
        url: String,
        status: u16,
        text: String,
    },
}

/// A client for one node (connections are kept alive and reused).
pub struct Client {
    agent: ureq::Agent,
    base: String,
    authorization: Option<String>,
}

/// Standard base64 with padding (RFC 4648), as HTTP basic authentication sends it.
pub fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn load_ca(path: &Path) -> Result<Vec<Certificate<'static>>, ClientError> {
    let err = |why: String| ClientError::CaFile {
        path: path.display().to_string(),
        why,
    };
    let pem = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let ureq::tls::PemItem::Certificate(c) = item.map_err(|e| err(e.to_string()))? {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        return Err(err("no CERTIFICATE in the file".into()));
    }
    Ok(certs)
}

impl Client {
    pub fn new(o: &ClientOptions) -> Result<Client, ClientError> {
        let url = o.url.trim_end_matches('/');
        let bad = |why: &str| ClientError::BadUrl {
            url: o.url.clone(),
            why: why.to_string(),
        };
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or_else(|| {
                bad("expected https://HOST:PORT (or http:// for --insecure-http nodes)")
            })?;
        if rest.split('/').next().unwrap_or("").is_empty() {
            return Err(bad("no host"));
        }
        let tls = match &o.trust {
            Trust::PublicRoots => TlsConfig::builder().root_certs(RootCerts::WebPki),
            Trust::CaFile(p) => {
                TlsConfig::builder().root_certs(RootCerts::Specific(Arc::new(load_ca(p)?)))
            }
            Trust::Insecure => TlsConfig::builder().disable_verification(true),
        }
        .build();
        let config = ureq::Agent::config_builder()
            .tls_config(tls)
            .http_status_as_error(false)
            .timeout_global(Some(o.timeout.unwrap_or(Duration::from_secs(60))))
            .user_agent(concat!("qoslab/", env!("CARGO_PKG_VERSION")))
            .build();
        let authorization = match &o.auth {
            Auth::None => None,
            Auth::Basic { user, password } => Some(format!(
                "Basic {}",
                base64(format!("{user}:{password}").as_bytes())
            )),
            Auth::Bearer(t) => Some(format!("Bearer {}", t.trim())),
        };
        Ok(Client {
            agent: ureq::Agent::new_with_config(config),
            base: url.to_string(),
            authorization,
        })
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Send a request; returns the status and the body text, whatever the status.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, String), ClientError> {
        self.raw_within(method, path, body, None)
    }

    /// [`Client::raw`] with this request's own time limit (`None`: the client's).
    pub fn raw_within(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        timeout: Option<Duration>,
    ) -> Result<(u16, String), ClientError> {
        let url = format!("{}{path}", self.base);
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Accept", "application/json");
        if let Some(a) = &self.authorization {
            req = req.header("Authorization", a);
        }
        let text = body.map(Value::to_string).unwrap_or_default();
        if body.is_some() {
            req = req.header("Content-Type", "application/json");
        }
        let req = req.body(text).map_err(|e| ClientError::Transport {
            method: method.into(),
            url: url.clone(),
            why: e.to_string(),
        })?;
        use ureq::RequestExt;
        let run = match timeout {
            None => self.agent.run(req),
            Some(t) => req
                .with_agent(&self.agent)
                .configure()
                .timeout_global(Some(t))
                .run(),
        };
        let resp = run.map_err(|e| self.transport_error(method, &url, e))?;
        let status = resp.status().as_u16();
        let text = resp
            .into_body()
            .read_to_string()
            .map_err(|e| self.transport_error(method, &url, e))?;
        Ok((status, text))
    }

    fn transport_error(&self, method: &str, url: &str, e: ureq::Error) -> ClientError {
        let why = e.to_string();
        match e {
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::Pem(_) => {
                ClientError::Tls {
                    url: self.base.clone(),
                    why,
                }
            }
            ureq::Error::Io(ref io)
                if io.get_ref().is_some_and(|inner| {
                    let t = inner.to_string();
                    t.contains("certificate") || t.contains("TLS") || t.contains("tls")
                }) =>
            {
                ClientError::Tls {
                    url: self.base.clone(),
                    why,
                }
            }
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => ClientError::Unreachable {
                url: self.base.clone(),
                why,
            },
            ureq::Error::Io(ref io)
                if matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                ) =>
            {
                ClientError::Unreachable {
                    url: self.base.clone(),
                    why,
                }
            }
            _ => ClientError::Transport {
                method: method.into(),
                url: url.into(),
                why,
            },
        }
    }

    /// Send a request and decode JSON; a non-2xx reply becomes [`ClientError::Api`].
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ClientError> {
        self.call_within(method, path, body, None)
    }

    /// [`Client::call`] with this request's own time limit (`None`: the client's).
    pub fn call_within(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let (status, text) = self.raw_within(method, path, body, timeout)?;
        let v: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) if !(200..300).contains(&status) => Value::Null,
                Err(_) => {
                    return Err(ClientError::NotJson {
                        method: method.into(),
                        url: format!("{}{path}", self.base),
                        status,
                        text: text.chars().take(200).collect(),
                    })
                }
            }
        };
        if (200..300).contains(&status) {
            return Ok(v);
        }
        let e = &v["error"];
        Err(ClientError::Api(ApiFailure {
            status,
            message: e["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| text.trim().chars().take(300).collect()),
            code: e["code"].as_str().unwrap_or("").to_string(),
            target: e["target"].as_str().unwrap_or("").to_string(),
        }))
    }

    pub fn get(&self, path: &str) -> Result<Value, ClientError> {
        self.call("GET", path, None)
    }

    /// `GET path` within `timeout` (a sampler's per-request budget).
    pub fn get_within(&self, path: &str, timeout: Duration) -> Result<Value, ClientError> {
        self.call_within("GET", path, None, Some(timeout))
    }
}

/// Percent-encode a query value (ONTAP's query operators `*|!<>` pass through encoded).
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(base64(b"admin:Netapp1!"), "YWRtaW46TmV0YXBwMSE=");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(enc("a b/c*|>"), "a%20b%2Fc*%7C%3E");
        let bad = |url: &str| {
            Client::new(&ClientOptions {
                url: url.into(),
                ..Default::default()
            })
            .err()
            .map(|e| e.to_string())
        };
        assert!(bad("ftp://x").unwrap().contains("expected https://"));
        assert!(bad("https:///api").unwrap().contains("no host"));
        assert!(bad("https://127.0.0.1:1").is_none());
        let e = Client::new(&ClientOptions {
            url: "https://127.0.0.1:1".into(),
            trust: Trust::CaFile("/nonexistent/ca.pem".into()),
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn a_per_request_timeout_applies() {
        // A server that accepts and never answers.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let c = Client::new(&ClientOptions {
            url: format!("http://127.0.0.1:{port}"),
            ..Default::default()
        })
        .unwrap();
        let t = std::time::Instant::now();
        let e = c
            .get_within("/api/cluster", Duration::from_millis(300))
            .unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "{e}");
        drop(l);
    }

    #[test]
    fn a_closed_port_is_unreachable_not_a_tls_error() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let c = Client::new(&ClientOptions {
            url: format!("https://127.0.0.1:{port}"),
            ..Default::default()
        })
        .unwrap();
        let e = c.get("/api/cluster").unwrap_err();
        assert!(matches!(e, ClientError::Unreachable { .. }), "{e:?}");
    }
}
