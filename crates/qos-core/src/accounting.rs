//! I/O-size accounting: how many operations one request counts for.
//!
//! A QoS ceiling of "500 IOPS" means different things on different arrays, because
//! they count a large request differently:
//!
//! * [`Accounting::Whole`] — one request is one operation whatever its size. NBD's and
//!   iSCSI's view, and qoslab's default.
//! * [`Accounting::Transfer`] — a request counts `ceil(bytes / size)` operations. ONTAP
//!   counts protocol operations, and over NFS a large client I/O travels as transfers of
//!   at most the mount's rsize/wsize, which ONTAP limits to 64 KiB by default ("By
//!   default, ONTAP limits NFS I/O sizes to 64K", NetApp, *NFS transfer sizes with Oracle
//!   databases*). So 500 IOPS of 1 MiB reads is 500 / 16 requests per second.
//! * [`Accounting::Curve`] — a cost curve normalised to 4 KiB: SolidFire's QoS counts
//!   "4KB IOPS", and a larger request costs more of them along a documented curve
//!   ([`CostCurve::solidfire`]).
//!
//! Counted operations are fixed-point: thousandths of an operation ([`MILLI`]), so a
//! curve's fractional costs (an 8 KiB request costs 1.6) are exact and a pacer can
//! enforce them with integer arithmetic. Like everything in this crate: no clock, no I/O.

use std::fmt;
use std::str::FromStr;

use crate::curve::{span, Span};
use crate::units::{format_size, parse_size};

/// Counted operations are held in thousandths: one whole operation is `MILLI`.
pub const MILLI: u64 = 1000;

/// NFS's transfer size on ONTAP unless `-tcp-max-xfer-size` is raised: 64 KiB.
pub const DEFAULT_TRANSFER: u64 = 64 * 1024;

/// Smallest and largest transfer size accepted (512 B .. 64 MiB).
pub const TRANSFER_RANGE: (u64, u64) = (512, 64 << 20);

/// An accounting setting that could not be parsed or is out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AccountingError(pub String);

/// How a request counts against IOPS ceilings, floors and the emulated controller.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Accounting {
    /// One request is one operation (NBD's, iSCSI's view).
    #[default]
    Whole,
    /// `ceil(bytes / size)` operations, at least one (ONTAP over NFS: `transfer:64KiB`).
    Transfer(u64),
    /// A cost curve normalised to 4 KiB (SolidFire).
    Curve(CostCurve),
}

impl Accounting {
    /// Operations counted for a request of `bytes`, in thousandths ([`MILLI`]). Never 0:
    /// every request costs at least one operation (a zero-length TRIM included).
    pub fn milliops(&self, bytes: u64) -> u64 {
        match self {
            Accounting::Whole => MILLI,
            Accounting::Transfer(size) => {
                bytes.div_ceil((*size).max(1)).max(1).saturating_mul(MILLI)
            }
            Accounting::Curve(c) => c.milliops(bytes),
        }
    }

    /// Operations counted for a request of `bytes`.
    pub fn ops(&self, bytes: u64) -> f64 {
        self.milliops(bytes) as f64 / MILLI as f64
    }

    /// True for the default (one request, one operation).
    pub fn is_whole(&self) -> bool {
        matches!(self, Accounting::Whole)
    }
}

impl fmt::Display for Accounting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Accounting::Whole => f.write_str("whole"),
            Accounting::Transfer(s) => write!(f, "transfer:{}", format_size(*s)),
            Accounting::Curve(c) if *c == CostCurve::solidfire() => f.write_str("solidfire"),
            Accounting::Curve(c) => write!(f, "curve:{c}"),
        }
    }
}

const FORMS: &str =
    "allowed: \"whole\", \"transfer\" (64KiB), \"transfer:SIZE\" (e.g. \"transfer:64KiB\"), \
\"solidfire\", or \"curve:SIZE=COST,...\" (e.g. \"curve:4KiB=1,8KiB=1.6,64KiB=10\")";

impl FromStr for Accounting {
    type Err = AccountingError;

    fn from_str(s: &str) -> Result<Self, AccountingError> {
        let t = s.trim();
        let bad = |why: String| AccountingError(format!("{s:?}: {why}; {FORMS}"));
        match t.to_ascii_lowercase().as_str() {
            "whole" => return Ok(Accounting::Whole),
            "transfer" => return Ok(Accounting::Transfer(DEFAULT_TRANSFER)),
            "solidfire" => return Ok(Accounting::Curve(CostCurve::solidfire())),
            _ => {}
        }
        if let Some(size) = strip_prefix_ci(t, "transfer:") {
            let n = parse_size(size.trim()).map_err(|e| bad(e.to_string()))?;
            let (lo, hi) = TRANSFER_RANGE;
            if !(lo..=hi).contains(&n) {
                return Err(bad(format!(
                    "transfer size {} is out of range {} .. {}",
                    format_size(n),
                    format_size(lo),
                    format_size(hi)
                )));
            }
            return Ok(Accounting::Transfer(n));
        }
        if let Some(points) = strip_prefix_ci(t, "curve:") {
            return points
                .parse::<CostCurve>()
                .map(Accounting::Curve)
                .map_err(|e| bad(e.0));
        }
        Err(bad("unknown accounting".into()))
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A cost curve: points `(request size in bytes, cost in thousandths of an operation)`,
/// sizes strictly increasing, costs non-decreasing and at least 1 (a thousandth).
///
/// A request no larger than the first point costs the first point's cost; between two
/// points the cost is interpolated linearly in size (rounded to the nearest thousandth);
/// beyond the last point it grows in proportion to size (the last point's cost per byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostCurve {
    points: Vec<(u64, u64)>,
}

impl CostCurve {
    /// SolidFire's documented curve (Element API `GetDefaultQoS`: "The values represent
    /// the cost of performing one IOP at a specific I/O size ... relative to a 4096 byte
    /// operation set at 100 IOPS"): 4 KiB 1, 8 KiB 1.6, 16 KiB 2.7, 32 KiB 5, 64 KiB 10,
    /// 128 KiB 19, 256 KiB 30, 512 KiB 75, 1 MiB 150 operations.
    pub fn solidfire() -> CostCurve {
        const K: u64 = 1024;
        // The documented table, in hundredths of a 4 KiB op; converted to thousandths.
        let table: [(u64, u64); 9] = [
            (4 * K, 100),
            (8 * K, 160),
            (16 * K, 270),
            (32 * K, 500),
            (64 * K, 1000),
            (128 * K, 1900),
            (256 * K, 3000),
            (512 * K, 7500),
            (1024 * K, 15000),
        ];
        CostCurve {
            points: table.iter().map(|&(s, c)| (s, c * 10)).collect(),
        }
    }

    /// A curve from `(bytes, milliops)` points (see the type's rules).
    pub fn new(points: Vec<(u64, u64)>) -> Result<CostCurve, AccountingError> {
        if points.is_empty() {
            return Err(AccountingError(
                "a cost curve needs at least one point".into(),
            ));
        }
        for w in points.windows(2) {
            if w[1].0 <= w[0].0 {
                return Err(AccountingError(format!(
                    "curve sizes must increase: {} after {}",
                    format_size(w[1].0),
                    format_size(w[0].0)
                )));
            }
            if w[1].1 < w[0].1 {
                return Err(AccountingError(format!(
                    "curve costs must not decrease: {} at {} after {} at {}",
                    w[1].1 as f64 / MILLI as f64,
                    format_size(w[1].0),
                    w[0].1 as f64 / MILLI as f64,
                    format_size(w[0].0)
                )));
            }
        }
        if let Some(&(s, c)) = points.iter().find(|p| p.0 == 0 || p.1 == 0) {
            return Err(AccountingError(format!(
                "curve point {}={}: size and cost must be positive",
                format_size(s),
                c as f64 / MILLI as f64
            )));
        }
        Ok(CostCurve { points })
    }

    /// The points, `(bytes, milliops)`.
    pub fn points(&self) -> &[(u64, u64)] {
        &self.points
    }

    /// Cost of a request of `bytes`, in thousandths of an operation.
    pub fn milliops(&self, bytes: u64) -> u64 {
        match span(&self.points, bytes) {
            Span::First(c0) => c0,
            Span::Past((sl, cl)) => {
                let v = u128::from(cl) * u128::from(bytes) / u128::from(sl);
                u64::try_from(v).unwrap_or(u64::MAX)
            }
            Span::Between((sa, ca), (sb, cb)) => {
                // Linear between the points, rounded to the nearest thousandth.
                let num = u128::from(cb - ca) * u128::from(bytes - sa);
                let den = u128::from(sb - sa);
                ca + u64::try_from((num + den / 2) / den).unwrap_or(u64::MAX - ca)
            }
        }
    }
}

impl fmt::Display for CostCurve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &(s, c)) in self.points.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", format_size(s), c as f64 / MILLI as f64)?;
        }
        Ok(())
    }
}

impl FromStr for CostCurve {
    type Err = AccountingError;

    /// `SIZE=COST,...`, e.g. `4KiB=1,8KiB=1.6,64KiB=10` (costs in operations, at most
    /// three decimals).
    fn from_str(s: &str) -> Result<Self, AccountingError> {
        let mut points = Vec::new();
        for part in s.split(',') {
            let (size, cost) = part.split_once('=').ok_or_else(|| {
                AccountingError(format!("curve point {part:?}: expected SIZE=COST"))
            })?;
            let size = parse_size(size.trim()).map_err(|e| AccountingError(e.to_string()))?;
            let cost = parse_milli(cost.trim()).ok_or_else(|| {
                AccountingError(format!(
                    "curve point {part:?}: cost must be a positive number with at most 3 decimals"
                ))
            })?;
            points.push((size, cost));
        }
        CostCurve::new(points)
    }
}

/// "1.6" → 1600 (thousandths); at most three decimals, non-negative.
fn parse_milli(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 3 {
        return None;
    }
    let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
    if !digits(int) || !digits(frac) {
        return None;
    }
    let i: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(3 - frac.len() as u32)
    };
    i.checked_mul(MILLI)?.checked_add(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1024;

    #[test]
    fn whole_counts_one_per_request() {
        let a = Accounting::Whole;
        for b in [0, 1, 4 * K, 1 << 20, u64::MAX] {
            assert_eq!(a.milliops(b), MILLI);
        }
    }

    #[test]
    fn transfer_counts_ceil_of_size() {
        let a: Accounting = "transfer:64KiB".parse().unwrap();
        // (bytes, ops): seed 000's columns under ONTAP over NFS.
        for (b, ops) in [
            (0, 1),
            (512, 1),
            (4 * K, 1),
            (64 * K, 1),
            (64 * K + 1, 2),
            (128 * K, 2),
            (1 << 20, 16),
            (32 << 20, 512),
        ] {
            assert_eq!(a.milliops(b), ops * MILLI, "{b}");
        }
        assert_eq!("transfer".parse::<Accounting>().unwrap(), a);
        assert_eq!(a.to_string(), "transfer:64KiB");
    }

    #[test]
    fn solidfire_curve_points_and_interpolation() {
        let a: Accounting = "solidfire".parse().unwrap();
        // The documented points exactly (thousandths of a 4 KiB op).
        for (b, m) in [
            (512, 1000),
            (4 * K, 1000),
            (8 * K, 1600),
            (16 * K, 2700),
            (32 * K, 5000),
            (64 * K, 10_000),
            (128 * K, 19_000),
            (256 * K, 30_000),
            (512 * K, 75_000),
            (1024 * K, 150_000),
            // Between points, linearly: 12 KiB is halfway between 1.6 and 2.7.
            (12 * K, 2150),
            (6 * K, 1300),
            // Beyond the last point, in proportion: 2 MiB costs 300.
            (2048 * K, 300_000),
        ] {
            assert_eq!(a.milliops(b), m, "{b}");
        }
        assert_eq!(a.to_string(), "solidfire");
    }

    #[test]
    fn custom_curves_parse_and_reject_nonsense() {
        let a: Accounting = "curve:4KiB=1,8KiB=1.5,1MiB=100".parse().unwrap();
        assert_eq!(a.milliops(8 * K), 1500);
        assert_eq!(a.to_string(), "curve:4KiB=1,8KiB=1.5,1MiB=100");
        for (bad, why) in [
            ("curve:8KiB=1,4KiB=2", "sizes must increase"),
            ("curve:4KiB=2,8KiB=1", "must not decrease"),
            ("curve:4KiB=0", "must be positive"),
            ("curve:4KiB", "expected SIZE=COST"),
            ("curve:4KiB=1.2345", "at most 3 decimals"),
            ("curve:4XB=1", "invalid size"),
            ("transfer:100B", "out of range"),
            ("transfer:1GiB", "out of range"),
            ("everything", "unknown accounting"),
        ] {
            let e = bad.parse::<Accounting>().unwrap_err().0;
            assert!(e.contains(why) && e.contains("allowed"), "{bad}: {e}");
        }
    }

    #[test]
    fn parse_milli_forms() {
        assert_eq!(parse_milli("1"), Some(1000));
        assert_eq!(parse_milli("1.6"), Some(1600));
        assert_eq!(parse_milli(".5"), Some(500));
        assert_eq!(parse_milli("0.125"), Some(125));
        assert_eq!(parse_milli(""), None);
        assert_eq!(parse_milli("."), None);
        assert_eq!(parse_milli("-1"), None);
        assert_eq!(parse_milli("1e3"), None);
    }
}
