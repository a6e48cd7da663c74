//! A target on a loopback port for the in-process protocol tests (the initiator is
//! `iscsi_server::client`).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

pub use iscsi_server::client::*;
use iscsi_server::{Config, FileLun, LogicalUnit, Server, StaticLun, StaticTarget, Target};
use test_support::TestDir;

pub const TARGET: &str = "iqn.2026-01.lab.qoslab:test";
pub const INITIATOR: &str = "iqn.2026-01.lab.qoslab:initiator-a";

/// A running target and what keeps it alive.
pub struct Running {
    pub addr: SocketAddr,
    pub shared: Arc<iscsi_server::Shared>,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
    pub dir: TestDir,
}

impl Running {
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = self.task.await;
    }
}

/// A file LU of `size` bytes in `dir`.
pub fn file_lu(dir: &TestDir, name: &str, size: u64) -> Arc<LogicalUnit> {
    let lun = FileLun::open(&dir.join(name), Some(size), 512, false).expect("file LUN");
    LogicalUnit::new(Arc::new(lun))
}

/// A target with one 16 MiB LUN 0 visible to everyone.
pub fn one_lun(dir: &TestDir) -> StaticTarget {
    StaticTarget {
        name: TARGET.into(),
        alias: None,
        luns: vec![StaticLun {
            number: 0,
            lu: file_lu(dir, "lun0.img", 16 << 20),
            initiators: None,
        }],
        auth: None,
    }
}

pub async fn start(dir: TestDir, target: impl Target, config: Config) -> Running {
    let server = Server::bind("127.0.0.1:0", Arc::new(target), config)
        .await
        .expect("bind");
    let addr = server.local_addr().unwrap();
    let shared = server.shared.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    Running {
        addr,
        shared,
        stop: Some(tx),
        task,
        dir,
    }
}

/// A target with [`one_lun`] in a fresh test directory named `name`, served with `config`.
pub async fn served(name: &str, config: Config) -> Running {
    let dir = TestDir::new(name);
    let t = one_lun(&dir);
    start(dir, t, config).await
}

/// A client from `initiator` connected to `srv` and logged in to [`TARGET`] with no keys.
pub async fn logged_in(srv: &Running, initiator: &str) -> Client {
    let mut c = Client::connect(srv.addr, initiator).await.unwrap();
    assert_eq!(c.login(TARGET, &[]).await, (0, 0));
    c
}

/// One Login request with `keys` straight from operational negotiation to full feature
/// phase (CSG 1, NSG 3, transit); the target's answer.
pub async fn login_straight(c: &mut Client, keys: &[(&str, &str)]) -> Pdu {
    c.login_pdu(1, 3, true, keys).await.unwrap()
}
