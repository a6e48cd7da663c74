//! HTTP/1.1 front end (hyper): routing, authentication, body limits, and the one place
//! where API errors become HTTP statuses.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::model::{code, ApiError};
use super::{ControlPlane, Query, Reply};

/// Largest request body accepted (larger: 413).
pub const MAX_BODY: usize = 1 << 20;
/// A client that has not sent a complete request head by then is disconnected.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// HTTP settings.
#[derive(Clone, Default)]
pub struct HttpConfig {
    /// Bearer token required by mutating requests (POST, PATCH, DELETE); `None`: open.
    pub token: Option<String>,
}

/// Serve the API on `listener` until the task is aborted.
pub async fn serve(listener: TcpListener, cp: Arc<ControlPlane>, cfg: HttpConfig) {
    let cfg = Arc::new(cfg);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accept (http): {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let cp = cp.clone();
        let cfg = cfg.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let cp = cp.clone();
                let cfg = cfg.clone();
                async move { Ok::<_, Infallible>(handle(req, cp, &cfg).await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                tracing::debug!("http connection: {e}");
            }
        });
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
    let mut r = json_response(e.status, &e.body());
    if e.status == 401 {
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
    }
    r
}

enum Route {
    Policies,
    Policy(String),
    Volumes,
    Volume(String),
    Cluster,
    Metrics,
    S3(super::s3::S3Route),
}

fn route(path: &str) -> Option<Route> {
    let p = path.trim_end_matches('/');
    if p == "/metrics" {
        return Some(Route::Metrics);
    }
    let one = |prefix: &str| {
        p.strip_prefix(prefix)
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(percent_decode)
    };
    if let Some(r) = super::s3::route(p, percent_decode) {
        return Some(Route::S3(r));
    }
    match p {
        "/api/storage/qos/policies" => Some(Route::Policies),
        "/api/storage/volumes" => Some(Route::Volumes),
        "/api/cluster" => Some(Route::Cluster),
        _ => {
            if let Some(u) = one("/api/storage/qos/policies/") {
                Some(Route::Policy(u))
            } else {
                one("/api/storage/volumes/").map(Route::Volume)
            }
        }
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

async fn handle(req: Request<Incoming>, cp: Arc<ControlPlane>, cfg: &HttpConfig) -> Resp {
    let path = req.uri().path().to_string();
    let Some(route) = route(&path) else {
        return error_response(&ApiError::not_found(
            "",
            format!(
                "no such endpoint {path}; endpoints: /api/cluster, \
                 /api/storage/qos/policies[/UUID], /api/storage/volumes[/UUID], \
                 /api/protocols/s3/services[/SVM_UUID[/users[/NAME]|/buckets[/UUID]]], /metrics"
            ),
        ));
    };
    let method = req.method().clone();
    let allowed = match route {
        Route::Policies | Route::Volumes => "GET, POST",
        Route::Policy(_) | Route::Volume(_) => "GET, PATCH, DELETE",
        Route::Metrics | Route::Cluster => "GET",
        Route::S3(ref r) => r.allowed(),
    };
    let ok_method = match method {
        Method::GET | Method::HEAD => true,
        Method::POST => allowed == "GET, POST",
        Method::PATCH | Method::DELETE => allowed == "GET, PATCH, DELETE",
        _ => false,
    };
    if !ok_method {
        return method_not_allowed(allowed, &method);
    }
    if matches!(route, Route::Metrics) {
        let cp2 = cp.clone();
        let text = tokio::task::spawn_blocking(move || crate::metrics::render(&cp2))
            .await
            .unwrap_or_default();
        let mut r = Response::new(Full::new(Bytes::from(text)));
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        return r;
    }
    let mutating = !matches!(method, Method::GET | Method::HEAD);
    if mutating {
        if let Some(token) = &cfg.token {
            if !authorized(req.headers().get(AUTHORIZATION), token) {
                return error_response(&ApiError::new(
                    401,
                    code::UNAUTHORIZED,
                    "",
                    "authentication required: send \"Authorization: Bearer <token>\" with the \
                     token the node was started with (--api-token-file)",
                ));
            }
        }
    }
    let query = match parse_query(req.uri().query().unwrap_or("")) {
        Ok(q) => q,
        Err(e) => return error_response(&e),
    };
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
            return too_large();
        }
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return too_large();
            }
            return error_response(&ApiError::bad(
                code::INVALID_JSON,
                "",
                format!("reading the request body: {e}"),
            ));
        }
    };
    // Handlers take the catalog lock, which a mutation holds across its SQLite commit
    // (an fsync): run them all on the blocking pool so NBD's workers never wait on it.
    let result: Result<Reply, ApiError> =
        tokio::task::spawn_blocking(move || match (method, route) {
            (Method::POST, Route::Policies) => cp.create_policy(&body),
            (Method::POST, Route::Volumes) => cp.create_volume(&body),
            (Method::PATCH, Route::Policy(u)) => cp.patch_policy(&u, &body),
            (Method::PATCH, Route::Volume(u)) => cp.patch_volume(&u, &body),
            (Method::DELETE, Route::Policy(u)) => cp.delete_policy(&u),
            (Method::DELETE, Route::Volume(u)) => cp.delete_volume(&u),
            (_, Route::Policies) => cp.list_policies(&query),
            (_, Route::Volumes) => cp.list_volumes(&query),
            (_, Route::Policy(u)) => cp.get_policy(&u, &query),
            (_, Route::Volume(u)) => cp.get_volume(&u, &query),
            (_, Route::Cluster) => cp.cluster(),
            (m, Route::S3(r)) => cp.s3_dispatch(&m, r, &body, &query),
            (_, Route::Metrics) => Err(ApiError::internal("unroutable request")),
        })
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

fn authorized(h: Option<&HeaderValue>, token: &str) -> bool {
    let Some(given) = h
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    // Compare in time independent of where the first difference is.
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Parse `fields=` and field filters; ONTAP's paging/ordering parameters are accepted and
/// ignored (lists are never paged).
pub fn parse_query(q: &str) -> Result<Query, ApiError> {
    let mut out = Query::default();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (percent_decode(k), percent_decode(v));
        match k.as_str() {
            "fields" => out.fields.extend(
                v.split(',')
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .map(str::to_string),
            ),
            "return_records" | "return_timeout" | "max_records" | "order_by" => {}
            _ => out.filters.push((k, v)),
        }
    }
    Ok(out)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len()
                && b[i + 1].is_ascii_hexdigit()
                && b[i + 2].is_ascii_hexdigit() =>
            {
                let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(b[i + 1]) * 16 + hex(b[i + 2]));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_and_queries() {
        assert_eq!(percent_decode("a%2Cb+c%"), "a,b c%");
        assert_eq!(percent_decode("%zz"), "%zz");
        let q = parse_query("fields=name,qos.policy&name=vol*&return_records=true").unwrap();
        assert_eq!(q.fields, vec!["name", "qos.policy"]);
        assert_eq!(q.filters, vec![("name".to_string(), "vol*".to_string())]);
    }

    #[test]
    fn bearer_tokens() {
        let h = HeaderValue::from_static("Bearer s3cret");
        assert!(authorized(Some(&h), "s3cret"));
        assert!(!authorized(Some(&h), "s3cre"));
        assert!(!authorized(None, "s3cret"));
        assert!(!authorized(
            Some(&HeaderValue::from_static("Basic s3cret")),
            "s3cret"
        ));
    }

    #[test]
    fn routes() {
        assert!(matches!(
            route("/api/storage/volumes/"),
            Some(Route::Volumes)
        ));
        assert!(matches!(route("/api/storage/volumes/abc"), Some(Route::Volume(u)) if u == "abc"));
        assert!(route("/api/storage/volumes/a/b").is_none());
        assert!(matches!(route("/api/cluster"), Some(Route::Cluster)));
        assert!(route("/api/cluster/nodes").is_none());
    }
}
