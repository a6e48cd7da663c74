//! One driver (one load generator's share of a test): make the buckets, upload the pool of
//! objects the reads, deletes and stats work on, run `clients` concurrent clients until the
//! test stops, and remove what the test wrote.
//!
//! Each client owns its slice of the pool (the prepared objects `j` with `j % clients ==
//! c`, then whatever it PUTs), so a read never races with another client's delete. Every
//! request is recorded ([`OpRecord`]: operation, client, start, end, first byte, bytes,
//! error code) and sent to the caller's sink as it completes; the analysis
//! ([`super::analysis`]) works on those records, warp's way.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hyper::body::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use super::spec::{Action, Op, Stop, TestSpec};
use super::target::{Created, ObjectClient, ObjectTarget, S3Error, Transfer};
use crate::genio::Rng;

/// The most error messages kept (the counts are per code, in the analysis).
const FIRST_ERRORS: usize = 10;
/// Keys per DeleteObjects request.
const DELETE_BATCH: usize = 1000;
/// Slack around the largest object in the payload buffer: PUT bodies start at a random
/// offset inside it, so no two objects share content (stores that deduplicate blocks,
/// Garage among them, would otherwise not store most of them).
const SLACK: u64 = 1 << 20;

/// One request as it happened; times are nanoseconds since the test's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRecord {
    pub op: Op,
    /// The client (0-based, within its driver).
    pub client: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Time to first byte of a GET's body, from the request's start (0: not measured).
    pub ttfb_ns: u64,
    pub bytes: u64,
    /// The S3 error code, if the request failed.
    pub error: Option<String>,
}

/// The wire form of a record: `[op, client, start_ns, end_ns, ttfb_ns, bytes, error]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireOp(
    pub u8,
    pub u32,
    pub u64,
    pub u64,
    pub u64,
    pub u64,
    pub Option<String>,
);

impl From<&OpRecord> for WireOp {
    fn from(r: &OpRecord) -> WireOp {
        WireOp(
            r.op.index(),
            r.client,
            r.start_ns,
            r.end_ns,
            r.ttfb_ns,
            r.bytes,
            r.error.clone(),
        )
    }
}

impl TryFrom<WireOp> for OpRecord {
    type Error = String;
    fn try_from(w: WireOp) -> Result<OpRecord, String> {
        let op = Op::from_index(w.0).ok_or_else(|| format!("unknown operation index {}", w.0))?;
        if w.3 < w.2 {
            return Err(format!(
                "operation ends ({}) before it starts ({})",
                w.3, w.2
            ));
        }
        Ok(OpRecord {
            op,
            client: w.1,
            start_ns: w.2,
            end_ns: w.3,
            ttfb_ns: w.4,
            bytes: w.5,
            error: w.6,
        })
    }
}

/// What the preparation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prepared {
    /// Objects uploaded for the pool, and their bytes.
    pub objects: u64,
    pub bytes: u64,
    /// Objects found in the buckets before the test (for existing reads).
    pub existing: u64,
}

/// How the timed phase went (the records carry the rest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    pub ops: u64,
    pub errors: u64,
    /// Up to ten error messages, in the order they happened.
    pub first_errors: Vec<String>,
    /// Why a client stopped before the test's end, if one did.
    pub stopped_early: Option<String>,
}

#[derive(Debug, Clone)]
struct Obj {
    bucket: usize,
    key: String,
    size: u64,
}

/// A driver for one test.
pub struct Driver {
    spec: TestSpec,
    target: Arc<dyn ObjectTarget>,
    data: Bytes,
    pools: Vec<Vec<Obj>>,
    existing: Arc<Vec<Obj>>,
}

/// Create `names` (those present already count as existing, not created).
pub async fn create_buckets(
    target: &dyn ObjectTarget,
    names: &[String],
) -> Result<(Vec<String>, Vec<String>), S3Error> {
    let mut c = target.client();
    let (mut created, mut existed) = (Vec::new(), Vec::new());
    for n in names {
        match c.create_bucket(n).await {
            Ok(Created::Created) => created.push(n.clone()),
            Ok(Created::Existed) => existed.push(n.clone()),
            Err(e) => {
                return Err(S3Error::new(
                    e.code,
                    format!("creating bucket {n}: {}", e.message),
                ))
            }
        }
    }
    Ok((created, existed))
}

/// Delete buckets `names` (empty by now); the failures, one message each.
pub async fn delete_buckets(target: &dyn ObjectTarget, names: &[String]) -> Vec<String> {
    let mut c = target.client();
    let mut errors = Vec::new();
    for n in names {
        if let Err(e) = c.delete_bucket(n).await {
            errors.push(format!("deleting bucket {n}: {e}"));
        }
    }
    errors
}

/// Pseudo-random payload bytes.
fn payload(len: u64, seed: u64) -> Bytes {
    let mut rng = Rng::new(seed ^ 0xda7a);
    let mut v = Vec::with_capacity(len as usize + 8);
    while (v.len() as u64) < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len as usize);
    Bytes::from(v)
}

fn body(data: &Bytes, size: u64, rng: &mut Rng) -> Bytes {
    let room = data.len() as u64 - size;
    let off = if room == 0 {
        0
    } else {
        rng.next_u64() % (room + 1)
    };
    data.slice(off as usize..(off + size) as usize)
}

fn ns_since(t0: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(t0).as_nanos() as u64
}

impl Driver {
    pub fn new(spec: TestSpec, target: Arc<dyn ObjectTarget>) -> Driver {
        let clients = spec.clients.max(1) as usize;
        Driver {
            data: payload(spec.max_object() + SLACK, spec.seed),
            spec,
            target,
            pools: vec![Vec::new(); clients],
            existing: Arc::new(Vec::new()),
        }
    }

    pub fn spec(&self) -> &TestSpec {
        &self.spec
    }

    /// Objects in the pools now.
    pub fn pooled(&self) -> u64 {
        self.pools.iter().map(|p| p.len() as u64).sum()
    }

    /// Upload the pool (when the weights need one) and list the objects existing reads
    /// will read. The buckets exist by now.
    pub async fn prepare(&mut self) -> Result<Prepared, S3Error> {
        let s = &self.spec;
        let mut out = Prepared::default();
        if s.weights.existing_read > 0 {
            let mut c = self.target.client();
            let mut found = Vec::new();
            for (bi, b) in s.buckets.iter().enumerate() {
                let mut token: Option<String> = None;
                loop {
                    let page = c.list(b, "", 1000, token.as_deref()).await.map_err(|e| {
                        S3Error::new(e.code, format!("listing bucket {b}: {}", e.message))
                    })?;
                    for o in page.objects {
                        if !o.key.starts_with(&s.prefix) {
                            found.push(Obj {
                                bucket: bi,
                                key: o.key,
                                size: o.size,
                            });
                        }
                    }
                    token = page.next;
                    if token.is_none() || found.len() >= 100_000 {
                        break;
                    }
                }
            }
            if found.is_empty() {
                return Err(S3Error::new(
                    "NoObjects",
                    format!(
                        "existing_read_weight = {} needs objects in the bucket(s) before the test; {} hold(s) none",
                        s.weights.existing_read,
                        s.buckets.join(", ")
                    ),
                ));
            }
            out.existing = found.len() as u64;
            self.existing = Arc::new(found);
        }
        if !s.weights.needs_pool() || s.objects == 0 {
            return Ok(out);
        }
        let clients = self.pools.len();
        let total = s.objects * s.buckets.len() as u64;
        let mut tasks = tokio::task::JoinSet::new();
        for c in 0..clients {
            let mut client = self.target.client();
            let (data, spec) = (self.data.clone(), self.spec.clone());
            tasks.spawn(async move {
                let mut rng = Rng::new(spec.seed ^ 0x9e9a_u64 ^ ((c as u64) << 20));
                let mut pool = Vec::new();
                let mut bytes = 0;
                let mut j = c as u64;
                while j < total {
                    let bucket = (j % spec.buckets.len() as u64) as usize;
                    let size = spec.sizes.sample(&mut rng);
                    let key = format!("{}p{j:08}", spec.prefix);
                    client
                        .put(&spec.buckets[bucket], &key, body(&data, size, &mut rng))
                        .await
                        .map_err(|e| {
                            S3Error::new(
                                e.code,
                                format!("uploading {}/{key}: {}", spec.buckets[bucket], e.message),
                            )
                        })?;
                    bytes += size;
                    pool.push(Obj { bucket, key, size });
                    j += clients as u64;
                }
                Ok::<_, S3Error>((c, pool, bytes))
            });
        }
        while let Some(r) = tasks.join_next().await {
            let (c, pool, bytes) =
                r.map_err(|e| S3Error::new("Internal", format!("upload task: {e}")))??;
            out.objects += pool.len() as u64;
            out.bytes += bytes;
            self.pools[c] = pool;
        }
        Ok(out)
    }

    /// The timed phase: every client until the test stops; each request's record goes to
    /// `sink` as it completes. Time 0 of the records is when this is called.
    pub async fn run(&mut self, sink: UnboundedSender<OpRecord>) -> RunOutcome {
        let t0 = Instant::now();
        let ctx = Arc::new(RunCtx {
            t0,
            spec: self.spec.clone(),
            data: self.data.clone(),
            existing: self.existing.clone(),
            started: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            first_errors: Mutex::new(Vec::new()),
            stopped_early: Mutex::new(None),
            sink,
        });
        let mut tasks = tokio::task::JoinSet::new();
        for (c, pool) in std::mem::take(&mut self.pools).into_iter().enumerate() {
            let client = self.target.client();
            let ctx = ctx.clone();
            tasks.spawn(async move { (c, client_loop(c as u32, client, pool, ctx).await) });
        }
        let mut pools = vec![Vec::new(); self.spec.clients.max(1) as usize];
        while let Some(r) = tasks.join_next().await {
            match r {
                Ok((c, pool)) => pools[c] = pool,
                Err(e) => ctx.note_stop(format!("client task: {e}")),
            }
        }
        self.pools = pools;
        RunOutcome {
            ops: ctx.ops.load(Ordering::Relaxed),
            errors: ctx.errors.load(Ordering::Relaxed),
            first_errors: ctx
                .first_errors
                .lock()
                .map(|v| v.clone())
                .unwrap_or_default(),
            stopped_early: ctx.stopped_early.lock().ok().and_then(|g| g.clone()),
        }
    }

    /// Delete every object this driver wrote that is still there. Returns how many were
    /// deleted; failures are an error naming the first.
    pub async fn clean(&mut self) -> Result<u64, S3Error> {
        let mut c = self.target.client();
        let mut by_bucket: Vec<Vec<String>> = vec![Vec::new(); self.spec.buckets.len()];
        for o in self.pools.iter().flatten() {
            by_bucket[o.bucket].push(o.key.clone());
        }
        let mut deleted = 0;
        for (bi, keys) in by_bucket.iter().enumerate() {
            let b = &self.spec.buckets[bi];
            for chunk in keys.chunks(DELETE_BATCH) {
                match c.delete_many(b, chunk).await {
                    Ok(failed) if failed.is_empty() => deleted += chunk.len() as u64,
                    Ok(failed) => {
                        return Err(S3Error::new(
                            "DeleteFailed",
                            format!(
                                "{} object(s) of bucket {b} not deleted, e.g. {}",
                                failed.len(),
                                failed[0]
                            ),
                        ))
                    }
                    // A store without DeleteObjects: one request per key.
                    Err(e) if e.code == "NotImplemented" => {
                        for k in chunk {
                            c.delete(b, k).await.map_err(|e| {
                                S3Error::new(e.code, format!("deleting {b}/{k}: {}", e.message))
                            })?;
                            deleted += 1;
                        }
                    }
                    Err(e) => {
                        return Err(S3Error::new(
                            e.code,
                            format!("deleting objects of bucket {b}: {}", e.message),
                        ))
                    }
                }
            }
        }
        for p in &mut self.pools {
            p.clear();
        }
        Ok(deleted)
    }
}

struct RunCtx {
    t0: Instant,
    spec: TestSpec,
    data: Bytes,
    existing: Arc<Vec<Obj>>,
    started: AtomicU64,
    ops: AtomicU64,
    errors: AtomicU64,
    first_errors: Mutex<Vec<String>>,
    stopped_early: Mutex<Option<String>>,
    sink: UnboundedSender<OpRecord>,
}

impl RunCtx {
    fn note_error(&self, what: &str, e: &S3Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut v) = self.first_errors.lock() {
            if v.len() < FIRST_ERRORS {
                v.push(format!(
                    "{:.3} s: {what}: {e}",
                    self.t0.elapsed().as_secs_f64()
                ));
            }
        }
    }

    fn note_stop(&self, why: String) {
        if let Ok(mut s) = self.stopped_early.lock() {
            s.get_or_insert(why);
        }
    }

    /// Whether a client may start another request.
    fn go_on(&self) -> bool {
        match self.spec.stop {
            Stop::Runtime(d) => self.t0.elapsed() < d,
            Stop::Ops(n) => self.started.fetch_add(1, Ordering::Relaxed) < n,
        }
    }
}

/// The next action this client can do: its pool may be empty (reads, deletes and stats
/// need an object of its own), and existing reads need objects found at preparation.
fn next_action(rng: &mut Rng, ctx: &RunCtx, pool: &[Obj]) -> Option<Action> {
    for _ in 0..64 {
        let a = ctx.spec.weights.draw(rng);
        let ok = match a {
            Action::Read | Action::Delete | Action::Stat => !pool.is_empty(),
            Action::ExistingRead => !ctx.existing.is_empty(),
            Action::Write | Action::List => true,
        };
        if ok {
            return Some(a);
        }
    }
    None
}

async fn client_loop(
    c: u32,
    mut client: Box<dyn ObjectClient>,
    mut pool: Vec<Obj>,
    ctx: Arc<RunCtx>,
) -> Vec<Obj> {
    let s = &ctx.spec;
    let mut rng = Rng::new(s.seed ^ (u64::from(c) << 32) ^ 0x5eed);
    let mut seq = 0u64;
    while ctx.go_on() {
        let Some(action) = next_action(&mut rng, &ctx, &pool) else {
            ctx.note_stop(format!(
                "client {c}: nothing left to read or delete (its objects are gone and write_weight = 0)"
            ));
            break;
        };
        let (bucket, key, size) = match action {
            Action::Read | Action::Stat => {
                let o = &pool[(rng.next_u64() % pool.len() as u64) as usize];
                (o.bucket, o.key.clone(), o.size)
            }
            Action::Delete => {
                let i = (rng.next_u64() % pool.len() as u64) as usize;
                let o = pool.swap_remove(i);
                (o.bucket, o.key, o.size)
            }
            Action::ExistingRead => {
                let o = &ctx.existing[(rng.next_u64() % ctx.existing.len() as u64) as usize];
                (o.bucket, o.key.clone(), o.size)
            }
            Action::Write => {
                seq += 1;
                let b = (rng.next_u64() % s.buckets.len() as u64) as usize;
                (
                    b,
                    format!("{}c{c}-{seq}", s.prefix),
                    s.sizes.sample(&mut rng),
                )
            }
            Action::List => (
                (rng.next_u64() % s.buckets.len() as u64) as usize,
                String::new(),
                0,
            ),
        };
        let bname = &s.buckets[bucket];
        let start = Instant::now();
        let r: Result<Transfer, S3Error> = match action {
            Action::Read | Action::ExistingRead => client.get(bname, &key).await,
            Action::Stat => client.stat(bname, &key).await,
            Action::Delete => client.delete(bname, &key).await,
            Action::Write => {
                let b = body(&ctx.data, size, &mut rng);
                client.put(bname, &key, b).await
            }
            Action::List => client
                .list(bname, &s.prefix, s.list_max_keys, None)
                .await
                .map(|_| Transfer {
                    bytes: 0,
                    first_byte: None,
                }),
        };
        let end = Instant::now();
        let op = action.op();
        let rec = match r {
            Ok(t) => {
                if action == Action::Write {
                    pool.push(Obj { bucket, key, size });
                }
                OpRecord {
                    op,
                    client: c,
                    start_ns: ns_since(ctx.t0, start),
                    end_ns: ns_since(ctx.t0, end),
                    ttfb_ns: t
                        .first_byte
                        .map(|f| (f.saturating_duration_since(start).as_nanos() as u64).max(1))
                        .unwrap_or(0),
                    bytes: t.bytes,
                    error: None,
                }
            }
            Err(e) => {
                ctx.note_error(&format!("{} {bname}/{key}", op.name()), &e);
                OpRecord {
                    op,
                    client: c,
                    start_ns: ns_since(ctx.t0, start),
                    end_ns: ns_since(ctx.t0, end),
                    ttfb_ns: 0,
                    bytes: 0,
                    error: Some(e.code),
                }
            }
        };
        ctx.ops.fetch_add(1, Ordering::Relaxed);
        if ctx.sink.send(rec).is_err() {
            break;
        }
    }
    pool
}
