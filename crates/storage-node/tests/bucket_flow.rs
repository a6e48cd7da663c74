//! S3 buckets as scheduler flows, in virtual time (tokio's paused clock): a bucket's
//! requests pass through the admission core's `Gate` exactly as the S3 server sends them (one operation per
//! request, payload bytes against MB/s). Ceilings hold to the request; a shared policy is
//! one budget for a volume and a bucket; under the emulated controller a bucket's floor
//! holds against a bully bucket, and the queue time is split into ceiling and floor waits.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use storage_node::admission::{Gate, Op, Work};
use storage_node::testing::TestNode;
use storage_node::Node;
use test_support::TestDir;
use tokio::time::Instant;

/// The node fixture, its directory tagged `bflow-TAG`.
fn node(toml: &str, tag: &str) -> (Arc<Node>, TestDir) {
    TestNode::open(toml, &format!("bflow-{tag}")).split()
}

struct Counted {
    ops: AtomicU64,
    bytes: AtomicU64,
    ceiling_ns: AtomicU64,
    floor_ns: AtomicU64,
}

/// `clients` closed-loop clients on bucket `name`, each request `bytes` long, counting
/// what started within `[warm, secs)` seconds of virtual time.
async fn drive(
    node: Arc<Node>,
    gate: Arc<Gate>,
    name: &str,
    clients: usize,
    bytes: u64,
    warm: u64,
    secs: u64,
) -> Arc<Counted> {
    let c = Arc::new(Counted {
        ops: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        ceiling_ns: AtomicU64::new(0),
        floor_ns: AtomicU64::new(0),
    });
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (node, gate, c, name) = (node.clone(), gate.clone(), c.clone(), name.to_string());
        tasks.push(tokio::spawn(async move {
            loop {
                let flow = node.bucket(&name).expect("bucket").flow();
                // As the S3 endpoint sends them: a payload is written, no payload reads.
                let work = if bytes > 0 {
                    Work::Write(bytes)
                } else {
                    Work::Read(0)
                };
                let w = gate.admit(Op::new(flow, work)).await.waits;
                let t = start.elapsed();
                if t >= Duration::from_secs(secs) {
                    return;
                }
                if t >= Duration::from_secs(warm) {
                    c.ops.fetch_add(1, Relaxed);
                    c.bytes.fetch_add(bytes, Relaxed);
                    c.ceiling_ns.fetch_add(w.ceiling_ns, Relaxed);
                    c.floor_ns.fetch_add(w.floor_ns, Relaxed);
                }
                // The request's own service time.
                tokio::time::sleep(Duration::from_micros(50)).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    c
}

const CEILINGS: &str = r#"
[[policy]]
name = "ops200"
fixed.max_throughput = "200iops"
[[policy]]
name = "mb50"
fixed.max_throughput = "50MB/s"
[[policy]]
name = "shared300"
fixed.max_throughput = "300iops"
fixed.capacity_shared = true
[[volume]]
name = "vol"
size = "1GiB"
policy = "shared300"
"#;

#[tokio::test(start_paused = true)]
async fn bucket_ceilings_hold_in_virtual_time() {
    let (n, _dir) = node(CEILINGS, "ceil");
    n.open_bucket("ops", "u1", 1 << 40, Some("ops200".into()))
        .unwrap();
    n.open_bucket("mb", "u2", 1 << 40, Some("mb50".into()))
        .unwrap();
    n.open_bucket("free", "u3", 1 << 40, None).unwrap();
    assert_eq!(
        n.bucket("free").unwrap().flow(),
        storage_node::scheduler::NO_FLOW
    );
    let gate = Arc::new(Gate::new(n.gates(), n.clock));
    let (ops, mb, free) = tokio::join!(
        drive(n.clone(), gate.clone(), "ops", 8, 4096, 1, 11),
        drive(n.clone(), gate.clone(), "mb", 4, 1 << 20, 1, 11),
        drive(n.clone(), gate.clone(), "free", 2, 4096, 1, 11),
    );
    // 10 s of steady state: 2,000 requests at 200 IOPS, 500 MiB at 50 MiB/s (+-0.5%).
    let o = ops.ops.load(Relaxed);
    assert!(
        (1990..=2010).contains(&o),
        "200 IOPS bucket: {o} requests in 10 s"
    );
    let mib = mb.bytes.load(Relaxed) >> 20;
    assert!(
        (497..=503).contains(&mib),
        "50 MiB/s bucket: {mib} MiB in 10 s"
    );
    // The unlimited bucket is only bounded by its clients' own service time (2 clients,
    // each request 50 us, which tokio's paused timer rounds up to its 1 ms tick: 2,000/s).
    let f = free.ops.load(Relaxed);
    assert!(f >= 19_900, "unlimited bucket: {f}");
    assert_eq!(free.ceiling_ns.load(Relaxed), 0);
    assert!(ops.ceiling_ns.load(Relaxed) > 0);
}

#[tokio::test(start_paused = true)]
async fn shared_policy_is_one_budget_for_volume_and_bucket() {
    let (n, _dir) = node(CEILINGS, "shared");
    let b = n
        .open_bucket("b", "u1", 1 << 40, Some("shared300".into()))
        .unwrap();
    let vol = n.volume("vol").unwrap();
    assert_eq!(b.flow(), vol.flow(), "one flow for the shared policy");
    let gate = Arc::new(Gate::new(n.gates(), n.clock));
    // The bucket alone gets the whole shared budget.
    let c = drive(n.clone(), gate.clone(), "b", 4, 4096, 1, 6).await;
    let o = c.ops.load(Relaxed);
    assert!(
        (1490..=1510).contains(&o),
        "shared 300 IOPS, bucket alone: {o} in 5 s"
    );
    // Moving the bucket off the policy frees it; the volume keeps the flow.
    n.assign_bucket_policy(&b, None).unwrap();
    assert_eq!(b.flow(), storage_node::scheduler::NO_FLOW);
    assert_ne!(vol.flow(), storage_node::scheduler::NO_FLOW);
}

/// A node with a 1,000 IOPS controller, a 600 IOPS floor policy (`floor600`), `rest` of
/// the config, and the bucket `gold` under the floor.
fn gold_on_a_floor(rest: &str, tag: &str) -> (Arc<Node>, TestDir) {
    let base = r#"
[capacity]
iops = 1000
[[policy]]
name = "floor600"
fixed.min_throughput = "600iops"
"#;
    let (n, dir) = node(&format!("{base}{rest}"), tag);
    n.open_bucket("gold", "u1", 1 << 40, Some("floor600".into()))
        .unwrap();
    (n, dir)
}

/// 10 s on a 1,000 IOPS controller: the 600 IOPS floor got at least its share (-1%) and
/// the flows together filled the capacity (+-1%).
#[track_caller]
fn floor_and_capacity_held(floor_ops: u64, total: u64, others: &str) {
    assert!(
        floor_ops >= 5940,
        "floor 600 IOPS: {floor_ops} in 10 s ({others})"
    );
    assert!((9900..=10100).contains(&total), "capacity: {total}");
}

#[tokio::test(start_paused = true)]
async fn controller_floor_holds_for_a_bucket_against_a_bully() {
    let (n, _dir) = gold_on_a_floor(
        "[[policy]]\nname = \"cap100\"\nfixed.max_throughput = \"100iops\"\n",
        "ctl",
    );
    n.open_bucket("bully", "u2", 1 << 40, None).unwrap();
    n.open_bucket("capped", "u3", 1 << 40, Some("cap100".into()))
        .unwrap();
    // Under a controller every bucket is a flow, limited or not.
    assert_ne!(
        n.bucket("bully").unwrap().flow(),
        storage_node::scheduler::NO_FLOW
    );
    let gate = Arc::new(Gate::new(n.gates(), n.clock));
    let (gold, bully, capped) = tokio::join!(
        drive(n.clone(), gate.clone(), "gold", 16, 4096, 1, 11),
        drive(n.clone(), gate.clone(), "bully", 64, 4096, 1, 11),
        drive(n.clone(), gate.clone(), "capped", 16, 4096, 1, 11),
    );
    let (g, b, c) = (
        gold.ops.load(Relaxed),
        bully.ops.load(Relaxed),
        capped.ops.load(Relaxed),
    );
    // 10 s at 1,000 IOPS: the floor gets at least its 600/s (-1%), the capped bucket its
    // 100/s, the bully what is left, and together they fill the capacity.
    floor_and_capacity_held(g, g + b + c, &format!("bully {b}, capped {c}"));
    assert!((990..=1010).contains(&c), "ceiling 100 IOPS: {c}");
    // The capped bucket waited for its own ceiling; the bully for the node.
    assert!(capped.ceiling_ns.load(Relaxed) > bully.ceiling_ns.load(Relaxed));
    assert!(bully.floor_ns.load(Relaxed) > 0);
}

/// Volumes and buckets are flows of one controller: a bucket's floor holds against a
/// volume that asks for everything (the volume's requests go through the same scheduler
/// entry points as the NBD path's, here via a gate to keep the test in virtual time).
#[tokio::test(start_paused = true)]
async fn controller_floor_holds_for_a_bucket_against_a_volume() {
    let (n, _dir) = gold_on_a_floor("[[volume]]\nname = \"bully\"\nsize = \"1GiB\"\n", "mixed");
    let vol = n.volume("bully").unwrap();
    assert_ne!(vol.flow(), storage_node::scheduler::NO_FLOW);
    let gate = Arc::new(Gate::new(n.gates(), n.clock));
    let bully_ops = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut bully = Vec::new();
    for _ in 0..64 {
        let (gate, flow, ops) = (gate.clone(), vol.flow(), bully_ops.clone());
        bully.push(tokio::spawn(async move {
            while start.elapsed() < Duration::from_secs(11) {
                gate.admit(Op::new(flow, Work::Write(4096))).await;
                if start.elapsed() >= Duration::from_secs(1) {
                    ops.fetch_add(1, Relaxed);
                }
            }
        }));
    }
    let gold = drive(n.clone(), gate.clone(), "gold", 16, 4096, 1, 11).await;
    for t in bully {
        t.await.unwrap();
    }
    let (g, b) = (gold.ops.load(Relaxed), bully_ops.load(Relaxed));
    floor_and_capacity_held(g, g + b, &format!("a bucket against a volume's {b}"));
}

/// ONTAP's two node-wide rules, on: a ceiling's +50 % tolerance (`ceiling_mode = "ontap"`)
/// and no MB/s ceiling under a floor (`mbps_ceiling_with_floor = "ignored"`).
const ONTAP_RULES: &str = r#"
[node]
ceiling_mode = "ontap"

[capacity]
iops = 20000
mbps_ceiling_with_floor = "ignored"

[[policy]]
name = "cap200"
fixed = { max_throughput_iops = 200 }

[[policy]]
name = "floored"
fixed = { min_throughput_iops = 100, max_throughput_mbps = 50 }

[[volume]]
name = "vcap"
size = "1TB"
policy = "cap200"

[[volume]]
name = "vfloor"
size = "1TB"
policy = "floored"
"#;

#[test]
fn a_bucket_gets_the_limits_a_volume_gets_under_the_same_policy() {
    let (n, _dir) = node(ONTAP_RULES, "rules");
    for (vol, policy) in [("vcap", "cap200"), ("vfloor", "floored")] {
        let b = n
            .open_bucket(policy, policy, 1 << 40, Some(policy.into()))
            .unwrap();
        let v = n.volume(vol).unwrap();
        assert_eq!(b.limits(), v.limits(), "bucket and volume under {policy}");
    }
    // And the rules did apply (to both).
    let cap = n.bucket("cap200").unwrap().limits();
    assert_eq!(cap.ceiling.iops, 200);
    assert_eq!(cap.burst.iops.map(|s| s.rate), Some(300), "ONTAP's +50 %");
    let floored = n.bucket("floored").unwrap().limits();
    assert_eq!(floored.floor.iops, 100);
    assert_eq!(
        floored.ceiling.bytes_per_sec, 0,
        "no MB/s ceiling under a floor"
    );
}
