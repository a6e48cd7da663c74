//! The one mapping from I/O errors to `nfsstat3`.

use std::io;

use nfs_proto::nfs3::Status;

pub fn status_of(e: &io::Error) -> Status {
    match e.raw_os_error() {
        Some(libc::EPERM) => Status::Perm,
        Some(libc::ENOENT) => Status::NoEnt,
        Some(libc::ENXIO) => Status::Nxio,
        Some(libc::EACCES) => Status::Acces,
        Some(libc::EEXIST) => Status::Exist,
        Some(libc::EXDEV) => Status::Xdev,
        Some(libc::ENODEV) => Status::NoDev,
        Some(libc::ENOTDIR) => Status::NotDir,
        Some(libc::EISDIR) => Status::IsDir,
        Some(libc::EINVAL) => Status::Inval,
        Some(libc::EFBIG) => Status::FBig,
        Some(libc::ENOSPC) => Status::NoSpc,
        Some(libc::EROFS) => Status::Rofs,
        Some(libc::EMLINK) => Status::MLink,
        Some(libc::ENAMETOOLONG) => Status::NameTooLong,
        Some(libc::ENOTEMPTY) => Status::NotEmpty,
        Some(libc::EDQUOT) => Status::DQuot,
        Some(libc::ESTALE) => Status::Stale,
        // a path that would cross a symlink
        Some(libc::ELOOP) => Status::Inval,
        Some(libc::EOPNOTSUPP) => Status::NotSupp,
        // Out of descriptors (should not happen under the node's budget): try again later,
        // as a client does on JUKEBOX, rather than fail the operation.
        Some(libc::EMFILE) | Some(libc::ENFILE) => Status::Jukebox,
        _ => Status::Io,
    }
}
