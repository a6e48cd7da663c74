#![cfg(feature = "e2e")]
//! The `hosts` crate against real sshd's in the bed's namespaces: facts, the errors a user
//! meets (unreachable, authentication, missing tool), the device probe, remote servers.

use std::sync::Arc;
use std::time::Duration;

use hosts::{devices, remote, ErrorKind, Host, SshConfig};
use testbed::{run, Spec, Testbed};

fn bed() -> Testbed {
    Testbed::build(&Spec {
        hosts: 2,
        disks_per_host: 1,
        disk_bytes: 32 << 20,
        ..Spec::default()
    })
    .unwrap()
}

#[test]
fn facts_over_ssh_and_one_error_per_failing_host() {
    let bed = bed();
    let hosts = bed.suite_hosts().unwrap();
    let facts =
        hosts::preflight(&hosts, &["iperf3", "fio", "wipefs", "timeout", "setsid"]).unwrap();
    for (f, b) in facts.iter().zip(&bed.hosts) {
        assert_eq!(f.hostname, b.name);
        assert!(f.cores >= 1 && f.mem_total_bytes > 0);
        let eth0 = f
            .nics
            .iter()
            .find(|n| n.name == "eth0")
            .expect("eth0 in the namespace");
        assert_eq!(eth0.operstate, "up");
        // veth reports 10000 Mb/s: the rated speed of a namespace link must be given.
        assert_eq!(eth0.speed_mbps, Some(10000));
        let d = f.disk(&b.disks[0].dev).expect("the host's loop device");
        assert_eq!(d.size_bytes, 32 << 20);
        assert!(d.mounts.is_empty() && d.partitions.is_empty());
    }
    // Multiplexed: one master socket per host in the control directory.
    let socks = std::fs::read_dir(bed.dir.join("cm")).unwrap().count();
    assert_eq!(socks, 2);

    // A wrong key, an address nobody answers on, a missing tool: each named.
    let other_key = bed.dir.join("other_key");
    testbed::keygen(&other_key).unwrap();
    let mut cfg_text = std::fs::read_to_string(&bed.ssh_config).unwrap();
    cfg_text = cfg_text.replace(
        &bed.dir.join("id_ed25519").display().to_string(),
        &other_key.display().to_string(),
    );
    let bad_cfg = bed.dir.join("ssh_config_badkey");
    std::fs::write(&bad_cfg, cfg_text).unwrap();
    let bad_key = Arc::new(SshConfig {
        options: vec!["-F".into(), bad_cfg.display().to_string()],
        control_dir: None,
        ..Default::default()
    });
    let unreachable = Arc::new(SshConfig {
        connect_timeout: Duration::from_secs(2),
        control_dir: None,
        ..(*bed.ssh_config()).clone()
    });
    let net = bed.coordinator_addr.trim_end_matches(".1");
    let hosts = vec![
        Host::ssh("h0", None, bad_key).unwrap(),
        Host::ssh(&format!("{net}.99"), None, unreachable).unwrap(),
        hosts[1].clone(),
    ];
    let e = hosts::preflight(&hosts, &["iperf3", "qoslab-no-such-tool"]).unwrap_err();
    let text = e.to_string();
    assert_eq!(e.0.len(), 3, "{text}");
    assert!(matches!(e.0[0].kind, ErrorKind::Auth(_)), "{text}");
    assert!(matches!(e.0[1].kind, ErrorKind::Unreachable(_)), "{text}");
    assert!(matches!(e.0[2].kind, ErrorKind::MissingTools(_)), "{text}");
    assert!(
        text.contains("host h1: missing tools: qoslab-no-such-tool"),
        "{text}"
    );
}

#[test]
fn device_probe_and_remote_servers() {
    let bed = bed();
    let hosts = bed.suite_hosts().unwrap();
    let (h0, dev) = (&hosts[0], bed.hosts[0].disks[0].dev.clone());
    let st = devices::inspect(h0, &dev).unwrap();
    assert!(st.reasons().is_empty(), "{:?}", st.reasons());
    run("mkfs.ext4", &["-q", "-F", &dev]).unwrap();
    let st = devices::inspect(h0, &dev).unwrap();
    let e = devices::check_writable(&st, "h0", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("ext4 signature"), "{e}");
    assert!(devices::check_writable(&st, "h0", std::slice::from_ref(&dev)).is_ok());
    let e = devices::inspect(h0, "/etc/hostname")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a block device"), "{e}");

    // An iperf3 server on h1, reached from h0, stopped on drop.
    let rundir = format!("/tmp/qoslab-run-test-{}", std::process::id());
    let srv = remote::iperf3_server(&hosts[1], &rundir, 5301, Duration::from_secs(60)).unwrap();
    let out = h0
        .run_ok(&format!("iperf3 -c {} -p 5301 -t 1 -J", hosts[1].addr))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap()
            > 1e8
    );
    let pid = srv.pid;
    drop(srv);
    let o = hosts[1].run(&format!("kill -0 {pid}")).unwrap();
    assert_ne!(o.code, 0, "the server is gone");
    let f = remote::fio_server(&hosts[0], &rundir, 8799, Duration::from_secs(60)).unwrap();
    assert!(f.alive());
    drop(f);
    assert_eq!(
        h0.run_ok("pgrep -f 'fio --server=,879[9]' || true")
            .unwrap()
            .trim(),
        ""
    );
    remote::remove_rundir(&hosts[0], &rundir);
    remote::remove_rundir(&hosts[1], &rundir);
}
