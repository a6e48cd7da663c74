//! One TCP connection: read whatever bytes are there, answer every complete record, write
//! all replies produced by that wake-up with one socket write. Replies go out in any order
//! (RPC matches them by xid).
//!
//! A call runs inline on the connection's task (page-cache work of microseconds) or on the
//! blocking pool (anything that syncs). On a node ([`NodeLink`]), every call on a volume's
//! handle first passes the node's admission core through this connection's own
//! [`Gate`] (so each TCP connection is one flow of a provisioned file system's single-flow
//! limit, and `nconnect` buys throughput as it does on FSx): such a call becomes a task of
//! its own that waits for its gates, runs, waits out the emulated array's service latency
//! and is recorded in its volume's statistics, counted as ONTAP counts NFS operations
//! ([`crate::qos`]).

use std::io;
use std::sync::Arc;

use nfs_proto::record;
use storage_node::admission::Gate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::qos::{self, NodeLink};
use crate::service::{Lane, Peer, Service};

/// Calls of one connection in flight at once (running on the blocking pool or held by
/// QoS); beyond it the connection stops reading until one completes (TCP pushes back).
const MAX_IN_FLIGHT: usize = 256;

/// Largest record accepted: the larger transfer size plus room for the headers. A larger
/// one cannot be skipped safely and ends the connection.
pub fn max_record(rtmax: u32, wtmax: u32) -> usize {
    rtmax.max(wtmax) as usize + 64 * 1024
}

/// Serve one connection until the client closes it (or `stop` turns true: then nothing
/// more is read, calls in flight finish and are answered).
pub async fn serve(
    svc: Arc<Service>,
    stream: TcpStream,
    peer: Peer,
    max: usize,
    link: Option<Arc<NodeLink>>,
    mut stop: Option<watch::Receiver<bool>>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let gate = link
        .as_ref()
        .map(|l| Arc::new(Gate::new(l.node.gates(), l.node.clock)));
    let mut inbuf: Vec<u8> = Vec::with_capacity(128 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(128 * 1024);
    let mut pending: JoinSet<Vec<u8>> = JoinSet::new();
    let mut open = true;
    while open || !pending.is_empty() {
        let stopping = async {
            match stop.as_mut() {
                Some(s) => {
                    let _ = s.wait_for(|v| *v).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = rd.read_buf(&mut inbuf), if open && pending.len() < MAX_IN_FLIGHT => {
                if r? == 0 {
                    open = false;
                }
            }
            Some(done) = pending.join_next(), if !pending.is_empty() => {
                match done {
                    Ok(reply) => out.extend_from_slice(&reply),
                    Err(e) => return Err(io::Error::other(format!("NFS call task failed: {e}"))),
                }
                while let Some(done) = pending.try_join_next() {
                    match done {
                        Ok(reply) => out.extend_from_slice(&reply),
                        Err(e) => return Err(io::Error::other(format!("NFS call task failed: {e}"))),
                    }
                }
            }
            _ = stopping, if open => {
                // The node stops: calls already read finish and are answered.
                open = false;
                stop = None;
            }
        }
        let mut used = 0;
        loop {
            let rest = &inbuf[used..];
            let (rec, n) = match record::next_record(rest, max) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    wr.write_all(&out).await?;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
                }
            };
            let info = svc.peek(&rec);
            let on_volume = match (&link, &gate, info.export) {
                (Some(l), Some(g), Some(ex)) => l.volume(ex).map(|v| (l.clone(), g.clone(), v)),
                _ => None,
            };
            match (on_volume, info.lane) {
                (Some((l, g, vol)), lane) if qos::counted(info.kind) => {
                    if !qos::try_inline(&svc, &l, &vol, &peer, &rec, &info, &mut out) {
                        let (svc, rec) = (svc.clone(), rec.into_owned());
                        pending.spawn(qos::call(svc, l, g, vol, peer, rec, info, lane));
                    }
                }
                (_, Lane::Inline) => svc.handle(&peer, &rec, &mut out),
                (_, Lane::Blocking) => {
                    let (svc, rec) = (svc.clone(), rec.into_owned());
                    pending.spawn_blocking(move || {
                        let mut o = Vec::new();
                        svc.handle(&peer, &rec, &mut o);
                        o
                    });
                }
            }
            used += n;
            if out.len() >= 256 * 1024 {
                wr.write_all(&out).await?;
                out.clear();
            }
        }
        if used > 0 {
            inbuf.drain(..used);
        }
        if !out.is_empty() {
            wr.write_all(&out).await?;
            out.clear();
        }
    }
    Ok(())
}
