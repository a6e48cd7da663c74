//! CRC32C (Castagnoli), iSCSI's header and data digest (RFC 7143 §13.1, appendix B.4).
//! On the wire the 32-bit value is sent least significant byte first.

use crc_fast::{CrcAlgorithm, Digest};

/// CRC32C of `parts` concatenated.
pub fn crc32c(parts: &[&[u8]]) -> u32 {
    let mut d = Digest::new(CrcAlgorithm::Crc32Iscsi);
    for p in parts {
        d.update(p);
    }
    d.finalize() as u32
}

/// The digest bytes as they go on the wire.
pub fn wire(crc: u32) -> [u8; 4] {
    crc.to_le_bytes()
}

/// Reads a digest as it came off the wire (`b` holds exactly 4 bytes).
pub fn from_wire(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        // The CRC-32C check value, and RFC 3720's appendix B.4 examples: 32 bytes of
        // zeroes, of 0xff, and an ascending sequence.
        assert_eq!(crc32c(&[b"123456789"]), 0xe306_9283);
        assert_eq!(crc32c(&[&[0u8; 32]]), 0x8a91_36aa);
        assert_eq!(crc32c(&[&[0xffu8; 32]]), 0x62a8_ab43);
        let asc: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&[&asc]), 0x46dd_794e);
        assert_eq!(crc32c(&[&asc[..7], &asc[7..]]), 0x46dd_794e);
        assert_eq!(from_wire(&wire(0x1234_5678)), 0x1234_5678);
        assert_eq!(wire(0x1234_5678), [0x78, 0x56, 0x34, 0x12]);
    }
}
