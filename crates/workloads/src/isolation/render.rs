//! The terminal side: the side-by-side table (with floors, and the control without).

use super::results::Row;
use super::spec::{Mode, Protocol};

/// The side-by-side table: per step, the protected volumes' worst IOPS and p99 with and
/// without floors, and the bully's IOPS; its title says the protocol measured.
pub fn render(rows: &[Row], protocol: Protocol) -> String {
    let mut steps: Vec<(u32, f64)> = rows.iter().map(|r| (r.step, r.bully_load)).collect();
    steps.sort_by_key(|s| s.0);
    steps.dedup_by_key(|s| s.0);
    let has_control = rows.iter().any(|r| r.mode == Mode::Control);
    let pick = |mode: Mode, step: u32| {
        rows.iter()
            .filter(move |r| r.mode == mode && r.step == step)
    };
    let mut out = String::new();
    let target = rows
        .iter()
        .find(|r| r.protected)
        .map_or(0, |r| r.target_iops);
    let units = match protocol {
        Protocol::Nbd => "volumes",
        Protocol::Iscsi => "LUNs",
    };
    out.push_str(&format!(
        "Protected {units} over {} (target {target} IOPS each): worst of them per step\n",
        protocol.shown()
    ));
    let head = if has_control {
        format!(
            "{:<5} {:>12} | {:>10} {:>9} {:>10} {:>10} | {:>10} {:>9} {:>10} {:>10}\n{:<5} {:>12} | {:^43} | {:^43}\n",
            "Step", "Bully load", "IOPS", "p99 ms", "bully q ms", "bully IOPS", "IOPS", "p99 ms", "bully q ms", "bully IOPS",
            "", "", "with floors (mClock)", "control: no floors (FIFO)"
        )
    } else {
        format!(
            "{:<5} {:>12} | {:>10} {:>9} {:>10} {:>10}\n",
            "Step", "Bully load", "IOPS", "p99 ms", "bully q ms", "bully IOPS"
        )
    };
    for l in head.lines() {
        out.push_str(l.trim_end());
        out.push('\n');
    }
    let cell = |mode: Mode, step: u32| -> String {
        let prot: Vec<&Row> = pick(mode, step).filter(|r| r.protected).collect();
        let bully = pick(mode, step).find(|r| !r.protected);
        if prot.is_empty() {
            return format!("{:>10} {:>9} {:>10} {:>10}", "-", "-", "-", "-");
        }
        let worst_iops = prot.iter().map(|r| r.iops).fold(f64::INFINITY, f64::min);
        let worst_p99 = prot.iter().map(|r| r.lat_p99_ms).fold(0.0, f64::max);
        let bully_wait = bully.map_or(0.0, |b| b.floor_wait_ms);
        let ok = prot.iter().all(|r| r.pass);
        format!(
            "{:>10} {:>9.2} {:>10.2} {:>10.0}",
            format!("{:.0}{}", worst_iops, if ok { "" } else { " !" }),
            worst_p99,
            bully_wait,
            bully.map_or(0.0, |b| b.iops)
        )
    };
    for (step, load) in steps {
        let offered = pick(Mode::Floors, step)
            .chain(pick(Mode::Control, step))
            .find(|r| !r.protected)
            .map_or(0, |r| r.target_iops);
        let mut line = format!(
            "{:<5} {:>12} | {}",
            step,
            format!("{load:.2}x {offered}"),
            cell(Mode::Floors, step)
        );
        if has_control {
            line.push_str(&format!(" | {}", cell(Mode::Control, step)));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for mode in [Mode::Floors, Mode::Control] {
        let lat: Vec<f64> = rows
            .iter()
            .filter(|r| r.mode == mode && r.protected)
            .map(|r| r.node_lat_ms * 1000.0)
            .collect();
        if let (Some(lo), Some(hi)) = (
            lat.iter().copied().reduce(f64::min),
            lat.iter().copied().reduce(f64::max),
        ) {
            out.push_str(&format!(
                "Protected {units}' mean latency at the node, {}: {lo:.0}-{hi:.0} us per step\n",
                match mode {
                    Mode::Floors => "with floors",
                    Mode::Control => "control",
                }
            ));
        }
    }
    out.push_str(
        "IOPS: the worst protected volume (\"!\": below 98% of target or p99 over 2x its first step);\n\
         p99: fio's, as the client saw it (the load generator's share of the CPU included).\n\
         bully q ms: the bully's mean time per request queued for the node (behind others' floors,\n\
         or behind everyone in FIFO); every volume's ceiling and floor waits are in the stored table.\n",
    );
    out
}
