//! The attributes READ and WRITE serve from an object's last `fstat`
//! (`nfs_server::attr_cache`): right after every WRITE and SETATTR through the server,
//! and within `ATTR_TTL` of a change made behind its back.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use common::*;
use nfs_proto::client::{args, sattr};
use nfs_proto::nfs3::{proc_, StableHow};
use nfs_proto::xdr::{put_opaque, put_u32, Reader};
use nfs_server::attr_cache::ATTR_TTL;

/// What a test checks of a `fattr3`.
#[derive(Debug, PartialEq, Eq)]
struct Attrs {
    mode: u32,
    nlink: u32,
    size: u64,
    mtime: (u32, u32),
    ctime: (u32, u32),
}

fn fattr(rd: &mut Reader<'_>) -> Attrs {
    rd.u32("type").unwrap();
    let mode = rd.u32("mode").unwrap();
    let nlink = rd.u32("nlink").unwrap();
    for w in ["uid", "gid"] {
        rd.u32(w).unwrap();
    }
    let size = rd.u64("size").unwrap();
    for w in ["used", "rdev", "fsid", "fileid"] {
        rd.u64(w).unwrap();
    }
    let t = |rd: &mut Reader<'_>| (rd.u32("s").unwrap(), rd.u32("ns").unwrap());
    let _atime = t(rd);
    let mtime = t(rd);
    let ctime = t(rd);
    Attrs {
        mode,
        nlink,
        size,
        mtime,
        ctime,
    }
}

/// READ's post-operation attributes and data.
fn read(c: &mut Client, fh: &[u8], offset: u64, count: u32) -> (Attrs, Vec<u8>) {
    let r = c.nfs(proc_::READ, &args::read(fh, offset, count));
    assert_eq!(r.accept, 0);
    let mut rd = r.reader();
    assert_eq!(rd.u32("status").unwrap(), 0, "READ failed");
    assert!(rd.bool("attrs follow").unwrap());
    let a = fattr(&mut rd);
    rd.u32("count").unwrap();
    rd.bool("eof").unwrap();
    (a, rd.opaque(1 << 24, "data").unwrap().to_vec())
}

/// WRITE's pre-operation size and post-operation attributes.
fn write(c: &mut Client, fh: &[u8], offset: u64, data: &[u8]) -> (u64, Attrs) {
    let r = c.nfs(
        proc_::WRITE,
        &args::write(fh, offset, StableHow::Unstable, data),
    );
    assert_eq!(r.accept, 0);
    let mut rd = r.reader();
    assert_eq!(rd.u32("status").unwrap(), 0, "WRITE failed");
    assert!(rd.bool("pre follows").unwrap());
    let pre = rd.u64("pre size").unwrap();
    rd.fixed(16, "pre times").unwrap();
    assert!(rd.bool("post follows").unwrap());
    (pre, fattr(&mut rd))
}

fn setattr(c: &mut Client, fh: &[u8], mode: Option<u32>, size: Option<u64>) {
    let mut a = Vec::new();
    put_opaque(&mut a, fh);
    a.extend_from_slice(&sattr(mode, None, None, size));
    put_u32(&mut a, 0); // no guard
    assert_eq!(c.nfs(proc_::SETATTR, &a).status(), 0, "SETATTR failed");
}

/// The file's attributes as the file system has them now.
fn on_disk(p: &std::path::Path) -> Attrs {
    let m = std::fs::symlink_metadata(p).unwrap();
    Attrs {
        mode: m.mode() & 0o7777,
        nlink: m.nlink() as u32,
        size: m.size(),
        mtime: (m.mtime() as u32, m.mtime_nsec() as u32),
        ctime: (m.ctime() as u32, m.ctime_nsec() as u32),
    }
}

fn masked(mut a: Attrs) -> Attrs {
    a.mode &= 0o7777;
    a
}

#[test]
fn attributes_follow_writes_and_setattrs_at_once() {
    let d = Dir::new("attrcache-own");
    let (svc, _) = serving_vol(d.path(), None);
    let mut c = Client::new(svc);
    let root = c.mnt("/vol").unwrap();
    let f = c.create(&root, "f").unwrap();
    let path = d.path().join("f");
    write(&mut c, &f, 0, &[1; 4096]);
    let (a, _) = read(&mut c, &f, 0, 4096);
    assert_eq!(masked(a), on_disk(&path));

    // A WRITE, then a READ whose bytes do not reach the old end: the attributes are the
    // write's, not the ones remembered by the READ before it.
    let (pre, post) = write(&mut c, &f, 4096, &[2; 8192]);
    assert_eq!(pre, 4096, "pre-operation size");
    assert_eq!(masked(post), on_disk(&path));
    let (a, data) = read(&mut c, &f, 0, 100);
    assert_eq!(data, [1; 100]);
    assert_eq!(masked(a), on_disk(&path), "READ after a WRITE");
    assert_eq!(on_disk(&path).size, 12288);

    // SETATTR of the mode, then of the size: READ and WRITE see them at once.
    setattr(&mut c, &f, Some(0o600), None);
    let (a, _) = read(&mut c, &f, 0, 100);
    assert_eq!(a.mode & 0o7777, 0o600, "READ after SETATTR mode");
    assert_eq!(masked(a), on_disk(&path));
    setattr(&mut c, &f, None, Some(8192));
    let (a, _) = read(&mut c, &f, 0, 100);
    assert_eq!(a.size, 8192, "READ after SETATTR size");
    assert_eq!(masked(a), on_disk(&path));
    let (pre, _) = write(&mut c, &f, 0, &[3; 10]);
    assert_eq!(pre, 8192, "WRITE's pre-operation size after SETATTR size");

    // A hard link made behind the server's back shows after the bound; a REMOVE of it
    // through the server at once.
    std::fs::hard_link(&path, d.path().join("g")).unwrap();
    std::thread::sleep(ATTR_TTL + std::time::Duration::from_millis(50));
    let (a, _) = read(&mut c, &f, 0, 100);
    assert_eq!(a.nlink, 2);
    std::thread::sleep(std::time::Duration::from_millis(20)); // a later ctime
    assert_eq!(c.remove(&root, "g", false), 0);
    let (a, _) = read(&mut c, &f, 0, 100);
    assert_eq!(a.nlink, 1, "READ after REMOVE of a hard link");
    assert_eq!(masked(a), on_disk(&path));

    // A RENAME changes the file's ctime (and keeps its descriptor): READ sees it at once.
    std::thread::sleep(std::time::Duration::from_millis(20)); // a later ctime
    let mut a = args::diropargs(&root, "f");
    a.extend_from_slice(&args::diropargs(&root, "h"));
    assert_eq!(c.nfs(proc_::RENAME, &a).status(), 0, "RENAME failed");
    let (a, _) = read(&mut c, &f, 0, 100);
    assert_eq!(masked(a), on_disk(&d.path().join("h")), "READ after RENAME");
}

#[test]
fn changes_behind_the_servers_back_show_within_the_bound() {
    let d = Dir::new("attrcache-outside");
    let (svc, _) = serving_vol(d.path(), None);
    let mut c = Client::new(svc);
    let root = c.mnt("/vol").unwrap();
    let f = c.create(&root, "f").unwrap();
    let path = d.path().join("f");
    write(&mut c, &f, 0, &[1; 8192]);
    read(&mut c, &f, 0, 4096);

    // Another process extends the file: a READ past the remembered end gets the new
    // bytes at once, with attributes that agree with them.
    {
        use std::io::Write;
        let mut h = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        h.write_all(&[9; 4096]).unwrap();
    }
    let (a, data) = read(&mut c, &f, 8192, 4096);
    assert_eq!(data, [9; 4096], "data is never served from memory");
    assert_eq!(
        a.size, 12288,
        "a READ past the remembered end takes the attributes again"
    );

    // Another process chmods and rewrites in place (same size): within the bound the
    // attributes may be the remembered ones; after it they are the file's.
    read(&mut c, &f, 0, 100);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, [7u8; 12288]).unwrap();
    let (_, data) = read(&mut c, &f, 0, 100);
    assert_eq!(data, [7; 100], "data is never served from memory");
    std::thread::sleep(ATTR_TTL + std::time::Duration::from_millis(50));
    let (a, _) = read(&mut c, &f, 0, 100);
    assert_eq!(masked(a), on_disk(&path), "READ after the bound");
    assert_eq!(on_disk(&path).mode, 0o640);

    // Another process truncates: a WRITE after the bound has the true pre-operation size.
    read(&mut c, &f, 0, 100);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100)
        .unwrap();
    std::thread::sleep(ATTR_TTL + std::time::Duration::from_millis(50));
    let (pre, post) = write(&mut c, &f, 0, &[5; 10]);
    assert_eq!(pre, 100, "WRITE's pre-operation size after the bound");
    assert_eq!(masked(post), on_disk(&path));
}
