//! Cost of one mClock scheduling decision (dequeue + enqueue with every flow backlogged),
//! for 10, 100 and 1,000 flows. A benchmark, not a test: it reads the wall clock, which the
//! crate itself never does.
//!
//! `cargo run --release -p qos-core --example mclock_bench`

use qos_core::{FlowId, FlowSpec, MClock, Nanos, Rate};

fn main() {
    for flows in [10usize, 100, 1000, 10_000] {
        let mut m: MClock<u32> = MClock::new(Rate::UNLIMITED, 4096);
        let ids: Vec<FlowId> = (0..flows)
            .map(|i| {
                let spec = FlowSpec {
                    reservation: Rate {
                        iops: if i % 10 == 0 { 100 } else { 0 },
                        bytes_per_sec: 0,
                    },
                    limit: Rate::UNLIMITED,
                    weight: 1 + (i % 3) as u32,
                };
                m.add_flow(spec, 0)
            })
            .collect();
        for &id in &ids {
            for _ in 0..4 {
                if m.enqueue(id, 0, 4096, 0).is_err() {
                    eprintln!("flow {id:?} vanished");
                    return;
                }
            }
        }
        let decisions = 200_000u64;
        let start = std::time::Instant::now();
        let mut t: Nanos = 0;
        for _ in 0..decisions {
            t += 10_000;
            let Some(d) = m.dequeue(t) else {
                eprintln!("nothing to dispatch with every flow backlogged");
                return;
            };
            let _ = m.enqueue(d.flow, 0, 4096, t);
        }
        let ns = start.elapsed().as_nanos() as f64 / decisions as f64;
        println!("{flows:5} flows: {ns:8.1} ns per decision (dequeue + enqueue)");
    }
}
