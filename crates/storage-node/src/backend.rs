//! Storage backends: where a volume's bytes live.
//!
//! [`Backend`] is the seam nbdkit calls a plugin: the NBD layer validates requests
//! (bounds, flags, read-only) once at the edge and then calls the backend with trusted
//! arguments. Layers ([`layers`]: delay, error injection) wrap a backend and pass through,
//! as nbdkit's filters wrap its plugins.

pub mod layers;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// One extent as reported by [`Backend::extents`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub length: u64,
    /// True when the range reads as zeroes and holds no storage (a hole).
    pub hole: bool,
}

/// The operations a volume needs from its storage. All offsets and lengths are
/// already validated against the volume size by the caller.
pub trait Backend: Send + Sync + 'static {
    /// Fill `buf` from `offset`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Read `len` bytes at `offset`, appending them to `out` without zero-filling first.
    fn read_append(&self, out: &mut Vec<u8>, offset: u64, len: usize) -> io::Result<()> {
        let start = out.len();
        out.resize(start + len, 0);
        let r = self.read_at(&mut out[start..], offset);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Deallocate a range; afterwards it reads as zeroes.
    fn trim(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Zero a range. `may_trim`: a hole is acceptable; `fast`: fail with
    /// `ErrorKind::Unsupported` rather than fall back to writing zeroes.
    fn zero(&self, offset: u64, len: u64, may_trim: bool, fast: bool) -> io::Result<()>;
    /// Make every completed write durable.
    fn flush(&self) -> io::Result<()>;
    /// Advise that a range will be read soon.
    fn cache(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Allocation map from `offset`, covering at most `len` bytes and `max` extents.
    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>>;
    /// Bytes actually allocated (the volume's used space).
    fn allocated_bytes(&self) -> io::Result<u64>;
    /// Current size of the backing store.
    fn byte_len(&self) -> io::Result<u64>;
    /// Grow the backing store (sparse).
    fn grow(&self, size: u64) -> io::Result<()>;
    /// Whether its reads and writes may block for longer than page-cache work (a delay
    /// layer, a remote store): a front end then runs them on the blocking pool, never on
    /// a runtime worker (nbdkit's plugins declare their thread model the same way).
    fn blocks(&self) -> bool {
        false
    }
    /// What it can do, declared as nbdkit's plugins declare it: a front end advertises and
    /// accepts only these (NBD's transmission flags). All true unless a backend says not.
    fn can_write(&self) -> bool {
        true
    }
    fn can_trim(&self) -> bool {
        true
    }
    fn can_zero(&self) -> bool {
        true
    }
    /// Zeroing that fails at once rather than writing zeroes ([`zero`](Self::zero)'s `fast`).
    fn can_fast_zero(&self) -> bool {
        true
    }
    fn can_flush(&self) -> bool {
        true
    }
    fn can_cache(&self) -> bool {
        true
    }
    fn can_extents(&self) -> bool {
        true
    }
}

/// A sparse file: holes for never-written and trimmed ranges, page cache for speed,
/// `fdatasync` for durability.
pub struct FileBackend {
    file: File,
    /// Read-only shared mapping of the first `map.len` bytes, when enabled: reads become a
    /// memcpy from the page cache instead of a syscall. Writes always use pwrite, which
    /// goes through the same page cache, so the mapping is always coherent.
    map: Option<Mapping>,
}

/// A read-only `MAP_SHARED` mapping. The node never shrinks a volume file, so every mapped
/// byte stays backed by the file for the mapping's lifetime.
struct Mapping {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only and immutable for its lifetime; concurrent reads of
// file-backed memory are sound (the content may change under a concurrent pwrite, exactly
// as with pread; callers never hold references into it beyond a copy).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len come from a successful mmap and are unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Largest volume whose reads are served from a mapping (address space is finite).
pub const MAX_MAPPED: u64 = 16 << 40;

impl FileBackend {
    /// Open (creating if missing) the file at `path`, sized at least `size` bytes.
    /// With `mmap_reads`, reads are served from a shared read-only mapping.
    /// A file larger than `size` is refused rather than truncated: data is never
    /// discarded implicitly.
    pub fn open(
        path: &Path,
        size: u64,
        read_only: bool,
        mmap_reads: bool,
    ) -> io::Result<FileBackend> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        let current = file.metadata()?.len();
        if current > size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} holds {current} bytes, more than the configured size {size}; \
                     refusing to truncate it (grow the volume or move the file away)",
                    path.display()
                ),
            ));
        }
        if current < size {
            file.set_len(size)?;
        }
        let _ = read_only; // read-only is enforced at the protocol edge (EPERM)
        let map = if mmap_reads && size <= MAX_MAPPED && size > 0 {
            // SAFETY: mapping a regular file we opened, read-only, shared; failure is
            // handled by falling back to pread.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size as usize,
                    libc::PROT_READ,
                    libc::MAP_SHARED | libc::MAP_NORESERVE,
                    file.as_raw_fd(),
                    0,
                )
            };
            if ptr != libc::MAP_FAILED {
                // SAFETY: advice on the mapping just created; failure is harmless.
                // No read-around: a fault maps one page instead of zero-filling 128 KiB of
                // neighbouring holes (which made cold sparse reads ~30x slower than pread).
                unsafe { libc::madvise(ptr, size as usize, libc::MADV_RANDOM) };
            }
            (ptr != libc::MAP_FAILED).then(|| Mapping {
                ptr: ptr as *const u8,
                len: size as usize,
            })
        } else {
            None
        };
        Ok(FileBackend { file, map })
    }

    fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    fn fallocate(&self, mode: i32, offset: u64, len: u64) -> io::Result<()> {
        fallocate(&self.file, mode, offset, len)
    }

    fn seek(&self, offset: u64, whence: i32) -> io::Result<Option<u64>> {
        seek_data_or_hole(&self.file, offset, whence)
    }
}

/// `fallocate(file, mode, offset, len)`: a range's blocks punched, zeroed or allocated.
pub fn fallocate(file: &File, mode: i32, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: plain syscall on an fd the caller owns; arguments are integers.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), mode, offset as i64, len as i64) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Write `len` zero bytes at `offset`, 1 MiB at a time: zeroing where the file system
/// cannot zero or punch a range ([`is_unsupported`]).
pub fn write_zeroes_at(file: &File, mut offset: u64, len: u64) -> io::Result<()> {
    let zeroes = vec![0u8; (len.min(1 << 20)) as usize];
    let end = offset + len;
    while offset < end {
        let n = ((end - offset) as usize).min(zeroes.len());
        file.write_all_at(&zeroes[..n], offset)?;
        offset += n as u64;
    }
    Ok(())
}

/// Whether a failed `fallocate` says the file system cannot do it (EOPNOTSUPP, ENOSYS),
/// so that the caller falls back to writing zeroes.
pub fn is_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
    )
}

/// `lseek(file, offset, whence)` with SEEK_DATA or SEEK_HOLE: the offset found, or `None`
/// when there is no more data past `offset` (ENXIO). It moves the descriptor's shared
/// position, which is harmless to callers whose data I/O is positional (pread/pwrite).
pub fn seek_data_or_hole(file: &File, offset: u64, whence: i32) -> io::Result<Option<u64>> {
    // SAFETY: lseek on a descriptor the File owns; we only use its return value.
    let r = unsafe { libc::lseek(file.as_raw_fd(), offset as i64, whence) };
    if r >= 0 {
        return Ok(Some(r as u64));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENXIO) {
        Ok(None)
    } else {
        Err(e)
    }
}

impl Backend for FileBackend {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => {
                    // Past the end of a file shorter than the volume: zeroes.
                    buf[done..].fill(0);
                    return Ok(());
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn read_append(&self, out: &mut Vec<u8>, offset: u64, len: usize) -> io::Result<()> {
        if let Some(m) = &self.map {
            if (offset as usize)
                .checked_add(len)
                .is_some_and(|end| end <= m.len)
            {
                // SAFETY: offset..offset+len lies inside the live mapping (checked above).
                let src = unsafe { std::slice::from_raw_parts(m.ptr.add(offset as usize), len) };
                out.extend_from_slice(src);
                return Ok(());
            }
        }
        let start = out.len();
        out.reserve(len);
        let mut done = 0usize;
        while done < len {
            let spare = out.spare_capacity_mut();
            // SAFETY: `spare` has at least `len - done` bytes of capacity (reserved above and
            // advanced by set_len below); pread writes at most that many bytes into it and we
            // only mark as initialised the `n` bytes the kernel reported written.
            let n = unsafe {
                libc::pread(
                    self.fd(),
                    spare.as_mut_ptr() as *mut libc::c_void,
                    len - done,
                    (offset + done as u64) as i64,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                out.truncate(start);
                return Err(e);
            }
            if n == 0 {
                out.resize(start + len, 0);
                return Ok(());
            }
            // SAFETY: the kernel initialised exactly `n` bytes past the current length.
            unsafe { out.set_len(out.len() + n as usize) };
            done += n as usize;
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn trim(&self, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.fallocate(
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset,
            len,
        )
    }

    fn zero(&self, offset: u64, len: u64, may_trim: bool, fast: bool) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let attempt = if may_trim {
            self.trim(offset, len)
        } else {
            self.fallocate(
                libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
                offset,
                len,
            )
        };
        match attempt {
            Ok(()) => Ok(()),
            Err(e) if is_unsupported(&e) => {
                if fast {
                    Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "fast zeroing not supported by the backing file system",
                    ))
                } else {
                    write_zeroes_at(&self.file, offset, len)
                }
            }
            Err(e) => Err(e),
        }
    }

    fn flush(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn cache(&self, offset: u64, len: u64) -> io::Result<()> {
        // SAFETY: advisory syscall on an fd we own.
        let r = unsafe {
            libc::posix_fadvise(
                self.fd(),
                offset as i64,
                len as i64,
                libc::POSIX_FADV_WILLNEED,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    }

    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let end = offset.saturating_add(len);
        let mut out = Vec::new();
        let mut pos = offset;
        while pos < end && out.len() < max {
            let data = self.seek(pos, libc::SEEK_DATA)?;
            match data {
                Some(d) if d <= pos => {
                    // In data: extends to the next hole.
                    let hole = self.seek(pos, libc::SEEK_HOLE)?.unwrap_or(end);
                    let stop = hole.min(end).max(pos + 1);
                    out.push(Extent {
                        length: stop - pos,
                        hole: false,
                    });
                    pos = stop;
                }
                Some(d) => {
                    let stop = d.min(end);
                    out.push(Extent {
                        length: stop - pos,
                        hole: true,
                    });
                    pos = stop;
                }
                None => {
                    out.push(Extent {
                        length: end - pos,
                        hole: true,
                    });
                    pos = end;
                }
            }
        }
        Ok(out)
    }

    fn allocated_bytes(&self) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(self.file.metadata()?.blocks() * 512)
    }

    fn byte_len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn grow(&self, size: u64) -> io::Result<()> {
        if size > self.byte_len()? {
            self.file.set_len(size)?;
        }
        Ok(())
    }
}

/// A 1 MiB file backend (`v.img`) in a fresh directory, for layer tests (here and in the
/// front ends'; [`crate::testing`] re-exports it).
#[cfg(any(test, feature = "testing"))]
pub fn scratch_file(tag: &str) -> (test_support::TestDir, std::sync::Arc<dyn Backend>) {
    let d = test_support::TestDir::new(tag);
    let b = FileBackend::open(&d.join("v.img"), 1 << 20, false, false).unwrap();
    (d, std::sync::Arc::new(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file path in a fresh directory (removed with the guard).
    fn tmp(name: &str) -> (test_support::TestDir, std::path::PathBuf) {
        let d = test_support::TestDir::new("backend");
        let p = d.join(name);
        (d, p)
    }

    #[test]
    fn sparse_file_write_trim_and_extents() {
        let (_d, p) = tmp("extents");
        let b = FileBackend::open(&p, 1 << 20, false, true).unwrap();
        assert_eq!(b.byte_len().unwrap(), 1 << 20);
        assert_eq!(b.allocated_bytes().unwrap(), 0);
        let ex = b.extents(0, 1 << 20, 16).unwrap();
        assert_eq!(
            ex,
            vec![Extent {
                length: 1 << 20,
                hole: true
            }]
        );

        b.write_at(&[7u8; 65536], 65536).unwrap();
        assert!(b.allocated_bytes().unwrap() >= 65536);
        let ex = b.extents(0, 1 << 20, 16).unwrap();
        assert_eq!(ex.iter().map(|e| e.length).sum::<u64>(), 1 << 20);
        assert!(ex.iter().any(|e| !e.hole));

        let mut buf = vec![0u8; 16];
        b.read_at(&mut buf, 65536).unwrap();
        assert_eq!(buf, vec![7u8; 16]);

        b.trim(65536, 65536).unwrap();
        b.read_at(&mut buf, 65536).unwrap();
        assert_eq!(buf, vec![0u8; 16]);
        assert_eq!(b.allocated_bytes().unwrap(), 0);

        let mut out = vec![1, 2];
        b.read_append(&mut out, (1 << 20) - 4, 4).unwrap();
        assert_eq!(out, vec![1, 2, 0, 0, 0, 0]);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn mapped_reads_see_writes_trims_and_zeroes() {
        for mmap in [true, false] {
            let (_d, p) = tmp(&format!("coherent-{mmap}"));
            let b = FileBackend::open(&p, 1 << 20, false, mmap).unwrap();
            assert_eq!(b.map.is_some(), mmap);
            let mut out = Vec::new();
            b.read_append(&mut out, 4096, 8).unwrap();
            assert_eq!(out, vec![0u8; 8], "hole reads as zeroes");
            b.write_at(&[9u8; 8192], 4096).unwrap();
            out.clear();
            b.read_append(&mut out, 4096, 8192).unwrap();
            assert_eq!(out, vec![9u8; 8192], "a write is visible to the next read");
            b.zero(4096, 4096, false, false).unwrap();
            b.trim(8192, 4096).unwrap();
            out.clear();
            b.read_append(&mut out, 4096, 8192).unwrap();
            assert_eq!(
                out,
                vec![0u8; 8192],
                "zeroed and trimmed ranges read as zeroes"
            );
            let _ = std::fs::remove_file(&p);
        }
    }

    #[test]
    fn refuses_to_truncate_a_larger_file() {
        let (_d, p) = tmp("larger");
        FileBackend::open(&p, 8192, false, false).unwrap();
        let e = FileBackend::open(&p, 4096, false, false).err().unwrap();
        assert!(e.to_string().contains("refusing to truncate"));
        let _ = std::fs::remove_file(&p);
    }
}
