//! The node's process when it runs on this machine but outside the harness (`qoslab serve`
//! given with `--node`, or any NBD, NFS or iSCSI server behind an `nbd://`/`nbd+unix://`,
//! `nfs://` or `iscsi://` target): found by
//! the socket it listens on (`toolsets::listener`), so the tool sets count its CPU as the
//! node's, not as noise. A node on another machine is never matched: only this machine's
//! addresses are looked up.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use crate::target::Target;

/// Where a URL's server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix(PathBuf),
}

/// The endpoint of an `http(s)://` API URL, an `nbd[s]://`, `nbd[s]+unix://` URI, or an
/// `nfs://` or `iscsi://` URL.
pub fn endpoint(url: &str) -> Option<Endpoint> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme {
        "https" => 443,
        "http" => 80,
        "nbd" | "nbds" => 10809,
        "iscsi" => crate::iscsi::DEFAULT_PORT,
        // libnfs URLs carry the NFS port in the query (`nfsport=`); 2049 otherwise.
        "nfs" => rest
            .split_once('?')
            .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("nfsport=")))
            .and_then(|p| p.parse().ok())
            .unwrap_or(2049),
        "nbd+unix" | "nbds+unix" => {
            let query = rest.split_once('?')?.1;
            let socket = query.split('&').find_map(|kv| kv.strip_prefix("socket="))?;
            return Some(Endpoint::Unix(PathBuf::from(socket)));
        }
        _ => return None,
    };
    let authority = rest.split(['/', '?']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default_port,
        };
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().ok()?),
            None => (authority.to_string(), default_port),
        }
    };
    (!host.is_empty()).then_some(Endpoint::Tcp { host, port })
}

/// The local process serving `url`, if it runs on this machine.
pub fn server_pid(url: &str) -> Option<i32> {
    match endpoint(url)? {
        Endpoint::Tcp { host, port } => {
            let addrs: Vec<SocketAddr> = (host.as_str(), port).to_socket_addrs().ok()?.collect();
            toolsets::listener::tcp_server_pid(&addrs)
        }
        Endpoint::Unix(p) => toolsets::listener::unix_server_pid(&p),
    }
}

/// The node's process for `target` when it runs here as a process of its own: a `--node`
/// (its API's listener, else its volume's NBD listener) or the server of an NBD URI, an
/// NFS export or an iSCSI LUN. None
/// for the embedded node (it is the harness), paths, and anything served elsewhere.
pub fn node_pid(target: &Target) -> Option<i32> {
    match target {
        Target::NodeVolume { node, uri, .. } => server_pid(node.url()).or_else(|| server_pid(uri)),
        Target::Nbd(uri) | Target::Nfs(uri) | Target::Iscsi(uri) => server_pid(uri),
        Target::Node(node) => server_pid(node.url()),
        Target::NodeVolumes { node, volumes } => {
            server_pid(node.url()).or_else(|| volumes.first().and_then(|v| server_pid(&v.uri)))
        }
        Target::Embedded | Target::Path(_) | Target::Devices(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_of_api_urls_and_nbd_uris() {
        let tcp = |h: &str, p| {
            Some(Endpoint::Tcp {
                host: h.into(),
                port: p,
            })
        };
        assert_eq!(endpoint("https://127.0.0.1:8443"), tcp("127.0.0.1", 8443));
        assert_eq!(
            endpoint("https://node.example/api"),
            tcp("node.example", 443)
        );
        assert_eq!(
            endpoint("http://admin:pw@localhost:80/"),
            tcp("localhost", 80)
        );
        assert_eq!(endpoint("https://[::1]:9443/x"), tcp("::1", 9443));
        assert_eq!(endpoint("nbd://10.0.0.5/vol"), tcp("10.0.0.5", 10809));
        assert_eq!(
            endpoint("nbds://h:10810/v?tls-certificates=/x"),
            tcp("h", 10810)
        );
        assert_eq!(
            endpoint("nbd+unix:///v?socket=/run/q/nbd.sock"),
            Some(Endpoint::Unix("/run/q/nbd.sock".into()))
        );
        assert_eq!(endpoint("nbd+unix:///v"), None);
        assert_eq!(
            endpoint("iscsi://127.0.0.1:3261/iqn.2026-01.lab.qoslab:n/0"),
            tcp("127.0.0.1", 3261)
        );
        assert_eq!(
            endpoint("iscsi://array.example/iqn.1992-08.com.netapp:sn.1/3"),
            tcp("array.example", 3260)
        );
        assert_eq!(endpoint("iscsi://[::1]/naa.60a0/0"), tcp("::1", 3260));
        assert_eq!(endpoint("/dev/sdb"), None);
        assert_eq!(endpoint("ftp://x"), None);
    }

    #[test]
    fn a_server_here_is_found_and_one_elsewhere_is_not() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let me = Some(std::process::id() as i32);
        assert_eq!(server_pid(&format!("http://127.0.0.1:{port}")), me);
        assert_eq!(server_pid(&format!("nbd://localhost:{port}/v")), me);
        assert_eq!(
            node_pid(&Target::Iscsi(format!(
                "iscsi://127.0.0.1:{port}/iqn.2026-01.lab.qoslab:n/0"
            ))),
            me
        );
        assert_eq!(
            node_pid(&Target::Nbd(format!("nbd://127.0.0.1:{port}/v"))),
            me
        );
        // TEST-NET-1 is never this machine, whatever listens on the port here.
        assert_eq!(server_pid(&format!("https://192.0.2.1:{port}")), None);
        assert_eq!(node_pid(&Target::Embedded), None);
    }
}
