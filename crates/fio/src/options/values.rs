//! The values of the options a plan may set, parsed strictly: fio's own parser reads a
//! prefix and ignores the rest (`4kk` is 4 KiB to fio, `1e3` is 1), and reads IEC prefixes
//! as powers of ten (`4KiB` is 4,000 bytes under its default `kb_base=1024`), so a value is
//! accepted here only when fio reads it the way a person does.

/// What an option's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// 0 or 1 (a TOML boolean becomes one).
    Bool,
    /// A whole number in `min..=max`.
    Int(u64, u64),
    /// A percentage, 0 to 100.
    Percent,
    /// Bytes: a number with an optional k, m, g, t or p (powers of 1024, fio's default).
    Size,
    /// A size or a percentage of the file (`50%`).
    SizeOrPercent,
    /// Up to three sizes for read, write and trim, comma-separated (`4k`, `4k,64k`, `,8k`).
    SizeList,
    /// Up to three ranges `LOW-HIGH` or `LOW:HIGH` of sizes, comma-separated.
    SizeRanges,
    /// fio's bssplit: `SIZE/PERCENT` pairs joined by `:`, up to three groups by `,`.
    SizeSplit,
    /// Bytes per second (a size), up to three comma-separated.
    RateList,
    /// Whole numbers (IOPS), up to three comma-separated.
    IntList,
    /// A duration: a number with an optional d, h, m, s, ms, msec, us or usec.
    Time,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// fio's `rw`: a mode, optionally `:N` (a new offset every N I/Os).
    RwMode,
    /// fio's `random_distribution`.
    Distribution,
    /// A verify or buffer pattern: `0x` and hex digits, or a whole number.
    Pattern,
    /// CPUs: numbers and ranges, comma-separated (`0-3,6`).
    CpuList,
    /// A decimal number in `0..=100` (a latency percentile).
    PercentFloat,
}

/// The rw modes fio knows.
pub const RW_MODES: &[&str] = &[
    "read",
    "write",
    "trim",
    "randread",
    "randwrite",
    "randtrim",
    "rw",
    "readwrite",
    "randrw",
    "trimwrite",
    "randtrimwrite",
];

impl Value {
    /// What a value must look like, for messages.
    pub fn expected(self) -> String {
        match self {
            Value::Bool => "0 or 1 (or true/false)".into(),
            Value::Int(min, max) => format!("a whole number from {min} to {max}"),
            Value::Percent => "a whole percentage from 0 to 100".into(),
            Value::Size => {
                "a size: a whole number with an optional k, m, g, t or p (powers of 1024: 4k, 64M, 2G)"
                    .into()
            }
            Value::SizeOrPercent => "a size (4k, 64M, 2G) or a percentage of the file (50%)".into(),
            Value::SizeList => "a size (4k), or sizes for read,write[,trim] (4k,64k)".into(),
            Value::SizeRanges => "a size range LOW-HIGH (4k-64k), or ranges for read,write".into(),
            Value::SizeSplit => "SIZE/PERCENT pairs joined by ':' (4k/60:64k/40)".into(),
            Value::RateList => {
                "bytes per second as a size (10M), or rates for read,write[,trim] (10M,5M)".into()
            }
            Value::IntList => {
                "a whole number, or numbers for read,write[,trim] (500,200)".into()
            }
            Value::Time => "a duration: a number with an optional unit d, h, m, s, ms or us (500ms, 2s)".into(),
            Value::OneOf(words) => format!("one of {}", words.join(", ")),
            Value::RwMode => format!("one of {}, optionally :N", RW_MODES.join(", ")),
            Value::Distribution => {
                "random, zipf:THETA, pareto:H, normal:DEV[:CENTER], zoned:PCT/PCT:... or zoned_abs:PCT/SIZE:..."
                    .into()
            }
            Value::Pattern => "0x and hex digits (0xdeadbeef), or a whole number".into(),
            Value::CpuList => "CPU numbers and ranges, comma-separated (0-3,6)".into(),
            Value::PercentFloat => "a number from 0 to 100 (99.9)".into(),
        }
    }

    /// Whether `v` (the value as fio will read it) is one of these.
    pub fn check(self, v: &str) -> Result<(), String> {
        let ok = match self {
            Value::Bool => matches!(v, "0" | "1"),
            Value::Int(min, max) => int(v).is_some_and(|n| (min..=max).contains(&n)),
            Value::Percent => percent(v),
            Value::Size => size(v).map(|_| true)?,
            Value::SizeOrPercent => pct_suffix(v).is_some_and(percent) || size(v).map(|_| true)?,
            Value::SizeList => list(v, |s| size(s).map(|_| true))?,
            Value::SizeRanges => list(v, |s| {
                let (a, b) = s.split_once(['-', ':']).unwrap_or((s, ""));
                Ok(size(a).is_ok() && size(b).is_ok() && !b.is_empty())
            })?,
            Value::SizeSplit => list(v, |group| {
                let mut total = 0u64;
                for pair in group.split(':') {
                    let (s, p) = pair.split_once('/').unwrap_or((pair, ""));
                    size(s)?;
                    if !p.is_empty() {
                        if !percent(p) {
                            return Ok(false);
                        }
                        total += int(p).unwrap_or(0);
                    }
                }
                Ok(total <= 100)
            })?,
            Value::RateList => list(v, |s| size(s).map(|_| true))?,
            Value::IntList => list(v, |s| Ok(int(s).is_some()))?,
            Value::Time => time(v),
            Value::OneOf(words) => words.contains(&v),
            Value::RwMode => {
                let (mode, n) = v.split_once(':').unwrap_or((v, "1"));
                RW_MODES.contains(&mode) && int(n).is_some_and(|n| n >= 1)
            }
            Value::Distribution => distribution(v),
            Value::Pattern => {
                v.strip_prefix("0x").is_some_and(|h| {
                    !h.is_empty() && h.len() <= 1024 && h.chars().all(|c| c.is_ascii_hexdigit())
                }) || int(v).is_some()
            }
            Value::CpuList => v.split(',').all(|r| {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                int(a).is_some() && int(b).is_some()
            }),
            Value::PercentFloat => float(v).is_some_and(|f| (0.0..=100.0).contains(&f)),
        };
        if ok {
            Ok(())
        } else {
            Err(self.expected())
        }
    }
}

/// A whole decimal number (no sign, no exponent, no prefix).
fn int(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn float(s: &str) -> Option<f64> {
    let (a, b) = s.split_once('.').unwrap_or((s, "0"));
    (int(a).is_some() && int(b).is_some()).then(|| s.parse().ok())?
}

fn percent(s: &str) -> bool {
    int(s).is_some_and(|p| p <= 100)
}

fn pct_suffix(s: &str) -> Option<&str> {
    s.strip_suffix('%')
}

/// A comma-separated list of one to three items for read, write and trim (an empty item
/// leaves that direction alone, but not every item may be empty).
fn list(v: &str, item: impl Fn(&str) -> Result<bool, String>) -> Result<bool, String> {
    let items: Vec<&str> = v.split(',').collect();
    if items.len() > 3 || items.iter().all(|s| s.is_empty()) {
        return Ok(false);
    }
    for s in items.iter().filter(|s| !s.is_empty()) {
        if !item(s)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Bytes of a size as fio reads it under `kb_base=1024`: digits, then nothing, `b`, or
/// k/m/g/t/p with an optional `b` (any case). IEC spellings are refused with why (fio
/// reads `4KiB` as 4,000 bytes), as is anything after the unit (fio ignores it).
pub fn size(s: &str) -> Result<u64, String> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = s.split_at(digits);
    let n = int(num).ok_or_else(|| Value::Size.expected())?;
    let unit = unit.to_ascii_lowercase();
    let pow = match unit.as_str() {
        "" | "b" => 0,
        "k" | "kb" => 1,
        "m" | "mb" => 2,
        "g" | "gb" => 3,
        "t" | "tb" => 4,
        "p" | "pb" => 5,
        u if u.len() >= 2 && u.as_bytes()[1] == b'i' && "kmgtp".contains(&u[..1]) => {
            return Err(format!(
                "{s:?}: fio reads IEC prefixes as powers of 1000 (its kb_base=1024 swaps them: \
                 4KiB is 4,000 bytes); write {n}{} for {n} x 1024^{}",
                &u[..1],
                "kmgtp".find(&u[..1]).map_or(1, |i| i + 1)
            ))
        }
        _ => return Err(Value::Size.expected()),
    };
    n.checked_mul(1024u64.pow(pow))
        .ok_or_else(|| format!("{s:?} is more bytes than fio can count"))
}

/// fio's time syntax: digits and an optional unit (any case).
fn time(s: &str) -> bool {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = s.split_at(digits);
    int(num).is_some()
        && matches!(
            unit.to_ascii_lowercase().as_str(),
            "" | "d" | "h" | "m" | "s" | "ms" | "msec" | "us" | "usec"
        )
}

/// `random`, `zipf:F`, `pareto:F`, `normal:F[:F]`, `zoned:P/P[/P]:...`,
/// `zoned_abs:P/SIZE[/P]:...` (zones may be grouped by `,` for read, write, trim).
fn distribution(v: &str) -> bool {
    if v == "random" {
        return true;
    }
    let Some((kind, rest)) = v.split_once(':') else {
        return false;
    };
    match kind {
        "zipf" | "pareto" => float(rest).is_some(),
        "normal" => {
            let (a, b) = rest.split_once(':').unwrap_or((rest, "0"));
            float(a).is_some() && float(b).is_some()
        }
        "zoned" | "zoned_abs" => list(rest, |group| {
            Ok(group.split(':').all(|zone| {
                let parts: Vec<&str> = zone.split('/').collect();
                let second = |s: &str| {
                    if kind == "zoned" {
                        percent(s)
                    } else {
                        size(s).is_ok()
                    }
                };
                matches!(parts.len(), 2 | 3)
                    && percent(parts[0])
                    && second(parts[1])
                    && parts.get(2).is_none_or(|p| percent(p))
            }))
        })
        .unwrap_or(false),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_as_fio_reads_them_or_refused() {
        assert_eq!(size("4k"), Ok(4096));
        assert_eq!(size("4K"), Ok(4096));
        assert_eq!(size("4kb"), Ok(4096));
        assert_eq!(size("64M"), Ok(64 << 20));
        assert_eq!(size("2G"), Ok(2 << 30));
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("4096b"), Ok(4096));
        // fio takes these (a prefix and the rest ignored, or IEC as powers of 10).
        for bad in [
            "4kk", "4 k", "4.5k", "-4k", "0x10", "1e3", "", "k", "4k8", "${X}", "$ncpus",
        ] {
            assert!(size(bad).is_err(), "{bad}");
        }
        let e = size("4KiB").unwrap_err();
        assert!(e.contains("4,000 bytes") && e.contains("write 4k"), "{e}");
        assert!(size("99999999999999999999").is_err());
        assert!(size("99999999999p").is_err());
    }

    #[test]
    fn every_kind_takes_what_fio_means_and_nothing_else() {
        let ok = |k: Value, v: &str| k.check(v).is_ok();
        assert!(ok(Value::Bool, "1") && !ok(Value::Bool, "yes"));
        assert!(ok(Value::Int(1, 64), "64") && !ok(Value::Int(1, 64), "65"));
        assert!(!ok(Value::Int(1, 64), "0x10"));
        assert!(ok(Value::SizeOrPercent, "50%") && !ok(Value::SizeOrPercent, "150%"));
        assert!(ok(Value::SizeList, "4k,64k") && ok(Value::SizeList, ",8k"));
        assert!(!ok(Value::SizeList, "4k,64k,1m,2m") && !ok(Value::SizeList, ","));
        assert!(ok(Value::SizeRanges, "4k-64k") && ok(Value::SizeRanges, "1k:4k,8k-32k"));
        assert!(!ok(Value::SizeRanges, "4k"));
        assert!(ok(Value::SizeSplit, "4k/60:64k/40") && ok(Value::SizeSplit, "4k/:8k/"));
        assert!(!ok(Value::SizeSplit, "4k/60:64k/50") && !ok(Value::SizeSplit, "4kk/10"));
        assert!(ok(Value::RwMode, "randread") && ok(Value::RwMode, "randread:8"));
        assert!(!ok(Value::RwMode, "randred") && !ok(Value::RwMode, "read:0"));
        assert!(ok(Value::Time, "500ms") && ok(Value::Time, "2S") && ok(Value::Time, "10"));
        assert!(!ok(Value::Time, "2 s") && !ok(Value::Time, "2sx"));
        for d in [
            "random",
            "zipf:1.2",
            "normal:5",
            "normal:5:50",
            "zoned:60/10:40/90",
            "zoned_abs:60/1G:40/3G",
        ] {
            assert!(ok(Value::Distribution, d), "{d}");
        }
        assert!(!ok(Value::Distribution, "zipf:x") && !ok(Value::Distribution, "zoned:60"));
        assert!(ok(Value::Pattern, "0xdeadbeef") && ok(Value::Pattern, "255"));
        assert!(!ok(Value::Pattern, "'abc'") && !ok(Value::Pattern, "0x"));
        assert!(ok(Value::CpuList, "0-3,6") && !ok(Value::CpuList, "0-"));
        assert!(ok(Value::PercentFloat, "99.9") && !ok(Value::PercentFloat, "101"));
        assert!(ok(Value::OneOf(&["linear"]), "linear") && !ok(Value::OneOf(&["linear"]), "x"));
        assert!(ok(Value::IntList, "500,200") && !ok(Value::IntList, "5k"));
    }
}
