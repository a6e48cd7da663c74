//! One ActiveMQ demo client (`activemq producer` or `activemq consumer`) as a child process
//! in its own process group (registered for signal teardown), its output read as it comes:
//! the moment it started, every message it logged with the time this process read the
//! line, and the tail of everything else (exceptions) for failure messages.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::activemq::{parse_line, Line};
use crate::apps::proc;

/// Lines kept for failure messages.
const TAIL_LINES: usize = 40;

/// What a client logged so far.
#[derive(Debug, Default)]
pub struct Log {
    /// When it said it started (connected, sending or subscribed).
    pub started: Option<Instant>,
    /// Messages (producer prefix id, sequence, when the line was read).
    pub messages: Vec<(u32, u64, Instant)>,
    /// Producer prefixes, indexed by the first field of `messages`.
    pub prefixes: Vec<String>,
    /// The last lines that were not messages (stdout and stderr).
    pub tail: VecDeque<String>,
}

impl Log {
    fn prefix_id(&mut self, p: &str) -> u32 {
        match self.prefixes.iter().position(|x| x == p) {
            Some(i) => i as u32,
            None => {
                self.prefixes.push(p.to_string());
                (self.prefixes.len() - 1) as u32
            }
        }
    }

    fn push_other(&mut self, line: &str) {
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line.to_string());
    }

    /// The non-message output, joined.
    pub fn tail_text(&self) -> String {
        self.tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

pub struct Client {
    child: Child,
    _reg: mounts::children::Registered,
    log: Arc<Mutex<Log>>,
    readers: Vec<JoinHandle<()>>,
}

fn lock(l: &Mutex<Log>) -> MutexGuard<'_, Log> {
    l.lock().unwrap_or_else(|p| p.into_inner())
}

fn read_into<R: Read + Send + 'static>(r: R, log: Arc<Mutex<Log>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            let now = Instant::now();
            let mut l = lock(&log);
            match parse_line(&line) {
                Line::Sent(p, s) | Line::Received(p, s) => {
                    let id = l.prefix_id(p);
                    l.messages.push((id, s, now));
                }
                Line::ProducerStarted | Line::ConsumerStarted => {
                    l.started.get_or_insert(now);
                }
                Line::Other => l.push_other(&line),
            }
        }
    })
}

impl Client {
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Client> {
        let (mut child, reg) =
            proc::spawn_group(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))?;
        let log = Arc::new(Mutex::new(Log::default()));
        let mut readers = Vec::new();
        if let Some(o) = child.stdout.take() {
            readers.push(read_into(o, log.clone()));
        }
        if let Some(e) = child.stderr.take() {
            readers.push(read_into(e, log.clone()));
        }
        Ok(Client {
            child,
            _reg: reg,
            log,
            readers,
        })
    }

    pub fn log(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// Whether it has exited (by itself).
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait until `ready` finds what it looks for in the log; fails when the client exits
    /// first or at `deadline`.
    pub fn wait_for<T>(
        &mut self,
        deadline: Instant,
        mut ready: impl FnMut(&Log) -> Option<T>,
    ) -> Result<T, proc::NotReady> {
        let log = self.log.clone();
        proc::wait_ready(&mut self.child, deadline, || ready(&lock(&log)))
    }

    /// Wait until it says it started, it exits, or `deadline`.
    pub fn wait_started(&mut self, deadline: Instant) -> Result<Instant, String> {
        self.wait_for(deadline, |l| l.started).map_err(|e| match e {
            proc::NotReady::Exited(_) => "exited before it started".into(),
            proc::NotReady::TimedOut => "did not start in time".into(),
        })
    }

    /// Stop it (SIGTERM, SIGKILL after `grace`) and wait until its output is read.
    pub fn stop(mut self, grace: Duration) -> Log {
        proc::stop_group(&mut self.child, grace);
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        std::mem::take(&mut *lock(&self.log))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            proc::kill_group(&mut self.child);
        }
    }
}
