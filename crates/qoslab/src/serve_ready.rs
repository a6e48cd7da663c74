//! What `qoslab serve` prints once it is ready: the TLS identity, the listeners, each
//! volume's limits and the emulated array.

use std::net::SocketAddr;

use nbd_server::TlsMode;
use storage_node::Node;

/// The TLS identity's line at start.
pub(crate) fn print_tls(files: &control_plane::tls::TlsFiles, nbd_mode: TlsMode) {
    println!(
        "qoslab: tls: certificate {}{}; NBD TLS {}",
        files.cert.display(),
        match &files.ca {
            Some(ca) => format!(" (clients trust {})", ca.display()),
            None => String::new(),
        },
        match nbd_mode {
            TlsMode::Off => "off",
            TlsMode::On => "on (nbds:// or plain)",
            TlsMode::Require => "required (nbds:// only)",
        }
    );
}

pub(crate) fn print_ready(
    node: &Node,
    unix: Option<&std::path::Path>,
    tcp: Option<SocketAddr>,
    tls_only: bool,
) {
    use std::io::Write;
    let mut out = String::new();
    let mut where_ = Vec::new();
    let s = if tls_only { "s" } else { "" };
    if let Some(u) = unix {
        where_.push(format!("nbd{s}+unix:///NAME?socket={}", u.display()));
    }
    if let Some(t) = tcp {
        where_.push(format!("nbd{s}://{t}/NAME"));
    }
    let vols = node.volumes();
    out.push_str(&format!(
        "qoslab: ready: {} volume(s) at {}\n",
        vols.len(),
        where_.join(" and ")
    ));
    match node.scheduler.status() {
        Some(s) => {
            let c = s.capacity;
            out.push_str(&format!(
                "qoslab: emulated controller: {} IOPS, {} MiB/s, cost unit {} B, {}; floors {} IOPS{}\n",
                c.iops,
                c.mbps,
                c.cost_unit,
                c.discipline,
                s.reserved.iops,
                match s.overcommit {
                    Some(f) => format!(" OVERCOMMITTED (each floor scaled by {f:.3})"),
                    None => String::new(),
                }
            ));
        }
        None => out.push_str(
            "qoslab: no emulated controller: backend speed, ceilings only (floors not enforced)\n",
        ),
    }
    out.push_str(&array_line(node.scheduler.array()));
    for v in vols {
        let l = v.limits();
        let ceiling = match (l.ceiling.iops, l.ceiling.bytes_per_sec) {
            (0, 0) => "none".to_string(),
            (i, 0) => format!("{i} IOPS"),
            (0, b) => format!("{:.1} MiB/s", b as f64 / 1048576.0),
            (i, b) => format!("{i} IOPS, {:.1} MiB/s", b as f64 / 1048576.0),
        };
        let floor = match (l.floor.iops, l.floor.bytes_per_sec) {
            (0, 0) => String::new(),
            (i, 0) => format!("  floor {i} IOPS"),
            (0, b) => format!("  floor {:.1} MiB/s", b as f64 / 1048576.0),
            (i, b) => format!("  floor {i} IOPS, {:.1} MiB/s", b as f64 / 1048576.0),
        };
        out.push_str(&format!(
            "  {:<20} {:>14} bytes  policy {:<16} ceiling {}{}{}{}\n",
            v.name,
            v.size(),
            v.policy().unwrap_or_else(|| "-".into()),
            ceiling,
            floor,
            burst_text(&l),
            match &v.nas {
                Some(n) => format!("  NAS {} (export policy {})", n.path, n.policy_name()),
                None if v.read_only => "  (read-only)".to_string(),
                None => String::new(),
            }
        ));
    }
    if let Some(fs) = node.provisioned() {
        let sp = fs.spec();
        let r = |x: &storage_node::provisioned::ResourceSpec, unit: &str| {
            let f = |v: u64| {
                if unit == "MB/s" {
                    format!("{:.1}", v as f64 / 1e6)
                } else {
                    v.to_string()
                }
            };
            match x.burst {
                Some(b) => format!(
                    "{} {unit} (burst {} for {:.0} s)",
                    f(x.baseline),
                    f(b.rate),
                    x.burst_seconds().unwrap_or(0.0)
                ),
                None => format!("{} {unit}", f(x.baseline)),
            }
        };
        out.push_str(&format!(
            "qoslab: provisioned file system {}: network {}, disk {}, disk IOPS {}, SSD IOPS {}, \
             memory cache {:.1} MB, NVMe cache {:.1} MB, per connection {:.1} MB/s (MB = 10^6 bytes)\n",
            sp.name,
            r(&sp.network, "MB/s"),
            r(&sp.disk, "MB/s"),
            r(&sp.disk_iops, "IOPS"),
            sp.ssd_iops,
            sp.memory_cache as f64 / 1e6,
            sp.nvme_cache as f64 / 1e6,
            sp.per_connection as f64 / 1e6,
        ));
    }
    let mut so = std::io::stdout().lock();
    let _ = so.write_all(out.as_bytes());
    let _ = so.flush();
}

/// "  burst 3000 IOPS on 13500 I/O credits (5.0 s)" for a volume whose ceiling bursts.
fn burst_text(l: &qos_core::EffectiveLimits) -> String {
    let mut parts = Vec::new();
    if let Some(b) = l.burst.iops {
        parts.push(format!(
            "{} IOPS on {} I/O credits ({:.1} s)",
            b.rate,
            b.bucket,
            b.burst_seconds(l.ceiling.iops).unwrap_or(0.0)
        ));
    }
    if let Some(b) = l.burst.bytes {
        parts.push(format!(
            "{:.1} MiB/s on {:.1} MiB of credits ({:.1} s)",
            b.rate as f64 / 1048576.0,
            b.bucket as f64 / 1048576.0,
            b.burst_seconds(l.ceiling.bytes_per_sec).unwrap_or(0.0)
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("  burst {}", parts.join(", "))
    }
}

/// How the node counts and serves requests (docs/CONFIG.md), one line each part that is set.
fn array_line(a: &storage_node::config::ArraySpec) -> String {
    let mut out = format!(
        "qoslab: I/O-size accounting: {}{}\n",
        a.accounting,
        match a.mbps_ceiling_with_floor {
            storage_node::config::MbpsCeilingWithFloor::Ignored => {
                "; MB/s ceilings of policies with a floor are not enforced (ONTAP)"
            }
            storage_node::config::MbpsCeilingWithFloor::Enforced => "",
        }
    );
    if let Some(m) = &a.model {
        out.push_str(&format!(
            "qoslab: emulated array: reads {}; writes {}\n",
            m.read, m.write
        ));
    }
    if !a.latency.is_zero() {
        let l = |s: qos_core::ServiceLatency| {
            format!(
                "{} us + {} us/KiB",
                s.fixed_ns as f64 / 1e3,
                s.per_kib_ns as f64 / 1e3
            )
        };
        out.push_str(&format!(
            "qoslab: service latency: reads {}, writes {}\n",
            l(a.latency.read),
            l(a.latency.write)
        ));
    }
    out
}
