//! The workspace's raw NFS test client (`nfs_proto::client`) speaking RPC records to a
//! `Service` directly (no sockets): every call is encoded as a client would send it, and
//! every reply is decoded from bytes.

#![allow(dead_code)]

use std::net::IpAddr;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::Arc;

use nfs_proto::client::{self, Transport};
use nfs_proto::record;
use nfs_proto::rpc::Cred;
use nfs_server::service::Export;
use nfs_server::{Config, ExportSpec, Peer, Policy, Service};

#[allow(unused_imports)] // each test binary uses its part
pub use nfs_proto::client::{parse_reply, skip_post_op, Reply};

/// The workspace's one temp-dir guard (removed on drop, panics included).
#[allow(unused_imports)] // not every test binary makes a directory
pub use test_support::TestDir as Dir;

/// An export id for `junction`, the same for the life of the test process (as the control
/// plane stores one per volume).
pub fn export_id(junction: &str) -> u32 {
    static IDS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut ids = IDS.lock().unwrap();
    match ids.iter().position(|j| j == junction) {
        Some(i) => i as u32 + 1,
        None => {
            ids.push(junction.to_string());
            ids.len() as u32
        }
    }
}

pub fn spec(junction: &str, root: &Path, quota: Option<u64>) -> ExportSpec {
    ExportSpec {
        id: export_id(junction),
        path: junction.into(),
        root: root.to_path_buf(),
        quota,
        policy: Policy::default(),
    }
}

pub fn service() -> Arc<Service> {
    Arc::new(Service::new(Config::default()).unwrap())
}

/// A service exporting `root` at `/vol` (`quota` bytes at most, the default policy), and
/// the export.
pub fn serving_vol(root: &Path, quota: Option<u64>) -> (Arc<Service>, Arc<Export>) {
    let svc = service();
    let ex = svc.add_export(spec("/vol", root, quota)).unwrap();
    (svc, ex)
}

/// Records handed to a `Service` in process, as one connection from `peer`.
pub struct Local {
    svc: Arc<Service>,
    peer: Peer,
    replies: std::collections::VecDeque<Vec<u8>>,
}

impl Transport for Local {
    fn send(&mut self, rec: &[u8]) {
        let mut out = Vec::new();
        self.svc.handle(&self.peer, rec, &mut out);
        if out.is_empty() {
            return;
        }
        let (body, used) = record::next_record(&out, 1 << 24)
            .unwrap()
            .expect("a whole record");
        assert_eq!(used, out.len(), "exactly one reply record");
        self.replies.push_back(body.into_owned());
    }

    fn recv(&mut self) -> Option<Vec<u8>> {
        self.replies.pop_front()
    }
}

/// The raw client on a `Service` (its calls: [`nfs_proto::client::Client`]).
pub struct Client {
    pub svc: Arc<Service>,
    pub peer: Peer,
    rpc: client::Client<Local>,
}

pub fn root_cred() -> Cred {
    client::sys_cred(b"test", 0, 0, &[])
}

impl Client {
    pub fn new(svc: Arc<Service>) -> Client {
        Client::from(svc, "127.0.0.1")
    }
    pub fn from(svc: Arc<Service>, addr: &str) -> Client {
        let addr: IpAddr = addr.parse().unwrap();
        // a reserved port, as the kernel client's and root's libnfs
        let peer = Peer {
            addr,
            port: 700,
            conn: 1,
        };
        let local = Local {
            svc: svc.clone(),
            peer,
            replies: Default::default(),
        };
        Client {
            svc,
            peer,
            rpc: client::Client::new(local, root_cred()),
        }
    }

    /// Sends raw record bytes; returns the reply record if one came.
    pub fn raw(&mut self, rec: &[u8]) -> Option<Reply> {
        self.rpc.transport.send(rec);
        self.rpc.transport.recv().map(|r| parse_reply(&r))
    }
}

impl Deref for Client {
    type Target = client::Client<Local>;
    fn deref(&self) -> &Self::Target {
        &self.rpc
    }
}

impl DerefMut for Client {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.rpc
    }
}
