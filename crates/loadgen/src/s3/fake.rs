//! An in-memory object store with a fixed service time per request, on tokio's clock: the
//! driver's logic and the analysis are unit-tested against it in paused time (C clients at
//! a service time L give exactly C/L requests per second).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Bytes;
use tokio::time::Instant;

use super::target::{
    Created, Listed, ObjectClient, ObjectTarget, Page, S3Error, S3Future, Transfer,
};

#[derive(Default)]
struct State {
    buckets: BTreeMap<String, BTreeMap<String, u64>>,
    requests: u64,
}

/// The store; clones share it.
#[derive(Clone)]
pub struct FakeStore {
    state: Arc<Mutex<State>>,
    /// Service time of every request.
    pub latency: Duration,
    /// A GET's first byte, after the request starts.
    pub ttfb: Duration,
    /// Added per MiB moved (PUT and GET bodies).
    pub per_mib: Duration,
}

impl FakeStore {
    pub fn new(latency: Duration, ttfb: Duration) -> FakeStore {
        FakeStore {
            state: Arc::default(),
            latency,
            ttfb,
            per_mib: Duration::ZERO,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Put a bucket (and objects) in place, as if someone else made them.
    pub fn seed(&self, bucket: &str, objects: &[(&str, u64)]) {
        let mut s = self.lock();
        let b = s.buckets.entry(bucket.into()).or_default();
        for (k, n) in objects {
            b.insert((*k).into(), *n);
        }
    }

    pub fn buckets(&self) -> Vec<String> {
        self.lock().buckets.keys().cloned().collect()
    }

    /// A bucket's keys and sizes.
    pub fn objects(&self, bucket: &str) -> Vec<(String, u64)> {
        self.lock()
            .buckets
            .get(bucket)
            .map(|b| b.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default()
    }

    pub fn requests(&self) -> u64 {
        self.lock().requests
    }
}

impl ObjectTarget for FakeStore {
    fn client(&self) -> Box<dyn ObjectClient> {
        Box::new(FakeClient(self.clone()))
    }

    fn describe(&self) -> String {
        "in-memory fake S3".into()
    }
}

struct FakeClient(FakeStore);

fn no_bucket(b: &str) -> S3Error {
    S3Error::new("NoSuchBucket", format!("no bucket {b}"))
}

impl FakeClient {
    async fn serve(&self, bytes: u64) {
        let s = &self.0;
        let t = s.latency + s.per_mib.mul_f64(bytes as f64 / 1048576.0);
        s.lock().requests += 1;
        tokio::time::sleep(t).await;
    }
}

impl ObjectClient for FakeClient {
    fn put<'a>(&'a mut self, bucket: &'a str, key: &'a str, body: Bytes) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            let n = body.len() as u64;
            self.serve(n).await;
            let mut s = self.0.lock();
            let b = s.buckets.get_mut(bucket).ok_or_else(|| no_bucket(bucket))?;
            b.insert(key.into(), n);
            Ok(Transfer {
                bytes: n,
                first_byte: None,
            })
        })
    }

    fn get<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            let start = Instant::now();
            let size = {
                let s = self.0.lock();
                let b = s.buckets.get(bucket).ok_or_else(|| no_bucket(bucket))?;
                b.get(key).copied()
            };
            self.serve(size.unwrap_or(0)).await;
            let n = size.ok_or_else(|| S3Error::new("NoSuchKey", format!("no key {key}")))?;
            Ok(Transfer {
                bytes: n,
                first_byte: Some(start + self.0.ttfb),
            })
        })
    }

    fn stat<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            self.serve(0).await;
            let s = self.0.lock();
            let b = s.buckets.get(bucket).ok_or_else(|| no_bucket(bucket))?;
            b.get(key)
                .map(|_| Transfer {
                    bytes: 0,
                    first_byte: None,
                })
                .ok_or_else(|| S3Error::new("NotFound", key.to_string()))
        })
    }

    fn delete<'a>(&'a mut self, bucket: &'a str, key: &'a str) -> S3Future<'a, Transfer> {
        Box::pin(async move {
            self.serve(0).await;
            let mut s = self.0.lock();
            let b = s.buckets.get_mut(bucket).ok_or_else(|| no_bucket(bucket))?;
            b.remove(key);
            Ok(Transfer {
                bytes: 0,
                first_byte: None,
            })
        })
    }

    fn list<'a>(
        &'a mut self,
        bucket: &'a str,
        prefix: &'a str,
        max_keys: u32,
        token: Option<&'a str>,
    ) -> S3Future<'a, Page> {
        Box::pin(async move {
            self.serve(0).await;
            let s = self.0.lock();
            let b = s.buckets.get(bucket).ok_or_else(|| no_bucket(bucket))?;
            let after = token.unwrap_or("");
            let mut objects: Vec<Listed> = b
                .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
                .filter(|(k, _)| k.starts_with(prefix))
                .take(max_keys as usize + 1)
                .map(|(k, v)| Listed {
                    key: k.clone(),
                    size: *v,
                })
                .collect();
            let next = (objects.len() > max_keys as usize).then(|| {
                objects.truncate(max_keys as usize);
                objects.last().map(|o| o.key.clone()).unwrap_or_default()
            });
            Ok(Page { objects, next })
        })
    }

    fn delete_many<'a>(
        &'a mut self,
        bucket: &'a str,
        keys: &'a [String],
    ) -> S3Future<'a, Vec<String>> {
        Box::pin(async move {
            self.serve(0).await;
            let mut s = self.0.lock();
            let b = s.buckets.get_mut(bucket).ok_or_else(|| no_bucket(bucket))?;
            for k in keys {
                b.remove(k);
            }
            Ok(Vec::new())
        })
    }

    fn create_bucket<'a>(&'a mut self, bucket: &'a str) -> S3Future<'a, Created> {
        Box::pin(async move {
            self.serve(0).await;
            let mut s = self.0.lock();
            if s.buckets.contains_key(bucket) {
                return Ok(Created::Existed);
            }
            s.buckets.insert(bucket.into(), BTreeMap::new());
            Ok(Created::Created)
        })
    }

    fn delete_bucket<'a>(&'a mut self, bucket: &'a str) -> S3Future<'a, ()> {
        Box::pin(async move {
            self.serve(0).await;
            let mut s = self.0.lock();
            match s.buckets.get(bucket) {
                None => Err(no_bucket(bucket)),
                Some(b) if !b.is_empty() => Err(S3Error::new("BucketNotEmpty", bucket.to_string())),
                Some(_) => {
                    s.buckets.remove(bucket);
                    Ok(())
                }
            }
        })
    }
}
