//! A gate whose connection went away gives its ceiling's reservations back, in virtual
//! time (tokio's paused clock), through the async driver NFS connections use.

use std::sync::Arc;
use std::time::Duration;

use storage_node::admission::{Gate, Op, Work};
use storage_node::testing::TestNode;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn a_dropped_gate_gives_its_backlog_back() {
    let (n, _dir) = TestNode::open(
        "[[policy]]\nname = \"two\"\nfixed.max_throughput = \"2iops\"\n\
         [[volume]]\nname = \"v\"\nsize = \"1GiB\"\npolicy = \"two\"\n",
        "gate-abandon",
    )
    .split();
    let flow = n.volume("v").unwrap().flow();
    let op = Op::new(flow, Work::Write(65536));
    let gone = Arc::new(Gate::new(n.gates(), n.clock));
    // 200 requests held by the ceiling: 100 s of reservations.
    let held: Vec<_> = (0..200)
        .map(|_| {
            let g = gone.clone();
            tokio::spawn(async move { g.admit(op).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(10)).await;
    for t in &held {
        t.abort();
    }
    for t in held {
        let _ = t.await;
    }
    drop(gone);
    let next = Gate::new(n.gates(), n.clock);
    let t0 = Instant::now();
    next.admit(op).await;
    next.admit(op).await;
    // The request that started at 0 holds its slot until 0.5 s: the next two go at 0.5 s
    // and 1 s (was: after the 199 abandoned ones, at 100 s).
    assert!(
        t0.elapsed() <= Duration::from_millis(1000),
        "the next connection waited {:?}",
        t0.elapsed()
    );
}
