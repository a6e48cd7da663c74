//! READDIR and READDIRPLUS. A cookie is the file system's own offset of the next entry
//! (`getdents64`'s `d_off`, what `telldir` returns): a listing resumes exactly where it
//! stopped however many entries were removed or added meanwhile (ext4's hash, XFS's and
//! Btrfs's index, tmpfs's offset map are stable), and each call reads only from there,
//! about as much as it returns. The cookie verifier names the directory (its inode and
//! birth time): a cookie from another directory's listing is NFS3ERR_BAD_COOKIE.

use nfs_proto::nfs3::{self, Status};
use nfs_proto::xdr::{pad, put_bool, put_opaque, put_u64};

use super::Ctx;
use crate::errors::status_of;
use crate::perm;
use crate::sys;

/// The cookie verifier of a directory: its inode and birth time (never zero).
fn verifier(ino: u64, gen: u64) -> [u8; 8] {
    let v = ino.rotate_left(32) ^ gen;
    (if v == 0 { 1 } else { v }).to_be_bytes()
}

/// `plus`: READDIRPLUS's `(dircount, maxcount)`; READDIR's byte budget is `count`.
pub fn readdir(
    cx: &Ctx,
    dirfh: &[u8],
    cookie: u64,
    verf: [u8; 8],
    count: u32,
    plus: Option<u32>,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let dir = cx.dir(dirfh)?;
    let dst = dir.stat()?;
    Ctx::check(cx.caller.may(&dst, perm::R))?;
    let ours = verifier(dir.ino, dir.gen);
    if cookie != 0 && verf != [0; 8] && verf != ours {
        return Err(Status::BadCookie);
    }
    // Budgets: the whole reply (count / maxcount) and, for READDIRPLUS, the names,
    // cookies and file ids alone (dircount).
    let max_reply = count as usize;
    let max_dir = plus.map(|d| d as usize).unwrap_or(usize::MAX);
    let mut reader =
        sys::DirReader::at(dir.raw(), cookie, max_reply.min(max_dir).saturating_mul(2))
            .map_err(|e| status_of(&e))?;
    let at_root = dir.ino == cx.tree.root_ino;
    let start = out.len();
    nfs3::put_status(out, Status::Ok);
    cx.put_attr(out, Some(&dst));
    nfs3::put_verf(out, &ours);
    let mut dir_bytes = 0usize;
    let mut eof = true;
    let mut sent = 0;
    while let Some(e) = reader.next_entry().map_err(|e| status_of(&e))? {
        let (name, next) = (&e.name, e.next);
        let dotdot = name == b"..";
        // `..` of the export's root is the root itself: nothing above it is reachable.
        let ino = match (dotdot, at_root) {
            (true, true) => dir.ino,
            _ => e.ino,
        };
        let entry_at = out.len();
        let name_len = 4 + name.len() + pad(name.len());
        let dir_part = 4 + 8 + name_len + 8;
        put_bool(out, true);
        put_u64(out, ino);
        put_opaque(out, name);
        put_u64(out, next);
        if plus.is_some() {
            let st = match name.as_slice() {
                b"." => Some(dst),
                b".." if at_root => Some(dst),
                _ => sys::stat_at(dir.raw(), name).ok(),
            };
            cx.put_attr(out, st.as_ref());
            nfs3::put_post_op_fh(
                out,
                st.as_ref().map(|s| cx.handle(s)).as_ref().map(|h| &h[..]),
            );
        }
        // 8 bytes for the list's end and eof
        if out.len() - start + 8 > max_reply || dir_bytes + dir_part > max_dir {
            out.truncate(entry_at);
            eof = false;
            break;
        }
        dir_bytes += dir_part;
        sent += 1;
        if name != b"." && !dotdot {
            cx.tree.learn(dir.ino, name, e.ino);
        }
    }
    if sent == 0 && !eof {
        out.truncate(start);
        return Err(Status::TooSmall);
    }
    put_bool(out, false);
    put_bool(out, eof);
    Ok(())
}
