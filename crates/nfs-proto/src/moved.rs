//! A decoded call moved onto another copy of its record, without decoding it again.
//!
//! Decoded headers and arguments borrow from their record ([`Message`], [`Args`]). A
//! server that must keep a call past the buffer it was read into (held by QoS, or run on
//! another thread) copies the record once and moves what it decoded onto the copy: every
//! borrowed slice is found at the same offset in the copy ([`Moved`]).

use crate::nfs3::Args;
use crate::rpc::{Call, Message};

/// `from` and a byte-identical copy of it, `to`: a slice of `from` is found in `to` at
/// the same offset.
#[derive(Clone, Copy)]
pub struct Moved<'f, 't> {
    from: &'f [u8],
    to: &'t [u8],
}

impl<'f, 't> Moved<'f, 't> {
    /// That `to` is a copy of `from` is the caller's word (it made the copy); a debug
    /// build checks it.
    pub fn new(from: &'f [u8], to: &'t [u8]) -> Moved<'f, 't> {
        debug_assert!(from == to, "not a copy");
        Moved { from, to }
    }

    /// Where `part` of `from` is in `to`. Every slice a decoder returns is a part of its
    /// record (this crate's invariant); anything else moves to an empty slice (and a debug
    /// build stops).
    pub fn part(&self, part: &[u8]) -> &'t [u8] {
        let off = (part.as_ptr() as usize).wrapping_sub(self.from.as_ptr() as usize);
        let moved = off
            .checked_add(part.len())
            .and_then(|end| self.to.get(off..end));
        debug_assert!(
            moved.is_some(),
            "a slice of {} bytes that is not part of the record",
            part.len()
        );
        moved.unwrap_or_default()
    }
}

impl Message<'_> {
    /// This message, decoded from `m.from`, borrowing from `m.to` instead.
    pub fn moved<'t>(&self, m: Moved<'_, 't>) -> Message<'t> {
        match self {
            Message::Call(c) => Message::Call(Call {
                xid: c.xid,
                prog: c.prog,
                vers: c.vers,
                proc_: c.proc_,
                cred: c.cred.clone(),
                args: m.part(c.args),
            }),
            Message::NotACall { xid } => Message::NotACall { xid: *xid },
            Message::RpcMismatch { xid } => Message::RpcMismatch { xid: *xid },
            Message::BadCred { xid } => Message::BadCred { xid: *xid },
            Message::Garbage(e) => Message::Garbage(*e),
        }
    }
}

impl Args<'_> {
    /// These arguments, decoded from `m.from`, borrowing from `m.to` instead.
    pub fn moved<'t>(&self, m: Moved<'_, 't>) -> Args<'t> {
        use Args::*;
        let p = |s: &[u8]| m.part(s);
        match *self {
            Null => Null,
            GetAttr { fh } => GetAttr { fh: p(fh) },
            SetAttr { fh, attr, guard } => SetAttr {
                fh: p(fh),
                attr,
                guard,
            },
            Lookup { dir, name } => Lookup {
                dir: p(dir),
                name: p(name),
            },
            Access { fh, access } => Access { fh: p(fh), access },
            ReadLink { fh } => ReadLink { fh: p(fh) },
            Read { fh, offset, count } => Read {
                fh: p(fh),
                offset,
                count,
            },
            Write {
                fh,
                offset,
                stable,
                data,
            } => Write {
                fh: p(fh),
                offset,
                stable,
                data: p(data),
            },
            Create { dir, name, how } => Create {
                dir: p(dir),
                name: p(name),
                how,
            },
            Mkdir { dir, name, attr } => Mkdir {
                dir: p(dir),
                name: p(name),
                attr,
            },
            Symlink {
                dir,
                name,
                attr,
                target,
            } => Symlink {
                dir: p(dir),
                name: p(name),
                attr,
                target: p(target),
            },
            Mknod { dir, name, kind } => Mknod {
                dir: p(dir),
                name: p(name),
                kind,
            },
            Remove { dir, name } => Remove {
                dir: p(dir),
                name: p(name),
            },
            Rmdir { dir, name } => Rmdir {
                dir: p(dir),
                name: p(name),
            },
            Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
            } => Rename {
                from_dir: p(from_dir),
                from_name: p(from_name),
                to_dir: p(to_dir),
                to_name: p(to_name),
            },
            Link { fh, dir, name } => Link {
                fh: p(fh),
                dir: p(dir),
                name: p(name),
            },
            ReadDir {
                dir,
                cookie,
                verf,
                count,
            } => ReadDir {
                dir: p(dir),
                cookie,
                verf,
                count,
            },
            ReadDirPlus {
                dir,
                cookie,
                verf,
                dircount,
                maxcount,
            } => ReadDirPlus {
                dir: p(dir),
                cookie,
                verf,
                dircount,
                maxcount,
            },
            FsStat { fh } => FsStat { fh: p(fh) },
            FsInfo { fh } => FsInfo { fh: p(fh) },
            PathConf { fh } => PathConf { fh: p(fh) },
            Commit { fh, offset, count } => Commit {
                fh: p(fh),
                offset,
                count,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs3::{self, proc_, StableHow};
    use crate::rpc::{self, AuthSys, Cred};
    use crate::xdr::{put_opaque, put_u32, put_u64};

    fn call(proc_: u32, args: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let cred = Cred::Sys(AuthSys {
            machine: b"m".to_vec(),
            gids: vec![5, 6],
            ..AuthSys::default()
        });
        rpc::encode_call(
            &mut out,
            7,
            nfs3::PROGRAM,
            nfs3::VERSION,
            proc_,
            &cred,
            args,
        );
        out
    }

    /// Every slice of the moved form is the copy's, at the same place, with the same
    /// bytes: the moved call equals the original and borrows nothing from it.
    #[test]
    fn a_moved_call_borrows_the_copy_and_equals_the_original() {
        let (mut write, mut rename) = (Vec::new(), Vec::new());
        put_opaque(&mut write, b"handle-1");
        put_u64(&mut write, 4096);
        put_u32(&mut write, 3);
        put_u32(&mut write, StableHow::FileSync as u32);
        put_opaque(&mut write, b"abc");
        for part in [&b"dir-a"[..], b"old", b"dir-b", b"new"] {
            put_opaque(&mut rename, part);
        }
        for rec in [call(proc_::WRITE, &write), call(proc_::RENAME, &rename)] {
            let msg = rpc::decode(&rec);
            let Message::Call(c) = &msg else {
                panic!("{msg:?}")
            };
            let args = nfs3::decode_args(c.proc_, c.args).unwrap().unwrap();
            let copy = rec.clone();
            let m = Moved::new(&rec, &copy);
            let (msg2, args2) = (msg.moved(m), args.moved(m));
            assert_eq!(format!("{msg:?}"), format!("{msg2:?}"));
            assert_eq!(args, args2);
            let within = |s: &[u8]| copy.as_ptr_range().contains(&s.as_ptr());
            let Message::Call(c2) = &msg2 else {
                panic!("{msg2:?}")
            };
            assert!(within(c2.args));
            match args2 {
                Args::Write { fh, data, .. } => assert!(within(fh) && within(data)),
                Args::Rename {
                    from_dir,
                    from_name,
                    to_dir,
                    to_name,
                } => assert!([from_dir, from_name, to_dir, to_name]
                    .into_iter()
                    .all(within)),
                a => panic!("{a:?}"),
            }
        }
    }
}
