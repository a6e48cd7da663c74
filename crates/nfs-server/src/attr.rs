//! Object attributes as NFSv3 sees them, and the ACCESS answer.

use nfs_proto::nfs3::{access, Fattr, FileType, NfsTime};

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

/// The caller's identity from AUTH_SYS (AUTH_NONE is the anonymous user 65534).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    pub gids: Vec<u32>,
}

impl Caller {
    pub const ANON: u32 = 65534;
}

/// ACCESS: the requested bits the object's mode grants the caller (root: all), less the
/// modifying ones on a read-only export.
pub fn access_bits(st: &Stat, who: &Caller, want: u32, read_only: bool) -> u32 {
    let perm = if who.uid == 0 {
        0o7
    } else if who.uid == st.uid {
        (st.mode >> 6) & 7
    } else if who.gid == st.gid || who.gids.contains(&st.gid) {
        (st.mode >> 3) & 7
    } else {
        st.mode & 7
    };
    let (r, w, x) = (perm & 4 != 0, perm & 2 != 0, perm & 1 != 0);
    let dir = st.is_dir();
    let mut got = 0;
    if r {
        got |= access::READ;
    }
    if w && !read_only {
        got |= access::MODIFY | access::EXTEND;
        if dir {
            got |= access::DELETE;
        }
    }
    if x {
        got |= if dir { access::LOOKUP } else { access::EXECUTE };
    }
    if who.uid == 0 && !dir && st.mode & 0o111 == 0 {
        got &= !access::EXECUTE; // root executes only what someone may execute
    }
    got & want
}
