//! The suites' terminal output: a line per measurement as it ends, the sizing shown before
//! the load, and the summaries after the run (the network matrix; disks per device, per
//! host and all hosts with spread and steady state; storage per client and merged).

use std::fmt::Write as _;

use suites::disks::TargetSizing;
use suites::fiorun;
use suites::network::{HostTotal, Pair};

/// "h0 -> h1: 191 Mbit/s (19% of 1000), 0 retransmits, rtt 412 us  BELOW 90%".
pub fn pair_line(p: &Pair) -> String {
    let Some(r) = &p.run else {
        return format!(
            "{} -> {}: ERROR {}",
            p.from,
            p.to,
            p.error.as_deref().unwrap_or("")
        );
    };
    let g = r.goodput_bps / 1e6;
    let share = p
        .rated_mbps
        .map(|m| format!(" ({:.0}% of {m})", (100.0 * g / m as f64).floor()))
        .unwrap_or_default();
    let why = match (p.passed(), p.starved()) {
        (false, Some(why)) => format!(" (inconclusive, {why})"),
        _ => String::new(),
    };
    format!(
        "{} -> {}: {g:.0} Mbit/s{share}, {} retransmits, rtt {:.0} us{}{}{why}",
        p.from,
        p.to,
        r.retransmits,
        r.rtt_mean_us,
        if p.rate_ok == Some(false) {
            "  BELOW THRESHOLD"
        } else {
            ""
        },
        if p.retransmits_ok {
            ""
        } else {
            "  TOO MANY RETRANSMITS"
        }
    )
}

/// Each host's cumulative traffic under load.
pub fn load_lines(totals: &[HostTotal]) -> String {
    let mut s = String::new();
    for t in totals {
        let _ = writeln!(
            s,
            "  {}: out {:.0} Mbit/s, in {:.0} Mbit/s under load (rated {}){}",
            t.host,
            t.out_mbps,
            t.in_mbps,
            t.rated_mbps.map_or("?".into(), |r| r.to_string()),
            match (
                t.out_ok == Some(false) || t.in_ok == Some(false),
                &t.starved
            ) {
                (false, _) => String::new(),
                (true, None) => "  BELOW THRESHOLD".into(),
                (true, Some(why)) => format!("  BELOW THRESHOLD (inconclusive, {why})"),
            }
        );
    }
    s
}

/// The sizing each target got and how.
pub fn sizing(sz: &[TargetSizing]) -> String {
    let mut s = String::from("sizing (seed 002 rules):\n");
    for t in sz {
        let _ = writeln!(
            s,
            "  {} {}: size {} numjobs {} iodepth {}",
            t.host,
            t.targets.join("+"),
            fio::fmt::human(t.sizing.size_bytes),
            t.sizing.numjobs,
            t.sizing
                .iodepth
                .map_or("per job file".to_string(), |d| d.to_string())
        );
        for n in &t.sizing.notes {
            let _ = writeln!(s, "      {n}");
        }
    }
    s
}

/// The fio suites' summary: targets, sizing, per job and place over the iterations, then
/// each client of multi-client runs beside the merged figure.
pub fn fio_summary(
    notes: &[String],
    sz: &[TargetSizing],
    runs: &[fiorun::FioRun],
    iterations: u32,
) -> String {
    let mut s = String::new();
    for n in notes {
        if !n.starts_with("preflight") && !n.starts_with("  ") {
            let _ = writeln!(s, "{n}");
        }
    }
    s.push_str(&sizing(sz));
    let sums = fiorun::summarize(runs);
    for stage in ["device", "host", "cluster"] {
        let n = sums.iter().filter(|m| m.stage == stage).count();
        if n > 0 {
            let what = match stage {
                "device" => "each device alone",
                "host" => "all devices of a host together",
                _ => "every host at once (fio client/server, All clients)",
            };
            let _ = writeln!(s, "{stage}: {what}: {n} job(s)");
        }
    }
    s.push_str(&fiorun::render_summaries(&sums));
    let multi: Vec<&fiorun::FioRun> = runs.iter().filter(|r| r.per_client.len() > 1).collect();
    if !multi.is_empty() {
        let _ = writeln!(
            s,
            "per client (last iteration; All clients is fio's merged entry, p99 = worst client):"
        );
        for r in multi.iter().filter(|r| r.iteration == iterations) {
            let _ = writeln!(s, "  {} #{}:", r.job, r.iteration);
            for c in &r.per_client {
                let _ = writeln!(
                    s,
                    "    {:24} {:>10.0} IOPS {:>9.1} MiB/s  p99 {:.0} us",
                    c.client.as_deref().unwrap_or("?"),
                    c.iops(),
                    c.bw_bytes() as f64 / 1048576.0,
                    c.read.p99_ns.max(c.write.p99_ns) as f64 / 1e3
                );
            }
            let _ = writeln!(
                s,
                "    {:24} {:>10.0} IOPS {:>9.1} MiB/s  p99 {:.0} us (worst client)",
                r.merged.client.as_deref().unwrap_or("merged"),
                r.iops(),
                r.mib_s(),
                r.p99_us()
            );
        }
    }
    s
}
