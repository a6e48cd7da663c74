//! Whether a host could run a measurement unstarved: the share of a window in which some
//! runnable task on it waited for a CPU. The kernel's pressure stall information
//! (`/proc/pressure/cpu`, its `some` line's cumulative `total=` in µs, parsed by
//! procfs-core) read before and after the window, over the host's own uptime
//! (`/proc/uptime`) between the two readings. A kernel without PSI (before 4.20, or booted
//! `psi=0`) gives no figure, and no verdict is discounted there.

use hosts::Host;
use procfs_core::parse_pressure_record;

/// The shell command that prints a reading (what [`parse`] reads).
pub const READ: &str = "cat /proc/pressure/cpu /proc/uptime 2>/dev/null";

/// One reading: cumulative µs some task waited for a CPU, and the host's uptime, s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub some_us: u64,
    pub uptime_s: f64,
}

/// Read `h` now (None: no PSI there, or the host did not answer).
pub fn read(h: &Host) -> Option<Reading> {
    h.run(READ).ok().and_then(|o| parse(&o.stdout))
}

/// [`READ`]'s output.
pub fn parse(text: &str) -> Option<Reading> {
    let (mut some, mut uptime) = (None, None);
    for line in text.lines() {
        if line.starts_with("some ") {
            some = parse_pressure_record(line).ok().map(|r| r.total);
        } else if !line.starts_with("full ") {
            uptime = line.split_whitespace().next().and_then(|t| t.parse().ok());
        }
    }
    Some(Reading {
        some_us: some?,
        uptime_s: uptime?,
    })
}

/// The share of the window between two readings in which some task waited for a CPU,
/// percent (None: a reading is missing, or the host rebooted between them).
pub fn wait_pct(before: Option<Reading>, after: Option<Reading>) -> Option<f64> {
    let (a, b) = (before?, after?);
    let dt = b.uptime_s - a.uptime_s;
    (dt > 0.0 && b.some_us >= a.some_us).then(|| 100.0 * (b.some_us - a.some_us) as f64 / 1e6 / dt)
}

/// Why a figure measured while these hosts waited says nothing about what it measured:
/// the first host whose wait reached the starved-host threshold (docs/DIAGNOSIS.md's
/// `starved-host`, the same CPU-pressure threshold), with its figure.
pub fn starved<'a>(waits: impl IntoIterator<Item = (&'a str, Option<f64>)>) -> Option<String> {
    let limit = assess::diagnosis::limits::PSI_CPU_SOME_PCT;
    waits
        .into_iter()
        .filter_map(|(h, w)| w.map(|w| (h, w)))
        .filter(|&(_, w)| w >= limit)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(h, w)| {
            format!(
                "starved-host: some task on {h} waited for a CPU {w:.0}% of the test (>= {limit:.0}%): the host, not the network, may have held it"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: &str = "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n\
                         full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\
                         5000.00 9000.00\n";
    const LATER: &str = "some avg10=40.00 avg60=10.00 avg300=2.00 total=5000000\n\
                         full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\
                         5010.00 9010.00\n";

    #[test]
    fn a_window_share_is_the_stall_over_the_uptime_between_readings() {
        let a = parse(QUIET).unwrap();
        assert_eq!(
            a,
            Reading {
                some_us: 1_000_000,
                uptime_s: 5000.0
            }
        );
        // 4 s of waiting in 10 s.
        let w = wait_pct(Some(a), parse(LATER)).unwrap();
        assert!((w - 40.0).abs() < 1e-9, "{w}");
        // Unknown when either reading is, or the host rebooted.
        assert_eq!(wait_pct(None, parse(LATER)), None);
        assert_eq!(wait_pct(parse(LATER), Some(a)), None);
    }

    #[test]
    fn a_kernel_without_psi_gives_no_reading() {
        assert_eq!(parse("5000.00 9000.00\n"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn the_most_starved_host_past_the_threshold_is_named() {
        assert_eq!(starved([("h0", Some(24.9)), ("h1", None)]), None);
        let why = starved([("h0", Some(30.0)), ("h1", Some(61.0))]).unwrap();
        assert!(
            why.starts_with("starved-host: some task on h1 waited for a CPU 61%"),
            "{why}"
        );
    }
}
