//! The system suites' command-line options (added to `qoslab bench`).

use std::path::PathBuf;

use clap::Args;

use super::spec::{seed_jobs, size, HostSpec, SuiteSpec};

/// Options of `--suite network|disks|nfs|iscsi|block|dir` (docs/SUITES.md).
#[derive(Args, Debug, Default, Clone)]
#[command(
    next_help_heading = "System suites (--suite network|disks|nfs|iscsi|block|dir, or a plan with [suite]; docs/SUITES.md)"
)]
pub struct SuiteArgs {
    /// The suite's hosts: NAME[=ADDRESS],... NAME is an ssh destination (an alias of your
    /// ssh config, user@host); ADDRESS the address peers and fio's client use (default: the
    /// HostName ssh resolves). `localhost` runs locally without ssh. Without --suite, with
    /// --client: the load generators whose tool sets (CPU, disks, NICs, fio's processes) are
    /// sampled over ssh beside this machine's, for the diagnosis.
    #[arg(long, value_name = "HOSTS")]
    pub hosts: Option<String>,
    /// An ssh config file for every ssh call (ssh -F FILE).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// One more ssh argument, passed before qoslab's own so it wins; repeatable
    /// (e.g. --ssh-opt=-oPort=2222 --ssh-opt=-i --ssh-opt=key).
    #[arg(long = "ssh-opt", value_name = "ARG", allow_hyphen_values = true)]
    pub ssh_opts: Vec<String>,
    /// disks: the devices to test, HOST:DEVICE,... (nothing else is ever written).
    #[arg(long, value_name = "HOST:DEV,...")]
    pub devices: Option<String>,
    /// nfs, dir: each load generator's directory; block, iscsi: its device; HOST:PATH,...
    /// nfs also takes an export, reached by fio's nfs engine from every load generator
    /// (no kernel mount): nfs://SERVER/PATH?nfsport=P&mountport=P for all hosts, or
    /// HOST:nfs://... per host; or one the suite kernel-mounts on every load generator
    /// (mount -t nfs -o vers=3,...; unmounted at the end):
    /// mount+nfs://SERVER/PATH?nfsport=P&mountport=P[&options=nconnect=4,...].
    /// iscsi, block also take a LUN each load generator's kernel initiator logs in to
    /// (iscsiadm discovery and login; logged out at the end), for all hosts or HOST:... each:
    /// login+iscsi://HOST[:PORT]/IQN/LUN[?initiator=NAME&wait=SECONDS] ({host} in NAME:
    /// the load generator's name; default: its /etc/iscsi/initiatorname.iscsi).
    #[arg(
        long,
        value_name = "HOST:PATH,...|nfs://...|mount+nfs://...|login+iscsi://..."
    )]
    pub targets: Option<String>,
    /// Overwrite DEVICE although it holds a partition table, a file system or other data
    /// (repeatable). Without it such a device is refused before anything runs.
    #[arg(long = "destroy-data", value_name = "DEVICE")]
    pub destroy_data: Vec<String>,
    /// Iterations of each fio job: the common --iterations (default 3 for the suites; the
    /// seed: 3-5, at least 60 s each).
    #[arg(skip)]
    pub iterations: Option<u32>,
    /// network: every host's rated link speed (default: the speed of the NIC its route to
    /// the peers leaves by, from /sys).
    #[arg(long, value_name = "MBIT/S")]
    pub rated_mbps: Option<u64>,
    /// network: a pair passes at this share of the rated speed (default 0.9).
    #[arg(long, value_name = "FRACTION")]
    pub min_fraction: Option<f64>,
    /// network: most TCP retransmits a test may have (default 100).
    #[arg(long, value_name = "N")]
    pub max_retransmits: Option<u64>,
    /// disks: the device jobs; storage suites: the job set (the seed's file names, e.g.
    /// fio.read.random,fio.write.seq).
    #[arg(long, value_name = "JOB,...")]
    pub jobs: Option<String>,
    /// disks: the jobs for all devices of a host together (default fio.write.all).
    #[arg(long, value_name = "JOB,...")]
    pub host_jobs: Option<String>,
    /// disks: also run the host jobs on every host at once (fio client/server, merged).
    #[arg(long)]
    pub all_hosts: bool,
    /// disks: no prefill of each device; storage suites: no prepare step.
    #[arg(long)]
    pub skip_prepare: bool,
    /// Bytes per fio job instead of the seed's 2 x RAM / cores (e.g. 16MiB).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// fio numjobs instead of the sizing rule's.
    #[arg(long, value_name = "N")]
    pub numjobs: Option<u32>,
    /// fio iodepth instead of the sizing rule's.
    #[arg(long, value_name = "N")]
    pub iodepth: Option<u32>,
    /// Storage suites: the storage side's RAM (the sizing rule's 2 x RAM / cores and its
    /// "at least 3 x RAM" check; default: each load generator's).
    #[arg(long, value_name = "SIZE")]
    pub target_ram: Option<String>,
    /// Port of fio --server on every host (default 8765).
    #[arg(long, value_name = "PORT")]
    pub fio_port: Option<u16>,
    /// A verdict on each job's spread: IOPS CV over the iterations at most PCT percent.
    #[arg(long, value_name = "PCT")]
    pub max_cv: Option<f64>,
}

/// `HOST:VALUE,...` grouped by host in first-seen order.
fn by_host(list: &str, opt: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // A kernel-mounted export's mount options go on past its commas (`options=a,b`).
        if let Some((_, v)) = out.last_mut() {
            let v: &mut String = v;
            if suites::nfs_mount::is_mount_url(v) && !item.contains(':') {
                v.push(',');
                v.push_str(item);
                continue;
            }
        }
        let (h, v) = item
            .split_once(':')
            .filter(|(h, v)| !h.is_empty() && !v.is_empty())
            .ok_or_else(|| format!("{opt} {item:?}: expected HOST:PATH"))?;
        out.push((h.to_string(), v.to_string()));
    }
    if out.is_empty() {
        return Err(format!("{opt}: nothing given"));
    }
    Ok(out)
}

impl SuiteArgs {
    /// `--hosts`, `--devices` and `--targets` onto `spec` (a plan's devices and target of a
    /// host kept unless given again).
    fn apply_hosts(&self, spec: &mut SuiteSpec) -> Result<(), String> {
        if let Some(list) = &self.hosts {
            let mut hosts = Vec::new();
            for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (name, addr) = match item.split_once('=') {
                    Some((n, a)) => (n.trim(), Some(a.trim().to_string())),
                    None => (item, None),
                };
                if name.is_empty() || name.starts_with('-') {
                    return Err(format!("--hosts {item:?}: expected NAME or NAME=ADDRESS"));
                }
                // Keep what a plan said about the host (devices, target).
                let old = spec.hosts.iter().find(|h| h.name == name);
                hosts.push(HostSpec {
                    name: name.to_string(),
                    addr: addr.or_else(|| old.and_then(|h| h.addr.clone())),
                    devices: old.map(|h| h.devices.clone()).unwrap_or_default(),
                    target: old.and_then(|h| h.target.clone()),
                });
            }
            spec.hosts = hosts;
        }
        let host_mut = |spec: &mut SuiteSpec, name: &str, opt: &str| -> Result<usize, String> {
            spec.hosts
                .iter()
                .position(|h| h.name == name)
                .ok_or_else(|| format!("{opt}: host {name:?} is not one of the hosts (--hosts)"))
        };
        if let Some(list) = &self.devices {
            let pairs = by_host(list, "--devices")?;
            for h in &mut spec.hosts {
                h.devices.clear();
            }
            for (h, d) in pairs {
                let i = host_mut(spec, &h, "--devices")?;
                if spec.hosts[i].devices.contains(&d) {
                    return Err(format!("--devices: {h}:{d} given twice"));
                }
                spec.hosts[i].devices.push(d);
            }
        }
        if let Some(list) = &self.targets {
            // One export for every load generator (seed 002: each mounts the share): an
            // nfs:// URL alone, or a mount+nfs:// one (its mount options may hold commas).
            let l = list.trim_start();
            let one_export = (l.starts_with("nfs://") && !list.contains(','))
                || suites::nfs_mount::is_mount_url(l)
                || (suites::iscsi_login::is_login_url(l) && !list.contains(','));
            let pairs = if one_export {
                let url = list.trim().to_string();
                spec.hosts
                    .iter()
                    .map(|h| (h.name.clone(), url.clone()))
                    .collect()
            } else {
                by_host(list, "--targets")?
            };
            for h in &mut spec.hosts {
                h.target = None;
            }
            for (h, t) in pairs {
                let i = host_mut(spec, &h, "--targets")?;
                if spec.hosts[i].target.is_some() {
                    return Err(format!(
                        "--targets: host {h} given twice (one target per load generator)"
                    ));
                }
                spec.hosts[i].target = Some(t);
            }
        }
        Ok(())
    }

    /// Apply what the command line gives onto `spec` (it wins over a plan's tables).
    pub fn apply(&self, spec: &mut SuiteSpec) -> Result<(), String> {
        self.apply_hosts(spec)?;
        if self.ssh_config.is_some() {
            spec.ssh_config = self.ssh_config.clone();
        }
        spec.ssh_options.extend(self.ssh_opts.iter().cloned());
        for d in &self.destroy_data {
            if !spec.destroy_data.contains(d) {
                spec.destroy_data.push(d.clone());
            }
        }
        if self.iterations.is_some() {
            spec.iterations = self.iterations;
        }
        if self.rated_mbps.is_some() {
            spec.rated_mbps = self.rated_mbps;
        }
        if let Some(f) = self.min_fraction {
            spec.min_fraction = f;
        }
        if let Some(r) = self.max_retransmits {
            spec.max_retransmits = r;
        }
        if let Some(j) = &self.jobs {
            let v: Vec<String> = j.split(',').map(|s| s.trim().to_string()).collect();
            spec.jobs = Some(seed_jobs(&v).map_err(|e| format!("--jobs: {e}"))?);
        }
        if let Some(j) = &self.host_jobs {
            let v: Vec<String> = j.split(',').map(|s| s.trim().to_string()).collect();
            spec.host_jobs = Some(seed_jobs(&v).map_err(|e| format!("--host-jobs: {e}"))?);
        }
        if self.all_hosts {
            spec.all_hosts = true;
        }
        if self.skip_prepare {
            spec.prepare = false;
        }
        if let Some(z) = &self.size {
            spec.overrides.size_bytes = Some(size(z).map_err(|e| format!("--size {z:?}: {e}"))?);
        }
        if self.numjobs.is_some() {
            spec.overrides.numjobs = self.numjobs;
        }
        if self.iodepth.is_some() {
            spec.overrides.iodepth = self.iodepth;
        }
        if let Some(r) = &self.target_ram {
            spec.target_ram = Some(size(r).map_err(|e| format!("--target-ram {r:?}: {e}"))?);
        }
        if let Some(p) = self.fio_port {
            spec.fio_port = p;
        }
        if self.max_cv.is_some() {
            spec.max_cv = self.max_cv;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::Kind;
    use super::*;

    /// `[--hosts HOSTS] --targets TARGETS` applied to `spec`.
    fn apply_targets(spec: &mut SuiteSpec, hosts: Option<&str>, targets: &str) {
        SuiteArgs {
            hosts: hosts.map(str::to_string),
            targets: Some(targets.to_string()),
            ..SuiteArgs::default()
        }
        .apply(spec)
        .unwrap();
    }

    #[test]
    fn a_lun_to_log_in_to_is_a_target_of_the_block_suites() {
        use suites::storage::StorageKind;
        let iqn = "iqn.2026-01.lab.qoslab:target0";
        // One LUN for every load generator, each logging in with its own name.
        let one = format!("login+iscsi://10.0.0.1:3260/{iqn}/0?initiator=iqn.2026-01.lab:{{host}}");
        let mut s = SuiteSpec::new(Kind::Storage(StorageKind::Iscsi));
        apply_targets(&mut s, Some("h0,h1"), &one);
        assert!(s.hosts.iter().all(|h| h.target.as_deref() == Some(&one)));
        s.validate().unwrap();
        // ... or each host's own LUN.
        let (l0, l1) = (
            format!("login+iscsi://10.0.0.1/{iqn}/0?initiator=iqn.2026-01.lab:a"),
            format!("login+iscsi://10.0.0.1/{iqn}/1?initiator=iqn.2026-01.lab:b"),
        );
        apply_targets(&mut s, None, &format!("h0:{l0},h1:{l1}"));
        assert_eq!(s.hosts[0].target.as_deref(), Some(l0.as_str()));
        assert_eq!(s.hosts[1].target.as_deref(), Some(l1.as_str()));
        s.validate().unwrap();
        let mut block = SuiteSpec::new(Kind::Storage(StorageKind::Block));
        apply_targets(&mut block, Some("h0,h1"), &format!("h0:{l0},h1:/dev/sdb"));
        block.validate().unwrap();
        // One fixed name for two hosts: their sessions would replace each other.
        apply_targets(&mut s, None, &l0);
        let e = s.validate().unwrap_err();
        assert!(
            e.contains("is given to 2 hosts with one initiator name") && e.contains("{host}"),
            "{e}"
        );
        // A bad URL, a host name that makes no iSCSI name, the wrong suite: named.
        apply_targets(&mut s, None, &format!("login+iscsi://10.0.0.1:0/{iqn}/0"));
        let e = s.validate().unwrap_err();
        assert!(
            e.starts_with("--targets: host h0: ") && e.contains("port \"0\""),
            "{e}"
        );
        apply_targets(&mut s, Some("lg_1"), &one);
        let e = s.validate().unwrap_err();
        assert!(
            e.contains("\"iqn.2026-01.lab:lg_1\", not an iSCSI name"),
            "{e}"
        );
        let mut nfs = SuiteSpec::new(Kind::Storage(StorageKind::Nfs));
        apply_targets(&mut nfs, Some("h0"), &one);
        assert!(nfs
            .validate()
            .unwrap_err()
            .contains("that is --suite iscsi or block"));
    }

    #[test]
    fn the_command_line_builds_a_spec() {
        let args = SuiteArgs {
            hosts: Some("h0, h1=10.0.0.2".into()),
            devices: Some("h0:/dev/loop0,h0:/dev/loop1,h1:/dev/loop2".into()),
            destroy_data: vec!["/dev/loop1".into()],
            jobs: Some("read.random,fio.write.seq".into()),
            size: Some("16MiB".into()),
            ..SuiteArgs::default()
        };
        let mut s = SuiteSpec::new(Kind::Disks);
        args.apply(&mut s).unwrap();
        s.validate().unwrap();
        assert_eq!(s.host_list(), "h0,h1=10.0.0.2");
        assert_eq!(s.hosts[0].devices, vec!["/dev/loop0", "/dev/loop1"]);
        assert_eq!(s.overrides.size_bytes, Some(16 << 20));
        assert_eq!(s.jobs.as_ref().unwrap().len(), 2);
        let bad = SuiteArgs {
            hosts: Some("h0".into()),
            devices: Some("h9:/dev/x".into()),
            ..SuiteArgs::default()
        };
        let e = bad.apply(&mut SuiteSpec::new(Kind::Disks)).unwrap_err();
        assert_eq!(
            e,
            "--devices: host \"h9\" is not one of the hosts (--hosts)"
        );
        let bad = SuiteArgs {
            targets: Some("h0".into()),
            ..SuiteArgs::default()
        };
        assert!(bad
            .apply(&mut SuiteSpec::new(Kind::Disks))
            .unwrap_err()
            .contains("expected HOST:PATH"));
        // One export for every load generator, or one per host.
        let url = "nfs://10.0.0.1/nas?nfsport=2049&mountport=2049";
        let mut nfs = SuiteSpec::new(Kind::Storage(suites::storage::StorageKind::Nfs));
        apply_targets(&mut nfs, Some("h0,h1"), url);
        assert!(nfs.hosts.iter().all(|h| h.target.as_deref() == Some(url)));
        nfs.validate().unwrap();
        apply_targets(&mut nfs, None, &format!("h0:{url},h1:/mnt/nfs"));
        assert_eq!(nfs.hosts[0].target.as_deref(), Some(url));
        assert_eq!(nfs.hosts[1].target.as_deref(), Some("/mnt/nfs"));
        // A kernel-mounted export: for every host (its options' commas included), or per host.
        let m = "mount+nfs://10.0.0.1/nas?nfsport=2049&options=nconnect=4,rsize=65536";
        apply_targets(&mut nfs, None, m);
        assert!(nfs.hosts.iter().all(|h| h.target.as_deref() == Some(m)));
        nfs.validate().unwrap();
        apply_targets(&mut nfs, None, &format!("h0:{m},h1:{url}"));
        assert_eq!(nfs.hosts[0].target.as_deref(), Some(m));
        assert_eq!(nfs.hosts[1].target.as_deref(), Some(url));
        nfs.hosts[0].target = Some("mount+nfs://10.0.0.1/nas?port=1".into());
        assert!(nfs.validate().unwrap_err().contains("\"port\": unknown"));
        let mut dir = SuiteSpec::new(Kind::Storage(suites::storage::StorageKind::Dir));
        apply_targets(&mut dir, Some("h0"), m);
        assert!(dir.validate().unwrap_err().contains("that is --suite nfs"));
        // The plan the spec stores reads back to the same spec.
        let text = s.describe();
        assert!(
            text.contains(
                "[[host]]\nname = \"h1\"\naddr = \"10.0.0.2\"\ndevices = [\"/dev/loop2\"]"
            ),
            "{text}"
        );
    }
}
