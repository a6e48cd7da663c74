//! Transmission phase: request headers and simple/structured replies.

use crate::consts::*;
use crate::handshake::{be_u16, be_u32, be_u64};
use crate::DecodeError;

/// A decoded request header (the payload of a WRITE follows it on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub flags: u16,
    pub command: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u32,
}

/// Decode a 28-byte request header. Only the magic is checked here; command and flag
/// validity are the server's business (it must answer EINVAL, not disconnect). A buffer
/// shorter than a header is an error, never a panic (found by the `nbd_decoders` fuzz
/// target: this was a `debug_assert` and an out-of-bounds index).
pub fn decode_request(buf: &[u8]) -> Result<Request, DecodeError> {
    if buf.len() < REQUEST_HEADER_LEN {
        return Err(DecodeError::Malformed {
            what: "request header",
            detail: format!("{} bytes, a header has {REQUEST_HEADER_LEN}", buf.len()),
        });
    }
    let magic = be_u32(&buf[0..4]);
    if magic != REQUEST_MAGIC {
        return Err(DecodeError::BadMagic {
            expected: REQUEST_MAGIC as u64,
            found: magic as u64,
        });
    }
    Ok(Request {
        flags: be_u16(&buf[4..6]),
        command: be_u16(&buf[6..8]),
        cookie: be_u64(&buf[8..16]),
        offset: be_u64(&buf[16..24]),
        length: be_u32(&buf[24..28]),
    })
}

/// Encode a request header (used by tests and tools that act as a client).
pub fn encode_request(out: &mut Vec<u8>, req: &Request) {
    out.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
    out.extend_from_slice(&req.flags.to_be_bytes());
    out.extend_from_slice(&req.command.to_be_bytes());
    out.extend_from_slice(&req.cookie.to_be_bytes());
    out.extend_from_slice(&req.offset.to_be_bytes());
    out.extend_from_slice(&req.length.to_be_bytes());
}

/// Human-readable command name, for logs and errors.
pub fn command_name(cmd: u16) -> &'static str {
    match cmd {
        CMD_READ => "READ",
        CMD_WRITE => "WRITE",
        CMD_DISC => "DISC",
        CMD_FLUSH => "FLUSH",
        CMD_TRIM => "TRIM",
        CMD_CACHE => "CACHE",
        CMD_WRITE_ZEROES => "WRITE_ZEROES",
        CMD_BLOCK_STATUS => "BLOCK_STATUS",
        _ => "UNKNOWN",
    }
}

/// Simple reply header (16 bytes); READ data follows it on success.
pub fn encode_simple_reply(out: &mut Vec<u8>, cookie: u64, error: u32) {
    out.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(&cookie.to_be_bytes());
}

/// Structured chunk header (20 bytes).
pub fn encode_chunk_header(out: &mut Vec<u8>, flags: u16, ty: u16, cookie: u64, length: u32) {
    out.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&ty.to_be_bytes());
    out.extend_from_slice(&cookie.to_be_bytes());
    out.extend_from_slice(&length.to_be_bytes());
}

/// Header of a final OFFSET_DATA chunk for `data_len` bytes at `offset`; the caller appends
/// exactly `data_len` bytes of data after it.
pub fn encode_read_chunk_header(out: &mut Vec<u8>, cookie: u64, offset: u64, data_len: u32) {
    encode_chunk_header(
        out,
        REPLY_FLAG_DONE,
        REPLY_TYPE_OFFSET_DATA,
        cookie,
        data_len + 8,
    );
    out.extend_from_slice(&offset.to_be_bytes());
}

/// A final NBD_REPLY_TYPE_NONE chunk (success without payload).
pub fn encode_structured_done(out: &mut Vec<u8>, cookie: u64) {
    encode_chunk_header(out, REPLY_FLAG_DONE, REPLY_TYPE_NONE, cookie, 0);
}

/// A final NBD_REPLY_TYPE_ERROR chunk with a message for humans.
pub fn encode_structured_error(out: &mut Vec<u8>, cookie: u64, error: u32, message: &str) {
    let msg = &message.as_bytes()[..message.len().min(4096)];
    encode_chunk_header(
        out,
        REPLY_FLAG_DONE,
        REPLY_TYPE_ERROR,
        cookie,
        6 + msg.len() as u32,
    );
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
}

/// A final BLOCK_STATUS chunk: context id then (length, status) descriptors.
pub fn encode_block_status(out: &mut Vec<u8>, cookie: u64, context: u32, extents: &[(u32, u32)]) {
    let len = 4 + 8 * extents.len() as u32;
    encode_chunk_header(out, REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, cookie, len);
    out.extend_from_slice(&context.to_be_bytes());
    for (length, status) in extents {
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&status.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip() {
        let req = Request {
            flags: CMD_FLAG_FUA,
            command: CMD_WRITE,
            cookie: 0xdead_beef,
            offset: 4096,
            length: 512,
        };
        let mut out = Vec::new();
        encode_request(&mut out, &req);
        assert_eq!(out.len(), REQUEST_HEADER_LEN);
        assert_eq!(decode_request(&out).unwrap(), req);
        // Short buffers are an error, never a panic (the fuzzer's first finding).
        for n in 0..REQUEST_HEADER_LEN {
            assert!(matches!(
                decode_request(&out[..n]),
                Err(DecodeError::Malformed { .. })
            ));
        }
    }

    #[test]
    fn request_bad_magic() {
        let out = [0u8; REQUEST_HEADER_LEN];
        assert!(matches!(
            decode_request(&out),
            Err(DecodeError::BadMagic { .. })
        ));
    }

    #[test]
    fn structured_error_layout() {
        let mut out = Vec::new();
        encode_structured_error(&mut out, 7, EINVAL, "nope");
        assert_eq!(out.len(), 20 + 6 + 4);
        assert_eq!(be_u32(&out[0..4]), STRUCTURED_REPLY_MAGIC);
        assert_eq!(be_u16(&out[4..6]), REPLY_FLAG_DONE);
        assert_eq!(be_u16(&out[6..8]), REPLY_TYPE_ERROR);
        assert_eq!(be_u64(&out[8..16]), 7);
        assert_eq!(be_u32(&out[16..20]), 10);
        assert_eq!(be_u32(&out[20..24]), EINVAL);
    }

    #[test]
    fn block_status_chunk_type_is_five() {
        let mut out = Vec::new();
        encode_block_status(&mut out, 1, 1, &[(4096, STATE_HOLE | STATE_ZERO)]);
        assert_eq!(be_u16(&out[6..8]), 5);
        assert_eq!(out.len(), 20 + 4 + 8);
    }
}
