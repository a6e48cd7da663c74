//! The block seam: what the target needs from a LUN's storage. The target decodes and
//! validates every command (ranges, alignment, reservations) before it calls these, so
//! an implementation sees only in-range, block-aligned requests.
//!
//! Methods are synchronous; the target calls them on tokio's blocking pool, or inline on
//! the connection's task when [`Caps::inline_io`] says a read or a write without FUA
//! completes from memory (the page cache), as the NBD front end does.

use std::io;

/// What a LUN can do, declared as nbdkit's plugins declare it (`can_write`, `can_trim`,
/// `can_fua`, ...): the target advertises exactly these in INQUIRY, READ CAPACITY and
/// MODE SENSE, and refuses the rest with sense data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Writes are accepted (false: a write-protected LUN, DATA PROTECT).
    pub can_write: bool,
    /// UNMAP and WRITE SAME with UNMAP deallocate (a thin LUN: LBPME, the provisioning
    /// VPD page); deallocated blocks read as zeroes.
    pub can_trim: bool,
    /// Writes may ask to be durable before they complete (FUA).
    pub can_fua: bool,
    /// The LUN has a volatile cache that SYNCHRONIZE CACHE makes durable (WCE=1).
    pub can_flush: bool,
    /// [`Lun::extents`] reports allocation (GET LBA STATUS).
    pub can_extents: bool,
    /// Reads and writes without FUA complete from memory: the target may call them on a
    /// runtime thread instead of the blocking pool.
    pub inline_io: bool,
}

/// An allocation extent for GET LBA STATUS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub offset: u64,
    pub len: u64,
    /// Allocated (mapped) or a hole (deallocated).
    pub allocated: bool,
}

/// The identity INQUIRY reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Unit serial number (VPD 0x80): printable ASCII, at most 64 bytes.
    pub serial: String,
    /// 60 bits for the NAA designator (VPD 0x83): the LUN's world-wide name.
    pub naa_id: u64,
    /// Product identification (16 bytes).
    pub product: String,
}

impl Identity {
    /// The identity of a LUN whose stable hash is `h` (of its file, or its volume's name):
    /// the serial `qoslab` + 16 hex digits, the NAA designator its low 60 bits.
    pub fn of_hash(h: u64) -> Identity {
        Identity {
            serial: format!("qoslab{h:016x}"),
            naa_id: h & ((1 << 60) - 1),
            product: "LUN".into(),
        }
    }
}

/// log2 of the logical blocks in a 4 KiB page, the unit a file system under a LUN
/// allocates and deallocates in: 3 for 512-byte blocks, 0 for 4096.
pub fn page_exponent(block_size: u32) -> u8 {
    if block_size == 512 {
        3
    } else {
        0
    }
}

/// FNV-1a: a stable hash for a LUN's identity (the same across restarts).
pub fn fnv(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A LUN's storage.
pub trait Lun: Send + Sync + 'static {
    /// Size in bytes (a multiple of the block size), now: it may grow (the logical unit
    /// follows it and tells its initiators).
    fn size(&self) -> u64;
    /// Logical block size: 512 or 4096.
    fn block_size(&self) -> u32;
    /// log2(logical blocks per physical block), e.g. 3 for 512-byte blocks on 4 KiB.
    fn physical_exponent(&self) -> u8 {
        0
    }
    fn caps(&self) -> Caps;
    fn identity(&self) -> Identity;
    /// Fills `buf` from `offset`.
    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes `data` at `offset`; with `fua`, durable before this returns.
    fn write(&self, offset: u64, data: &[u8], fua: bool) -> io::Result<()>;
    /// Makes every completed write durable.
    fn flush(&self) -> io::Result<()>;
    /// Deallocates a range; it reads as zeroes afterwards.
    fn unmap(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Zeroes a range, deallocating it when `may_unmap`.
    fn write_zeroes(&self, offset: u64, len: u64, may_unmap: bool) -> io::Result<()>;
    /// Allocation from `offset` over at most `len` bytes, at most `max` extents; the
    /// first starts at `offset`.
    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let _ = max;
        Ok(vec![Extent {
            offset,
            len,
            allocated: true,
        }])
    }
    /// WRITE SAME: `block` repeated over `len` bytes from `offset`. The default writes
    /// it a chunk at a time; all-zero blocks go to [`Lun::write_zeroes`].
    fn write_same(&self, offset: u64, len: u64, block: &[u8], fua: bool) -> io::Result<()> {
        if block.iter().all(|&b| b == 0) {
            self.write_zeroes(offset, len, false)?;
            return if fua { self.flush() } else { Ok(()) };
        }
        let per = (1 << 20) / block.len().max(1);
        let chunk: Vec<u8> = block.repeat(per.max(1));
        let mut at = 0u64;
        while at < len {
            let n = (len - at).min(chunk.len() as u64) as usize;
            self.write(offset + at, &chunk[..n], false)?;
            at += n as u64;
        }
        if fua {
            self.flush()?;
        }
        Ok(())
    }
}
