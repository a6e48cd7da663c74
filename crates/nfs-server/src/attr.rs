//! Object attributes as NFSv3 sees them.

use nfs_proto::nfs3::{Fattr, FileType, NfsTime};

use crate::sys::Stat;

fn time((s, ns): (i64, u32)) -> NfsTime {
    NfsTime {
        seconds: s.clamp(0, u32::MAX as i64) as u32,
        nseconds: ns,
    }
}

pub fn fattr(st: &Stat, fsid: u32) -> Fattr {
    let kind = match st.kind() {
        libc::S_IFDIR => FileType::Dir,
        libc::S_IFLNK => FileType::Lnk,
        libc::S_IFBLK => FileType::Blk,
        libc::S_IFCHR => FileType::Chr,
        libc::S_IFSOCK => FileType::Sock,
        libc::S_IFIFO => FileType::Fifo,
        _ => FileType::Reg,
    };
    Fattr {
        kind,
        mode: st.mode & 0o7777,
        nlink: st.nlink,
        uid: st.uid,
        gid: st.gid,
        size: st.size,
        used: st.blocks * 512,
        rdev: st.rdev,
        fsid: fsid as u64,
        fileid: st.ino,
        atime: time(st.atime),
        mtime: time(st.mtime),
        ctime: time(st.ctime),
    }
}
