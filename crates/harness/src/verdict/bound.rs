//! The grammar after a metric, shared by every family: a bound (`op rhs [* f | / f]
//! [+-N%]`), a value with its unit, and the verdict's wording ([`judge`], [`shown`]).

use super::{err, ExpectError, Kind, Op, Verdict};

/// The right-hand side of an expectation, after its metric: `op rhs [* f | / f] [+-N%]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub op: Op,
    pub operand: BoundOperand,
    /// Multiplier applied to the operand (`/ 2` is stored as 0.5).
    pub factor: f64,
    /// Fraction, e.g. 0.03 for `+-3%`.
    pub tolerance: f64,
}

/// A bound's operand: a number (in the metric's base unit) or a name its family resolves.
#[derive(Debug, Clone, PartialEq)]
pub enum BoundOperand {
    Number(f64),
    Name(String),
}

/// Parse `rest` (what follows the metric in `text`) as `op rhs [* f | / f] [+-N%]`. `is_name`
/// says which names the family resolves as operands; `names_hint` ends the message for an
/// operand that is neither a number nor a name (`", policy.ceiling or policy.floor"`).
pub fn parse_bound(
    text: &str,
    rest: &str,
    kind: Kind,
    is_name: &dyn Fn(&str) -> bool,
    names_hint: &str,
) -> Result<Bound, ExpectError> {
    let rest = rest.trim_start();
    let (op, rest) = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("~=", Op::Approx),
        ("<", Op::Lt),
        (">", Op::Gt),
    ]
    .iter()
    .find_map(|(t, op)| rest.strip_prefix(t).map(|r| (*op, r)))
    .ok_or_else(|| {
        err(
            text,
            "expected an operator after the metric: <=, <, >=, >, ~=",
        )
    })?;
    // Tolerance.
    let (rhs, tolerance) = match rest.find("+-") {
        Some(i) => {
            let t = rest[i + 2..].trim();
            let pct = t
                .strip_suffix('%')
                .and_then(|n| n.trim().parse::<f64>().ok())
                .filter(|p| p.is_finite() && *p >= 0.0 && *p < 100.0)
                .ok_or_else(|| {
                    err(
                        text,
                        format!("tolerance {t:?}: expected a percentage like 3%"),
                    )
                })?;
            (&rest[..i], pct / 100.0)
        }
        None => (rest, 0.0),
    };
    if op == Op::Approx && tolerance == 0.0 {
        return Err(err(
            text,
            "~= needs a tolerance, e.g. `bw ~= 100MiB/s +-3%`",
        ));
    }
    let rhs = rhs.trim();
    // `/` also appears in units (MiB/s): a division is a `/` not right after `B`.
    let op_at = rhs
        .char_indices()
        .find(|&(i, c)| c == '*' || (c == '/' && !rhs[..i].ends_with('B')))
        .map(|(i, _)| i);
    let (operand_txt, factor) = match op_at {
        Some(i) => {
            let n: f64 = rhs[i + 1..]
                .trim()
                .parse()
                .map_err(|_| err(text, format!("{:?} is not a number", rhs[i + 1..].trim())))?;
            if !n.is_finite() || n <= 0.0 {
                return Err(err(text, "the factor must be a positive number"));
            }
            let f = if rhs.as_bytes()[i] == b'*' {
                n
            } else {
                1.0 / n
            };
            (rhs[..i].trim(), f)
        }
        None => (rhs, 1.0),
    };
    let operand = if is_name(operand_txt) {
        BoundOperand::Name(operand_txt.to_string())
    } else {
        BoundOperand::Number(parse_value(operand_txt, kind, names_hint).map_err(|m| err(text, m))?)
    };
    Ok(Bound {
        op,
        operand,
        factor,
        tolerance,
    })
}

/// The verdict on `measured` against `target` (the operand times its factor) under `op`
/// and `tolerance`; `name` is the metric as written, `derived` whether the target came
/// from a name or a factor (the detail then says what it was computed from).
pub fn judge(
    text: &str,
    name: &str,
    measured: f64,
    op: Op,
    target: f64,
    tolerance: f64,
    derived: bool,
) -> Verdict {
    let t = tolerance;
    // Bandwidth metrics (bw, bw_mean, bw_burst, ...) are bytes per second: a person reads
    // them in MiB/s (or KiB/s), as fio prints them.
    let show = |v: f64| shown(name, v);
    let (passed, bound) = match op {
        Op::Le => (
            measured <= target * (1.0 + t),
            format!("<= {}", show(target * (1.0 + t))),
        ),
        Op::Lt => (
            measured < target * (1.0 + t),
            format!("< {}", show(target * (1.0 + t))),
        ),
        Op::Ge => (
            measured >= target * (1.0 - t),
            format!(">= {}", show(target * (1.0 - t))),
        ),
        Op::Gt => (
            measured > target * (1.0 - t),
            format!("> {}", show(target * (1.0 - t))),
        ),
        Op::Approx => (
            (measured - target).abs() <= target * t,
            format!("{}..{}", show(target * (1.0 - t)), show(target * (1.0 + t))),
        ),
    };
    let detail = format!(
        "{name} = {}, want {bound}{}",
        show(measured),
        if t > 0.0 || derived {
            format!(" (from {})", show(target))
        } else {
            String::new()
        }
    );
    Verdict::plain(text.to_string(), measured, bound, passed, detail)
}

/// A measured value of the metric `name` as verdicts word it: a bandwidth (`bw…`) in
/// MiB/s, KiB/s or B/s, anything else as a plain number.
pub fn shown(name: &str, v: f64) -> String {
    if name.starts_with("bw") {
        rate(v)
    } else {
        num(v)
    }
}

/// Bytes per second for messages: 4 significant digits in IEC units (fio::fmt).
pub(super) fn rate(v: f64) -> String {
    fio::fmt::rate(v)
}

/// A number for messages: integers below 10,000 plainly, others to 4 significant digits
/// without trailing zeros (fio::fmt: 499.7, 3.42, 41.74k).
fn num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 && v.abs() < 10_000.0 {
        return format!("{}", v.round() as i64);
    }
    let s = fio::fmt::sig(v);
    let unit = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    let n = &s[..s.len() - unit.len()];
    let n = if n.contains('.') {
        n.trim_end_matches('0').trim_end_matches('.')
    } else {
        n
    };
    format!("{n}{unit}")
}

/// A number with a unit that fits `kind`, in the kind's base unit (IOPS, bytes/s, µs,
/// seconds); `names_hint` ends the message when `t` is not a number.
pub fn parse_value(t: &str, kind: Kind, names_hint: &str) -> Result<f64, String> {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: f64 = n
        .parse()
        .map_err(|_| format!("{t:?}: expected a number{names_hint}"))?;
    let unit = unit.trim();
    let mul = match (kind, unit) {
        (_, "") => 1.0,
        (Kind::Iops, "k") => 1e3,
        (Kind::Bw, "B/s") => 1.0,
        (Kind::Bw, "KB/s") => 1e3,
        (Kind::Bw, "MB/s") => 1e6,
        (Kind::Bw, "GB/s") => 1e9,
        (Kind::Bw, "KiB/s") => 1024.0,
        (Kind::Bw, "MiB/s") => 1048576.0,
        (Kind::Bw, "GiB/s") => 1073741824.0,
        (Kind::Lat, "ns") => 1e-3,
        (Kind::Lat, "us") => 1.0,
        (Kind::Lat, "ms") => 1e3,
        (Kind::Lat, "s") => 1e6,
        (Kind::Secs, "s") => 1.0,
        (Kind::Secs, "ms") => 1e-3,
        (k, u) => {
            let allowed = match k {
                Kind::Iops => "none or k",
                Kind::Bw => "B/s, KB/s, MB/s, GB/s (x1000), KiB/s, MiB/s, GiB/s (x1024)",
                Kind::Lat => "ns, us, ms, s",
                Kind::Secs => "none (seconds), s, ms",
                Kind::Number => "none (the metric's name gives its unit)",
            };
            return Err(format!(
                "unit {u:?} does not fit this metric; allowed: {allowed}"
            ));
        }
    };
    Ok(n * mul)
}
