//! Object operations: PUT, GET (ranged), HEAD, DELETE, multi-delete, ListObjects v1/v2.

use std::sync::Arc;
use storage_node::admission::{Direction, Work};

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result};
use storage_node::objstore::{ListQuery, ObjInfo};

use crate::body;
use crate::context::{timestamp, Endpoint};
use crate::fields::{declared, object_meta, object_output, with_checksums};

/// S3's longest key.
const MAX_KEY_LEN: usize = 1024;
/// S3's most keys per listing page and per multi-delete.
const MAX_KEYS: usize = 1000;

pub(crate) fn check_key(key: &str) -> S3Result<()> {
    if key.is_empty() {
        return Err(s3_error!(InvalidArgument, "the object key is empty"));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(s3_error!(
            KeyTooLongError,
            "Your key is too long: {} bytes, the maximum is {MAX_KEY_LEN}",
            key.len()
        ));
    }
    Ok(())
}

/// The announced body length, checked against the endpoint's limit before any byte is read.
pub(crate) fn body_len(ep: &Endpoint, content_length: Option<i64>) -> S3Result<u64> {
    let len = content_length.ok_or_else(|| {
        s3_error!(
            MissingContentLength,
            "You must provide the Content-Length HTTP header."
        )
    })?;
    let len = u64::try_from(len)
        .map_err(|_| s3_error!(InvalidArgument, "Content-Length {len} is negative"))?;
    if len > ep.opts.max_object_size {
        return Err(s3_error!(
            EntityTooLarge,
            "Your proposed upload of {len} bytes exceeds the maximum allowed size of {} bytes",
            ep.opts.max_object_size
        ));
    }
    Ok(len)
}

/// Content-MD5: base64 of 16 bytes, or InvalidDigest.
pub(crate) fn content_md5(v: Option<&str>) -> S3Result<Option<[u8; 16]>> {
    let Some(v) = v else { return Ok(None) };
    let bytes = base64_simd::STANDARD
        .decode_to_vec(v.trim())
        .map_err(|_| s3_error!(InvalidDigest, "The Content-MD5 you specified is not valid."))?;
    let arr: [u8; 16] = bytes
        .try_into()
        .map_err(|_| s3_error!(InvalidDigest, "The Content-MD5 you specified is not valid."))?;
    Ok(Some(arr))
}

pub(crate) fn etag(s: &str) -> ETag {
    ETag::Strong(s.to_string())
}

pub(crate) async fn put_object(
    ep: &Endpoint,
    req: S3Request<PutObjectInput>,
) -> S3Result<S3Response<PutObjectOutput>> {
    let i = req.input;
    check_key(&i.key)?;
    let len = body_len(ep, i.content_length)?;
    let md5 = content_md5(i.content_md5.as_deref())?;
    let meta = object_meta!(i);
    let declared = declared!(i, req.trailing_headers);
    // QoS first: the client's bytes wait in its socket until the bucket's flow allows them.
    let a = ep.admit(&i.bucket, Work::Write(len)).await?;
    let res = async {
        let mut w = a
            .bucket
            .store
            .writer(&meta, ep.opts.max_object_size)
            .map_err(crate::errors::from_obj)?;
        let sums = body::receive(i.body, &mut w, declared).await?;
        let info = a
            .on_store(move |s| {
                let fin = w.finish(Some(len), md5)?;
                s.commit(fin)
            })
            .await?;
        Ok::<_, S3Error>((info, sums))
    }
    .await;
    let (info, sums) = a.settle(res).await?;
    Ok(S3Response::new(with_checksums!(
        PutObjectOutput {
            e_tag: Some(etag(&info.etag)),
        },
        sums
    )))
}

fn not_modified() -> S3Error {
    S3Error::new(S3ErrorCode::NotModified)
}

/// If-Match / If-None-Match against the object's ETag.
fn conditions(
    etag_now: &str,
    if_match: Option<&ETagCondition>,
    if_none: Option<&ETagCondition>,
) -> S3Result<()> {
    let now = ETag::Strong(etag_now.to_string());
    let hit = |c: &ETagCondition| match c {
        ETagCondition::Any => true,
        ETagCondition::ETag(e) => e.value() == now.value(),
    };
    if let Some(c) = if_match {
        if !hit(c) {
            return Err(s3_error!(
                PreconditionFailed,
                "At least one of the pre-conditions you specified did not hold"
            ));
        }
    }
    if let Some(c) = if_none {
        if hit(c) {
            return Err(not_modified());
        }
    }
    Ok(())
}

pub(crate) async fn get_object(
    ep: &Endpoint,
    req: S3Request<GetObjectInput>,
) -> S3Result<S3Response<GetObjectOutput>> {
    let i = req.input;
    check_key(&i.key)?;
    let b = ep.bucket(&i.bucket)?;
    let key = i.key.clone();
    let r = Arc::new(Endpoint::blocking(move || b.store.open_object(&key)).await?);
    let size = r.size();
    if let Some(p) = i.part_number {
        if p != 1 || r.fixed.parts > 1 {
            return Err(s3_error!(
                NotImplemented,
                "GET with partNumber is only supported for part 1 of a single-part object"
            ));
        }
    }
    let etag_s = r.fixed.etag();
    conditions(&etag_s, i.if_match.as_ref(), i.if_none_match.as_ref())?;
    let (start, len, range) = match &i.range {
        None => (0, size, None),
        Some(rg) => {
            let x = rg.check(size).map_err(|_| {
                s3_error!(
                    InvalidRange,
                    "The requested range is not satisfiable (object size {size})"
                )
            })?;
            (
                x.start,
                x.end - x.start,
                Some(format!("bytes {}-{}/{size}", x.start, x.end - 1)),
            )
        }
    };
    let a = ep.admit(&i.bucket, Work::Read(len)).await?;
    let body = body::object_body(r.clone(), start, len);
    a.done().await;
    Ok(S3Response::new(object_output!(
        GetObjectOutput {
            body: Some(body),
            content_length: Some(len as i64),
            content_range: range,
        },
        *r,
        &etag_s
    )))
}

pub(crate) async fn head_object(
    ep: &Endpoint,
    req: S3Request<HeadObjectInput>,
) -> S3Result<S3Response<HeadObjectOutput>> {
    let i = req.input;
    check_key(&i.key)?;
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Read)).await?;
    let key = i.key.clone();
    let r = a.on_store(move |s| s.open_object(&key)).await?;
    let etag_s = r.fixed.etag();
    conditions(&etag_s, i.if_match.as_ref(), i.if_none_match.as_ref())?;
    a.done().await;
    Ok(S3Response::new(object_output!(
        HeadObjectOutput {
            content_length: Some(r.size() as i64),
        },
        r,
        &etag_s
    )))
}

pub(crate) async fn delete_object(
    ep: &Endpoint,
    req: S3Request<DeleteObjectInput>,
) -> S3Result<S3Response<DeleteObjectOutput>> {
    let i = req.input;
    check_key(&i.key)?;
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Write)).await?;
    a.on_store(move |s| s.delete(&i.key)).await?;
    a.done().await;
    Ok(S3Response::new(DeleteObjectOutput::default()))
}

pub(crate) async fn delete_objects(
    ep: &Endpoint,
    req: S3Request<DeleteObjectsInput>,
) -> S3Result<S3Response<DeleteObjectsOutput>> {
    let i = req.input;
    if i.delete.objects.len() > MAX_KEYS {
        return Err(s3_error!(
            MalformedXML,
            "a DeleteObjects request lists at most {MAX_KEYS} keys, this one {}",
            i.delete.objects.len()
        ));
    }
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Write)).await?;
    let quiet = i.delete.quiet.unwrap_or(false);
    let b = a.bucket.clone();
    let keys: Vec<String> = i.delete.objects.into_iter().map(|o| o.key).collect();
    let results = Endpoint::on_pool(move || {
        keys.into_iter()
            .map(|k| {
                let r = if k.is_empty() || k.len() > MAX_KEY_LEN {
                    Err("InvalidArgument: the key is empty or longer than 1024 bytes".to_string())
                } else {
                    b.store.delete(&k).map(|_| ()).map_err(|e| e.to_string())
                };
                (k, r)
            })
            .collect::<Vec<_>>()
    })
    .await?;
    let mut deleted = Vec::new();
    let mut errors = Vec::new();
    for (k, r) in results {
        match r {
            Ok(()) if !quiet => deleted.push(DeletedObject {
                key: Some(k),
                ..Default::default()
            }),
            Ok(()) => {}
            Err(m) => errors.push(Error {
                code: Some(
                    if m.starts_with("InvalidArgument") {
                        "InvalidArgument"
                    } else {
                        "InternalError"
                    }
                    .into(),
                ),
                key: Some(k),
                message: Some(m),
                version_id: None,
            }),
        }
    }
    a.done().await;
    Ok(S3Response::new(DeleteObjectsOutput {
        deleted: Some(deleted),
        errors: (!errors.is_empty()).then_some(errors),
        ..Default::default()
    }))
}

/// `encoding-type=url`: keys and prefixes percent-encoded in the reply (clients decode).
struct Enc(bool);

impl Enc {
    fn new(e: Option<&EncodingType>) -> S3Result<Enc> {
        match e.map(|e| e.as_str()) {
            None => Ok(Enc(false)),
            Some("url") => Ok(Enc(true)),
            Some(o) => Err(s3_error!(
                InvalidArgument,
                "Invalid Encoding Method specified in Request: {o:?}"
            )),
        }
    }
    fn s(&self, v: &str) -> String {
        if self.0 {
            urlencoding::encode(v).into_owned()
        } else {
            v.to_string()
        }
    }
}

fn max_keys(m: Option<i32>) -> S3Result<usize> {
    match m {
        None => Ok(MAX_KEYS),
        Some(n) if n < 0 => Err(s3_error!(
            InvalidArgument,
            "max-keys must be 0 or more, not {n}"
        )),
        Some(n) => Ok((n as usize).min(MAX_KEYS)),
    }
}

fn object_entry(enc: &Enc, key: &str, info: &ObjInfo) -> Object {
    Object {
        key: Some(enc.s(key)),
        size: Some(info.size as i64),
        e_tag: Some(etag(&info.etag)),
        last_modified: Some(timestamp(info.mtime_ns)),
        storage_class: Some(ObjectStorageClass::from_static(
            ObjectStorageClass::STANDARD,
        )),
        ..Default::default()
    }
}

/// Continuation tokens are the hex of the last key or prefix returned: opaque to
/// clients, checked on the way back in.
fn token(s: &str) -> String {
    storage_node::objstore::format::hex(s.as_bytes())
}

fn untoken(t: &str) -> S3Result<String> {
    let bad = || {
        s3_error!(
            InvalidArgument,
            "The continuation token provided is incorrect"
        )
    };
    if !t.len().is_multiple_of(2) {
        return Err(bad());
    }
    let bytes: Option<Vec<u8>> = (0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(t.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes.ok_or_else(bad)?).map_err(|_| bad())
}

/// One page of a listing (v1 and v2), its entries as S3 answers them.
struct Page {
    contents: Vec<Object>,
    common_prefixes: Vec<CommonPrefix>,
    truncated: bool,
    next_after: Option<String>,
}

/// Pass the bucket's flow (one read operation), then list a page.
async fn list_page(ep: &Endpoint, bucket: &str, q: &ListQuery<'_>, enc: &Enc) -> S3Result<Page> {
    let a = ep.admit(bucket, Work::Meta(Direction::Read)).await?;
    let page = a.bucket.store.list(q);
    a.done().await;
    Ok(Page {
        contents: page
            .objects
            .iter()
            .map(|(k, v)| object_entry(enc, k, v))
            .collect(),
        common_prefixes: page
            .prefixes
            .iter()
            .map(|p| CommonPrefix {
                prefix: Some(enc.s(p)),
            })
            .collect(),
        truncated: page.truncated,
        next_after: page.next_after,
    })
}

pub(crate) async fn list_objects_v2(
    ep: &Endpoint,
    req: S3Request<ListObjectsV2Input>,
) -> S3Result<S3Response<ListObjectsV2Output>> {
    let i = req.input;
    let enc = Enc::new(i.encoding_type.as_ref())?;
    let max = max_keys(i.max_keys)?;
    let after = match (&i.continuation_token, &i.start_after) {
        (Some(t), _) => Some(untoken(t)?),
        (None, Some(s)) => Some(s.clone()),
        (None, None) => None,
    };
    let prefix = i.prefix.clone().unwrap_or_default();
    let q = ListQuery {
        prefix: &prefix,
        delimiter: i.delimiter.as_deref(),
        after: after.as_deref(),
        max_keys: max,
    };
    let page = list_page(ep, &i.bucket, &q, &enc).await?;
    let n = page.contents.len() + page.common_prefixes.len();
    Ok(S3Response::new(ListObjectsV2Output {
        name: Some(i.bucket),
        prefix: Some(enc.s(&prefix)),
        delimiter: i.delimiter.as_deref().map(|d| enc.s(d)),
        max_keys: Some(max as i32),
        key_count: Some(n as i32),
        is_truncated: Some(page.truncated),
        continuation_token: i.continuation_token,
        next_continuation_token: page.next_after.as_deref().map(token),
        start_after: i.start_after.as_deref().map(|s| enc.s(s)),
        encoding_type: i.encoding_type,
        contents: Some(page.contents),
        common_prefixes: Some(page.common_prefixes),
        ..Default::default()
    }))
}

pub(crate) async fn list_objects(
    ep: &Endpoint,
    req: S3Request<ListObjectsInput>,
) -> S3Result<S3Response<ListObjectsOutput>> {
    let i = req.input;
    let enc = Enc::new(i.encoding_type.as_ref())?;
    let max = max_keys(i.max_keys)?;
    let prefix = i.prefix.clone().unwrap_or_default();
    let q = ListQuery {
        prefix: &prefix,
        delimiter: i.delimiter.as_deref(),
        after: i.marker.as_deref(),
        max_keys: max,
    };
    let page = list_page(ep, &i.bucket, &q, &enc).await?;
    Ok(S3Response::new(ListObjectsOutput {
        name: Some(i.bucket),
        prefix: Some(enc.s(&prefix)),
        delimiter: i.delimiter.as_deref().map(|d| enc.s(d)),
        marker: Some(i.marker.as_deref().map(|m| enc.s(m)).unwrap_or_default()),
        max_keys: Some(max as i32),
        is_truncated: Some(page.truncated),
        // S3 returns NextMarker only with a delimiter; clients otherwise use the last key.
        next_marker: i
            .delimiter
            .as_ref()
            .and(page.next_after.as_deref())
            .map(|m| enc.s(m)),
        encoding_type: i.encoding_type,
        contents: Some(page.contents),
        common_prefixes: Some(page.common_prefixes),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_junk() {
        for k in ["", "a/b", "ünïcode/ key%+"] {
            assert_eq!(untoken(&token(k)).unwrap(), k);
        }
        for bad in ["zz", "abc", "ff"] {
            assert!(untoken(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn md5_header() {
        assert_eq!(content_md5(None).unwrap(), None);
        // MD5("") in base64.
        let m = content_md5(Some("1B2M2Y8AsgTpgAmY7PhCfg=="))
            .unwrap()
            .unwrap();
        assert_eq!(m[0], 0xd4);
        assert!(content_md5(Some("not base64!")).is_err());
        assert!(content_md5(Some("AAAA")).is_err());
    }

    #[test]
    fn keys() {
        assert!(check_key("a").is_ok());
        assert!(check_key("").is_err());
        assert_eq!(
            check_key(&"k".repeat(1025)).unwrap_err().code().as_str(),
            "KeyTooLongError"
        );
    }
}
