//! NFSv3 (RFC 1813): procedures, status codes, argument decoding, result encoding.

use crate::xdr::{put_bool, put_fixed, put_opaque, put_u32, put_u64, Reader, XdrError};

pub const PROGRAM: u32 = 100003;
pub const VERSION: u32 = 3;

/// Largest file handle (`NFS3_FHSIZE`).
pub const FHSIZE: u32 = 64;
/// Largest file name component a server accepts (Linux's NAME_MAX): a longer one is
/// decoded and answered NFS3ERR_NAMETOOLONG, as RFC 1813 says.
pub const MAX_NAME: u32 = 255;
/// Largest symlink target a server accepts (Linux's PATH_MAX less its NUL): a longer one
/// is decoded and answered NFS3ERR_NAMETOOLONG.
pub const MAX_PATH: u32 = 4095;
/// Largest `filename3` or `nfspath3` decoded at all (XDR leaves them unbounded; anything
/// longer is GARBAGE_ARGS).
pub const MAX_DECODED: u32 = 8192;

/// Procedure numbers (RFC 1813 §3.3).
pub mod proc_ {
    pub const NULL: u32 = 0;
    pub const GETATTR: u32 = 1;
    pub const SETATTR: u32 = 2;
    pub const LOOKUP: u32 = 3;
    pub const ACCESS: u32 = 4;
    pub const READLINK: u32 = 5;
    pub const READ: u32 = 6;
    pub const WRITE: u32 = 7;
    pub const CREATE: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const SYMLINK: u32 = 10;
    pub const MKNOD: u32 = 11;
    pub const REMOVE: u32 = 12;
    pub const RMDIR: u32 = 13;
    pub const RENAME: u32 = 14;
    pub const LINK: u32 = 15;
    pub const READDIR: u32 = 16;
    pub const READDIRPLUS: u32 = 17;
    pub const FSSTAT: u32 = 18;
    pub const FSINFO: u32 = 19;
    pub const PATHCONF: u32 = 20;
    pub const COMMIT: u32 = 21;
    /// Procedure names, indexed by number (for logs and per-operation counters).
    pub const NAMES: [&str; 22] = [
        "NULL",
        "GETATTR",
        "SETATTR",
        "LOOKUP",
        "ACCESS",
        "READLINK",
        "READ",
        "WRITE",
        "CREATE",
        "MKDIR",
        "SYMLINK",
        "MKNOD",
        "REMOVE",
        "RMDIR",
        "RENAME",
        "LINK",
        "READDIR",
        "READDIRPLUS",
        "FSSTAT",
        "FSINFO",
        "PATHCONF",
        "COMMIT",
    ];
}

/// `nfsstat3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    Ok = 0,
    Perm = 1,
    NoEnt = 2,
    Io = 5,
    Nxio = 6,
    Acces = 13,
    Exist = 17,
    Xdev = 18,
    NoDev = 19,
    NotDir = 20,
    IsDir = 21,
    Inval = 22,
    FBig = 27,
    NoSpc = 28,
    Rofs = 30,
    MLink = 31,
    NameTooLong = 63,
    NotEmpty = 66,
    DQuot = 69,
    Stale = 70,
    Remote = 71,
    BadHandle = 10001,
    NotSync = 10002,
    BadCookie = 10003,
    NotSupp = 10004,
    TooSmall = 10005,
    ServerFault = 10006,
    BadType = 10007,
    Jukebox = 10008,
}

/// `ftype3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum FileType {
    Reg = 1,
    Dir = 2,
    Blk = 3,
    Chr = 4,
    Lnk = 5,
    Sock = 6,
    Fifo = 7,
}

/// `stable_how`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum StableHow {
    Unstable = 0,
    DataSync = 1,
    FileSync = 2,
}

/// ACCESS bits.
pub mod access {
    pub const READ: u32 = 0x01;
    pub const LOOKUP: u32 = 0x02;
    pub const MODIFY: u32 = 0x04;
    pub const EXTEND: u32 = 0x08;
    pub const DELETE: u32 = 0x10;
    pub const EXECUTE: u32 = 0x20;
}

/// FSINFO properties.
pub const FSF_LINK: u32 = 0x01;
pub const FSF_SYMLINK: u32 = 0x02;
pub const FSF_HOMOGENEOUS: u32 = 0x08;
pub const FSF_CANSETTIME: u32 = 0x10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NfsTime {
    pub seconds: u32,
    pub nseconds: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    DontChange,
    ServerTime,
    Client(NfsTime),
}

/// `sattr3`: what SETATTR, CREATE, MKDIR and SYMLINK may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sattr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: SetTime,
    pub mtime: SetTime,
}

impl Default for Sattr {
    fn default() -> Self {
        Sattr {
            mode: None,
            uid: None,
            gid: None,
            size: None,
            atime: SetTime::DontChange,
            mtime: SetTime::DontChange,
        }
    }
}

/// `createhow3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateHow {
    Unchecked(Sattr),
    Guarded(Sattr),
    Exclusive([u8; 8]),
}

/// A procedure's decoded arguments; handles, names and data borrow from the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Args<'a> {
    Null,
    GetAttr {
        fh: &'a [u8],
    },
    SetAttr {
        fh: &'a [u8],
        attr: Sattr,
        guard: Option<NfsTime>,
    },
    Lookup {
        dir: &'a [u8],
        name: &'a [u8],
    },
    Access {
        fh: &'a [u8],
        access: u32,
    },
    ReadLink {
        fh: &'a [u8],
    },
    Read {
        fh: &'a [u8],
        offset: u64,
        count: u32,
    },
    Write {
        fh: &'a [u8],
        offset: u64,
        stable: StableHow,
        data: &'a [u8],
    },
    Create {
        dir: &'a [u8],
        name: &'a [u8],
        how: CreateHow,
    },
    Mkdir {
        dir: &'a [u8],
        name: &'a [u8],
        attr: Sattr,
    },
    Symlink {
        dir: &'a [u8],
        name: &'a [u8],
        attr: Sattr,
        target: &'a [u8],
    },
    Mknod {
        dir: &'a [u8],
        name: &'a [u8],
        kind: u32,
    },
    Remove {
        dir: &'a [u8],
        name: &'a [u8],
    },
    Rmdir {
        dir: &'a [u8],
        name: &'a [u8],
    },
    Rename {
        from_dir: &'a [u8],
        from_name: &'a [u8],
        to_dir: &'a [u8],
        to_name: &'a [u8],
    },
    Link {
        fh: &'a [u8],
        dir: &'a [u8],
        name: &'a [u8],
    },
    ReadDir {
        dir: &'a [u8],
        cookie: u64,
        verf: [u8; 8],
        count: u32,
    },
    ReadDirPlus {
        dir: &'a [u8],
        cookie: u64,
        verf: [u8; 8],
        dircount: u32,
        maxcount: u32,
    },
    FsStat {
        fh: &'a [u8],
    },
    FsInfo {
        fh: &'a [u8],
    },
    PathConf {
        fh: &'a [u8],
    },
    Commit {
        fh: &'a [u8],
        offset: u64,
        count: u32,
    },
}

impl Args<'_> {
    /// The handle the operation acts on (the directory for directory operations; the
    /// source directory for RENAME, the file for LINK). `None` for NULL.
    pub fn handle(&self) -> Option<&[u8]> {
        use Args::*;
        Some(match self {
            Null => return None,
            GetAttr { fh }
            | SetAttr { fh, .. }
            | Access { fh, .. }
            | ReadLink { fh }
            | Read { fh, .. }
            | Write { fh, .. }
            | FsStat { fh }
            | FsInfo { fh }
            | PathConf { fh }
            | Commit { fh, .. }
            | Link { fh, .. } => fh,
            Lookup { dir, .. }
            | Create { dir, .. }
            | Mkdir { dir, .. }
            | Symlink { dir, .. }
            | Mknod { dir, .. }
            | Remove { dir, .. }
            | Rmdir { dir, .. }
            | ReadDir { dir, .. }
            | ReadDirPlus { dir, .. } => dir,
            Rename { from_dir, .. } => from_dir,
        })
    }
}

/// `Ok(None)`: no such procedure (PROC_UNAVAIL). `Err`: GARBAGE_ARGS.
pub fn decode_args(proc_: u32, args: &[u8]) -> Result<Option<Args<'_>>, XdrError> {
    use proc_::*;
    let r = &mut Reader::new(args);
    Ok(Some(match proc_ {
        NULL => Args::Null,
        GETATTR => Args::GetAttr { fh: fh(r)? },
        SETATTR => {
            let fh = fh(r)?;
            let attr = sattr(r)?;
            let guard = r.optional("guard", time)?;
            Args::SetAttr { fh, attr, guard }
        }
        LOOKUP => {
            let (dir, name) = diropargs(r)?;
            Args::Lookup { dir, name }
        }
        ACCESS => Args::Access {
            fh: fh(r)?,
            access: r.u32("access")?,
        },
        READLINK => Args::ReadLink { fh: fh(r)? },
        READ => Args::Read {
            fh: fh(r)?,
            offset: r.u64("offset")?,
            count: r.u32("count")?,
        },
        WRITE => write_args(r)?,
        CREATE => create_args(r)?,
        MKDIR => {
            let (dir, name) = diropargs(r)?;
            Args::Mkdir {
                dir,
                name,
                attr: sattr(r)?,
            }
        }
        SYMLINK => {
            let (dir, name) = diropargs(r)?;
            let attr = sattr(r)?;
            let target = r.opaque(MAX_DECODED, "symlink target")?;
            Args::Symlink {
                dir,
                name,
                attr,
                target,
            }
        }
        MKNOD => {
            let (dir, name) = diropargs(r)?;
            let kind = r.u32("ftype")?;
            if !(1..=7).contains(&kind) {
                return Err(XdrError::BadValue {
                    what: "ftype",
                    value: kind,
                });
            }
            Args::Mknod { dir, name, kind }
        }
        REMOVE => {
            let (dir, name) = diropargs(r)?;
            Args::Remove { dir, name }
        }
        RMDIR => {
            let (dir, name) = diropargs(r)?;
            Args::Rmdir { dir, name }
        }
        RENAME => {
            let (from_dir, from_name) = diropargs(r)?;
            let (to_dir, to_name) = diropargs(r)?;
            Args::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
            }
        }
        LINK => {
            let fh = fh(r)?;
            let (dir, name) = diropargs(r)?;
            Args::Link { fh, dir, name }
        }
        READDIR => {
            let dir = fh(r)?;
            let cookie = r.u64("cookie")?;
            let verf = verf8(r)?;
            Args::ReadDir {
                dir,
                cookie,
                verf,
                count: r.u32("count")?,
            }
        }
        READDIRPLUS => {
            let dir = fh(r)?;
            let cookie = r.u64("cookie")?;
            let verf = verf8(r)?;
            Args::ReadDirPlus {
                dir,
                cookie,
                verf,
                dircount: r.u32("dircount")?,
                maxcount: r.u32("maxcount")?,
            }
        }
        FSSTAT => Args::FsStat { fh: fh(r)? },
        FSINFO => Args::FsInfo { fh: fh(r)? },
        PATHCONF => Args::PathConf { fh: fh(r)? },
        COMMIT => Args::Commit {
            fh: fh(r)?,
            offset: r.u64("offset")?,
            count: r.u32("count")?,
        },
        _ => return Ok(None),
    }))
}

/// WRITE3args: the count must be the data's length.
fn write_args<'a>(r: &mut Reader<'a>) -> Result<Args<'a>, XdrError> {
    let fh = fh(r)?;
    let offset = r.u64("offset")?;
    let count = r.u32("count")?;
    let stable = match r.u32("stable_how")? {
        0 => StableHow::Unstable,
        1 => StableHow::DataSync,
        2 => StableHow::FileSync,
        value => {
            return Err(XdrError::BadValue {
                what: "stable_how",
                value,
            })
        }
    };
    let data = r.opaque(u32::MAX, "data")?;
    if count as usize != data.len() {
        return Err(XdrError::BadValue {
            what: "write count",
            value: count,
        });
    }
    Ok(Args::Write {
        fh,
        offset,
        stable,
        data,
    })
}

/// CREATE3args: UNCHECKED and GUARDED carry attributes, EXCLUSIVE a verifier.
fn create_args<'a>(r: &mut Reader<'a>) -> Result<Args<'a>, XdrError> {
    let (dir, name) = diropargs(r)?;
    let how = match r.u32("createmode")? {
        0 => CreateHow::Unchecked(sattr(r)?),
        1 => CreateHow::Guarded(sattr(r)?),
        2 => {
            let v = r.fixed(8, "createverf")?;
            let mut verf = [0; 8];
            verf.copy_from_slice(v);
            CreateHow::Exclusive(verf)
        }
        value => {
            return Err(XdrError::BadValue {
                what: "createmode",
                value,
            })
        }
    };
    Ok(Args::Create { dir, name, how })
}

fn fh<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], XdrError> {
    r.opaque(FHSIZE, "nfs_fh3")
}

fn diropargs<'a>(r: &mut Reader<'a>) -> Result<(&'a [u8], &'a [u8]), XdrError> {
    Ok((fh(r)?, r.opaque(MAX_DECODED, "filename3")?))
}

fn verf8(r: &mut Reader<'_>) -> Result<[u8; 8], XdrError> {
    let v = r.fixed(8, "cookieverf3")?;
    let mut out = [0; 8];
    out.copy_from_slice(v);
    Ok(out)
}

fn time(r: &mut Reader<'_>) -> Result<NfsTime, XdrError> {
    Ok(NfsTime {
        seconds: r.u32("seconds")?,
        nseconds: r.u32("nseconds")?,
    })
}

fn set_time(r: &mut Reader<'_>) -> Result<SetTime, XdrError> {
    match r.u32("time_how")? {
        0 => Ok(SetTime::DontChange),
        1 => Ok(SetTime::ServerTime),
        2 => Ok(SetTime::Client(time(r)?)),
        value => Err(XdrError::BadValue {
            what: "time_how",
            value,
        }),
    }
}

fn sattr(r: &mut Reader<'_>) -> Result<Sattr, XdrError> {
    Ok(Sattr {
        mode: r.optional("set_mode", |r| r.u32("mode"))?,
        uid: r.optional("set_uid", |r| r.u32("uid"))?,
        gid: r.optional("set_gid", |r| r.u32("gid"))?,
        size: r.optional("set_size", |r| r.u64("size"))?,
        atime: set_time(r)?,
        mtime: set_time(r)?,
    })
}

/// `fattr3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fattr {
    pub kind: FileType,
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub used: u64,
    pub rdev: (u32, u32),
    pub fsid: u64,
    pub fileid: u64,
    pub atime: NfsTime,
    pub mtime: NfsTime,
    pub ctime: NfsTime,
}

/// `wcc_attr`: what a client needs to validate its cache around a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WccAttr {
    pub size: u64,
    pub mtime: NfsTime,
    pub ctime: NfsTime,
}

impl From<&Fattr> for WccAttr {
    fn from(a: &Fattr) -> Self {
        WccAttr {
            size: a.size,
            mtime: a.mtime,
            ctime: a.ctime,
        }
    }
}

pub fn put_status(out: &mut Vec<u8>, s: Status) {
    put_u32(out, s as u32);
}

pub fn put_time(out: &mut Vec<u8>, t: NfsTime) {
    put_u32(out, t.seconds);
    put_u32(out, t.nseconds);
}

pub fn put_fattr(out: &mut Vec<u8>, a: &Fattr) {
    put_u32(out, a.kind as u32);
    put_u32(out, a.mode);
    put_u32(out, a.nlink);
    put_u32(out, a.uid);
    put_u32(out, a.gid);
    put_u64(out, a.size);
    put_u64(out, a.used);
    put_u32(out, a.rdev.0);
    put_u32(out, a.rdev.1);
    put_u64(out, a.fsid);
    put_u64(out, a.fileid);
    put_time(out, a.atime);
    put_time(out, a.mtime);
    put_time(out, a.ctime);
}

pub fn put_post_op_attr(out: &mut Vec<u8>, a: Option<&Fattr>) {
    put_bool(out, a.is_some());
    if let Some(a) = a {
        put_fattr(out, a);
    }
}

/// `wcc_data`: attributes before (size and times) and after a change.
pub fn put_wcc(out: &mut Vec<u8>, before: Option<&WccAttr>, after: Option<&Fattr>) {
    put_bool(out, before.is_some());
    if let Some(b) = before {
        put_u64(out, b.size);
        put_time(out, b.mtime);
        put_time(out, b.ctime);
    }
    put_post_op_attr(out, after);
}

pub fn put_fh(out: &mut Vec<u8>, fh: &[u8]) {
    put_opaque(out, fh);
}

pub fn put_post_op_fh(out: &mut Vec<u8>, fh: Option<&[u8]>) {
    put_bool(out, fh.is_some());
    if let Some(fh) = fh {
        put_fh(out, fh);
    }
}

pub fn put_verf(out: &mut Vec<u8>, v: &[u8; 8]) {
    put_fixed(out, v);
}

/// `fsinfo3resok` after its `obj_attributes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsInfo {
    pub rtmax: u32,
    pub rtpref: u32,
    pub rtmult: u32,
    pub wtmax: u32,
    pub wtpref: u32,
    pub wtmult: u32,
    pub dtpref: u32,
    pub maxfilesize: u64,
    pub time_delta: NfsTime,
    pub properties: u32,
}

pub fn put_fsinfo(out: &mut Vec<u8>, f: &FsInfo) {
    for v in [
        f.rtmax, f.rtpref, f.rtmult, f.wtmax, f.wtpref, f.wtmult, f.dtpref,
    ] {
        put_u32(out, v);
    }
    put_u64(out, f.maxfilesize);
    put_time(out, f.time_delta);
    put_u32(out, f.properties);
}

/// Encodes a procedure's arguments (for tests and the fuzz corpus): WRITE.
pub fn encode_write(out: &mut Vec<u8>, fh: &[u8], offset: u64, stable: StableHow, data: &[u8]) {
    put_fh(out, fh);
    put_u64(out, offset);
    put_u32(out, data.len() as u32);
    put_u32(out, stable as u32);
    put_opaque(out, data);
}

/// Encodes diropargs3 (LOOKUP, REMOVE, RMDIR): handle and name.
pub fn encode_diropargs(out: &mut Vec<u8>, fh: &[u8], name: &[u8]) {
    put_fh(out, fh);
    put_opaque(out, name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_round_trip() {
        let mut a = Vec::new();
        encode_write(&mut a, b"handle", 4096, StableHow::Unstable, b"hello");
        assert_eq!(
            decode_args(proc_::WRITE, &a).unwrap().unwrap(),
            Args::Write {
                fh: b"handle",
                offset: 4096,
                stable: StableHow::Unstable,
                data: b"hello"
            }
        );
        // count disagreeing with the data is garbage
        a[12 + 8 + 3] = 9;
        assert!(decode_args(proc_::WRITE, &a).is_err());
    }

    #[test]
    fn bounds() {
        let mut a = Vec::new();
        put_opaque(&mut a, &[0; 65]);
        assert!(decode_args(proc_::GETATTR, &a).is_err());
        // A name over NAME_MAX decodes (the server answers NAMETOOLONG); one over the
        // decode bound is garbage.
        let mut a = Vec::new();
        encode_diropargs(&mut a, b"fh", &[b'x'; 256]);
        assert!(decode_args(proc_::LOOKUP, &a).is_ok());
        let mut a = Vec::new();
        encode_diropargs(&mut a, b"fh", &[b'x'; MAX_DECODED as usize + 1]);
        assert!(decode_args(proc_::LOOKUP, &a).is_err());
        assert_eq!(decode_args(22, &[]).unwrap(), None);
        for p in 0..22 {
            let _ = decode_args(p, &[]);
            let _ = decode_args(p, &[0xff; 64]);
        }
    }

    #[test]
    fn sattr_and_create() {
        let mut a = Vec::new();
        encode_diropargs(&mut a, b"d", b"f");
        for v in [1u32, 1, 0o644, 0, 0, 1, 0, 10, 0, 2, 5, 6] {
            put_u32(&mut a, v);
        }
        let got = decode_args(proc_::CREATE, &a).unwrap().unwrap();
        let attr = Sattr {
            mode: Some(0o644),
            size: Some(10),
            mtime: SetTime::Client(NfsTime {
                seconds: 5,
                nseconds: 6,
            }),
            ..Sattr::default()
        };
        assert_eq!(
            got,
            Args::Create {
                dir: b"d",
                name: b"f",
                how: CreateHow::Guarded(attr)
            }
        );
    }
}
