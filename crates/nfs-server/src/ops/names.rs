//! Procedures on names in a directory: LOOKUP, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE,
//! RMDIR, RENAME, LINK. Every change of a directory is fsynced before the reply (RFC 1813:
//! namespace operations are stable when answered).

use nfs_proto::nfs3::{self, CreateHow, Sattr, Status};

use super::{check_name, check_new_name, file::apply, Ctx};
use crate::errors::status_of;
use crate::perm;
use crate::sys::{self, Stat};
use crate::tree::Obj;
use std::sync::Arc;

fn root_process() -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::geteuid() == 0 }
}

/// The group a new object in `dir` gets: the directory's when it is setgid (BSD
/// semantics, as Linux), else the caller's primary group.
fn new_gid(cx: &Ctx, dir: &Stat) -> u32 {
    if dir.mode & libc::S_ISGID != 0 {
        dir.gid
    } else {
        cx.caller.who.gid
    }
}

/// Gives a new object to the caller, as a local create would (when the node runs as root;
/// an unprivileged node's objects stay its own user's: docs/NFS.md).
fn own(cx: &Ctx, dir: &Obj, dst: &Stat, name: &[u8]) -> Result<(), Status> {
    if root_process() {
        sys::chown_at(dir.raw(), name, cx.caller.uid(), new_gid(cx, dst))
            .map_err(|e| status_of(&e))?;
    }
    Ok(())
}

/// The mode of a new object: as asked (less what the caller may not set), setgid for a
/// directory made in a setgid directory.
fn new_mode(cx: &Ctx, dir: &Stat, kind: u32, mode: u32) -> u32 {
    let probe = Stat {
        mode: kind | mode,
        uid: cx.caller.uid(),
        gid: new_gid(cx, dir),
        ..*dir
    };
    let mut m = cx.caller.settable_mode(&probe, mode);
    if kind == libc::S_IFDIR && dir.mode & libc::S_ISGID != 0 {
        m |= libc::S_ISGID;
    }
    m
}

/// A sticky directory's rule for removing `victim` from `dir`: NFS3ERR_PERM, as Linux.
fn sticky(cx: &Ctx, dir: &Stat, victim: &Stat) -> Result<(), Status> {
    if cx.caller.sticky_allows(dir, victim) {
        Ok(())
    } else {
        Err(Status::Perm)
    }
}

fn sync_dir(dir: &Obj) -> Result<(), Status> {
    sys::fsync(dir.raw()).map_err(|e| status_of(&e))
}

/// post_op_fh3, post_op_attr, then the directory's wcc_data.
fn put_created(cx: &Ctx, out: &mut Vec<u8>, st: &Stat, before: &Stat, dir: &Obj) {
    nfs3::put_status(out, Status::Ok);
    nfs3::put_post_op_fh(out, Some(&cx.handle(st)));
    cx.put_attr(out, Some(st));
    let after = dir.stat().ok();
    cx.put_wcc(out, Some(before), after.as_ref());
}

pub fn lookup(cx: &Ctx, dirfh: &[u8], name: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    let dir = cx.dir(dirfh)?;
    check_name(name)?;
    let dst = dir.stat()?;
    Ctx::check(cx.caller.may(&dst, perm::X))?;
    let tree = cx.tree;
    let st = match name {
        b"." => dst,
        // `..` of the export's root is the root itself: nothing above it is reachable.
        b".." if dir.ino == tree.root_ino => dst,
        b".." => {
            let parent = match tree.parent_of(dir.ino) {
                Some(p) => p,
                None => {
                    cx.walked(tree.rescan_on_miss(cx.may_walk))?;
                    tree.parent_of(dir.ino).ok_or(Status::Stale)?
                }
            };
            tree.stat_ino(parent)?
        }
        _ => {
            let st = sys::stat_at(dir.raw(), name).map_err(|e| status_of(&e))?;
            tree.learn(dir.ino, name, st.ino);
            st
        }
    };
    nfs3::put_status(out, Status::Ok);
    nfs3::put_fh(out, &cx.handle(&st));
    cx.put_attr(out, Some(&st));
    cx.put_attr(out, Some(&dst));
    Ok(())
}

/// What every procedure that adds a name starts with: the directory, a name that may be
/// created, a writable export, write and search permission on the directory, and its
/// attributes before the change.
fn begin_add(cx: &Ctx, dirfh: &[u8], name: &[u8]) -> Result<(Arc<Obj>, Stat), Status> {
    let dir = cx.dir(dirfh)?;
    check_new_name(name)?;
    cx.writable()?;
    let before = dir.stat()?;
    Ctx::check(cx.caller.may_change_dir(&before))?;
    Ok((dir, before))
}

pub fn create(
    cx: &Ctx,
    dirfh: &[u8],
    name: &[u8],
    how: &CreateHow,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let (dir, before) = begin_add(cx, dirfh, name)?;
    let (attr, verf) = match how {
        CreateHow::Unchecked(a) | CreateHow::Guarded(a) => (*a, None),
        CreateHow::Exclusive(v) => (Sattr::default(), Some(*v)),
    };
    let mode = new_mode(cx, &before, libc::S_IFREG, attr.mode.unwrap_or(0o644));
    let excl = libc::O_CREAT | libc::O_EXCL | libc::O_RDWR;
    // Always O_EXCL first, so a new file is told from an existing one (only a new one is
    // given to the caller); UNCHECKED then opens the existing file.
    let (fd, created) = match sys::open_beneath(dir.raw(), name, excl, mode) {
        Ok(fd) => (fd, true),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => match how {
            CreateHow::Unchecked(_) => {
                let fd = sys::open_beneath(dir.raw(), name, libc::O_RDWR, 0)
                    .map_err(|e| status_of(&e))?;
                (fd, false)
            }
            CreateHow::Guarded(_) => return Err(Status::Exist),
            CreateHow::Exclusive(v) => {
                let st = sys::stat_at(dir.raw(), name).map_err(|e| status_of(&e))?;
                let (a, m) = verf_times(v);
                if st.is_reg() && st.atime.0 == a as i64 && st.mtime.0 == m as i64 {
                    // our own earlier reply was lost: the same create again
                    sync_dir(&dir)?;
                    put_created(cx, out, &st, &before, &dir);
                    return Ok(());
                }
                return Err(Status::Exist);
            }
        },
        Err(e) => return Err(status_of(&e)),
    };
    let st = sys::fstat(&fd).map_err(|e| status_of(&e))?;
    cx.tree.learn(dir.ino, name, st.ino);
    if created {
        own(cx, &dir, &before, name)?;
        // exactly the mode asked (the node's umask narrowed it at open)
        sys::chmod_fd(std::os::fd::AsRawFd::as_raw_fd(&fd), mode).map_err(|e| status_of(&e))?;
    }
    if let Some(v) = verf {
        // The verifier is kept in the times, as RFC 1813 suggests, so a resent EXCLUSIVE
        // CREATE is recognised; the client sets real times next.
        let (a, m) = verf_times(&v);
        sys::utimes_fd(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            Some(Some((a as i64, 0))),
            Some(Some((m as i64, 0))),
        )
        .map_err(|e| status_of(&e))?;
    }
    let obj = cx.walked(cx.tree.obj(&cx.tree.handle_of(&st), cx.may_walk))?;
    let now = obj.stat()?;
    // A new file takes the attributes asked (its mode is set); UNCHECKED on an existing
    // one only its size, checked as a SETATTR (as Linux's server does). A new file
    // allocates nothing; an existing one is already counted; `apply` counts a size.
    let attr = if created {
        Sattr { mode: None, ..attr }
    } else {
        Sattr {
            size: attr.size,
            ..Sattr::default()
        }
    };
    apply(cx, &obj, &now, &attr, created)?;
    let st = obj.stat()?;
    sync_dir(&dir)?;
    put_created(cx, out, &st, &before, &dir);
    Ok(())
}

fn verf_times(v: &[u8; 8]) -> (u32, u32) {
    (
        u32::from_be_bytes([v[0], v[1], v[2], v[3]]) & 0x7fff_ffff,
        u32::from_be_bytes([v[4], v[5], v[6], v[7]]) & 0x7fff_ffff,
    )
}

pub fn mkdir(
    cx: &Ctx,
    dirfh: &[u8],
    name: &[u8],
    attr: &Sattr,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let (dir, before) = begin_add(cx, dirfh, name)?;
    let mode = new_mode(cx, &before, libc::S_IFDIR, attr.mode.unwrap_or(0o755));
    sys::mkdir_at(dir.raw(), name, mode).map_err(|e| status_of(&e))?;
    let st = sys::stat_at(dir.raw(), name).map_err(|e| status_of(&e))?;
    cx.tree.learn(dir.ino, name, st.ino);
    own(cx, &dir, &before, name)?;
    let obj = cx.walked(cx.tree.obj(&cx.tree.handle_of(&st), cx.may_walk))?;
    // exactly the mode asked (the node's umask narrowed it)
    sys::chmod_fd(obj.raw(), mode).map_err(|e| status_of(&e))?;
    let now = obj.stat()?;
    apply(
        cx,
        &obj,
        &now,
        &Sattr {
            mode: None,
            size: None,
            ..*attr
        },
        true,
    )?;
    let st = obj.stat()?;
    cx.tree.add_used((st.blocks * 512) as i64);
    sync_dir(&dir)?;
    put_created(cx, out, &st, &before, &dir);
    Ok(())
}

pub fn symlink(
    cx: &Ctx,
    dirfh: &[u8],
    name: &[u8],
    target: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let (dir, before) = begin_add(cx, dirfh, name)?;
    if target.is_empty() || target.contains(&0) {
        return Err(Status::Inval);
    }
    // The target is stored as text; the server never follows it (clients resolve it).
    if target.len() > nfs3::MAX_PATH as usize {
        return Err(Status::NameTooLong);
    }
    sys::symlink_at(target, dir.raw(), name).map_err(|e| status_of(&e))?;
    own(cx, &dir, &before, name)?;
    let st = sys::stat_at(dir.raw(), name).map_err(|e| status_of(&e))?;
    cx.tree.learn(dir.ino, name, st.ino);
    cx.tree.add_used((st.blocks * 512) as i64);
    sync_dir(&dir)?;
    put_created(cx, out, &st, &before, &dir);
    Ok(())
}

pub fn mknod(cx: &Ctx, dirfh: &[u8], name: &[u8]) -> Result<(), Status> {
    begin_add(cx, dirfh, name)?;
    Err(Status::NotSupp)
}

/// REMOVE and RMDIR.
pub fn remove(
    cx: &Ctx,
    dirfh: &[u8],
    name: &[u8],
    is_dir: bool,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let dir = cx.dir(dirfh)?;
    check_name(name)?;
    match (name, is_dir) {
        (b".", _) => return Err(Status::Inval),
        (b"..", true) => return Err(Status::NotEmpty),
        (b"..", false) => return Err(Status::IsDir),
        _ => {}
    }
    cx.writable()?;
    let before = dir.stat()?;
    Ctx::check(cx.caller.may_change_dir(&before))?;
    let st = sys::stat_at(dir.raw(), name).map_err(|e| status_of(&e))?;
    sticky(cx, &before, &st)?;
    match (st.is_dir(), is_dir) {
        (true, false) => return Err(Status::IsDir),
        (false, true) => return Err(Status::NotDir),
        _ => {}
    }
    sys::unlink_at(dir.raw(), name, is_dir).map_err(|e| status_of(&e))?;
    if is_dir || st.nlink <= 1 {
        cx.tree.add_used(-((st.blocks * 512) as i64));
    }
    cx.tree.forget(st.ino);
    sync_dir(&dir)?;
    nfs3::put_status(out, Status::Ok);
    let after = dir.stat().ok();
    cx.put_wcc(out, Some(&before), after.as_ref());
    Ok(())
}

pub fn rename(
    cx: &Ctx,
    from: &[u8],
    from_name: &[u8],
    to: &[u8],
    to_name: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let fdir = cx.dir(from)?;
    let tdir = cx.dir(to)?;
    check_new_name(from_name).map_err(|_| Status::Inval)?;
    check_new_name(to_name).map_err(|_| Status::Inval)?;
    cx.writable()?;
    let (fbefore, tbefore) = (fdir.stat()?, tdir.stat()?);
    let c = cx.caller;
    Ctx::check(c.may_change_dir(&fbefore) && c.may_change_dir(&tbefore))?;
    let src = sys::stat_at(fdir.raw(), from_name).map_err(|e| status_of(&e))?;
    sticky(cx, &fbefore, &src)?;
    let replaced = sys::stat_at(tdir.raw(), to_name)
        .ok()
        .filter(|t| t.ino != src.ino);
    if let Some(t) = &replaced {
        sticky(cx, &tbefore, t)?;
    }
    // A directory moved to another parent has its `..` rewritten: write permission on it.
    Ctx::check(!src.is_dir() || tdir.ino == fdir.ino || c.may(&src, perm::W))?;
    sys::rename_at(fdir.raw(), from_name, tdir.raw(), to_name).map_err(|e| status_of(&e))?;
    cx.tree.moved(src.ino, tdir.ino, to_name);
    if let Some(t) = replaced {
        if t.is_dir() || t.nlink <= 1 {
            cx.tree.add_used(-((t.blocks * 512) as i64));
        }
        cx.tree.forget(t.ino);
    }
    sync_dir(&fdir)?;
    if tdir.ino != fdir.ino {
        sync_dir(&tdir)?;
    }
    nfs3::put_status(out, Status::Ok);
    let (fa, ta) = (fdir.stat().ok(), tdir.stat().ok());
    cx.put_wcc(out, Some(&fbefore), fa.as_ref());
    cx.put_wcc(out, Some(&tbefore), ta.as_ref());
    Ok(())
}

pub fn link(
    cx: &Ctx,
    fh: &[u8],
    dirfh: &[u8],
    name: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let obj = cx.obj(fh)?;
    let dir = cx.dir(dirfh)?;
    check_new_name(name)?;
    cx.writable()?;
    if obj.kind == crate::tree::Kind::Dir {
        return Err(Status::IsDir);
    }
    let before = dir.stat()?;
    Ctx::check(cx.caller.may_change_dir(&before) && cx.caller.may_link(&obj.stat()?))?;
    cx.tree.link(obj.ino, dir.raw(), name)?;
    sync_dir(&dir)?;
    nfs3::put_status(out, Status::Ok);
    let st = obj.stat().ok();
    cx.put_attr(out, st.as_ref());
    let after = dir.stat().ok();
    cx.put_wcc(out, Some(&before), after.as_ref());
    Ok(())
}
