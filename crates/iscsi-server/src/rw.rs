//! The commands that move data between the initiator and a LUN: READ, WRITE (and WRITE
//! AND VERIFY), VERIFY, WRITE SAME, UNMAP, COMPARE AND WRITE, SYNCHRONIZE CACHE and GET
//! LBA STATUS. Data moves a chunk (at most 1 MiB, or a burst) at a time, so a command's
//! memory is bounded whatever its transfer length. Page-cache I/O runs inline when the
//! LUN says it may ([`crate::Caps::inline_io`]); syncs, FUA writes and hole punches run
//! on the blocking pool.

use std::sync::Arc;

use iscsi_proto::pdu::target::Residual;
use iscsi_proto::scsi::cdb::{Rw, WriteSame};
use iscsi_proto::scsi::data::{self, Provisioning};
use iscsi_proto::scsi::sense::{self, status, Sense};
use iscsi_proto::scsi::truncate;

use crate::lu::{LogicalUnit, MAX_TRANSFER_BYTES};
use crate::reply::{check, in_range, writable, Reply};
use crate::task::{Aborted, TaskCtx};

/// Largest piece of a read read (and sent) at once.
const CHUNK: u64 = 1 << 20;

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(std::io::Error::other(format!("I/O task failed: {e}"))),
    }
}

fn io_error(e: &std::io::Error, write: bool) -> Reply {
    tracing::warn!(
        "iscsi: LUN {} failed: {e}",
        if write { "write" } else { "read" }
    );
    let asc = match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => sense::SPACE_ALLOCATION_FAILED,
        _ if write => sense::WRITE_ERROR,
        _ => sense::UNRECOVERED_READ_ERROR,
    };
    Reply::Check(Sense::new(asc))
}

fn aborted(_: Aborted) -> Reply {
    Reply::Status(status::TASK_ABORTED)
}

/// Bytes of `blocks` blocks, refused above the transfer limit (Block Limits VPD).
fn transfer(lu: &LogicalUnit, blocks: u32, len_byte: u16) -> Result<u64, Reply> {
    let bytes = blocks as u64 * lu.block_size as u64;
    if bytes > MAX_TRANSFER_BYTES {
        return Err(Reply::Check(Sense::cdb_field(len_byte)));
    }
    Ok(bytes)
}

pub async fn read(t: &mut TaskCtx, lu: &Arc<LogicalUnit>, r: Rw) -> Result<Reply, Reply> {
    in_range(lu, r.lba, r.blocks as u64)?;
    let total = transfer(lu, r.blocks, 7)?;
    let send = if t.read { total.min(t.edtl as u64) } else { 0 };
    let residual = Residual::of(t.edtl, total as u32);
    if send == 0 {
        return Ok(Reply::Streamed);
    }
    let base = r.lba * lu.block_size as u64;
    let mut done = 0u64;
    loop {
        if t.abort.is_set() {
            return Err(Reply::Status(status::TASK_ABORTED));
        }
        let n = (send - done).min(CHUNK);
        let last = done + n == send;
        let st = last.then_some((status::GOOD, residual));
        let mut bytes = Vec::with_capacity(n as usize + 128);
        let at = if lu.caps.inline_io {
            let lun = &lu.lun;
            t.sink.encode(&mut bytes, n as u32, st, |o, b| {
                lun.read(base + done + o as u64, b)
            })
        } else {
            let lun = lu.lun.clone();
            let off = base + done;
            let buf = blocking(move || {
                let mut v = vec![0u8; n as usize];
                lun.read(off, &mut v).map(|_| v)
            })
            .await
            .map_err(|e| io_error(&e, false))?;
            t.sink
                .encode::<std::io::Error>(&mut bytes, n as u32, st, |o, b| {
                    b.copy_from_slice(&buf[o as usize..o as usize + b.len()]);
                    Ok(())
                })
        };
        let at = at.map_err(|e| io_error(&e, false))?;
        done += n;
        match at {
            Some(at) if last => {
                return Ok(Reply::Tail {
                    bytes,
                    at,
                    residual,
                })
            }
            _ => t.sink.send(bytes),
        }
    }
}

/// How much of a data-out transfer to take: all of it, or (when the initiator's EDTL is
/// shorter) whole blocks of what it sends; a partial block is an error.
fn data_out_want(t: &TaskCtx, lu: &LogicalUnit, total: u64) -> Result<u64, Reply> {
    let bs = lu.block_size as u64;
    let avail = t.data.available as u64;
    if avail < total && !avail.is_multiple_of(bs) {
        return check(sense::INVALID_FIELD_IN_INFORMATION_UNIT);
    }
    Ok(total.min(avail) / bs * bs)
}

/// The next Data-Out chunk that starts inside the first `want` bytes of the transfer
/// (chunks past it are skipped): its offset and its data, cut at `want`. `None` when the
/// transfer ended (the connection went away).
async fn next_within(t: &mut TaskCtx, want: u64) -> Result<Option<(u64, Vec<u8>)>, Reply> {
    loop {
        let Some(c) = t.data.next().await.map_err(aborted)? else {
            return Ok(None);
        };
        let off = c.offset as u64;
        if off >= want {
            continue;
        }
        let n = (c.data.len() as u64).min(want - off) as usize;
        let mut data = c.data;
        data.truncate(n);
        return Ok(Some((off, data)));
    }
}

pub async fn write(t: &mut TaskCtx, lu: &Arc<LogicalUnit>, r: Rw) -> Result<Reply, Reply> {
    writable(lu)?;
    in_range(lu, r.lba, r.blocks as u64)?;
    let total = transfer(lu, r.blocks, 7)?;
    let want = data_out_want(t, lu, total)?;
    let _shared = lu.atomic.read().await;
    let want = t.data.start(want as u32) as u64;
    let base = r.lba * lu.block_size as u64;
    let fua = r.fua && lu.caps.can_fua;
    let mut got = 0u64;
    while got < want {
        let Some((off, data)) = next_within(t, want).await? else {
            break;
        };
        let n = data.len();
        let res = if lu.caps.inline_io && !fua {
            lu.lun.write(base + off, &data, false)
        } else {
            let lun = lu.lun.clone();
            blocking(move || lun.write(base + off, &data, fua)).await
        };
        res.map_err(|e| io_error(&e, true))?;
        got = got.max(off + n as u64);
    }
    if got < want {
        // The connection went away mid-transfer; nobody reads this answer.
        return check(sense::WRITE_ERROR);
    }
    if r.fua && !lu.caps.can_fua {
        flush(lu).await?;
    }
    Ok(Reply::Good(Vec::new()))
}

async fn flush(lu: &Arc<LogicalUnit>) -> Result<(), Reply> {
    let lun = lu.lun.clone();
    blocking(move || lun.flush())
        .await
        .map_err(|e| io_error(&e, true))
}

/// Reads `len` bytes at `off` (inline or on the blocking pool).
async fn read_buf(lu: &Arc<LogicalUnit>, off: u64, len: usize) -> Result<Vec<u8>, Reply> {
    let lun = lu.lun.clone();
    let r = if lu.caps.inline_io {
        let mut v = vec![0u8; len];
        lun.read(off, &mut v).map(|_| v)
    } else {
        blocking(move || {
            let mut v = vec![0u8; len];
            lun.read(off, &mut v).map(|_| v)
        })
        .await
    };
    r.map_err(|e| io_error(&e, false))
}

fn miscompare(at: u64) -> Reply {
    Reply::Check(
        Sense::new(sense::MISCOMPARE_DURING_VERIFY)
            .with_information(at.min(u32::MAX as u64) as u32),
    )
}

pub async fn verify(
    t: &mut TaskCtx,
    lu: &Arc<LogicalUnit>,
    rw: Rw,
    bytchk: bool,
) -> Result<Reply, Reply> {
    in_range(lu, rw.lba, rw.blocks as u64)?;
    let total = transfer(lu, rw.blocks, 7)?;
    if !bytchk {
        // The medium is readable by construction: nothing to check without data.
        return Ok(Reply::Good(Vec::new()));
    }
    let want = data_out_want(t, lu, total)?;
    let want = t.data.start(want as u32) as u64;
    let base = rw.lba * lu.block_size as u64;
    let mut got = 0u64;
    while got < want {
        let Some((off, data)) = next_within(t, want).await? else {
            break;
        };
        let n = data.len();
        let medium = read_buf(lu, base + off, n).await?;
        if let Some(i) = medium.iter().zip(&data).position(|(a, b)| a != b) {
            return Err(miscompare(off + i as u64));
        }
        got = got.max(off + n as u64);
    }
    Ok(Reply::Good(Vec::new()))
}

pub async fn write_same(
    t: &mut TaskCtx,
    lu: &Arc<LogicalUnit>,
    ws: WriteSame,
) -> Result<Reply, Reply> {
    writable(lu)?;
    // UNMAP needs a thin LU; ANCHOR (anchored blocks) is not supported (ANC_SUP=0).
    if (ws.unmap && !lu.caps.can_trim) || ws.anchor {
        return Err(Reply::Check(Sense::cdb_field(1)));
    }
    let n = lu.blocks();
    let blocks = match ws.blocks {
        // WSNZ=0: zero blocks means through the last block.
        0 if ws.lba < n => n - ws.lba,
        0 => return check(sense::LBA_OUT_OF_RANGE),
        b => b as u64,
    };
    in_range(lu, ws.lba, blocks)?;
    if blocks > lu.limits.max_write_same {
        return Err(Reply::Check(Sense::cdb_field(10)));
    }
    let bs = lu.block_size as usize;
    let block = if ws.ndob {
        vec![0u8; bs]
    } else {
        if t.data.available as usize != bs {
            return Err(Reply::Check(Sense::cdb_field(10)));
        }
        let b = t.data.collect(bs as u32).await.map_err(aborted)?;
        if b.len() != bs {
            return check(sense::WRITE_ERROR);
        }
        b
    };
    let (off, len) = (ws.lba * bs as u64, blocks * bs as u64);
    let _shared = lu.atomic.read().await;
    let lun = lu.lun.clone();
    let r = if ws.unmap {
        // UNMAP=1 deallocates whatever the block holds (as Linux's LIO does; libiscsi's
        // WriteSame10.UnmapUntilEnd expects it): the blocks then read as zeroes (LBPRZ).
        blocking(move || lun.unmap(off, len)).await
    } else {
        blocking(move || lun.write_same(off, len, &block, false)).await
    };
    r.map_err(|e| io_error(&e, true))?;
    Ok(Reply::Good(Vec::new()))
}

pub async fn unmap(
    t: &mut TaskCtx,
    lu: &Arc<LogicalUnit>,
    anchor: bool,
    len: u32,
) -> Result<Reply, Reply> {
    if !lu.caps.can_trim {
        return check(sense::INVALID_OPCODE);
    }
    writable(lu)?;
    if anchor {
        return Err(Reply::Check(Sense::cdb_field(1)));
    }
    if len == 0 {
        return Ok(Reply::Good(Vec::new()));
    }
    let list = t.data.collect(len).await.map_err(aborted)?;
    let ranges = data::unmap_list(&list, lu.limits.max_unmap_descriptors).map_err(Reply::Check)?;
    for r in &ranges {
        in_range(lu, r.lba, r.blocks as u64)?;
    }
    let bs = lu.block_size as u64;
    let _shared = lu.atomic.read().await;
    let lun = lu.lun.clone();
    blocking(move || {
        for r in ranges {
            lun.unmap(r.lba * bs, r.blocks as u64 * bs)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| io_error(&e, true))?;
    Ok(Reply::Good(Vec::new()))
}

pub async fn compare_and_write(
    t: &mut TaskCtx,
    lu: &Arc<LogicalUnit>,
    r: Rw,
) -> Result<Reply, Reply> {
    writable(lu)?;
    if r.blocks == 0 {
        // No blocks and no data is a no-op; data for no blocks is a malformed CDB (a
        // length of 256 that does not fit the CDB's byte).
        if t.data.available != 0 {
            return Err(Reply::Check(Sense::cdb_field(13)));
        }
        return Ok(Reply::Good(Vec::new()));
    }
    if r.blocks > lu.limits.max_compare_and_write as u32 {
        return Err(Reply::Check(Sense::cdb_field(13)));
    }
    in_range(lu, r.lba, r.blocks as u64)?;
    let half = r.blocks as usize * lu.block_size as usize;
    if t.data.available as usize != 2 * half {
        return check(sense::INVALID_FIELD_IN_INFORMATION_UNIT);
    }
    let buf = t.data.collect(2 * half as u32).await.map_err(aborted)?;
    if buf.len() != 2 * half {
        return check(sense::WRITE_ERROR);
    }
    let off = r.lba * lu.block_size as u64;
    // Exclusive: no other write to the LU between the compare and the write.
    let _exclusive = lu.atomic.write().await;
    let medium = read_buf(lu, off, half).await?;
    if let Some(i) = medium.iter().zip(&buf[..half]).position(|(a, b)| a != b) {
        return Err(miscompare(i as u64));
    }
    let lun = lu.lun.clone();
    let fua = r.fua;
    blocking(move || lun.write(off, &buf[half..], fua))
        .await
        .map_err(|e| io_error(&e, true))?;
    Ok(Reply::Good(Vec::new()))
}

pub async fn synchronize(lu: &Arc<LogicalUnit>, lba: u64, blocks: u32) -> Result<Reply, Reply> {
    in_range(lu, lba, blocks as u64)?;
    flush(lu).await?;
    Ok(Reply::Good(Vec::new()))
}

pub async fn lba_status(lu: &Arc<LogicalUnit>, lba: u64, alloc: u32) -> Result<Reply, Reply> {
    let n = lu.blocks();
    if lba >= n {
        return check(sense::LBA_OUT_OF_RANGE);
    }
    let bs = lu.block_size as u64;
    let max = ((alloc.saturating_sub(8)) / 16).clamp(1, 64) as usize;
    let extents = if lu.caps.can_extents {
        let lun = lu.lun.clone();
        blocking(move || lun.extents(lba * bs, (n - lba) * bs, max))
            .await
            .map_err(|e| io_error(&e, false))?
    } else {
        Vec::new()
    };
    let mut descs: Vec<(u64, u32, Provisioning)> = extents
        .iter()
        .filter(|e| e.len >= bs)
        .map(|e| {
            let p = if e.allocated {
                Provisioning::Mapped
            } else {
                Provisioning::Deallocated
            };
            (e.offset / bs, (e.len / bs).min(u32::MAX as u64) as u32, p)
        })
        .collect();
    if descs.first().is_none_or(|d| d.0 != lba) {
        // No allocation information: one mapped extent from the LBA asked for.
        descs = vec![(
            lba,
            (n - lba).min(u32::MAX as u64) as u32,
            Provisioning::Mapped,
        )];
    }
    Ok(Reply::Good(truncate(data::lba_status(&descs), alloc)))
}
