//! Pressure stall information (PSI): the kernel's own answer to "was this measurement
//! starved?". `/proc/pressure/{cpu,io,memory}` (and `cpu.pressure`, `io.pressure`,
//! `memory.pressure` in every cgroup v2 directory) give, per resource, the cumulative time in
//! µs during which some runnable task waited (`some`) or every non-idle task stalled
//! (`full`). Two readings give the exact share of the interval between them; the sampler
//! reads them with every sample, and a judged window's share is the sum of its samples'
//! stalls over the sum of their intervals (`total` at the window's end less `total` at its
//! start). The lines are parsed by procfs-core.

use procfs_core::parse_pressure_record;
use serde::{Deserialize, Serialize};

use crate::source::SourceError;

/// Cumulative stall times at one instant, µs (each line's `total=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub cpu_some: u64,
    /// Zero at the system level (the kernel reports it for cgroups).
    pub cpu_full: u64,
    pub io_some: u64,
    pub io_full: u64,
    pub memory_some: u64,
    pub memory_full: u64,
}

/// One file's `some` and `full` totals. A file without a `full` line (the system's CPU file
/// before Linux 5.13) has 0 there.
fn file_totals(what: &str, raw: &[u8]) -> Result<(u64, u64), SourceError> {
    let text = String::from_utf8_lossy(raw);
    let (mut some, mut full) = (None, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r = parse_pressure_record(line).map_err(|e| SourceError::Malformed {
            what: what.to_string(),
            detail: format!("{line:?}: {e}"),
        })?;
        if line.starts_with("some") {
            some = Some(r.total);
        } else {
            full = r.total;
        }
    }
    some.map(|s| (s, full))
        .ok_or_else(|| SourceError::Malformed {
            what: what.to_string(),
            detail: "no `some` line".into(),
        })
}

impl Totals {
    /// The three files' text; None when they are absent (empty: a kernel without PSI, or
    /// booted with `psi=0`).
    pub fn parse(
        scope: &str,
        cpu: &[u8],
        io: &[u8],
        memory: &[u8],
    ) -> Result<Option<Totals>, SourceError> {
        if cpu.is_empty() && io.is_empty() && memory.is_empty() {
            return Ok(None);
        }
        let (cpu_some, cpu_full) = file_totals(&format!("{scope} cpu pressure"), cpu)?;
        let (io_some, io_full) = file_totals(&format!("{scope} io pressure"), io)?;
        let (memory_some, memory_full) = file_totals(&format!("{scope} memory pressure"), memory)?;
        Ok(Some(Totals {
            cpu_some,
            cpu_full,
            io_some,
            io_full,
            memory_some,
            memory_full,
        }))
    }
}

/// Stall shares of an interval (or a window), percent of its wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    pub cpu_some: f64,
    pub cpu_full: f64,
    pub io_some: f64,
    pub io_full: f64,
    pub memory_some: f64,
    pub memory_full: f64,
}

impl Pressure {
    /// The shares between two readings `secs` apart (a counter that went back counts as
    /// no stall; a share is at most 100%).
    pub fn between(prev: &Totals, cur: &Totals, secs: f64) -> Pressure {
        let pct = |c: u64, p: u64| {
            if secs > 0.0 {
                (c.saturating_sub(p) as f64 / 1e6 / secs * 100.0).min(100.0)
            } else {
                0.0
            }
        };
        Pressure {
            cpu_some: pct(cur.cpu_some, prev.cpu_some),
            cpu_full: pct(cur.cpu_full, prev.cpu_full),
            io_some: pct(cur.io_some, prev.io_some),
            io_full: pct(cur.io_full, prev.io_full),
            memory_some: pct(cur.memory_some, prev.memory_some),
            memory_full: pct(cur.memory_full, prev.memory_full),
        }
    }

    /// The share over consecutive intervals (each a share and its length): the stalls
    /// summed over the time summed, which is the window's exact share. None when empty.
    pub fn over(parts: &[(Pressure, f64)]) -> Option<Pressure> {
        let total: f64 = parts.iter().map(|p| p.1).sum();
        if parts.is_empty() || total <= 0.0 {
            return None;
        }
        let w = |f: fn(&Pressure) -> f64| parts.iter().map(|(p, t)| f(p) * t).sum::<f64>() / total;
        Some(Pressure {
            cpu_some: w(|p| p.cpu_some),
            cpu_full: w(|p| p.cpu_full),
            io_some: w(|p| p.io_some),
            io_full: w(|p| p.io_full),
            memory_some: w(|p| p.memory_some),
            memory_full: w(|p| p.memory_full),
        })
    }

    /// "cpu 63.2%, io 12.0% (full 4.1%), memory 0.0% of the time some task waited".
    pub fn describe(&self) -> String {
        let full = |v: f64| {
            if v >= 0.05 {
                format!(" (full {v:.1}%)")
            } else {
                String::new()
            }
        };
        format!(
            "cpu {:.1}%{}, io {:.1}%{}, memory {:.1}%{}",
            self.cpu_some,
            full(self.cpu_full),
            self.io_some,
            full(self.io_full),
            self.memory_some,
            full(self.memory_full)
        )
    }
}

/// A cgroup's totals at one instant, with the job's processes in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupTotals {
    pub path: String,
    pub pids: Vec<i32>,
    pub totals: Totals,
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = "some avg10=4.50 avg60=0.91 avg300=0.00 total=1000000\n\
                       full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    const IO: &str = "some avg10=0.05 avg60=0.31 avg300=2.11 total=500000\n\
                      full avg10=0.00 avg60=0.00 avg300=0.04 total=250000\n";

    #[test]
    fn two_readings_give_the_exact_share_of_the_interval() {
        let a = Totals::parse("host", CPU.as_bytes(), IO.as_bytes(), IO.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.cpu_some, a.io_full, a.memory_some),
            (1_000_000, 250_000, 500_000)
        );
        let b = Totals {
            cpu_some: a.cpu_some + 600_000,
            io_some: a.io_some + 100_000,
            io_full: a.io_full + 50_000,
            ..a
        };
        let p = Pressure::between(&a, &b, 2.0);
        assert!((p.cpu_some - 30.0).abs() < 1e-9, "{p:?}");
        assert!((p.io_some - 5.0).abs() < 1e-9 && (p.io_full - 2.5).abs() < 1e-9);
        assert_eq!(p.memory_some, 0.0);
        // A window of two intervals, 1 s at 30% and 3 s at 10%: 1.2 s of 4 s.
        let w = Pressure::over(&[
            (
                Pressure {
                    cpu_some: 30.0,
                    ..Pressure::default()
                },
                1.0,
            ),
            (
                Pressure {
                    cpu_some: 10.0,
                    ..Pressure::default()
                },
                3.0,
            ),
        ])
        .unwrap();
        assert!((w.cpu_some - 15.0).abs() < 1e-9, "{w:?}");
        assert_eq!(Pressure::over(&[]), None);
        assert_eq!(p.describe(), "cpu 30.0%, io 5.0% (full 2.5%), memory 0.0%");
    }

    #[test]
    fn absent_files_are_no_pressure_and_bad_ones_say_which() {
        assert_eq!(Totals::parse("host", b"", b"", b"").unwrap(), None);
        // Before Linux 5.13 the system's CPU file had no `full` line.
        let old = "some avg10=1.00 avg60=0.00 avg300=0.00 total=42\n";
        let t = Totals::parse("host", old.as_bytes(), IO.as_bytes(), IO.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!((t.cpu_some, t.cpu_full), (42, 0));
        let e = Totals::parse("cgroup /x", b"some total=x\n", IO.as_bytes(), IO.as_bytes())
            .unwrap_err();
        assert!(e.to_string().starts_with("cgroup /x cpu pressure: "), "{e}");
        let e = Totals::parse(
            "host",
            CPU.as_bytes(),
            b"full avg10=0 avg60=0 avg300=0 total=1\n",
            IO.as_bytes(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("io pressure: no `some` line"), "{e}");
    }
}
