//! The node's S3 buckets: opened from `DATA_DIR/buckets/NAME`, each put under its QoS
//! policy exactly like a volume — its own flow, or the shared flow of a shared fixed
//! policy (volumes and buckets of one shared policy draw from one budget), and under an
//! emulated controller a flow of the node-wide mClock whatever its policy.

use std::path::PathBuf;
use std::sync::Arc;

use qos_core::{Allocation, Policy};

use super::Node;
use crate::bucket::Bucket;
use crate::errors::NodeError;
use crate::locks::{read, write};
use crate::objstore::ObjectStore;
use crate::scheduler::NO_FLOW;

impl Node {
    /// Where bucket `name` keeps its objects.
    pub fn bucket_dir(&self, name: &str) -> PathBuf {
        self.data_dir.join("buckets").join(name)
    }

    /// Open (creating if missing) bucket `name` and put it under `policy`. Serves S3
    /// requests as soon as this returns.
    pub fn open_bucket(
        &self,
        name: &str,
        uuid: &str,
        size: u64,
        policy: Option<String>,
    ) -> Result<Arc<Bucket>, NodeError> {
        self.check_policy(&policy)?;
        let store =
            ObjectStore::open(&self.bucket_dir(name)).map_err(|source| NodeError::Bucket {
                name: name.to_string(),
                source,
            })?;
        let b = Arc::new(Bucket::new(name.to_string(), uuid.to_string(), size, store));
        write(&self.buckets).insert(name.to_string(), b.clone());
        self.assign_bucket_policy(&b, policy)?;
        Ok(b)
    }

    /// Take a bucket out of service (S3 requests get NoSuchBucket); the caller removes
    /// its directory.
    pub fn remove_bucket(&self, name: &str) -> Option<Arc<Bucket>> {
        let b = write(&self.buckets).remove(name)?;
        let _ = self.assign_bucket_policy(&b, None);
        Some(b)
    }

    pub fn bucket(&self, name: &str) -> Option<Arc<Bucket>> {
        read(&self.buckets).get(name).cloned()
    }

    /// All buckets, sorted by name.
    pub fn buckets(&self) -> Vec<Arc<Bucket>> {
        read(&self.buckets).values().cloned().collect()
    }

    /// Buckets under policy `name`.
    pub fn bucket_members(&self, name: &str) -> Vec<Arc<Bucket>> {
        self.buckets()
            .into_iter()
            .filter(|b| b.policy().as_deref() == Some(name))
            .collect()
    }

    /// Change a bucket's declared size (an adaptive policy's allocated space).
    pub fn resize_bucket(&self, b: &Bucket, size: u64) {
        b.set_size(size);
        self.recompute_bucket(b);
    }

    /// Put `b` under `policy` (or none), recomputing its limits and flow.
    pub fn assign_bucket_policy(
        &self,
        b: &Bucket,
        policy: Option<String>,
    ) -> Result<(), NodeError> {
        self.check_policy(&policy)?;
        let old_flow = b.flow();
        b.set_flow(NO_FLOW);
        self.release_flow(b.policy(), old_flow);
        b.set_policy(policy);
        self.recompute_bucket(b);
        Ok(())
    }

    /// Recompute a bucket's limits and push them to the scheduler (the same rules as a
    /// volume's: [`Node::limits_of`]).
    pub fn recompute_bucket(&self, b: &Bucket) {
        let now = self.clock.now();
        let policy = b.policy().and_then(|p| self.policy(&p).map(|pol| (p, pol)));
        let limits = self.limits_of(policy.as_ref().map(|(_, p)| p), &b.space());
        b.set_limits(limits);
        b.set_flow(self.place_flow(policy, &limits, b.flow(), now));
    }

    /// Recompute buckets whose adaptive policy follows used space and whose stored
    /// bytes moved (called with the volumes' used-space refresh).
    pub(super) fn refresh_bucket_used_space(&self) {
        for b in self.buckets() {
            let follows_used = matches!(
                b.policy().and_then(|p| self.policy(&p)),
                Some(Policy::Adaptive(a)) if a.peak_allocation == Allocation::UsedSpace
                    || a.expected_allocation == Allocation::UsedSpace
            );
            if b.used_moved() && follows_used {
                self.recompute_bucket(&b);
            }
        }
    }
}
