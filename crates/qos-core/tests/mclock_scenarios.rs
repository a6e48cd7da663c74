//! Data-driven, virtual-time scenarios for [`qos_core::mclock`].
//!
//! A scenario is a small text:
//!
//! ```text
//! capacity 20000 iops        # node capacity; also `capacity 0` (unlimited), `... mbps N`
//! cost_unit 4096             # default 4096
//! discipline fifo            # arrival order, no floors (the control); default mclock
//! lookahead 5ms              # reservations may run this far ahead (the node uses 5 ms)
//! service 100us              # fixed service time of every request (default 100us)
//! flow a res 5000 qd 16      # res/lim IOPS, w weight, qd N (closed loop) or rate N
//!                            # (open loop IOPS; with qd too, at most qd outstanding and
//!                            # catching up when behind, like fio's rate_iops with
//!                            # iodepth), bs bytes (default 4096), off A B (idle
//!                            # in [A, B): issues nothing)
//! run 10s
//! report 0s 10s              # windows to summarise (default: the whole run)
//! ```
//!
//! The output is one line per report window: `A-B: name=IOPS ...`, IOPS =
//! dispatches in the window / its length, **rounded to the nearest 10 IOPS**.
//! Expected strings are snapshots of the (deterministic) simulation; each test also
//! asserts its tolerance explicitly so a snapshot cannot drift out of spec.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use qos_core::mclock::{FlowId, FlowSpec, MClock};
use qos_core::{Nanos, Rate};

const S: Nanos = 1_000_000_000;

fn dur(s: &str) -> Nanos {
    qos_core::array::parse_duration(s).unwrap_or_else(|e| panic!("bad duration: {e}"))
}

enum Load {
    Closed(u64),
    /// Rate, and the most requests outstanding (u64::MAX: unbounded).
    Open(u64, u64),
}

struct Client {
    name: String,
    spec: FlowSpec,
    load: Load,
    bs: u64,
    off: Option<(Nanos, Nanos)>,
}

struct Scenario {
    capacity: Rate,
    cost_unit: u64,
    service: Nanos,
    clients: Vec<Client>,
    run: Nanos,
    reports: Vec<(Nanos, Nanos)>,
    fifo: bool,
    lookahead: Nanos,
}

fn parse(text: &str) -> Scenario {
    let mut sc = Scenario {
        capacity: Rate::UNLIMITED,
        cost_unit: 4096,
        service: 100_000,
        clients: Vec::new(),
        run: S,
        reports: Vec::new(),
        fifo: false,
        lookahead: 0,
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap().trim();
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            [] => {}
            ["capacity", rest @ ..] => {
                for pair in rest.chunks(2) {
                    let n: u64 = pair[0].parse().unwrap();
                    match pair.get(1) {
                        Some(&"iops") | None => sc.capacity.iops = n,
                        Some(&"mbps") => sc.capacity.bytes_per_sec = n << 20,
                        Some(u) => panic!("unit {u}"),
                    }
                }
            }
            ["cost_unit", n] => sc.cost_unit = n.parse().unwrap(),
            ["discipline", "fifo"] => sc.fifo = true,
            ["discipline", "mclock"] => sc.fifo = false,
            ["lookahead", d] => sc.lookahead = dur(d),
            ["service", d] => sc.service = dur(d),
            ["run", d] => sc.run = dur(d),
            ["report", a, b] => sc.reports.push((dur(a), dur(b))),
            ["flow", name, rest @ ..] => {
                let mut c = Client {
                    name: name.to_string(),
                    spec: FlowSpec {
                        weight: 1,
                        ..FlowSpec::default()
                    },
                    load: Load::Closed(1),
                    bs: 4096,
                    off: None,
                };
                let mut i = 0;
                while i < rest.len() {
                    let v = rest[i + 1];
                    match rest[i] {
                        "res" => c.spec.reservation.iops = v.parse().unwrap(),
                        "lim" => c.spec.limit.iops = v.parse().unwrap(),
                        "w" => c.spec.weight = v.parse().unwrap(),
                        "qd" => {
                            let qd = v.parse().unwrap();
                            c.load = match c.load {
                                Load::Open(r, _) => Load::Open(r, qd),
                                Load::Closed(_) => Load::Closed(qd),
                            }
                        }
                        "rate" => c.load = Load::Open(v.parse().unwrap(), u64::MAX),
                        "bs" => c.bs = v.parse().unwrap(),
                        "off" => {
                            c.off = Some((dur(v), dur(rest[i + 2])));
                            i += 1;
                        }
                        k => panic!("unknown flow key {k}"),
                    }
                    i += 2;
                }
                sc.clients.push(c);
            }
            _ => panic!("bad scenario line: {line}"),
        }
    }
    if sc.reports.is_empty() {
        sc.reports.push((0, sc.run));
    }
    sc
}

struct Outcome {
    /// Dispatch times per flow.
    dispatches: Vec<Vec<Nanos>>,
    dequeue_calls: u64,
    overcommit: Option<f64>,
}

fn simulate(sc: &Scenario) -> Outcome {
    let mut m: MClock<usize> = if sc.fifo {
        MClock::fifo(sc.capacity, sc.cost_unit)
    } else {
        MClock::new(sc.capacity, sc.cost_unit).with_reservation_lookahead(sc.lookahead)
    };
    let ids: Vec<FlowId> = sc.clients.iter().map(|c| m.add_flow(c.spec, 0)).collect();
    let n = sc.clients.len();
    let idle = |i: usize, t: Nanos| sc.clients[i].off.is_some_and(|(a, b)| t >= a && t < b);
    let mut outstanding = vec![0u64; n];
    let mut pending_resume: Vec<Option<Nanos>> =
        sc.clients.iter().map(|c| c.off.map(|o| o.1)).collect();
    let mut open_k = vec![0u64; n];
    let mut completions: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
    let mut out = Outcome {
        dispatches: vec![Vec::new(); n],
        dequeue_calls: 0,
        overcommit: m.overcommit(),
    };
    let next_open = |i: usize, k: u64| match sc.clients[i].load {
        Load::Open(r, _) if r > 0 => Some((u128::from(k) * u128::from(S) / u128::from(r)) as Nanos),
        _ => None,
    };
    let cap = |i: usize| match sc.clients[i].load {
        Load::Open(_, qd) => qd,
        Load::Closed(qd) => qd,
    };
    for (i, c) in sc.clients.iter().enumerate() {
        if let Load::Closed(qd) = c.load {
            if !idle(i, 0) {
                for _ in 0..qd {
                    m.enqueue(ids[i], i, c.bs, 0).unwrap();
                }
                outstanding[i] = qd;
            }
        }
    }
    let mut t: Nanos = 0;
    loop {
        // Events due at t.
        while let Some(&Reverse((ct, i))) = completions.peek() {
            if ct > t {
                break;
            }
            completions.pop();
            outstanding[i] -= 1;
            if let Load::Closed(_) = sc.clients[i].load {
                if !idle(i, t) {
                    m.enqueue(ids[i], i, sc.clients[i].bs, t).unwrap();
                    outstanding[i] += 1;
                }
            }
        }
        for i in 0..n {
            if pending_resume[i].is_some_and(|r| r <= t) {
                pending_resume[i] = None;
                if let Load::Closed(qd) = sc.clients[i].load {
                    while outstanding[i] < qd {
                        m.enqueue(ids[i], i, sc.clients[i].bs, t).unwrap();
                        outstanding[i] += 1;
                    }
                }
            }
            while let Some(at) = next_open(i, open_k[i]).filter(|&a| a <= t) {
                if outstanding[i] >= cap(i) {
                    break; // Behind: issued when a completion frees a slot.
                }
                open_k[i] += 1;
                if !idle(i, at) {
                    m.enqueue(ids[i], i, sc.clients[i].bs, t).unwrap();
                    outstanding[i] += 1;
                }
            }
        }
        loop {
            out.dequeue_calls += 1;
            let Some(d) = m.dequeue(t) else { break };
            out.dispatches[d.token].push(t);
            completions.push(Reverse((t + sc.service, d.token)));
        }
        // Next event.
        let mut next = Nanos::MAX;
        if let Some(w) = m.next_wakeup(t) {
            next = next.min(w.max(t + 1));
        }
        if let Some(Reverse((ct, _))) = completions.peek() {
            next = next.min(*ct);
        }
        for i in 0..n {
            if let Some(r) = pending_resume[i] {
                next = next.min(r);
            }
            if let Some(a) = next_open(i, open_k[i]) {
                if outstanding[i] < cap(i) {
                    next = next.min(a);
                }
            }
        }
        if next >= sc.run {
            break;
        }
        t = next;
    }
    out
}

fn iops(ds: &[Nanos], (a, b): (Nanos, Nanos)) -> f64 {
    let count = ds.iter().filter(|&&t| t >= a && t < b).count();
    count as f64 * S as f64 / (b - a) as f64
}

fn secs(t: Nanos) -> String {
    format!("{}s", t as f64 / S as f64)
}

fn summarise(sc: &Scenario, out: &Outcome) -> String {
    let mut s = String::new();
    for &w in &sc.reports {
        s.push_str(&format!("{}-{}:", secs(w.0), secs(w.1)));
        for (c, ds) in sc.clients.iter().zip(&out.dispatches) {
            let r = (iops(ds, w) / 10.0).round() * 10.0;
            s.push_str(&format!(" {}={}", c.name, r));
        }
        s.push('\n');
    }
    s
}

/// Run a scenario, compare its summary with `expected` exactly, return the details.
fn check(text: &str, expected: &str) -> (Scenario, Outcome) {
    let sc = parse(text);
    let out = simulate(&sc);
    let got = summarise(&sc, &out);
    assert_eq!(got.trim(), expected.trim(), "scenario:\n{text}");
    (sc, out)
}

fn flow_iops(sc: &Scenario, out: &Outcome, name: &str, w: (Nanos, Nanos)) -> f64 {
    let i = sc.clients.iter().position(|c| c.name == name).unwrap();
    iops(&out.dispatches[i], w)
}

fn within(got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= want * tol,
        "got {got}, want {want} ± {}%",
        tol * 100.0
    );
}

#[test]
fn reservations_met_while_bully_saturates() {
    let (sc, out) = check(
        "capacity 20000 iops\nflow a res 5000 qd 16\nflow b res 5000 qd 16\nflow bully qd 64\nrun 10s",
        "0s-10s: a=8330 b=8330 bully=3330",
    );
    for f in ["a", "b"] {
        // Floor plus an equal third of what is left.
        let got = flow_iops(&sc, &out, f, (0, 10 * S));
        assert!(got >= 5000.0 * 0.99, "{got}");
        within(got, 5000.0 + 10000.0 / 3.0, 0.01);
    }
    // Node capacity is never exceeded.
    let total: f64 = ["a", "b", "bully"]
        .iter()
        .map(|f| flow_iops(&sc, &out, f, (0, 10 * S)))
        .sum();
    assert!(total <= 20000.0 * 1.01, "{total}");
}

#[test]
fn reservations_plus_weight_share_of_the_rest() {
    // Floors are met and the spare capacity is shared by weight on top.
    let (sc, out) = check(
        "capacity 20000 iops\nflow a res 5000 w 1 qd 32\nflow b w 1 qd 32\nrun 2s",
        "0s-2s: a=12500 b=7500",
    );
    within(flow_iops(&sc, &out, "a", (0, 2 * S)), 12500.0, 0.01);
}

#[test]
fn limits_never_exceeded() {
    let (sc, out) = check(
        "capacity 0\nflow capped lim 3000 qd 32\nflow capped2 lim 1000 res 500 qd 8\nflow free qd 4\nservice 1ms\nrun 10s",
        "0s-10s: capped=3000 capped2=1000 free=4000",
    );
    assert!(flow_iops(&sc, &out, "capped", (0, 10 * S)) <= 3000.0 * 1.01);
    assert!(flow_iops(&sc, &out, "capped2", (0, 10 * S)) <= 1000.0 * 1.01);
    // Also under contention.
    let (sc, out) = check(
        "capacity 10000 iops\nflow capped lim 2000 qd 32\nflow bully qd 64\nrun 10s",
        "0s-10s: capped=2000 bully=8000",
    );
    let c = flow_iops(&sc, &out, "capped", (0, 10 * S));
    assert!((2000.0 * 0.99..=2000.0 * 1.01).contains(&c), "{c}");
}

#[test]
fn proportional_split_by_weight() {
    let (sc, out) = check(
        "capacity 12000 iops\nflow w1 w 1 qd 32\nflow w2 w 2 qd 32\nflow w3 w 3 qd 32\nrun 10s",
        "0s-10s: w1=2000 w2=4000 w3=6000",
    );
    for (f, want) in [("w1", 2000.0), ("w2", 4000.0), ("w3", 6000.0)] {
        within(flow_iops(&sc, &out, f, (0, 10 * S)), want, 0.02);
    }
}

#[test]
fn overcommitted_floors_scaled_in_proportion() {
    let (sc, out) = check(
        "capacity 10000 iops\nflow a res 8000 qd 32\nflow b res 8000 qd 32\nflow bully qd 64\nrun 5s",
        "0s-5s: a=5000 b=5000 bully=0",
    );
    let f = out.overcommit.expect("overcommit reported");
    assert!((f - 10000.0 / 16000.0).abs() < 1e-9, "{f}");
    within(flow_iops(&sc, &out, "a", (0, 5 * S)), 5000.0, 0.01);
    // Unequal floors keep their ratio.
    let (sc, out) = check(
        "capacity 10000 iops\nflow a res 12000 qd 64\nflow b res 4000 qd 64\nrun 5s",
        "0s-5s: a=7500 b=2500",
    );
    within(flow_iops(&sc, &out, "b", (0, 5 * S)), 2500.0, 0.01);
}

#[test]
fn idle_flow_returns_without_burst() {
    // b is idle for 5 s; the others keep the node busy. Its first second back
    // gets its fair share, not a burst of saved credit — in every dimension:
    // reservation (c) and weight (b).
    let text = "capacity 12000 iops\nflow a w 1 qd 32\nflow b w 1 qd 32 off 1s 6s\n\
                flow c res 2000 w 1 qd 32 off 1s 6s\nrun 8s\n\
                report 0s 1s\nreport 2s 5s\nreport 6s 7s\nreport 6s 6.1s";
    let (sc, out) = check(
        text,
        "0s-1s: a=3330 b=3330 c=5330\n\
         2s-5s: a=12000 b=0 c=0\n\
         6s-7s: a=3330 b=3330 c=5330\n\
         6s-6.1s: a=3330 b=3340 c=5330",
    );
    let back = (6 * S, 7 * S);
    // Shares: c's floor 2000, the rest (10000) split three ways.
    let share = 10000.0 / 3.0;
    assert!(flow_iops(&sc, &out, "b", back) <= share * 1.01);
    assert!(flow_iops(&sc, &out, "c", back) <= (2000.0 + share) * 1.01);
    assert!(flow_iops(&sc, &out, "b", (6 * S, 6 * S + S / 10)) <= share * 1.01);
}

fn thousand_flows(run: &str) -> String {
    let mut text = format!("capacity 100000 iops\nservice 1ms\nrun {run}\n");
    for i in 0..1000 {
        let res = if i % 10 == 0 { " res 50" } else { "" };
        text.push_str(&format!("flow f{i}{res} w {} qd 2\n", 1 + i % 3));
    }
    text
}

#[test]
fn thousand_flows_scheduled() {
    let sc = parse(&thousand_flows("0.05s"));
    let out = simulate(&sc);
    let total: usize = out.dispatches.iter().map(|d| d.len()).sum();
    // Capacity is 100k IOPS: 0.05 s → ~5,000 decisions.
    assert!((4_950..=5_050).contains(&total), "{total}");
    // Every flow is served; weights 1:2:3 hold on average.
    let mut by_w = [0usize; 3];
    for (i, d) in out.dispatches.iter().enumerate() {
        assert!(!d.is_empty(), "flow {i} starved");
        by_w[i % 3] += d.len();
    }
    assert!(by_w[0] < by_w[1] && by_w[1] < by_w[2], "{by_w:?}");
    // One failed dequeue per wake-up at most.
    assert!(
        out.dequeue_calls <= 2 * total as u64 + 10,
        "{}",
        out.dequeue_calls
    );
}

#[test]
fn fifo_control_lets_a_bully_crowd_out_rate_limited_flows() {
    // The isolation scenario in virtual time: two flows offered 5,000 IOPS each (at most
    // 16 outstanding, like fio's rate_iops with iodepth 16) beside a bully at QD 64 on a
    // 20,000 IOPS node. Arrival order shares capacity by queue occupancy: each protected
    // flow gets 16/96 of it.
    let (sc, out) = check(
        "capacity 20000 iops\ndiscipline fifo\nflow a res 5000 rate 5000 qd 16\nflow b res 5000 rate 5000 qd 16\nflow bully qd 64\nrun 10s\nreport 1s 10s",
        "1s-10s: a=3330 b=3330 bully=13330",
    );
    for f in ["a", "b"] {
        within(
            flow_iops(&sc, &out, f, (S, 10 * S)),
            20000.0 * 16.0 / 96.0,
            0.01,
        );
    }
    assert_eq!(out.overcommit, None, "FIFO has no floors to scale");
    // The same under mClock: floors hold, the bully gets exactly what is left.
    let (sc, out) = check(
        "capacity 20000 iops\nflow a res 5000 rate 5000 qd 16\nflow b res 5000 rate 5000 qd 16\nflow bully qd 64\nrun 10s\nreport 1s 10s",
        "1s-10s: a=5000 b=5000 bully=10000",
    );
    for f in ["a", "b"] {
        within(flow_iops(&sc, &out, f, (S, 10 * S)), 5000.0, 0.01);
    }
}

#[test]
fn fifo_still_holds_ceilings() {
    let (sc, out) = check(
        "capacity 10000 iops\ndiscipline fifo\nflow capped lim 2000 qd 32\nflow bully qd 64\nrun 10s",
        "0s-10s: capped=2000 bully=8000",
    );
    assert!(flow_iops(&sc, &out, "capped", (0, 10 * S)) <= 2000.0 * 1.01);
}

#[test]
fn reservation_lookahead_changes_no_rate_and_bounds_the_return_burst() {
    // The node's setting: floors may run 5 ms ahead. Long-run shares are those of plain
    // mClock, and a flow back from idleness gets at most 5 ms of its floor early.
    let (sc, out) = check(
        "capacity 20000 iops\nlookahead 5ms\nflow a res 5000 qd 16\nflow b res 5000 qd 16\nflow bully qd 64\nrun 10s",
        "0s-10s: a=8330 b=8330 bully=3330",
    );
    within(
        flow_iops(&sc, &out, "a", (0, 10 * S)),
        5000.0 + 10000.0 / 3.0,
        0.01,
    );
    let (sc, out) = check(
        "capacity 12000 iops\nlookahead 5ms\nflow a w 1 qd 32\nflow c res 2000 w 1 qd 32 off 1s 6s\nrun 8s\n\
         report 2s 5s\nreport 6s 7s\nreport 6s 6.1s",
        "2s-5s: a=12000 c=0\n6s-7s: a=5000 c=7010\n6s-6.1s: a=4950 c=7050",
    );
    // Back at 6 s, c's first 100 ms: its floor plus half the rest, plus at most the 5 ms
    // look-ahead (10 requests at 2,000 IOPS = 100 IOPS over 100 ms).
    let first = flow_iops(&sc, &out, "c", (6 * S, 6 * S + S / 10));
    assert!(first <= (2000.0 + 5000.0) * 1.01 + 100.0, "{first}");
}

#[test]
fn dropped_requests_leave_without_costing_anyone() {
    // Client A queues 8 requests on a 10 IOPS flow and goes away after the first is
    // dispatched; client B's request must be next, 100 ms later, not behind A's seven.
    let mut m: MClock<(char, u32)> = MClock::new(Rate::UNLIMITED, 4096);
    let lim = FlowSpec {
        limit: Rate {
            iops: 10,
            bytes_per_sec: 0,
        },
        weight: 1,
        ..FlowSpec::default()
    };
    let f = m.add_flow(lim, 0);
    for i in 0..8 {
        m.enqueue(f, ('a', i), 4096, 0).unwrap();
    }
    // A new flow's tags start at its creation: the first request goes one interval in.
    assert_eq!(m.dequeue(100_000_000).map(|d| d.token), Some(('a', 0)));
    m.retain(|t| t.0 != 'a');
    assert_eq!(m.queued(), 0);
    m.enqueue(f, ('b', 0), 4096, 110_000_000).unwrap();
    assert_eq!(
        m.dequeue(150_000_000),
        None,
        "the ceiling still spaces requests"
    );
    assert_eq!(m.next_wakeup(150_000_000), Some(200_000_000));
    assert_eq!(m.dequeue(200_000_000).map(|d| d.token), Some(('b', 0)));
}
