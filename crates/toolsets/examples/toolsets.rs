//! Samples this machine for N seconds (default 10) and prints one line per sample, then the
//! sampler's own CPU: the overhead figure in docs/BENCHMARKS.md.
//!
//! `cargo run --release -p toolsets --example toolsets -- 60`

use std::time::Duration;

use toolsets::{Roles, Sampler};

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let sampler = Sampler::local(Roles::harness_only(None));
    std::thread::sleep(Duration::from_secs(secs));
    for s in sampler.stop() {
        for x in &s.samples {
            let disks: Vec<String> = x
                .disks
                .iter()
                .map(|d| {
                    format!(
                        "{} {:.0}r/s {:.0}w/s {:.0}%",
                        d.name, d.r_s, d.w_s, d.util_pct
                    )
                })
                .collect();
            let other = x
                .busiest_other()
                .map(|p| format!("{}:{} {:.0}%", p.pid, p.name, p.cpu_pct))
                .unwrap_or_default();
            println!(
                "t={:>6}ms idle {:5.1}% steal {:4.1}% rq {} | fio {:5.1}% node {:5.1}% harness {:4.1}% kernel {:4.1}% other {:5.1}% ({other}) | {}",
                x.t_ms,
                x.cpu.idle,
                x.cpu.steal,
                x.run_queue,
                x.roles.fio,
                x.roles.node,
                x.roles.harness,
                x.roles.kernel,
                x.roles.other,
                disks.join(", ")
            );
        }
        println!(
            "{}: {} samples; sampler thread {:.3} s CPU in {:.1} s = {:.3}% of one core ({:.2} ms per sample); errors: {:?}",
            s.host,
            s.overhead.samples,
            s.overhead.cpu_s,
            s.overhead.wall_s,
            s.overhead.pct_of_core(),
            s.overhead.cpu_s * 1000.0 / s.overhead.samples.max(1) as f64,
            s.errors
        );
    }
}
