//! The coordinator: one test iteration across every driver (in this process, or on load
//! generators over ssh), GOSBench's phases warp's way: open, buckets, prepare (all
//! drivers at once), a shared start moment, the run with records streaming in, clean,
//! bucket removal, exit. A phase that fails on any driver ends the test, and clean-up still
//! runs on the others.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hosts::Host;
use loadgen::s3::driver::{OpRecord, Prepared, RunOutcome};
use loadgen::s3::protocol::{self, Command, Event, LocalDriver};
use loadgen::s3::{Endpoint, TestSpec};

use super::remote::RemoteDriver;

/// How long a phase other than the run may take on one driver.
const PHASE_TIMEOUT: Duration = Duration::from_secs(600);
/// The shared start moment is this far ahead of the `run` command.
const START_AHEAD: Duration = Duration::from_millis(500);

enum Kind {
    Local(Option<std::thread::JoinHandle<Result<(), String>>>),
    Remote(Option<RemoteDriver>),
}

/// One driver as the coordinator sees it.
pub struct Handle {
    /// "" (one local driver), "local-N", or the host's name.
    pub label: String,
    kind: Kind,
    local_tx: Option<std::sync::mpsc::Sender<Command>>,
    events: Receiver<Event>,
    pub records: Vec<OpRecord>,
    pub where_: String,
}

/// What a driver did in one test iteration.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DriverReport {
    pub label: String,
    /// This process, or the host and the binary's path there (and whether it was copied).
    pub driver: String,
    pub target: String,
    pub prepared: Prepared,
    pub outcome: RunOutcome,
    pub late_start_ns: u64,
    pub cleaned: u64,
}

impl Handle {
    /// A driver on a thread of this process.
    pub fn local(label: String) -> Handle {
        let LocalDriver {
            commands,
            events,
            thread,
        } = protocol::spawn_local(Arc::new(protocol::open_http));
        Handle {
            label,
            kind: Kind::Local(Some(thread)),
            local_tx: Some(commands),
            events,
            records: Vec::new(),
            where_: "this process".into(),
        }
    }

    /// A driver on `host`, the binary at `bin` there.
    pub fn remote(host: &Host, bin: &str, copied: bool, lease: Duration) -> Result<Handle, String> {
        let (d, events) = RemoteDriver::start(host, bin, lease)?;
        Ok(Handle {
            label: host.name.clone(),
            kind: Kind::Remote(Some(d)),
            local_tx: None,
            events,
            records: Vec::new(),
            where_: format!(
                "host {} ({bin}{})",
                host.name,
                if copied { ", copied for this run" } else { "" }
            ),
        })
    }

    fn send(&mut self, c: &Command) -> Result<(), String> {
        match (&mut self.kind, &self.local_tx) {
            (Kind::Local(_), Some(tx)) => tx
                .send(c.clone())
                .map_err(|_| format!("driver {}: it has stopped", self.name())),
            (Kind::Remote(Some(d)), _) => d.send(c),
            _ => Err(format!("driver {}: closed", self.name())),
        }
    }

    fn name(&self) -> &str {
        if self.label.is_empty() {
            "local"
        } else {
            &self.label
        }
    }

    /// The next event other than records (which are kept), within `timeout`.
    fn next(&mut self, timeout: Duration) -> Result<Event, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Ops { ops }) => self.absorb(ops)?,
                Ok(Event::Error { message }) => {
                    return Err(format!("driver {}: {message}", self.name()))
                }
                Ok(e) => return Ok(e),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "driver {}: no answer within {timeout:?}",
                        self.name()
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("driver {}: it has stopped", self.name()))
                }
            }
        }
    }

    fn absorb(&mut self, ops: Vec<loadgen::s3::driver::WireOp>) -> Result<(), String> {
        for w in ops {
            let r = OpRecord::try_from(w)
                .map_err(|e| format!("driver {}: a bad record: {e}", self.name()))?;
            self.records.push(r);
        }
        Ok(())
    }

    /// Say goodbye and release the driver.
    pub fn close(mut self) {
        let _ = self.send(&Command::Exit);
        let _ = self.next(Duration::from_secs(5));
        self.local_tx = None;
        match &mut self.kind {
            Kind::Local(t) => {
                if let Some(t) = t.take() {
                    let _ = t.join();
                }
            }
            Kind::Remote(d) => {
                if let Some(d) = d.take() {
                    d.finish();
                }
            }
        }
    }
}

/// A test iteration's drivers and what each gets.
pub struct Iteration {
    pub handles: Vec<Handle>,
    pub specs: Vec<TestSpec>,
    /// Buckets created by driver 0 for everyone (shared), or by each driver (own).
    pub shared_buckets: bool,
    pub clean_after: bool,
    /// The run's bound (ramp + runtime + margin, or long for op-count stops).
    pub run_timeout: Duration,
}

/// What an iteration produced.
pub struct Outcome {
    pub reports: Vec<DriverReport>,
    /// The first failure (the test failed), if any.
    pub error: Option<String>,
    /// Buckets made for the test, and whether they were removed.
    pub created: Vec<String>,
    pub cleanup_errors: Vec<String>,
    /// Every driver's records, by label.
    pub records: Vec<(String, Vec<OpRecord>)>,
}

/// Send `cmd(i)` to every driver, then collect each one's answer with `take`.
fn all<T>(
    it: &mut Iteration,
    timeout: Duration,
    cmd: impl Fn(usize) -> Command,
    mut take: impl FnMut(usize, Event) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    for (i, h) in it.handles.iter_mut().enumerate() {
        h.send(&cmd(i))?;
    }
    let mut out = Vec::new();
    let mut first_err = None;
    for (i, h) in it.handles.iter_mut().enumerate() {
        match h.next(timeout).and_then(|e| take(i, e)) {
            Ok(v) => out.push(v),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn unexpected(e: &Event, want: &str) -> String {
    format!("expected {want}, got {e:?}")
}

/// Run one iteration. `endpoint` goes to every driver with its spec.
pub fn run(mut it: Iteration, endpoint: &Endpoint) -> Outcome {
    let n = it.handles.len();
    let mut reports: Vec<DriverReport> = it
        .handles
        .iter()
        .map(|h| DriverReport {
            label: h.label.clone(),
            driver: h.where_.clone(),
            ..DriverReport::default()
        })
        .collect();
    let mut created = Vec::new();
    let mut cleanup_errors = Vec::new();
    let mut opened = vec![false; n];
    let error = (|| -> Result<(), String> {
        // Hello, then open.
        hello(&mut it)?;
        let specs = it.specs.clone();
        let targets = all(
            &mut it,
            PHASE_TIMEOUT,
            |i| Command::Open {
                endpoint: endpoint.clone(),
                test: Box::new(specs[i].clone()),
            },
            |i, e| match e {
                Event::Opened { target } => {
                    opened[i] = true;
                    Ok(target)
                }
                e => Err(unexpected(&e, "opened")),
            },
        )?;
        for (r, t) in reports.iter_mut().zip(targets) {
            r.target = t;
        }
        // Buckets.
        created.extend(create_buckets(&mut it, &specs)?);
        let prepared = all(
            &mut it,
            PHASE_TIMEOUT,
            |_| Command::Prepare,
            |_, e| match e {
                Event::Prepared { prepared } => Ok(prepared),
                e => Err(unexpected(&e, "prepared")),
            },
        )?;
        for (r, p) in reports.iter_mut().zip(prepared) {
            r.prepared = p;
        }
        let start = protocol::now_unix_ns() + START_AHEAD.as_nanos() as u64;
        let timeout = it.run_timeout + START_AHEAD;
        let done = all(
            &mut it,
            timeout,
            |_| Command::Run {
                start_unix_ns: start,
            },
            |_, e| match e {
                Event::Done {
                    outcome,
                    late_start_ns,
                } => Ok((outcome, late_start_ns)),
                e => Err(unexpected(&e, "done")),
            },
        )?;
        for (r, (o, late)) in reports.iter_mut().zip(done) {
            r.outcome = o;
            r.late_start_ns = late;
        }
        Ok(())
    })()
    .err();
    // Clean up, whatever happened (on the drivers that opened the test).
    if it.clean_after && opened.iter().any(|o| *o) {
        cleanup_errors = clean_up(&mut it, &opened, &created, &mut reports);
    }
    for (r, h) in reports.iter_mut().zip(&it.handles) {
        r.label = h.label.clone();
    }
    let handles = std::mem::take(&mut it.handles);
    let mut records_of: Vec<(String, Vec<OpRecord>)> = Vec::new();
    for mut h in handles {
        records_of.push((h.label.clone(), std::mem::take(&mut h.records)));
        h.close();
    }
    Outcome {
        reports,
        error,
        created,
        cleanup_errors,
        records: records_of,
    }
}

/// Every driver's hello (a remote driver's cleanup armed with its pid).
fn hello(it: &mut Iteration) -> Result<(), String> {
    for h in it.handles.iter_mut() {
        match h.next(Duration::from_secs(60))? {
            Event::Hello { pid, .. } => {
                if let Kind::Remote(Some(d)) = &mut h.kind {
                    d.arm_cleanup(pid);
                }
            }
            e => return Err(format!("driver {}: {}", h.name(), unexpected(&e, "hello"))),
        }
    }
    Ok(())
}

/// The test's buckets: the shared ones by the first driver, else each driver's own; the
/// names made.
fn create_buckets(it: &mut Iteration, specs: &[TestSpec]) -> Result<Vec<String>, String> {
    let mut created = Vec::new();
    if it.shared_buckets {
        let names = specs[0].buckets.clone();
        it.handles[0].send(&Command::CreateBuckets { names })?;
        match it.handles[0].next(PHASE_TIMEOUT)? {
            Event::Buckets { created: c, .. } => created.extend(c),
            e => return Err(unexpected(&e, "buckets")),
        }
    } else {
        for c in all(
            it,
            PHASE_TIMEOUT,
            |i| Command::CreateBuckets {
                names: specs[i].buckets.clone(),
            },
            |_, e| match e {
                Event::Buckets { created, .. } => Ok(created),
                e => Err(unexpected(&e, "buckets")),
            },
        )? {
            created.extend(c);
        }
    }
    Ok(created)
}

/// Each opened driver cleans what it wrote, then the first deletes the buckets made for
/// the test; the problems met.
fn clean_up(
    it: &mut Iteration,
    opened: &[bool],
    created: &[String],
    reports: &mut [DriverReport],
) -> Vec<String> {
    let mut cleanup_errors = Vec::new();
    for (i, h) in it.handles.iter_mut().enumerate() {
        if !opened[i] {
            continue;
        }
        let r = h.send(&Command::Clean).and_then(|_| h.next(PHASE_TIMEOUT));
        match r {
            Ok(Event::Cleaned { deleted }) => reports[i].cleaned = deleted,
            Ok(e) => cleanup_errors.push(unexpected(&e, "cleaned")),
            Err(e) => cleanup_errors.push(e),
        }
    }
    if !created.is_empty() {
        if let Some(i) = opened.iter().position(|o| *o) {
            let h = &mut it.handles[i];
            let r = h
                .send(&Command::DeleteBuckets {
                    names: created.to_vec(),
                })
                .and_then(|_| h.next(PHASE_TIMEOUT));
            match r {
                Ok(Event::BucketsDeleted { errors }) => cleanup_errors.extend(errors),
                Ok(e) => cleanup_errors.push(unexpected(&e, "buckets_deleted")),
                Err(e) => cleanup_errors.push(e),
            }
        }
    }
    cleanup_errors
}
