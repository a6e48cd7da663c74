//! qoslab's own load generators, for the workloads fio cannot measure honestly
//! (ARCHITECTURE.md says why for each): [`genio`], the GenIO-like generator behind the
//! `ramp` family, [`apps`], the application drivers of the `tenants` family (git and redis
//! on tenant file systems), and [`s3`], the S3 benchmark driver behind the `s3` family
//! (Debian's fio has no http engine, and no S3 benchmark can be installed here).
//!
//! Invariants: a generator reads only tokio's clock (its timing logic is unit-tested in
//! paused time against a fake target) and reaches storage only through its target trait
//! ([`genio::IoTarget`]); it knows nothing of plans, verdicts or the results store.

pub mod apps;
pub mod genio;
pub mod s3;

/// A fresh directory under the system temp dir, removed when the guard drops (unit tests).
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> test_dir::TestDir {
    test_dir::TestDir::new(&format!("loadgen-{tag}"))
}

#[cfg(test)]
pub(crate) mod test_dir {
    /// A fresh directory under the system temp dir, removed when dropped — also when the test
    /// panics (unwinding drops it), so no test leaves anything in /tmp.
    pub struct TestDir(std::path::PathBuf);

    impl TestDir {
        pub fn new(tag: &str) -> TestDir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static SEQ: AtomicU32 = AtomicU32::new(0);
            let n = SEQ.fetch_add(1, Ordering::SeqCst);
            let p = std::env::temp_dir().join(format!("qoslab-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("creating {}: {e}", p.display()));
            TestDir(p)
        }
    }

    impl std::ops::Deref for TestDir {
        type Target = std::path::Path;
        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl AsRef<std::path::Path> for TestDir {
        fn as_ref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
