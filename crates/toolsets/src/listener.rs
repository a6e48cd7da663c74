//! Which process on this machine serves an address: the one holding the listening TCP
//! socket of a host:port (or the unix socket bound to a path). Used to give a node that
//! runs here as its own process (`qoslab serve`, nbdkit, …) the node's role in the tool
//! sets instead of "other".
//!
//! Sockets come from `/proc/net/tcp`, `/proc/net/tcp6` and `/proc/net/unix` (parsed by
//! procfs-core), their owners from the `socket:[INODE]` links in `/proc/PID/fd`. Only
//! addresses of this machine are looked up (loopback, or an address a socket can be bound
//! to here): a remote node's port number must never name a local process. Reading another
//! user's `/proc/PID/fd` needs privileges; without them nothing is found.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;

use procfs_core::net::{TcpNetEntries, TcpState, UnixNetEntries};
use procfs_core::process::Stat;
use procfs_core::{ExplicitSystemInfo, FromRead, FromReadSI};

/// Whether `ip` is an address of this machine (in this network namespace).
pub fn is_local_ip(ip: IpAddr) -> bool {
    if ip.is_loopback() {
        return true;
    }
    if ip.is_unspecified() || ip.is_multicast() {
        return false;
    }
    // The kernel lets a socket bind only to its own addresses.
    UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

fn tcp_entries(path: &str) -> Vec<procfs_core::net::TcpNetEntry> {
    let si = ExplicitSystemInfo {
        boot_time_secs: 0,
        ticks_per_second: 100,
        page_size: 4096,
        is_little_endian: cfg!(target_endian = "little"),
    };
    std::fs::File::open(path)
        .ok()
        .and_then(|f| TcpNetEntries::from_read(f, &si).ok())
        .map(|e| e.0)
        .unwrap_or_default()
}

/// The process listening on any of `addrs` (TCP), when the address is this machine's.
pub fn tcp_server_pid(addrs: &[SocketAddr]) -> Option<i32> {
    let addrs: Vec<&SocketAddr> = addrs.iter().filter(|a| is_local_ip(a.ip())).collect();
    if addrs.is_empty() {
        return None;
    }
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for e in tcp_entries(table) {
            if e.state != TcpState::Listen {
                continue;
            }
            let l = e.local_address;
            let serves = |a: &SocketAddr| {
                l.port() == a.port()
                    && (l.ip() == a.ip()
                        || l.ip().is_unspecified()
                        // A v6 socket bound to ::ffff:a.b.c.d serves a.b.c.d.
                        || matches!((l.ip(), a.ip()), (IpAddr::V6(v6), IpAddr::V4(v4)) if v6.to_ipv4_mapped() == Some(v4)))
            };
            if addrs.iter().any(|a| serves(a)) {
                inodes.insert(e.inode);
            }
        }
    }
    socket_owner(&inodes)
}

/// The process whose unix socket is bound to `path`.
pub fn unix_server_pid(path: &Path) -> Option<i32> {
    let want = std::fs::canonicalize(path).ok()?;
    let entries = std::fs::File::open("/proc/net/unix")
        .ok()
        .and_then(|f| UnixNetEntries::from_read(f).ok())?;
    let inodes: HashSet<u64> = entries
        .0
        .into_iter()
        .filter(|e| {
            e.path
                .as_ref()
                .is_some_and(|p| p == path || std::fs::canonicalize(p).ok().as_ref() == Some(&want))
        })
        .map(|e| e.inode)
        .collect();
    socket_owner(&inodes)
}

/// The process holding one of these socket inodes; when several do (a server's forked
/// workers), the one none of the others descends from.
fn socket_owner(inodes: &HashSet<u64>) -> Option<i32> {
    if inodes.is_empty() {
        return None;
    }
    let mut owners: Vec<i32> = Vec::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).ok().is_some_and(|l| {
                l.to_str()
                    .and_then(|s| s.strip_prefix("socket:["))
                    .and_then(|s| s.strip_suffix(']'))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| inodes.contains(&n))
            })
        });
        if holds {
            owners.push(pid);
        }
    }
    let parent: HashMap<i32, i32> = owners
        .iter()
        .filter_map(|p| {
            let f = std::fs::File::open(format!("/proc/{p}/stat")).ok()?;
            Stat::from_read(f).ok().map(|s| (*p, s.ppid))
        })
        .collect();
    owners
        .iter()
        .copied()
        .find(|p| !parent.get(p).is_some_and(|pp| owners.contains(pp)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener};

    #[test]
    fn a_listener_here_is_this_process_and_a_remote_address_is_nobody() {
        let me = std::process::id() as i32;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        assert_eq!(tcp_server_pid(&[addr]), Some(me));
        // The same port on an address that is not this machine's (TEST-NET-1).
        let remote = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), addr.port());
        assert!(!is_local_ip(remote.ip()));
        assert_eq!(tcp_server_pid(&[remote]), None);
        drop(l);
        assert_eq!(tcp_server_pid(&[addr]), None, "nobody listens any more");

        // Bound to every address: loopback reaches it.
        let any = TcpListener::bind("0.0.0.0:0").unwrap();
        let port = any.local_addr().unwrap().port();
        let lo = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        assert_eq!(tcp_server_pid(&[lo]), Some(me));
    }

    #[test]
    fn a_unix_socket_is_found_by_its_path() {
        let dir = crate::testing::TestDir::new("listener");
        let path = dir.join("s.sock");
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_eq!(unix_server_pid(&path), Some(std::process::id() as i32));
        drop(l);
        assert_eq!(unix_server_pid(&dir.join("none.sock")), None);
    }
}
