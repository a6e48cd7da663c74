//! Durations in plans and on the command line: "500ms", "3s", "2m", or seconds.

/// A duration: "500ms", "3s", "2m", or an integer/float number of seconds.
pub fn parse_duration(v: &toml::Value) -> Result<f64, String> {
    let secs = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => parse_duration_str(s)?,
        _ => return Err("expected a duration like \"3s\", \"500ms\", \"2m\" or seconds".into()),
    };
    if !(secs.is_finite() && (0.0..=86400.0).contains(&secs)) {
        return Err(format!("{secs} s is out of range 0 .. 86400 s"));
    }
    Ok(secs)
}

/// A duration string: "500ms", "3s", "2m", "15" (seconds).
pub fn parse_duration_str(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (n, mul) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    n.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x * mul)
        .ok_or_else(|| {
            format!("invalid duration {s:?}: expected e.g. \"3s\", \"500ms\", \"2m\" or seconds")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fio::jobfile::fio_time;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_str("500ms").unwrap(), 0.5);
        assert_eq!(parse_duration_str("2m").unwrap(), 120.0);
        assert_eq!(parse_duration_str("15").unwrap(), 15.0);
        assert!(parse_duration_str("-1s").is_err());
        assert_eq!(fio_time(3.0), "3s");
        assert_eq!(fio_time(0.5), "500ms");
    }
}
