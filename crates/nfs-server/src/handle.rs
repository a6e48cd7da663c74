//! File handles: opaque to clients, 22 bytes here, stable across restarts.
//!
//! Layout: `Q` `1` (format), export id (u32), inode number (u64), birth time in ns (u64).
//! The inode names the object within the export's file system; the birth time tells a
//! reused inode number from the object the handle was made for (a handle to a removed
//! object is STALE, never someone else's file). On file systems without birth times the
//! generation is 0 and an inode reused after removal is not detected (documented).

pub const LEN: usize = 22;
const MAGIC: [u8; 2] = [b'Q', 1];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle {
    pub export: u32,
    pub ino: u64,
    pub gen: u64,
}

impl Handle {
    pub fn encode(&self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out[..2].copy_from_slice(&MAGIC);
        out[2..6].copy_from_slice(&self.export.to_be_bytes());
        out[6..14].copy_from_slice(&self.ino.to_be_bytes());
        out[14..22].copy_from_slice(&self.gen.to_be_bytes());
        out
    }

    /// `None`: not a handle this server made (NFS3ERR_BADHANDLE).
    pub fn decode(b: &[u8]) -> Option<Handle> {
        if b.len() != LEN || b[..2] != MAGIC {
            return None;
        }
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_be_bytes(a)
        };
        Some(Handle {
            export: u32::from_be_bytes([b[2], b[3], b[4], b[5]]),
            ino: u64_at(6),
            gen: u64_at(14),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_foreign_handles() {
        let h = Handle {
            export: 7,
            ino: 1 << 40,
            gen: 123,
        };
        assert_eq!(Handle::decode(&h.encode()), Some(h));
        assert_eq!(Handle::decode(&[0; LEN]), None);
        assert_eq!(Handle::decode(&h.encode()[..21]), None);
        assert_eq!(Handle::decode(&[]), None);
    }
}
