//! Is a build's artifact complete? The seed's failed Jenkins builds were incomplete jars in
//! the dependency cache; here every object, archive and program a build produced or used is
//! checked to be whole before the build counts as passed:
//!
//! - an ELF file (object or program, 64-bit little-endian): its header, and every program
//!   header's and section's bytes lie within the file;
//! - an `ar` archive: its magic, every member header well-formed and every member within
//!   the file, the object members each a whole ELF file, and as many as expected;
//! - a dependency in the cache: its size and FNV-1a digest as the repository's manifest
//!   says.

use std::path::Path;

const ELF_MAGIC: &[u8] = b"\x7fELF";
const AR_MAGIC: &[u8] = b"!<arch>\n";
/// Section type with no bytes in the file (`.bss`).
const SHT_NOBITS: u32 = 8;

fn u16_at(b: &[u8], at: usize) -> u64 {
    u16::from_le_bytes([b[at], b[at + 1]]) as u64
}

fn u32_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a) as u64
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn within(len: u64, off: u64, size: u64) -> bool {
    off.checked_add(size).is_some_and(|end| end <= len)
}

/// `n` `what` headers of `entsize` bytes (at least `min`) at `off`: all within the file's
/// `len` bytes.
fn header_table(
    len: u64,
    what: &str,
    off: u64,
    entsize: u64,
    n: u64,
    min: u64,
) -> Result<(), String> {
    if entsize < min || !within(len, off, entsize * n) {
        return Err(format!(
            "truncated: {n} {what} headers at {off} end past the file's {len} bytes"
        ));
    }
    Ok(())
}

/// The bytes of `what` `i` (a segment or a section), `size` at `off`: within the file's
/// `len` bytes.
fn contents(len: u64, what: &str, i: u64, off: u64, size: u64) -> Result<(), String> {
    if !within(len, off, size) {
        return Err(format!(
            "truncated: {what} {i} ({size} bytes at {off}) ends past the file's {len} bytes"
        ));
    }
    Ok(())
}

/// Check that `b` is a whole 64-bit little-endian ELF file.
pub fn elf(b: &[u8]) -> Result<(), String> {
    if b.len() < 64 {
        return Err(format!("{} bytes: shorter than an ELF header", b.len()));
    }
    if &b[..4] != ELF_MAGIC {
        return Err("not an ELF file (bad magic)".into());
    }
    if b[4] != 2 || b[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let len = b.len() as u64;
    let (phoff, phentsize, phnum) = (u64_at(b, 0x20), u16_at(b, 0x36), u16_at(b, 0x38));
    let (shoff, shentsize, shnum) = (u64_at(b, 0x28), u16_at(b, 0x3A), u16_at(b, 0x3C));
    if phnum > 0 {
        header_table(len, "program", phoff, phentsize, phnum, 56)?;
        for i in 0..phnum {
            let h = (phoff + i * phentsize) as usize;
            let (off, filesz) = (u64_at(b, h + 8), u64_at(b, h + 0x20));
            contents(len, "segment", i, off, filesz)?;
        }
    }
    if shnum == 0 && phnum == 0 {
        return Err("an ELF file with neither sections nor segments".into());
    }
    if shnum > 0 {
        header_table(len, "section", shoff, shentsize, shnum, 64)?;
        for i in 0..shnum {
            let h = (shoff + i * shentsize) as usize;
            if u32_at(b, h + 4) == SHT_NOBITS as u64 {
                continue;
            }
            let (off, size) = (u64_at(b, h + 0x18), u64_at(b, h + 0x20));
            contents(len, "section", i, off, size)?;
        }
    }
    Ok(())
}

/// Check that `b` is a whole `ar` archive whose object members are whole ELF files;
/// returns the number of object members.
pub fn archive(b: &[u8]) -> Result<usize, String> {
    if b.len() < AR_MAGIC.len() || &b[..AR_MAGIC.len()] != AR_MAGIC {
        return Err("not an ar archive (bad magic)".into());
    }
    let mut at = AR_MAGIC.len();
    let mut objects = 0;
    while at < b.len() {
        if b.len() - at < 60 {
            return Err(format!(
                "truncated: a member header at {at} is cut off ({} bytes left)",
                b.len() - at
            ));
        }
        let h = &b[at..at + 60];
        if &h[58..60] != b"`\n" {
            return Err(format!("bad member header at {at}"));
        }
        let name = String::from_utf8_lossy(&h[..16]).trim_end().to_string();
        let size: usize = String::from_utf8_lossy(&h[48..58])
            .trim()
            .parse()
            .map_err(|_| format!("bad member size at {at}"))?;
        let data = at + 60;
        if !within(b.len() as u64, data as u64, size as u64) {
            return Err(format!(
                "truncated: member {name} ({size} bytes at {data}) ends past the archive's {} bytes",
                b.len()
            ));
        }
        // "/" is the symbol table, "//" the long-name table.
        if name != "/" && name != "//" {
            elf(&b[data..data + size]).map_err(|e| format!("member {name}: {e}"))?;
            objects += 1;
        }
        at = data + size + (size & 1);
    }
    Ok(objects)
}

/// FNV-1a (64-bit) of `b`: the dependency manifest's digest.
pub fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// Read `path` and check it with `check`; the error names the file.
pub fn file<T>(path: &Path, check: impl FnOnce(&[u8]) -> Result<T, String>) -> Result<T, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    check(&b).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 object: header, one PROGBITS section of 8 bytes, section headers.
    fn tiny_elf() -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(ELF_MAGIC);
        b[4] = 2;
        b[5] = 1;
        b.extend_from_slice(&[0xAA; 8]); // section data at 64
        let shoff = b.len() as u64;
        b[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        b[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        b[0x3C..0x3E].copy_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&[0u8; 64]); // section 0: null
        let mut s = [0u8; 64];
        s[4..8].copy_from_slice(&1u32.to_le_bytes()); // PROGBITS
        s[0x18..0x20].copy_from_slice(&64u64.to_le_bytes());
        s[0x20..0x28].copy_from_slice(&8u64.to_le_bytes());
        b.extend_from_slice(&s);
        b
    }

    fn ar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = AR_MAGIC.to_vec();
        for (name, data) in members {
            let h = format!(
                "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                name,
                0,
                0,
                0,
                644,
                data.len()
            );
            assert_eq!(h.len(), 60);
            b.extend_from_slice(h.as_bytes());
            b.extend_from_slice(data);
            if data.len() % 2 == 1 {
                b.push(b'\n');
            }
        }
        b
    }

    #[test]
    fn a_whole_elf_passes_and_every_truncation_fails() {
        let e = tiny_elf();
        assert_eq!(elf(&e), Ok(()));
        for cut in [0, 10, 63, 64, 70, e.len() - 64, e.len() - 1] {
            assert!(elf(&e[..cut]).is_err(), "cut at {cut} must fail");
        }
        let mut zeros = e.clone();
        zeros[..4].copy_from_slice(&[0; 4]);
        assert!(elf(&zeros).unwrap_err().contains("magic"));
        // A section past the end of the file.
        let mut bad = e.clone();
        let at = bad.len() - 64 + 0x20;
        bad[at..at + 8].copy_from_slice(&1000u64.to_le_bytes());
        assert!(elf(&bad).unwrap_err().contains("section 1"));
    }

    #[test]
    fn archives_are_walked_member_by_member() {
        let e = tiny_elf();
        let odd = {
            let mut o = e.clone();
            o.push(0); // odd size: padded in the archive
            o
        };
        let a = ar_of(&[("/", b"symtab"), ("a.o/", &e), ("b.o/", &odd)]);
        assert_eq!(archive(&a), Ok(2));
        for cut in [3, 8 + 30, a.len() - 5] {
            assert!(archive(&a[..cut]).is_err(), "cut at {cut}");
        }
        // A member that is not a whole object (an empty "jar").
        let empty = ar_of(&[("a.o/", b"")]);
        assert!(archive(&empty).unwrap_err().contains("member a.o/"));
        assert!(archive(b"PK\x03\x04").unwrap_err().contains("magic"));
        assert_eq!(fnv1a(b""), 0xCBF2_9CE4_8422_2325);
        assert_ne!(fnv1a(b"a"), fnv1a(b"b"));
    }
}
