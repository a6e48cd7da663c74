//! `--suite network` (seed 002, "Benchmarking the network").
//!
//! Every host i runs one iperf3 server per peer j, on port `base_port + j`, so each client
//! has its own server (an iperf3 server serves one test at a time). Then:
//! 1. connectivity: every ordered pair (i → j) in turn, `iperf3 -c j -p base+i -J -t N`;
//! 2. under load: every host sends to every other at once (one ssh session per host starts
//!    all of its clients together).
//!
//! Verdicts (thresholds overridable): a connectivity pair passes when its goodput is at
//! least `min_fraction` x the rated speed (the lower of both ends') and its retransmits at
//! most `max_retransmits`; under load, each host's cumulative out and in must each reach
//! `min_fraction` x its rated speed, and every pair keeps to `max_retransmits`. A figure
//! missed while a host it ran on was starved (some task waited for a CPU at least the
//! starved-host threshold of the test: [`crate::stall`]) is inconclusive, never a failure.

use std::fmt::Write as _;

use serde::Serialize;

use crate::iperf::{self, IperfRun};
use crate::{stall, Session, SuiteError};

/// What to run.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkPlan {
    /// Seconds per iperf3 test (after `omit_s`).
    pub seconds: u32,
    /// Seconds at the start of each test left out of the figures (TCP slow start).
    pub omit_s: u32,
    /// Rated link speed, Mbit/s, for every host; `None`: each host's fastest NIC from its facts.
    pub rated_mbps: Option<u64>,
    pub min_fraction: f64,
    pub max_retransmits: u64,
    pub base_port: u16,
    pub connectivity: bool,
    pub under_load: bool,
}

impl Default for NetworkPlan {
    fn default() -> NetworkPlan {
        NetworkPlan {
            seconds: 10,
            omit_s: 1,
            rated_mbps: None,
            min_fraction: 0.9,
            max_retransmits: 100,
            base_port: 30001,
            connectivity: true,
            under_load: true,
        }
    }
}

/// One ordered pair's test.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub from: String,
    pub to: String,
    /// The lower rated speed of both ends, Mbit/s (None: unknown).
    pub rated_mbps: Option<u64>,
    pub run: Option<IperfRun>,
    pub error: Option<String>,
    /// Goodput at or above the threshold (None: not judged: unknown rate, or under load).
    pub rate_ok: Option<bool>,
    pub retransmits_ok: bool,
    /// The share of the test in which some task waited for a CPU on the sender and on the
    /// receiver, percent (PSI; None: unknown there).
    pub cpu_wait_pct: [Option<f64>; 2],
    /// The iperf3 command the sender ran.
    pub command: String,
    /// iperf3's JSON as printed.
    #[serde(skip)]
    pub raw: String,
}

impl Pair {
    pub fn goodput_mbps(&self) -> f64 {
        self.run.as_ref().map_or(0.0, |r| r.goodput_bps / 1e6)
    }
    /// Every figure held.
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.rate_ok != Some(false) && self.retransmits_ok
    }
    /// Why a missed figure says nothing about the network (a host of the pair starved).
    pub fn starved(&self) -> Option<String> {
        crate::stall::starved([
            (self.from.as_str(), self.cpu_wait_pct[0]),
            (self.to.as_str(), self.cpu_wait_pct[1]),
        ])
    }
    /// A verdict failed: iperf3 did not run, or a figure missed on hosts that were not
    /// starved (missed on a starved host, the pair is inconclusive).
    pub fn failed(&self) -> bool {
        self.error.is_some() || (!self.passed() && self.starved().is_none())
    }
}

/// A host's cumulative traffic under load.
#[derive(Debug, Clone, Serialize)]
pub struct HostTotal {
    pub host: String,
    pub rated_mbps: Option<u64>,
    /// Where the rated speed comes from (`given`, `eth0 (route to peers)`, ...).
    pub rated_from: String,
    pub out_mbps: f64,
    pub in_mbps: f64,
    pub out_ok: Option<bool>,
    pub in_ok: Option<bool>,
    /// The share of the load in which some task waited for a CPU on this host, percent.
    pub cpu_wait_pct: Option<f64>,
    /// Why a missed total says nothing about the network: a host of the mesh (every one
    /// sends to and receives from this one) starved during the load.
    pub starved: Option<String>,
}

impl HostTotal {
    /// A total missed on hosts that were not starved.
    pub fn failed(&self) -> bool {
        (self.out_ok == Some(false) || self.in_ok == Some(false)) && self.starved.is_none()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct NetworkResult {
    pub plan: NetworkPlan,
    pub hosts: Vec<String>,
    pub connectivity: Vec<Pair>,
    pub under_load: Vec<Pair>,
    pub totals: Vec<HostTotal>,
}

impl NetworkResult {
    /// Every verdict held.
    pub fn passed(&self) -> bool {
        self.connectivity.iter().all(Pair::passed)
            && self
                .under_load
                .iter()
                .all(|p| p.error.is_none() && p.retransmits_ok)
            && self
                .totals
                .iter()
                .all(|t| t.out_ok != Some(false) && t.in_ok != Some(false))
    }

    /// A verdict failed (not only missed on a starved host).
    pub fn failed(&self) -> bool {
        self.connectivity.iter().any(Pair::failed)
            || self
                .under_load
                .iter()
                .any(|p| p.error.is_some() || (!p.retransmits_ok && p.starved().is_none()))
            || self.totals.iter().any(HostTotal::failed)
    }

    /// `PASS`, `FAIL`, or `INCONCLUSIVE` (a figure missed only on starved hosts).
    pub fn verdict(&self) -> &'static str {
        if self.passed() {
            "PASS"
        } else if self.failed() {
            "FAIL"
        } else {
            "INCONCLUSIVE"
        }
    }

    /// The connectivity pairs that failed a verdict (not those only inconclusive).
    pub fn failing_pairs(&self) -> Vec<(String, String)> {
        self.connectivity
            .iter()
            .filter(|p| p.failed())
            .map(|p| (p.from.clone(), p.to.clone()))
            .collect()
    }

    /// The matrices and totals as text: rows send, columns receive, Mbit/s; `!` marks a
    /// failed verdict.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (title, pairs) in [
            ("connectivity (one pair at a time)", &self.connectivity),
            ("under load (all pairs at once)", &self.under_load),
        ] {
            if pairs.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "{title}: goodput Mbit/s, retransmits; rows send, columns receive"
            );
            let w = self.hosts.iter().map(|h| h.len()).max().unwrap_or(4).max(6);
            let _ = write!(s, "{:w$}", "");
            for h in &self.hosts {
                let _ = write!(s, " {h:>16}");
            }
            s.push('\n');
            for from in &self.hosts {
                let _ = write!(s, "{from:w$}");
                for to in &self.hosts {
                    let cell = match pairs.iter().find(|p| &p.from == from && &p.to == to) {
                        None => "-".to_string(),
                        Some(p) if p.error.is_some() => "error !".to_string(),
                        Some(p) => format!(
                            "{:.0} r{}{}",
                            p.goodput_mbps(),
                            p.run.as_ref().map_or(0, |r| r.retransmits),
                            mark(p.passed(), p.failed())
                        ),
                    };
                    let _ = write!(s, " {cell:>16}");
                }
                s.push('\n');
            }
        }
        if !self.totals.is_empty() {
            let _ = writeln!(s, "per host under load (Mbit/s):");
            for t in &self.totals {
                let unexplained = t.starved.is_none();
                let m = |ok: Option<bool>| mark(ok != Some(false), unexplained);
                let _ = writeln!(
                    s,
                    "  {:10} out {:7.0}{}  in {:7.0}{}  rated {}",
                    t.host,
                    t.out_mbps,
                    m(t.out_ok),
                    t.in_mbps,
                    m(t.in_ok),
                    t.rated_mbps.map_or("?".into(), |r| r.to_string())
                );
            }
        }
        for p in self.connectivity.iter().chain(&self.under_load) {
            if let Some(e) = &p.error {
                let _ = writeln!(s, "  {} -> {}: {e}", p.from, p.to);
            } else if let (false, Some(why)) = (p.passed(), p.starved()) {
                let _ = writeln!(s, "  {} -> {}: inconclusive, {why}", p.from, p.to);
            }
        }
        for t in self.totals.iter().filter(|t| !t.failed()) {
            if let (true, Some(why)) = (
                t.out_ok == Some(false) || t.in_ok == Some(false),
                &t.starved,
            ) {
                let _ = writeln!(s, "  {} under load: inconclusive, {why}", t.host);
            }
        }
        let _ = writeln!(
            s,
            "verdict: {} (pair >= {:.0}% of rated, retransmits <= {}; ! failed, ? missed on a starved host)",
            self.verdict(),
            self.plan.min_fraction * 100.0,
            self.plan.max_retransmits
        );
        s
    }
}

/// A matrix cell's mark: nothing when every figure held, `!` when a verdict failed, `?`
/// when a figure missed only on a starved host.
fn mark(passed: bool, failed: bool) -> &'static str {
    match (passed, failed) {
        (true, _) => "",
        (false, true) => " !",
        (false, false) => " ?",
    }
}

fn client_cmd(addr: &str, port: u16, plan: &NetworkPlan) -> String {
    format!(
        "iperf3 -c {} -p {port} -t {} -O {} -J",
        hosts::quote(addr),
        plan.seconds,
        plan.omit_s
    )
}

/// The mesh ready to measure: the plan validated, every iperf3 server listening, each
/// host's rated speed known. Measure pairs in turn ([`Mesh::connectivity`]) and all pairs
/// at once ([`Mesh::under_load`]); the servers stop when it is dropped.
pub struct Mesh {
    /// Host names, in session order.
    pub hosts: Vec<String>,
    pub plan: NetworkPlan,
    /// Per host: the rated speed, Mbit/s, and where it comes from.
    pub rated: Vec<(Option<u64>, String)>,
    _servers: Vec<hosts::RemoteProc>,
}

impl Mesh {
    pub fn start(s: &Session, plan: &NetworkPlan) -> Result<Mesh, SuiteError> {
        let n = s.hosts.len();
        if n < 2 {
            return Err(SuiteError::Invalid(
                "the network suite needs at least 2 hosts".into(),
            ));
        }
        if plan.seconds == 0 || !(0.0..=1.0).contains(&plan.min_fraction) {
            return Err(SuiteError::Invalid(format!(
                "seconds {} (>= 1), min_fraction {} (0..=1)",
                plan.seconds, plan.min_fraction
            )));
        }
        if plan.base_port as usize + n > 65535 {
            return Err(SuiteError::Invalid(format!(
                "base_port {} + {n} hosts > 65535",
                plan.base_port
            )));
        }
        let rated = (0..n).map(|i| rated_of(s, i, plan)).collect();
        // Servers: on host i, one per peer j, on port base + j.
        s.say(&format!("network: starting {} iperf3 servers", n * (n - 1)));
        let mut servers = Vec::new();
        for (i, h) in s.hosts.iter().enumerate() {
            for j in (0..n).filter(|&j| j != i) {
                servers.push(hosts::remote::iperf3_server(
                    h,
                    &s.rundir,
                    plan.base_port + j as u16,
                    s.lease,
                )?);
            }
        }
        Ok(Mesh {
            hosts: s.hosts.iter().map(|h| h.name.clone()).collect(),
            plan: plan.clone(),
            rated,
            _servers: servers,
        })
    }

    /// Every ordered pair, in the order connectivity measures them.
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        let n = self.hosts.len();
        (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .collect()
    }

    /// The iperf3 command host `i` runs to measure the pair (i → j).
    pub fn command(&self, s: &Session, i: usize, j: usize) -> String {
        client_cmd(&s.hosts[j].addr, self.plan.base_port + i as u16, &self.plan)
    }

    fn judge(
        &self,
        s: &Session,
        (i, j): (usize, usize),
        r: Result<IperfRun, String>,
        raw: String,
        rate: bool,
        cpu_wait_pct: [Option<f64>; 2],
    ) -> Pair {
        let plan = &self.plan;
        let pr = match (self.rated[i].0, self.rated[j].0) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let (run, error) = match r {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        let rate_ok = match (&run, pr, rate) {
            (Some(r), Some(m), true) => Some(r.goodput_bps >= plan.min_fraction * m as f64 * 1e6),
            _ => None,
        };
        let retransmits_ok = run
            .as_ref()
            .is_some_and(|r| r.retransmits <= plan.max_retransmits);
        Pair {
            from: self.hosts[i].clone(),
            to: self.hosts[j].clone(),
            rated_mbps: pr,
            run,
            error,
            rate_ok,
            retransmits_ok,
            cpu_wait_pct,
            command: self.command(s, i, j),
            raw,
        }
    }

    /// The pair (i → j) alone.
    pub fn connectivity(&self, s: &Session, i: usize, j: usize) -> Result<Pair, SuiteError> {
        let before = [stall::read(&s.hosts[i]), stall::read(&s.hosts[j])];
        let out = s.hosts[i].run(&self.command(s, i, j))?;
        let after = [stall::read(&s.hosts[i]), stall::read(&s.hosts[j])];
        let waits = [0, 1].map(|k| stall::wait_pct(before[k], after[k]));
        let r = iperf::parse(&out.stdout).map_err(|e| {
            if out.stderr.trim().is_empty() {
                e
            } else {
                format!("{e}; stderr: {}", out.stderr.trim())
            }
        });
        let p = self.judge(s, (i, j), r, out.stdout, true, waits);
        s.say(&format!(
            "network: {} -> {}: {:.0} Mbit/s, {} retransmits{}",
            p.from,
            p.to,
            p.goodput_mbps(),
            p.run.as_ref().map_or(0, |r| r.retransmits),
            p.error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ));
        Ok(p)
    }

    /// Every pair at once: the pairs and each host's cumulative out and in.
    pub fn under_load(&self, s: &Session) -> Result<(Vec<Pair>, Vec<HostTotal>), SuiteError> {
        let plan = &self.plan;
        let n = s.hosts.len();
        s.say(&format!(
            "network: all {} pairs at once for {} s",
            n * (n - 1),
            plan.seconds
        ));
        // Every host waits for the same wall-clock moment before starting its clients, so
        // ssh start-up skew does not shorten the overlap (hosts' clocks are NTP-close).
        let start_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64() + 1.0 + 0.1 * n as f64)
            .unwrap_or(0.0);
        let outputs: Vec<Result<String, hosts::HostError>> = std::thread::scope(|sc| {
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let script = load_script(s, i, plan, start_at);
                    let h = &s.hosts[i];
                    sc.spawn(move || h.run_ok(&script))
                })
                .collect();
            handles
                .into_iter()
                .map(|j| j.join().unwrap_or_else(|_| Ok(String::new())))
                .collect()
        });
        let mut sections = Vec::new();
        for out in outputs {
            sections.push(split_marked(&out?));
        }
        let section = |i: usize, key: &str| -> String {
            sections[i]
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, t)| t.clone())
                .unwrap_or_default()
        };
        // Each host's wait over the load, read by its own script around its clients.
        let waits: Vec<Option<f64>> = (0..n)
            .map(|i| {
                stall::wait_pct(
                    stall::parse(&section(i, STALL_BEFORE)),
                    stall::parse(&section(i, STALL_AFTER)),
                )
            })
            .collect();
        let mut under_load = Vec::new();
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let text = section(i, &peer_key(j));
                let r = iperf::parse(&text);
                under_load.push(self.judge(s, (i, j), r, text, false, [waits[i], waits[j]]));
            }
        }
        let starved = stall::starved(
            s.hosts
                .iter()
                .map(|h| h.name.as_str())
                .zip(waits.iter().copied()),
        );
        let mut totals = Vec::new();
        for (i, h) in s.hosts.iter().enumerate() {
            let sum = |f: &dyn Fn(&Pair) -> bool| -> f64 {
                under_load
                    .iter()
                    .filter(|p| f(p))
                    .map(Pair::goodput_mbps)
                    .sum()
            };
            let out_mbps = sum(&|p| p.from == h.name);
            let in_mbps = sum(&|p| p.to == h.name);
            let rated = self.rated[i].0;
            let ok = |v: f64| rated.map(|r| v >= plan.min_fraction * r as f64);
            totals.push(HostTotal {
                host: h.name.clone(),
                rated_mbps: rated,
                rated_from: self.rated[i].1.clone(),
                out_mbps,
                in_mbps,
                out_ok: ok(out_mbps),
                in_ok: ok(in_mbps),
                cpu_wait_pct: waits[i],
                starved: starved.clone(),
            });
        }
        Ok((under_load, totals))
    }
}

/// Host i's rated speed: the plan's, else the speed of the NIC its traffic to its first
/// peer leaves by (the route to that address), else its fastest up NIC.
fn rated_of(s: &Session, i: usize, plan: &NetworkPlan) -> (Option<u64>, String) {
    if let Some(r) = plan.rated_mbps {
        return (Some(r), "given".into());
    }
    let f = &s.facts[i];
    let peer = (0..s.hosts.len())
        .find(|&j| j != i)
        .map(|j| &s.hosts[j].addr);
    if let Some(nic) = peer.and_then(|a| f.nic_towards(a)) {
        if let Some(speed) = nic.speed_mbps {
            return (Some(speed), format!("{} (route to peers)", nic.name));
        }
    }
    match f.rated_nic_mbps() {
        Some(r) => (Some(r), "fastest up NIC".into()),
        None => (None, "unknown".into()),
    }
}

/// What starts each section of a load script's output; the rest of the line is its key.
const LOAD_MARK: &str = "@@qoslab@@ ";
/// The sections holding the host's CPU pressure before and after its clients ran.
const STALL_BEFORE: &str = "stall-before";
const STALL_AFTER: &str = "stall-after";

/// The section holding the output of the client to peer `j`.
fn peer_key(j: usize) -> String {
    format!("peer-{j}")
}

/// Host i's clients to every peer at once, each to its own server, between two readings
/// of its CPU pressure; outputs printed after.
fn load_script(s: &Session, i: usize, plan: &NetworkPlan, start_at: f64) -> String {
    let dir = hosts::quote(&s.rundir);
    let read = stall::READ;
    let mut script = format!(
        "mkdir -p {dir}\nsleep $(awk -v t={start_at:.3} -v n=\"$(date +%s.%N)\" 'BEGIN {{ d = t - n; if (d < 0 || d > 60) d = 0; printf \"%.3f\", d }}')\n{read} > {dir}/stall-{i}-before\n"
    );
    let peers: Vec<usize> = (0..s.hosts.len()).filter(|&j| j != i).collect();
    for &j in &peers {
        let _ = writeln!(
            script,
            "{} > {dir}/load-{i}-{j}.json 2>&1 &",
            client_cmd(&s.hosts[j].addr, plan.base_port + i as u16, plan)
        );
    }
    let _ = writeln!(script, "wait\n{read} > {dir}/stall-{i}-after");
    for &j in &peers {
        let _ = writeln!(
            script,
            "echo '{LOAD_MARK}{}'; cat {dir}/load-{i}-{j}.json",
            peer_key(j)
        );
    }
    for key in [STALL_BEFORE, STALL_AFTER] {
        let file = key.replace("stall-", &format!("stall-{i}-"));
        let _ = writeln!(script, "echo '{LOAD_MARK}{key}'; cat {dir}/{file}");
    }
    script
}

/// A load script's output, by section (key, text).
fn split_marked(out: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    for line in out.lines() {
        if let Some(key) = line.strip_prefix(LOAD_MARK) {
            v.push((key.trim().to_string(), String::new()));
        } else if let Some((_, t)) = v.last_mut() {
            t.push_str(line);
            t.push('\n');
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(from: &str, to: &str, mbps: f64, ok: bool) -> Pair {
        Pair {
            from: from.into(),
            to: to.into(),
            rated_mbps: Some(1000),
            run: Some(IperfRun {
                goodput_bps: mbps * 1e6,
                retransmits: 2,
                ..Default::default()
            }),
            error: None,
            rate_ok: Some(ok),
            retransmits_ok: true,
            cpu_wait_pct: [Some(3.0), None],
            command: String::new(),
            raw: String::new(),
        }
    }

    #[test]
    fn matrix_marks_failing_pairs() {
        let r = NetworkResult {
            plan: NetworkPlan::default(),
            hosts: vec!["a".into(), "b".into()],
            connectivity: vec![pair("a", "b", 950.0, true), pair("b", "a", 190.0, false)],
            under_load: Vec::new(),
            totals: Vec::new(),
        };
        let t = r.render();
        assert!(t.contains("950 r2"), "{t}");
        assert!(t.contains("190 r2 !"), "{t}");
        assert!(t.contains("verdict: FAIL"), "{t}");
        assert_eq!(r.failing_pairs(), vec![("b".to_string(), "a".to_string())]);
    }

    #[test]
    fn a_pair_missed_on_a_starved_host_is_inconclusive_not_failed() {
        let mut starved = pair("b", "a", 190.0, false);
        starved.cpu_wait_pct = [Some(12.0), Some(48.0)];
        let r = NetworkResult {
            plan: NetworkPlan::default(),
            hosts: vec!["a".into(), "b".into()],
            connectivity: vec![pair("a", "b", 950.0, true), starved],
            under_load: Vec::new(),
            totals: Vec::new(),
        };
        let t = r.render();
        assert!(t.contains("190 r2 ?"), "{t}");
        assert!(
            t.contains("b -> a: inconclusive, starved-host: some task on a waited for a CPU 48%"),
            "{t}"
        );
        assert!(t.contains("verdict: INCONCLUSIVE"), "{t}");
        assert!(!r.passed() && !r.failed());
        assert!(r.failing_pairs().is_empty());
        // Below the threshold the miss is the network's.
        let mut r = r;
        r.connectivity[1].cpu_wait_pct = [Some(12.0), Some(24.0)];
        assert_eq!(r.verdict(), "FAIL");
        assert_eq!(r.failing_pairs(), vec![("b".to_string(), "a".to_string())]);
    }

    #[test]
    fn marked_outputs_split_per_section() {
        let out = format!(
            "{LOAD_MARK}peer-2\n{{\"a\":1}}\n{LOAD_MARK}peer-0\n{{}}\n{LOAD_MARK}stall-before\n5000.00 9000.00\n"
        );
        let v = split_marked(&out);
        assert_eq!(
            v,
            vec![
                ("peer-2".to_string(), "{\"a\":1}\n".to_string()),
                ("peer-0".to_string(), "{}\n".to_string()),
                ("stall-before".to_string(), "5000.00 9000.00\n".to_string())
            ]
        );
    }
}
