//! A backend whose calls sleep (`[backend] delay`, nbdkit's delay filter) never holds a
//! runtime worker: the connection runs such calls on the blocking pool. Real time, on a
//! runtime of one thread, so a worker that slept in the layer would starve everything.

use std::time::{Duration, Instant};

use storage_node::testing::TestNode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

mod common;
use common::{connect, read_4k};

/// The layer's delay on every read.
const DELAY: Duration = Duration::from_millis(400);

#[tokio::test(flavor = "current_thread")]
async fn a_delayed_read_leaves_the_runtime_free() {
    let (node, _dir) = TestNode::open(
        "[backend]\ndelay = { read = \"400ms\" }\n[[volume]]\nname = \"v\"\nsize = \"16MiB\"\n",
        "slow-backend",
    )
    .split();
    let (mut client, _) = connect(&node, "v", 1 << 20).await;

    // A ticker on the same (only) thread: the longest it waited between two wake-ups.
    let (stop_tx, mut stop) = watch::channel(false);
    let ticker = tokio::spawn(async move {
        let (mut last, mut longest) = (Instant::now(), Duration::ZERO);
        loop {
            tokio::select! {
                _ = stop.changed() => return longest,
                _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
            let now = Instant::now();
            longest = longest.max(now - last);
            last = now;
        }
    });
    // Let it start (and take its first tick) before the read.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let t0 = Instant::now();
    let mut out = Vec::new();
    read_4k(&mut out, 1);
    client.write_all(&out).await.unwrap();
    let mut reply = vec![0u8; 16 + 4096];
    client.read_exact(&mut reply).await.unwrap();
    assert_eq!(u32::from_be_bytes(reply[4..8].try_into().unwrap()), 0);
    let took = t0.elapsed();
    stop_tx.send_replace(true);
    let longest = ticker.await.unwrap();
    assert!(took >= DELAY, "the read took the layer's delay: {took:?}");
    // A worker sleeping in the layer would not wake the ticker for the whole 400 ms; a
    // busy machine delays a 5 ms timer's wake-up by far less than half of that.
    assert!(
        longest < DELAY / 2,
        "the runtime's only thread was held {longest:?} during a {took:?} read"
    );
}
