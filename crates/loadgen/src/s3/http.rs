//! The real target: S3 over HTTP/1.1. Requests are signed by `rusty-s3` (AWS Signature V4
//! as presigned URLs: the signature in the query string, `UNSIGNED-PAYLOAD`) and sent over
//! hyper's client connections, one keep-alive connection per client, reopened when the
//! server closes it. Path-style addressing, plain HTTP only (no TLS client is built in).
//!
//! A GET's time to first byte is taken when the first body chunk arrives (warp's
//! definition: request sent to first byte of the object).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rusty_s3::actions::{DeleteObjectsResponse, ListObjectsV2, ObjectIdentifier};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use tokio::net::TcpStream;
use tokio::time::Instant;
use url::Url;

use super::spec::Endpoint;
use super::target::{
    Created, Listed, ObjectClient, ObjectTarget, Page, S3Error, S3Future, Transfer,
};

/// How long a presigned request stays valid (it is sent at once).
const EXPIRY: Duration = Duration::from_secs(3600);
/// The most of an error body kept (for its `<Code>` and `<Message>`).
const MAX_ERROR_BODY: usize = 64 << 10;

struct Inner {
    base: Url,
    /// `host:port` to connect to.
    authority: String,
    /// The Host header, as the signature covers it.
    host_header: String,
    region: String,
    creds: Credentials,
    timeout: Duration,
}

/// An S3 endpoint over HTTP.
#[derive(Clone)]
pub struct HttpTarget {
    inner: Arc<Inner>,
}

impl HttpTarget {
    /// Check the endpoint's URL (http only) and keep the credentials.
    pub fn new(ep: &Endpoint, timeout: Duration) -> Result<HttpTarget, S3Error> {
        let bad = |m: String| S3Error::new("Config", format!("endpoint {:?}: {m}", ep.url));
        let base = Url::parse(&ep.url).map_err(|e| bad(e.to_string()))?;
        match base.scheme() {
            "http" => {}
            "https" => return Err(bad(
                "https is not supported (the driver has no TLS client); use an http:// endpoint"
                    .into(),
            )),
            s => return Err(bad(format!("scheme {s:?}: allowed: http"))),
        }
        let host = base
            .host_str()
            .ok_or_else(|| bad("no host".into()))?
            .to_string();
        let port = base.port_or_known_default().unwrap_or(80);
        let host_header = match base.port() {
            Some(p) if p != 80 => format!("{host}:{p}"),
            _ => host.clone(),
        };
        if ep.access_key.is_empty() || ep.secret_key.is_empty() {
            return Err(bad("no access key or secret key".into()));
        }
        Ok(HttpTarget {
            inner: Arc::new(Inner {
                authority: format!("{host}:{port}"),
                host_header,
                region: ep.region.clone(),
                creds: Credentials::new(ep.access_key.clone(), ep.secret_key.clone()),
                base,
                timeout,
            }),
        })
    }
}

impl ObjectTarget for HttpTarget {
    fn client(&self) -> Box<dyn ObjectClient> {
        Box::new(HttpClient {
            t: self.inner.clone(),
            conn: None,
            buckets: HashMap::new(),
        })
    }

    fn describe(&self) -> String {
        format!("S3 {} (region {})", self.inner.base, self.inner.region)
    }
}

/// One client: one connection at a time, requests in sequence.
pub struct HttpClient {
    t: Arc<Inner>,
    conn: Option<SendRequest<Full<Bytes>>>,
    buckets: HashMap<String, Bucket>,
}

/// `f`, or a `Timeout` error once `limit` has passed.
async fn within<T>(
    limit: Duration,
    f: impl std::future::Future<Output = Result<T, S3Error>>,
) -> Result<T, S3Error> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(S3Error::new(
            "Timeout",
            format!("no complete reply within {limit:?}"),
        )),
    }
}

fn io(e: impl std::fmt::Display) -> S3Error {
    S3Error::new("IO", e.to_string())
}

/// The text between `<tag>` and `</tag>` in an S3 error document.
fn xml_field<'a>(doc: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = doc.find(&open)? + open.len();
    let end = doc[start..].find(&format!("</{tag}>"))? + start;
    Some(doc[start..end].trim())
}

/// The error a non-2xx response stands for.
fn error_of(status: StatusCode, body: &[u8]) -> S3Error {
    let text = String::from_utf8_lossy(body);
    match xml_field(&text, "Code") {
        Some(code) if !code.is_empty() => S3Error::new(
            code,
            xml_field(&text, "Message")
                .unwrap_or(status.canonical_reason().unwrap_or(""))
                .to_string(),
        ),
        _ => S3Error::new(
            if status == StatusCode::NOT_FOUND {
                "NotFound".to_string()
            } else {
                format!("HTTP {}", status.as_u16())
            },
            status.canonical_reason().unwrap_or("").to_string(),
        ),
    }
}

impl HttpClient {
    fn bucket(&mut self, name: &str) -> Result<Bucket, S3Error> {
        if let Some(b) = self.buckets.get(name) {
            return Ok(b.clone());
        }
        let b = Bucket::new(
            self.t.base.clone(),
            UrlStyle::Path,
            name.to_string(),
            self.t.region.clone(),
        )
        .map_err(|e| S3Error::new("Config", format!("bucket {name:?}: {e}")))?;
        self.buckets.insert(name.to_string(), b.clone());
        Ok(b)
    }

    /// The open connection, or a new one. Returns whether it was reused.
    async fn connection(&mut self) -> Result<(&mut SendRequest<Full<Bytes>>, bool), S3Error> {
        if self.conn.as_ref().is_some_and(|c| c.is_closed()) {
            self.conn = None;
        }
        let reused = self.conn.is_some();
        let conn = match &mut self.conn {
            Some(c) => c,
            slot => {
                let tcp = TcpStream::connect(&self.t.authority)
                    .await
                    .map_err(|e| S3Error::new("Connect", format!("{}: {e}", self.t.authority)))?;
                let _ = tcp.set_nodelay(true);
                let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                    .await
                    .map_err(io)?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                slot.insert(send)
            }
        };
        conn.ready().await.map_err(io)?;
        Ok((conn, reused))
    }

    /// Send one request (once more on a fresh connection if a reused one was closed under
    /// it: an idle keep-alive connection the server dropped is not the request's failure),
    /// and turn a non-2xx reply into its error (body drained).
    async fn ok(
        &mut self,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Response<Incoming>, S3Error> {
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let resp = loop {
            let mut b = Request::builder()
                .method(method.clone())
                .uri(target.as_str())
                .header(hyper::header::HOST, self.t.host_header.as_str());
            for (k, v) in headers {
                b = b.header(*k, *v);
            }
            let req = b.body(Full::new(body.clone())).map_err(io)?;
            let (conn, reused) = self.connection().await?;
            match conn.send_request(req).await {
                Ok(r) => break r,
                Err(e) => {
                    self.conn = None;
                    if !(reused && (e.is_canceled() || e.is_incomplete_message())) {
                        return Err(io(e));
                    }
                }
            }
        };
        if resp.status().is_success() {
            return Ok(resp);
        }
        let (status, text) = self.text(resp).await?;
        Err(error_of(status, &text))
    }

    /// Read a response's body: its length and when its first byte arrived.
    async fn drain(&mut self, resp: Response<Incoming>) -> Result<(u64, Option<Instant>), S3Error> {
        let (mut n, mut first) = (0u64, None);
        self.each_data(resp.into_body(), |d| {
            if first.is_none() && !d.is_empty() {
                first = Some(Instant::now());
            }
            n += d.len() as u64;
        })
        .await?;
        Ok((n, first))
    }

    /// Hand each data frame of a body to `each` as it arrives; a body that breaks off
    /// takes its connection with it (it is not reused).
    async fn each_data(
        &mut self,
        mut body: Incoming,
        mut each: impl FnMut(&Bytes),
    ) -> Result<(), S3Error> {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                self.conn = None;
                io(e)
            })?;
            if let Some(d) = frame.data_ref() {
                each(d);
            }
        }
        Ok(())
    }

    /// A response's body as text (bounded), for XML replies and errors.
    async fn text(&mut self, resp: Response<Incoming>) -> Result<(StatusCode, Vec<u8>), S3Error> {
        let status = resp.status();
        let mut out = Vec::new();
        self.each_data(resp.into_body(), |d| {
            if out.len() < MAX_ERROR_BODY || status.is_success() {
                out.extend_from_slice(d);
            }
        })
        .await?;
        Ok((status, out))
    }

    /// A request whose reply carries no payload (PUT, HEAD, DELETE), within the timeout:
    /// the bytes it moved are the body it sent.
    async fn no_payload(
        &mut self,
        method: Method,
        url: &Url,
        body: Bytes,
    ) -> Result<Transfer, S3Error> {
        let len = body.len() as u64;
        let limit = self.t.timeout;
        within(limit, async {
            let resp = self.ok(method, url, &[], body).await?;
            self.drain(resp).await?;
            Ok(Transfer {
                bytes: len,
                first_byte: None,
            })
        })
        .await
    }
}

impl ObjectClient for HttpClient {
    fn put<'a>(&'a mut self, bucket: &'a str, key: &'a str, body: Bytes) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let url = b.put_object(Some(&self.t.creds), key).sign(EXPIRY);
            self.no_payload(Method::PUT, &url, body).await
        })
    }

    fn get<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let url = b.get_object(Some(&self.t.creds), key).sign(EXPIRY);
            let limit = self.t.timeout;
            within(limit, async {
                let resp = self.ok(Method::GET, &url, &[], Bytes::new()).await?;
                let (n, first) = self.drain(resp).await?;
                Ok(Transfer {
                    bytes: n,
                    first_byte: first.or_else(|| Some(Instant::now())),
                })
            })
            .await
        })
    }

    fn stat<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let url = b.head_object(Some(&self.t.creds), key).sign(EXPIRY);
            self.no_payload(Method::HEAD, &url, Bytes::new()).await
        })
    }

    fn delete<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let url = b.delete_object(Some(&self.t.creds), key).sign(EXPIRY);
            self.no_payload(Method::DELETE, &url, Bytes::new()).await
        })
    }

    fn list<'a>(
        &'a mut self,
        bucket: &'a str,
        prefix: &'a str,
        max_keys: u32,
        token: Option<&'a str>,
    ) -> S3Future<'a, Page> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let mut a = b.list_objects_v2(Some(&self.t.creds));
            if !prefix.is_empty() {
                a.with_prefix(prefix);
            }
            a.with_max_keys(max_keys as usize);
            if let Some(t) = token {
                a.with_continuation_token(t);
            }
            let url = a.sign(EXPIRY);
            let limit = self.t.timeout;
            let fut = async {
                let resp = self.ok(Method::GET, &url, &[], Bytes::new()).await?;
                let (_, text) = self.text(resp).await?;
                let text = String::from_utf8_lossy(&text);
                let r = ListObjectsV2::parse_response(&text)
                    .map_err(|e| S3Error::new("BadReply", format!("ListObjectsV2 XML: {e}")))?;
                Ok(Page {
                    objects: r
                        .contents
                        .into_iter()
                        .map(|c| Listed {
                            key: c.key,
                            size: c.size.unwrap_or(0),
                        })
                        .collect(),
                    next: r.next_continuation_token,
                })
            };
            within(limit, fut).await
        })
    }

    fn delete_many<'a>(
        &'a mut self,
        bucket: &'a str,
        keys: &'a [String],
    ) -> S3Future<'a, Vec<String>> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let ids: Vec<ObjectIdentifier> = keys
                .iter()
                .map(|k| ObjectIdentifier::new(k.clone()))
                .collect();
            let mut a = b.delete_objects(Some(&self.t.creds), ids.iter());
            a.set_quiet(true);
            let url = a.sign(EXPIRY);
            let (body, md5) = a.body_with_md5();
            let limit = self.t.timeout;
            let fut = async {
                let resp = self
                    .ok(
                        Method::POST,
                        &url,
                        &[("content-md5", md5.as_str())],
                        Bytes::from(body),
                    )
                    .await?;
                let (_, text) = self.text(resp).await?;
                let r = DeleteObjectsResponse::parse(&String::from_utf8_lossy(&text))
                    .map_err(|e| S3Error::new("BadReply", format!("DeleteObjects XML: {e}")))?;
                Ok(r.errors.into_iter().map(|e| e.key).collect())
            };
            within(limit, fut).await
        })
    }

    fn create_bucket<'a>(&'a mut self, bucket: &'a str) -> S3Future<'a, Created> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let a = b.create_bucket(&self.t.creds);
            let url = a.sign(EXPIRY);
            let body = a.body();
            let limit = self.t.timeout;
            let fut = async {
                match self.ok(Method::PUT, &url, &[], Bytes::from(body)).await {
                    Ok(resp) => {
                        self.drain(resp).await?;
                        Ok(Created::Created)
                    }
                    Err(e) if e.code == "BucketAlreadyOwnedByYou" => Ok(Created::Existed),
                    Err(e) => Err(e),
                }
            };
            within(limit, fut).await
        })
    }

    fn delete_bucket<'a>(&'a mut self, bucket: &'a str) -> S3Future<'a, ()> {
        Box::pin(async move {
            let b = self.bucket(bucket)?;
            let url = b.delete_bucket(&self.t.creds).sign(EXPIRY);
            let limit = self.t.timeout;
            let fut = async {
                let resp = self.ok(Method::DELETE, &url, &[], Bytes::new()).await?;
                self.drain(resp).await?;
                Ok(())
            };
            within(limit, fut).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(url: &str) -> Endpoint {
        Endpoint {
            url: url.into(),
            region: "us-east-1".into(),
            access_key: "AKIAEXAMPLE000000001".into(),
            secret_key: "secretsecretsecretsecret".into(),
        }
    }

    #[test]
    fn endpoints_are_checked() {
        let t = HttpTarget::new(&ep("http://127.0.0.1:9000"), EXPIRY).unwrap();
        assert_eq!(t.inner.authority, "127.0.0.1:9000");
        assert_eq!(t.inner.host_header, "127.0.0.1:9000");
        let t = HttpTarget::new(&ep("http://s3.lab"), EXPIRY).unwrap();
        assert_eq!(
            (t.inner.authority.as_str(), t.inner.host_header.as_str()),
            ("s3.lab:80", "s3.lab")
        );
        let e = HttpTarget::new(&ep("https://s3.lab"), EXPIRY)
            .err()
            .unwrap();
        assert!(e.message.contains("https is not supported"), "{e}");
        let e = HttpTarget::new(&ep("ftp://x"), EXPIRY).err().unwrap();
        assert!(e.message.contains("allowed: http"), "{e}");
        let e = HttpTarget::new(&ep("not a url"), EXPIRY).err().unwrap();
        assert_eq!(e.code, "Config");
    }

    #[test]
    fn errors_carry_s3s_code() {
        let e = error_of(
            StatusCode::SERVICE_UNAVAILABLE,
            b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>",
        );
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("SlowDown", "Reduce your rate")
        );
        assert_eq!(error_of(StatusCode::NOT_FOUND, b"").code, "NotFound");
        assert_eq!(
            error_of(StatusCode::BAD_GATEWAY, b"<html>").code,
            "HTTP 502"
        );
    }
}
