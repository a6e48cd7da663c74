//! `testbed up [--hosts N] [--vms V] [--vm-iscsi 1] [--link-mbit M] [--slow A-B=MBIT ...] [--disks K] [--disk-mib S]`:
//! build namespace hosts (and V qemu guest hosts with a kernel NFS client after them, and
//! open-iscsi's initiator with `--vm-iscsi 1`), print their description (JSON) and "ready", keep them until stdin
//! closes or a signal arrives, then tear them down.
//! `testbed clean`: remove what killed runs left behind.
//!
//! Try it: `sudo target/debug/testbed up --hosts 3 --slow 0-1=200` then, in another shell,
//! `ssh -F /tmp/qoslab-testbed/<tag>/ssh_config h0 iperf3 -c <h1 addr>`.

use std::io::Read;

fn usage() -> ! {
    eprintln!(
        "usage: testbed up [--hosts N] [--vms V] [--vm-iscsi 0|1] [--link-mbit M] [--slow A-B=MBIT]... [--disks K] [--disk-mib S]\n       testbed clean"
    );
    std::process::exit(2)
}

fn main() {
    lifecycle::install();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("clean") => {
            for t in testbed::clean_stale() {
                println!("removed stale testbed {t}");
            }
        }
        Some("up") => up(&args[1..]),
        _ => usage(),
    }
}

fn up(args: &[String]) {
    let mut spec = testbed::Spec::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().unwrap_or_else(|| usage());
        let num = |s: &str| -> u64 {
            s.parse().unwrap_or_else(|_| {
                eprintln!("testbed: {a}: not a number: {s}");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--hosts" => spec.hosts = num(v) as usize,
            "--vms" => spec.vm_hosts = num(v) as usize,
            "--vm-iscsi" => spec.vm_iscsi = num(v) != 0,
            "--link-mbit" => spec.link_mbit = num(v) as u32,
            "--disks" => spec.disks_per_host = num(v) as usize,
            "--disk-mib" => spec.disk_bytes = num(v) << 20,
            "--slow" => {
                let (pair, m) = v.split_once('=').unwrap_or_else(|| usage());
                let (x, y) = pair.split_once('-').unwrap_or_else(|| usage());
                spec.slow_pairs
                    .push((num(x) as usize, num(y) as usize, num(m) as u32));
            }
            _ => usage(),
        }
    }
    let bed = match testbed::Testbed::build(&spec) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("testbed: {e}");
            std::process::exit(1)
        }
    };
    println!("{}", bed.describe());
    println!("ready");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(bed);
}
