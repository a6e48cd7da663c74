//! `qoslab policy` flags for burst credits (a `burst` object on fixed and adaptive
//! policies) and provisioned policies (a vendor's model per volume).

use anyhow::{anyhow, bail};
use clap::Args;
use qos_core::{parse_seconds, parse_size, parse_throughput, Model};
use serde_json::{json, Map, Value};

#[derive(Args, Default)]
pub struct BurstFlags {
    /// Burst ceiling above --max-throughput (or the adaptive peak): 3000iops, 250MB/s, or
    /// both. Credits accrue below the ceiling and are spent above it.
    #[arg(long, help_heading = "Burst credits (qoslab extension)")]
    burst_throughput: Option<String>,
    /// Bucket size in I/O credits, e.g. 5400000 (EBS gp2).
    #[arg(long, help_heading = "Burst credits (qoslab extension)")]
    burst_bucket_iops: Option<u64>,
    /// Bucket size in MB of credits (MB = 2^20 bytes) or a size: 1048576, 1TiB.
    #[arg(long, help_heading = "Burst credits (qoslab extension)")]
    burst_bucket_mb: Option<String>,
    /// Bucket as time at the full burst rate from full: 60s (SolidFire), 30min (Azure).
    #[arg(long, help_heading = "Burst credits (qoslab extension)")]
    burst_duration: Option<String>,
    /// Balance a volume starts with, percent of the bucket (default 100).
    #[arg(long, help_heading = "Burst credits (qoslab extension)")]
    burst_initial_percent: Option<u8>,
    /// Remove the policy's burst (modify).
    #[arg(long, help_heading = "Burst credits (qoslab extension)")]
    no_burst: bool,
    /// A provisioned policy: the vendor's model computes each volume's baseline, burst and
    /// bucket from its size: ebs-gp2, ebs-st1, ebs-sc1, azure-premium-ssd.
    #[arg(long, help_heading = "Provisioned policies (qoslab extension)")]
    model: Option<String>,
    /// Provisioned: multiply the model's buckets (0.1 or 1/10: bursts and refills 10x shorter).
    #[arg(long, help_heading = "Provisioned policies (qoslab extension)")]
    bucket_scale: Option<String>,
    /// Provisioned: balance a volume starts with, percent of its bucket (default 100).
    #[arg(long, help_heading = "Provisioned policies (qoslab extension)")]
    initial_percent: Option<u8>,
}

impl BurstFlags {
    /// The `burst` object (`Some(null)` for --no-burst), if any burst flag was given.
    pub fn burst_json(&self) -> anyhow::Result<Option<Value>> {
        if self.no_burst {
            if self.burst_throughput.is_some()
                || self.burst_bucket_iops.is_some()
                || self.burst_bucket_mb.is_some()
                || self.burst_duration.is_some()
                || self.burst_initial_percent.is_some()
            {
                bail!("--no-burst removes the burst: give it without other --burst-* flags");
            }
            return Ok(Some(Value::Null));
        }
        let mut b = Map::new();
        if let Some(s) = &self.burst_throughput {
            put_throughput(&mut b, "max_throughput", "burst-throughput", s)?;
        }
        if let Some(n) = self.burst_bucket_iops {
            b.insert("bucket_iops".into(), json!(n));
        }
        if let Some(s) = &self.burst_bucket_mb {
            let mb = match s.trim().parse::<u64>() {
                Ok(n) => n,
                Err(_) => parse_size(s)
                    .map_err(|e| anyhow!("--burst-bucket-mb: {e}"))?
                    .div_ceil(1 << 20),
            };
            b.insert("bucket_mb".into(), json!(mb));
        }
        if let Some(s) = &self.burst_duration {
            let secs = parse_seconds(s).map_err(|e| anyhow!("--burst-duration: {e}"))?;
            b.insert("duration".into(), json!(secs));
        }
        if let Some(p) = self.burst_initial_percent {
            b.insert("initial_percent".into(), json!(p));
        }
        Ok((!b.is_empty()).then_some(Value::Object(b)))
    }

    /// The `provisioned` object, if --model (or another provisioned flag) was given.
    pub fn provisioned_json(&self) -> anyhow::Result<Option<Value>> {
        let mut m = Map::new();
        if let Some(s) = &self.model {
            let model: Model = s.parse().map_err(|e| anyhow!("--model: {e}"))?;
            m.insert("model".into(), json!(model.name()));
        }
        if let Some(s) = &self.bucket_scale {
            let x = parse_fraction(s).ok_or_else(|| {
                anyhow!(
                    "--bucket-scale {s:?}: give a number such as 0.1 or a fraction such as 1/10"
                )
            })?;
            m.insert("bucket_scale".into(), json!(x));
        }
        if let Some(p) = self.initial_percent {
            m.insert("initial_percent".into(), json!(p));
        }
        Ok((!m.is_empty()).then_some(Value::Object(m)))
    }
}

fn parse_fraction(s: &str) -> Option<f64> {
    match s.split_once('/') {
        Some((a, b)) => {
            let (a, b): (f64, f64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (b != 0.0).then(|| a / b)
        }
        None => s.trim().parse().ok(),
    }
}

/// "burst 3000iops for 5400000 I/O credits" style text for `policy list/show`.
pub fn burst_text(b: &Value) -> String {
    let mut rates = Vec::new();
    if b["max_throughput_iops"].as_u64().unwrap_or(0) > 0 {
        rates.push(format!("{}iops", b["max_throughput_iops"]));
    }
    if b["max_throughput_mbps"].as_u64().unwrap_or(0) > 0 {
        rates.push(format!("{}MB/s", b["max_throughput_mbps"]));
    }
    let bucket = if let Some(d) = b["duration"].as_u64() {
        format!("{d}s at full burst")
    } else {
        let mut v = Vec::new();
        if b["bucket_iops"].as_u64().unwrap_or(0) > 0 {
            v.push(format!("{} I/O credits", b["bucket_iops"]));
        }
        if b["bucket_mb"].as_u64().unwrap_or(0) > 0 {
            v.push(format!("{} MB credits", b["bucket_mb"]));
        }
        v.join(" + ")
    };
    format!(
        " burst {} ({bucket}, starts {}%)",
        rates.join(","),
        b["initial_percent"]
    )
}

/// Text for a provisioned policy.
pub fn provisioned_text(p: &Value) -> String {
    format!(
        "model {} bucket x{} starts {}%",
        p["model"].as_str().unwrap_or("?"),
        p["bucket_scale"],
        p["initial_percent"]
    )
}

/// The value of `--FLAG` (a throughput: `500iops`, `100MB/s`, or both) into `m` as
/// `KEY_iops` and `KEY_mbps`.
pub fn put_throughput(
    m: &mut Map<String, Value>,
    key: &str,
    flag: &str,
    s: &str,
) -> anyhow::Result<()> {
    let t = parse_throughput(s).map_err(|e| anyhow!("--{flag}: {e}"))?;
    m.insert(format!("{key}_iops"), json!(t.iops));
    m.insert(format!("{key}_mbps"), json!(t.mbps));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_to_json() {
        let f = BurstFlags {
            burst_throughput: Some("3000iops".into()),
            burst_bucket_iops: Some(5_400_000),
            burst_bucket_mb: Some("1TiB".into()),
            ..BurstFlags::default()
        };
        assert_eq!(
            f.burst_json().unwrap().unwrap(),
            json!({"max_throughput_iops": 3000, "max_throughput_mbps": 0, "bucket_iops": 5400000, "bucket_mb": 1048576})
        );
        let f = BurstFlags {
            burst_duration: Some("1min".into()),
            ..BurstFlags::default()
        };
        assert_eq!(f.burst_json().unwrap().unwrap(), json!({"duration": 60}));
        let f = BurstFlags {
            no_burst: true,
            burst_duration: Some("1min".into()),
            ..BurstFlags::default()
        };
        assert!(f.burst_json().is_err());
        assert_eq!(BurstFlags::default().burst_json().unwrap(), None);
        let f = BurstFlags {
            model: Some("EBS-gp2".into()),
            bucket_scale: Some("1/10".into()),
            ..BurstFlags::default()
        };
        assert_eq!(
            f.provisioned_json().unwrap().unwrap(),
            json!({"model": "ebs-gp2", "bucket_scale": 0.1})
        );
        let bad = BurstFlags {
            model: Some("gp3".into()),
            ..BurstFlags::default()
        };
        assert!(bad
            .provisioned_json()
            .unwrap_err()
            .to_string()
            .contains("ebs-gp2"));
        let text = burst_text(
            &json!({"max_throughput_iops": 3000, "max_throughput_mbps": 0, "bucket_iops": 5400000, "bucket_mb": 0, "initial_percent": 100}),
        );
        assert_eq!(text, " burst 3000iops (5400000 I/O credits, starts 100%)");
    }
}
