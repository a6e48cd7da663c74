#![cfg(feature = "e2e")]
//! The redis workload against a real redis-server (the e2e tier: docs/TESTING.md).

use std::fs;
use std::time::Duration;

use loadgen::apps::redis::{RedisApp, RedisSpec};
use loadgen::apps::{App, TenantEnv};
use test_support::TestDir;

/// A real redis-server on a temp directory: load and run phases report ops/s, and the
/// AOF holds the data.
#[test]
fn load_then_run_against_a_real_redis_server() {
    let base = TestDir::new("loadgen-apps-redis");
    let env = TenantEnv {
        tenant: "t0".into(),
        data_dir: base.join("fs"),
        scratch_dir: base.join("scratch"),
        timeout: Duration::from_secs(60),
    };
    let app = RedisApp {
        spec: RedisSpec {
            records: 500,
            operations: 1000,
            threads: 2,
            ..Default::default()
        },
    };
    let mut t = app
        .start(&env)
        .expect("redis-server starts (scripts/install-deps.sh installs it)");
    for n in 1..=2 {
        let it = t.iteration(n);
        assert!(it.ok(), "{:?}", it.failure);
        assert!(it.metric("load_ops_per_sec").unwrap() > 0.0);
        assert!(it.metric("run_ops_per_sec").unwrap() > 0.0);
    }
    t.stop().unwrap();
    let aof_bytes: u64 = fs::read_dir(env.data_dir.join("redis/appendonlydir"))
        .expect("AOF directory on the tenant's file system")
        .flatten()
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    assert!(
        aof_bytes > 500 * 1000,
        "AOF holds the records: {aof_bytes} bytes"
    );
    assert!(!env.scratch_dir.join("t0.redis.sock").exists());
}
