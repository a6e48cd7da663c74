//! Field values of node.toml's policies and volumes: sizes, numbers that cannot be
//! negative, fixed and adaptive policies, weights. Each returns the message for
//! [`super::ConfigError`] (the caller adds file, line and table).

use super::*;

pub(super) fn volume_size(v: &NumOrStr) -> Result<u64, String> {
    let size = match v {
        NumOrStr::Int(i) if *i < 0 => {
            return Err(format!("size = {i}: a size cannot be negative"));
        }
        NumOrStr::Int(i) => *i as u64,
        NumOrStr::Float(f) => {
            return Err(format!(
                "size = {f}: give bytes as an integer or a string with a unit, e.g. \"100GB\""
            ))
        }
        NumOrStr::Str(s) => parse_size(s).map_err(|e| format!("size: {e}"))?,
    };
    if size == 0 || size > MAX_VOLUME_SIZE {
        return Err(format!(
            "size = {}: allowed range is 1 B to 1 PiB",
            v.as_text()
        ));
    }
    Ok(size)
}

fn non_negative(field: &str, v: Option<i64>) -> Result<u64, String> {
    match v {
        None => Ok(0),
        Some(i) if i < 0 => Err(format!(
            "{field} = {i}: must be 0 (not enforced) or positive"
        )),
        Some(i) => Ok(i as u64),
    }
}

pub(super) fn fixed(f: &RawFixed) -> Result<FixedPolicy, String> {
    let mut p = FixedPolicy {
        max_iops: non_negative("fixed.max_throughput_iops", f.max_throughput_iops)?,
        max_mbps: non_negative("fixed.max_throughput_mbps", f.max_throughput_mbps)?,
        min_iops: non_negative("fixed.min_throughput_iops", f.min_throughput_iops)?,
        min_mbps: non_negative("fixed.min_throughput_mbps", f.min_throughput_mbps)?,
        capacity_shared: f.capacity_shared.unwrap_or(false),
        weight: weight("fixed.weight", f.weight)?,
        burst: f
            .burst
            .as_ref()
            .map(|b| burst::burst("fixed", b))
            .transpose()?,
    };
    throughput(
        "fixed.max_throughput",
        &f.max_throughput,
        &mut p.max_iops,
        &mut p.max_mbps,
    )?;
    throughput(
        "fixed.min_throughput",
        &f.min_throughput,
        &mut p.min_iops,
        &mut p.min_mbps,
    )?;
    Ok(p)
}

fn per_capacity(field: &str, v: &NumOrStr) -> Result<qos_core::IopsPerTb, String> {
    match v {
        NumOrStr::Int(i) if *i < 0 => Err(format!("{field} = {i}: must not be negative")),
        other => parse_iops_per_capacity(&other.as_text()).map_err(|e| format!("{field}: {e}")),
    }
}

pub(super) fn adaptive(a: &RawAdaptive) -> Result<AdaptivePolicy, String> {
    let peak = a
        .peak_iops
        .as_ref()
        .ok_or("adaptive.peak_iops is required (e.g. peak_iops = \"50IOPS/GB\" or 4096 per TB)")?;
    let peak_iops = per_capacity("adaptive.peak_iops", peak)?;
    let expected_iops = match &a.expected_iops {
        Some(v) => per_capacity("adaptive.expected_iops", v)?,
        None => qos_core::IopsPerTb(0.0),
    };
    let alloc = |field: &str, v: &Option<String>, default: Allocation| match v {
        None => Ok(default),
        Some(s) => s.parse::<Allocation>().map_err(|e| format!("{field}: {e}")),
    };
    Ok(AdaptivePolicy {
        expected_iops,
        peak_iops,
        absolute_min_iops: non_negative("adaptive.absolute_min_iops", a.absolute_min_iops)?,
        expected_allocation: alloc(
            "adaptive.expected_iops_allocation",
            &a.expected_iops_allocation,
            Allocation::AllocatedSpace,
        )?,
        peak_allocation: alloc(
            "adaptive.peak_iops_allocation",
            &a.peak_iops_allocation,
            Allocation::UsedSpace,
        )?,
        block_size: match &a.block_size {
            None => BlockSize::default(),
            Some(s) => s
                .parse::<BlockSize>()
                .map_err(|e| format!("adaptive.block_size: {e}"))?,
        },
        weight: weight("adaptive.weight", a.weight)?,
        burst: a
            .burst
            .as_ref()
            .map(|b| burst::burst("adaptive", b))
            .transpose()?,
    })
}

pub(super) fn weight(field: &str, v: Option<i64>) -> Result<u32, String> {
    match v {
        None => Ok(0),
        Some(w) if (1..=i64::from(qos_core::MAX_WEIGHT)).contains(&w) => Ok(w as u32),
        Some(w) => Err(format!(
            "{field} = {w}: allowed range is 1 to {} (share of spare capacity after floors; default 1)",
            qos_core::MAX_WEIGHT
        )),
    }
}
