//! The admission core in virtual time: no runtime, no clock, no I/O. A small
//! discrete-event loop plays closed-loop clients against one or more cores: requests are
//! submitted, released by the core, their "I/O" takes a chosen time, and replies go when
//! the core says. Every figure below is exact arithmetic on virtual nanoseconds.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use qos_core::{Burst, BurstShape, Direction, Nanos, Rate};

use super::*;
use crate::clock::Clock;
use crate::config::NodeConfig;
use crate::provisioned::{FsSpec, ResourceSpec};
use crate::scheduler::FlowQos;

const MS: Nanos = 1_000_000;
const US: Nanos = 1_000;
const SEC: Nanos = 1_000_000_000;

/// Gates from a node.toml's `[capacity]` (empty: ceilings only).
fn gates(capacity: &str) -> Gates {
    let cfg = NodeConfig::parse(capacity, "t.toml").expect("config");
    Gates {
        scheduler: Arc::new(Scheduler::with_array(cfg.capacity, cfg.array, Clock::new())),
        fs: None,
    }
}

fn flow(g: &Gates, ceiling_iops: u64, floor_iops: u64) -> u32 {
    g.scheduler.create_flow(
        FlowQos {
            ceiling: Rate {
                iops: ceiling_iops,
                bytes_per_sec: 0,
            },
            floor: Rate {
                iops: floor_iops,
                bytes_per_sec: 0,
            },
            weight: 1,
            burst: Burst::NONE,
        },
        0,
    )
}

type Core = Admission<u64, u64>;

/// What a closed-loop client saw.
#[derive(Debug, Default)]
struct Seen {
    completed: u64,
    latency_sum: Nanos,
    ceiling_sum: Nanos,
    floor_sum: Nanos,
    resource_sum: Nanos,
    overruns: u64,
    overrun_sum: Nanos,
}

impl Seen {
    fn mean_latency(&self) -> f64 {
        self.latency_sum as f64 / self.completed.max(1) as f64
    }
}

/// One connection of the simulation: its core, its grants, its client.
struct Client {
    core: Core,
    rx: Option<GrantRx>,
    op: Op,
    qd: usize,
    /// Host I/O time of each request.
    io: Nanos,
    next_token: u64,
    /// I/O in progress: (done at, started, token).
    io_done: BinaryHeap<Reverse<(Nanos, u64, StartedKey)>>,
    seen: Seen,
}

/// `Started` in a heap (ordered by nothing but insertion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StartedKey(Started);
impl PartialOrd for StartedKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for StartedKey {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl Client {
    fn new(g: &Gates, op: Op, qd: usize, io: Nanos) -> Client {
        let (core, rx) = Admission::new(g.clone());
        Client {
            core,
            rx,
            op,
            qd,
            io,
            next_token: 0,
            io_done: BinaryHeap::new(),
            seen: Seen::default(),
        }
    }

    fn submit(&mut self, now: Nanos) {
        self.next_token += 1;
        let t = self.next_token;
        if let Submitted::Now(s) = self.core.submit(self.op, t, now) {
            self.start_io(s, t, now);
        }
    }

    fn start_io(&mut self, s: Started, token: u64, now: Nanos) {
        self.io_done.push(Reverse((
            now.max(s.admitted) + self.io,
            token,
            StartedKey(s),
        )));
    }

    fn complete(&mut self, c: Completed, now: Nanos, until: Nanos) {
        self.seen.completed += 1;
        self.seen.latency_sum += c.latency_ns;
        self.seen.ceiling_sum += c.waits.ceiling_ns;
        self.seen.floor_sum += c.waits.floor_ns;
        self.seen.resource_sum += c.resource_ns;
        if let Some(o) = c.overrun_ns {
            self.seen.overruns += 1;
            self.seen.overrun_sum += o;
        }
        if now < until {
            self.submit(now);
        }
    }

    /// Everything due at `now`; returns whether anything happened.
    fn step(&mut self, now: Nanos, until: Nanos) -> bool {
        let mut any = false;
        if let Some(rx) = &mut self.rx {
            while let Ok(g) = rx.try_recv() {
                self.core.on_grant(g, now);
                any = true;
            }
        }
        while let Some(r) = self.core.take_ready(now) {
            self.start_io(r.started, r.token, now);
            any = true;
        }
        while let Some(Reverse((at, token, s))) = self.io_done.peek().copied() {
            if at > now {
                break;
            }
            self.io_done.pop();
            any = true;
            match self.core.done(&s.0, now) {
                Ok(c) => self.complete(c, now, until),
                Err(_) => self.core.hold(s.0, token),
            }
        }
        while let Some((_, c)) = self.core.take_reply(now) {
            self.complete(c, now, until);
            any = true;
        }
        any
    }

    fn next(&self) -> Option<Nanos> {
        let io = self.io_done.peek().map(|r| r.0 .0);
        [self.core.next_wake(), io].into_iter().flatten().min()
    }
}

/// Run `clients` for `secs` virtual seconds; returns them.
fn simulate(g: &Gates, mut clients: Vec<Client>, secs: u64) -> Vec<Client> {
    let until = secs * SEC;
    let mut now = 0;
    for c in &mut clients {
        for _ in 0..c.qd {
            c.submit(now);
        }
    }
    loop {
        // Pump as the connections do after their submissions, and as the dispatcher does
        // when the next tag falls due.
        for c in &mut clients {
            c.core.pump(now);
        }
        let ctl_next = g.scheduler.pump(now);
        let mut any = true;
        while any {
            any = false;
            for c in &mut clients {
                any |= c.step(now, until);
            }
            for c in &mut clients {
                if c.core.pump(now) {
                    any = true;
                }
            }
        }
        let next = clients
            .iter()
            .filter_map(Client::next)
            .chain(ctl_next)
            .min()
            .map(|t| t.max(now + 1));
        match next {
            Some(t) if t < until + SEC => now = t,
            _ => break,
        }
    }
    clients
}

#[track_caller]
fn within(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= want.abs() * tol,
        "{what}: got {got:.1}, want {want:.1} ± {}%",
        tol * 100.0
    );
}

#[test]
fn free_work_is_never_held_and_never_counted() {
    let g = gates("");
    let f = flow(&g, 1, 0);
    let (mut core, _) = Core::new(g.clone());
    for t in 0..100 {
        let d = core.submit(Op::new(f, Work::Free), t, t * US);
        assert_eq!(d, Submitted::Now(Started::at_once(t * US)));
    }
    // The flow's one op per second is still there for a counted request.
    assert!(matches!(
        core.submit(Op::new(f, Work::Read(4096)), 0, 0),
        Submitted::Now(_)
    ));
    assert!(matches!(
        core.submit(Op::new(f, Work::Read(4096)), 1, 0),
        Submitted::At(t) if t == SEC
    ));
}

/// Ceilings only: the pacer's start times, the ceiling's share of the queue time, and
/// the core's wake-ups.
#[test]
fn a_ceiling_holds_requests_until_their_start_time() {
    let g = gates("");
    let f = flow(&g, 100, 0);
    let (mut core, rx) = Core::new(g.clone());
    assert!(rx.is_none(), "no controller: no grants");
    let op = Op::new(f, Work::Write(4096));
    // The first goes at once; the next wait 10 ms each.
    let mut decided = Vec::new();
    for token in 0..5 {
        decided.push(core.submit(op, token, 0));
    }
    assert!(matches!(decided[0], Submitted::Now(_)));
    for (i, d) in decided.iter().enumerate().skip(1) {
        assert_eq!(*d, Submitted::At(i as u64 * 10 * MS), "request {i}");
    }
    assert_eq!(core.next_wake(), Some(10 * MS));
    // Due within the timer slack: released at 9.5 ms, its wait the ceiling's.
    assert!(core.take_ready(8 * MS).is_none());
    let r = core.take_ready(9_500 * US).expect("due within the slack");
    assert_eq!(r.token, 1);
    assert_eq!(r.started.waits.ceiling_ns, 9_500 * US);
    assert_eq!(r.started.resource_ns, 0);
    assert_eq!(r.started.reply_at, 9_500 * US, "no service latency");
    assert!(core.take_ready(9_500 * US).is_none());
    assert_eq!(core.give_up(), vec![2, 3, 4]);
    assert!(core.is_idle());
}

/// The emulated array's service latency counts from admission: host I/O shorter than it
/// is absorbed (the reply leaves at admission + service, whatever the I/O took); I/O
/// longer than it delays the reply to the I/O's end, and is counted.
#[test]
fn service_latency_absorbs_host_io_and_counts_overruns() {
    let g = gates("[capacity]\nlatency = { read = { fixed = \"5ms\" }, write = { fixed = \"4ms\", per_kib = \"16us\" } }");
    // (work, QD, host I/O per request, expected latency, overruns expected)
    let cases: [(Work, usize, Nanos, Nanos, bool); 8] = [
        (Work::Read(4096), 1, 0, 5 * MS, false),
        (Work::Read(4096), 1, 300 * US, 5 * MS, false),
        (Work::Read(4096), 4, 4_900 * US, 5 * MS, false),
        (Work::Write(65536), 1, 0, 5_024 * US, false),
        (Work::Write(65536), 4, 900 * US, 5_024 * US, false),
        (Work::Meta(Direction::Write), 1, 10 * US, 4 * MS, false),
        // Host I/O alone longer than the service time: completes when the I/O does.
        (Work::Read(4096), 1, 7 * MS, 7 * MS, true),
        (Work::Write(65536), 4, 6 * MS, 6 * MS, true),
    ];
    for (work, qd, io, want, overrun) in cases {
        let f = flow(&g, 0, 0);
        let c = Client::new(&g, Op::new(f, work), qd, io);
        let c = simulate(&g, vec![c], 2).remove(0);
        let what = format!("{work:?} QD{qd} with {io} ns of host I/O");
        assert!(c.seen.completed > 100, "{what}: {c:?}", c = c.seen);
        assert_eq!(c.seen.mean_latency(), want as f64, "{what}");
        let per_sec = c.seen.completed as f64 / 2.0;
        within(per_sec, qd as f64 * SEC as f64 / want as f64, 0.01, &what);
        if overrun {
            assert_eq!(c.seen.overruns, c.seen.completed, "{what}");
            let service = g
                .scheduler
                .service_latency(work.charged().unwrap().0, work.charged().unwrap().1);
            assert_eq!(
                c.seen.overrun_sum,
                c.seen.completed * (io - service),
                "{what}"
            );
        } else {
            assert_eq!(c.seen.overruns, 0, "{what}");
        }
        assert_eq!(
            c.seen.ceiling_sum + c.seen.floor_sum,
            0,
            "{what}: no queueing"
        );
    }
}

/// Under the controller, a ceiling below what the client offers: the rate is the
/// ceiling, the queue time is the ceiling's, the service latency comes on top.
#[test]
fn controller_ceiling_with_service_latency() {
    let g = gates("[capacity]\nlatency = { read = { fixed = \"3ms\" } }");
    let f = flow(&g, 500, 0);
    let c = Client::new(&g, Op::new(f, Work::Read(4096)), 32, 50 * US);
    let c = simulate(&g, vec![c], 10).remove(0);
    within(
        c.seen.completed as f64 / 10.0,
        500.0,
        0.01,
        "500 IOPS ceiling",
    );
    // Little's law: 32 in flight at 500/s is 64 ms each; 3 of them the array's.
    within(c.seen.mean_latency(), 64e6, 0.02, "latency");
    let ceiling = c.seen.ceiling_sum as f64 / c.seen.completed as f64;
    within(ceiling, 61e6, 0.03, "ceiling wait per request");
    assert_eq!(c.seen.floor_sum, 0);
}

/// Two connections on one controller: a floor holds against a bully, the bully's queue
/// time behind the floor is the node's (floor wait), and grants reach their own core.
#[test]
fn floors_hold_across_connections() {
    let g = gates("[capacity]\niops = 10000");
    let (protected, bully) = (flow(&g, 0, 6000), flow(&g, 0, 0));
    let a = Client::new(&g, Op::new(protected, Work::Read(4096)), 16, 0);
    let b = Client::new(&g, Op::new(bully, Work::Read(4096)), 64, 0);
    let out = simulate(&g, vec![a, b], 4);
    let (a, b) = (&out[0].seen, &out[1].seen);
    // The floor (6,000) first, the rest (4,000) shared equally: 8,000 and 2,000.
    within(a.completed as f64 / 4.0, 8000.0, 0.02, "protected");
    within(b.completed as f64 / 4.0, 2000.0, 0.03, "bully");
    assert!(b.floor_sum > 0 && b.ceiling_sum == 0, "{b:?}");
}

/// Burst credits: a 100 IOPS ceiling bursting to 1,000 on a 450-operation bucket serves
/// 1,000/s for half a second, then 100/s.
#[test]
fn burst_credits_then_the_baseline() {
    let g = gates("");
    let f = g.scheduler.create_flow(
        FlowQos {
            ceiling: Rate {
                iops: 100,
                bytes_per_sec: 0,
            },
            floor: Rate::UNLIMITED,
            weight: 1,
            burst: Burst {
                iops: Some(BurstShape {
                    rate: 1000,
                    bucket: 450,
                    initial: 450,
                }),
                bytes: None,
            },
        },
        0,
    );
    let c = Client::new(&g, Op::new(f, Work::Read(4096)), 8, 0);
    let c = simulate(&g, vec![c], 5).remove(0);
    // 0.5 s at 1,000 (450 of credit + 50 of baseline), then 4.5 s at 100: 950 in 5 s.
    within(c.seen.completed as f64, 950.0, 0.02, "burst then baseline");
}

/// The provisioned file system's single-flow limit: one connection is held to it, its
/// queue time is the resources', not the ceiling's; two connections get twice as much.
#[test]
fn the_single_flow_limit_is_per_connection() {
    const MIB: u64 = 1 << 20;
    let spec = FsSpec {
        name: "t".into(),
        network: ResourceSpec {
            baseline: 400 * MIB,
            burst: None,
        },
        disk: ResourceSpec {
            baseline: 400 * MIB,
            burst: None,
        },
        disk_iops: ResourceSpec {
            baseline: 1_000_000,
            burst: None,
        },
        ssd_iops: 0,
        memory_cache: 64 * MIB,
        nvme_cache: 0,
        cache_block: MIB,
        per_connection: 100 * MIB,
    };
    for conns in [1u64, 2] {
        let mut g = gates("");
        g.fs = Some(Arc::new(ProvisionedFs::new(spec.clone(), 0)));
        let clients: Vec<Client> = (0..conns)
            .map(|i| Client::new(&g, Op::new(NO_FLOW, Work::Write(MIB)).at(7, i * MIB), 4, 0))
            .collect();
        let out = simulate(&g, clients, 4);
        let total: u64 = out.iter().map(|c| c.seen.completed).sum();
        within(
            total as f64 / 4.0,
            100.0 * conns as f64,
            0.03,
            &format!("{conns} connection(s), MiB/s"),
        );
        for c in &out {
            assert!(
                c.seen.resource_sum > 0 && c.seen.ceiling_sum == 0,
                "{:?}",
                c.seen
            );
        }
    }
}

/// A request without an extent skips the provisioned file system (S3 objects).
#[test]
fn no_extent_no_file_system() {
    let mut g = gates("");
    g.fs = Some(Arc::new(ProvisionedFs::new(
        FsSpec::preset("fsx-ontap-128", &Default::default()).unwrap(),
        0,
    )));
    let (mut core, _) = Core::new(g);
    for t in 0..1000 {
        assert!(matches!(
            core.submit(Op::new(NO_FLOW, Work::Write(1 << 30)), t, 0),
            Submitted::Now(_)
        ));
    }
}

/// A connection that goes away takes its queued tickets with it; parked requests are
/// given up in order to answer them (shutdown).
#[test]
fn parked_requests_and_dropped_connections() {
    let g = gates("[capacity]\niops = 1000");
    let f = flow(&g, 10, 0);
    let (mut core, mut rx) = Core::new(g.clone());
    let op = Op::new(f, Work::Read(4096));
    for t in 0..8 {
        assert_eq!(core.submit(op, t, SEC), Submitted::Parked);
    }
    core.pump_own(&mut rx, SEC);
    // One goes at once, the rest at 10 IOPS.
    assert_eq!(core.take_ready(SEC).map(|r| r.token), Some(0));
    assert_eq!(core.parked(), 7);
    assert_eq!(g.scheduler.status().unwrap().queued, 7);
    let mut left = core.give_up();
    left.sort();
    assert_eq!(left, (1..8).collect::<Vec<_>>());
    drop(core);
    assert_eq!(
        g.scheduler.status().unwrap().queued,
        0,
        "tickets left with it"
    );
}

/// A grant picked up late still starts the array's service at the dispatch.
#[test]
fn service_counts_from_the_dispatch() {
    let g = gates("[capacity]\nlatency = { read = { fixed = \"1ms\" } }");
    let f = flow(&g, 0, 0);
    let (mut core, mut rx) = Core::new(g.clone());
    assert_eq!(
        core.submit(Op::new(f, Work::Read(512)), 1, 0),
        Submitted::Parked
    );
    // Dispatched at 0 by someone else's pump; this connection sees it 200 us later.
    g.scheduler.pump(0);
    let grant = rx.as_mut().unwrap().try_recv().unwrap();
    core.on_grant(grant, 200 * US);
    let r = core.take_ready(200 * US).unwrap();
    assert_eq!((r.started.admitted, r.started.reply_at), (0, MS));
    assert_eq!(core.done(&r.started, 300 * US), Err(MS));
    core.hold(r.started, 1);
    assert_eq!(core.next_reply(), Some(MS));
    // A timer that wakes 30 us late on average lets replies go 30 us early.
    core.set_early(30 * US);
    assert!(core.take_reply(960 * US).is_none());
    let (tok, c) = core.take_reply(970 * US).unwrap();
    assert_eq!((tok, c.latency_ns, c.overrun_ns), (1, 970 * US, None));
}

/// A connection that pipelined a backlog under a 2 IOPS ceiling and went away gives its
/// reservations back: the next connection on the same volume is not held behind requests
/// nobody waits for (issue 32: 19 connections' writes kept the volume busy for 42 min).
/// While another connection still waits on the flow, its slots stand: nothing is given
/// back (that would let the flow exceed its ceiling).
#[test]
fn an_abandoned_backlog_gives_its_reservations_back() {
    let g = gates("");
    let f = flow(&g, 2, 0);
    let op = Op::new(f, Work::Write(65536));
    let (mut gone, _) = Core::new(g.clone());
    let (mut waiting, _) = Core::new(g.clone());
    let mut last = Submitted::Now(Started::at_once(0));
    for i in 0..256 {
        last = gone.submit(op, i, 0);
    }
    assert!(
        matches!(last, Submitted::At(t) if t >= 127 * SEC),
        "256 requests at 2 IOPS reach 2 minutes out: {last:?}"
    );
    let behind = waiting.submit(op, 0, 0);
    assert!(
        matches!(behind, Submitted::At(t) if t == 128 * SEC),
        "{behind:?}"
    );
    gone.abandon(SEC);
    let (mut next, _) = Core::new(g.clone());
    assert!(
        matches!(next.submit(op, 0, SEC), Submitted::At(t) if t == 128 * SEC + 500 * MS),
        "another connection still waits at 128 s: the schedule stands"
    );
    // Once nothing waits on the flow any more, the horizon comes back to now.
    waiting.abandon(SEC);
    next.abandon(SEC);
    let (mut after, _) = Core::new(g);
    assert!(
        matches!(after.submit(op, 0, SEC), Submitted::Now(_)),
        "the next client's first request waits for nothing"
    );
    match after.submit(op, 1, SEC) {
        Submitted::At(t) => assert_eq!(t, SEC + 500 * MS, "then the ceiling's spacing"),
        other => panic!("{other:?}"),
    }
}
