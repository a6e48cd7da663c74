#![cfg(feature = "e2e")]
//! The diagnosis on this machine's real figures: fio starved by a CPU burner pinned beside
//! it is `client-cpu-bound`; fio driving a loop device to saturation is `device-bound`.
//! (The same situations through `qoslab bench` are in the qoslab integration tests.)

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use assess::figures::summarize;
use assess::{diagnose, Bottleneck, Inputs};
use toolsets::device::backing_devices;
use toolsets::testing::Burner;
use toolsets::{Roles, Sampler};

/// The two tests would disturb each other's figures (a burner beside the loop test's fio).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs fio with `args` under the sampler; the figures of its window, without the first
/// 1.5 s and the last second (fio starting and stopping; the harness uses fio's own clock).
fn sampled_fio(args: &[&str], devices: &[String]) -> (assess::HostFigures, String) {
    let sampler = Sampler::local(Roles::harness_only(None));
    let t0 = Instant::now();
    let out = Command::new(args[0])
        .args(&args[1..])
        .stderr(Stdio::inherit())
        .output()
        .expect("fio is installed by scripts/install-deps.sh");
    let t1 = t0.elapsed().as_millis() as u64;
    let series = sampler.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let f = summarize(&series[0], 1500, t1.saturating_sub(1000), devices);
    assert!(f.samples >= 2, "{} samples in {t1} ms", f.samples);
    (f, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The diagnosis of one host's figures, which must name `want`.
fn diagnosed_as(f: &assess::HostFigures, want: Bottleneck) -> assess::Diagnosis {
    let d = diagnose(&Inputs {
        hosts: vec![f.clone()],
        ..Inputs::default()
    });
    assert_eq!(d.bottleneck, want, "{} / {f:?}", d.reason);
    d
}

#[test]
fn fio_pinned_beside_a_burner_is_client_cpu_bound() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _burn = Burner::pinned(0, 60).unwrap();
    // A paced null-engine fio: on a free CPU it needs a fraction of it.
    let (f, _) = sampled_fio(
        &[
            "taskset",
            "-c",
            "0",
            "fio",
            "--name=starved",
            "--ioengine=null",
            "--rw=randread",
            "--bs=4k",
            "--size=1g",
            "--rate_iops=20000",
            "--time_based",
            "--runtime=5",
        ],
        &[],
    );
    diagnosed_as(&f, Bottleneck::ClientCpuBound);
    assert!(f.fio_cpus_idle_pct.unwrap() < 5.0, "{f:?}");
}

#[test]
fn fio_saturating_a_loop_device_is_device_bound() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Removed by the slow device when it is dropped (asserted below), by the guard when
    // the test fails before.
    let dir = toolsets::testing::TestDir::new("assess-slow");
    // Every request waits 5 ms in nbdkit's delay filter: a device that 16 requests in
    // flight keep busy all the time, whatever the CPUs do.
    let dev = toolsets::testing::SlowDevice::new(&dir, 64, 5)
        .expect("a slow loop device (needs root, nbdfuse and nbdkit, as CI has)");
    let devices = backing_devices(dev.path());
    assert_eq!(devices.first(), Some(&dev.name()), "{devices:?}");
    let filename = format!("--filename={}", dev.path().display());
    let (f, _) = sampled_fio(
        &[
            "fio",
            "--name=saturate",
            "--ioengine=libaio",
            "--direct=1",
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=16",
            &filename,
            "--time_based",
            "--runtime=5",
        ],
        &devices,
    );
    let name = dev.name();
    drop(dev);
    assert!(!dir.exists(), "torn down");
    assert!(
        !Path::new(&format!("/sys/block/{name}/loop")).exists(),
        "{name} detached"
    );
    let d = diagnosed_as(&f, Bottleneck::DeviceBound);
    assert!(
        d.figures.iter().any(|x| x.subject.starts_with(&name)),
        "{:?}",
        d.figures
    );
}
