//! The on-disk format of one object (or one multipart part): a fixed 64-byte header, the
//! object's metadata as JSON, then the data.
//!
//! ```text
//! 0..8    magic "QLS3OBJ1"
//! 8..16   data length (u64 LE)
//! 16..24  last-modified, ns since the Unix epoch (u64 LE)
//! 24..40  MD5 of the data (single PUT) or of the parts' MD5s (multipart)
//! 40..44  parts (u32 LE; 0 = single PUT, the ETag is the plain MD5)
//! 44..48  metadata length (u32 LE)
//! 48..64  reserved (zero)
//! 64..    metadata JSON, then the data
//! ```
//!
//! The fixed fields that are only known once the data is written (length, time, MD5) sit
//! at fixed offsets and are written last; the file only becomes visible under its final
//! name (a rename) after that and an fsync, so a visible file is always complete.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const MAGIC: &[u8; 8] = b"QLS3OBJ1";
pub const FIXED_LEN: usize = 64;
/// Metadata larger than this is refused at the edge (S3 allows 2 KiB of user metadata and
/// 1 KiB keys; this leaves room for both plus the standard headers).
pub const MAX_META_LEN: usize = 16 * 1024;

/// What a client said about an object when it wrote it (everything but the data).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectMeta {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_encoding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_disposition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<String>,
    /// `x-amz-meta-*` headers, names lower-cased.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user: BTreeMap<String, String>,
}

/// The fixed header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fixed {
    pub size: u64,
    pub mtime_ns: u64,
    pub md5: [u8; 16],
    pub parts: u32,
    pub meta_len: u32,
}

impl Fixed {
    pub fn encode(&self) -> [u8; FIXED_LEN] {
        let mut b = [0u8; FIXED_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..16].copy_from_slice(&self.size.to_le_bytes());
        b[16..24].copy_from_slice(&self.mtime_ns.to_le_bytes());
        b[24..40].copy_from_slice(&self.md5);
        b[40..44].copy_from_slice(&self.parts.to_le_bytes());
        b[44..48].copy_from_slice(&self.meta_len.to_le_bytes());
        b
    }

    /// Decode a header; `None` if it is not one of ours.
    pub fn decode(b: &[u8]) -> Option<Fixed> {
        if b.len() < FIXED_LEN || &b[0..8] != MAGIC {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let mut md5 = [0u8; 16];
        md5.copy_from_slice(&b[24..40]);
        let meta_len = u32_at(44);
        if meta_len as usize > MAX_META_LEN {
            return None;
        }
        Some(Fixed {
            size: u64_at(8),
            mtime_ns: u64_at(16),
            md5,
            parts: u32_at(40),
            meta_len,
        })
    }

    /// Where the data starts.
    pub fn data_offset(&self) -> u64 {
        FIXED_LEN as u64 + self.meta_len as u64
    }

    /// The S3 ETag (without quotes): the MD5 in hex, with `-N` for a multipart object.
    pub fn etag(&self) -> String {
        let h = hex(&self.md5);
        if self.parts > 0 {
            format!("{h}-{}", self.parts)
        } else {
            h
        }
    }
}

pub fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_round_trip_and_etag() {
        let f = Fixed {
            size: 123,
            mtime_ns: 456,
            md5: [0xab; 16],
            parts: 0,
            meta_len: 17,
        };
        let b = f.encode();
        assert_eq!(Fixed::decode(&b), Some(f));
        assert_eq!(f.etag(), "ab".repeat(16));
        assert_eq!(
            Fixed { parts: 3, ..f }.etag(),
            format!("{}-3", "ab".repeat(16))
        );
        assert_eq!(f.data_offset(), 64 + 17);
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(Fixed::decode(&bad), None);
        assert_eq!(Fixed::decode(&b[..10]), None);
        let huge = Fixed {
            meta_len: (MAX_META_LEN + 1) as u32,
            ..f
        };
        assert_eq!(Fixed::decode(&huge.encode()), None);
    }
}
