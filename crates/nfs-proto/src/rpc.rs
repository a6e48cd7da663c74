//! ONC RPC v2 messages (RFC 5531): the call header, AUTH_SYS credentials, reply headers.

use crate::xdr::{put_opaque, put_u32, Reader, XdrError};

pub const RPC_VERSION: u32 = 2;
pub const CALL: u32 = 0;
pub const REPLY: u32 = 1;

pub const AUTH_NONE: u32 = 0;
pub const AUTH_SYS: u32 = 1;
/// Largest credential or verifier body (RFC 5531 §8.2).
pub const MAX_AUTH_BYTES: u32 = 400;

/// `accept_stat` of an accepted reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    Success,
    ProgUnavail,
    /// The program exists; these are the versions served.
    ProgMismatch {
        low: u32,
        high: u32,
    },
    ProcUnavail,
    GarbageArgs,
    SystemErr,
}

/// `auth_stat` of an AUTH_ERROR rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum AuthStat {
    BadCred = 1,
    RejectedCred = 2,
    BadVerf = 3,
    RejectedVerf = 4,
    TooWeak = 5,
}

/// The credential a call carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cred {
    None,
    Sys(AuthSys),
    /// Any other flavour (RPCSEC_GSS, AUTH_DH...): the server answers AUTH_TOOWEAK or
    /// AUTH_BADCRED as its policy says.
    Other(u32),
}

/// AUTH_SYS (RFC 5531 appendix A).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuthSys {
    pub stamp: u32,
    pub machine: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
    pub gids: Vec<u32>,
}

/// A decoded call header; `args` are the procedure's arguments, still encoded.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub cred: Cred,
    pub args: &'a [u8],
}

/// What the start of a record turned out to be.
#[derive(Debug)]
pub enum Message<'a> {
    Call(Call<'a>),
    /// Not a call (a reply, or an unknown message type): ignored by a server.
    NotACall {
        xid: u32,
    },
    /// A call of another RPC version: answer MSG_DENIED / RPC_MISMATCH.
    RpcMismatch {
        xid: u32,
    },
    /// The credential is malformed: answer MSG_DENIED / AUTH_ERROR(BADCRED).
    BadCred {
        xid: u32,
    },
    /// The header is unreadable (not even an xid, or a truncated header): drop the record.
    Garbage(XdrError),
}

/// Decodes a record's RPC header. Never panics.
pub fn decode(record: &[u8]) -> Message<'_> {
    let mut r = Reader::new(record);
    let xid = match r.u32("xid") {
        Ok(x) => x,
        Err(e) => return Message::Garbage(e),
    };
    let head = (|| -> Result<Option<(u32, u32, u32, u32)>, XdrError> {
        if r.u32("msg_type")? != CALL {
            return Ok(None);
        }
        Ok(Some((
            r.u32("rpcvers")?,
            r.u32("prog")?,
            r.u32("vers")?,
            r.u32("proc")?,
        )))
    })();
    let (rpcvers, prog, vers, proc_) = match head {
        Ok(Some(h)) => h,
        Ok(None) => return Message::NotACall { xid },
        Err(e) => return Message::Garbage(e),
    };
    if rpcvers != RPC_VERSION {
        return Message::RpcMismatch { xid };
    }
    let cred = match decode_cred(&mut r) {
        Ok(c) => c,
        Err(_) => return Message::BadCred { xid },
    };
    // The verifier: any flavour, bounded body; its content is not checked for AUTH_SYS.
    if r.u32("verf flavor")
        .and_then(|_| r.opaque(MAX_AUTH_BYTES, "verf"))
        .is_err()
    {
        return Message::BadCred { xid };
    }
    Message::Call(Call {
        xid,
        prog,
        vers,
        proc_,
        cred,
        args: r.remaining(),
    })
}

fn decode_cred(r: &mut Reader<'_>) -> Result<Cred, XdrError> {
    let flavor = r.u32("cred flavor")?;
    let body = r.opaque(MAX_AUTH_BYTES, "cred")?;
    match flavor {
        AUTH_NONE => Ok(Cred::None),
        AUTH_SYS => {
            let mut b = Reader::new(body);
            let stamp = b.u32("stamp")?;
            let machine = b.opaque(255, "machinename")?.to_vec();
            let uid = b.u32("uid")?;
            let gid = b.u32("gid")?;
            let n = b.u32("gids")?;
            if n > 16 {
                return Err(XdrError::TooLong {
                    what: "gids",
                    len: n,
                    max: 16,
                });
            }
            let gids = (0..n).map(|_| b.u32("gid")).collect::<Result<_, _>>()?;
            Ok(Cred::Sys(AuthSys {
                stamp,
                machine,
                uid,
                gid,
                gids,
            }))
        }
        other => Ok(Cred::Other(other)),
    }
}

/// Appends an accepted reply's header (verifier AUTH_NONE); for `Success` the procedure's
/// results follow, for `ProgMismatch` the versions are written here.
pub fn accepted(out: &mut Vec<u8>, xid: u32, accept: Accept) {
    put_u32(out, xid);
    put_u32(out, REPLY);
    put_u32(out, 0); // MSG_ACCEPTED
    put_u32(out, AUTH_NONE);
    put_opaque(out, &[]);
    let (stat, mismatch) = match accept {
        Accept::Success => (0, None),
        Accept::ProgUnavail => (1, None),
        Accept::ProgMismatch { low, high } => (2, Some((low, high))),
        Accept::ProcUnavail => (3, None),
        Accept::GarbageArgs => (4, None),
        Accept::SystemErr => (5, None),
    };
    put_u32(out, stat);
    if let Some((low, high)) = mismatch {
        put_u32(out, low);
        put_u32(out, high);
    }
}

/// MSG_DENIED / RPC_MISMATCH: this server speaks RPC version 2 only.
pub fn rpc_mismatch(out: &mut Vec<u8>, xid: u32) {
    put_u32(out, xid);
    put_u32(out, REPLY);
    put_u32(out, 1); // MSG_DENIED
    put_u32(out, 0); // RPC_MISMATCH
    put_u32(out, RPC_VERSION);
    put_u32(out, RPC_VERSION);
}

/// MSG_DENIED / AUTH_ERROR.
pub fn auth_error(out: &mut Vec<u8>, xid: u32, stat: AuthStat) {
    put_u32(out, xid);
    put_u32(out, REPLY);
    put_u32(out, 1); // MSG_DENIED
    put_u32(out, 1); // AUTH_ERROR
    put_u32(out, stat as u32);
}

/// Encodes a call (for tests and clients): header, credential, AUTH_NONE verifier, args.
pub fn encode_call(
    out: &mut Vec<u8>,
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    cred: &Cred,
    args: &[u8],
) {
    for v in [xid, CALL, RPC_VERSION, prog, vers, proc_] {
        put_u32(out, v);
    }
    match cred {
        Cred::None => {
            put_u32(out, AUTH_NONE);
            put_opaque(out, &[]);
        }
        Cred::Sys(s) => {
            let mut body = Vec::new();
            put_u32(&mut body, s.stamp);
            put_opaque(&mut body, &s.machine);
            put_u32(&mut body, s.uid);
            put_u32(&mut body, s.gid);
            put_u32(&mut body, s.gids.len() as u32);
            for g in &s.gids {
                put_u32(&mut body, *g);
            }
            put_u32(out, AUTH_SYS);
            put_opaque(out, &body);
        }
        Cred::Other(f) => {
            put_u32(out, *f);
            put_opaque(out, &[]);
        }
    }
    put_u32(out, AUTH_NONE);
    put_opaque(out, &[]);
    out.extend_from_slice(args);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_round_trip() {
        let cred = Cred::Sys(AuthSys {
            stamp: 1,
            machine: b"host".to_vec(),
            uid: 1000,
            gid: 100,
            gids: vec![4, 5],
        });
        let mut out = Vec::new();
        encode_call(&mut out, 7, 100003, 3, 1, &cred, &[1, 2, 3, 4]);
        match decode(&out) {
            Message::Call(c) => {
                assert_eq!((c.xid, c.prog, c.vers, c.proc_), (7, 100003, 3, 1));
                assert_eq!(c.cred, cred);
                assert_eq!(c.args, &[1, 2, 3, 4]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_headers() {
        assert!(matches!(decode(&[0, 0]), Message::Garbage(_)));
        assert!(matches!(
            decode(&[0, 0, 0, 9, 0, 0, 0, 1]),
            Message::NotACall { xid: 9 }
        ));
        let mut out = Vec::new();
        encode_call(&mut out, 3, 1, 1, 1, &Cred::None, &[]);
        out[11] = 3; // rpcvers 3
        assert!(matches!(decode(&out), Message::RpcMismatch { xid: 3 }));
        let mut out = Vec::new();
        encode_call(&mut out, 4, 1, 1, 1, &Cred::None, &[]);
        out.truncate(30);
        assert!(matches!(decode(&out), Message::BadCred { xid: 4 }));
    }
}
