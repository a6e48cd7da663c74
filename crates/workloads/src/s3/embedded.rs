//! The embedded S3 endpoint: when a run names no endpoint, a qoslab storage node with its
//! S3 endpoint is started in this process for the run (a fresh data directory, one user
//! with generated keys, 127.0.0.1 on a free port), and removed after. So
//! `qoslab bench --profile s3` works on a laptop with nothing else running.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use loadgen::s3::Endpoint;
use storage_node::api::ControlPlane;
use storage_node::server::ServerStats;
use storage_node::NodeConfig;

pub struct EmbeddedS3 {
    pub endpoint: Endpoint,
    dir: PathBuf,
    rt: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

fn key(seed: u64, len: usize) -> String {
    let mut rng = loadgen::genio::Rng::new(seed);
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..len)
        .map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize] as char)
        .collect()
}

impl EmbeddedS3 {
    pub fn start() -> Result<EmbeddedS3, String> {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ u64::from(std::process::id());
        let dir = std::env::temp_dir().join(format!(
            "qoslab-s3-embedded-{}-{seed:x}",
            std::process::id()
        ));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("embedded S3 node: runtime: {e}"))?;
        let (access, secret) = (format!("QL{}", key(seed, 18)), key(seed ^ 0x5ec, 40));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let addr: SocketAddr = rt
            .block_on({
                let (dir, access, secret) = (dir.clone(), access.clone(), secret.clone());
                async move {
                    let cp = ControlPlane::open(
                        &NodeConfig::default(),
                        &dir,
                        Arc::new(ServerStats::default()),
                    )?;
                    cp.s3_ensure_user("bench", &access, &secret)?;
                    let l = s3_server::bind(([127, 0, 0, 1], 0).into())
                        .await
                        .map_err(|e| format!("listening: {e}"))?;
                    let addr = l.local_addr().map_err(|e| e.to_string())?;
                    tokio::spawn(s3_server::serve(
                        l,
                        cp,
                        s3_server::S3Options::default(),
                        async move {
                            let _ = rx.await;
                        },
                    ));
                    Ok::<_, String>(addr)
                }
            })
            .map_err(|e| {
                let _ = std::fs::remove_dir_all(&dir);
                format!("embedded S3 node: {e}")
            })?;
        Ok(EmbeddedS3 {
            endpoint: Endpoint {
                url: format!("http://{addr}"),
                region: "us-east-1".into(),
                access_key: access,
                secret_key: secret,
            },
            dir,
            rt: Some(rt),
            stop: Some(tx),
        })
    }
}

impl Drop for EmbeddedS3 {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(std::time::Duration::from_secs(2));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
