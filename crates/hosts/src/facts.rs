//! Host facts: what a suite sizes its load from (cores, RAM, disks, NICs).
//!
//! One remote shell script prints the raw files between marker lines; they are parsed here
//! with `procfs-core` (meminfo, cpuinfo, partitions, mountinfo, net/dev) so the host needs
//! nothing but a POSIX shell and `cat`.

use std::collections::BTreeMap;

use procfs_core::{FromBufRead, FromRead};
use serde::Serialize;

use crate::error::{ErrorKind, HostError};
use crate::ssh::Host;

pub(crate) const MARK: &str = "@@qoslab@@ ";

/// A block device of the host (from /sys/block).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disk {
    pub name: String,
    pub path: String,
    pub size_bytes: u64,
    pub rotational: bool,
    pub read_only: bool,
    pub removable: bool,
    /// `maj:min`.
    pub dev: String,
    pub model: String,
    /// Partitions (`sda1`, `nvme0n1p2`, ...).
    pub partitions: Vec<String>,
    /// Devices stacked on it (dm, md, bcache).
    pub holders: Vec<String>,
    /// Mount points of the device or any of its partitions.
    pub mounts: Vec<String>,
    /// In use as swap (the device or a partition).
    pub swap: bool,
}

impl Disk {
    /// `loop`, `dm`, `md`, `zram`, `ram`, `nbd` or `disk`.
    pub fn kind(&self) -> &'static str {
        for k in ["loop", "dm-", "md", "zram", "ram", "nbd"] {
            if self.name.starts_with(k) {
                return k.trim_end_matches('-');
            }
        }
        "disk"
    }
}

/// A network interface.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nic {
    pub name: String,
    /// Link speed in Mbit/s from /sys/class/net/NAME/speed (`None`: not reported, e.g.
    /// a virtual interface or a link that is down).
    pub speed_mbps: Option<u64>,
    pub operstate: String,
    pub mtu: u32,
    pub address: String,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

/// One IPv4 route of the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    pub iface: String,
    pub destination: std::net::Ipv4Addr,
    pub mask: std::net::Ipv4Addr,
    pub metric: u32,
}

/// What a suite needs to know about a host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostFacts {
    /// The host as named in the suite.
    pub host: String,
    pub hostname: String,
    pub kernel: String,
    /// Logical CPUs (hardware threads), as the seed's sizing rules count them.
    pub cores: u32,
    pub mem_total_bytes: u64,
    pub disks: Vec<Disk>,
    pub nics: Vec<Nic>,
    /// The IPv4 routing table (/proc/net/route): which NIC traffic to an address leaves by.
    pub routes: Vec<Route>,
    /// Tools asked for that are not on the host's PATH.
    pub missing_tools: Vec<String>,
}

impl HostFacts {
    pub fn disk(&self, path_or_name: &str) -> Option<&Disk> {
        let name = path_or_name.rsplit('/').next().unwrap_or(path_or_name);
        self.disks.iter().find(|d| d.name == name)
    }

    /// The NIC that carries `addr`'s traffic is not known from /sys alone; the fastest
    /// reported link speed among the up, non-loopback interfaces is the rated speed.
    pub fn rated_nic_mbps(&self) -> Option<u64> {
        self.nics
            .iter()
            .filter(|n| n.name != "lo" && n.operstate != "down")
            .filter_map(|n| n.speed_mbps)
            .max()
    }

    /// The NIC the host's traffic to `addr` leaves by: the longest matching route of
    /// /proc/net/route (lowest metric among equals). `addr` is an IPv4 address or a name
    /// this machine resolves; None for IPv6 or when no route matches.
    pub fn nic_towards(&self, addr: &str) -> Option<&Nic> {
        use std::net::{IpAddr, ToSocketAddrs};
        let ip = match addr.parse::<IpAddr>() {
            Ok(IpAddr::V4(v4)) => v4,
            Ok(IpAddr::V6(_)) => return None,
            Err(_) => (addr, 0)
                .to_socket_addrs()
                .ok()?
                .find_map(|a| match a.ip() {
                    IpAddr::V4(v4) => Some(v4),
                    IpAddr::V6(_) => None,
                })?,
        };
        let ip = u32::from(ip);
        let route = self
            .routes
            .iter()
            .filter(|r| ip & u32::from(r.mask) == u32::from(r.destination) & u32::from(r.mask))
            .max_by(|a, b| {
                u32::from(a.mask)
                    .count_ones()
                    .cmp(&u32::from(b.mask).count_ones())
                    .then(b.metric.cmp(&a.metric))
            })?;
        self.nics.iter().find(|n| n.name == route.iface)
    }
}

/// The remote script: raw files between marker lines, then the tools that are missing.
pub fn script(tools: &[&str]) -> String {
    let tools: Vec<String> = tools.iter().map(|t| crate::quote(t)).collect();
    format!(
        r#"m() {{ printf '{MARK}%s\n' "$1"; }}
m hostname; cat /proc/sys/kernel/hostname
m kernel; cat /proc/sys/kernel/osrelease
m meminfo; cat /proc/meminfo
m cpuinfo; cat /proc/cpuinfo
m partitions; cat /proc/partitions
m mountinfo; cat /proc/self/mountinfo
m swaps; cat /proc/swaps
m netdev; cat /proc/net/dev
m route; cat /proc/net/route
for d in /sys/block/*; do [ -e "$d" ] || continue; n=${{d##*/}}; m "block $n"
 echo "dev $(cat $d/dev)"; echo "size $(cat $d/size)"; echo "rotational $(cat $d/queue/rotational 2>/dev/null)"
 echo "ro $(cat $d/ro 2>/dev/null)"; echo "removable $(cat $d/removable 2>/dev/null)"
 echo "model $(cat $d/device/model 2>/dev/null)"
 for p in $d/$n*; do [ -e "$p/partition" ] && echo "part ${{p##*/}} $(cat $p/dev)"; done
 for h in $d/holders/*; do [ -e "$h" ] && echo "holder ${{h##*/}}"; done
done
for n in /sys/class/net/*; do [ -e "$n" ] || continue; m "net ${{n##*/}}"
 echo "speed $(cat $n/speed 2>/dev/null)"; echo "operstate $(cat $n/operstate 2>/dev/null)"
 echo "mtu $(cat $n/mtu 2>/dev/null)"; echo "address $(cat $n/address 2>/dev/null)"
done
m tools; for t in {}; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done
true
"#,
        tools.join(" ")
    )
}

/// Read a host's facts over its transport, checking that `tools` are installed.
pub fn gather(host: &Host, tools: &[&str]) -> Result<HostFacts, HostError> {
    let out = host.run_ok(&script(tools))?;
    parse(&host.name, &out).map_err(|detail| {
        host.err(ErrorKind::Parse {
            what: "host facts".into(),
            detail,
        })
    })
}

/// Split the script's output into its sections.
pub(crate) fn sections(out: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut cur: Option<(String, String)> = None;
    for line in out.lines() {
        if let Some(name) = line.strip_prefix(MARK) {
            if let Some((k, v)) = cur.take() {
                map.insert(k, v);
            }
            cur = Some((name.trim().to_string(), String::new()));
        } else if let Some((_, v)) = cur.as_mut() {
            v.push_str(line);
            v.push('\n');
        }
    }
    if let Some((k, v)) = cur {
        map.insert(k, v);
    }
    map
}

pub(crate) fn kv(body: &str) -> Vec<(&str, &str)> {
    body.lines()
        .filter_map(|l| {
            let l = l.trim();
            let (k, v) = l.split_once(' ').unwrap_or((l, ""));
            (!k.is_empty()).then_some((k, v.trim()))
        })
        .collect()
}

/// A block device's section (`body`), with its mounts and whether it is swap.
fn disk(
    name: &str,
    body: &str,
    mounts: &procfs_core::process::MountInfos,
    swaps: &[String],
) -> Disk {
    let mut d = Disk {
        name: name.to_string(),
        path: format!("/dev/{name}"),
        size_bytes: 0,
        rotational: false,
        read_only: false,
        removable: false,
        dev: String::new(),
        model: String::new(),
        partitions: Vec::new(),
        holders: Vec::new(),
        mounts: Vec::new(),
        swap: false,
    };
    let mut devs = Vec::new();
    for (k, v) in kv(body) {
        match k {
            "dev" => {
                d.dev = v.to_string();
                devs.push(v.to_string());
            }
            "size" => d.size_bytes = v.parse::<u64>().unwrap_or(0) * 512,
            "rotational" => d.rotational = v == "1",
            "ro" => d.read_only = v == "1",
            "removable" => d.removable = v == "1",
            "model" => d.model = v.to_string(),
            "part" => {
                let mut it = v.split_whitespace();
                if let Some(p) = it.next() {
                    d.partitions.push(p.to_string());
                }
                if let Some(dev) = it.next() {
                    devs.push(dev.to_string());
                }
            }
            "holder" => d.holders.push(v.to_string()),
            _ => {}
        }
    }
    for m in mounts.0.iter().filter(|m| devs.contains(&m.majmin)) {
        d.mounts.push(m.mount_point.display().to_string());
    }
    let names: Vec<String> = std::iter::once(d.name.clone())
        .chain(d.partitions.iter().cloned())
        .map(|n| format!("/dev/{n}"))
        .collect();
    d.swap = swaps.iter().any(|s| names.contains(s));
    d
}

/// A NIC's section (`body`), with its byte counters.
fn nic(name: &str, body: &str, netdev: &procfs_core::net::InterfaceDeviceStatus) -> Nic {
    let mut n = Nic {
        name: name.to_string(),
        speed_mbps: None,
        operstate: String::new(),
        mtu: 0,
        address: String::new(),
        rx_bytes: 0,
        tx_bytes: 0,
    };
    for (k, v) in kv(body) {
        match k {
            "speed" => n.speed_mbps = v.parse::<i64>().ok().filter(|s| *s > 0).map(|s| s as u64),
            "operstate" => n.operstate = v.to_string(),
            "mtu" => n.mtu = v.parse().unwrap_or(0),
            "address" => n.address = v.to_string(),
            _ => {}
        }
    }
    if let Some(st) = netdev.0.get(name) {
        n.rx_bytes = st.recv_bytes;
        n.tx_bytes = st.sent_bytes;
    }
    n
}

/// Parse the script's output (pure; unit-tested on captured output).
pub fn parse(host: &str, out: &str) -> Result<HostFacts, String> {
    let s = sections(out);
    let get = |k: &str| s.get(k).map(String::as_str).unwrap_or("");
    let mem = procfs_core::Meminfo::from_read(get("meminfo").as_bytes())
        .map_err(|e| format!("/proc/meminfo: {e}"))?;
    let cpuinfo = get("cpuinfo");
    if !cpuinfo.contains("processor") {
        return Err("/proc/cpuinfo has no processor entries".into());
    }
    let cores = procfs_core::CpuInfo::from_buf_read(cpuinfo.as_bytes())
        .map_err(|e| format!("/proc/cpuinfo: {e}"))?
        .num_cores() as u32;
    let mounts = procfs_core::process::MountInfos::from_buf_read(get("mountinfo").as_bytes())
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let swaps: Vec<String> = get("swaps")
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    let netdev = procfs_core::net::InterfaceDeviceStatus::from_buf_read(get("netdev").as_bytes())
        .map_err(|e| format!("/proc/net/dev: {e}"))?;

    let mut disks = Vec::new();
    let mut nics = Vec::new();
    for (key, body) in &s {
        if let Some(name) = key.strip_prefix("block ") {
            disks.push(disk(name, body, &mounts, &swaps));
        } else if let Some(name) = key.strip_prefix("net ") {
            nics.push(nic(name, body, &netdev));
        }
    }
    let routes = match s.get("route") {
        Some(text) if !text.trim().is_empty() => {
            procfs_core::net::RouteEntries::from_buf_read(text.as_bytes())
                .map_err(|e| format!("/proc/net/route: {e}"))?
                .0
                .into_iter()
                .map(|r| Route {
                    iface: r.iface,
                    destination: r.destination,
                    mask: r.mask,
                    metric: r.metrics,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(HostFacts {
        host: host.to_string(),
        routes,
        hostname: get("hostname").trim().to_string(),
        kernel: get("kernel").trim().to_string(),
        cores,
        mem_total_bytes: mem.mem_total,
        disks,
        nics,
        missing_tools: get("tools").split_whitespace().map(String::from).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine() {
        let h = Host::local();
        let f = gather(&h, &["sh", "no-such-tool-qoslab"]).unwrap();
        assert!(f.cores >= 1);
        assert!(f.mem_total_bytes > 64 << 20, "{}", f.mem_total_bytes);
        assert_eq!(f.missing_tools, vec!["no-such-tool-qoslab"]);
        assert!(f.nics.iter().any(|n| n.name == "lo"));
        let root = f.disks.iter().find(|d| d.mounts.iter().any(|m| m == "/"));
        // In a container / may live on an overlay with no block device behind it.
        if let Some(d) = root {
            assert!(d.size_bytes > 0);
        }
    }

    #[test]
    fn parses_captured_output() {
        let meminfo = include_str!("../tests/fixtures/meminfo");
        let out = format!(
            "{MARK}hostname\nnode1\n{MARK}kernel\n6.1.0\n{MARK}meminfo\n{meminfo}\
             {MARK}cpuinfo\nprocessor\t: 0\nmodel name\t: X\n\nprocessor\t: 1\nmodel name\t: X\n\n\
             {MARK}partitions\nmajor minor  #blocks  name\n\n   8        0  1000 sda\n   8        1  500 sda1\n\
             {MARK}mountinfo\n22 1 8:1 / /data rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
             {MARK}swaps\nFilename Type Size Used Priority\n\
             {MARK}netdev\nInter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n  eth0: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n\
             {MARK}route\nIface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
             wlan0\t00000000\t0100A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n\
             eth0\t0000000A\t00000000\t0001\t0\t0\t100\t000000FF\t0\t0\t0\n\
             {MARK}block sda\ndev 8:0\nsize 2000\nrotational 1\nro 0\nremovable 0\nmodel DISK\npart sda1 8:1\n\
             {MARK}block sdb\ndev 8:16\nsize 4000\nrotational 0\nro 0\nremovable 0\nmodel \n\
             {MARK}net eth0\nspeed 10000\noperstate up\nmtu 1500\naddress aa\n\
             {MARK}net lo\nspeed \noperstate unknown\nmtu 65536\naddress 00\n\
             {MARK}tools\niperf3\n"
        );
        let f = parse("n1", &out).unwrap();
        assert_eq!((f.hostname.as_str(), f.cores), ("node1", 2));
        assert_eq!(f.mem_total_bytes, 16384000 * 1024);
        let sda = f.disk("/dev/sda").unwrap();
        assert_eq!(sda.partitions, vec!["sda1"]);
        assert_eq!(sda.mounts, vec!["/data"]);
        assert!(sda.rotational);
        assert_eq!(sda.size_bytes, 2000 * 512);
        let sdb = f.disk("sdb").unwrap();
        assert!(!sdb.rotational && sdb.mounts.is_empty() && sdb.partitions.is_empty());
        assert_eq!(f.rated_nic_mbps(), Some(10000));
        let eth0 = f.nics.iter().find(|n| n.name == "eth0").unwrap();
        assert_eq!((eth0.rx_bytes, eth0.tx_bytes), (100, 200));
        assert_eq!(
            f.nics.iter().find(|n| n.name == "lo").unwrap().speed_mbps,
            None
        );
        assert_eq!(f.missing_tools, vec!["iperf3"]);
        // 10.0.0.0/8 leaves by eth0; anything else by the default route's wlan0 (no NIC
        // of that name here); IPv6 is not looked up.
        assert_eq!(f.routes.len(), 2);
        assert_eq!(
            f.nic_towards("10.1.2.3").map(|n| n.name.as_str()),
            Some("eth0")
        );
        assert_eq!(f.nic_towards("192.168.0.9"), None);
        assert_eq!(f.nic_towards("::1"), None);
        assert!(parse("n1", "garbage").is_err());
    }
}
