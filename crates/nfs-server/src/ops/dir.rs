//! READDIR and READDIRPLUS. Cookies are positions in the directory's listing (`.` is 1,
//! `..` 2, then the entries in the file system's order); the cookie verifier is not used
//! (zeros, as Linux's own server sends), so a listing that changes between pages may
//! skip or repeat an entry, never fail.

use nfs_proto::nfs3::{self, Status};
use nfs_proto::xdr::{pad, put_bool, put_opaque, put_u64};

use super::Ctx;
use crate::errors::status_of;
use crate::sys;

/// `plus`: READDIRPLUS's `(dircount, maxcount)`; READDIR's byte budget is `count`.
pub fn readdir(
    cx: &Ctx,
    dirfh: &[u8],
    cookie: u64,
    count: u32,
    plus: Option<u32>,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let dir = cx.dir(dirfh)?;
    let dst = dir.stat()?;
    let parent = cx.tree.parent_of(dir.ino).unwrap_or(dir.ino);
    let mut names: Vec<(Vec<u8>, u64)> = vec![(b".".to_vec(), dir.ino), (b"..".to_vec(), parent)];
    names.extend(
        sys::list_dir(dir.raw())
            .map_err(|e| status_of(&e))?
            .into_iter()
            .map(|e| (e.name, e.ino)),
    );
    if cookie > names.len() as u64 {
        return Err(Status::BadCookie);
    }
    let start = out.len();
    nfs3::put_status(out, Status::Ok);
    cx.put_attr(out, Some(&dst));
    nfs3::put_verf(out, &[0; 8]);
    // Budgets: the whole reply (count / maxcount) and, for READDIRPLUS, the names,
    // cookies and file ids alone (dircount).
    let max_reply = count as usize;
    let max_dir = plus.map(|d| d as usize).unwrap_or(usize::MAX);
    let mut dir_bytes = 0usize;
    let mut eof = true;
    let mut sent = 0;
    for (i, (name, ino)) in names.iter().enumerate().skip(cookie as usize) {
        let entry_at = out.len();
        let name_len = 4 + name.len() + pad(name.len());
        let dir_part = 4 + 8 + name_len + 8;
        put_bool(out, true);
        put_u64(out, *ino);
        put_opaque(out, name);
        put_u64(out, i as u64 + 1);
        if plus.is_some() {
            let st = match name.as_slice() {
                b"." => Some(dst),
                b".." => cx
                    .tree
                    .stat_ino(parent)
                    .ok()
                    .or(Some(dst).filter(|_| parent == dir.ino)),
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
        if name != b"." && name != b".." {
            cx.tree.learn(dir.ino, name, *ino);
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
