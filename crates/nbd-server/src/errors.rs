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

#[cfg(test)]
mod tests {
    use super::*;
    use storage_node::backend::layers::Faults;
    use storage_node::backend::Backend;
    use storage_node::testing::file_backend as file;

    /// How a media error reaches an NBD client: the faults layer's errno, mapped here.
    #[test]
    fn faults_fail_only_the_range() {
        let (_d, f) = file("layer-faults");
        f.write_at(&[7u8; 8192], 0).unwrap();
        let b = Faults::new(f, 4096..8192, libc::EIO);
        let mut buf = [0u8; 4096];
        b.read_at(&mut buf, 0).unwrap();
        assert_eq!(buf, [7u8; 4096]);
        let e = b.read_at(&mut buf, 4095).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        assert_eq!(crate::errors::nbd_errno(&e), nbd_proto::EIO);
        assert!(b.write_at(&[1], 8191).is_err() && b.write_at(&[1], 8192).is_ok());
        assert!(b.trim(0, 1 << 20).is_err());
    }

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
