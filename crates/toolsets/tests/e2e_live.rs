#![cfg(feature = "e2e")]
//! The sampler on this machine, against real processes: fio burning CPU as the harness's
//! child, a busy shell that is nobody's (noise), and O_DIRECT writes to the disk holding the
//! working directory.

use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use toolsets::device::backing_devices;
use toolsets::{Role, Roles, Sampler};

/// The tests sample this process and its children: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A busy loop reparented to init (its launcher exits), so it belongs to no one here.
struct Orphan(i32);

impl Orphan {
    fn spawn() -> Orphan {
        let out = Command::new("sh")
            .args([
                "-c",
                "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
            ])
            .output()
            .unwrap();
        Orphan(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
    }
}

impl Drop for Orphan {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid this test started.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
        }
    }
}

struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A runnable task's fair share of the CPUs over `samples`, percent of one core: all CPUs
/// over the runnable tasks (vmstat's r), at most one core.
fn fair_share(samples: &[toolsets::HostSample]) -> f64 {
    let cpus = samples
        .iter()
        .map(|x| x.cpus.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let shares: Vec<f64> = samples
        .iter()
        .map(|x| (cpus * 100.0 / f64::from(x.run_queue.max(1))).min(100.0))
        .collect();
    shares.iter().sum::<f64>() / shares.len().max(1) as f64
}

#[test]
fn fio_noise_and_disk_writes_are_seen_for_what_they_are() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = test_support::TestDir::new("toolsets-live");
    let sampler = Sampler::local(Roles::harness_only(None));
    let fio = Reaped(
        Command::new("fio")
            .args([
                "--name=burn",
                "--ioengine=cpuio",
                "--cpuload=100",
                "--time_based",
                "--runtime=4",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("fio is installed by scripts/install-deps.sh"),
    );
    let noise = Orphan::spawn();
    let noise_pid = noise.0;
    // The busy shell is nobody's: classified as noise (whether or not it is among the
    // busiest others on a machine that other work keeps busy too).
    {
        use toolsets::ProcSource;
        let mut src = toolsets::LocalProc::new();
        let consts = src.consts().unwrap();
        let c = toolsets::counters::Counters::parse(&src.snapshot().unwrap(), consts).unwrap();
        let roles = Roles::harness_only(None).classify(&c.procs);
        assert_eq!(roles.get(&noise_pid), Some(&Role::Other));
    }
    // O_DIRECT writes for ~3 s: the disk under the temp dir sees them.
    let path = dir.join("direct");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .unwrap();
    let layout = std::alloc::Layout::from_size_align(1 << 16, 4096).unwrap();
    // SAFETY: an aligned, zeroed allocation of the layout's size, freed below.
    let buf = unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        std::slice::from_raw_parts_mut(p, 1 << 16)
    };
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        f.write_all_at(buf, (n & 255) << 16).unwrap();
        n += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: the allocation made above with the same layout.
    unsafe { std::alloc::dealloc(buf.as_mut_ptr(), layout) };
    std::thread::sleep(Duration::from_millis(1200));
    let series = sampler.stop();
    drop(noise);
    drop(fio);

    assert_eq!(series.len(), 1);
    let s = &series[0];
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.host, "local");
    assert!(s.ncpus >= 1 && s.mem_total_bytes > 0);
    assert!(
        (3..=6).contains(&s.samples.len()),
        "{} samples in ~4.2 s",
        s.samples.len()
    );
    // Samples are a second apart on average: a read a starved host made late is followed
    // by a shorter gap to the next tick (the schedule never drifts), or skips one.
    let span = s.samples.last().unwrap().t_ms - s.samples[0].t_ms;
    let mean_gap = span / (s.samples.len() as u64 - 1);
    assert!((700..=1600).contains(&mean_gap), "mean gap {mean_gap} ms");
    let mid = &s.samples[1..s.samples.len() - 1];
    let mean = |f: &dyn Fn(&toolsets::HostSample) -> f64| {
        mid.iter().map(f).sum::<f64>() / mid.len() as f64
    };
    // Two busy loops on a shared machine: each gets at least half its fair share of the
    // CPUs (all CPUs over the runnable tasks: 100% of a core on a quiet 2-CPU machine, 20%
    // beside two hogs, a writer and a TCG guest).
    let fair = fair_share(mid);
    let fio_pct = mean(&|x| x.roles.fio);
    let other_pct = mean(&|x| x.roles.other);
    assert!(
        fio_pct > fair / 2.0,
        "fio {fio_pct:.0}% of a core (fair {fair:.0}%)"
    );
    assert!(
        other_pct > fair / 2.0,
        "noise {other_pct:.0}% of a core (fair {fair:.0}%)"
    );
    assert!(mid.iter().any(|x| x
        .procs
        .iter()
        .any(|p| p.role == Role::Fio && p.name == "fio")));
    // Listed by name when it is among the three busiest others.
    for x in mid {
        for p in x.procs.iter().filter(|p| p.pid == noise_pid) {
            assert_eq!((p.role, p.name.as_str()), (Role::Other, "sh"));
        }
    }
    // The disk under the temp dir, when it has one, saw the writes.
    let devs = backing_devices(&std::env::temp_dir());
    if let Some(dev) = devs.first() {
        assert!(
            s.samples
                .iter()
                .any(|x| x.disks.iter().any(|d| &d.name == dev && d.w_s > 10.0)),
            "no writes seen on {dev}"
        );
    }
    // The sampler's own cost: well under 5% of a core even in a debug build.
    assert!(s.overhead.samples >= 3);
    assert!(
        s.overhead.pct_of_core() < 5.0,
        "sampler {:.2}% of a core",
        s.overhead.pct_of_core()
    );
}

#[test]
fn stop_right_after_start_returns_promptly_with_no_samples() {
    let t = Instant::now();
    let s = Sampler::local(Roles::default()).stop();
    assert!(t.elapsed() < Duration::from_millis(500));
    assert!(s[0].samples.is_empty());
    assert!(s[0].errors.is_empty(), "{:?}", s[0].errors);
}

#[test]
fn an_embedded_node_s_threads_are_the_node_and_the_rest_is_the_harness() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sampler = Sampler::local(Roles::embedded().with_generator());
    let busy = |name: &str, ms: u64| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let t = Instant::now();
                let mut x = 0u64;
                while t.elapsed() < Duration::from_millis(ms) {
                    x = x.wrapping_mul(31).wrapping_add(1);
                }
                std::hint::black_box(x);
            })
            .unwrap()
    };
    // A node thread busy for 2.5 s; a generator thread for 2.5 s at most half the time.
    let node = busy(toolsets::NODE_THREADS, 2500);
    let gen = std::thread::Builder::new()
        .name(format!("{}-ramp", toolsets::GENERATOR_THREADS))
        .spawn(|| {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(2500) {
                let s = Instant::now();
                let mut x = 0u64;
                while s.elapsed() < Duration::from_millis(10) {
                    x = x.wrapping_mul(31).wrapping_add(1);
                }
                std::hint::black_box(x);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .unwrap();
    node.join().unwrap();
    gen.join().unwrap();
    let series = sampler.stop();
    let s = &series[0];
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    let full: Vec<_> = s.samples.iter().filter(|x| x.interval_ms >= 900).collect();
    assert!(!full.is_empty(), "{s:?}");
    // On a loaded machine a busy thread gets its share of the CPUs: at least half of it.
    let fair = fair_share(&full.iter().map(|x| (*x).clone()).collect::<Vec<_>>());
    let node_max = full.iter().map(|x| x.roles.node).fold(0.0, f64::max);
    assert!(
        node_max > (fair / 2.0).min(40.0),
        "the node's threads (fair share {fair:.0}%): {:?}",
        full.iter().map(|x| x.roles).collect::<Vec<_>>()
    );
    for x in &full {
        assert!(
            x.roles.fio < 60.0,
            "the generator ran a third of the time: {:?}",
            x.roles
        );
        assert!(
            x.roles.harness < 25.0,
            "the rest of the process is idle: {:?}",
            x.roles
        );
    }
    assert!(
        full.iter().any(|x| x.roles.fio > 5.0),
        "{:?}",
        full.iter().map(|x| x.roles).collect::<Vec<_>>()
    );
    let p = full[0]
        .procs
        .iter()
        .find(|p| p.role == Role::Node)
        .expect("the node's part");
    assert_eq!(p.pid, std::process::id() as i32);
    assert_eq!(p.name, format!("{} threads", toolsets::NODE_THREADS));
}
