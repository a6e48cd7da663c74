//! MOUNT v3 (RFC 1813 appendix I): how a client turns an export path into a root handle.

use crate::xdr::{put_bool, put_opaque, put_u32, Reader, XdrError};

pub const PROGRAM: u32 = 100005;
pub const VERSION: u32 = 3;
/// `MNTPATHLEN`.
pub const MAX_PATH: u32 = 1024;

pub const NULL: u32 = 0;
pub const MNT: u32 = 1;
pub const DUMP: u32 = 2;
pub const UMNT: u32 = 3;
pub const UMNTALL: u32 = 4;
pub const EXPORT: u32 = 5;

/// `mountstat3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum MountStat {
    Ok = 0,
    Perm = 1,
    NoEnt = 2,
    Io = 5,
    Acces = 13,
    NotDir = 20,
    Inval = 22,
    NameTooLong = 63,
    NotSupp = 10004,
    ServerFault = 10006,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Args<'a> {
    Null,
    Mnt { path: &'a [u8] },
    Dump,
    Umnt { path: &'a [u8] },
    UmntAll,
    Export,
}

/// `Ok(None)`: no such procedure. `Err`: GARBAGE_ARGS.
pub fn decode_args(proc_: u32, args: &[u8]) -> Result<Option<Args<'_>>, XdrError> {
    let r = &mut Reader::new(args);
    Ok(Some(match proc_ {
        NULL => Args::Null,
        MNT => Args::Mnt {
            path: r.opaque(MAX_PATH, "dirpath")?,
        },
        DUMP => Args::Dump,
        UMNT => Args::Umnt {
            path: r.opaque(MAX_PATH, "dirpath")?,
        },
        UMNTALL => Args::UmntAll,
        EXPORT => Args::Export,
        _ => return Ok(None),
    }))
}

/// `mountres3`: OK with the root handle and the accepted auth flavours, or an error.
pub fn put_mnt_result(out: &mut Vec<u8>, result: Result<(&[u8], &[u32]), MountStat>) {
    match result {
        Ok((fh, flavors)) => {
            put_u32(out, MountStat::Ok as u32);
            put_opaque(out, fh);
            put_u32(out, flavors.len() as u32);
            for f in flavors {
                put_u32(out, *f);
            }
        }
        Err(stat) => put_u32(out, stat as u32),
    }
}

/// `exports`: each export path with the client groups allowed to mount it.
pub fn put_exports<'a>(
    out: &mut Vec<u8>,
    exports: impl IntoIterator<Item = (&'a [u8], Vec<&'a [u8]>)>,
) {
    for (dir, groups) in exports {
        put_bool(out, true);
        put_opaque(out, dir);
        for g in groups {
            put_bool(out, true);
            put_opaque(out, g);
        }
        put_bool(out, false);
    }
    put_bool(out, false);
}

/// An empty `mountlist` (DUMP): the server keeps no list of mounts (it is advisory).
pub fn put_empty_dump(out: &mut Vec<u8>) {
    put_bool(out, false);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_mnt() {
        let mut a = Vec::new();
        put_opaque(&mut a, b"/vol1");
        assert_eq!(
            decode_args(MNT, &a).unwrap(),
            Some(Args::Mnt { path: b"/vol1" })
        );
        assert!(decode_args(MNT, &a[..6]).is_err());
        assert_eq!(decode_args(9, &a).unwrap(), None);
    }
}
