//! One TCP connection: read whatever bytes are there, answer every complete record
//! (page-cache work inline, syncing work on the blocking pool, replies in any order as
//! RPC allows), write all replies produced by that wake-up with one socket write.

use std::io;
use std::sync::Arc;

use nfs_proto::record;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::service::{Lane, Peer, Service};

/// Calls of one connection running on the blocking pool at once; beyond it the
/// connection stops reading until one completes.
const MAX_BLOCKING: usize = 64;

/// Largest record accepted: the larger transfer size plus room for the headers. A larger
/// one cannot be skipped safely and ends the connection.
pub fn max_record(rtmax: u32, wtmax: u32) -> usize {
    rtmax.max(wtmax) as usize + 64 * 1024
}

pub async fn serve(svc: Arc<Service>, stream: TcpStream, peer: Peer, max: usize) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let mut inbuf: Vec<u8> = Vec::with_capacity(128 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(128 * 1024);
    let mut pending: JoinSet<Vec<u8>> = JoinSet::new();
    let mut open = true;
    while open || !pending.is_empty() {
        tokio::select! {
            r = rd.read_buf(&mut inbuf), if open && pending.len() < MAX_BLOCKING => {
                if r? == 0 {
                    open = false;
                }
            }
            Some(done) = pending.join_next(), if !pending.is_empty() => {
                match done {
                    Ok(reply) => out.extend_from_slice(&reply),
                    Err(e) => return Err(io::Error::other(format!("NFS call task failed: {e}"))),
                }
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
            match svc.peek(&rec).lane {
                Lane::Inline => svc.handle(&peer, &rec, &mut out),
                Lane::Blocking => {
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
