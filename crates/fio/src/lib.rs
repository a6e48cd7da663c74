//! fio's adapter, and nothing else: job files ([`jobfile`]), the executors that run them
//! ([`executor`]: local fio, fio's client/server mode, a fake for unit tests), fio's JSON
//! output parsed into typed results ([`result`]), its per-window logs parsed into series
//! ([`logs`]), and fio's own number formatting ([`fmt`]).
//!
//! Invariants: options go in job files, never on fio's command line (client/server mode
//! ships the job file as it is); fio's JSON is parsed from its first `{`; latencies are
//! always nanoseconds, from `clat_ns`/`lat_ns`. This crate knows nothing of plans, targets
//! or the results store.

pub mod executor;
pub mod fmt;
pub mod jobfile;
pub mod logs;
pub mod result;

pub use executor::{ExecError, Executor, FakeFio, LiveSink, RealFio, RemoteFio};
pub use jobfile::{JobFile, Section};
pub use logs::FioSample;
pub use result::{DirStats, FioOutput, JobResult};

/// A fresh directory under the system temp dir, removed when the guard drops (unit tests).
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> test_dir::TestDir {
    test_dir::TestDir::new(&format!("fio-{tag}"))
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

        pub fn path(&self) -> &std::path::Path {
            &self.0
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
