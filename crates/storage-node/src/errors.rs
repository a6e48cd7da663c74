//! The one place where storage errors become NBD error numbers.

use std::io;

/// Map an I/O error from a backend to the NBD error value the spec asks for.
pub fn nbd_errno(e: &io::Error) -> u32 {
    use nbd_proto as n;
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => n::ENOSPC,
        Some(libc::EPERM) | Some(libc::EROFS) | Some(libc::EACCES) => n::EPERM,
        Some(libc::EINVAL) => n::EINVAL,
        Some(libc::ENOMEM) => n::ENOMEM,
        Some(libc::EOVERFLOW) => n::EOVERFLOW,
        Some(libc::EOPNOTSUPP) => n::ENOTSUP,
        _ if e.kind() == io::ErrorKind::Unsupported => n::ENOTSUP,
        _ => n::EIO,
    }
}

/// Errors raised while opening or changing the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("volume {name:?}: {source}")]
    Volume { name: String, source: io::Error },
    #[error("data directory {path}: {source}")]
    DataDir { path: String, source: io::Error },
    #[error("listen on {addr}: {source}")]
    Listen { addr: String, source: io::Error },
    #[error("bucket {name:?}: {source}")]
    Bucket { name: String, source: io::Error },
    #[error("unknown policy {0:?}")]
    UnknownPolicy(String),
    /// The node's own runtime or thread could not start.
    #[error("node runtime: {0}")]
    Runtime(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_mapping() {
        let cases = [
            (libc::ENOSPC, nbd_proto::ENOSPC),
            (libc::EDQUOT, nbd_proto::ENOSPC),
            (libc::EFBIG, nbd_proto::ENOSPC),
            (libc::EROFS, nbd_proto::EPERM),
            (libc::EINVAL, nbd_proto::EINVAL),
            (libc::EIO, nbd_proto::EIO),
            (libc::EOPNOTSUPP, nbd_proto::ENOTSUP),
            (libc::EBADF, nbd_proto::EIO),
        ];
        for (os, want) in cases {
            assert_eq!(
                nbd_errno(&io::Error::from_raw_os_error(os)),
                want,
                "errno {os}"
            );
        }
    }
}
