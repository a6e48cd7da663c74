//! Signature V4 keys: the control plane's S3 users (looked up per request, lock-free
//! for readers but one `RwLock` read).

use std::sync::Arc;

use control_plane::api::ControlPlane;
use s3s::auth::{S3Auth, SecretKey};
use s3s::{s3_error, S3Result};

pub(crate) struct Keys(pub Arc<ControlPlane>);

#[async_trait::async_trait]
impl S3Auth for Keys {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        match self.0.s3_secret(access_key) {
            Some((secret, _user)) => Ok(SecretKey::from(secret)),
            None => Err(s3_error!(
                InvalidAccessKeyId,
                "The AWS access key Id you provided does not exist in our records."
            )),
        }
    }
}
