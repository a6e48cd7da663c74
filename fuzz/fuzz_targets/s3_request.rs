//! The S3 endpoint over an arbitrary HTTP request: method, path, query and headers from
//! the input (one per line, `NAME: VALUE`; the rest is the body), through s3s's routing,
//! query and header parsing, the Authorization / presigned-URL parsers and SigV4's
//! canonical request (a user `AKIAFUZZFUZZFUZZFUZZ` exists, so a parseable signature
//! of hers reaches the canonicalisation and the signature comparison), then qoslab's
//! endpoint. Every request gets a response, never a panic.
#![no_main]
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use control_plane::api::ControlPlane;
use storage_node::front_end::ServerStats;

struct Env {
    rt: tokio::runtime::Runtime,
    svc: s3s::service::S3Service,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        // Directories of fuzzer processes that are gone (they exit without clean-up).
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("qoslab-fuzz-s3-") {
                    if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                        let _ = std::fs::remove_dir_all(e.path());
                    }
                }
            }
        }
        let dir = base.join(format!("qoslab-fuzz-s3-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let svc = rt.block_on(async {
            let cp = ControlPlane::open(
                &storage_node::NodeConfig::default(),
                &dir,
                Arc::new(ServerStats::default()),
            )
            .expect("control plane");
            cp.s3().ensure_user("fuzz", "AKIAFUZZFUZZFUZZFUZZ", "fuzzsecretfuzzsecretfuzzsecret00")
                .expect("user");
            s3_server::service(cp, s3_server::S3Options::default())
        });
        Env { rt, svc }
    })
}

fn request(data: &[u8]) -> Option<hyper::Request<s3s::Body>> {
    let text = String::from_utf8_lossy(data);
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let first = lines.next()?;
    let (method, uri) = first.split_once(' ').unwrap_or(("GET", first));
    let mut b = hyper::Request::builder()
        .method(hyper::Method::from_bytes(method.as_bytes()).ok()?)
        .uri(uri);
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            b = b.header(k.trim(), v.trim());
        }
    }
    b.body(s3s::Body::from(body.to_string())).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some(req) = request(data) else {
        return;
    };
    // The endpoint's own checks before s3s (as s3_server::serve makes them).
    let refused = s3_server::presign::refusal(req.uri().query())
        .or_else(|| s3_server::presign::malformed_date(&req));
    if let Some(msg) = refused {
        let _ = s3_server::presign::response(&msg);
        return;
    }
    let e = env();
    let _ = e
        .rt
        .block_on(e.svc.call(req));
});
