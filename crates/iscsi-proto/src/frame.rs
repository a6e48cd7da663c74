//! PDU framing (RFC 7143 §11.2): a 48-byte basic header segment (BHS), additional header
//! segments (AHS, `TotalAHSLength` 4-byte words), an optional header digest, the data
//! segment (`DataSegmentLength` bytes, padded to a multiple of 4), an optional data digest.

use crate::be;
use crate::digest::{crc32c, from_wire, wire};

/// Length of the basic header segment.
pub const BHS_LEN: usize = 48;

/// Which digests the connection negotiated (none during login).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digests {
    pub header: bool,
    pub data: bool,
}

/// One framed PDU borrowed from the receive buffer. Digests are already checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPdu<'a> {
    pub bhs: &'a [u8; BHS_LEN],
    /// Additional header segments (each `length:u16, type:u8, specific...`).
    pub ahs: &'a [u8],
    /// The data segment without padding.
    pub data: &'a [u8],
}

impl RawPdu<'_> {
    pub fn opcode(&self) -> u8 {
        self.bhs[0] & 0x3f
    }
    pub fn itt(&self) -> u32 {
        be::u32(&self.bhs[16..20])
    }
}

/// A PDU that cannot be accepted.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum FrameError {
    /// The header digest did not match: the lengths cannot be trusted, so the stream
    /// cannot be resynchronised and the connection ends (RFC 7143 §7.8).
    #[error("header digest mismatch: computed 0x{computed:08x}, received 0x{received:08x}")]
    HeaderDigest { computed: u32, received: u32 },
    /// The data digest did not match. The PDU (`used` bytes) can be skipped; the target
    /// answers with a Reject (reason 0x02) carrying `bhs`.
    #[error("data digest mismatch on a PDU with opcode 0x{:02x}", bhs[0] & 0x3f)]
    DataDigest { bhs: [u8; BHS_LEN], used: usize },
    /// The data segment is longer than the MaxRecvDataSegmentLength this side declared.
    /// Refused before any of it is buffered; the connection ends (a protocol error).
    #[error("data segment of {len} bytes exceeds MaxRecvDataSegmentLength {max}")]
    DataTooLong { len: u32, max: u32 },
}

fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// The next complete PDU at the start of `buf` and how many bytes it used; `Ok(None)`:
/// more bytes are needed. `max_data` is this side's MaxRecvDataSegmentLength.
pub fn next_pdu(
    buf: &[u8],
    digests: Digests,
    max_data: u32,
) -> Result<Option<(RawPdu<'_>, usize)>, FrameError> {
    let Some(bhs) = buf.get(..BHS_LEN) else {
        return Ok(None);
    };
    let ahs_len = bhs[4] as usize * 4;
    let data_len = be::u24(&bhs[5..8]);
    if data_len > max_data {
        return Err(FrameError::DataTooLong {
            len: data_len,
            max: max_data,
        });
    }
    let data_len = data_len as usize;
    let hd = if digests.header { 4 } else { 0 };
    let dd = if digests.data && data_len > 0 { 4 } else { 0 };
    let header_end = BHS_LEN + ahs_len;
    let data_start = header_end + hd;
    let padded = data_len + pad4(data_len);
    let total = data_start + padded + dd;
    if buf.len() < data_start {
        return Ok(None);
    }
    if digests.header {
        let computed = crc32c(&[&buf[..header_end]]);
        let received = from_wire(&buf[header_end..data_start]);
        if computed != received {
            return Err(FrameError::HeaderDigest { computed, received });
        }
    }
    if buf.len() < total {
        return Ok(None);
    }
    let bhs: &[u8; BHS_LEN] = match buf[..BHS_LEN].try_into() {
        Ok(b) => b,
        Err(_) => return Ok(None),
    };
    if dd > 0 {
        let computed = crc32c(&[&buf[data_start..data_start + padded]]);
        if computed != from_wire(&buf[data_start + padded..total]) {
            return Err(FrameError::DataDigest {
                bhs: *bhs,
                used: total,
            });
        }
    }
    Ok(Some((
        RawPdu {
            bhs,
            ahs: &buf[BHS_LEN..header_end],
            data: &buf[data_start..data_start + data_len],
        },
        total,
    )))
}

/// Appends one PDU: `bhs` with its DataSegmentLength set to the parts' total (and no
/// AHS), the header digest, the data parts, padding and the data digest.
pub fn put(out: &mut Vec<u8>, bhs: &[u8; BHS_LEN], data: &[&[u8]], digests: Digests) {
    let len: usize = data.iter().map(|d| d.len()).sum();
    let data_start = put_deferred(out, bhs, len, digests);
    for d in data {
        out.extend_from_slice(d);
    }
    finish_deferred(out, data_start, digests);
}

/// Appends a PDU whose data the caller writes straight into `out` after this returns
/// (e.g. a READ's Data-In, read from the LUN into the send buffer without a copy):
/// returns where the data starts; call [`finish_deferred`] once `len` bytes are there.
pub fn put_deferred(out: &mut Vec<u8>, bhs: &[u8; BHS_LEN], len: usize, digests: Digests) -> usize {
    let start = out.len();
    out.extend_from_slice(bhs);
    out[start + 4] = 0;
    let l = (len as u32).to_be_bytes();
    out[start + 5..start + 8].copy_from_slice(&l[1..4]);
    if digests.header {
        let crc = crc32c(&[&out[start..start + BHS_LEN]]);
        out.extend_from_slice(&wire(crc));
    }
    out.len()
}

/// Pads the data begun at `data_start` (see [`put_deferred`]) and adds its digest.
pub fn finish_deferred(out: &mut Vec<u8>, data_start: usize, digests: Digests) {
    let len = out.len() - data_start;
    if len == 0 {
        return;
    }
    out.extend_from_slice(&[0u8; 3][..pad4(len)]);
    if digests.data {
        let crc = crc32c(&[&out[data_start..]]);
        out.extend_from_slice(&wire(crc));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Header and data digests both negotiated.
    const BOTH: Digests = Digests {
        header: true,
        data: true,
    };

    fn bhs(op: u8) -> [u8; BHS_LEN] {
        let mut b = [0u8; BHS_LEN];
        b[0] = op;
        b[16..20].copy_from_slice(&7u32.to_be_bytes());
        b
    }

    #[test]
    fn round_trip_with_and_without_digests() {
        for d in [
            Digests::default(),
            BOTH,
            Digests {
                header: true,
                data: false,
            },
        ] {
            let mut out = Vec::new();
            put(&mut out, &bhs(0x25), &[b"abc", b"de"], d);
            put(&mut out, &bhs(0x20), &[], d);
            let (p, used) = next_pdu(&out, d, 8192).unwrap().unwrap();
            assert_eq!((p.opcode(), p.itt(), p.data), (0x25, 7, &b"abcde"[..]));
            let (p2, used2) = next_pdu(&out[used..], d, 8192).unwrap().unwrap();
            assert_eq!((p2.opcode(), p2.data.len()), (0x20, 0));
            assert_eq!(used + used2, out.len());
            // Every prefix is "need more", never an error or a panic.
            for n in 0..used {
                assert_eq!(next_pdu(&out[..n], d, 8192), Ok(None), "{n} {d:?}");
            }
        }
    }

    #[test]
    fn deferred_equals_put() {
        let d = BOTH;
        let mut a = Vec::new();
        put(&mut a, &bhs(0x25), &[b"hello"], d);
        let mut b = Vec::new();
        let at = put_deferred(&mut b, &bhs(0x25), 5, d);
        b.extend_from_slice(b"hello");
        finish_deferred(&mut b, at, d);
        assert_eq!(a, b);
    }

    #[test]
    fn digest_errors_and_limits() {
        let d = BOTH;
        let mut out = Vec::new();
        put(&mut out, &bhs(0x01), &[b"data"], d);
        let mut bad = out.clone();
        bad[BHS_LEN] ^= 1;
        assert!(matches!(
            next_pdu(&bad, d, 8192),
            Err(FrameError::HeaderDigest { .. })
        ));
        let mut bad = out.clone();
        let n = bad.len();
        bad[n - 5] ^= 1;
        assert!(matches!(
            next_pdu(&bad, d, 8192),
            Err(FrameError::DataDigest { used, .. }) if used == n
        ));
        // A long data segment is refused from its header alone.
        let mut big = bhs(0x01);
        big[5..8].copy_from_slice(&[0x01, 0x00, 0x00]);
        assert_eq!(
            next_pdu(&big, Digests::default(), 8192),
            Err(FrameError::DataTooLong {
                len: 65536,
                max: 8192
            })
        );
    }
}
