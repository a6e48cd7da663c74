//! Signature V4 keys: the catalog's S3 users (the control plane's; looked up per
//! request, lock-free for readers but one `RwLock` read).

use std::sync::Arc;

use s3s::auth::{S3Auth, SecretKey};
use s3s::{s3_error, S3Result};
use storage_node::catalog::BucketCatalog;

pub(crate) struct Keys(pub Arc<dyn BucketCatalog>);

#[async_trait::async_trait]
impl S3Auth for Keys {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        match self.0.secret(access_key) {
            Some((secret, _user)) => Ok(SecretKey::from(secret)),
            None => Err(s3_error!(
                InvalidAccessKeyId,
                "The AWS access key Id you provided does not exist in our records."
            )),
        }
    }
}
