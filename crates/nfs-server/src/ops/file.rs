//! Procedures on one object: GETATTR, SETATTR, ACCESS, READLINK, READ, WRITE, COMMIT.

use nfs_proto::nfs3::{self, NfsTime, Sattr, SetTime, StableHow, Status};
use nfs_proto::xdr::{pad, put_bool, put_u32};

use super::Ctx;
use crate::errors::status_of;
use crate::perm;
use crate::sys::{self, Stat, TimeSet};
use crate::tree::{Kind, Obj};

pub fn getattr(cx: &Ctx, fh: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    let st = cx.obj(fh)?.stat()?;
    nfs3::put_status(out, Status::Ok);
    nfs3::put_fattr(out, &cx.fattr(&st));
    Ok(())
}

fn time_set(t: SetTime) -> TimeSet {
    match t {
        SetTime::DontChange => None,
        SetTime::ServerTime => Some(None),
        SetTime::Client(t) => Some(Some((t.seconds as i64, t.nseconds))),
    }
}

/// Whether the caller may set the owner to `uid` and the group to `gid` (`None`:
/// unchanged) of `st`: root; the owner keeping the owner and moving the group to one of
/// their groups; with `chown_mode` unrestricted, the owner giving the file away.
fn may_chown(cx: &Ctx, st: &Stat, uid: Option<u32>, gid: Option<u32>) -> bool {
    let c = cx.caller;
    if c.is_root() {
        return true;
    }
    let uid_ok = match uid {
        None => true,
        Some(u) => c.owns(st) && (u == st.uid || c.chown_unrestricted),
    };
    let gid_ok = match gid {
        None => true,
        Some(g) => c.owns(st) && (g == st.gid || c.in_group(g) || c.chown_unrestricted),
    };
    uid_ok && gid_ok
}

/// Applies `sattr3` to an open object (SETATTR, and CREATE/MKDIR's initial attributes:
/// `created`, the caller's new object, whose mode, size and times are theirs to set).
/// Every permission is checked before anything changes: a truncation needs write
/// permission (or ownership), a mode change ownership (or root), an owner or group change
/// [`may_chown`], explicit times ownership, the server's time write permission.
pub fn apply(cx: &Ctx, o: &Obj, st: &Stat, a: &Sattr, created: bool) -> Result<(), Status> {
    let c = cx.caller;
    let owner = created || c.is_root() || c.owns(st);
    if a.size.is_some() {
        match o.kind {
            Kind::File { writable: true } => {}
            Kind::File { writable: false } => return Err(Status::Acces),
            Kind::Dir => return Err(Status::IsDir),
            Kind::Other => return Err(Status::Inval),
        }
        Ctx::check(created || c.may_write_file(st))?;
    }
    if (a.uid.is_some() || a.gid.is_some()) && !may_chown(cx, st, a.uid, a.gid) {
        return Err(Status::Perm);
    }
    if a.mode.is_some() && !owner {
        return Err(Status::Perm);
    }
    match (a.atime, a.mtime) {
        (SetTime::Client(_), _) | (_, SetTime::Client(_)) if !owner => return Err(Status::Perm),
        (SetTime::ServerTime, _) | (_, SetTime::ServerTime) => {
            Ctx::check(owner || c.may(st, perm::W))?
        }
        _ => {}
    }
    let fd = o.raw();
    if let Some(size) = a.size {
        let _g = o.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let before = o.stat()?.blocks;
        sys::truncate_fd(fd, size).map_err(|e| status_of(&e))?;
        let after = o.stat()?;
        cx.tree
            .add_used((after.blocks as i64 - before as i64) * 512);
        if let Some(m) = c.mode_after_write(&after) {
            sys::chmod_fd(fd, m).map_err(|e| status_of(&e))?;
        }
    }
    // The owner before the mode: a chown clears setuid bits the mode may set.
    let mut now = *st;
    if a.uid.is_some() || a.gid.is_some() {
        sys::chown_at(
            fd,
            b"",
            a.uid.unwrap_or(u32::MAX),
            a.gid.unwrap_or(u32::MAX),
        )
        .map_err(|e| status_of(&e))?;
        now.uid = a.uid.unwrap_or(now.uid);
        now.gid = a.gid.unwrap_or(now.gid);
    }
    if let Some(mode) = a.mode {
        if o.kind != Kind::Other {
            sys::chmod_fd(fd, c.settable_mode(&now, mode)).map_err(|e| status_of(&e))?;
        }
    }
    let (at, mt) = (time_set(a.atime), time_set(a.mtime));
    if (at.is_some() || mt.is_some()) && o.kind != Kind::Other {
        sys::utimes_fd(fd, at, mt).map_err(|e| status_of(&e))?;
    }
    Ok(())
}

pub fn setattr(
    cx: &Ctx,
    fh: &[u8],
    a: &Sattr,
    guard: Option<NfsTime>,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let o = cx.obj(fh)?;
    let before = o.stat()?;
    cx.writable()?;
    if let Some(g) = guard {
        if cx.fattr(&before).ctime != g {
            return Err(Status::NotSync);
        }
    }
    apply(cx, &o, &before, a, false)?;
    let after = o.stat().ok();
    nfs3::put_status(out, Status::Ok);
    cx.put_wcc(out, Some(&before), after.as_ref());
    Ok(())
}

pub fn access(cx: &Ctx, fh: &[u8], want: u32, out: &mut Vec<u8>) -> Result<(), Status> {
    let st = cx.obj(fh)?.stat()?;
    nfs3::put_status(out, Status::Ok);
    cx.put_attr(out, Some(&st));
    put_u32(out, cx.caller.access_bits(&st, want));
    Ok(())
}

pub fn readlink(cx: &Ctx, fh: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    let o = cx.obj(fh)?;
    let st = o.stat()?;
    if st.kind() != libc::S_IFLNK {
        return Err(Status::Inval);
    }
    let target = sys::readlink_fd(o.raw()).map_err(|e| status_of(&e))?;
    nfs3::put_status(out, Status::Ok);
    cx.put_attr(out, Some(&st));
    nfs_proto::xdr::put_opaque(out, &target);
    Ok(())
}

fn file(o: &Obj) -> Result<(), Status> {
    match o.kind {
        Kind::File { .. } => Ok(()),
        Kind::Dir => Err(Status::IsDir),
        Kind::Other => Err(Status::Inval),
    }
}

pub fn read(cx: &Ctx, fh: &[u8], offset: u64, count: u32, out: &mut Vec<u8>) -> Result<(), Status> {
    let o = cx.obj(fh)?;
    file(&o)?;
    // Remembered attributes (attr_cache's rule): checked below against what was read.
    let mut st = o.attrs()?;
    Ctx::check(cx.caller.may_read_file(&st))?;
    // (never past the largest offset a file may have: pread refuses such a range)
    let count =
        (count.min(cx.cfg.rtmax) as u64).min((i64::MAX as u64).saturating_sub(offset)) as usize;
    nfs3::put_status(out, Status::Ok);
    let attrs_at = out.len();
    cx.put_attr(out, Some(&st));
    let head = out.len();
    put_u32(out, 0); // count
    put_bool(out, false); // eof
    put_u32(out, 0); // opaque length

    // The whole count is asked for (the file's own end stops the read), so a file that
    // grew since its attributes were taken is read to its new end, never cut short.
    let n = sys::pread_append(o.raw(), out, count, offset).map_err(|e| status_of(&e))?;
    let end = offset.saturating_add(n as u64);
    if end > st.size || (n < count && end < st.size) {
        // The file grew or shrank since those attributes: take them now, so the reply's
        // size and eof agree with its data (post_op_attr has a fixed length).
        let fresh = o.stat()?;
        Ctx::check(cx.caller.may_read_file(&fresh))?;
        st = fresh;
        let mut a = Vec::with_capacity(head - attrs_at);
        cx.put_attr(&mut a, Some(&st));
        out[attrs_at..head].copy_from_slice(&a);
    }
    let eof = end >= st.size;
    out[head..head + 4].copy_from_slice(&(n as u32).to_be_bytes());
    out[head + 4..head + 8].copy_from_slice(&(eof as u32).to_be_bytes());
    out[head + 8..head + 12].copy_from_slice(&(n as u32).to_be_bytes());
    out.extend_from_slice(&[0u8; 3][..pad(n)]);
    Ok(())
}

/// Blocks (4 KiB) a write of `len` at `offset` may newly allocate, in bytes.
fn worst_case_allocation(offset: u64, len: u64) -> u64 {
    const B: u64 = 4096;
    if len == 0 {
        return 0;
    }
    ((offset + len).div_ceil(B) - offset / B) * B
}

pub fn write(
    cx: &Ctx,
    fh: &[u8],
    offset: u64,
    stable: StableHow,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let o = cx.obj(fh)?;
    file(&o)?;
    cx.writable()?;
    if o.kind != (Kind::File { writable: true }) {
        return Err(Status::Acces);
    }
    let end = offset
        .checked_add(data.len() as u64)
        .filter(|e| *e <= i64::MAX as u64)
        .ok_or(Status::FBig)?;
    let (before, after) = {
        let _g = o.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        // Remembered attributes (attr_cache's rule): on a stream of writes, the last
        // write's post-operation attributes.
        let before = o.attrs()?;
        Ctx::check(cx.caller.may_write_file(&before))?;
        let mut reserved = worst_case_allocation(offset, data.len() as u64);
        if !cx.tree.reserve(reserved) {
            // Over the quota unless the range is already allocated (an overwrite).
            let allocated = end <= before.size
                && sys::next_hole(o.raw(), offset)
                    .map(|h| h >= end)
                    .unwrap_or(false);
            if !allocated {
                return Err(Status::NoSpc);
            }
            reserved = 0;
        }
        let wrote = sys::pwrite(o.raw(), data, offset);
        o.changed();
        let after = o.stat();
        let grown = after
            .as_ref()
            .map(|a| (a.blocks as i64 - before.blocks as i64) * 512)
            .unwrap_or(0);
        cx.tree.add_used(grown - reserved as i64);
        wrote.map_err(|e| status_of(&e))?;
        let mut after = after?;
        if let Some(m) = cx.caller.mode_after_write(&after) {
            // Written by someone other than root: setuid/setgid go, as on a local write.
            sys::chmod_fd(o.raw(), m).map_err(|e| status_of(&e))?;
            after = o.stat()?;
        }
        (before, after)
    };
    let after = match stable {
        StableHow::Unstable => after,
        StableHow::DataSync => {
            sys::fdatasync(o.raw()).map_err(|e| status_of(&e))?;
            after
        }
        StableHow::FileSync => {
            sys::fsync(o.raw()).map_err(|e| status_of(&e))?;
            o.stat().unwrap_or(after)
        }
    };
    nfs3::put_status(out, Status::Ok);
    cx.put_wcc(out, Some(&before), Some(&after));
    put_u32(out, data.len() as u32);
    put_u32(out, stable as u32);
    nfs3::put_verf(out, cx.verifier);
    Ok(())
}

pub fn commit(cx: &Ctx, fh: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    let o = cx.obj(fh)?;
    let before = o.stat()?;
    match o.kind {
        Kind::File { .. } | Kind::Dir => sys::fsync(o.raw()).map_err(|e| status_of(&e))?,
        Kind::Other => return Err(Status::Inval),
    }
    let after = o.stat().ok();
    nfs3::put_status(out, Status::Ok);
    cx.put_wcc(out, Some(&before), after.as_ref());
    nfs3::put_verf(out, cx.verifier);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn allocation_bound() {
        use super::worst_case_allocation as w;
        assert_eq!(w(0, 4096), 4096);
        assert_eq!(w(1, 4096), 8192);
        assert_eq!(w(4095, 2), 8192);
        assert_eq!(w(0, 0), 0);
        assert_eq!(w(65536, 65536), 65536);
    }
}
