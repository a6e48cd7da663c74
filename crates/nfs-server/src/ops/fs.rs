//! FSSTAT, FSINFO, PATHCONF: the volume's size and free space (its quota), and the
//! transfer sizes clients split their I/O by.

use nfs_proto::nfs3::{self, FsInfo, NfsTime, Status};
use nfs_proto::xdr::{put_bool, put_u32, put_u64};

use super::Ctx;
use crate::errors::status_of;

pub fn fsstat(cx: &Ctx, fh: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    let st = cx.obj(fh)?.stat()?;
    let vfs = cx.tree.statvfs().map_err(|e| status_of(&e))?;
    let frsize = vfs.f_frsize;
    let (total, free, avail) = match cx.tree.quota() {
        Some(q) => {
            let left = q.saturating_sub(cx.tree.used());
            let fs_avail = vfs.f_bavail * frsize;
            (q, left.min(vfs.f_bfree * frsize), left.min(fs_avail))
        }
        None => (
            vfs.f_blocks * frsize,
            vfs.f_bfree * frsize,
            vfs.f_bavail * frsize,
        ),
    };
    nfs3::put_status(out, Status::Ok);
    cx.put_attr(out, Some(&st));
    for v in [total, free, avail, vfs.f_files, vfs.f_ffree, vfs.f_favail] {
        put_u64(out, v);
    }
    put_u32(out, 0); // invarsec: may change at any time
    Ok(())
}

pub fn fsinfo(cx: &Ctx, fh: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    let st = cx.obj(fh)?.stat()?;
    nfs3::put_status(out, Status::Ok);
    cx.put_attr(out, Some(&st));
    nfs3::put_fsinfo(
        out,
        &FsInfo {
            rtmax: cx.cfg.rtmax,
            rtpref: cx.cfg.rtmax,
            rtmult: 4096,
            wtmax: cx.cfg.wtmax,
            wtpref: cx.cfg.wtmax,
            wtmult: 4096,
            dtpref: 65536,
            maxfilesize: i64::MAX as u64,
            time_delta: NfsTime {
                seconds: 0,
                nseconds: 1,
            },
            properties: nfs3::FSF_LINK
                | nfs3::FSF_SYMLINK
                | nfs3::FSF_HOMOGENEOUS
                | nfs3::FSF_CANSETTIME,
        },
    );
    Ok(())
}

pub fn pathconf(cx: &Ctx, fh: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    let st = cx.obj(fh)?.stat()?;
    nfs3::put_status(out, Status::Ok);
    cx.put_attr(out, Some(&st));
    put_u32(out, 65000); // linkmax
    put_u32(out, 255); // name_max
    put_bool(out, true); // no_trunc
    put_bool(out, true); // chown_restricted
    put_bool(out, false); // case_insensitive
    put_bool(out, true); // case_preserving
    Ok(())
}
