//! The `broker` workload (seed 004's JBoss AMQ: a producer and a consumer on one
//! destination for a fixed time, the broker's throughput as the figure). Each tenant runs
//! its own Apache ActiveMQ broker (Debian's package, [`activemq`]) with its KahaDB store on
//! the tenant's file system and every persistent message stored before its send is
//! acknowledged. Per iteration, ActiveMQ's own command-line tools ([`client`]) move
//! persistent messages:
//!
//! 1. **consumer**: `activemq consumer` subscribes (durably, on a topic);
//! 2. **produce**: `activemq producer` sends for `secs` seconds, then is stopped;
//! 3. **drain**: the consumer takes what is left, until it has every acknowledged message
//!    or nothing arrived for [`DRAIN_QUIET`], then is stopped.
//!
//! Every message the producer logged as sent (after its `send` returned: acknowledged) is
//! looked for among the consumer's receipts by id and sequence number ([`tally`]). Metrics:
//! `in_msgs_per_sec` (acknowledged sends over the producing time), `out_msgs_per_sec`
//! (receipts over the consumer's time from the producer's start to its last receipt),
//! `sent`, `received`, `lost`, `duplicates`. An iteration fails when a tool exits with an
//! error (a full store or ENOSPC is [`FailureKind::NoSpace`]), nothing was sent, or an
//! acknowledged message was lost.

pub mod activemq;
pub mod client;
pub mod tally;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::apps::proc::NotReady;
use crate::apps::{App, Failure, FailureKind, Iteration, TenantApp, TenantEnv};
use activemq::Destination;
use client::{Client, Log};

/// How long the consumer may receive nothing before the drain ends.
pub const DRAIN_QUIET: Duration = Duration::from_secs(3);
/// How long a tool gets to exit on SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// The workload's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerSpec {
    /// Seconds the producer sends per iteration (the seed's run: 300).
    pub secs: u32,
    /// Bytes per message.
    pub message_size: u32,
    pub destination: Destination,
    /// The broker JVM's heap (MiB).
    pub heap_mib: u32,
}

impl Default for BrokerSpec {
    /// 10 s of 1 KiB persistent messages through a topic (the seed's) per iteration.
    fn default() -> BrokerSpec {
        BrokerSpec {
            secs: 10,
            message_size: 1024,
            destination: Destination::Topic,
            heap_mib: 128,
        }
    }
}

impl BrokerSpec {
    /// Check the values; the message names the field and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        let range = |v: u32, lo: u32, hi: u32, f: &str| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("broker.{f} = {v}: allowed {lo} to {hi}"))
            }
        };
        range(self.secs, 1, 3600, "secs")?;
        range(self.message_size, 1, 16 << 20, "message_size")?;
        range(self.heap_mib, 64, 16384, "heap_mib")
    }
}

/// The broker application.
pub struct BrokerApp {
    pub spec: BrokerSpec,
}

/// Write `text` to `path`, the failure naming the file.
fn write(step: &str, path: &Path, text: &str) -> Result<(), Failure> {
    fs::write(path, text).map_err(|e| Failure::classify(step, format!("{}: {e}", path.display())))
}

fn mkdir(step: &str, path: &Path) -> Result<(), Failure> {
    fs::create_dir_all(path)
        .map_err(|e| Failure::classify(step, format!("{}: {e}", path.display())))
}

impl App for BrokerApp {
    fn name(&self) -> &'static str {
        "broker"
    }

    /// Start the tenant's broker (its configuration and logs off the tenant's file system,
    /// its store on it) and wait until it listens.
    fn start(&self, env: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure> {
        let step = "start broker";
        activemq::check_installed().map_err(|m| Failure::classify(step, m))?;
        let conf = env.scratch_dir.join(format!("{}-activemq", env.tenant));
        let broker_conf = conf.join("broker");
        let client_conf = conf.join("client");
        let data = env.data_dir.join("activemq");
        for d in [&broker_conf, &client_conf, &data] {
            mkdir(step, d)?;
        }
        let xml = broker_conf.join("activemq.xml");
        write(step, &xml, &activemq::broker_xml(&env.tenant, &data))?;
        write(
            step,
            &broker_conf.join("log4j.properties"),
            activemq::BROKER_LOG4J,
        )?;
        write(
            step,
            &client_conf.join("log4j.properties"),
            activemq::CLIENT_LOG4J,
        )?;
        let mut cmd = activemq::java(self.spec.heap_mib, &broker_conf, &data);
        cmd.arg("start")
            .arg(format!("xbean:file:{}", xml.display()))
            .current_dir(&conf);
        let mut broker = Client::spawn(&mut cmd)
            .map_err(|e| Failure::classify(step, format!("cannot start java (ActiveMQ): {e}")))?;
        let deadline = Instant::now() + env.timeout;
        let listening = broker.wait_for(deadline, |log| {
            log.tail.iter().find_map(|l| activemq::listening_port(l))
        });
        let port = match listening {
            Ok(p) => p,
            Err(e) => {
                let why = match e {
                    NotReady::Exited(_) => "the broker exited while starting",
                    NotReady::TimedOut => "the broker did not listen in time",
                };
                let log = broker.stop(GRACE);
                return Err(failure(step, why, &log));
            }
        };
        Ok(Box::new(BrokerTenant {
            spec: self.spec,
            broker: Some(broker),
            port,
            client_conf,
            data,
            timeout: env.timeout,
        }))
    }
}

/// A failure quoting a tool's exceptions (a full store or ENOSPC is `NoSpace`).
fn failure(step: &str, why: &str, log: &Log) -> Failure {
    let text = log.tail_text();
    let errors = activemq::error_lines(&text);
    let detail = if errors.is_empty() {
        crate::apps::proc::tail(&text)
    } else {
        errors
    };
    let message = format!("{why}: {detail}");
    Failure {
        kind: if activemq::is_store_full(&message) {
            FailureKind::NoSpace
        } else {
            FailureKind::App
        },
        step: step.to_string(),
        message,
    }
}

struct BrokerTenant {
    spec: BrokerSpec,
    broker: Option<Client>,
    port: u16,
    client_conf: PathBuf,
    data: PathBuf,
    timeout: Duration,
}

impl BrokerTenant {
    fn tool(&self, args: Vec<String>) -> Command {
        let mut c = activemq::java(64, &self.client_conf, &self.data);
        c.args(args);
        c
    }

    /// The broker's own failure, if it died.
    fn broker_gone(&mut self) -> Option<Failure> {
        let b = self.broker.as_mut()?;
        if !b.exited() {
            return None;
        }
        let b = self.broker.take()?;
        let log = b.stop(GRACE);
        Some(failure("broker", "the broker exited", &log))
    }

    fn run(&mut self, it: &mut Iteration, deadline: Instant) -> Result<(), Failure> {
        let spec = self.spec;
        let t0 = Instant::now();
        let mut consumer =
            Client::spawn(&mut self.tool(activemq::consumer_args(self.port, spec.destination)))
                .map_err(|e| Failure::classify("consumer", format!("cannot start java: {e}")))?;
        if let Err(why) = consumer.wait_started(deadline) {
            let log = consumer.stop(GRACE);
            return Err(failure("consumer", &format!("the consumer {why}"), &log));
        }
        it.add_step("subscribe", t0.elapsed().as_secs_f64());
        let mut producer = Client::spawn(&mut self.tool(activemq::producer_args(
            self.port,
            spec.destination,
            spec.message_size,
        )))
        .map_err(|e| Failure::classify("producer", format!("cannot start java: {e}")))?;
        let started = match producer.wait_started(deadline) {
            Ok(t) => t,
            Err(why) => {
                let log = producer.stop(GRACE);
                drop(consumer);
                return Err(failure("producer", &format!("the producer {why}"), &log));
            }
        };
        // Produce for `secs` (or until a tool or the broker fails).
        let end = (started + Duration::from_secs(spec.secs as u64)).min(deadline);
        let early = produce_until(&mut producer, &mut consumer, end);
        let stopped = Instant::now();
        let plog = producer.stop(GRACE);
        let producing = stopped.duration_since(started).as_secs_f64();
        it.add_step("produce", producing);
        if let Some(f) = self.broker_gone() {
            return Err(f);
        }
        if early == Some("producer") {
            drop(consumer);
            return Err(failure("produce", "the producer exited", &plog));
        }
        let sent: Vec<u64> = plog.messages.iter().map(|m| m.1).collect();
        let prefix = plog.prefixes.first().cloned();
        // Drain: until every acknowledged message is in, or the consumer went quiet.
        let d0 = Instant::now();
        if early.is_none() {
            drain(&mut consumer, (prefix.as_deref(), &sent), deadline);
        }
        let consumer_exited = consumer.exited();
        let clog = consumer.stop(GRACE);
        it.add_step("drain", d0.elapsed().as_secs_f64());
        if consumer_exited {
            return Err(failure("consume", "the consumer exited", &clog));
        }
        let received: Vec<(&str, u64)> = clog
            .messages
            .iter()
            .map(|m| (clog.prefixes[m.0 as usize].as_str(), m.1))
            .collect();
        let t = tally::tally(prefix.as_deref(), &sent, &received);
        let last_in = clog
            .messages
            .iter()
            .filter(|m| prefix.as_deref() == Some(clog.prefixes[m.0 as usize].as_str()))
            .map(|m| m.2)
            .max();
        let consuming = last_in
            .map(|l| l.saturating_duration_since(started).as_secs_f64())
            .unwrap_or(0.0);
        it.add_metric(
            "in_msgs_per_sec",
            t.sent as f64 / producing.max(1e-9),
            "msg/s",
        );
        if consuming > 0.0 {
            it.add_metric("out_msgs_per_sec", t.received as f64 / consuming, "msg/s");
        }
        it.add_metric("sent", t.sent as f64, "msgs");
        it.add_metric("received", t.received as f64, "msgs");
        it.add_metric("lost", t.lost as f64, "msgs");
        it.add_metric("duplicates", t.duplicates as f64, "msgs");
        if t.sent == 0 {
            return Err(failure(
                "produce",
                "the producer sent nothing acknowledged",
                &plog,
            ));
        }
        if t.lost > 0 {
            return Err(Failure::classify(
                "consume",
                format!(
                    "{} of {} acknowledged messages never arrived (first lost: sequence {})",
                    t.lost,
                    t.sent,
                    t.first_lost.unwrap_or(0)
                ),
            ));
        }
        Ok(())
    }
}

/// Produces until `end`, or until the producer or the consumer exits (which: the result).
fn produce_until(
    producer: &mut Client,
    consumer: &mut Client,
    end: Instant,
) -> Option<&'static str> {
    while Instant::now() < end {
        if producer.exited() {
            return Some("producer");
        }
        if consumer.exited() {
            return Some("consumer");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Waits until every acknowledged message (`sent`, under `prefix`) is in, the consumer
/// went quiet for `DRAIN_QUIET` or exited, or the deadline.
fn drain(consumer: &mut Client, (prefix, sent): (Option<&str>, &[u64]), deadline: Instant) {
    let all_in = |c: &Client| {
        let l = c.log();
        let pid = prefix.and_then(|p| l.prefixes.iter().position(|x| x == p));
        let got: std::collections::HashSet<u64> = l
            .messages
            .iter()
            .filter(|m| Some(m.0 as usize) == pid)
            .map(|m| m.1)
            .collect();
        sent.iter().all(|s| got.contains(s))
    };
    let mut last_count = 0;
    let mut last_change = Instant::now();
    while Instant::now() < deadline && !consumer.exited() {
        if all_in(consumer) {
            break;
        }
        let n = consumer.log().messages.len();
        if n != last_count {
            last_count = n;
            last_change = Instant::now();
        } else if last_change.elapsed() >= DRAIN_QUIET {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl TenantApp for BrokerTenant {
    fn iteration(&mut self, _n: u32) -> Iteration {
        let t0 = Instant::now();
        let mut it = Iteration::default();
        let r = match self.broker_gone() {
            Some(f) => Err(f),
            None if self.broker.is_none() => Err(Failure::classify(
                "broker",
                "the broker is not running".into(),
            )),
            None => self.run(&mut it, t0 + self.timeout),
        };
        if let Err(f) = r {
            it.failure = Some(if Instant::now() >= t0 + self.timeout {
                Failure::timeout(&f.step, self.timeout)
            } else {
                f
            });
        }
        it.secs = t0.elapsed().as_secs_f64();
        it
    }

    fn stop(&mut self) -> Result<(), Failure> {
        match self.broker.take() {
            Some(b) => {
                b.stop(Duration::from_secs(15));
                Ok(())
            }
            None => Ok(()),
        }
    }
}

impl Drop for BrokerTenant {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_values_are_checked_with_the_field_named() {
        assert!(BrokerSpec::default().validate().is_ok());
        let e = BrokerSpec {
            secs: 0,
            ..BrokerSpec::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e, "broker.secs = 0: allowed 1 to 3600");
        let e = BrokerSpec {
            heap_mib: 8,
            ..BrokerSpec::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.starts_with("broker.heap_mib = 8"), "{e}");
    }

    /// A real broker: messages move, every acknowledged one arrives, the store is on the
    /// tenant's directory, and stopping leaves no JVM behind.
    #[test]
    fn a_real_broker_moves_every_acknowledged_message() {
        let d = crate::test_dir("broker");
        let data = d.path().join("fs");
        let app = BrokerApp {
            spec: BrokerSpec {
                secs: 2,
                ..BrokerSpec::default()
            },
        };
        let env = TenantEnv {
            tenant: format!("t{}", std::process::id()),
            data_dir: data.clone(),
            scratch_dir: d.path().join("scratch"),
            timeout: Duration::from_secs(120),
        };
        let mut t = app.start(&env).unwrap();
        let it = t.iteration(1);
        assert!(it.ok(), "{:?}", it.failure);
        let sent = it.metric("sent").unwrap();
        assert!(sent > 0.0, "{it:?}");
        assert_eq!(it.metric("lost"), Some(0.0));
        assert!(it.metric("received").unwrap() >= sent);
        assert!(it.metric("in_msgs_per_sec").unwrap() > 0.0);
        assert!(it.metric("out_msgs_per_sec").unwrap() > 0.0);
        assert!(data.join("activemq/kahadb/db.data").is_file());
        t.stop().unwrap();
    }
}
