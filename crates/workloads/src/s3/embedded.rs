//! The embedded S3 endpoint: when a run names no endpoint, a qoslab storage node with its
//! S3 endpoint is started in this process for the run (a fresh data directory, one user
//! with generated keys, 127.0.0.1 on a free port), and removed after. So
//! `qoslab bench --profile s3` works on a laptop with nothing else running.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use control_plane::api::ControlPlane;
use loadgen::s3::Endpoint;
use storage_node::builder::NodeThread;
use storage_node::front_end::ServerStats;
use storage_node::{Node, NodeConfig};

pub struct EmbeddedS3 {
    pub endpoint: Endpoint,
    dir: PathBuf,
    node: Option<NodeThread>,
    /// Its directory goes on a signal too (the lifecycle's local phase).
    _on_signal: lifecycle::Guard,
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
        let (access, secret) = (format!("QL{}", key(seed, 18)), key(seed ^ 0x5ec, 40));
        let on_signal = {
            let dir = dir.clone();
            lifecycle::register(lifecycle::Phase::Local, move || {
                let _ = std::fs::remove_dir_all(&dir);
            })
        };
        let started = (|| {
            let cp = ControlPlane::open(
                &NodeConfig::default(),
                &dir,
                Arc::new(ServerStats::default()),
            )?;
            cp.s3().ensure_user("bench", &access, &secret)?;
            let s3 = s3_server::S3FrontEnd::bind(
                ([127, 0, 0, 1], 0).into(),
                cp.clone(),
                s3_server::S3Options::default(),
            )
            .map_err(|e| format!("listening: {e}"))?;
            let addr: SocketAddr = s3.local_addr();
            let node = Node::builder_for(cp.node.clone())
                .front_end(s3)
                .spawn_thread("qoslab-s3-node", 2)
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((addr, node))
        })();
        let (addr, node) = started.map_err(|e| {
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
            node: Some(node),
            _on_signal: on_signal,
        })
    }
}

impl Drop for EmbeddedS3 {
    fn drop(&mut self) {
        if let Some(n) = self.node.take() {
            n.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
