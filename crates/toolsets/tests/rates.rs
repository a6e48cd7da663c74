//! The classic tools' formulas on canned /proc text whose figures are known by hand.

use std::collections::HashMap;

use toolsets::counters::{parse_stat_lines, Counters};
use toolsets::rates::sample;
use toolsets::roles::{GENERATOR_THREADS, NODE_THREADS};
use toolsets::source::CgroupFiles;
use toolsets::{HostConsts, JobFiles, RawSnapshot, Role, Roles};

const CONSTS: HostConsts = HostConsts {
    ticks_per_second: 100,
    page_size: 4096,
};

/// The fields procfs-core requires, with round figures.
const MEMINFO: &str = "MemTotal:       16000000 kB
MemFree:         4000000 kB
MemAvailable:   10000000 kB
Buffers:          100000 kB
Cached:          5000000 kB
SwapCached:            0 kB
Active:          3000000 kB
Inactive:        3000000 kB
SwapTotal:       2000000 kB
SwapFree:        1500000 kB
Dirty:                 0 kB
Writeback:             0 kB
Mapped:           100000 kB
Slab:             100000 kB
Committed_AS:    5000000 kB
VmallocTotal:   34359738367 kB
VmallocUsed:       10000 kB
VmallocChunk:          0 kB
";

struct Snap {
    uptime: f64,
    /// user nice system idle iowait irq softirq steal, for the two CPUs.
    cpus: [[u64; 8]; 2],
    running: u32,
    /// reads, sectors_read, ms_reading, writes, sectors_written, ms_writing, ms_busy, weighted_ms
    disk: [u64; 8],
    /// rx bytes, rx packets, rx drops, tx bytes, tx packets, tx drops
    nic: [u64; 6],
    swap: [u64; 2],
    procs: Vec<(i32, i32, &'static str, u64, u64, u64)>, // pid ppid comm own children starttime
}

fn cpu_line(name: &str, c: [u64; 8]) -> String {
    format!(
        "{name} {} {} {} {} {} {} {} {} 0 0\n",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    )
}

fn raw(s: &Snap) -> RawSnapshot {
    let total: [u64; 8] = std::array::from_fn(|i| s.cpus[0][i] + s.cpus[1][i]);
    let stat = format!(
        "{}{}{}intr 0\nctxt 1000\nbtime 1700000000\nprocesses 500\nprocs_running {}\nprocs_blocked 1\n",
        cpu_line("cpu ", total),
        cpu_line("cpu0", s.cpus[0]),
        cpu_line("cpu1", s.cpus[1]),
        s.running
    );
    let d = s.disk;
    let diskstats = format!(
        "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n   8       0 sda {} 0 {} {} {} 0 {} {} 0 {} {} 0 0 0 0 0 0\n",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
    );
    let n = s.nic;
    let net_dev = format!(
        "Inter-|   Receive                                                |  Transmit\n \
         face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
         lo: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n  eth0: {} {} 0 {} 0 0 0 0 {} {} 0 {} 0 0 0 0\n",
        n[0], n[1], n[2], n[3], n[4], n[5]
    );
    let mut procs = String::new();
    for (pid, ppid, comm, own, children, start) in &s.procs {
        // utime carries all of `own`, cutime all of `children`.
        procs.push_str(&format!(
            "{pid} ({comm}) R {ppid} 1 1 0 -1 4194304 0 0 0 0 {own} 0 {children} 0 20 0 1 0 {start} 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
        ));
    }
    RawSnapshot {
        uptime: format!("{:.2} 100.00\n", s.uptime).into_bytes(),
        stat: stat.into_bytes(),
        meminfo: MEMINFO.as_bytes().to_vec(),
        vmstat: format!(
            "pgpgin 1000\npgpgout {}\npswpin {}\npswpout {}\n",
            2000 + s.swap[1] * 4,
            s.swap[0],
            s.swap[1]
        )
        .into_bytes(),
        diskstats: diskstats.into_bytes(),
        net_dev: net_dev.into_bytes(),
        processes: procs.into_bytes(),
        ..RawSnapshot::default()
    }
}

/// The three pressure files with these `some` totals (µs) and `full` at half of each.
fn psi(cpu: u64, io: u64, memory: u64) -> [Vec<u8>; 3] {
    [cpu, io, memory].map(|t| {
        format!(
            "some avg10=0.00 avg60=0.00 avg300=0.00 total={t}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total={}\n",
            t / 2
        )
        .into_bytes()
    })
}

/// `/proc/PID/io` with these storage bytes.
fn proc_io(read: u64, write: u64, cancelled: u64) -> Vec<u8> {
    format!(
        "rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: {read}\nwrite_bytes: {write}\ncancelled_write_bytes: {cancelled}\n"
    )
    .into_bytes()
}

fn counters(s: &Snap) -> Counters {
    Counters::parse(&raw(s), CONSTS).unwrap()
}

#[test]
fn two_seconds_of_known_counters_give_the_classic_tools_figures() {
    let before = Snap {
        uptime: 1000.0,
        cpus: [
            [1000, 0, 500, 8000, 100, 10, 10, 0],
            [1000, 0, 500, 8000, 100, 10, 10, 0],
        ],
        running: 1,
        disk: [1000, 8000, 500, 2000, 16000, 4000, 3000, 4500],
        nic: [1_000_000, 1000, 0, 2_000_000, 2000, 0],
        swap: [10, 20],
        procs: vec![
            (1, 0, "init", 50, 0, 1),
            (2, 0, "kthreadd", 0, 0, 1),
            (40, 2, "kworker/1:1", 10, 0, 2),
            (100, 1, "qoslab", 500, 0, 90_000),
            (101, 100, "fio", 100, 0, 99_000),
            (200, 1, "cargo", 10, 1000, 50_000),
            (201, 200, "rustc", 300, 0, 95_000),
            (300, 1, "bash", 0, 0, 40_000),
            (301, 300, "make", 5, 0, 41_000),
            (302, 301, "cc", 200, 0, 42_000),
        ],
    };
    // 2 s later: CPU0 spent 200 ticks as 100 usr + 40 sys + 20 iowait + 10 irq + 10 softirq
    // + 20 idle; CPU1 all idle.
    let after = Snap {
        uptime: 1002.0,
        cpus: [
            [1100, 0, 540, 8020, 120, 20, 20, 0],
            [1000, 0, 500, 8200, 100, 10, 10, 0],
        ],
        running: 4,
        // +200 reads of 8 sectors in 400 ms; +100 writes of 100 MiB in 1000 ms; busy 1900 ms
        // of 2000; weighted 3000 ms.
        disk: [1200, 9600, 900, 2100, 16000 + 204800, 5000, 4900, 7500],
        nic: [
            1_000_000 + 250_000_000,
            1000 + 20_000,
            4,
            2_000_000,
            2000 + 10_000,
            0,
        ],
        swap: [10 + 6, 20 + 8],
        procs: vec![
            (1, 0, "init", 50, 0, 1),
            (2, 0, "kthreadd", 0, 0, 1),
            (40, 2, "kworker/1:1", 16, 0, 2),
            // The node: 120 ticks in 2 s = 60% of a core.
            (100, 1, "qoslab", 620, 0, 90_000),
            // fio: 180 ticks = 90%.
            (101, 100, "fio", 280, 0, 99_000),
            // fio's job process, started during the interval (after uptime 1000 s = tick
            // 100000): its 20 ticks all count.
            (102, 101, "fio", 20, 0, 100_050),
            // rustc (300 ticks counted while it ran, 330 at exit) was reaped by cargo: only
            // the 30 ticks not seen before, plus a short-lived child's 40, are new.
            (200, 1, "cargo", 10, 1000 + 330 + 40, 50_000),
            // make (6 at exit) and its cc (210 at exit) were both reaped: bash's children
            // counter holds all 216 ticks, of which 205 were counted while they ran.
            (300, 1, "bash", 0, 216, 40_000),
        ],
    };
    let roles = Roles {
        harness_pid: Some(100),
        node_pid: Some(100),
        threads: vec![],
    };
    let mut speeds = HashMap::new();
    speeds.insert("eth0".to_string(), 1000u64);
    let s = sample(
        &counters(&before),
        &counters(&after),
        100,
        &roles,
        &speeds,
        2000,
    );

    assert_eq!(s.interval_ms, 2000);
    let c0 = s.cpus[0];
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(c0.usr, 50.0), "{c0:?}");
    assert!(close(c0.sys, 20.0) && close(c0.iowait, 10.0) && close(c0.irq, 10.0));
    assert!(close(c0.idle, 10.0) && close(c0.steal, 0.0));
    assert!(close(s.cpus[1].idle, 100.0));
    // Host: 400 ticks, 100 usr.
    assert!(
        close(s.cpu.usr, 25.0) && close(s.cpu.idle, 55.0),
        "{:?}",
        s.cpu
    );
    assert!(close(s.cpu.busy(), 40.0));
    assert_eq!((s.run_queue, s.blocked), (4, 1));

    // iostat -x: sda only (loop0 idle).
    assert_eq!(s.disks.len(), 1);
    let d = &s.disks[0];
    assert_eq!(d.name, "sda");
    assert!(close(d.r_s, 100.0) && close(d.w_s, 50.0), "{d:?}");
    assert!(close(d.rmb_s, 1600.0 * 512.0 / 1048576.0 / 2.0));
    assert!(close(d.wmb_s, 50.0));
    assert!(close(d.r_await_ms, 2.0) && close(d.w_await_ms, 10.0));
    assert!(close(d.aqu_sz, 1.5) && close(d.util_pct, 95.0));
    assert!(close(d.await_ms(), (2.0 * 100.0 + 10.0 * 50.0) / 150.0));

    // sar -n DEV: eth0 only (lo idle); 125 MB/s of 1000 Mb/s is 100%.
    assert_eq!(s.nics.len(), 1);
    let n = &s.nics[0];
    assert!(close(n.rx_bytes_s, 125_000_000.0) && close(n.rx_packets_s, 10_000.0));
    assert!(close(n.rx_drops_s, 2.0) && close(n.tx_packets_s, 5_000.0));
    assert!(close(n.util_pct().unwrap(), 100.0));

    // Memory and swap (vmstat).
    assert_eq!(s.mem_available_bytes, 10_000_000 * 1024);
    assert_eq!(s.mem_used_bytes, 6_000_000 * 1024);
    assert_eq!(s.swap_used_bytes, 500_000 * 1024);
    assert!(close(s.swap_in_s, 3.0) && close(s.swap_out_s, 4.0));
    assert!(close(s.page_out_kib_s, 16.0) && close(s.page_in_kib_s, 0.0));

    // pidstat, by role.
    assert!(close(s.roles.node, 60.0), "{:?}", s.roles);
    assert!(close(s.roles.fio, 100.0), "{:?}", s.roles);
    assert!(close(s.roles.kernel, 3.0));
    assert!(
        close(s.roles.other, 35.0 + 5.5),
        "cargo: 30 + 40 ticks, bash: 11: {:?}",
        s.roles
    );
    assert!(close(s.fio_max_proc_pct(), 90.0));
    // Both fio processes last ran on CPU 0 (the canned lines' processor field): its idle
    // (10%) plus iowait (10%).
    assert!(s
        .procs
        .iter()
        .filter(|p| p.role == Role::Fio)
        .all(|p| p.last_cpu == Some(0)));
    assert!(close(s.fio_cpus_idle_pct().unwrap(), 20.0));
    let other = s.busiest_other().unwrap();
    assert_eq!((other.pid, other.name.as_str()), (200, "cargo"));
    assert_eq!(
        s.procs.iter().filter(|p| p.role == Role::Fio).count(),
        2,
        "{:?}",
        s.procs
    );
    assert!(s.procs.iter().any(|p| p.role == Role::Node && p.pid == 100));

    // Long rows for the series CSV.
    let rows = s.rows();
    assert!(rows
        .iter()
        .any(|(m, i, v)| *m == "disk_util_pct" && i == "sda" && close(*v, 95.0)));
    assert!(rows
        .iter()
        .any(|(m, i, v)| *m == "cpu_idle_pct" && i == "1" && close(*v, 100.0)));
    assert!(rows
        .iter()
        .any(|(m, i, v)| *m == "role_cpu_pct" && i == "fio" && close(*v, 100.0)));
}

#[test]
fn counters_that_go_back_count_as_nothing() {
    let a = || Snap {
        uptime: 10.0,
        cpus: [[100, 0, 0, 100, 0, 0, 0, 0], [100, 0, 0, 100, 0, 0, 0, 0]],
        running: 1,
        disk: [100, 800, 100, 0, 0, 0, 100, 100],
        nic: [0; 6],
        swap: [0, 0],
        procs: vec![],
    };
    let b = Snap {
        uptime: 11.0,
        disk: [5, 40, 1, 0, 0, 0, 50, 60],
        procs: vec![],
        ..a()
    };
    let s = sample(
        &counters(&a()),
        &counters(&b),
        100,
        &Roles::default(),
        &HashMap::new(),
        1000,
    );
    assert!(s.disks.is_empty(), "{:?}", s.disks);
    assert!(s.cpus.iter().all(|c| c.idle == 100.0));
}

#[test]
fn a_malformed_file_is_named() {
    let mut r = raw(&Snap {
        uptime: 1.0,
        cpus: [[0; 8]; 2],
        running: 0,
        disk: [0; 8],
        nic: [0; 6],
        swap: [0, 0],
        procs: vec![],
    });
    r.diskstats = b"8 0 sda notanumber\n".to_vec();
    let e = Counters::parse(&r, CONSTS).unwrap_err();
    assert!(e.to_string().contains("/proc/diskstats"), "{e}");
}

/// `stat` lines for (pid, comm, own ticks, start) with cpu `processor`.
fn stat_lines(v: &[(i32, &str, u64, u64, u32)]) -> Vec<u8> {
    let mut out = String::new();
    for (pid, comm, own, start, cpu) in v {
        out.push_str(&format!(
            "{pid} ({comm}) R 1 1 1 0 -1 4194304 0 0 0 0 {own} 0 0 0 20 0 1 0 {start} 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0\n"
        ));
    }
    out.into_bytes()
}

#[test]
fn the_harness_process_is_split_by_its_threads() {
    let snap = |uptime: f64, own: u64| Snap {
        uptime,
        cpus: [[0; 8]; 2],
        running: 1,
        disk: [0; 8],
        nic: [0; 6],
        swap: [0, 0],
        procs: vec![(100, 1, "qoslab", own, 0, 90_000)],
    };
    // 2 s; the process used 300 ticks (150% of a core): node threads 120 + 60 (one of them
    // started in the interval), the generator thread 80, the rest (main, sampler) 40.
    let mut a = counters(&snap(1000.0, 1000));
    a.threads = parse_stat_lines(
        &stat_lines(&[
            (100, "qoslab", 100, 90_000, 0),
            (101, "qoslab-node", 500, 90_001, 1),
            (103, "qoslab-gen", 200, 95_000, 0),
            (104, "toolsets-local", 10, 95_000, 0),
        ]),
        4096,
    );
    let mut b = counters(&snap(1002.0, 1300));
    b.threads = parse_stat_lines(
        &stat_lines(&[
            (100, "qoslab", 130, 90_000, 0),
            (101, "qoslab-node", 620, 90_001, 1),
            (102, "qoslab-node", 60, 100_050, 1),
            (103, "qoslab-gen", 280, 95_000, 0),
            (104, "toolsets-local", 20, 95_000, 0),
        ]),
        4096,
    );
    let roles = Roles::embedded().with_generator();
    let roles = Roles {
        harness_pid: Some(100),
        node_pid: Some(100),
        ..roles
    };
    assert_eq!(roles.threads[0].prefix, NODE_THREADS);
    assert_eq!(roles.threads[1].prefix, GENERATOR_THREADS);
    let s = sample(&a, &b, 100, &roles, &HashMap::new(), 2000);
    let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
    assert!(close(s.roles.node, 90.0), "{:?}", s.roles);
    assert!(close(s.roles.fio, 40.0), "{:?}", s.roles);
    assert!(close(s.roles.harness, 20.0), "{:?}", s.roles);
    let node = s.procs.iter().find(|p| p.role == Role::Node).unwrap();
    assert_eq!((node.pid, node.name.as_str()), (100, "qoslab-node threads"));
    assert_eq!(node.last_cpu, Some(1), "the busiest node thread's CPU");
    let gen = s.procs.iter().find(|p| p.role == Role::Fio).unwrap();
    assert_eq!(gen.name, "qoslab-gen threads");
    assert!(close(s.fio_max_proc_pct(), 40.0));
    let rest = s.procs.iter().find(|p| p.role == Role::Harness).unwrap();
    assert!(close(rest.cpu_pct, 20.0), "{rest:?}");
    // pidstat -r: the process's resident memory (100 pages), none on its thread parts.
    assert_eq!(rest.rss_bytes, Some(100 * 4096));
    assert_eq!(node.rss_bytes, None);

    // Without the threads (a source that cannot read them) the process stays whole.
    let (mut a2, mut b2) = (a.clone(), b.clone());
    a2.threads.clear();
    b2.threads.clear();
    let s = sample(&a2, &b2, 100, &roles, &HashMap::new(), 2000);
    assert!(
        close(s.roles.harness, 150.0) && s.roles.node == 0.0,
        "{:?}",
        s.roles
    );
}

#[test]
fn pressure_and_the_job_s_io_over_two_seconds() {
    let snap = |uptime: f64| Snap {
        uptime,
        cpus: [[0; 8]; 2],
        running: 3,
        disk: [0; 8],
        nic: [0; 6],
        swap: [0, 0],
        procs: vec![
            (100, 1, "qoslab", 0, 0, 90_000),
            (101, 100, "fio", 0, 0, 99_000),
            (200, 1, "qoslab", 0, 0, 80_000),
            (300, 1, "dd", 0, 0, 80_000),
        ],
    };
    let with = |uptime: f64, p: [Vec<u8>; 3], fio_io: Vec<u8>, node_io: Vec<u8>, cg: u64| {
        let mut r = raw(&snap(uptime));
        [r.psi_cpu, r.psi_io, r.psi_memory] = p;
        let mut c = Counters::parse(&r, CONSTS).unwrap();
        let [cpu, io, memory] = psi(cg, 0, 0);
        c.add_job_files(&JobFiles {
            io: vec![(101, fio_io), (200, node_io), (999, b"garbage".to_vec())],
            cgroups: vec![CgroupFiles {
                path: "/qoslab.slice".into(),
                pids: vec![101, 200],
                cpu,
                io,
                memory,
            }],
        });
        c
    };
    // 2 s: the host's CPU some +1.2 s (60%), io some +0.4 s (20%, full 10%), memory none;
    // fio read 8 MiB, the node wrote 4 MiB of which 2 MiB were cancelled (truncated before
    // writeback); the job's cgroup waited 0.5 s for a CPU.
    let a = with(
        1000.0,
        psi(5_000_000, 1_000_000, 10),
        proc_io(0, 0, 0),
        proc_io(0, 0, 0),
        100,
    );
    let b = with(
        1002.0,
        psi(6_200_000, 1_400_000, 10),
        proc_io(8 << 20, 0, 0),
        proc_io(0, 4 << 20, 2 << 20),
        500_100,
    );
    let roles = Roles {
        harness_pid: Some(100),
        node_pid: Some(200),
        threads: vec![],
    };
    let s = sample(&a, &b, 100, &roles, &HashMap::new(), 2000);
    let p = s.pressure.expect("the host's pressure");
    let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
    assert!(close(p.cpu_some, 60.0) && close(p.cpu_full, 30.0), "{p:?}");
    assert!(close(p.io_some, 20.0) && close(p.io_full, 10.0), "{p:?}");
    assert_eq!((p.memory_some, p.memory_full), (0.0, 0.0));
    let io = |pid: i32| s.procs.iter().find(|x| x.pid == pid).unwrap().io_bytes_s;
    assert_eq!(io(101), Some(4.0 * 1048576.0));
    assert_eq!(io(200), Some(1048576.0));
    assert_eq!(s.job_io_bytes_s(), Some(5.0 * 1048576.0));
    assert_eq!(s.cgroups.len(), 1);
    let cg = &s.cgroups[0];
    assert_eq!(cg.path, "/qoslab.slice");
    assert_eq!(cg.roles, vec![Role::Fio, Role::Node]);
    assert!(close(cg.pressure.cpu_some, 25.0), "{cg:?}");
    let rows = s.rows();
    assert!(rows
        .iter()
        .any(|(m, i, v)| *m == "psi_cpu_some_pct" && i.is_empty() && close(*v, 60.0)));
    assert!(rows.iter().any(|(m, i, v)| *m == "psi_cpu_some_pct"
        && i == "cgroup:/qoslab.slice"
        && close(*v, 25.0)));

    // A kernel without PSI, a source without the job's files: none of it, and no error.
    let plain = counters(&snap(1000.0));
    let s = sample(
        &plain,
        &counters(&snap(1001.0)),
        100,
        &roles,
        &HashMap::new(),
        1000,
    );
    assert_eq!(
        (s.pressure, s.cgroups.len(), s.job_io_bytes_s()),
        (None, 0, None)
    );
}
