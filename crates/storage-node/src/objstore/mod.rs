//! A bucket's objects on disk: one file per object under `DATA_DIR/buckets/NAME/objects/`,
//! named by the SHA-256 of its key (so a key is never a path: `../x`, `a` beside `a/b`,
//! 1,024-byte keys and any Unicode are all just keys), plus an in-memory sorted index
//! (key → size, ETag, time) rebuilt from the files' headers when the bucket opens.
//!
//! **Durability.** A write goes to `tmp/`, is fsynced, renamed to its final name and the
//! directory is fsynced before [`ObjectStore::commit`] returns: an acknowledged PUT
//! survives `kill -9` and power loss, and a crash mid-write leaves only a temporary file
//! (removed on the next open), never a torn object. A delete is likewise durable when it
//! returns. Renames and index updates of one bucket are serialized, so the index always
//! names the file that won.
//!
//! The protocol layer (the `s3-server` crate) maps [`ObjError`] to S3 error codes.

pub mod format;
mod multipart;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use md5::Digest as _;

use crate::locks;
pub use format::ObjectMeta;
use format::{Fixed, FIXED_LEN, MAX_META_LEN};
pub use multipart::{PartInfo, UploadInfo, MAX_PART_NUMBER, MIN_PART_SIZE};

/// S3's limit for one PUT (and one part): 5 GiB.
pub const MAX_OBJECT_SIZE: u64 = 5 << 30;

/// Errors of the object store; the S3 layer maps each to its S3 error code.
#[derive(Debug, thiserror::Error)]
pub enum ObjError {
    #[error("the object does not exist")]
    NoSuchKey,
    #[error("the multipart upload does not exist (aborted or completed?)")]
    NoSuchUpload,
    #[error("the object is larger than the allowed {max} bytes")]
    TooLarge { max: u64 },
    #[error("the body ended after {got} of the {want} bytes announced")]
    Incomplete { got: u64, want: u64 },
    #[error("the data does not match the Content-MD5 sent with it")]
    BadDigest,
    #[error("{0}")]
    InvalidPart(String),
    #[error("the parts must be listed in ascending order of part number")]
    InvalidPartOrder,
    #[error("part {part} is {size} bytes: every part but the last must be at least 5 MiB")]
    PartTooSmall { part: u32, size: u64 },
    #[error("the object's metadata (key, headers, x-amz-meta-*) exceeds {MAX_META_LEN} bytes")]
    MetaTooLarge,
    #[error("object file {path}: {why}")]
    Corrupt { path: String, why: String },
    #[error("the bucket is being deleted")]
    Closed,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What the index knows about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjInfo {
    pub size: u64,
    /// Without quotes.
    pub etag: String,
    pub mtime_ns: u64,
}

struct Index {
    map: BTreeMap<String, ObjInfo>,
    used: u64,
}

/// One bucket's objects.
pub struct ObjectStore {
    dir: PathBuf,
    index: RwLock<Index>,
    /// Serializes rename/unlink + index update, so the index matches the file that won.
    /// `true` once the bucket is closed for deletion: nothing commits after that, so an
    /// acknowledged write can never land in a bucket that is being removed.
    commit: Mutex<bool>,
}

/// A listing request (ListObjects v1 and v2 share it).
#[derive(Debug, Clone, Default)]
pub struct ListQuery<'a> {
    pub prefix: &'a str,
    pub delimiter: Option<&'a str>,
    /// Resume strictly after this key or common prefix (marker, start-after, token).
    pub after: Option<&'a str>,
    pub max_keys: usize,
}

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    pub objects: Vec<(String, ObjInfo)>,
    pub prefixes: Vec<String>,
    pub truncated: bool,
    /// The last key or prefix returned (where the next page starts after), when truncated.
    pub next_after: Option<String>,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// fsync a directory, making the renames and unlinks in it durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Create `dir` (and missing parents) and make its entry durable.
fn create_dir_durable(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    crate::private::create_dir_all(dir)?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

fn key_hash(key: &str) -> String {
    format::hex(&sha2::Sha256::digest(key.as_bytes()))
}

impl ObjectStore {
    /// Open (creating if missing) the bucket directory `dir`, rebuilding the index from
    /// the object files and removing temporary files a crash left behind.
    pub fn open(dir: &Path) -> io::Result<ObjectStore> {
        for sub in ["objects", "tmp", "uploads"] {
            create_dir_durable(&dir.join(sub))?;
        }
        for e in fs::read_dir(dir.join("tmp"))? {
            let p = e?.path();
            if let Err(e) = fs::remove_file(&p) {
                tracing::warn!(path = %p.display(), "removing a temporary file: {e}");
            }
        }
        let mut map = BTreeMap::new();
        let mut used = 0;
        for shard in fs::read_dir(dir.join("objects"))? {
            let shard = shard?.path();
            if !shard.is_dir() {
                continue;
            }
            for e in fs::read_dir(&shard)? {
                let path = e?.path();
                match read_header(&path) {
                    Ok((fixed, meta)) => {
                        let want = key_hash(&meta.key);
                        let name = format!(
                            "{}{}",
                            shard.file_name().unwrap_or_default().to_string_lossy(),
                            path.file_name().unwrap_or_default().to_string_lossy()
                        );
                        if name != want {
                            tracing::warn!(path = %path.display(), "object file is not named by its key's hash; ignored");
                            continue;
                        }
                        used += fixed.size;
                        map.insert(
                            meta.key,
                            ObjInfo {
                                size: fixed.size,
                                etag: fixed.etag(),
                                mtime_ns: fixed.mtime_ns,
                            },
                        );
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "unreadable object file ignored: {e}")
                    }
                }
            }
        }
        Ok(ObjectStore {
            dir: dir.to_path_buf(),
            index: RwLock::new(Index { map, used }),
            commit: Mutex::new(false),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn read_index(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        locks::read(&self.index)
    }

    fn write_index(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        locks::write(&self.index)
    }

    fn lock_commit(&self) -> std::sync::MutexGuard<'_, bool> {
        locks::lock(&self.commit)
    }

    /// Take the commit lock of an open bucket (`Closed` once it is being deleted).
    pub(crate) fn lock_open(&self) -> Result<std::sync::MutexGuard<'_, bool>, ObjError> {
        let g = self.lock_commit();
        if *g {
            Err(ObjError::Closed)
        } else {
            Ok(g)
        }
    }

    /// Close the bucket for deletion if it is empty (no objects, no uploads): from then on
    /// every commit fails with [`ObjError::Closed`]. `false` (and still open) if not empty.
    pub fn close_if_empty(&self) -> bool {
        let mut g = self.lock_commit();
        if self.count() == 0 && self.uploads_empty() {
            *g = true;
            true
        } else {
            false
        }
    }

    /// Undo [`ObjectStore::close_if_empty`] (the deletion failed).
    pub fn reopen(&self) {
        *self.lock_commit() = false;
    }

    /// Bytes stored (sum of object sizes: ONTAP's `logical_used_size`).
    pub fn used(&self) -> u64 {
        self.read_index().used
    }

    pub fn count(&self) -> usize {
        self.read_index().map.len()
    }

    /// No objects and no multipart uploads in progress.
    pub fn is_empty(&self) -> bool {
        self.count() == 0 && self.uploads_empty()
    }

    pub fn info(&self, key: &str) -> Option<ObjInfo> {
        self.read_index().map.get(key).cloned()
    }

    fn object_path(&self, key: &str) -> (PathBuf, PathBuf) {
        let h = key_hash(key);
        let shard = self.dir.join("objects").join(&h[..2]);
        let file = shard.join(&h[2..]);
        (shard, file)
    }

    /// Start writing an object (or a part) of at most `max` bytes.
    pub fn writer(&self, meta: &ObjectMeta, max: u64) -> Result<ObjectWriter, ObjError> {
        let meta_json = serde_json::to_vec(meta).map_err(io::Error::other)?;
        if meta_json.len() > MAX_META_LEN {
            return Err(ObjError::MetaTooLarge);
        }
        let tmp = self.dir.join("tmp").join(new_uuid());
        let file = crate::private::options()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let w = ObjectWriter {
            file: Some(file),
            tmp,
            md5: md5::Md5::new(),
            written: 0,
            max,
            meta_len: meta_json.len() as u32,
            key: meta.key.clone(),
        };
        let f = w
            .file
            .as_ref()
            .ok_or_else(|| io::Error::other("writer closed"))?;
        f.write_all_at(&meta_json, FIXED_LEN as u64)?;
        Ok(w)
    }

    /// Make a finished object visible under its key: rename, fsync the directory, update
    /// the index. When this returns `Ok` the object is durable. Blocking.
    pub fn commit(&self, mut fin: Finished) -> Result<ObjInfo, ObjError> {
        let (shard, path) = self.object_path(&fin.key);
        create_dir_durable(&shard)?;
        let info = ObjInfo {
            size: fin.fixed.size,
            etag: fin.fixed.etag(),
            mtime_ns: fin.fixed.mtime_ns,
        };
        {
            let _g = self.lock_open()?;
            fs::rename(&fin.tmp, &path)?;
            fin.committed = true;
            let mut idx = self.write_index();
            if let Some(old) = idx.map.insert(fin.key.clone(), info.clone()) {
                idx.used -= old.size;
            }
            idx.used += info.size;
        }
        sync_dir(&shard)?;
        Ok(info)
    }

    /// Open an object for reading: its header, metadata and the first bytes of data in
    /// one read. Blocking.
    pub fn open_object(&self, key: &str) -> Result<ObjectReader, ObjError> {
        let (_, path) = self.object_path(key);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ObjError::NoSuchKey),
            Err(e) => return Err(e.into()),
        };
        ObjectReader::new(file, &path, 64 * 1024)
    }

    /// Delete an object; `Ok(false)` if there was none. Durable when it returns. Blocking.
    pub fn delete(&self, key: &str) -> Result<bool, ObjError> {
        let (shard, path) = self.object_path(key);
        {
            let _g = self.lock_open()?;
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // Not on disk: make sure the index agrees.
                    let mut idx = self.write_index();
                    if let Some(old) = idx.map.remove(key) {
                        idx.used -= old.size;
                    }
                    return Ok(false);
                }
                Err(e) => return Err(e.into()),
            }
            let mut idx = self.write_index();
            if let Some(old) = idx.map.remove(key) {
                idx.used -= old.size;
            }
        }
        sync_dir(&shard)?;
        Ok(true)
    }

    /// One page of keys in order, with common prefixes rolled up at the delimiter.
    pub fn list(&self, q: &ListQuery) -> ListPage {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let idx = self.read_index();
        let mut page = ListPage::default();
        if q.max_keys == 0 {
            return page;
        }
        // Resuming after a rolled-up prefix skips everything under it.
        let skip_under = q.after.filter(|a| {
            q.delimiter.is_some_and(|d| {
                a.starts_with(q.prefix) && a.len() > q.prefix.len() && a.ends_with(d)
            })
        });
        let start = match q.after {
            Some(a) if a >= q.prefix => Excluded(a.to_string()),
            _ => Included(q.prefix.to_string()),
        };
        let mut last_prefix: Option<String> = skip_under.map(str::to_string);
        let mut n = 0usize;
        for (key, info) in idx.map.range((start, Unbounded)) {
            if !key.starts_with(q.prefix) {
                break;
            }
            if let Some(lp) = &last_prefix {
                if key.starts_with(lp.as_str()) {
                    continue;
                }
            }
            let rolled = q.delimiter.filter(|d| !d.is_empty()).and_then(|d| {
                key[q.prefix.len()..]
                    .find(d)
                    .map(|i| key[..q.prefix.len() + i + d.len()].to_string())
            });
            if n == q.max_keys {
                page.truncated = true;
                break;
            }
            n += 1;
            match rolled {
                Some(cp) => {
                    page.next_after = Some(cp.clone());
                    last_prefix = Some(cp.clone());
                    page.prefixes.push(cp);
                }
                None => {
                    page.next_after = Some(key.clone());
                    page.objects.push((key.clone(), info.clone()));
                }
            }
        }
        if !page.truncated {
            page.next_after = None;
        }
        page
    }

    /// Remove the bucket's directory and everything in it (the bucket is being deleted).
    pub fn destroy(&self) -> io::Result<()> {
        fs::remove_dir_all(&self.dir)?;
        if let Some(parent) = self.dir.parent() {
            sync_dir(parent)?;
        }
        Ok(())
    }
}

fn read_header(path: &Path) -> Result<(Fixed, ObjectMeta), ObjError> {
    let r = ObjectReader::new(File::open(path)?, path, FIXED_LEN + MAX_META_LEN)?;
    Ok((r.fixed, r.meta))
}

/// An object being written. Dropped without [`ObjectWriter::finish`], its temporary file
/// is removed.
pub struct ObjectWriter {
    file: Option<File>,
    tmp: PathBuf,
    md5: md5::Md5,
    written: u64,
    max: u64,
    meta_len: u32,
    key: String,
}

impl ObjectWriter {
    /// Append data (to the page cache; made durable by `finish`).
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), ObjError> {
        let n = chunk.len() as u64;
        if self.written + n > self.max {
            return Err(ObjError::TooLarge { max: self.max });
        }
        let f = self
            .file
            .as_ref()
            .ok_or_else(|| io::Error::other("writer closed"))?;
        f.write_all_at(
            chunk,
            FIXED_LEN as u64 + self.meta_len as u64 + self.written,
        )?;
        self.md5.update(chunk);
        self.written += n;
        Ok(())
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    /// Check the length and digest, write the header's final fields and fsync.
    /// Blocking (fsync).
    pub fn finish(
        mut self,
        want_len: Option<u64>,
        content_md5: Option<[u8; 16]>,
    ) -> Result<Finished, ObjError> {
        if let Some(want) = want_len {
            if want != self.written {
                return Err(ObjError::Incomplete {
                    got: self.written,
                    want,
                });
            }
        }
        let md5: [u8; 16] = std::mem::take(&mut self.md5).finalize().into();
        if content_md5.is_some_and(|m| m != md5) {
            return Err(ObjError::BadDigest);
        }
        self.seal(md5, 0)
    }

    /// Finish with a given MD5 and part count (a multipart object's ETag). Blocking.
    pub(crate) fn seal(mut self, md5: [u8; 16], parts: u32) -> Result<Finished, ObjError> {
        let fixed = Fixed {
            size: self.written,
            mtime_ns: now_ns(),
            md5,
            parts,
            meta_len: self.meta_len,
        };
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("writer closed"))?;
        let tmp = std::mem::take(&mut self.tmp);
        let done = (|| {
            file.write_all_at(&fixed.encode(), 0)?;
            file.sync_data()
        })();
        let fin = Finished {
            tmp,
            fixed,
            key: std::mem::take(&mut self.key),
            committed: false,
        };
        done?;
        Ok(fin)
    }

    /// The raw file, for copying parts into a multipart object.
    pub(crate) fn raw(&self) -> Option<(&File, u64)> {
        let off = FIXED_LEN as u64 + self.meta_len as u64;
        self.file.as_ref().map(|f| (f, off))
    }

    pub(crate) fn advance(&mut self, n: u64) {
        self.written += n;
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// A complete, fsynced object file not yet visible under its key. Dropped without being
/// committed, its file is removed.
pub struct Finished {
    tmp: PathBuf,
    pub fixed: Fixed,
    key: String,
    committed: bool,
}

impl Finished {
    pub fn etag(&self) -> String {
        self.fixed.etag()
    }
}

impl Drop for Finished {
    fn drop(&mut self) {
        if !self.committed && !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// An object opened for reading.
pub struct ObjectReader {
    file: File,
    pub fixed: Fixed,
    pub meta: ObjectMeta,
    /// The first bytes of the data, read together with the header.
    head: Vec<u8>,
}

impl ObjectReader {
    fn new(file: File, path: &Path, first_read: usize) -> Result<ObjectReader, ObjError> {
        let corrupt = |why: &str| ObjError::Corrupt {
            path: path.display().to_string(),
            why: why.to_string(),
        };
        let mut buf = vec![0u8; first_read.max(FIXED_LEN + MAX_META_LEN.min(4096))];
        let n = read_full_at(&file, &mut buf, 0)?;
        buf.truncate(n);
        let fixed = Fixed::decode(&buf).ok_or_else(|| corrupt("bad header"))?;
        let meta_end = FIXED_LEN + fixed.meta_len as usize;
        if buf.len() < meta_end {
            let mut more = vec![0u8; meta_end - buf.len()];
            let m = read_full_at(&file, &mut more, buf.len() as u64)?;
            if m < more.len() {
                return Err(corrupt("truncated metadata"));
            }
            buf.extend_from_slice(&more);
        }
        let meta: ObjectMeta = serde_json::from_slice(&buf[FIXED_LEN..meta_end])
            .map_err(|e| corrupt(&format!("metadata: {e}")))?;
        let mut head = buf.split_off(meta_end);
        head.truncate(fixed.size.min(head.len() as u64) as usize);
        Ok(ObjectReader {
            file,
            fixed,
            meta,
            head,
        })
    }

    pub fn size(&self) -> u64 {
        self.fixed.size
    }

    /// Read `len` bytes of data from `start` (within the object). Blocking when the range
    /// goes past the bytes read with the header.
    pub fn read(&self, start: u64, len: usize) -> io::Result<Vec<u8>> {
        let end = start + len as u64;
        if end <= self.head.len() as u64 {
            return Ok(self.head[start as usize..end as usize].to_vec());
        }
        let mut buf = vec![0u8; len];
        let n = read_full_at(&self.file, &mut buf, self.fixed.data_offset() + start)?;
        if n < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "object file shorter than its header says",
            ));
        }
        Ok(buf)
    }

    /// The data bytes already in memory (the whole object when it is small).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    pub(crate) fn file(&self) -> &File {
        &self.file
    }
}

fn read_full_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A random (version 4) UUID, lower-case hyphenated: names of temporary files and uploads.
pub(crate) fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests;
