//! Request bodies into the object store (with the checksums clients send), and object
//! data back out as response bodies of exact length.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use s3s::checksum::ChecksumHasher;
use s3s::dto::{Checksum, ChecksumAlgorithm, StreamingBlob};
use s3s::stream::{ByteStream, RemainingLength};
use s3s::{crypto::Checksum as _, S3Error, S3ErrorCode, S3Result, TrailingHeaders};
use storage_node::objstore::{ObjectReader, ObjectWriter};

use crate::errors;

/// Checksums a client declared, in headers or (aws-chunked) trailers.
#[derive(Default)]
pub(crate) struct Declared {
    pub header: Checksum,
    pub algorithm: Option<ChecksumAlgorithm>,
    pub trailers: Option<TrailingHeaders>,
}

fn hasher_for(d: &Declared) -> ChecksumHasher {
    let mut h = ChecksumHasher::default();
    let algo = d
        .algorithm
        .as_ref()
        .map(|a| a.as_str().to_ascii_uppercase());
    let want = |present: bool, name: &str| present || algo.as_deref() == Some(name);
    if want(d.header.checksum_crc32.is_some(), "CRC32") {
        h.crc32 = Some(s3s::crypto::Crc32::new());
    }
    if want(d.header.checksum_crc32c.is_some(), "CRC32C") {
        h.crc32c = Some(s3s::crypto::Crc32c::new());
    }
    if want(d.header.checksum_sha1.is_some(), "SHA1") {
        h.sha1 = Some(s3s::crypto::Sha1::new());
    }
    if want(d.header.checksum_sha256.is_some(), "SHA256") {
        h.sha256 = Some(s3s::crypto::Sha256::new());
    }
    if want(d.header.checksum_crc64nvme.is_some(), "CRC64NVME") {
        h.crc64nvme = Some(s3s::crypto::Crc64Nvme::new());
    }
    h
}

/// Stream `body` into `w` (at most the writer's limit), then check the declared
/// checksums. Returns the checksums computed (for the response).
pub(crate) async fn receive(
    body: Option<StreamingBlob>,
    w: &mut ObjectWriter,
    declared: Declared,
) -> S3Result<Checksum> {
    let mut hasher = hasher_for(&declared);
    if let Some(mut body) = body {
        loop {
            let next = tokio::time::timeout(crate::BODY_IDLE_TIMEOUT, body.next()).await;
            let Ok(next) = next else {
                return Err(s3s::s3_error!(
                    RequestTimeout,
                    "no byte of the request body arrived for {} s",
                    crate::BODY_IDLE_TIMEOUT.as_secs()
                ));
            };
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| errors::from_body(e.as_ref()))?;
            hasher.update(&chunk);
            w.write(&chunk).map_err(errors::from_obj)?;
        }
    }
    let got = hasher.finalize();
    let mut want = declared.header;
    if let Some(t) = &declared.trailers {
        t.read(|h| {
            let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
            for (slot, name) in [
                (&mut want.checksum_crc32, "x-amz-checksum-crc32"),
                (&mut want.checksum_crc32c, "x-amz-checksum-crc32c"),
                (&mut want.checksum_sha1, "x-amz-checksum-sha1"),
                (&mut want.checksum_sha256, "x-amz-checksum-sha256"),
                (&mut want.checksum_crc64nvme, "x-amz-checksum-crc64nvme"),
            ] {
                *slot = slot.take().or_else(|| get(name));
            }
        });
    }
    let pairs = [
        ("CRC32", &want.checksum_crc32, &got.checksum_crc32),
        ("CRC32C", &want.checksum_crc32c, &got.checksum_crc32c),
        ("SHA1", &want.checksum_sha1, &got.checksum_sha1),
        ("SHA256", &want.checksum_sha256, &got.checksum_sha256),
        (
            "CRC64NVME",
            &want.checksum_crc64nvme,
            &got.checksum_crc64nvme,
        ),
    ];
    for (name, w, g) in pairs {
        if let (Some(w), Some(g)) = (w, g) {
            if w != g {
                return Err(S3Error::with_message(
                    S3ErrorCode::BadDigest,
                    format!("The {name} you specified did not match the calculated checksum."),
                ));
            }
        }
    }
    Ok(got)
}

/// Bytes of one range of an object: in one piece when small, else streamed in 1 MiB
/// reads on the blocking pool. Its length is exact (Content-Length, never chunked).
pub(crate) fn object_body(r: Arc<ObjectReader>, start: u64, len: u64) -> StreamingBlob {
    let head = r.head();
    if start + len <= head.len() as u64 {
        let b = Bytes::copy_from_slice(&head[start as usize..(start + len) as usize]);
        return StreamingBlob::from(s3s::Body::from(b));
    }
    const CHUNK: u64 = 1 << 20;
    let stream = futures::stream::unfold((r, start, start + len), |(r, pos, end)| async move {
        if pos >= end {
            return None;
        }
        let n = (end - pos).min(CHUNK) as usize;
        let r2 = r.clone();
        let res = tokio::task::spawn_blocking(move || r2.read(pos, n))
            .await
            .map_err(std::io::Error::other)
            .and_then(|x| x)
            .map(Bytes::from);
        // After an error the stream ends (the client sees a short body and retries).
        let next = if res.is_ok() { pos + n as u64 } else { end };
        Some((res, (r, next, end)))
    });
    StreamingBlob::new(Exact {
        inner: Box::pin(stream),
        left: len as usize,
    })
}

type Inner = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send + Sync>>;

/// A byte stream that knows how many bytes remain (so the response has a Content-Length).
struct Exact {
    inner: Inner,
    left: usize,
}

impl Stream for Exact {
    type Item = Result<Bytes, s3s::StdError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(b))) => {
                self.left = self.left.saturating_sub(b.len());
                Poll::Ready(Some(Ok(b)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, None)
    }
}

impl ByteStream for Exact {
    fn remaining_length(&self) -> RemainingLength {
        RemainingLength::new_exact(self.left)
    }
}
