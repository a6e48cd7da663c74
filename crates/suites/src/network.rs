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
//! `min_fraction` x its rated speed, and every pair keeps to `max_retransmits`.

use std::fmt::Write as _;

use serde::Serialize;

use crate::iperf::{self, IperfRun};
use crate::{Session, SuiteError};

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
}

impl Pair {
    pub fn goodput_mbps(&self) -> f64 {
        self.run.as_ref().map_or(0.0, |r| r.goodput_bps / 1e6)
    }
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.rate_ok != Some(false) && self.retransmits_ok
    }
}

/// A host's cumulative traffic under load.
#[derive(Debug, Clone, Serialize)]
pub struct HostTotal {
    pub host: String,
    pub rated_mbps: Option<u64>,
    pub out_mbps: f64,
    pub in_mbps: f64,
    pub out_ok: Option<bool>,
    pub in_ok: Option<bool>,
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

    pub fn failing_pairs(&self) -> Vec<(String, String)> {
        self.connectivity
            .iter()
            .filter(|p| !p.passed())
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
                            if p.passed() { "" } else { " !" }
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
                let mark = |ok: Option<bool>| if ok == Some(false) { " !" } else { "" };
                let _ = writeln!(
                    s,
                    "  {:10} out {:7.0}{}  in {:7.0}{}  rated {}",
                    t.host,
                    t.out_mbps,
                    mark(t.out_ok),
                    t.in_mbps,
                    mark(t.in_ok),
                    t.rated_mbps.map_or("?".into(), |r| r.to_string())
                );
            }
        }
        for p in self.connectivity.iter().chain(&self.under_load) {
            if let Some(e) = &p.error {
                let _ = writeln!(s, "  {} -> {}: {e}", p.from, p.to);
            }
        }
        let _ = writeln!(
            s,
            "verdict: {} (pair >= {:.0}% of rated, retransmits <= {})",
            if self.passed() { "PASS" } else { "FAIL" },
            self.plan.min_fraction * 100.0,
            self.plan.max_retransmits
        );
        s
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

/// Run the suite on the session's hosts.
pub fn run(s: &Session, plan: &NetworkPlan) -> Result<NetworkResult, SuiteError> {
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
    let rated: Vec<Option<u64>> = s
        .facts
        .iter()
        .map(|f| plan.rated_mbps.or_else(|| f.rated_nic_mbps()))
        .collect();
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
    let judge = |i: usize, j: usize, r: Result<IperfRun, String>, rate: bool| {
        let pr = match (rated[i], rated[j]) {
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
            from: s.hosts[i].name.clone(),
            to: s.hosts[j].name.clone(),
            rated_mbps: pr,
            run,
            error,
            rate_ok,
            retransmits_ok,
        }
    };
    let mut connectivity = Vec::new();
    if plan.connectivity {
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let (a, b) = (&s.hosts[i], &s.hosts[j]);
                let out = a.run(&client_cmd(&b.addr, plan.base_port + i as u16, plan))?;
                let r = iperf::parse(&out.stdout).map_err(|e| {
                    if out.stderr.trim().is_empty() {
                        e
                    } else {
                        format!("{e}; stderr: {}", out.stderr.trim())
                    }
                });
                let p = judge(i, j, r, true);
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
                connectivity.push(p);
            }
        }
    }
    let mut under_load = Vec::new();
    let mut totals = Vec::new();
    if plan.under_load {
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
        for (i, out) in outputs.into_iter().enumerate() {
            let out = out?;
            let sections = split_marked(&out);
            for j in (0..n).filter(|&j| j != i) {
                let text = sections
                    .iter()
                    .find(|(k, _)| *k == j)
                    .map(|(_, t)| t.as_str())
                    .unwrap_or("");
                under_load.push(judge(i, j, iperf::parse(text), false));
            }
        }
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
            let ok = |v: f64| rated[i].map(|r| v >= plan.min_fraction * r as f64);
            totals.push(HostTotal {
                host: h.name.clone(),
                rated_mbps: rated[i],
                out_mbps,
                in_mbps,
                out_ok: ok(out_mbps),
                in_ok: ok(in_mbps),
            });
        }
    }
    drop(servers);
    Ok(NetworkResult {
        plan: plan.clone(),
        hosts: s.hosts.iter().map(|h| h.name.clone()).collect(),
        connectivity,
        under_load,
        totals,
    })
}

const LOAD_MARK: &str = "@@qoslab-peer@@ ";

/// Host i's clients to every peer at once, each to its own server; outputs printed after.
fn load_script(s: &Session, i: usize, plan: &NetworkPlan, start_at: f64) -> String {
    let dir = hosts::quote(&s.rundir);
    let mut script = format!(
        "mkdir -p {dir}\nsleep $(awk -v t={start_at:.3} -v n=\"$(date +%s.%N)\" 'BEGIN {{ d = t - n; if (d < 0 || d > 60) d = 0; printf \"%.3f\", d }}')\n"
    );
    let peers: Vec<usize> = (0..s.hosts.len()).filter(|&j| j != i).collect();
    for &j in &peers {
        let _ = writeln!(
            script,
            "{} > {dir}/load-{i}-{j}.json 2>&1 &",
            client_cmd(&s.hosts[j].addr, plan.base_port + i as u16, plan)
        );
    }
    script.push_str("wait\n");
    for &j in &peers {
        let _ = writeln!(script, "echo '{LOAD_MARK}{j}'; cat {dir}/load-{i}-{j}.json");
    }
    script
}

fn split_marked(out: &str) -> Vec<(usize, String)> {
    let mut v: Vec<(usize, String)> = Vec::new();
    for line in out.lines() {
        if let Some(j) = line
            .strip_prefix(LOAD_MARK)
            .and_then(|j| j.trim().parse().ok())
        {
            v.push((j, String::new()));
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
    fn marked_outputs_split_per_peer() {
        let out = format!("{LOAD_MARK}2\n{{\"a\":1}}\n{LOAD_MARK}0\n{{}}\n");
        let v = split_marked(&out);
        assert_eq!(
            v,
            vec![(2, "{\"a\":1}\n".to_string()), (0, "{}\n".to_string())]
        );
    }
}
