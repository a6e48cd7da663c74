//! How a coordinator drives a driver: commands in, events out, one JSON object per line
//! (`qoslab s3-driver` on a load generator, over ssh's stdin and stdout), or the same values
//! over channels for a driver in the coordinator's own process.
//!
//! ```text
//! -> {"cmd":"open","endpoint":{..},"test":{..}}     <- {"event":"hello",..} {"event":"opened",..}
//! -> {"cmd":"create_buckets","names":[..]}           <- {"event":"buckets","created":[..],"existed":[..]}
//! -> {"cmd":"prepare"}                               <- {"event":"prepared",..}
//! -> {"cmd":"run","start_unix_ns":N}                 <- {"event":"ops","ops":[[op,client,start,end,ttfb,bytes,err],..]} (every second)
//!                                                       {"event":"done",..}
//! -> {"cmd":"clean"}                                 <- {"event":"cleaned","deleted":N}
//! -> {"cmd":"delete_buckets","names":[..]}           <- {"event":"buckets_deleted","errors":[..]}
//! -> {"cmd":"exit"}                                  <- {"event":"bye"}
//! ```
//!
//! A phase that fails answers `{"event":"error","message":..}` and the driver waits for the
//! next command (the coordinator decides: usually `exit`). The end of the input (the
//! coordinator or its ssh connection gone) ends the driver between phases; a run in
//! progress ends at its own stop (and the remote command's lease bounds it).

use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::driver::{self, Driver, Prepared, RunOutcome, WireOp};
use super::spec::{Endpoint, TestSpec};
use super::target::{ObjectTarget, S3Error};

/// Records per `ops` event at most (a busy second is sent in several).
const OPS_PER_EVENT: usize = 20_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    Open {
        endpoint: Endpoint,
        test: Box<TestSpec>,
    },
    CreateBuckets {
        names: Vec<String>,
    },
    Prepare,
    /// Start the timed phase at this wall-clock time (ns since the Unix epoch), so every
    /// load generator starts together and the records share one clock.
    Run {
        start_unix_ns: u64,
    },
    Clean,
    DeleteBuckets {
        names: Vec<String>,
    },
    Exit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Hello {
        version: String,
        pid: u32,
    },
    Opened {
        target: String,
    },
    Buckets {
        created: Vec<String>,
        existed: Vec<String>,
    },
    Prepared {
        prepared: Prepared,
    },
    Ops {
        ops: Vec<WireOp>,
    },
    Done {
        outcome: RunOutcome,
        /// How late the driver started after the agreed moment, ns.
        late_start_ns: u64,
    },
    Cleaned {
        deleted: u64,
    },
    BucketsDeleted {
        errors: Vec<String>,
    },
    Error {
        message: String,
    },
    Bye,
}

/// A driver's side of the conversation.
pub trait Link {
    /// The next command; None at the end of the input.
    fn recv(&mut self) -> Result<Option<Command>, String>;
    fn send(&mut self, e: Event) -> Result<(), String>;
}

/// JSON lines over a reader and a writer (stdin and stdout of `qoslab s3-driver`).
pub struct Lines<R, W> {
    pub input: R,
    pub output: W,
}

impl<R: BufRead, W: Write> Link for Lines<R, W> {
    fn recv(&mut self) -> Result<Option<Command>, String> {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .input
                .read_line(&mut line)
                .map_err(|e| format!("reading a command: {e}"))?;
            if n == 0 {
                return Ok(None);
            }
            if !line.trim().is_empty() {
                break;
            }
        }
        serde_json::from_str(line.trim())
            .map(Some)
            .map_err(|e| format!("command {:?}: {e}", line.trim()))
    }

    fn send(&mut self, e: Event) -> Result<(), String> {
        let mut s = serde_json::to_string(&e).map_err(|e| e.to_string())?;
        s.push('\n');
        self.output
            .write_all(s.as_bytes())
            .and_then(|_| self.output.flush())
            .map_err(|e| format!("writing an event: {e}"))
    }
}

/// Channels (a driver in the coordinator's process).
pub struct Channels {
    pub commands: mpsc::Receiver<Command>,
    pub events: mpsc::Sender<Event>,
}

impl Link for Channels {
    fn recv(&mut self) -> Result<Option<Command>, String> {
        Ok(self.commands.recv().ok())
    }
    fn send(&mut self, e: Event) -> Result<(), String> {
        self.events
            .send(e)
            .map_err(|_| "the coordinator is gone".to_string())
    }
}

/// Makes the target a test runs against.
pub type Opener =
    dyn Fn(&Endpoint, &TestSpec) -> Result<Arc<dyn ObjectTarget>, S3Error> + Send + Sync;

/// The real opener: S3 over HTTP.
pub fn open_http(ep: &Endpoint, test: &TestSpec) -> Result<Arc<dyn ObjectTarget>, S3Error> {
    Ok(Arc::new(super::http::HttpTarget::new(ep, test.timeout)?))
}

/// The wall clock in nanoseconds since the Unix epoch: the clock of `run`'s
/// `start_unix_ns`, read by the coordinator that sets it and the drivers that wait for it.
pub fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Run a driver: answer commands until `exit` or the end of the input.
pub fn serve(link: &mut dyn Link, open: &Opener) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    link.send(Event::Hello {
        version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
    })?;
    let mut state: Option<(Arc<dyn ObjectTarget>, Driver)> = None;
    while let Some(cmd) = link.recv()? {
        let reply = match (cmd, &mut state) {
            (Command::Exit, _) => {
                link.send(Event::Bye)?;
                return Ok(());
            }
            (Command::Open { endpoint, test }, _) => {
                let _guard = rt.enter();
                match open(&endpoint, &test) {
                    Ok(t) => {
                        let d = Driver::new(*test, t.clone());
                        let e = Event::Opened {
                            target: t.describe(),
                        };
                        state = Some((t, d));
                        e
                    }
                    Err(e) => Event::Error {
                        message: e.to_string(),
                    },
                }
            }
            (_, None) => Event::Error {
                message: "no test opened yet (send open first)".into(),
            },
            (Command::CreateBuckets { names }, Some((t, _))) => {
                match rt.block_on(driver::create_buckets(t.as_ref(), &names)) {
                    Ok((created, existed)) => Event::Buckets { created, existed },
                    Err(e) => Event::Error {
                        message: e.to_string(),
                    },
                }
            }
            (Command::Prepare, Some((_, d))) => match rt.block_on(d.prepare()) {
                Ok(prepared) => Event::Prepared { prepared },
                Err(e) => Event::Error {
                    message: e.to_string(),
                },
            },
            (Command::Run { start_unix_ns }, Some((_, d))) => run(&rt, link, d, start_unix_ns)?,
            (Command::Clean, Some((_, d))) => match rt.block_on(d.clean()) {
                Ok(deleted) => Event::Cleaned { deleted },
                Err(e) => Event::Error {
                    message: e.to_string(),
                },
            },
            (Command::DeleteBuckets { names }, Some((t, _))) => Event::BucketsDeleted {
                errors: rt.block_on(driver::delete_buckets(t.as_ref(), &names)),
            },
        };
        link.send(reply)?;
    }
    Ok(())
}

/// The timed phase: wait for the agreed moment, run, stream the records every second.
fn run(
    rt: &tokio::runtime::Runtime,
    link: &mut dyn Link,
    d: &mut Driver,
    start_unix_ns: u64,
) -> Result<Event, String> {
    rt.block_on(async {
        let wait = start_unix_ns.saturating_sub(now_unix_ns());
        if wait > 0 {
            tokio::time::sleep(Duration::from_nanos(wait.min(60_000_000_000))).await;
        }
        let late = now_unix_ns().saturating_sub(start_unix_ns);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        let mut batch: Vec<WireOp> = Vec::new();
        let outcome = {
            let fut = d.run(tx);
            tokio::pin!(fut);
            loop {
                tokio::select! {
                    out = &mut fut => break out,
                    _ = tick.tick() => {
                        while let Ok(r) = rx.try_recv() {
                            batch.push(WireOp::from(&r));
                        }
                        flush(link, &mut batch)?;
                    }
                }
            }
        };
        while let Some(r) = rx.recv().await {
            batch.push(WireOp::from(&r));
        }
        flush(link, &mut batch)?;
        Ok(Event::Done {
            outcome,
            late_start_ns: late,
        })
    })
}

fn flush(link: &mut dyn Link, batch: &mut Vec<WireOp>) -> Result<(), String> {
    while !batch.is_empty() {
        let rest = batch.split_off(batch.len().min(OPS_PER_EVENT));
        let ops = std::mem::replace(batch, rest);
        link.send(Event::Ops { ops })?;
    }
    Ok(())
}

/// A driver on a thread of this process, talking over channels.
pub struct LocalDriver {
    pub commands: mpsc::Sender<Command>,
    pub events: mpsc::Receiver<Event>,
    pub thread: std::thread::JoinHandle<Result<(), String>>,
}

/// Start a driver on a thread (`open` makes its target).
pub fn spawn_local(open: Arc<Opener>) -> LocalDriver {
    let (ctx, crx) = mpsc::channel();
    let (etx, erx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("s3-driver".into())
        .spawn(move || {
            let mut link = Channels {
                commands: crx,
                events: etx,
            };
            serve(&mut link, open.as_ref())
        });
    let thread = match thread {
        Ok(t) => t,
        // No thread: a driver that says so and ends.
        Err(e) => std::thread::spawn(move || Err(format!("starting the driver thread: {e}"))),
    };
    LocalDriver {
        commands: ctx,
        events: erx,
        thread,
    }
}
