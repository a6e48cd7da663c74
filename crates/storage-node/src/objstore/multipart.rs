//! Multipart uploads: `uploads/ID/upload.json` holds the object's metadata, each part is
//! an object-format file `uploads/ID/part-NNNNN` (written and made durable like an object),
//! and completion copies the listed parts into one new object file (`copy_file_range`,
//! so the bytes move inside the kernel) committed like a PUT. The ETag is S3's: the MD5
//! of the parts' binary MD5s, then `-N`.

use std::fs::{self, File};
use std::io;
use std::path::PathBuf;

use md5::Digest as _;
use serde::{Deserialize, Serialize};

use super::format::ObjectMeta;
use super::{now_ns, sync_dir, ObjError, ObjInfo, ObjectReader, ObjectStore};
use super::{ObjectWriter, FIXED_LEN, MAX_META_LEN};

/// S3's minimum size of every part but the last.
pub const MIN_PART_SIZE: u64 = 5 << 20;
/// S3's maximum part number.
pub const MAX_PART_NUMBER: u32 = 10_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadInfo {
    pub id: String,
    pub key: String,
    pub initiated_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    pub number: u32,
    pub size: u64,
    pub etag: String,
    pub mtime_ns: u64,
}

#[derive(Serialize, Deserialize)]
struct UploadFile {
    meta: ObjectMeta,
    initiated_ns: u64,
}

fn valid_upload_id(id: &str) -> bool {
    id.len() == 36 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

impl ObjectStore {
    fn upload_dir(&self, id: &str) -> Result<PathBuf, ObjError> {
        if !valid_upload_id(id) {
            return Err(ObjError::NoSuchUpload);
        }
        let d = self.dir.join("uploads").join(id);
        if d.is_dir() {
            Ok(d)
        } else {
            Err(ObjError::NoSuchUpload)
        }
    }

    pub(crate) fn uploads_empty(&self) -> bool {
        fs::read_dir(self.dir.join("uploads"))
            .map(|mut d| d.next().is_none())
            .unwrap_or(true)
    }

    /// Begin a multipart upload; returns its id. Blocking (fsync).
    pub fn create_upload(&self, meta: &ObjectMeta) -> Result<String, ObjError> {
        let id = super::new_uuid();
        let body = serde_json::to_vec(&UploadFile {
            meta: meta.clone(),
            initiated_ns: now_ns(),
        })
        .map_err(io::Error::other)?;
        if body.len() > MAX_META_LEN {
            return Err(ObjError::MetaTooLarge);
        }
        let dir = self.dir.join("uploads").join(&id);
        let _g = self.lock_open()?;
        crate::private::create_dir(&dir)?;
        let f = dir.join("upload.json");
        crate::private::write(&f, &body)?;
        sync_dir(&dir)?;
        sync_dir(&self.dir.join("uploads"))?;
        Ok(id)
    }

    fn upload_file(&self, id: &str) -> Result<UploadFile, ObjError> {
        let dir = self.upload_dir(id)?;
        let body = fs::read(dir.join("upload.json"))?;
        serde_json::from_slice(&body).map_err(|e| ObjError::Corrupt {
            path: dir.join("upload.json").display().to_string(),
            why: e.to_string(),
        })
    }

    /// Start writing part `number` of upload `id` for `key`.
    pub fn part_writer(
        &self,
        id: &str,
        key: &str,
        number: u32,
        max: u64,
    ) -> Result<ObjectWriter, ObjError> {
        let up = self.upload_file(id)?;
        if up.meta.key != key {
            return Err(ObjError::NoSuchUpload);
        }
        if number == 0 || number > MAX_PART_NUMBER {
            return Err(ObjError::InvalidPart(format!(
                "part number {number} is outside 1..={MAX_PART_NUMBER}"
            )));
        }
        self.writer(
            &ObjectMeta {
                key: format!("{key}\u{0}part{number}"),
                ..Default::default()
            },
            max,
        )
    }

    /// Make a finished part durable in its upload (replacing an earlier one). Blocking.
    pub fn commit_part(
        &self,
        id: &str,
        number: u32,
        mut fin: super::Finished,
    ) -> Result<PartInfo, ObjError> {
        let dir = self.upload_dir(id)?;
        let _g = self.lock_open()?;
        fs::rename(&fin.tmp, dir.join(format!("part-{number:05}")))?;
        fin.committed = true;
        sync_dir(&dir)?;
        Ok(PartInfo {
            number,
            size: fin.fixed.size,
            etag: fin.fixed.etag(),
            mtime_ns: fin.fixed.mtime_ns,
        })
    }

    fn open_part(&self, dir: &std::path::Path, number: u32) -> Result<ObjectReader, ObjError> {
        let p = dir.join(format!("part-{number:05}"));
        let f = match File::open(&p) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ObjError::InvalidPart(format!(
                    "part {number} was never uploaded"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        ObjectReader::new(f, &p, FIXED_LEN + 4096)
    }

    /// The parts uploaded so far, in order. Blocking.
    pub fn list_parts(&self, id: &str) -> Result<(String, Vec<PartInfo>), ObjError> {
        let up = self.upload_file(id)?;
        let dir = self.upload_dir(id)?;
        let mut parts = Vec::new();
        for e in fs::read_dir(&dir)? {
            let name = e?.file_name().to_string_lossy().to_string();
            if let Some(n) = name
                .strip_prefix("part-")
                .and_then(|n| n.parse::<u32>().ok())
            {
                let r = self.open_part(&dir, n)?;
                parts.push(PartInfo {
                    number: n,
                    size: r.fixed.size,
                    etag: r.fixed.etag(),
                    mtime_ns: r.fixed.mtime_ns,
                });
            }
        }
        parts.sort_by_key(|p| p.number);
        Ok((up.meta.key, parts))
    }

    /// Uploads in progress, by key then time.
    pub fn list_uploads(&self) -> Vec<UploadInfo> {
        let mut out = Vec::new();
        if let Ok(rd) = fs::read_dir(self.dir.join("uploads")) {
            for e in rd.flatten() {
                let id = e.file_name().to_string_lossy().to_string();
                if let Ok(up) = self.upload_file(&id) {
                    out.push(UploadInfo {
                        id,
                        key: up.meta.key,
                        initiated_ns: up.initiated_ns,
                    });
                }
            }
        }
        out.sort_by(|a, b| (&a.key, a.initiated_ns).cmp(&(&b.key, b.initiated_ns)));
        out
    }

    /// Abort an upload: its parts are removed. Blocking.
    pub fn abort_upload(&self, id: &str) -> Result<(), ObjError> {
        let dir = self.upload_dir(id)?;
        fs::remove_dir_all(&dir)?;
        sync_dir(&self.dir.join("uploads"))?;
        Ok(())
    }

    /// Complete an upload from the listed parts (number, ETag without quotes): checks
    /// order, existence, ETags and sizes, copies the parts into one object and commits it.
    /// Blocking (copies and fsyncs).
    pub fn complete_upload(
        &self,
        id: &str,
        key: &str,
        parts: &[(u32, String)],
    ) -> Result<ObjInfo, ObjError> {
        let up = self.upload_file(id)?;
        if up.meta.key != key {
            return Err(ObjError::NoSuchUpload);
        }
        let dir = self.upload_dir(id)?;
        if parts.is_empty() {
            return Err(ObjError::InvalidPart(
                "the request lists no parts".to_string(),
            ));
        }
        if parts.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(ObjError::InvalidPartOrder);
        }
        let mut readers = Vec::with_capacity(parts.len());
        for (i, (n, etag)) in parts.iter().enumerate() {
            let r = self.open_part(&dir, *n)?;
            if r.fixed.etag() != etag.trim_matches('"') {
                return Err(ObjError::InvalidPart(format!(
                    "part {n}: ETag {etag:?} does not match the uploaded part's {:?}",
                    r.fixed.etag()
                )));
            }
            if i + 1 < parts.len() && r.fixed.size < MIN_PART_SIZE {
                return Err(ObjError::PartTooSmall {
                    part: *n,
                    size: r.fixed.size,
                });
            }
            readers.push(r);
        }
        let total: u64 = readers.iter().map(|r| r.fixed.size).sum();
        let mut w = self.writer(&up.meta, u64::MAX)?;
        let mut md5s = md5::Md5::new();
        for r in &readers {
            md5s.update(r.fixed.md5);
            let at = w.written();
            let (out, base) = w.raw().ok_or_else(|| io::Error::other("writer closed"))?;
            copy_range(
                r.file(),
                r.fixed.data_offset(),
                out,
                base + at,
                r.fixed.size,
            )?;
            w.advance(r.fixed.size);
        }
        debug_assert_eq!(w.written(), total);
        let fin = w.seal(md5s.finalize().into(), parts.len() as u32)?;
        let info = self.commit(fin)?;
        if let Err(e) = fs::remove_dir_all(&dir).and_then(|_| sync_dir(&self.dir.join("uploads"))) {
            tracing::warn!(upload = id, "removing a completed upload's parts: {e}");
        }
        Ok(info)
    }
}

/// Copy `len` bytes between files at the given offsets, in the kernel where it can.
fn copy_range(
    from: &File,
    mut off_in: u64,
    to: &File,
    mut off_out: u64,
    len: u64,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let mut left = len;
    while left > 0 {
        let mut i = off_in as libc::loff_t;
        let mut o = off_out as libc::loff_t;
        let chunk = left.min(1 << 30) as usize;
        // SAFETY: both descriptors are open files owned by the callers for the duration
        // of the call; the offsets are plain integers the kernel updates.
        let n = unsafe {
            libc::copy_file_range(from.as_raw_fd(), &mut i, to.as_raw_fd(), &mut o, chunk, 0)
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EXDEV)
                | Some(libc::ENOSYS)
                | Some(libc::EOPNOTSUPP)
                | Some(libc::EINVAL) => {
                    // Fall back to reading and writing.
                    let mut buf = vec![0u8; (left.min(8 << 20)) as usize];
                    while left > 0 {
                        let k = buf.len().min(left as usize);
                        from.read_exact_at(&mut buf[..k], off_in)?;
                        to.write_all_at(&buf[..k], off_out)?;
                        off_in += k as u64;
                        off_out += k as u64;
                        left -= k as u64;
                    }
                    return Ok(());
                }
                _ => return Err(e),
            }
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "part file shorter than its header says",
            ));
        }
        off_in += n as u64;
        off_out += n as u64;
        left -= n as u64;
    }
    Ok(())
}
