//! The S3 operations qoslab serves (the [`S3`] trait of s3s); object and multipart
//! operations are in `objects` and `multipart`, bucket operations here.
//!
//! Every operation on a bucket passes the bucket's QoS flow first ([`Endpoint::admit`]):
//! one operation carrying its payload bytes (a PUT's or part's body, a GET's range), then
//! it is recorded in the bucket's statistics (GET = read, PUT and parts = write, the rest
//! other) with its latency and QoS waits.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use storage_node::admission::{Direction, Work};
use storage_node::catalog::BucketError;

use crate::context::{timestamp, Endpoint};
use crate::errors;

#[async_trait::async_trait]
impl S3 for Endpoint {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let prefix = req.input.prefix.clone().unwrap_or_default();
        let buckets = self
            .catalog
            .buckets()
            .into_iter()
            .filter(|(n, _)| n.starts_with(&prefix))
            .map(|(name, created)| s3s::dto::Bucket {
                name: Some(name),
                creation_date: Some(timestamp(created)),
                bucket_region: None,
            })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            owner: Some(self.owner(req.credentials.as_ref())),
            ..Default::default()
        }))
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let name = req.input.bucket;
        let catalog = self.catalog.clone();
        let n = name.clone();
        Endpoint::on_pool(move || catalog.create_bucket(&n))
            .await?
            .map_err(|e| match e {
                BucketError::Exists(_) => s3_error!(
                    BucketAlreadyOwnedByYou,
                    "Your previous request to create the named bucket succeeded and you already own it."
                ),
                BucketError::Invalid(m) => s3_error!(InvalidBucketName, "{}", m),
                e => s3_error!(InternalError, "{}", e),
            })?;
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{name}")),
        }))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let catalog = self.catalog.clone();
        let name = req.input.bucket;
        Endpoint::on_pool(move || catalog.delete_bucket(&name))
            .await?
            .map_err(errors::from_bucket)?;
        Ok(S3Response::new(DeleteBucketOutput {}))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        let a = self
            .admit(&req.input.bucket, Work::Meta(Direction::Read))
            .await?;
        a.done().await;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> S3Result<S3Response<GetBucketVersioningOutput>> {
        self.bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketVersioningOutput::default()))
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        crate::objects::put_object(self, req).await
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        crate::objects::get_object(self, req).await
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        crate::objects::head_object(self, req).await
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        crate::objects::delete_object(self, req).await
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        crate::objects::delete_objects(self, req).await
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        crate::objects::list_objects_v2(self, req).await
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        crate::objects::list_objects(self, req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        crate::multipart::create(self, req).await
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        crate::multipart::upload_part(self, req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        crate::multipart::complete(self, req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        crate::multipart::abort(self, req).await
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        crate::multipart::list_parts(self, req).await
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        crate::multipart::list_uploads(self, req).await
    }
}
