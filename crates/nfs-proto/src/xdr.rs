//! XDR (RFC 4506): big-endian 4-byte units, opaque data padded to a multiple of four.

/// Why a message could not be decoded. The server answers `GARBAGE_ARGS` (or drops a
/// record whose RPC header itself is unreadable).
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone, Copy)]
pub enum XdrError {
    /// The message ended before the item named.
    #[error("message too short reading {0}")]
    Short(&'static str),
    /// A variable-length item is longer than its protocol's bound.
    #[error("{what} of {len} bytes exceeds the limit of {max}")]
    TooLong {
        what: &'static str,
        len: u32,
        max: u32,
    },
    /// An enum or bool holds a value outside its definition.
    #[error("invalid {what} value {value}")]
    BadValue { what: &'static str, value: u32 },
}

/// A cursor over one message. Items borrow from the message.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], XdrError> {
        let end = self.pos.checked_add(n).ok_or(XdrError::Short(what))?;
        let s = self.buf.get(self.pos..end).ok_or(XdrError::Short(what))?;
        self.pos = end;
        Ok(s)
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, XdrError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, XdrError> {
        let hi = self.u32(what)? as u64;
        let lo = self.u32(what)? as u64;
        Ok(hi << 32 | lo)
    }

    pub fn bool(&mut self, what: &'static str) -> Result<bool, XdrError> {
        match self.u32(what)? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(XdrError::BadValue { what, value }),
        }
    }

    /// Fixed-length opaque data of `n` bytes (plus padding).
    pub fn fixed(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], XdrError> {
        let s = self.take(n, what)?;
        self.take(pad(n), what)?;
        Ok(s)
    }

    /// Variable-length opaque data of at most `max` bytes.
    pub fn opaque(&mut self, max: u32, what: &'static str) -> Result<&'a [u8], XdrError> {
        let len = self.u32(what)?;
        if len > max {
            return Err(XdrError::TooLong { what, len, max });
        }
        self.fixed(len as usize, what)
    }

    /// An optional item (XDR's `*`): a bool, then the item if true.
    pub fn optional<T>(
        &mut self,
        what: &'static str,
        f: impl FnOnce(&mut Self) -> Result<T, XdrError>,
    ) -> Result<Option<T>, XdrError> {
        if self.bool(what)? {
            f(self).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Padding after `n` bytes of opaque data.
pub fn pad(n: usize) -> usize {
    (4 - n % 4) % 4
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_bool(out: &mut Vec<u8>, v: bool) {
    put_u32(out, v as u32);
}

/// Variable-length opaque data (length, bytes, padding).
pub fn put_opaque(out: &mut Vec<u8>, data: &[u8]) {
    put_u32(out, data.len() as u32);
    put_fixed(out, data);
}

/// Fixed-length opaque data (bytes, padding).
pub fn put_fixed(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    out.extend_from_slice(&[0u8; 3][..pad(data.len())]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_round_trip_and_bounds() {
        let mut out = Vec::new();
        put_opaque(&mut out, b"abcde");
        assert_eq!(out.len(), 4 + 8);
        let mut r = Reader::new(&out);
        assert_eq!(r.opaque(5, "x").unwrap(), b"abcde");
        assert!(r.remaining().is_empty());
        let mut r = Reader::new(&out);
        assert_eq!(
            r.opaque(4, "x"),
            Err(XdrError::TooLong {
                what: "x",
                len: 5,
                max: 4
            })
        );
        let mut r = Reader::new(&out[..9]);
        assert_eq!(r.opaque(5, "x"), Err(XdrError::Short("x")));
    }

    #[test]
    fn huge_lengths_do_not_overflow() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff]);
        assert!(r.opaque(u32::MAX, "x").is_err());
        let mut r = Reader::new(&[0, 0, 0, 2]);
        assert_eq!(
            r.bool("b"),
            Err(XdrError::BadValue {
                what: "b",
                value: 2
            })
        );
    }
}
