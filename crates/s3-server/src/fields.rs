//! s3s gives every operation its own input and output types, and several of them carry
//! the same groups of fields (an object's metadata, the checksums). One macro per group,
//! so each group is read or written in one place.

/// An object's metadata from an input that carries it (PutObject, CreateMultipartUpload).
macro_rules! object_meta {
    ($i:ident) => {
        storage_node::objstore::ObjectMeta {
            key: $i.key.clone(),
            content_type: $i.content_type.map(|c| c.to_string()),
            content_encoding: $i.content_encoding,
            content_disposition: $i.content_disposition,
            content_language: $i.content_language,
            cache_control: $i.cache_control,
            user: $i.metadata.unwrap_or_default().into_iter().collect(),
        }
    };
}
pub(crate) use object_meta;

/// The checksums a body-carrying input declares (PutObject, UploadPart), in its headers
/// or in `trailers`.
macro_rules! declared {
    ($i:ident, $trailers:expr) => {
        crate::body::Declared {
            header: s3s::dto::Checksum {
                checksum_crc32: $i.checksum_crc32,
                checksum_crc32c: $i.checksum_crc32c,
                checksum_sha1: $i.checksum_sha1,
                checksum_sha256: $i.checksum_sha256,
                checksum_crc64nvme: $i.checksum_crc64nvme,
                ..Default::default()
            },
            algorithm: $i.checksum_algorithm,
            trailers: $trailers,
        }
    };
}
pub(crate) use declared;

/// An output (`Type { fields }`) with the checksums computed over the body (`sums`).
macro_rules! with_checksums {
    ($out:ident { $($f:ident: $v:expr),* $(,)? }, $sums:expr) => {{
        let sums: s3s::dto::Checksum = $sums;
        $out {
            $($f: $v,)*
            checksum_crc32: sums.checksum_crc32,
            checksum_crc32c: sums.checksum_crc32c,
            checksum_sha1: sums.checksum_sha1,
            checksum_sha256: sums.checksum_sha256,
            checksum_crc64nvme: sums.checksum_crc64nvme,
            ..Default::default()
        }
    }};
}
pub(crate) use with_checksums;

/// An output (`Type { fields }`) describing the object `r` (an `ObjectReader`) whose ETag
/// is `etag` (GetObject, HeadObject).
macro_rules! object_output {
    ($out:ident { $($f:ident: $v:expr),* $(,)? }, $r:expr, $etag:expr) => {{
        let r: &storage_node::objstore::ObjectReader = &$r;
        let m = &r.meta;
        $out {
            $($f: $v,)*
            accept_ranges: Some("bytes".into()),
            e_tag: Some(s3s::dto::ETag::Strong($etag.to_string())),
            last_modified: Some(crate::context::timestamp(r.fixed.mtime_ns)),
            content_type: m.content_type.as_deref().and_then(|c| c.parse().ok()),
            content_encoding: m.content_encoding.clone(),
            content_disposition: m.content_disposition.clone(),
            content_language: m.content_language.clone(),
            cache_control: m.cache_control.clone(),
            metadata: (!m.user.is_empty()).then(|| m.user.clone().into_iter().collect()),
            parts_count: (r.fixed.parts > 0).then_some(r.fixed.parts as i32),
            ..Default::default()
        }
    }};
}
pub(crate) use object_output;
