//! A node's block volume as a LUN's storage ([`Lun`] over the volume's [`Backend`]): the
//! same bytes, layers and capabilities NBD serves, so a LUN and its volume are one object
//! under every protocol. Writes, UNMAP and WRITE SAME mark the volume's used space for
//! the node's refresh (adaptive policies follow it); a deleted volume's I/O fails.
//!
//! [`Backend`]: storage_node::backend::Backend

use std::io;
use std::sync::Arc;

use storage_node::volume::Volume;

use crate::lun::{fnv, page_exponent, Caps, Extent, Identity, Lun};

/// A block volume served as a LUN.
pub struct VolumeLun {
    vol: Arc<Volume>,
    block_size: u32,
    identity: Identity,
}

impl VolumeLun {
    /// `vol` with logical blocks of `block_size` (512 or 4096; the config checked that the
    /// volume's size is a multiple of it). Its size is the volume's, as it grows; its
    /// serial and NAA designator come from the target's name and the volume's, so they
    /// are the same after a restart.
    pub fn new(vol: Arc<Volume>, block_size: u32, target: &str) -> VolumeLun {
        let h = fnv(target.bytes().chain([0]).chain(vol.name.bytes()));
        VolumeLun {
            vol,
            block_size,
            identity: Identity::of_hash(h),
        }
    }

    /// The same, reporting `serial` as its unit serial number (VPD page 0x80): a LUN made
    /// through the API reports the serial number the API shows.
    pub fn with_serial(mut self, serial: &str) -> VolumeLun {
        self.identity.serial = serial.to_string();
        self
    }

    pub fn volume(&self) -> &Arc<Volume> {
        &self.vol
    }

    fn live(&self) -> io::Result<&Volume> {
        if self.vol.is_removed() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("volume {:?} was deleted", self.vol.name),
            ));
        }
        Ok(&self.vol)
    }
}

impl Lun for VolumeLun {
    fn size(&self) -> u64 {
        let bs = self.block_size as u64;
        self.vol.size() / bs * bs
    }

    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn physical_exponent(&self) -> u8 {
        page_exponent(self.block_size)
    }

    fn caps(&self) -> Caps {
        let b = &self.vol.backend;
        Caps {
            can_write: !self.vol.read_only && b.can_write(),
            can_trim: !self.vol.read_only && b.can_trim(),
            can_fua: b.can_flush(),
            can_flush: b.can_flush(),
            can_extents: b.can_extents(),
            inline_io: !b.blocks(),
        }
    }

    fn identity(&self) -> Identity {
        self.identity.clone()
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.live()?.backend.read_at(buf, offset)
    }

    fn write(&self, offset: u64, data: &[u8], fua: bool) -> io::Result<()> {
        let v = self.live()?;
        v.backend.write_at(data, offset)?;
        v.mark_dirty();
        if fua {
            v.backend.flush()?;
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        self.live()?.backend.flush()
    }

    fn unmap(&self, offset: u64, len: u64) -> io::Result<()> {
        let v = self.live()?;
        v.backend.trim(offset, len)?;
        v.mark_dirty();
        Ok(())
    }

    fn write_zeroes(&self, offset: u64, len: u64, may_unmap: bool) -> io::Result<()> {
        let v = self.live()?;
        v.backend.zero(offset, len, may_unmap, false)?;
        v.mark_dirty();
        Ok(())
    }

    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let mut at = offset;
        let mut out = Vec::new();
        for e in self.live()?.backend.extents(offset, len, max)? {
            if e.length == 0 {
                continue;
            }
            out.push(Extent {
                offset: at,
                len: e.length,
                allocated: !e.hole,
            });
            at += e.length;
        }
        if out.is_empty() {
            out.push(Extent {
                offset,
                len,
                allocated: true,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_node::testing::TestNode;

    const CFG: &str = "[[volume]]\nname = \"db\"\nsize = \"1MiB\"\n";

    #[test]
    fn the_luns_bytes_are_the_volumes() {
        let n = TestNode::open(CFG, "iscsi-volume-lun");
        let vol = n.block_volume("db").unwrap();
        let lun = VolumeLun::new(vol.clone(), 512, "iqn.2026-01.lab.qoslab:t");
        assert_eq!((lun.size(), lun.block_size()), (1 << 20, 512));
        lun.write(4096, &[7u8; 4096], true).unwrap();
        let mut back = [0u8; 4096];
        vol.backend.read_at(&mut back, 4096).unwrap();
        assert_eq!(back, [7u8; 4096]);
        // The volume's used space follows (adaptive policies allocate by it).
        assert!(
            vol.refresh_used(),
            "a write marks the used space for a refresh"
        );
        assert!(vol.space().used >= 4096, "{:?}", vol.space());
        lun.unmap(4096, 4096).unwrap();
        lun.read(4096, &mut back).unwrap();
        assert_eq!(back, [0u8; 4096]);
        assert!(vol.refresh_used(), "so does an UNMAP");
        assert_eq!(vol.space().used, 0);
        // The same name gives the same identity; another target's does not.
        let again = VolumeLun::new(vol.clone(), 512, "iqn.2026-01.lab.qoslab:t");
        let other = VolumeLun::new(vol.clone(), 512, "iqn.2026-01.lab.qoslab:u");
        assert_eq!(lun.identity(), again.identity());
        assert_ne!(lun.identity().serial, other.identity().serial);
        // A deleted volume's I/O fails rather than reach a file no one serves.
        n.remove_volume("db");
        assert!(lun.read(0, &mut back).is_err());
    }
}
