//! A file or block-device target: O_DIRECT pread/pwrite from 4 KiB-aligned buffers on
//! tokio's blocking pool, `fdatasync` for FLUSH. A directory holds `qoslab-genio.dat`. File
//! systems without O_DIRECT (tmpfs) fall back to buffered I/O, and `describe` says so.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{IoError, IoFuture, IoTarget};

/// The file the generator makes in a directory target.
pub const DIR_FILE: &str = "qoslab-genio.dat";

const ALIGN: usize = 4096;
const PATTERN: usize = 1 << 20;

/// A buffer whose usable slice starts on a 4 KiB boundary (no unsafe: over-allocate).
struct Aligned {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let buf = vec![0u8; len + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        Aligned { buf, start, len }
    }
    fn get(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
    fn get_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

pub struct FileTarget {
    path: PathBuf,
    file: Arc<File>,
    size: u64,
    direct: bool,
    pattern: Arc<Aligned>,
}

impl FileTarget {
    /// Open `path` for `need` bytes of I/O (see [`super::open`]).
    pub fn open(path: &Path, need: u64) -> Result<FileTarget, IoError> {
        let err = |what: &str, e: std::io::Error| {
            IoError::Setup(format!("{}: {what}: {e}", path.display()))
        };
        let (path, ours) = if path.is_dir() {
            (path.join(DIR_FILE), true)
        } else {
            (path.to_path_buf(), !path.exists())
        };
        let open = |direct: bool| {
            let mut o = OpenOptions::new();
            o.read(true).write(true).create(ours);
            if direct {
                o.custom_flags(libc::O_DIRECT);
            }
            o.open(&path)
        };
        let (file, direct) = match open(true) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                (open(false).map_err(|e| err("open", e))?, false)
            }
            Err(e) => return Err(err("open", e)),
        };
        let meta = file.metadata().map_err(|e| err("stat", e))?;
        let mut size = if meta.file_type().is_block_device() {
            (&file).seek(SeekFrom::End(0)).map_err(|e| err("size", e))?
        } else {
            meta.len()
        };
        if size < need {
            if ours {
                file.set_len(need).map_err(|e| err("set_len", e))?;
                size = need;
            } else {
                return Err(IoError::Setup(format!(
                    "{}: {size} bytes, but the workload addresses {need} (span + journal): \
                     use a larger file or device, or a smaller span",
                    path.display()
                )));
            }
        }
        let mut pattern = Aligned::new(PATTERN);
        let mut rng = super::Rng::new(0xf11e);
        for c in pattern.get_mut().chunks_mut(8) {
            c.copy_from_slice(&rng.next_u64().to_le_bytes()[..c.len()]);
        }
        Ok(FileTarget {
            path,
            file: Arc::new(file),
            size,
            direct,
            pattern: Arc::new(pattern),
        })
    }

    fn blocking(&self, f: impl FnOnce(&File) -> std::io::Result<()> + Send + 'static) -> IoFuture {
        let file = self.file.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || f(&file))
                .await
                .map_err(|e| IoError::Io(format!("I/O task: {e}")))?
                .map_err(|e| IoError::Io(e.to_string()))
        })
    }
}

impl IoTarget for FileTarget {
    fn size(&self) -> u64 {
        self.size
    }
    fn read(&self, offset: u64, len: u32) -> IoFuture {
        self.blocking(move |f| {
            let mut b = Aligned::new(len as usize);
            let buf = b.get_mut();
            let mut done = 0;
            while done < buf.len() {
                match f.read_at(&mut buf[done..], offset + done as u64)? {
                    0 => {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            format!("read at {offset}: end of file"),
                        ))
                    }
                    n => done += n,
                }
            }
            Ok(())
        })
    }
    fn write(&self, offset: u64, len: u32) -> IoFuture {
        let pattern = self.pattern.clone();
        self.blocking(move |f| {
            let len = len as usize;
            if len <= PATTERN {
                f.write_all_at(&pattern.get()[..len], offset)
            } else {
                let b = Aligned::new(len);
                f.write_all_at(b.get(), offset)
            }
        })
    }
    fn flush(&self) -> IoFuture {
        self.blocking(|f| f.sync_data())
    }
    fn describe(&self) -> String {
        format!(
            "{} ({})",
            self.path.display(),
            if self.direct {
                "O_DIRECT"
            } else {
                "buffered: the file system refused O_DIRECT"
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_are_aligned() {
        for n in [512, 8192, 1 << 20] {
            let b = Aligned::new(n);
            assert_eq!(b.get().as_ptr() as usize % ALIGN, 0);
            assert_eq!(b.get().len(), n);
        }
    }

    #[tokio::test]
    async fn a_file_target_reads_writes_and_flushes() {
        let dir = crate::test_dir("genio-file");
        let t = FileTarget::open(&dir, 4 << 20).unwrap();
        assert_eq!(t.size(), 4 << 20);
        assert!(t.describe().contains("qoslab-genio.dat"));
        t.write(8192, 8192).await.unwrap();
        t.write(1 << 20, 256 * 1024).await.unwrap();
        t.read(8192, 8192).await.unwrap();
        t.flush().await.unwrap();
        let data = std::fs::read(dir.join("qoslab-genio.dat")).unwrap();
        assert_eq!(&data[8192..8200], &t.pattern.get()[..8]);
        // A user's existing file is never grown.
        let small = dir.join("small");
        std::fs::write(&small, vec![0u8; 8192]).unwrap();
        let e = FileTarget::open(&small, 1 << 20).err().unwrap().to_string();
        assert!(e.contains("use a larger file"), "{e}");
        // Reading past the end is an error, not a hang.
        let s = FileTarget::open(&small, 8192).unwrap();
        assert!(s.read(8192, 8192).await.is_err());
    }
}
