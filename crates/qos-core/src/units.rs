//! Parsing and formatting of sizes, throughputs and IOPS-per-capacity values.
//!
//! Conventions (ONTAP's):
//! * sizes: `KB`, `MB`, `GB`, `TB` are powers of 1000, `KiB` … `TiB` powers of 1024;
//! * throughput: `MB/s` means 2^20 bytes per second (so `1GB/s` = 1024 MB/s);
//! * IOPS per capacity: `TB`/`GB` are decimal (10^12 / 10^9 bytes).
//!
//! All parsers are exact: decimal fractions are accepted only where the result
//! is a whole number of the target unit, and every arithmetic step is checked.

use std::fmt;
use std::str::FromStr;

/// Bytes in one qoslab/ONTAP "MB" of throughput (2^20).
pub const MIB: u64 = 1 << 20;

/// Bytes in one decimal terabyte, the denominator of [`IopsPerTb`].
pub const TB: u64 = 1_000_000_000_000;

/// Errors from the unit parsers. Every message names the input and the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The string is not a size (bad number, unknown unit, or not a whole number of bytes).
    #[error(
        "invalid size {input:?}: expected a whole number of bytes, optionally followed by a unit: \
         B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)"
    )]
    InvalidSize {
        /// The rejected input.
        input: String,
    },
    /// The size is syntactically valid but does not fit in 64 bits.
    #[error("invalid size {input:?}: larger than the maximum of {max} bytes", max = u64::MAX)]
    SizeOverflow {
        /// The rejected input.
        input: String,
    },
    /// The string is not an ONTAP throughput specification.
    #[error(
        "invalid throughput {input:?}: expected <N>iops, <N>MB/s (also KB/s, GB/s; 1 MB = 2^20 bytes) \
         or both separated by a comma, e.g. 500iops,100MB/s"
    )]
    InvalidThroughput {
        /// The rejected input.
        input: String,
    },
    /// The byte rate is not a whole number of MB/s (1 MB = 2^20 bytes).
    #[error(
        "invalid throughput {input:?}: not a whole number of MB/s (1 MB = 2^20 bytes, so KB/s values \
         must be multiples of 1024KB/s); limits are set in whole MB/s"
    )]
    ThroughputNotWholeMbps {
        /// The rejected input.
        input: String,
    },
    /// The throughput value does not fit in 64 bits.
    #[error("invalid throughput {input:?}: value too large (maximum {max} per unit)", max = u64::MAX)]
    ThroughputOverflow {
        /// The rejected input.
        input: String,
    },
    /// The string is not a duration in whole seconds.
    #[error(
        "invalid duration {input:?}: expected a whole number of seconds, optionally with a unit: \
         s, min, h or d, e.g. 60s, 30min, 1.5h"
    )]
    InvalidDuration {
        /// The rejected input.
        input: String,
    },
    /// The string is not an IOPS-per-capacity value.
    #[error(
        "invalid IOPS per capacity {input:?}: expected <N>IOPS/TB, <N>IOPS/GB (decimal TB/GB) or a plain \
         non-negative number meaning IOPS per TB, e.g. 2048IOPS/TB or 5IOPS/GB"
    )]
    InvalidIopsPerCapacity {
        /// The rejected input.
        input: String,
    },
}

/// A non-negative decimal literal split into its integer and fractional digit strings.
#[derive(Debug, Clone, Copy)]
struct Decimal<'a> {
    int: &'a str,
    frac: &'a str,
}

/// Outcome of an exact decimal scaling.
enum Scaled {
    Whole(u128),
    NotWhole,
    Overflow,
}

impl<'a> Decimal<'a> {
    /// Splits `s` into a leading decimal literal (`123` or `1.5`) and the rest.
    /// Signs, exponents, `inf`, `nan` and a bare `.` are not accepted.
    fn split(s: &'a str) -> Option<(Decimal<'a>, &'a str)> {
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        if int_len == 0 {
            return None;
        }
        let (int, rest) = s.split_at(int_len);
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            if frac_len == 0 {
                return None;
            }
            let (frac, rest) = after_dot.split_at(frac_len);
            Some((Decimal { int, frac }, rest))
        } else {
            Some((Decimal { int, frac: "" }, rest))
        }
    }

    /// Computes `self * mult` exactly.
    fn scale(&self, mult: u128) -> Scaled {
        let Some(int) = parse_digits(self.int) else {
            return Scaled::Overflow;
        };
        let Some(whole) = int.checked_mul(mult) else {
            return Scaled::Overflow;
        };
        let frac = self.frac.trim_end_matches('0');
        if frac.is_empty() {
            return Scaled::Whole(whole);
        }
        // A fraction with more than 38 significant digits cannot yield a whole
        // number for any multiplier we use (all are < 10^13, so den/gcd > 1).
        let (Some(num), Some(den)) = (
            parse_digits(frac),
            u32::try_from(frac.len())
                .ok()
                .and_then(|n| 10u128.checked_pow(n)),
        ) else {
            return Scaled::NotWhole;
        };
        // num/den * mult is whole iff num is a multiple of den / gcd(den, mult).
        let g = gcd(den, mult);
        let den_reduced = den / g;
        if num % den_reduced != 0 {
            return Scaled::NotWhole;
        }
        let Some(part) = (num / den_reduced).checked_mul(mult / g) else {
            return Scaled::Overflow;
        };
        match whole.checked_add(part) {
            Some(v) => Scaled::Whole(v),
            None => Scaled::Overflow,
        }
    }

    /// The literal as an `f64`, multiplied by `10^shift` without intermediate rounding
    /// (the decimal point is moved in the string before conversion).
    fn to_f64_shifted(self, shift: usize) -> Option<f64> {
        let take = shift.min(self.frac.len());
        let mut digits = String::with_capacity(self.int.len() + shift + self.frac.len() + 1);
        digits.push_str(self.int);
        digits.push_str(&self.frac[..take]);
        digits.push_str(&"0".repeat(shift - take));
        digits.push('.');
        digits.push_str(&self.frac[take..]);
        digits.push('0');
        digits.parse::<f64>().ok()
    }
}

/// Greatest common divisor (`gcd(x, 0) == x`).
fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Parses a string of ASCII digits into a `u128`, `None` on overflow.
fn parse_digits(s: &str) -> Option<u128> {
    s.bytes().try_fold(0u128, |acc, b| {
        acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
    })
}

const SIZE_UNITS: [(&str, u64); 9] = [
    ("B", 1),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

/// Parses a duration in whole seconds: `90`, `60s`, `30min`, `1.5h`, `2d` (case-insensitive;
/// fractions allowed when the result is a whole number of seconds).
pub fn parse_seconds(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError::InvalidDuration { input: s.into() };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "s" | "sec" | "secs" => 1,
        "m" | "min" | "mins" => 60,
        "h" | "hr" | "hour" | "hours" => 3_600,
        "d" | "day" | "days" => 86_400,
        _ => return Err(err()),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err());
    }
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| err())?
    };
    let mut total = int.checked_mul(mult).ok_or_else(err)?;
    if !frac.is_empty() {
        let digits = u32::try_from(frac.len()).map_err(|_| err())?;
        let den = 10u64.checked_pow(digits).ok_or_else(err)?;
        let f: u64 = frac.parse().map_err(|_| err())?;
        let scaled = f.checked_mul(mult).ok_or_else(err)?;
        if scaled % den != 0 {
            return Err(err());
        }
        total = total.checked_add(scaled / den).ok_or_else(err)?;
    }
    Ok(total)
}

/// Parses a byte size such as `4096`, `100GB`, `1.5 GiB` or `10tib`.
///
/// A plain integer is bytes. Units are matched case-insensitively; `KB`…`TB` are
/// powers of 1000 and `KiB`…`TiB` powers of 1024. A decimal fraction is accepted
/// when the result is a whole number of bytes. Negative, empty, overflowing or
/// unknown-unit inputs are rejected.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let invalid = || UnitError::InvalidSize {
        input: s.to_owned(),
    };
    let (num, rest) = Decimal::split(s.trim()).ok_or_else(invalid)?;
    let unit = rest.trim_start();
    let mult = if unit.is_empty() {
        1
    } else {
        SIZE_UNITS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(unit))
            .map(|&(_, m)| m)
            .ok_or_else(invalid)?
    };
    match num.scale(u128::from(mult)) {
        Scaled::Whole(v) => u64::try_from(v).map_err(|_| UnitError::SizeOverflow {
            input: s.to_owned(),
        }),
        Scaled::NotWhole => Err(invalid()),
        Scaled::Overflow => Err(UnitError::SizeOverflow {
            input: s.to_owned(),
        }),
    }
}

/// Formats a byte count so that [`parse_size`] reads it back exactly.
///
/// Among the units that represent `bytes` as a whole number, the one giving the
/// smallest number wins, binary units preferred on a tie; otherwise plain bytes.
/// Examples: `1073741824` → `1GiB`, `100000000000` → `100GB`, `1536` → `1536B`.
pub fn format_size(bytes: u64) -> String {
    let best = SIZE_UNITS
        .iter()
        .rev() // binary units first, largest first
        .filter(|&&(_, m)| m > 1 && bytes != 0 && bytes / m * m == bytes)
        .min_by_key(|&&(_, m)| bytes / m);
    match best {
        Some(&(name, m)) => format!("{}{}", bytes / m, name),
        None => format!("{bytes}B"),
    }
}

/// An ONTAP throughput specification: an IOPS part, a MB/s part, or both. 0 = not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Throughput {
    /// I/O operations per second; 0 = not set.
    pub iops: u64,
    /// MB/s where 1 MB = 2^20 bytes; 0 = not set.
    pub mbps: u64,
}

impl Throughput {
    /// The byte rate of the MB/s part (`mbps * 2^20`, saturating); 0 = not set.
    pub fn bytes_per_sec(&self) -> u64 {
        self.mbps.saturating_mul(MIB)
    }
}

const BYTE_RATE_UNITS: [(&str, u64); 15] = [
    ("B/s", 1),
    ("KB/s", 1 << 10),
    ("MB/s", 1 << 20),
    ("GB/s", 1 << 30),
    ("TB/s", 1 << 40),
    ("KBps", 1 << 10),
    ("MBps", 1 << 20),
    ("GBps", 1 << 30),
    ("TBps", 1 << 40),
    ("KiB/s", 1 << 10),
    ("MiB/s", 1 << 20),
    ("GiB/s", 1 << 30),
    ("TiB/s", 1 << 40),
    ("MiBps", 1 << 20),
    ("GiBps", 1 << 30),
];

/// Parses ONTAP CLI throughput syntax: `500iops`, `100MB/s`, `100MBps`, `1GB/s`,
/// `500iops,100MB/s` (either order), or `0` / `inf` / `none` for "not set".
///
/// Units are case-insensitive. MB means 2^20 bytes (ONTAP's convention), so
/// `1GB/s` is 1024 MB/s; `KB/s` values must come to whole MB/s.
pub fn parse_throughput(s: &str) -> Result<Throughput, UnitError> {
    let invalid = || UnitError::InvalidThroughput {
        input: s.to_owned(),
    };
    let trimmed = s.trim();
    if trimmed == "0"
        || ["inf", "none"]
            .iter()
            .any(|w| w.eq_ignore_ascii_case(trimmed))
    {
        return Ok(Throughput::default());
    }
    let mut out = Throughput::default();
    let (mut seen_iops, mut seen_bytes) = (false, false);
    let mut parts = 0;
    for part in trimmed.split(',') {
        parts += 1;
        if parts > 2 {
            return Err(invalid());
        }
        let (num, rest) = Decimal::split(part.trim()).ok_or_else(invalid)?;
        let unit = rest.trim();
        let (mult, is_iops) = if unit.eq_ignore_ascii_case("iops") {
            (1, true)
        } else {
            let &(_, m) = BYTE_RATE_UNITS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(unit))
                .ok_or_else(invalid)?;
            (m, false)
        };
        let value = match num.scale(u128::from(mult)) {
            Scaled::Whole(v) => v,
            Scaled::NotWhole if is_iops => return Err(invalid()),
            Scaled::NotWhole => {
                return Err(UnitError::ThroughputNotWholeMbps {
                    input: s.to_owned(),
                })
            }
            Scaled::Overflow => {
                return Err(UnitError::ThroughputOverflow {
                    input: s.to_owned(),
                })
            }
        };
        let overflow = || UnitError::ThroughputOverflow {
            input: s.to_owned(),
        };
        if is_iops {
            if std::mem::replace(&mut seen_iops, true) {
                return Err(invalid());
            }
            out.iops = u64::try_from(value).map_err(|_| overflow())?;
        } else {
            if std::mem::replace(&mut seen_bytes, true) {
                return Err(invalid());
            }
            if value % u128::from(MIB) != 0 {
                return Err(UnitError::ThroughputNotWholeMbps {
                    input: s.to_owned(),
                });
            }
            out.mbps = u64::try_from(value / u128::from(MIB)).map_err(|_| overflow())?;
        }
    }
    Ok(out)
}

impl FromStr for Throughput {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_throughput(s)
    }
}

impl fmt::Display for Throughput {
    /// Renders `500iops,100MB/s`, `500iops`, `100MB/s`, or `0` when nothing is set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.iops, self.mbps) {
            (0, 0) => f.write_str("0"),
            (i, 0) => write!(f, "{i}iops"),
            (0, m) => write!(f, "{m}MB/s"),
            (i, m) => write!(f, "{i}iops,{m}MB/s"),
        }
    }
}

/// An IOPS-per-capacity density, expressed per decimal terabyte (10^12 bytes).
///
/// `50IOPS/GB` is `IopsPerTb(50_000.0)`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct IopsPerTb(pub f64);

/// Parses `2048IOPS/TB`, `5IOPS/GB` (case-insensitive, optional space before the unit),
/// or a plain non-negative decimal number meaning IOPS per TB. TB and GB are decimal.
pub fn parse_iops_per_capacity(s: &str) -> Result<IopsPerTb, UnitError> {
    let invalid = || UnitError::InvalidIopsPerCapacity {
        input: s.to_owned(),
    };
    let (num, rest) = Decimal::split(s.trim()).ok_or_else(invalid)?;
    let unit = rest.trim_start();
    let shift = if unit.is_empty() || unit.eq_ignore_ascii_case("iops/tb") {
        0
    } else if unit.eq_ignore_ascii_case("iops/gb") {
        3
    } else {
        return Err(invalid());
    };
    match num.to_f64_shifted(shift) {
        Some(v) if v.is_finite() => Ok(IopsPerTb(v)),
        _ => Err(invalid()),
    }
}

impl FromStr for IopsPerTb {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_iops_per_capacity(s)
    }
}

impl fmt::Display for IopsPerTb {
    /// Renders the ONTAP form `2048IOPS/TB`; parses back to the identical value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}IOPS/TB", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        for (s, want) in [
            ("90", 90),
            ("60s", 60),
            ("30min", 1_800),
            ("30 MIN", 1_800),
            ("1.5h", 5_400),
            ("2d", 172_800),
            ("0", 0),
        ] {
            assert_eq!(parse_seconds(s), Ok(want), "{s}");
        }
        for bad in [
            "",
            "s",
            "1.5",
            "1.001min",
            "-1",
            "3 weeks",
            "1e3",
            "99999999999999999999d",
        ] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_accepted() {
        let cases: &[(&str, u64)] = &[
            ("0", 0),
            ("4096", 4096),
            ("  4096  ", 4096),
            ("1B", 1),
            ("1KB", 1_000),
            ("1kb", 1_000),
            ("100GB", 100_000_000_000),
            ("100gb", 100_000_000_000),
            ("100 GB", 100_000_000_000),
            ("1TB", 1_000_000_000_000),
            ("1KiB", 1024),
            ("1kib", 1024),
            ("1gib", 1 << 30),
            ("1.5GiB", 3 << 29),
            ("1.50 GiB", 3 << 29),
            ("2.5KB", 2_500),
            ("16TiB", 16 << 40),
            ("18446744073709551615", u64::MAX),
            (
                "16777215.999999999068677425384521484375TiB",
                u64::MAX - 1023,
            ),
        ];
        for &(input, want) in cases {
            assert_eq!(parse_size(input), Ok(want), "input {input:?}");
        }
    }

    #[test]
    fn sizes_rejected() {
        let invalid = [
            "", " ", "-1", "-1GB", "+1", "10XB", "1.5", "1.0001KB", "1.", ".5GB", "GB", "1e3",
            "inf", "NaN", "1 G B", "1GB2", "0x10",
        ];
        for input in invalid {
            assert_eq!(
                parse_size(input),
                Err(UnitError::InvalidSize {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        for input in [
            "18446744073709551616",
            "16777216TiB",
            "99999999999999999999999999999999999999999TB",
        ] {
            assert_eq!(
                parse_size(input),
                Err(UnitError::SizeOverflow {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn size_error_message_names_input_and_forms() {
        let msg = parse_size("10XB").unwrap_err().to_string();
        assert_eq!(
            msg,
            "invalid size \"10XB\": expected a whole number of bytes, optionally followed by a unit: \
             B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)"
        );
    }

    #[test]
    fn format_size_round_trips() {
        let cases: &[(u64, &str)] = &[
            (0, "0B"),
            (1, "1B"),
            (1000, "1KB"),
            (1024, "1KiB"),
            (1536, "1536B"),
            (1 << 30, "1GiB"),
            (3 << 29, "1536MiB"),
            (100_000_000_000, "100GB"),
            (1_000_000_000_000, "1TB"),
            (4_096_000, "4000KiB"),
            (u64::MAX, "18446744073709551615B"),
        ];
        for &(bytes, want) in cases {
            assert_eq!(format_size(bytes), want);
            assert_eq!(parse_size(want), Ok(bytes));
        }
    }

    #[test]
    fn throughput_accepted() {
        let t = |iops, mbps| Throughput { iops, mbps };
        let cases: &[(&str, Throughput)] = &[
            ("0", t(0, 0)),
            ("inf", t(0, 0)),
            ("INF", t(0, 0)),
            ("none", t(0, 0)),
            ("500iops", t(500, 0)),
            ("500IOPS", t(500, 0)),
            ("500 iops", t(500, 0)),
            ("100MB/s", t(0, 100)),
            ("100mb/s", t(0, 100)),
            ("100MBps", t(0, 100)),
            ("100MiB/s", t(0, 100)),
            ("1GB/s", t(0, 1024)),
            ("1.5GB/s", t(0, 1536)),
            ("2048KB/s", t(0, 2)),
            ("1048576B/s", t(0, 1)),
            ("1TB/s", t(0, 1 << 20)),
            ("500iops,100MB/s", t(500, 100)),
            ("100MB/s,500iops", t(500, 100)),
            (" 500iops , 100MB/s ", t(500, 100)),
            ("0iops", t(0, 0)),
        ];
        for &(input, want) in cases {
            assert_eq!(parse_throughput(input), Ok(want), "input {input:?}");
            assert_eq!(parse_throughput(&want.to_string()), Ok(want));
        }
    }

    #[test]
    fn throughput_rejected() {
        for input in [
            "",
            "500iop",
            "500",
            "iops",
            "-5iops",
            "1.5iops",
            "500iops,600iops",
            "1MB/s,2MB/s",
            "500iops,100MB/s,1iops",
            "100MB",
            "100Mbit/s",
            "0,100MB/s",
            "500iops,",
        ] {
            assert_eq!(
                parse_throughput(input),
                Err(UnitError::InvalidThroughput {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        for input in ["512KB/s", "1.0000001MB/s", "100B/s"] {
            assert_eq!(
                parse_throughput(input),
                Err(UnitError::ThroughputNotWholeMbps {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        assert!(matches!(
            parse_throughput("18446744073709551616iops"),
            Err(UnitError::ThroughputOverflow { .. })
        ));
        assert!(matches!(
            parse_throughput("18446744073709551615TB/s"),
            Err(UnitError::ThroughputOverflow { .. })
        ));
        assert_eq!(
            parse_throughput("500iop").unwrap_err().to_string(),
            "invalid throughput \"500iop\": expected <N>iops, <N>MB/s (also KB/s, GB/s; 1 MB = 2^20 bytes) \
             or both separated by a comma, e.g. 500iops,100MB/s"
        );
    }

    #[test]
    fn iops_per_capacity() {
        let cases: &[(&str, f64)] = &[
            ("2048IOPS/TB", 2048.0),
            ("2048iops/tb", 2048.0),
            ("2048 IOPS/TB", 2048.0),
            ("2048", 2048.0),
            ("5IOPS/GB", 5000.0),
            ("50iops/gb", 50_000.0),
            ("0.1IOPS/GB", 100.0),
            ("0.0005IOPS/GB", 0.5),
            ("1.25", 1.25),
            ("0", 0.0),
        ];
        for &(input, want) in cases {
            assert_eq!(
                parse_iops_per_capacity(input),
                Ok(IopsPerTb(want)),
                "input {input:?}"
            );
        }
        for input in [
            "",
            "-5IOPS/GB",
            "5IOPS/PB",
            "5IOPS",
            "inf",
            "NaN",
            "1e3",
            "5 IOPS / GB",
        ] {
            assert_eq!(
                parse_iops_per_capacity(input),
                Err(UnitError::InvalidIopsPerCapacity {
                    input: input.to_owned()
                }),
                "input {input:?}"
            );
        }
        let huge = format!("{}IOPS/TB", "9".repeat(400));
        assert!(parse_iops_per_capacity(&huge).is_err());
    }

    #[test]
    fn iops_per_capacity_display_round_trips() {
        for v in [
            0.0,
            0.5,
            128.0,
            2048.0,
            6144.0,
            50_000.0,
            1e-7,
            1e21,
            0.1 + 0.2,
        ] {
            let shown = IopsPerTb(v).to_string();
            assert_eq!(parse_iops_per_capacity(&shown), Ok(IopsPerTb(v)), "{shown}");
        }
        assert_eq!(IopsPerTb(2048.0).to_string(), "2048IOPS/TB");
    }
}
