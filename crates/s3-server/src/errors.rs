//! The one place where the node's errors become S3 error codes.

use s3s::{s3_error, S3Error, S3ErrorCode};
use storage_node::catalog::BucketError;
use storage_node::objstore::ObjError;

/// An object-store error as S3 reports it.
pub fn from_obj(e: ObjError) -> S3Error {
    let m = e.to_string();
    match e {
        ObjError::NoSuchKey => s3_error!(NoSuchKey, "The specified key does not exist."),
        ObjError::NoSuchUpload => S3Error::with_message(S3ErrorCode::NoSuchUpload, m),
        ObjError::TooLarge { .. } => S3Error::with_message(S3ErrorCode::EntityTooLarge, m),
        ObjError::Incomplete { .. } => S3Error::with_message(S3ErrorCode::IncompleteBody, m),
        ObjError::BadDigest => S3Error::with_message(S3ErrorCode::BadDigest, m),
        ObjError::InvalidPart(_) => S3Error::with_message(S3ErrorCode::InvalidPart, m),
        ObjError::InvalidPartOrder => S3Error::with_message(S3ErrorCode::InvalidPartOrder, m),
        ObjError::PartTooSmall { .. } => S3Error::with_message(S3ErrorCode::EntityTooSmall, m),
        ObjError::MetaTooLarge => S3Error::with_message(S3ErrorCode::MetadataTooLarge, m),
        ObjError::Closed => S3Error::with_message(S3ErrorCode::NoSuchBucket, m),
        ObjError::Corrupt { .. } | ObjError::Io(_) => {
            tracing::error!("s3: storage error: {m}");
            S3Error::with_message(S3ErrorCode::InternalError, m)
        }
    }
}

/// A bucket catalog error as S3 reports it.
pub fn from_bucket(e: BucketError) -> S3Error {
    let m = e.to_string();
    let code = match e {
        BucketError::Exists(_) => S3ErrorCode::BucketAlreadyOwnedByYou,
        BucketError::NotFound(_) => S3ErrorCode::NoSuchBucket,
        BucketError::NotEmpty(_) => S3ErrorCode::BucketNotEmpty,
        BucketError::Invalid(_) => S3ErrorCode::InvalidBucketName,
        BucketError::Internal(_) => S3ErrorCode::InternalError,
    };
    S3Error::with_message(code, m)
}

/// An error from a request body stream (the client went away mid-body, or s3s found the
/// payload's SHA-256 or a chunk signature wrong).
pub fn from_body(e: &(dyn std::error::Error + 'static)) -> S3Error {
    let m = e.to_string();
    if m.contains("Sha256Mismatch") {
        let mut e = S3Error::with_message(
            S3ErrorCode::Custom("XAmzContentSHA256Mismatch".into()),
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        );
        e.set_status_code(hyper::StatusCode::BAD_REQUEST);
        e
    } else if m.contains("SignatureMismatch") {
        S3Error::with_message(
            S3ErrorCode::SignatureDoesNotMatch,
            "a chunk signature does not match",
        )
    } else {
        S3Error::with_message(
            S3ErrorCode::IncompleteBody,
            format!("the request body ended early or was malformed: {m}"),
        )
    }
}

/// A failed blocking task (a panic in the store: a bug).
pub fn join(e: tokio::task::JoinError) -> S3Error {
    tracing::error!("s3: storage task failed: {e}");
    S3Error::with_message(S3ErrorCode::InternalError, "storage task failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        let cases: Vec<(ObjError, &str)> = vec![
            (ObjError::NoSuchKey, "NoSuchKey"),
            (ObjError::NoSuchUpload, "NoSuchUpload"),
            (ObjError::TooLarge { max: 1 }, "EntityTooLarge"),
            (ObjError::Incomplete { got: 1, want: 2 }, "IncompleteBody"),
            (ObjError::BadDigest, "BadDigest"),
            (ObjError::InvalidPart("x".into()), "InvalidPart"),
            (ObjError::InvalidPartOrder, "InvalidPartOrder"),
            (
                ObjError::PartTooSmall { part: 1, size: 2 },
                "EntityTooSmall",
            ),
            (ObjError::MetaTooLarge, "MetadataTooLarge"),
            (ObjError::Closed, "NoSuchBucket"),
            (ObjError::Io(std::io::Error::other("x")), "InternalError"),
        ];
        for (e, want) in cases {
            assert_eq!(from_obj(e).code().as_str(), want);
        }
        assert_eq!(
            from_bucket(BucketError::NotEmpty("b".into()))
                .code()
                .as_str(),
            "BucketNotEmpty"
        );
        assert_eq!(
            from_bucket(BucketError::Exists("b".into())).code().as_str(),
            "BucketAlreadyOwnedByYou"
        );
        let e = std::io::Error::other("UploadStreamError: Sha256Mismatch");
        let m = from_body(&e);
        assert_eq!(m.code().as_str(), "XAmzContentSHA256Mismatch");
        assert_eq!(m.status_code(), Some(hyper::StatusCode::BAD_REQUEST));
        let e = std::io::Error::other("connection closed before message completed");
        assert_eq!(from_body(&e).code().as_str(), "IncompleteBody");
    }
}
