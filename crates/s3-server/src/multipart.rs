//! Multipart uploads: create, upload part, complete, abort, list parts and uploads.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};
use storage_node::admission::{Direction, Work};
use storage_node::objstore::MAX_PART_NUMBER;

use crate::body;
use crate::context::{timestamp, Endpoint};
use crate::fields::{declared, object_meta, with_checksums};
use crate::objects::{body_len, check_key, content_md5, etag};

pub(crate) async fn create(
    ep: &Endpoint,
    req: S3Request<CreateMultipartUploadInput>,
) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
    let i = req.input;
    check_key(&i.key)?;
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Write)).await?;
    let meta = object_meta!(i);
    let id = a.on_store(move |s| s.create_upload(&meta)).await?;
    a.done().await;
    Ok(S3Response::new(CreateMultipartUploadOutput {
        bucket: Some(i.bucket),
        key: Some(i.key),
        upload_id: Some(id),
        ..Default::default()
    }))
}

fn part_number(n: i32) -> S3Result<u32> {
    if n < 1 || n as u32 > MAX_PART_NUMBER {
        return Err(s3_error!(
            InvalidArgument,
            "Part number must be an integer between 1 and {MAX_PART_NUMBER}, inclusive"
        ));
    }
    Ok(n as u32)
}

pub(crate) async fn upload_part(
    ep: &Endpoint,
    req: S3Request<UploadPartInput>,
) -> S3Result<S3Response<UploadPartOutput>> {
    let i = req.input;
    check_key(&i.key)?;
    let n = part_number(i.part_number)?;
    let len = body_len(ep, i.content_length)?;
    let md5 = content_md5(i.content_md5.as_deref())?;
    let declared = declared!(i, req.trailing_headers);
    let a = ep.admit(&i.bucket, Work::Write(len)).await?;
    let res = async {
        let (id, key) = (i.upload_id.clone(), i.key.clone());
        let max = ep.opts.max_object_size;
        let mut w = a
            .on_store(move |s| s.part_writer(&id, &key, n, max))
            .await?;
        let sums = body::receive(i.body, &mut w, declared).await?;
        let id = i.upload_id.clone();
        let info = a
            .on_store(move |s| {
                let fin = w.finish(Some(len), md5)?;
                s.commit_part(&id, n, fin)
            })
            .await?;
        Ok::<_, s3s::S3Error>((info, sums))
    }
    .await;
    let (info, sums) = a.settle(res).await?;
    Ok(S3Response::new(with_checksums!(
        UploadPartOutput {
            e_tag: Some(etag(&info.etag)),
        },
        sums
    )))
}

pub(crate) async fn complete(
    ep: &Endpoint,
    req: S3Request<CompleteMultipartUploadInput>,
) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
    let i = req.input;
    check_key(&i.key)?;
    let mut parts = Vec::new();
    for p in i.multipart_upload.and_then(|m| m.parts).unwrap_or_default() {
        let n = part_number(
            p.part_number
                .ok_or_else(|| s3_error!(MalformedXML, "every Part needs a PartNumber"))?,
        )?;
        let e = p
            .e_tag
            .ok_or_else(|| s3_error!(MalformedXML, "every Part needs an ETag"))?;
        parts.push((n, e.value().to_string()));
    }
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Write)).await?;
    let (id, key) = (i.upload_id.clone(), i.key.clone());
    let info = a
        .on_store(move |s| s.complete_upload(&id, &key, &parts))
        .await;
    let info = a.settle(info).await?;
    Ok(S3Response::new(CompleteMultipartUploadOutput {
        bucket: Some(i.bucket.clone()),
        key: Some(i.key.clone()),
        e_tag: Some(etag(&info.etag)),
        location: Some(format!("/{}/{}", i.bucket, i.key)),
        ..Default::default()
    }))
}

pub(crate) async fn abort(
    ep: &Endpoint,
    req: S3Request<AbortMultipartUploadInput>,
) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
    let i = req.input;
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Write)).await?;
    a.on_store(move |s| s.abort_upload(&i.upload_id)).await?;
    a.done().await;
    Ok(S3Response::new(AbortMultipartUploadOutput::default()))
}

pub(crate) async fn list_parts(
    ep: &Endpoint,
    req: S3Request<ListPartsInput>,
) -> S3Result<S3Response<ListPartsOutput>> {
    let i = req.input;
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Read)).await?;
    let id = i.upload_id.clone();
    let (key, all) = a.on_store(move |s| s.list_parts(&id)).await?;
    if key != i.key {
        return Err(s3_error!(
            NoSuchUpload,
            "The specified upload does not exist for this key."
        ));
    }
    let after = i.part_number_marker.unwrap_or(0).max(0) as u32;
    let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
    let rest: Vec<_> = all.into_iter().filter(|p| p.number > after).collect();
    let truncated = rest.len() > max;
    let page: Vec<_> = rest.into_iter().take(max).collect();
    a.done().await;
    Ok(S3Response::new(ListPartsOutput {
        bucket: Some(i.bucket),
        key: Some(i.key),
        upload_id: Some(i.upload_id),
        is_truncated: Some(truncated),
        max_parts: Some(max as i32),
        next_part_number_marker: page.last().map(|p| p.number as i32),
        part_number_marker: i.part_number_marker,
        parts: Some(
            page.iter()
                .map(|p| Part {
                    part_number: Some(p.number as i32),
                    size: Some(p.size as i64),
                    e_tag: Some(etag(&p.etag)),
                    last_modified: Some(timestamp(p.mtime_ns)),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }))
}

pub(crate) async fn list_uploads(
    ep: &Endpoint,
    req: S3Request<ListMultipartUploadsInput>,
) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
    let i = req.input;
    let a = ep.admit(&i.bucket, Work::Meta(Direction::Read)).await?;
    let prefix = i.prefix.clone().unwrap_or_default();
    let all = a.on_store(move |s| Ok(s.list_uploads())).await?;
    let max = i.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
    let sel: Vec<_> = all
        .into_iter()
        .filter(|u| u.key.starts_with(&prefix))
        .collect();
    let truncated = sel.len() > max;
    a.done().await;
    Ok(S3Response::new(ListMultipartUploadsOutput {
        bucket: Some(i.bucket),
        prefix: Some(prefix),
        max_uploads: Some(max as i32),
        is_truncated: Some(truncated),
        uploads: Some(
            sel.into_iter()
                .take(max)
                .map(|u| MultipartUpload {
                    key: Some(u.key),
                    upload_id: Some(u.id),
                    initiated: Some(timestamp(u.initiated_ns)),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }))
}
