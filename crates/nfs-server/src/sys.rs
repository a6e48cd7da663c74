//! The system calls the tree uses, as small safe wrappers: everything relative to a
//! directory descriptor, nothing through a path from `/`, no symlink ever followed.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn cstr(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `openat2(dir, path, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
/// RESOLVE_NO_XDEV)`: the kernel refuses any path that leaves `dir`, crosses a symlink or a mount (a trailing symlink
/// opens as itself with `O_PATH | O_NOFOLLOW`).
pub fn open_beneath(dir: RawFd, path: &[u8], flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let path = if path.is_empty() { &b"."[..] } else { path };
    let c = cstr(path)?;
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64;
    how.mode = if flags & libc::O_CREAT != 0 {
        mode as u64
    } else {
        0
    };
    // NO_XDEV: a file system mounted inside an export is not part of it (its inode
    // numbers could collide with the export's, and handles name inodes).
    how.resolve = libc::RESOLVE_BENEATH
        | libc::RESOLVE_NO_SYMLINKS
        | libc::RESOLVE_NO_MAGICLINKS
        | libc::RESOLVE_NO_XDEV;
    // SAFETY: valid C string and a properly sized open_how.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Opens a directory given by absolute path (an export root; the only path not beneath
/// a descriptor).
pub fn open_root(path: &std::path::Path) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = cstr(path.as_os_str().as_bytes())?;
    // SAFETY: valid C string.
    let fd = check(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What we need of `statx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub blocks: u64,
    pub rdev: (u32, u32),
    pub ino: u64,
    /// Birth time in nanoseconds since the epoch; 0 when the file system has none.
    pub btime: u64,
    pub atime: (i64, u32),
    pub mtime: (i64, u32),
    pub ctime: (i64, u32),
}

impl Stat {
    pub fn kind(&self) -> u32 {
        self.mode & libc::S_IFMT
    }
    pub fn is_dir(&self) -> bool {
        self.kind() == libc::S_IFDIR
    }
    pub fn is_reg(&self) -> bool {
        self.kind() == libc::S_IFREG
    }
}

/// `statx(dir, name, AT_SYMLINK_NOFOLLOW)`; an empty name stats `dir` itself.
pub fn stat_at(dir: RawFd, name: &[u8]) -> io::Result<Stat> {
    let (c, flags) = if name.is_empty() {
        (
            CString::default(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    } else {
        (cstr(name)?, libc::AT_SYMLINK_NOFOLLOW)
    };
    let mut sx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers.
    check(unsafe {
        libc::statx(
            dir,
            c.as_ptr(),
            flags,
            libc::STATX_BASIC_STATS | libc::STATX_BTIME,
            &mut sx,
        )
    })?;
    let btime = if sx.stx_mask & libc::STATX_BTIME != 0 {
        (sx.stx_btime.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(sx.stx_btime.tv_nsec as u64)
    } else {
        0
    };
    let t = |t: libc::statx_timestamp| (t.tv_sec, t.tv_nsec);
    Ok(Stat {
        mode: sx.stx_mode as u32,
        nlink: sx.stx_nlink,
        uid: sx.stx_uid,
        gid: sx.stx_gid,
        size: sx.stx_size,
        blocks: sx.stx_blocks,
        rdev: (sx.stx_rdev_major, sx.stx_rdev_minor),
        ino: sx.stx_ino,
        btime,
        atime: t(sx.stx_atime),
        mtime: t(sx.stx_mtime),
        ctime: t(sx.stx_ctime),
    })
}

pub fn fstat(fd: &OwnedFd) -> io::Result<Stat> {
    stat_at(fd.as_raw_fd(), b"")
}

pub fn mkdir_at(dir: RawFd, name: &[u8], mode: u32) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: valid C string.
    check(unsafe { libc::mkdirat(dir, c.as_ptr(), mode) }).map(drop)
}

pub fn unlink_at(dir: RawFd, name: &[u8], is_dir: bool) -> io::Result<()> {
    let c = cstr(name)?;
    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: valid C string.
    check(unsafe { libc::unlinkat(dir, c.as_ptr(), flags) }).map(drop)
}

pub fn rename_at(from: RawFd, from_name: &[u8], to: RawFd, to_name: &[u8]) -> io::Result<()> {
    let (a, b) = (cstr(from_name)?, cstr(to_name)?);
    // SAFETY: valid C strings.
    check(unsafe { libc::renameat(from, a.as_ptr(), to, b.as_ptr()) }).map(drop)
}

pub fn symlink_at(target: &[u8], dir: RawFd, name: &[u8]) -> io::Result<()> {
    let (t, n) = (cstr(target)?, cstr(name)?);
    // SAFETY: valid C strings.
    check(unsafe { libc::symlinkat(t.as_ptr(), dir, n.as_ptr()) }).map(drop)
}

/// The target of the symlink `fd` (an `O_PATH | O_NOFOLLOW` descriptor).
pub fn readlink_fd(fd: RawFd) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 4097];
    let empty = CString::default();
    // SAFETY: buffer of the given size.
    let n = unsafe { libc::readlinkat(fd, empty.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// Changes owner without following a symlink; `u32::MAX` leaves one unchanged.
pub fn chown_at(dir: RawFd, name: &[u8], uid: u32, gid: u32) -> io::Result<()> {
    let (c, flags) = if name.is_empty() {
        (
            CString::default(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    } else {
        (cstr(name)?, libc::AT_SYMLINK_NOFOLLOW)
    };
    // SAFETY: valid C string.
    check(unsafe { libc::fchownat(dir, c.as_ptr(), uid, gid, flags) }).map(drop)
}

/// Mode of a non-symlink object through its descriptor (`/proc/self/fd` is not used:
/// `fchmod` works on `O_PATH` descriptors since Linux 5.x only through `fchmodat` with
/// an empty path, so the caller passes a real descriptor).
pub fn chmod_fd(fd: RawFd, mode: u32) -> io::Result<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::fchmod(fd, mode & 0o7777) }).map(drop)
}

pub fn truncate_fd(fd: RawFd, size: u64) -> io::Result<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::ftruncate(fd, size as libc::off_t) }).map(drop)
}

/// `None`: leave unchanged; `Some(None)`: now; `Some(Some((s, ns)))`: that time.
pub type TimeSet = Option<Option<(i64, u32)>>;

pub fn utimes_fd(fd: RawFd, atime: TimeSet, mtime: TimeSet) -> io::Result<()> {
    let ts = |t: TimeSet| match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(None) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(Some((s, ns))) => libc::timespec {
            tv_sec: s as libc::time_t,
            tv_nsec: ns as libc::c_long,
        },
    };
    let times = [ts(atime), ts(mtime)];
    // SAFETY: two timespecs.
    check(unsafe { libc::futimens(fd, times.as_ptr()) }).map(drop)
}

pub fn fsync(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::fsync(fd) }).map(drop)
}

pub fn fdatasync(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::fdatasync(fd) }).map(drop)
}

/// A read or write syscall's byte count, the call repeated while a signal interrupts it.
fn transferred(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let n = call();
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

pub fn pwrite(fd: RawFd, data: &[u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < data.len() {
        // SAFETY: reads within data.
        done += transferred(|| unsafe {
            libc::pwrite(
                fd,
                data[done..].as_ptr().cast(),
                data.len() - done,
                (offset + done as u64) as libc::off_t,
            )
        })?;
    }
    Ok(())
}

/// The first offset at or after `offset` that is a hole (`SEEK_HOLE`), for the quota's
/// "does this write allocate?" question.
pub fn next_hole(fd: RawFd, offset: u64) -> io::Result<u64> {
    // SAFETY: plain syscall.
    let r = unsafe { libc::lseek(fd, offset as libc::off_t, libc::SEEK_HOLE) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as u64)
    }
}

/// One directory entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: Vec<u8>,
    pub ino: u64,
    /// The file system's offset of the entry after this one (`telldir` after it): where a
    /// listing resumes. Stable while entries are added and removed (ext4's hash, XFS's
    /// and Btrfs's index, tmpfs's offset map).
    pub next: u64,
}

/// A directory read from an offset with `getdents64`, through its own open file
/// description (never the cached descriptor's offset, which concurrent listings share).
pub struct DirReader {
    fd: OwnedFd,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    done: bool,
}

impl DirReader {
    /// Start reading `dir` after the entry whose [`Entry::next`] is `offset` (0: from the
    /// start). `bytes`: how much to ask the kernel for at a time.
    pub fn at(dir: RawFd, offset: u64, bytes: usize) -> io::Result<DirReader> {
        let fd = open_beneath(dir, b".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        if offset != 0 {
            // SAFETY: plain syscall on our descriptor.
            if unsafe { libc::lseek(fd.as_raw_fd(), offset as libc::off_t, libc::SEEK_SET) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(DirReader {
            fd,
            buf: vec![0u8; bytes.clamp(4096, 1 << 20)],
            pos: 0,
            len: 0,
            done: false,
        })
    }

    /// The next entry (`.` and `..` included), or `None` at the end.
    pub fn next_entry(&mut self) -> io::Result<Option<Entry>> {
        if self.pos >= self.len {
            if self.done {
                return Ok(None);
            }
            // SAFETY: the kernel writes at most buf.len() bytes of linux_dirent64 records.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr(),
                    self.buf.len(),
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                self.done = true;
                return Ok(None);
            }
            self.pos = 0;
            self.len = n as usize;
        }
        // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
        let rec = &self.buf[self.pos..self.len];
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&rec[i..i + 8]);
            u64::from_ne_bytes(a)
        };
        let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
        if reclen < 20 || reclen > rec.len() {
            return Err(io::Error::other("getdents64 returned a malformed record"));
        }
        let name = &rec[19..reclen];
        let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
        let e = Entry {
            name: name.to_vec(),
            ino: u64_at(0),
            next: u64_at(8),
        };
        self.pos += reclen;
        Ok(Some(e))
    }
}

/// Every entry of the directory `fd` except `.` and `..`, in the file system's order.
pub fn list_dir(fd: RawFd) -> io::Result<Vec<Entry>> {
    let mut r = DirReader::at(fd, 0, 64 * 1024)?;
    let mut out = Vec::new();
    while let Some(e) = r.next_entry()? {
        if e.name != b"." && e.name != b".." {
            out.push(e);
        }
    }
    Ok(out)
}

/// Reads up to `count` bytes at `offset` straight into the spare capacity of `out` (no
/// zero-filling, no intermediate buffer) and returns how many were read.
pub fn pread_append(fd: RawFd, out: &mut Vec<u8>, count: usize, offset: u64) -> io::Result<usize> {
    out.reserve(count);
    let start = out.len();
    let mut done = 0;
    while done < count {
        // SAFETY: the kernel writes at most `count - done` bytes into reserved capacity;
        // the length is set only over bytes it wrote.
        let n = transferred(|| unsafe {
            libc::pread(
                fd,
                out.as_mut_ptr().add(start + done).cast(),
                count - done,
                (offset + done as u64) as libc::off_t,
            )
        })?;
        if n == 0 {
            break;
        }
        done += n;
    }
    // SAFETY: bytes start..start+done were written by pread.
    unsafe { out.set_len(start + done) };
    Ok(done)
}
