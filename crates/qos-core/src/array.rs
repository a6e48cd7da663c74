//! An emulated array: what a request costs the controller, and how long it takes.
//!
//! Two independent parts, both per direction (reads, writes):
//!
//! * **Cost** ([`ServiceCurve`], [`ArrayModel`]) — the share of the array's time one
//!   request occupies. An array is described by what it was *measured* to do when
//!   saturated: e.g. seed 000's baseline, 15.3k random 4 KiB reads per second, 195 MiB/s
//!   of random 128 KiB reads and 246 MiB/s of 1 MiB sequential reads. Each such point
//!   says "a request of this size occupies the array for 1/rate seconds"; between points
//!   the time is interpolated linearly in size, below the first point it is the first
//!   point's, beyond the last it grows in proportion to size. Reads and writes draw on
//!   **one** budget of array time, so a 75/25 mix of 4 KiB reads and writes on seed
//!   000's array (65.4 µs and 91.7 µs per request) lands at 1 / (0.75 × 65.4 + 0.25 ×
//!   91.7) µs = 13.9k requests per second: the seed's 10.4k/3433.
//! * **Service latency** ([`ServiceLatency`], [`Latency`]) — how long the array takes to
//!   serve a request once the controller dispatched it: a fixed part plus a per-KiB part.
//!   It is pipelined (many requests are served at once) and costs no capacity: at queue
//!   depth 4 with 785 µs per 4 KiB read a client sees 785 µs and 5,100 requests per
//!   second, well below the 15.3k the array can do at depth 64.
//!
//! Pure arithmetic: no clock, no I/O.

use std::fmt;

use crate::curve::{span, Span};
use crate::units::{format_size, parse_size, parse_throughput};
use crate::Nanos;

/// A request's direction, as the array sees it (TRIM and WRITE_ZEROES count as writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Data leaves the array.
    Read,
    /// Data reaches the array.
    Write,
}

/// An array description that could not be parsed or makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArrayError(pub String);

/// A measured saturation rate at one request size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointRate {
    /// Requests per second.
    Iops(u64),
    /// Bytes per second (MB/s in config means 2^20 bytes per second).
    BytesPerSec(u64),
}

/// The time one request occupies the array, by request size (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceCurve {
    /// `(bytes, nanoseconds per request)`, sizes strictly increasing.
    points: Vec<(u64, f64)>,
    /// As declared, for display.
    declared: Vec<(u64, PointRate)>,
}

impl ServiceCurve {
    /// A curve from measured points `(request size, saturation rate)`.
    pub fn new(points: Vec<(u64, PointRate)>) -> Result<ServiceCurve, ArrayError> {
        if points.is_empty() {
            return Err(ArrayError(
                "give at least one point, e.g. { \"4KiB\" = \"15300iops\" }".into(),
            ));
        }
        let mut sorted = points.clone();
        sorted.sort_by_key(|p| p.0);
        let mut out = Vec::with_capacity(sorted.len());
        for &(size, rate) in &sorted {
            if size == 0 {
                return Err(ArrayError("a point's request size must be positive".into()));
            }
            let ns = match rate {
                PointRate::Iops(n) if n > 0 => 1e9 / n as f64,
                PointRate::BytesPerSec(b) if b > 0 => size as f64 * 1e9 / b as f64,
                _ => {
                    return Err(ArrayError(format!(
                        "{}: the rate must be positive",
                        format_size(size)
                    )))
                }
            };
            if let Some(&(prev, _)) = out.last() {
                if prev == size {
                    return Err(ArrayError(format!("{} is given twice", format_size(size))));
                }
            }
            out.push((size, ns));
        }
        Ok(ServiceCurve {
            points: out,
            declared: sorted,
        })
    }

    /// Nanoseconds of array time a request of `bytes` occupies.
    pub fn cost_ns(&self, bytes: u64) -> f64 {
        match span(&self.points, bytes) {
            Span::First(t0) => t0,
            Span::Past((sl, tl)) => tl * bytes as f64 / sl as f64,
            Span::Between((sa, ta), (sb, tb)) => {
                ta + (tb - ta) * (bytes - sa) as f64 / (sb - sa) as f64
            }
        }
    }

    /// The points as declared, sorted by size.
    pub fn declared(&self) -> &[(u64, PointRate)] {
        &self.declared
    }
}

impl fmt::Display for ServiceCurve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (s, r)) in self.declared.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match r {
                PointRate::Iops(n) => write!(f, "{} @ {n} IOPS", format_size(*s))?,
                PointRate::BytesPerSec(b) => {
                    write!(f, "{} @ {} MiB/s", format_size(*s), *b as f64 / 1048576.0)?
                }
            }
        }
        Ok(())
    }
}

/// An array's cost model: one [`ServiceCurve`] per direction, one shared time budget.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayModel {
    /// Reads.
    pub read: ServiceCurve,
    /// Writes.
    pub write: ServiceCurve,
}

impl ArrayModel {
    /// Nanoseconds of array time for a request.
    pub fn cost_ns(&self, dir: Direction, bytes: u64) -> f64 {
        match dir {
            Direction::Read => self.read.cost_ns(bytes),
            Direction::Write => self.write.cost_ns(bytes),
        }
    }

    /// The array's capacity in its own unit, a 4 KiB read: `1 s / cost(4 KiB read)`,
    /// rounded, at least 1. Floors (in IOPS) are compared with it for overcommit.
    pub fn capacity_iops(&self) -> u64 {
        (1e9 / self.read.cost_ns(4096)).round().max(1.0) as u64
    }

    /// A request's cost in capacity units (4 KiB reads) for a capacity of
    /// [`capacity_iops`](Self::capacity_iops) per second.
    pub fn cost_units(&self, dir: Direction, bytes: u64) -> f64 {
        self.cost_ns(dir, bytes) * self.capacity_iops() as f64 / 1e9
    }
}

/// How long the array takes to serve one request: `fixed + per_kib × bytes / 1024`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServiceLatency {
    /// Nanoseconds per request.
    pub fixed_ns: Nanos,
    /// Nanoseconds per KiB moved.
    pub per_kib_ns: Nanos,
}

impl ServiceLatency {
    /// Service time of a request of `bytes`, saturating.
    pub fn at(&self, bytes: u64) -> Nanos {
        let per = u128::from(self.per_kib_ns) * u128::from(bytes) / 1024;
        self.fixed_ns
            .saturating_add(Nanos::try_from(per).unwrap_or(Nanos::MAX))
    }
}

/// Service latency per direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Latency {
    /// Reads.
    pub read: ServiceLatency,
    /// Writes (also TRIM and WRITE_ZEROES).
    pub write: ServiceLatency,
}

impl Latency {
    /// Service time of a request.
    pub fn at(&self, dir: Direction, bytes: u64) -> Nanos {
        match dir {
            Direction::Read => self.read.at(bytes),
            Direction::Write => self.write.at(bytes),
        }
    }

    /// True when every part is zero.
    pub fn is_zero(&self) -> bool {
        *self == Latency::default()
    }
}

/// Parses a point of a service curve: `("4KiB", "15300iops")` or `("1MiB", "246MiB/s")`.
pub fn parse_point(size: &str, rate: &str) -> Result<(u64, PointRate), ArrayError> {
    let bytes = parse_size(size).map_err(|e| ArrayError(e.to_string()))?;
    let t = parse_throughput(rate).map_err(|e| ArrayError(e.to_string()))?;
    let r = match (t.iops, t.mbps) {
        (n, 0) if n > 0 => PointRate::Iops(n),
        (0, m) if m > 0 => PointRate::BytesPerSec(t.bytes_per_sec()),
        _ => {
            return Err(ArrayError(format!(
                "{size} = {rate:?}: give one rate, IOPS or MB/s, e.g. \"15300iops\" or \"246MB/s\""
            )))
        }
    };
    Ok((bytes, r))
}

/// Parses a duration: `785us`, `0.8ms`, `2s`, `500ns` (or `µs`), to nanoseconds.
pub fn parse_duration(s: &str) -> Result<Nanos, ArrayError> {
    let t = s.trim();
    let units: [(&str, f64); 5] = [
        ("ns", 1.0),
        ("us", 1e3),
        ("µs", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
    ];
    let bad = || {
        ArrayError(format!(
            "{s:?}: expected a duration such as \"785us\", \"0.8ms\" or \"2s\" (units ns, us, ms, s)"
        ))
    };
    let (num, mul) = units
        .iter()
        .find_map(|&(u, m)| t.strip_suffix(u).map(|n| (n.trim(), m)))
        .ok_or_else(bad)?;
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    let ns = (v * mul).round();
    if !ns.is_finite() || ns > 3.6e12 {
        return Err(ArrayError(format!("{s:?}: at most one hour")));
    }
    Ok(ns as Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1024;

    /// Seed 000's array, from its baseline row.
    fn seed000() -> ArrayModel {
        let p = |s: &str, r: &str| parse_point(s, r).unwrap();
        ArrayModel {
            read: ServiceCurve::new(vec![
                p("4KiB", "15300iops"),
                p("128KiB", "195MiB/s"),
                p("1MiB", "246MiB/s"),
            ])
            .unwrap(),
            write: ServiceCurve::new(vec![
                p("4KiB", "10900iops"),
                p("128KiB", "128MiB/s"),
                p("1MiB", "136MiB/s"),
            ])
            .unwrap(),
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= b.abs() * rel
    }

    #[test]
    fn the_points_are_reproduced_exactly() {
        let a = seed000();
        let r = |dir, bytes| 1e9 / a.cost_ns(dir, bytes);
        assert!(close(r(Direction::Read, 4 * K), 15_300.0, 1e-12));
        assert!(close(r(Direction::Write, 4 * K), 10_900.0, 1e-12));
        let mibs = |dir, bytes: u64| r(dir, bytes) * bytes as f64 / 1048576.0;
        assert!(close(mibs(Direction::Read, 128 * K), 195.0, 1e-12));
        assert!(close(mibs(Direction::Write, 128 * K), 128.0, 1e-12));
        assert!(close(mibs(Direction::Read, 1 << 20), 246.0, 1e-12));
        assert!(close(mibs(Direction::Write, 1 << 20), 136.0, 1e-12));
        assert_eq!(a.capacity_iops(), 15_300);
        assert!(close(a.cost_units(Direction::Read, 4 * K), 1.0, 1e-12));
        assert!(close(
            a.cost_units(Direction::Write, 4 * K),
            15_300.0 / 10_900.0,
            1e-12
        ));
    }

    #[test]
    fn between_below_and_beyond_the_points() {
        let a = seed000();
        let t4 = 1e9 / 15_300.0;
        let t128 = 128.0 * K as f64 * 1e9 / (195.0 * 1048576.0);
        // Below the first point: the first point's cost.
        assert_eq!(a.cost_ns(Direction::Read, 512), t4);
        assert_eq!(a.cost_ns(Direction::Read, 0), t4);
        // Halfway in size, halfway in time.
        let mid = a.cost_ns(Direction::Read, 66 * K);
        assert!(close(mid, (t4 + t128) / 2.0, 1e-12), "{mid}");
        // Beyond the last: in proportion (246 MiB/s stays 246 MiB/s).
        let two = a.cost_ns(Direction::Read, 2 << 20);
        assert!(close(2.0 * 1048576.0 * 1e9 / two / 1048576.0, 246.0, 1e-12));
    }

    #[test]
    fn a_75_25_mix_shares_one_budget() {
        // Seed 000's mixed job: 10.4k/3433 IOPS on the array of its baseline row.
        let a = seed000();
        let per =
            0.75 * a.cost_ns(Direction::Read, 4 * K) + 0.25 * a.cost_ns(Direction::Write, 4 * K);
        let total = 1e9 / per;
        assert!(close(total * 0.75, 10_400.0, 0.01), "{total}");
        assert!(close(total * 0.25, 3_433.0, 0.02), "{total}");
    }

    #[test]
    fn bad_curves_are_refused() {
        let e = ServiceCurve::new(vec![]).unwrap_err().0;
        assert!(e.contains("at least one point"), "{e}");
        let e = ServiceCurve::new(vec![(4 * K, PointRate::Iops(0))])
            .unwrap_err()
            .0;
        assert!(e.contains("positive"), "{e}");
        let e = ServiceCurve::new(vec![
            (4 * K, PointRate::Iops(1)),
            (4 * K, PointRate::Iops(2)),
        ])
        .unwrap_err()
        .0;
        assert!(e.contains("twice"), "{e}");
        let e = parse_point("4KiB", "100iops,10MB/s").unwrap_err().0;
        assert!(e.contains("give one rate"), "{e}");
        assert!(parse_point("4XB", "1iops").is_err());
    }

    #[test]
    fn service_latency() {
        let l = Latency {
            read: ServiceLatency {
                fixed_ns: 785_000,
                per_kib_ns: 1_000,
            },
            write: ServiceLatency {
                fixed_ns: 704_000,
                per_kib_ns: 0,
            },
        };
        assert_eq!(l.at(Direction::Read, 4 * K), 789_000);
        assert_eq!(l.at(Direction::Read, 1 << 20), 785_000 + 1_024_000);
        assert_eq!(l.at(Direction::Write, 1 << 20), 704_000);
        assert_eq!(l.at(Direction::Read, 512), 785_500);
        assert!(!l.is_zero() && Latency::default().is_zero());
        let huge = ServiceLatency {
            fixed_ns: 1,
            per_kib_ns: u64::MAX,
        };
        assert_eq!(huge.at(u64::MAX), Nanos::MAX);
    }

    #[test]
    fn durations() {
        for (s, ns) in [
            ("785us", 785_000),
            ("785.78us", 785_780),
            ("0.8ms", 800_000),
            ("2s", 2_000_000_000),
            ("500ns", 500),
            ("10µs", 10_000),
            (" 1 ms ", 1_000_000),
        ] {
            assert_eq!(parse_duration(s).unwrap(), ns, "{s}");
        }
        for s in ["", "ms", "1", "-1ms", "1e3us", "2h", "5000s"] {
            assert!(parse_duration(s).is_err(), "{s}");
        }
    }
}
