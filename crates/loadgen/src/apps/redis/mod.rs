//! The `redis` workload (seed 004's Redis under YCSB): one redis-server per tenant with
//! its data directory and append-only file on the tenant's file system (`appendonly yes`,
//! `appendfsync everysec` by default, RDB snapshots off), driven by a built-in YCSB-like
//! client over the server's unix socket:
//!
//! - **load**: `records` records (`user<hash>` -> a hash of `fields` fields of
//!   `field_len` bytes) inserted in order with HSET, split over `threads` connections;
//! - **run**: `operations` requests, each a read of a whole record (HGETALL) with
//!   probability `read_proportion`, else an update of one field (HSET), records chosen by
//!   YCSB's scrambled Zipfian.
//!
//! Each phase's throughput (ops/s) is a metric, as in the seed's table. Before each
//! iteration the database is emptied (FLUSHALL, as svt's FLUSHDB). Why not
//! `redis-benchmark`: it runs one command type per invocation over random keys, so it can
//! neither insert each record once in order nor mix reads and updates in one stream.

pub mod resp;
pub mod ycsb;

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::apps::rng::Rng;
use crate::apps::{proc, App, Failure, FailureKind, Iteration, TenantApp, TenantEnv};
use resp::{Conn, Reply};

/// The workload's parameters (YCSB's names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedisSpec {
    pub records: u64,
    pub operations: u64,
    pub fields: u32,
    pub field_len: u32,
    /// Fraction of run-phase requests that read (the rest update).
    pub read_proportion: f64,
    /// Client connections (YCSB threads).
    pub threads: u32,
    /// `appendfsync`: `everysec`, `always` or `no`.
    pub appendfsync: String,
}

impl Default for RedisSpec {
    /// YCSB's workloada shape (50/50 reads and updates; 10 fields of 100 bytes) with
    /// 10,000 records and operations and 4 connections.
    fn default() -> RedisSpec {
        RedisSpec {
            records: 10_000,
            operations: 10_000,
            fields: 10,
            field_len: 100,
            read_proportion: 0.5,
            threads: 4,
            appendfsync: "everysec".into(),
        }
    }
}

impl RedisSpec {
    /// Check the values; the message names the field and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        if self.records == 0 {
            return Err("redis.records must be at least 1".into());
        }
        if !(1..=256).contains(&self.threads) {
            return Err(format!("redis.threads = {}: allowed 1..256", self.threads));
        }
        if !(1..=1000).contains(&self.fields) {
            return Err(format!("redis.fields = {}: allowed 1..1000", self.fields));
        }
        if !(1..=1 << 20).contains(&self.field_len) {
            return Err(format!(
                "redis.field_len = {}: allowed 1..1048576",
                self.field_len
            ));
        }
        if !(0.0..=1.0).contains(&self.read_proportion) {
            return Err(format!(
                "redis.read_proportion = {}: allowed 0.0..1.0",
                self.read_proportion
            ));
        }
        if !["everysec", "always", "no"].contains(&self.appendfsync.as_str()) {
            return Err(format!(
                "redis.appendfsync = {:?}: allowed everysec, always, no",
                self.appendfsync
            ));
        }
        Ok(())
    }
}

pub struct RedisApp {
    pub spec: RedisSpec,
}

impl App for RedisApp {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn start(&self, env: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure> {
        let step = "start redis-server";
        let data = env.data_dir.join("redis");
        fs::create_dir_all(&data)
            .and_then(|_| fs::create_dir_all(&env.scratch_dir))
            .map_err(|e| Failure::classify(step, format!("creating directories: {e}")))?;
        let socket = env.scratch_dir.join(format!("{}.redis.sock", env.tenant));
        let log = env.scratch_dir.join(format!("{}.redis.log", env.tenant));
        let _ = fs::remove_file(&socket);
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", "0", "--unixsocket"])
            .arg(&socket)
            .args(["--unixsocketperm", "700", "--dir"])
            .arg(&data)
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                &self.spec.appendfsync,
            ])
            .args(["--save", "", "--daemonize", "no", "--logfile"])
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let (child, reg) = proc::spawn_group(&mut cmd)
            .map_err(|e| Failure::classify(step, format!("cannot start redis-server: {e}")))?;
        let mut t = RedisTenant {
            spec: self.spec.clone(),
            child: Some(child),
            _reg: reg,
            socket,
            log,
            timeout: env.timeout,
        };
        let deadline = Instant::now() + env.timeout.min(Duration::from_secs(30));
        let socket = t.socket.clone();
        let Some(child) = t.child.as_mut() else {
            return Err(Failure::classify(step, "redis-server is gone".into()));
        };
        let answered = proc::wait_ready(child, deadline, || {
            let mut c = Conn::connect(&socket, Duration::from_secs(5)).ok()?;
            matches!(c.call(&[b"PING"]), Ok(Reply::Simple(s)) if s == "PONG").then_some(())
        });
        match answered {
            Ok(()) => Ok(Box::new(t)),
            Err(e) => {
                let msg = format!(
                    "redis-server {}: {}",
                    match e {
                        proc::NotReady::Exited(s) => format!("exited ({s})"),
                        proc::NotReady::TimedOut => "did not answer PING in time".into(),
                    },
                    t.log_tail()
                );
                let _ = t.stop();
                Err(Failure::classify(step, msg))
            }
        }
    }
}

struct RedisTenant {
    spec: RedisSpec,
    child: Option<Child>,
    _reg: mounts::children::Registered,
    socket: PathBuf,
    log: PathBuf,
    timeout: Duration,
}

/// What one client thread reports.
type ThreadResult = Result<u64, Failure>;

impl RedisTenant {
    fn log_tail(&self) -> String {
        proc::tail(&fs::read_to_string(&self.log).unwrap_or_default())
    }

    fn fail(&self, step: &str, e: std::io::Error, deadline: Instant) -> Failure {
        if Instant::now() >= deadline
            || matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )
        {
            return Failure {
                kind: FailureKind::Timeout,
                step: step.into(),
                message: format!("no reply from redis-server within the time limit: {e}"),
            };
        }
        Failure::classify(step, format!("{e}; redis log: {}", self.log_tail()))
    }

    /// Run `ops(thread, conn)` on every client thread at once; returns elapsed seconds.
    fn phase<F>(&self, step: &str, deadline: Instant, f: F) -> Result<f64, Failure>
    where
        F: Fn(u32, &mut Conn) -> Result<u64, (std::io::Error, Option<String>)> + Sync,
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let t0 = Instant::now();
        let results: Vec<ThreadResult> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..self.spec.threads)
                .map(|t| {
                    let f = &f;
                    s.spawn(move || {
                        let mut c = Conn::connect(&self.socket, left)
                            .map_err(|e| self.fail(step, e, deadline))?;
                        f(t, &mut c).map_err(|(e, reply)| match reply {
                            Some(msg) => Failure::classify(step, format!("redis replied: {msg}")),
                            None => self.fail(step, e, deadline),
                        })
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Failure::classify(step, "client thread panicked".into()))
                    })
                })
                .collect()
        });
        for r in results {
            r?;
        }
        Ok(t0.elapsed().as_secs_f64())
    }

    fn run(&self, n: u32, it: &mut Iteration) -> Result<(), Failure> {
        let t0 = Instant::now();
        let deadline = t0 + self.timeout;
        let spec = &self.spec;
        let check = |r: std::io::Result<Reply>| -> Result<(), (std::io::Error, Option<String>)> {
            match r {
                Ok(Reply::Error(m)) => Err((std::io::Error::other(m.clone()), Some(m))),
                Ok(_) => Ok(()),
                Err(e) => Err((e, None)),
            }
        };
        // Empty the database (svt runs FLUSHDB before each load).
        let mut c = Conn::connect(&self.socket, self.timeout)
            .map_err(|e| self.fail("flush", e, deadline))?;
        let r = c.call(&[b"FLUSHALL"]);
        check(r).map_err(|(e, m)| match m {
            Some(m) => Failure::classify("flush", format!("redis replied: {m}")),
            None => self.fail("flush", e, deadline),
        })?;
        let threads = spec.threads as u64;
        let field_names: Vec<String> = (0..spec.fields).map(|i| format!("field{i}")).collect();
        let value = |rng: &mut Rng| -> Vec<u8> {
            (0..spec.field_len)
                .map(|_| b' ' + (rng.below(95) as u8))
                .collect()
        };
        // Load: record i goes to thread i % threads, in order.
        let load = self.phase("load", deadline, |t, c| {
            let mut rng = Rng::new(0x10AD ^ ((n as u64) << 32) ^ t as u64);
            let mut done = 0;
            let mut i = t as u64;
            while i < spec.records {
                let key = ycsb::key(i);
                let vals: Vec<Vec<u8>> = (0..spec.fields).map(|_| value(&mut rng)).collect();
                let mut args: Vec<&[u8]> = vec![b"HSET", key.as_bytes()];
                for (f, v) in field_names.iter().zip(&vals) {
                    args.push(f.as_bytes());
                    args.push(v);
                }
                check(c.call(&args))?;
                done += 1;
                i += threads;
            }
            Ok(done)
        })?;
        add_phase(it, "load", load, spec.records);
        // Run: operations split over threads; Zipfian record choice.
        let zipf = ycsb::Zipfian::new(spec.records);
        let run = self.phase("run", deadline, |t, c| {
            let mut rng = Rng::new(0x5EED ^ ((n as u64) << 32) ^ t as u64);
            let mine =
                spec.operations / threads + u64::from((t as u64) < spec.operations % threads);
            for _ in 0..mine {
                let key = ycsb::key(zipf.next(&mut rng));
                if rng.unit() < spec.read_proportion {
                    check(c.call(&[b"HGETALL", key.as_bytes()]))?;
                } else {
                    let f = &field_names[rng.below(spec.fields as u64) as usize];
                    let v = value(&mut rng);
                    check(c.call(&[b"HSET", key.as_bytes(), f.as_bytes(), &v]))?;
                }
            }
            Ok(mine)
        })?;
        add_phase(it, "run", run, spec.operations);
        Ok(())
    }
}

/// A phase's time (step `name`) and its throughput (metric `NAME_ops_per_sec`).
fn add_phase(it: &mut Iteration, name: &str, secs: f64, ops: u64) {
    it.add_step(name, secs);
    it.add_metric(
        &format!("{name}_ops_per_sec"),
        ops as f64 / secs.max(1e-9),
        "ops/s",
    );
}

impl TenantApp for RedisTenant {
    fn iteration(&mut self, n: u32) -> Iteration {
        let t0 = Instant::now();
        let mut it = Iteration::default();
        if let Err(f) = self.run(n, &mut it) {
            it.failure = Some(f);
        }
        it.secs = t0.elapsed().as_secs_f64();
        it
    }

    /// SHUTDOWN (the AOF is fsync'ed), then wait; killed if it does not exit in 10 s.
    fn stop(&mut self) -> Result<(), Failure> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if let Ok(mut c) = Conn::connect(&self.socket, Duration::from_secs(5)) {
            let _ = c.call(&[b"SHUTDOWN", b"NOSAVE"]);
        }
        let exited = proc::wait_until(&mut child, Instant::now() + Duration::from_secs(10));
        let _ = fs::remove_file(&self.socket);
        if let Ok(Some(_)) = exited {
            return Ok(());
        }
        if exited.is_err() {
            // Its state is unknown (not reaped): kill its group. At the deadline
            // wait_until has killed it already.
            proc::kill_group(&mut child);
        }
        Err(Failure::classify(
            "stop",
            "redis-server did not shut down; killed".into(),
        ))
    }
}

impl Drop for RedisTenant {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_values_are_checked_with_the_field_named() {
        assert!(RedisSpec::default().validate().is_ok());
        type Change = fn(&mut RedisSpec);
        let bad: [(Change, &str); 4] = [
            (|s| s.threads = 0, "redis.threads"),
            (|s| s.read_proportion = 1.5, "redis.read_proportion"),
            (|s| s.appendfsync = "sometimes".into(), "redis.appendfsync"),
            (|s| s.records = 0, "redis.records"),
        ];
        for (change, field) in bad {
            let mut s = RedisSpec::default();
            change(&mut s);
            let e = s.validate().unwrap_err();
            assert!(e.contains(field), "{e}");
        }
    }
}
