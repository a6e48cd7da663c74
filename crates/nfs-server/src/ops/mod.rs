//! The NFSv3 procedures over a [`Tree`]. Each writes its whole OK result (status first)
//! and returns `Err(status)` otherwise; the dispatcher then writes the status and the
//! procedure's failure body (`service::fail_body`).

mod dir;
mod file;
mod fs;
mod names;

pub use dir::readdir;
pub use file::{access, commit, getattr, read, readlink, setattr, write};
pub use fs::{fsinfo, fsstat, pathconf};
pub use names::{create, link, lookup, mkdir, mknod, remove, rename, symlink};

use std::cell::Cell;
use std::sync::Arc;

use nfs_proto::nfs3::{self, Status};

use crate::attr;
use crate::handle::Handle;
use crate::perm::Caller;
use crate::sys::Stat;
use crate::tree::{Obj, Tree};
use crate::Config;

/// What a procedure runs with.
pub struct Ctx<'a> {
    pub tree: &'a Tree,
    pub caller: &'a Caller,
    pub cfg: &'a Config,
    pub verifier: &'a [u8; 8],
    /// Whether this call may walk the tree to find an object the map does not know (not
    /// on a runtime worker: the call is then run again on the blocking pool).
    pub may_walk: bool,
    /// Set when the call needed a walk it was not allowed.
    pub wants_walk: Cell<bool>,
}

impl Ctx<'_> {
    pub fn obj(&self, fh: &[u8]) -> Result<Arc<Obj>, Status> {
        let h = Handle::decode(fh).ok_or(Status::BadHandle)?;
        if h.export != self.tree.spec.id {
            return Err(Status::Xdev);
        }
        self.walked(self.tree.obj(&h, self.may_walk))
    }

    /// A tree answer, noting a walk that was needed and not allowed
    /// ([`Status::Jukebox`] from the tree).
    pub fn walked<T>(&self, r: Result<T, Status>) -> Result<T, Status> {
        if r.as_ref().err() == Some(&Status::Jukebox) && !self.may_walk {
            self.wants_walk.set(true);
        }
        r
    }

    pub fn dir(&self, fh: &[u8]) -> Result<Arc<Obj>, Status> {
        let o = self.obj(fh)?;
        if o.kind != crate::tree::Kind::Dir {
            return Err(Status::NotDir);
        }
        Ok(o)
    }

    /// The export lets this caller change things (else NFS3ERR_ROFS).
    pub fn writable(&self) -> Result<(), Status> {
        if self.caller.write {
            Ok(())
        } else {
            Err(Status::Rofs)
        }
    }

    /// `Ok` when `allowed`, else NFS3ERR_ACCES.
    pub fn check(allowed: bool) -> Result<(), Status> {
        if allowed {
            Ok(())
        } else {
            Err(Status::Acces)
        }
    }

    pub fn fattr(&self, st: &Stat) -> nfs3::Fattr {
        attr::fattr(st, self.tree.spec.id)
    }

    pub fn put_attr(&self, out: &mut Vec<u8>, st: Option<&Stat>) {
        nfs3::put_post_op_attr(out, st.map(|s| self.fattr(s)).as_ref());
    }

    pub fn put_wcc(&self, out: &mut Vec<u8>, before: Option<&Stat>, after: Option<&Stat>) {
        let b = before.map(|s| nfs3::WccAttr::from(&self.fattr(s)));
        nfs3::put_wcc(out, b.as_ref(), after.map(|s| self.fattr(s)).as_ref());
    }

    /// The handle of a stat'ed object of this tree.
    pub fn handle(&self, st: &Stat) -> [u8; crate::handle::LEN] {
        self.tree.handle_of(st).encode()
    }
}

/// A component name clients may create or look up: not empty, no `/` or NUL, at most
/// 255 bytes (NFS3ERR_NAMETOOLONG beyond).
pub fn check_name(name: &[u8]) -> Result<(), Status> {
    if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
        return Err(Status::Inval);
    }
    if name.len() > nfs3::MAX_NAME as usize {
        return Err(Status::NameTooLong);
    }
    Ok(())
}

/// A name that may be created (not `.` or `..`).
pub fn check_new_name(name: &[u8]) -> Result<(), Status> {
    check_name(name)?;
    if name == b"." || name == b".." {
        return Err(Status::Exist);
    }
    Ok(())
}
