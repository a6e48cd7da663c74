//! The portmapper, program 100000 version 2 (RFC 1833 §3): GETPORT answers where our own
//! programs listen, so `mount` and libnfs find NFS and MOUNT on the node's one address.

use crate::xdr::{put_bool, put_u32, Reader, XdrError};

pub const PROGRAM: u32 = 100000;
pub const VERSION: u32 = 2;

pub const NULL: u32 = 0;
pub const SET: u32 = 1;
pub const UNSET: u32 = 2;
pub const GETPORT: u32 = 3;
pub const DUMP: u32 = 4;

pub const IPPROTO_TCP: u32 = 6;
pub const IPPROTO_UDP: u32 = 17;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub prog: u32,
    pub vers: u32,
    pub prot: u32,
    pub port: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Args {
    Null,
    /// SET and UNSET: registrations by other servers, which this portmapper refuses.
    Set(Mapping),
    Unset(Mapping),
    GetPort(Mapping),
    Dump,
}

fn mapping(r: &mut Reader<'_>) -> Result<Mapping, XdrError> {
    Ok(Mapping {
        prog: r.u32("prog")?,
        vers: r.u32("vers")?,
        prot: r.u32("prot")?,
        port: r.u32("port")?,
    })
}

/// `Ok(None)`: no such procedure (CALLIT included). `Err`: GARBAGE_ARGS.
pub fn decode_args(proc_: u32, args: &[u8]) -> Result<Option<Args>, XdrError> {
    let r = &mut Reader::new(args);
    Ok(Some(match proc_ {
        NULL => Args::Null,
        SET => Args::Set(mapping(r)?),
        UNSET => Args::Unset(mapping(r)?),
        GETPORT => Args::GetPort(mapping(r)?),
        DUMP => Args::Dump,
        _ => return Ok(None),
    }))
}

pub fn put_mapping(out: &mut Vec<u8>, m: &Mapping) {
    for v in [m.prog, m.vers, m.prot, m.port] {
        put_u32(out, v);
    }
}

/// `pmaplist` (DUMP).
pub fn put_dump(out: &mut Vec<u8>, maps: &[Mapping]) {
    for m in maps {
        put_bool(out, true);
        put_mapping(out, m);
    }
    put_bool(out, false);
}

/// Encodes GETPORT's arguments (for tests).
pub fn encode_getport(out: &mut Vec<u8>, prog: u32, vers: u32) {
    put_mapping(
        out,
        &Mapping {
            prog,
            vers,
            prot: IPPROTO_TCP,
            port: 0,
        },
    );
}
