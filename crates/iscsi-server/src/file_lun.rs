//! A LUN in a sparse file: pread/pwrite through the page cache, FUA writes with
//! `pwritev2(RWF_DSYNC)`, SYNCHRONIZE CACHE as `fdatasync`, UNMAP as a punched hole,
//! GET LBA STATUS from SEEK_DATA/SEEK_HOLE. No QoS (the standalone `qoslab iscsi serve`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use storage_node::backend;

use crate::lun::{fnv, page_exponent, Caps, Extent, Identity, Lun};

/// A file-backed LUN.
pub struct FileLun {
    file: File,
    path: PathBuf,
    size: u64,
    block_size: u32,
    read_only: bool,
    identity: Identity,
}

/// Why a file cannot be a LUN.
#[derive(Debug, thiserror::Error)]
pub enum FileLunError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: block size {block_size} is not 512 or 4096")]
    BlockSize { path: PathBuf, block_size: u32 },
    #[error("{path}: size {size} is not a positive multiple of the {block_size}-byte block")]
    Size {
        path: PathBuf,
        size: u64,
        block_size: u32,
    },
    #[error("{path}: the file holds {len} bytes, more than the LUN's size {size} (a LUN never truncates data)")]
    Shrink { path: PathBuf, len: u64, size: u64 },
}

impl FileLun {
    /// Opens (creating when `size` is given) `path` as a LUN of `size` bytes (default:
    /// the file's length). A smaller file grows sparsely; a larger one is refused.
    pub fn open(
        path: &Path,
        size: Option<u64>,
        block_size: u32,
        read_only: bool,
    ) -> Result<FileLun, FileLunError> {
        let io_err = |source| FileLunError::Io {
            path: path.to_path_buf(),
            source,
        };
        if block_size != 512 && block_size != 4096 {
            return Err(FileLunError::BlockSize {
                path: path.into(),
                block_size,
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(size.is_some() && !read_only)
            .truncate(false)
            .open(path)
            .map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        let len = meta.len();
        let size = size.unwrap_or(len);
        if size == 0 || !size.is_multiple_of(block_size as u64) {
            return Err(FileLunError::Size {
                path: path.into(),
                size,
                block_size,
            });
        }
        if len > size {
            return Err(FileLunError::Shrink {
                path: path.into(),
                len,
                size,
            });
        }
        if len < size {
            file.set_len(size).map_err(io_err)?;
        }
        let h = fnv(meta
            .dev()
            .to_le_bytes()
            .into_iter()
            .chain(meta.ino().to_le_bytes()));
        Ok(FileLun {
            file,
            path: path.to_path_buf(),
            size,
            block_size,
            read_only,
            identity: Identity::of_hash(h),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fallocate(&self, mode: i32, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        backend::fallocate(&self.file, mode | libc::FALLOC_FL_KEEP_SIZE, offset, len)
    }

    fn seek(&self, offset: u64, whence: i32) -> io::Result<Option<u64>> {
        // Every read and write here is positional: the moved position is never used.
        backend::seek_data_or_hole(&self.file, offset, whence)
    }

    fn write_dsync(&self, offset: u64, mut data: &[u8]) -> io::Result<()> {
        let mut at = offset;
        while !data.is_empty() {
            let iov = libc::iovec {
                iov_base: data.as_ptr() as *mut libc::c_void,
                iov_len: data.len(),
            };
            // SAFETY: one iovec over `data`, which outlives the call; pwritev2 only reads it.
            let n = unsafe {
                libc::pwritev2(self.file.as_raw_fd(), &iov, 1, at as i64, libc::RWF_DSYNC)
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                    // A file system without per-write sync: write, then sync.
                    self.file.write_all_at(data, at)?;
                    return self.file.sync_data();
                }
                return Err(e);
            }
            data = &data[n as usize..];
            at += n as u64;
        }
        Ok(())
    }
}

impl Lun for FileLun {
    fn size(&self) -> u64 {
        self.size
    }

    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn physical_exponent(&self) -> u8 {
        page_exponent(self.block_size)
    }

    fn caps(&self) -> Caps {
        Caps {
            can_write: !self.read_only,
            can_trim: !self.read_only,
            can_fua: true,
            can_flush: true,
            can_extents: true,
            inline_io: true,
        }
    }

    fn identity(&self) -> Identity {
        self.identity.clone()
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write(&self, offset: u64, data: &[u8], fua: bool) -> io::Result<()> {
        if fua {
            self.write_dsync(offset, data)
        } else {
            self.file.write_all_at(data, offset)
        }
    }

    fn flush(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn unmap(&self, offset: u64, len: u64) -> io::Result<()> {
        self.fallocate(libc::FALLOC_FL_PUNCH_HOLE, offset, len)
    }

    fn write_zeroes(&self, offset: u64, len: u64, may_unmap: bool) -> io::Result<()> {
        let mode = if may_unmap {
            libc::FALLOC_FL_PUNCH_HOLE
        } else {
            libc::FALLOC_FL_ZERO_RANGE
        };
        match self.fallocate(mode, offset, len) {
            Err(e) if backend::is_unsupported(&e) => {
                backend::write_zeroes_at(&self.file, offset, len)
            }
            r => r,
        }
    }

    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let end = offset.saturating_add(len).min(self.size);
        let mut out = Vec::new();
        let mut pos = offset;
        while pos < end && out.len() < max {
            let (stop, allocated) = match self.seek(pos, libc::SEEK_DATA)? {
                Some(d) if d <= pos => {
                    let hole = self.seek(pos, libc::SEEK_HOLE)?.unwrap_or(end);
                    (hole.min(end).max(pos + 1), true)
                }
                Some(d) => (d.min(end), false),
                None => (end, false),
            };
            out.push(Extent {
                offset: pos,
                len: stop - pos,
                allocated,
            });
            pos = stop;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_file_lun() {
        let dir = test_support::TestDir::new("iscsi-filelun");
        let p = dir.join("lun.img");
        let lun = FileLun::open(&p, Some(1 << 20), 512, false).unwrap();
        assert_eq!((lun.size(), lun.block_size()), (1 << 20, 512));
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 1 << 20);
        lun.write(4096, &[7u8; 4096], true).unwrap();
        let mut b = [0u8; 4096];
        lun.read(4096, &mut b).unwrap();
        assert_eq!(b, [7u8; 4096]);
        let ex = lun.extents(0, 1 << 20, 16).unwrap();
        assert!(ex.iter().any(|e| e.allocated && e.offset <= 4096), "{ex:?}");
        assert_eq!(ex[0].offset, 0);
        lun.unmap(4096, 4096).unwrap();
        lun.read(4096, &mut b).unwrap();
        assert_eq!(b, [0u8; 4096]);
        lun.write_same(0, 2048, &[9u8; 512], false).unwrap();
        let mut c = [0u8; 2048];
        lun.read(0, &mut c).unwrap();
        assert_eq!(c, [9u8; 2048]);
        let serial = lun.identity().serial;
        drop(lun);
        // Reopened: its size is the file's, the serial the same; never shrunk.
        let again = FileLun::open(&p, None, 512, true).unwrap();
        assert_eq!((again.size(), again.identity().serial), (1 << 20, serial));
        assert!(!again.caps().can_write);
        assert!(matches!(
            FileLun::open(&p, Some(4096), 512, false),
            Err(FileLunError::Shrink { .. })
        ));
        assert!(matches!(
            FileLun::open(&p, Some(1000), 512, false),
            Err(FileLunError::Size { .. })
        ));
        assert!(matches!(
            FileLun::open(&p, None, 1024, false),
            Err(FileLunError::BlockSize { .. })
        ));
    }
}
