//! Newstyle negotiation: the server greeting, option headers and payloads, option replies.

use crate::consts::*;
use crate::DecodeError;

/// Bytes the server sends first: NBDMAGIC, IHAVEOPT, handshake flags.
pub fn encode_greeting(out: &mut Vec<u8>) {
    out.extend_from_slice(&NBDMAGIC.to_be_bytes());
    out.extend_from_slice(&IHAVEOPT.to_be_bytes());
    out.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
}

/// An option header: IHAVEOPT, option number, payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionHeader {
    pub option: u32,
    pub length: u32,
}

/// Decode the 16-byte option header.
pub fn decode_option_header(buf: &[u8; OPTION_HEADER_LEN]) -> Result<OptionHeader, DecodeError> {
    let magic = be_u64(&buf[0..8]);
    if magic != IHAVEOPT {
        return Err(DecodeError::BadMagic {
            expected: IHAVEOPT,
            found: magic,
        });
    }
    Ok(OptionHeader {
        option: be_u32(&buf[8..12]),
        length: be_u32(&buf[12..16]),
    })
}

/// Payload of NBD_OPT_INFO and NBD_OPT_GO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoRequest {
    pub name: String,
    pub requests: Vec<u16>,
}

/// Decode the payload of INFO/GO: u32 name length, name, u16 count, count x u16.
pub fn decode_info_request(data: &[u8]) -> Result<InfoRequest, DecodeError> {
    let mut r = Reader::new(data, "NBD_OPT_INFO/GO payload");
    let name = r.string_u32()?;
    let n = r.u16()? as usize;
    let mut requests = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        requests.push(r.u16()?);
    }
    r.finish()?;
    Ok(InfoRequest { name, requests })
}

/// Payload of NBD_OPT_SET_META_CONTEXT / LIST_META_CONTEXT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaContextRequest {
    pub export: String,
    pub queries: Vec<String>,
}

/// Decode a meta context request: u32 name length, name, u32 count, count x (u32 len, string).
pub fn decode_meta_context_request(data: &[u8]) -> Result<MetaContextRequest, DecodeError> {
    let mut r = Reader::new(data, "meta context request");
    let export = r.string_u32()?;
    let n = r.u32()? as usize;
    let mut queries = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        queries.push(r.string_u32()?);
    }
    r.finish()?;
    Ok(MetaContextRequest { export, queries })
}

/// Append one option reply: magic, option, type, length, data.
pub fn encode_option_reply(out: &mut Vec<u8>, option: u32, reply_type: u32, data: &[u8]) {
    out.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply_type.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

/// Append an error option reply carrying a human-readable message.
pub fn encode_option_error(out: &mut Vec<u8>, option: u32, reply_type: u32, message: &str) {
    encode_option_reply(out, option, reply_type, message.as_bytes());
}

/// NBD_REP_SERVER payload for LIST: name length, name, then the description.
pub fn encode_list_entry(out: &mut Vec<u8>, name: &str, description: &str) {
    let mut data = Vec::with_capacity(4 + name.len() + description.len());
    data.extend_from_slice(&(name.len() as u32).to_be_bytes());
    data.extend_from_slice(name.as_bytes());
    data.extend_from_slice(description.as_bytes());
    encode_option_reply(out, OPT_LIST, REP_SERVER, &data);
}

/// NBD_REP_INFO / NBD_INFO_EXPORT: size and transmission flags.
pub fn encode_info_export(out: &mut Vec<u8>, option: u32, size: u64, flags: u16) {
    let mut data = [0u8; 12];
    data[0..2].copy_from_slice(&INFO_EXPORT.to_be_bytes());
    data[2..10].copy_from_slice(&size.to_be_bytes());
    data[10..12].copy_from_slice(&flags.to_be_bytes());
    encode_option_reply(out, option, REP_INFO, &data);
}

/// NBD_REP_INFO carrying a string (NBD_INFO_NAME or NBD_INFO_DESCRIPTION).
pub fn encode_info_string(out: &mut Vec<u8>, option: u32, info: u16, value: &str) {
    let mut data = Vec::with_capacity(2 + value.len());
    data.extend_from_slice(&info.to_be_bytes());
    data.extend_from_slice(value.as_bytes());
    encode_option_reply(out, option, REP_INFO, &data);
}

/// NBD_REP_INFO / NBD_INFO_BLOCK_SIZE: minimum, preferred, maximum payload.
pub fn encode_info_block_size(out: &mut Vec<u8>, option: u32, min: u32, preferred: u32, max: u32) {
    let mut data = [0u8; 14];
    data[0..2].copy_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    data[2..6].copy_from_slice(&min.to_be_bytes());
    data[6..10].copy_from_slice(&preferred.to_be_bytes());
    data[10..14].copy_from_slice(&max.to_be_bytes());
    encode_option_reply(out, option, REP_INFO, &data);
}

/// NBD_REP_META_CONTEXT: context id and name.
pub fn encode_meta_context(out: &mut Vec<u8>, option: u32, id: u32, name: &str) {
    let mut data = Vec::with_capacity(4 + name.len());
    data.extend_from_slice(&id.to_be_bytes());
    data.extend_from_slice(name.as_bytes());
    encode_option_reply(out, option, REP_META_CONTEXT, &data);
}

/// Reply to NBD_OPT_EXPORT_NAME: size, flags, and (unless NO_ZEROES) 124 zero bytes.
pub fn encode_export_name_reply(out: &mut Vec<u8>, size: u64, flags: u16, no_zeroes: bool) {
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    if !no_zeroes {
        out.extend_from_slice(&[0u8; 124]);
    }
}

pub(crate) fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

pub(crate) fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_be_bytes(a)
}

pub(crate) fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// Bounds-checked big-endian reader over an option payload.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, pos: 0, what }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(DecodeError::Malformed {
                what: self.what,
                detail: format!(
                    "needs {} more bytes at offset {} but only {} remain",
                    n,
                    self.pos,
                    self.data.len() - self.pos
                ),
            }),
        }
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        self.take(2).map(be_u16)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.take(4).map(be_u32)
    }
    fn string_u32(&mut self) -> Result<String, DecodeError> {
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::Malformed {
            what: self.what,
            detail: "string is not UTF-8".into(),
        })
    }
    fn finish(self) -> Result<(), DecodeError> {
        if self.pos == self.data.len() {
            Ok(())
        } else {
            Err(DecodeError::Malformed {
                what: self.what,
                detail: format!("{} trailing bytes", self.data.len() - self.pos),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_request_round_trip() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"vol");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&INFO_NAME.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        let r = decode_info_request(&d).unwrap();
        assert_eq!(r.name, "vol");
        assert_eq!(r.requests, vec![INFO_NAME, INFO_BLOCK_SIZE]);
    }

    #[test]
    fn info_request_rejects_inconsistent_lengths() {
        // Claims a 100-byte name in a 7-byte payload.
        let mut d = Vec::new();
        d.extend_from_slice(&100u32.to_be_bytes());
        d.extend_from_slice(b"abc");
        assert!(matches!(
            decode_info_request(&d),
            Err(DecodeError::Malformed { .. })
        ));
        // Trailing garbage.
        let mut d = Vec::new();
        d.extend_from_slice(&0u32.to_be_bytes());
        d.extend_from_slice(&0u16.to_be_bytes());
        d.push(9);
        assert!(decode_info_request(&d).is_err());
    }

    #[test]
    fn meta_context_request_decodes() {
        let mut d = Vec::new();
        d.extend_from_slice(&1u32.to_be_bytes());
        d.extend_from_slice(b"v");
        d.extend_from_slice(&1u32.to_be_bytes());
        d.extend_from_slice(&15u32.to_be_bytes());
        d.extend_from_slice(BASE_ALLOCATION.as_bytes());
        let r = decode_meta_context_request(&d).unwrap();
        assert_eq!(r.export, "v");
        assert_eq!(r.queries, vec![BASE_ALLOCATION.to_string()]);
    }

    #[test]
    fn option_header_checks_magic() {
        let mut h = [0u8; 16];
        h[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
        assert!(matches!(
            decode_option_header(&h),
            Err(DecodeError::BadMagic { .. })
        ));
        h[0..8].copy_from_slice(&IHAVEOPT.to_be_bytes());
        h[8..12].copy_from_slice(&OPT_GO.to_be_bytes());
        h[12..16].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(
            decode_option_header(&h).unwrap(),
            OptionHeader {
                option: OPT_GO,
                length: 7
            }
        );
    }

    #[test]
    fn greeting_layout() {
        let mut out = Vec::new();
        encode_greeting(&mut out);
        assert_eq!(&out[0..8], b"NBDMAGIC");
        assert_eq!(&out[8..16], b"IHAVEOPT");
        assert_eq!(out.len(), 18);
    }
}
