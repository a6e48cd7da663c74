//! HTTP/1.1 front end (hyper), over TLS (rustls) unless the node was started with
//! `--insecure-http`: routing, authentication ([`super::auth`]), body limits, and the one
//! place where API errors become HTTP statuses.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::auth::{self, Auth, Verdict};
use super::model::{code, ApiError};
use super::query::{parse_query, percent_decode, Query};
use super::{ControlPlane, Reply, POLICIES, R, SVMS, VOLUMES};

/// Largest request body accepted (larger: 413).
pub const MAX_BODY: usize = 1 << 20;
/// A client that has not sent a complete request head (or finished the TLS handshake)
/// by then is disconnected.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Argon2 checks allowed at once (each takes ~19 MiB and tens of milliseconds).
const HASHES_AT_ONCE: usize = 2;

/// HTTP settings.
pub struct HttpConfig {
    /// Who may call the API.
    pub auth: Arc<Auth>,
    /// HTTPS: the server configuration; `None`: plain HTTP (`--insecure-http`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Connections served at once (more are closed on accept, with a log line).
    pub max_connections: usize,
}

struct Shared {
    cp: Arc<ControlPlane>,
    cfg: HttpConfig,
    hashing: tokio::sync::Semaphore,
    /// Repeated authentication failures by source (429 while locked out).
    backoff: super::backoff::Backoff,
}

/// Serve the API on `listener` until the task is aborted.
pub async fn serve(listener: TcpListener, cp: Arc<ControlPlane>, cfg: HttpConfig) {
    let acceptor = cfg.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let limit = crate::conn_limit::ConnLimit::tcp("REST API", &listener, cfg.max_connections);
    let shared = Arc::new(Shared {
        cp,
        cfg,
        hashing: tokio::sync::Semaphore::new(HASHES_AT_ONCE),
        backoff: Default::default(),
    });
    loop {
        let (stream, peer, guard) = limit.accept(&listener, "http").await;
        let shared = shared.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _guard = guard;
            match acceptor {
                None => connection(stream, shared, peer).await,
                Some(a) => {
                    let Some(tls) = handshake(stream, &a, peer).await else {
                        return;
                    };
                    connection(tls, shared, peer).await
                }
            }
        });
    }
}

/// The TLS handshake; a client speaking plain HTTP to the HTTPS port gets a plain-text
/// 400 saying so (the first byte of a TLS handshake is 0x16; of HTTP, a letter).
async fn handshake(
    stream: TcpStream,
    acceptor: &tokio_rustls::TlsAcceptor,
    peer: SocketAddr,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let mut first = [0u8; 1];
    let peeked = tokio::time::timeout(HEADER_READ_TIMEOUT, stream.peek(&mut first)).await;
    if !matches!(peeked, Ok(Ok(1))) {
        return None;
    }
    if first[0].is_ascii_uppercase() {
        let mut stream = stream;
        let msg = "this qoslab API speaks HTTPS: use https:// (curl -k, or trust \
                   DATA_DIR/tls/ca-cert.pem); start the node with --insecure-http for plain HTTP\n";
        let reply = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{msg}",
            msg.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        return None;
    }
    match tokio::time::timeout(HEADER_READ_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(s)) => Some(s),
        Ok(Err(e)) => {
            tracing::debug!(%peer, "TLS handshake (http): {e}");
            None
        }
        Err(_) => None,
    }
}

async fn connection<S>(stream: S, shared: Arc<Shared>, peer: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(req, &shared, peer.ip()).await) }
    });
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), svc)
        .await
    {
        tracing::debug!("http connection: {e}");
    }
}

/// Bind the API listener.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

type Resp = Response<Full<Bytes>>;

fn json_response(status: u16, body: &serde_json::Value) -> Resp {
    let mut text = serde_json::to_string_pretty(body).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The one mapping from [`ApiError`] to an HTTP response.
fn error_response(e: &ApiError) -> Resp {
    json_response(e.status, &e.body())
}

/// A 401 with the challenges this node accepts (basic for users, bearer for the token).
fn unauthorized_response(e: &ApiError, auth: &Auth) -> Resp {
    let mut r = error_response(e);
    let challenge = match (auth.has_users(), auth.has_token()) {
        (true, true) => "Basic realm=\"qoslab\", Bearer",
        (true, false) => "Basic realm=\"qoslab\"",
        _ => "Bearer",
    };
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    r
}

/// `/docs/api` (a page) and `/docs/api/openapi.json` (the description): open, GET only.
fn docs_response(path: &str, method: &Method) -> Option<Resp> {
    let (body, ty) = match path.trim_end_matches('/') {
        "/docs/api" => (super::docs::page(), "text/html; charset=utf-8"),
        "/docs/api/openapi.json" => (super::docs::OPENAPI.to_string(), "application/json"),
        _ => return None,
    };
    if !matches!(*method, Method::GET | Method::HEAD) {
        return Some(method_not_allowed("GET", method));
    }
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ty));
    Some(r)
}

/// 429 while a source is locked out after repeated failures (docs/SECURITY.md).
fn locked_out(wait: std::time::Duration) -> Resp {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut r = error_response(&ApiError::new(
        429,
        code::UNAUTHORIZED,
        "",
        format!(
            "too many failed authentications from this address: retry in {secs} s \
             (after {} failures in a row each further one doubles the wait, up to {} s)",
            super::backoff::FREE_FAILURES,
            super::backoff::MAX_DELAY.as_secs()
        ),
    ));
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(hyper::header::RETRY_AFTER, v);
    }
    r
}

enum Route {
    Policies,
    Policy(String),
    Volumes,
    Volume(String),
    Svms,
    Svm(String),
    Cluster,
    Metrics,
    S3(super::s3::S3Route),
    Nfs(super::nas::NfsRoute),
    San(super::san::SanRoute),
}

impl Route {
    fn allowed(&self) -> &'static str {
        match self {
            Route::Policies | Route::Volumes => "GET, POST, PATCH, DELETE",
            Route::Policy(_) | Route::Volume(_) => "GET, PATCH, DELETE",
            Route::Svms | Route::Svm(_) | Route::Metrics | Route::Cluster => "GET",
            Route::S3(r) => r.allowed(),
            Route::Nfs(r) => r.allowed(),
            Route::San(r) => r.allowed(),
        }
    }
}

fn route(path: &str) -> Option<Route> {
    let p = path.trim_end_matches('/');
    let one = |prefix: &str| {
        p.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(percent_decode)
    };
    if let Some(r) = super::s3::route(p, percent_decode) {
        return Some(Route::S3(r));
    }
    if let Some(r) = super::nas::route(p, percent_decode) {
        return Some(Route::Nfs(r));
    }
    if let Some(r) = super::san::route(p, percent_decode) {
        return Some(Route::San(r));
    }
    match p {
        "/metrics" => Some(Route::Metrics),
        POLICIES => Some(Route::Policies),
        VOLUMES => Some(Route::Volumes),
        SVMS => Some(Route::Svms),
        "/api/cluster" => Some(Route::Cluster),
        _ => one(POLICIES)
            .map(Route::Policy)
            .or_else(|| one(VOLUMES).map(Route::Volume))
            .or_else(|| one(SVMS).map(Route::Svm)),
    }
}

fn method_not_allowed(allowed: &'static str, m: &Method) -> Resp {
    let mut r = error_response(&ApiError::new(
        405,
        code::METHOD,
        "",
        format!("method {m} is not allowed here; allowed: {allowed}"),
    ));
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allowed));
    r
}

async fn handle(req: Request<Incoming>, shared: &Shared, ip: std::net::IpAddr) -> Resp {
    let path = req.uri().path().to_string();
    if let Some(r) = docs_response(&path, req.method()) {
        return r;
    }
    let Some(route) = route(&path) else {
        return error_response(&ApiError::not_found(
            "",
            format!(
                "no such endpoint {path}; endpoints: /api/cluster, {POLICIES}[/UUID], \
                 {VOLUMES}[/UUID], {SVMS}[/UUID], \
                 /api/protocols/s3/services[/SVM_UUID[/users[/NAME]|/buckets[/UUID]]], \
                 /api/protocols/nfs/export-policies[/ID], /api/storage/luns[/UUID], \
                 /api/protocols/san/igroups[/UUID[/initiators[/NAME]]], \
                 /api/protocols/san/lun-maps[/LUN_UUID/IGROUP_UUID], \
                 /api/protocols/san/iscsi/services[/SVM_UUID], /metrics"
            ),
        ));
    };
    let method = req.method().clone();
    let allowed = route.allowed();
    let ok_method = match method {
        Method::GET | Method::HEAD => true,
        Method::POST | Method::PATCH | Method::DELETE => allowed.contains(method.as_str()),
        _ => false,
    };
    if !ok_method {
        return method_not_allowed(allowed, &method);
    }
    let cp = shared.cp.clone();
    if matches!(route, Route::Metrics) {
        return metrics_response(cp).await;
    }
    let mutating = !matches!(method, Method::GET | Method::HEAD);
    if let Err(r) = check_credentials(shared, req.headers(), ip, mutating).await {
        return r;
    }
    let query = match parse_query(req.uri().query().unwrap_or("")) {
        Ok(q) => q,
        Err(e) => return error_response(&e),
    };
    let body = match read_body(req).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // Handlers take the catalog lock, which a mutation holds across its SQLite commit
    // (an fsync): run them all on the blocking pool so NBD's workers never wait on it.
    let result: Result<Reply, ApiError> =
        tokio::task::spawn_blocking(move || dispatch(&cp, method, route, &body, &query))
            .await
            .unwrap_or_else(|e| Err(ApiError::internal(format!("handler failed: {e}"))));
    match result {
        Ok(reply) => {
            let mut r = json_response(reply.status, &reply.body);
            if let Some(loc) = reply.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
                r.headers_mut().insert(LOCATION, loc);
            }
            r
        }
        Err(e) => error_response(&e),
    }
}

/// `/metrics`: the Prometheus exposition, rendered on the blocking pool.
async fn metrics_response(cp: Arc<ControlPlane>) -> Resp {
    let text = tokio::task::spawn_blocking(move || {
        crate::metrics::render(&cp.node, &cp.volume_uuids(), &cp.server_stats)
    })
    .await
    .unwrap_or_default();
    let mut r = Response::new(Full::new(Bytes::from(text)));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

/// The request's credentials, checked (with the per-source back-off on failures); `Err`:
/// the refusal to send.
async fn check_credentials(
    shared: &Shared,
    headers: &hyper::HeaderMap,
    ip: std::net::IpAddr,
    mutating: bool,
) -> Result<(), Resp> {
    let creds = auth::parse(headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()));
    let sent = !matches!(creds, auth::Credentials::None);
    if sent {
        if let Err(wait) = shared.backoff.check(ip, std::time::Instant::now()) {
            return Err(locked_out(wait));
        }
    }
    match authenticate(shared, &creds, mutating).await {
        Ok(()) if sent => shared.backoff.success(ip),
        Ok(()) => {}
        Err(e) if e.status == 401 => {
            if sent {
                if let Some(d) = shared.backoff.failure(ip, std::time::Instant::now()) {
                    tracing::warn!(%ip, "repeated API authentication failures: locked out for {d:?}");
                }
            }
            return Err(unauthorized_response(&e, &shared.cfg.auth));
        }
        Err(e) => return Err(error_response(&e)),
    }
    Ok(())
}

/// The request body, within [`MAX_BODY`]; `Err`: the 413 or 400 to send.
async fn read_body(req: Request<Incoming>) -> Result<Bytes, Resp> {
    let too_large = || {
        error_response(&ApiError::new(
            413,
            code::TOO_LARGE,
            "",
            format!("request body is larger than the limit of {MAX_BODY} bytes"),
        ))
    };
    if let Some(len) = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > MAX_BODY as u64 {
            return Err(too_large());
        }
    }
    match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Err(too_large());
            }
            Err(error_response(&ApiError::bad(
                code::INVALID_JSON,
                "",
                format!("reading the request body: {e}"),
            )))
        }
    }
}

/// Run one request on its resource (on the blocking pool: handlers take the catalog lock).
fn dispatch(
    cp: &ControlPlane,
    method: Method,
    route: Route,
    body: &[u8],
    query: &Query,
) -> R<Reply> {
    match (method, route) {
        (Method::POST, Route::Policies) => cp.policies().create(body),
        (Method::POST, Route::Volumes) => cp.volumes().create(body),
        (Method::PATCH, Route::Policies) => cp.policies().patch_where(query, body),
        (Method::PATCH, Route::Volumes) => cp.volumes().patch_where(query, body),
        (Method::DELETE, Route::Policies) => cp.policies().delete_where(query),
        (Method::DELETE, Route::Volumes) => cp.volumes().delete_where(query),
        (Method::PATCH, Route::Policy(u)) => cp.policies().patch(&u, body),
        (Method::PATCH, Route::Volume(u)) => cp.volumes().patch(&u, body),
        (Method::DELETE, Route::Policy(u)) => cp.policies().delete(&u),
        (Method::DELETE, Route::Volume(u)) => cp.volumes().delete(&u),
        (_, Route::Policies) => cp.policies().list(query),
        (_, Route::Volumes) => cp.volumes().list(query),
        (_, Route::Svms) => cp.svms().list(query),
        (_, Route::Policy(u)) => cp.policies().get(&u, query),
        (_, Route::Volume(u)) => cp.volumes().get(&u, query),
        (_, Route::Svm(u)) => cp.svms().get(&u, query),
        (_, Route::Cluster) => cp.cluster(),
        (m, Route::S3(r)) => cp.s3().dispatch(&m, r, body, query),
        (m, Route::Nfs(r)) => cp.nas().dispatch(&m, r, body, query),
        (m, Route::San(r)) => cp.san().dispatch(&m, r, body, query),
        (_, Route::Metrics) => Err(ApiError::internal("unroutable request")),
    }
}

/// Check credentials; a basic-auth password not seen before is verified with Argon2 on
/// the blocking pool, at most [`HASHES_AT_ONCE`] at a time.
async fn authenticate(
    shared: &Shared,
    creds: &auth::Credentials,
    mutating: bool,
) -> Result<(), ApiError> {
    match shared.cfg.auth.check(creds, mutating)? {
        Verdict::Allowed => Ok(()),
        Verdict::NeedsHash { user, password } => {
            let _permit = shared
                .hashing
                .acquire()
                .await
                .map_err(|_| ApiError::internal("shutting down"))?;
            let auth = shared.cfg.auth.clone();
            tokio::task::spawn_blocking(move || auth.verify_hash(&user, &password))
                .await
                .unwrap_or_else(|e| Err(ApiError::internal(format!("checking a password: {e}"))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert!(matches!(
            route("/api/storage/volumes/"),
            Some(Route::Volumes)
        ));
        assert!(matches!(route("/api/storage/volumes/abc"), Some(Route::Volume(u)) if u == "abc"));
        assert!(route("/api/storage/volumes/a/b").is_none());
        assert!(route("/api/storage/volumesX").is_none());
        assert!(matches!(route("/api/cluster"), Some(Route::Cluster)));
        assert!(matches!(route("/api/svm/svms"), Some(Route::Svms)));
        assert!(matches!(route("/api/svm/svms/u1"), Some(Route::Svm(u)) if u == "u1"));
        assert!(route("/api/cluster/nodes").is_none());
    }

    /// Every path of the OpenAPI description is routed, and its operations are exactly
    /// the methods the router allows there: the description covers every resource and
    /// documents no method the node refuses (nor leaves out one it serves).
    #[test]
    fn the_description_documents_every_route_with_its_methods() {
        let spec: serde_json::Value = serde_json::from_str(super::super::docs::OPENAPI).unwrap();
        let paths = spec["paths"].as_object().unwrap();
        let mut documented = Vec::new();
        for (template, item) in paths {
            if template.starts_with("/docs") {
                continue;
            }
            // Every {param} becomes a concrete segment.
            let concrete: String = template
                .split('/')
                .map(|s| if s.starts_with('{') { "x1" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            let r = route(&concrete).unwrap_or_else(|| panic!("{template} is not routed"));
            let mut methods: Vec<String> = item
                .as_object()
                .unwrap()
                .keys()
                .filter(|m| *m != "parameters")
                .map(|m| m.to_uppercase())
                .collect();
            methods.sort();
            let mut allowed: Vec<String> = r.allowed().split(", ").map(String::from).collect();
            allowed.sort();
            assert_eq!(methods, allowed, "{template}");
            documented.push(concrete);
        }
        for p in [
            "/api/storage/luns/x1",
            "/api/protocols/san/igroups/x1/initiators/x1",
            "/api/protocols/san/lun-maps/x1/x1",
            "/api/protocols/san/iscsi/services/x1",
            "/api/protocols/nfs/export-policies/x1",
            "/api/protocols/s3/services/x1/buckets/x1",
        ] {
            assert!(documented.iter().any(|d| d == p), "{p} is not documented");
        }
    }
}
