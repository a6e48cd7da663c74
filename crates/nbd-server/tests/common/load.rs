//! A closed-loop NBD client on tokio's clock, for the node's virtual-time tests: a node in
//! a temp directory, and `load`, which keeps `qd` requests outstanding on one export and
//! counts completions per second and their mean latency.

use std::sync::Arc;
use std::time::Duration;

use nbd_proto::*;
use nbd_server as server;
use storage_node::testing::TestNode;
use storage_node::Node;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::{handshake, TestDir};

/// The node fixture on tokio's timer (these tests run on tokio's paused clock).
pub fn node(toml: &str, tag: &str) -> (Arc<Node>, TestDir) {
    TestNode::on_tokio_timers(toml, tag).split()
}

/// Move volume `vol` to the policy `policy` after `after` (tokio's clock), from a task
/// of its own: what an administrator does while clients are connected.
pub fn assign_policy_after(node: &Arc<Node>, vol: &str, policy: &str, after: Duration) {
    let v = node.volume(vol).expect("volume");
    let (node, policy) = (node.clone(), policy.to_string());
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        node.assign_policy(&v, Some(policy)).unwrap();
    });
}

/// One client's requests: `qd` outstanding at most, `len` bytes each; every
/// `write_every`-th one a WRITE (0: reads only; 1: writes only); `rate` requests per
/// second (catching up when behind, like fio's rate_iops) or, `None`, as fast as
/// possible (closed loop).
#[derive(Debug, Clone, Copy)]
pub struct Client {
    pub qd: usize,
    pub len: u32,
    pub write_every: u64,
    pub rate: Option<u64>,
}

impl Client {
    /// As fast as possible (closed loop).
    pub fn closed(qd: usize, len: u32, write_every: u64) -> Client {
        Client {
            qd,
            len,
            write_every,
            rate: None,
        }
    }

    /// 4 KiB reads, as fast as possible or at `rate` per second.
    pub fn reads(qd: usize, rate: Option<u64>) -> Client {
        Client {
            rate,
            ..Client::closed(qd, 4096, 0)
        }
    }
}

/// Completions per second and mean latency (ns) of one client.
#[derive(Debug)]
pub struct Load {
    pub per_sec: Vec<u64>,
    pub mean_lat_ns: f64,
}

impl Load {
    /// Mean completions per second from second `from` on.
    pub fn rate(&self, from: usize) -> f64 {
        let s = &self.per_sec[from..];
        s.iter().sum::<u64>() as f64 / s.len() as f64
    }
}

/// Drive `export` as `c` says for `secs` virtual seconds.
pub async fn load(node: Arc<Node>, export: &'static str, c: Client, secs: u64) -> Load {
    let Client {
        qd,
        len,
        write_every,
        rate,
    } = c;
    let (client, server_side) = tokio::io::duplex(16 << 20);
    tokio::spawn(server::connection(server_side, node, None));
    let (mut rd, mut wr) = tokio::io::split(client);
    let size = {
        let mut joined = tokio::io::join(&mut rd, &mut wr);
        handshake(&mut joined, export).await
    };
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let slots = Arc::new(Semaphore::new(qd));
    let writer = {
        let slots = slots.clone();
        tokio::spawn(async move {
            let payload = vec![7u8; len as usize];
            let mut out = Vec::new();
            for k in 0u64.. {
                if let Some(r) = rate {
                    tokio::time::sleep_until(start + Duration::from_nanos(k * 1_000_000_000 / r))
                        .await;
                }
                slots.acquire().await.unwrap().forget();
                if Instant::now() >= end {
                    return;
                }
                let write = write_every > 0 && k % write_every == 0;
                out.clear();
                encode_request(
                    &mut out,
                    &Request {
                        flags: 0,
                        command: if write { CMD_WRITE } else { CMD_READ },
                        // Bit 63: a write; the rest: the send time, for latency.
                        cookie: start.elapsed().as_nanos() as u64 | (u64::from(write) << 63),
                        offset: (k * 7919 * u64::from(len)) % (size - u64::from(len)),
                        length: len,
                    },
                );
                if write {
                    out.extend_from_slice(&payload);
                }
                wr.write_all(&out).await.unwrap();
            }
        })
    };
    let mut per_sec = vec![0u64; secs as usize];
    let (mut lat_sum, mut n) = (0f64, 0u64);
    let mut buf = vec![0u8; len as usize];
    loop {
        let mut hdr = [0u8; 16];
        let Ok(r) = tokio::time::timeout_at(end, rd.read_exact(&mut hdr)).await else {
            break;
        };
        r.unwrap();
        assert_eq!(
            u32::from_be_bytes(hdr[0..4].try_into().unwrap()),
            SIMPLE_REPLY_MAGIC
        );
        assert_eq!(
            u32::from_be_bytes(hdr[4..8].try_into().unwrap()),
            0,
            "I/O failed"
        );
        let cookie = u64::from_be_bytes(hdr[8..16].try_into().unwrap());
        if cookie >> 63 == 0 {
            rd.read_exact(&mut buf).await.unwrap();
        }
        let t = start.elapsed();
        if t >= Duration::from_secs(secs) {
            break;
        }
        per_sec[t.as_secs() as usize] += 1;
        lat_sum += (t.as_nanos() as u64 - (cookie & !(1 << 63))) as f64;
        n += 1;
        slots.add_permits(1);
    }
    writer.abort();
    Load {
        per_sec,
        mean_lat_ns: lat_sum / n.max(1) as f64,
    }
}
