use super::*;

fn tmpdir(name: &str) -> test_support::TestDir {
    test_support::TestDir::new(&format!("objstore-{name}"))
}

fn put(s: &ObjectStore, key: &str, data: &[u8]) -> ObjInfo {
    let mut w = s
        .writer(
            &ObjectMeta {
                key: key.into(),
                ..Default::default()
            },
            MAX_OBJECT_SIZE,
        )
        .unwrap();
    for c in data.chunks(7) {
        w.write(c).unwrap();
    }
    s.commit(w.finish(Some(data.len() as u64), None).unwrap())
        .unwrap()
}

fn md5_hex(b: &[u8]) -> String {
    format::hex(&md5::Md5::digest(b))
}

#[test]
fn put_get_overwrite_delete_and_reopen() {
    let d = tmpdir("basic");
    let s = ObjectStore::open(&d).unwrap();
    assert!(s.is_empty());
    let a = put(&s, "a/b", b"hello world");
    assert_eq!(a.etag, md5_hex(b"hello world"));
    put(&s, "a", b"x");
    put(&s, "../../etc/passwd", b"not a path");
    // Overwrite keeps one entry and the used bytes follow.
    put(&s, "a", b"xyz");
    assert_eq!(s.count(), 3);
    assert_eq!(s.used(), 11 + 3 + 10);
    let r = s.open_object("a/b").unwrap();
    assert_eq!(r.meta.key, "a/b");
    assert_eq!(r.read(6, 5).unwrap(), b"world");
    assert_eq!(r.head(), b"hello world");
    // Nothing was written outside the bucket directory, and inside it only the store's
    // own layout exists: keys never became paths.
    for e in fs::read_dir(&d).unwrap() {
        let n = e.unwrap().file_name();
        assert!(["objects", "tmp", "uploads"].contains(&n.to_str().unwrap()));
    }
    for e in fs::read_dir(d.join("objects")).unwrap() {
        let n = e.unwrap().file_name();
        assert_eq!(n.len(), 2, "{n:?}");
    }
    assert!(s.delete("a").unwrap());
    assert!(!s.delete("a").unwrap());
    assert!(matches!(s.open_object("a"), Err(ObjError::NoSuchKey)));
    drop(s);
    // A leftover temporary file (a crash mid-PUT) is removed; the index is rebuilt.
    fs::write(d.join("tmp").join("junk"), b"partial").unwrap();
    let s = ObjectStore::open(&d).unwrap();
    assert_eq!(s.count(), 2);
    assert_eq!(s.info("a/b").unwrap(), a);
    assert_eq!(fs::read_dir(d.join("tmp")).unwrap().count(), 0);
    s.destroy().unwrap();
    assert!(!d.exists());
}

#[test]
fn bad_length_digest_and_size_leave_nothing() {
    let d = tmpdir("bad");
    let s = ObjectStore::open(&d).unwrap();
    let meta = ObjectMeta {
        key: "k".into(),
        ..Default::default()
    };
    let mut w = s.writer(&meta, 100).unwrap();
    w.write(b"abc").unwrap();
    assert!(matches!(
        w.finish(Some(4), None),
        Err(ObjError::Incomplete { got: 3, want: 4 })
    ));
    let mut w = s.writer(&meta, 100).unwrap();
    w.write(b"abc").unwrap();
    assert!(matches!(
        w.finish(None, Some([0; 16])),
        Err(ObjError::BadDigest)
    ));
    let mut w = s.writer(&meta, 5).unwrap();
    w.write(b"abc").unwrap();
    assert!(matches!(
        w.write(b"def"),
        Err(ObjError::TooLarge { max: 5 })
    ));
    drop(w);
    // A finished but uncommitted object disappears too.
    let mut w = s.writer(&meta, 100).unwrap();
    w.write(b"abc").unwrap();
    drop(w.finish(Some(3), None).unwrap());
    assert_eq!(fs::read_dir(d.join("tmp")).unwrap().count(), 0);
    assert!(s.is_empty());
    let huge = ObjectMeta {
        key: "k".repeat(MAX_META_LEN + 1),
        ..Default::default()
    };
    assert!(matches!(s.writer(&huge, 1), Err(ObjError::MetaTooLarge)));
    s.destroy().unwrap();
}

fn keys(p: &ListPage) -> (Vec<&str>, Vec<&str>) {
    (
        p.objects.iter().map(|(k, _)| k.as_str()).collect(),
        p.prefixes.iter().map(String::as_str).collect(),
    )
}

#[test]
fn listing_prefix_delimiter_and_pages() {
    let d = tmpdir("list");
    let s = ObjectStore::open(&d).unwrap();
    for k in ["a", "b/1", "b/2", "b/c/3", "c", "d/1"] {
        put(&s, k, k.as_bytes());
    }
    let q = |prefix, delimiter, after, max_keys| ListQuery {
        prefix,
        delimiter,
        after,
        max_keys,
    };
    let all = s.list(&q("", None, None, 1000));
    assert_eq!(keys(&all).0, ["a", "b/1", "b/2", "b/c/3", "c", "d/1"]);
    assert!(!all.truncated && all.next_after.is_none());
    let top = s.list(&q("", Some("/"), None, 1000));
    assert_eq!(keys(&top), (vec!["a", "c"], vec!["b/", "d/"]));
    let under_b = s.list(&q("b/", Some("/"), None, 1000));
    assert_eq!(keys(&under_b), (vec!["b/1", "b/2"], vec!["b/c/"]));
    // Pages of two: prefixes count like keys and a page may end on one.
    let p1 = s.list(&q("", Some("/"), None, 2));
    assert_eq!(keys(&p1), (vec!["a"], vec!["b/"]));
    assert!(p1.truncated);
    assert_eq!(p1.next_after.as_deref(), Some("b/"));
    let p2 = s.list(&q("", Some("/"), p1.next_after.as_deref(), 2));
    assert_eq!(keys(&p2), (vec!["c"], vec!["d/"]));
    assert!(!p2.truncated);
    let p = s.list(&q("", None, Some("b/2"), 2));
    assert_eq!(keys(&p).0, ["b/c/3", "c"]);
    assert!(p.truncated);
    assert_eq!(s.list(&q("zz", None, None, 10)), ListPage::default());
    assert_eq!(s.list(&q("", None, None, 0)), ListPage::default());
    s.destroy().unwrap();
}

#[test]
fn multipart_copies_parts_with_s3_etag() {
    let d = tmpdir("mpu");
    let s = ObjectStore::open(&d).unwrap();
    let meta = ObjectMeta {
        key: "big".into(),
        content_type: Some("application/x-test".into()),
        ..Default::default()
    };
    let id = s.create_upload(&meta).unwrap();
    assert!(!s.is_empty());
    let p1: Vec<u8> = (0..MIN_PART_SIZE as usize)
        .map(|i| (i % 251) as u8)
        .collect();
    let p2 = b"tail".to_vec();
    let mut etags = Vec::new();
    for (n, data) in [(1u32, &p1), (2, &p2)] {
        let mut w = s.part_writer(&id, "big", n, MAX_OBJECT_SIZE).unwrap();
        w.write(data).unwrap();
        let info = s
            .commit_part(&id, n, w.finish(Some(data.len() as u64), None).unwrap())
            .unwrap();
        assert_eq!(info.etag, md5_hex(data));
        etags.push((n, format!("\"{}\"", info.etag)));
    }
    assert_eq!(s.list_parts(&id).unwrap().1.len(), 2);
    assert_eq!(s.list_uploads().len(), 1);
    // Out of order, a wrong ETag, a missing part, a small non-last part: refused.
    let rev: Vec<_> = etags.iter().rev().cloned().collect();
    assert!(matches!(
        s.complete_upload(&id, "big", &rev),
        Err(ObjError::InvalidPartOrder)
    ));
    let wrong = vec![(1, "\"00\"".to_string())];
    assert!(matches!(
        s.complete_upload(&id, "big", &wrong),
        Err(ObjError::InvalidPart(_))
    ));
    let missing = vec![(3, "\"00\"".to_string())];
    assert!(matches!(
        s.complete_upload(&id, "big", &missing),
        Err(ObjError::InvalidPart(_))
    ));
    let small = vec![etags[1].clone(), (3, "x".into())];
    assert!(matches!(
        s.complete_upload(&id, "big", &small),
        Err(ObjError::PartTooSmall { part: 2, size: 4 })
    ));
    assert!(matches!(
        s.complete_upload("not-an-id", "big", &etags),
        Err(ObjError::NoSuchUpload)
    ));
    let info = s.complete_upload(&id, "big", &etags).unwrap();
    let mut cat = md5::Md5::new();
    cat.update(md5::Md5::digest(&p1));
    cat.update(md5::Md5::digest(&p2));
    assert_eq!(info.etag, format!("{}-2", format::hex(&cat.finalize())));
    assert_eq!(info.size, p1.len() as u64 + 4);
    let r = s.open_object("big").unwrap();
    assert_eq!(r.meta.content_type.as_deref(), Some("application/x-test"));
    assert_eq!(
        r.read(MIN_PART_SIZE - 2, 6).unwrap(),
        [p1[p1.len() - 2], p1[p1.len() - 1], b't', b'a', b'i', b'l']
    );
    assert!(s.list_uploads().is_empty());
    assert!(matches!(s.abort_upload(&id), Err(ObjError::NoSuchUpload)));
    let id2 = s.create_upload(&meta).unwrap();
    s.abort_upload(&id2).unwrap();
    assert_eq!(s.count(), 1);
    s.destroy().unwrap();
}

#[test]
fn a_closed_bucket_commits_nothing() {
    let d = tmpdir("closed");
    let s = ObjectStore::open(&d).unwrap();
    put(&s, "k", b"x");
    assert!(!s.close_if_empty(), "not empty: stays open");
    assert!(s.delete("k").unwrap());
    // A write in flight when the bucket is closed cannot be acknowledged.
    let mut w = s
        .writer(
            &ObjectMeta {
                key: "late".into(),
                ..Default::default()
            },
            100,
        )
        .unwrap();
    w.write(b"late").unwrap();
    let fin = w.finish(Some(4), None).unwrap();
    assert!(s.close_if_empty());
    assert!(matches!(s.commit(fin), Err(ObjError::Closed)));
    assert!(matches!(
        s.create_upload(&ObjectMeta::default()),
        Err(ObjError::Closed)
    ));
    assert!(s.is_empty());
    s.reopen();
    put(&s, "k", b"y");
    s.destroy().unwrap();
}
