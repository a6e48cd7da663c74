//! Test helpers (unit tests only): the workspace's one `TestDir` (`test-support`).

pub use test_support::TestDir;
