//! TCP record marking (RFC 5531 §11): each record is one or more fragments, each preceded
//! by a 4-byte header whose top bit marks the last fragment and whose low 31 bits are the
//! fragment's length.

use std::borrow::Cow;

const LAST: u32 = 0x8000_0000;

/// Fragments one record may have. Clients send one (Linux, libnfs, ganesha's client
/// side); a stream of empty fragments must not keep a connection busy for ever.
pub const MAX_FRAGMENTS: usize = 64;

/// A record that cannot be accepted; the connection cannot be resynchronised and ends.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error(
        "record of at least {len} bytes (fragment headers included) exceeds the limit of {max}"
    )]
    TooLarge { len: usize, max: usize },
    #[error("record of more than {MAX_FRAGMENTS} fragments")]
    TooManyFragments,
}

/// A complete record and the bytes of the buffer it used (headers included).
pub type Framed<'a> = (Cow<'a, [u8]>, usize);

/// The next complete record at the start of `buf`, and how many bytes of `buf` it used.
/// `Ok(None)`: more bytes are needed. A single-fragment record (what every client sends)
/// borrows from `buf`; fragments are joined only when there are several. Every fragment's
/// header counts toward `max`, and a record has at most [`MAX_FRAGMENTS`].
pub fn next_record(buf: &[u8], max: usize) -> Result<Option<Framed<'_>>, RecordError> {
    let mut pos = 0usize;
    let mut total = 0usize;
    let mut data = 0usize;
    let mut fragments: Vec<(usize, usize)> = Vec::new();
    loop {
        if fragments.len() >= MAX_FRAGMENTS {
            return Err(RecordError::TooManyFragments);
        }
        let Some(h) = buf.get(pos..pos + 4) else {
            return Ok(None);
        };
        let header = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let len = (header & !LAST) as usize;
        total = total.saturating_add(4).saturating_add(len);
        data += len;
        if total > max {
            return Err(RecordError::TooLarge { len: total, max });
        }
        let start = pos + 4;
        if buf.len() < start + len {
            return Ok(None);
        }
        fragments.push((start, len));
        pos = start + len;
        if header & LAST != 0 {
            break;
        }
    }
    if let [(start, len)] = fragments[..] {
        return Ok(Some((Cow::Borrowed(&buf[start..start + len]), pos)));
    }
    let mut joined = Vec::with_capacity(data);
    for (start, len) in fragments {
        joined.extend_from_slice(&buf[start..start + len]);
    }
    Ok(Some((Cow::Owned(joined), pos)))
}

/// Reserves a record header at the end of `out`; returns where the record starts.
pub fn begin(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    at
}

/// Fills in the header of the record begun at `at` (one last fragment).
pub fn finish(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&(len | LAST).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_fragment_borrows_two_join() {
        let mut buf = vec![0x80, 0, 0, 2, b'a', b'b', 9];
        let (rec, used) = next_record(&buf, 100).unwrap().unwrap();
        assert!(matches!(rec, Cow::Borrowed(b"ab")));
        assert_eq!(used, 6);
        buf = vec![0, 0, 0, 1, b'a', 0x80, 0, 0, 1, b'b'];
        let (rec, used) = next_record(&buf, 100).unwrap().unwrap();
        assert_eq!(&rec[..], b"ab");
        assert_eq!(used, 10);
        assert_eq!(next_record(&buf[..9], 100).unwrap(), None);
        assert!(next_record(&[0x80, 0, 1, 0], 100).is_err());
        // headers count: a 97-byte fragment is a 101-byte record
        assert!(next_record(&[0x80, 0, 0, 97], 100).is_err());
        // a flood of empty fragments ends at MAX_FRAGMENTS, however few bytes
        let flood = [0u8; 4 * (MAX_FRAGMENTS + 1)];
        assert_eq!(
            next_record(&flood, 1 << 20),
            Err(RecordError::TooManyFragments)
        );
        assert_eq!(
            next_record(&flood[..4 * MAX_FRAGMENTS - 4], 1 << 20),
            Ok(None)
        );
        assert!(next_record(
            &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            usize::MAX
        )
        .unwrap()
        .is_none());
    }

    #[test]
    fn begin_finish() {
        let mut out = vec![7];
        let at = begin(&mut out);
        out.extend_from_slice(b"xyz");
        finish(&mut out, at);
        assert_eq!(out, [7, 0x80, 0, 0, 3, b'x', b'y', b'z']);
    }
}
