//! CHAP (RFC 1994) as iSCSI uses it (RFC 7143 §12.1.3): algorithm 5 (MD5) only. The
//! target sends `CHAP_A=5`, an identifier `CHAP_I` and a challenge `CHAP_C`; the
//! initiator answers `CHAP_N` (its user name) and `CHAP_R = MD5(I || secret || C)`, and
//! may challenge the target back (mutual CHAP) with its own `CHAP_I` and `CHAP_C`.
//! Binary values are hexadecimal (`0x...`) or base64 (`0b...`).

use md5::{Digest, Md5};

/// CHAP_A's value for MD5.
pub const MD5: &str = "5";
/// Longest binary value accepted (a challenge or response), in bytes.
pub const MAX_BINARY: usize = 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum ChapError {
    #[error("CHAP value {0:?} is neither 0x-hexadecimal nor 0b-base64")]
    BadEncoding(String),
    #[error("CHAP value of {0} bytes is longer than {MAX_BINARY}")]
    TooLong(usize),
}

/// Whether an offered CHAP_A list includes MD5.
pub fn offers_md5(list: &str) -> bool {
    list.split(',').any(|a| a.trim() == MD5)
}

/// The response to challenge `c` with identifier `id` and `secret`.
pub fn response(id: u8, secret: &[u8], challenge: &[u8]) -> [u8; 16] {
    let mut h = Md5::new();
    h.update([id]);
    h.update(secret);
    h.update(challenge);
    h.finalize().into()
}

/// Whether `got` answers `challenge` under `secret`, compared in constant time.
pub fn verify(id: u8, secret: &[u8], challenge: &[u8], got: &[u8]) -> bool {
    let want = response(id, secret, challenge);
    if got.len() != want.len() {
        return false;
    }
    want.iter().zip(got).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// `0x` and lowercase hexadecimal.
pub fn encode_hex(b: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 + 2 * b.len());
    s.push_str("0x");
    for &x in b {
        s.push(HEX[(x >> 4) as usize] as char);
        s.push(HEX[(x & 15) as usize] as char);
    }
    s
}

/// Decodes a CHAP binary value (`0x` hex or `0b` base64), bounded by [`MAX_BINARY`].
pub fn decode_binary(v: &str) -> Result<Vec<u8>, ChapError> {
    let bad = || ChapError::BadEncoding(v.chars().take(40).collect());
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        if h.len() / 2 > MAX_BINARY {
            return Err(ChapError::TooLong(h.len() / 2));
        }
        // An odd number of digits has an implied leading zero.
        let padded: String = if h.len() % 2 == 1 {
            format!("0{h}")
        } else {
            h.to_string()
        };
        if padded.is_empty() {
            return Err(bad());
        }
        let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        padded
            .as_bytes()
            .chunks(2)
            .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(bad)
    } else if let Some(b) = v.strip_prefix("0b").or_else(|| v.strip_prefix("0B")) {
        if b.len() / 4 * 3 > MAX_BINARY {
            return Err(ChapError::TooLong(b.len() / 4 * 3));
        }
        base64(b).ok_or_else(bad)
    } else {
        Err(bad())
    }
}

fn base64(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let s = s.trim_end_matches('=').as_bytes();
    if s.is_empty() || s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_is_md5_of_id_secret_challenge() {
        // MD5("\x01" "secret" "\x02\x03") computed independently (python hashlib).
        let r = response(1, b"secret", &[2, 3]);
        assert_eq!(encode_hex(&r), "0xf506c24f35d1c70e450edb8fdf933478");
        assert!(verify(1, b"secret", &[2, 3], &r));
        assert!(!verify(2, b"secret", &[2, 3], &r));
        assert!(!verify(1, b"secret", &[2, 3], &r[..15]));
    }

    #[test]
    fn binary_encodings() {
        assert_eq!(decode_binary("0x0aFF").unwrap(), [0x0a, 0xff]);
        assert_eq!(decode_binary("0xabc").unwrap(), [0x0a, 0xbc]);
        assert_eq!(decode_binary("0bAQID").unwrap(), [1, 2, 3]);
        assert_eq!(decode_binary("0bAQI=").unwrap(), [1, 2]);
        for bad in ["abcd", "0x", "0xgg", "0b", "0b*", "0bA"] {
            assert!(decode_binary(bad).is_err(), "{bad}");
        }
        let long = format!("0x{}", "00".repeat(MAX_BINARY + 1));
        assert_eq!(
            decode_binary(&long),
            Err(ChapError::TooLong(MAX_BINARY + 1))
        );
        assert!(offers_md5("7, 5") && !offers_md5("6,7"));
    }
}
