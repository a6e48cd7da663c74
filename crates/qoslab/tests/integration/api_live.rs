//! Live changes: a policy PATCH reaches a connected fio within a second, no reconnect.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::api_util::{Api, POLICIES, VOLUMES};
use crate::realtime::RealTime;
use crate::util::{fio_command, heavy, one_volume_config, require_fio_nbd, Node};

fn metric_iops(a: &Api, vol: &str) -> u64 {
    a.get_ok(&format!("{VOLUMES}?name={vol}&fields=metric"))["records"][0]["metric"]["iops"]
        ["total"]
        .as_u64()
        .unwrap()
}

fn connections_total(a: &Api) -> u64 {
    let m = a.get("/metrics").body;
    m.lines()
        .find_map(|l| l.strip_prefix("qoslab_connections_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("qoslab_connections_total")
}

/// Poll until the metric is within ±5% of `want`; returns how long it took.
fn settle(a: &Api, vol: &str, want: u64, limit: Duration) -> Result<Duration, Vec<u64>> {
    let t = Instant::now();
    let mut seen = Vec::new();
    while t.elapsed() < limit {
        let got = metric_iops(a, vol);
        seen.push(got);
        if (got as f64 - want as f64).abs() <= want as f64 * 0.05 {
            return Ok(t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(seen)
}

#[test]
fn api_live_policy_change_reaches_connected_fio_within_2s() {
    require_fio_nbd();
    let _heavy = heavy();
    let mut rt = RealTime::start();
    let node = Node::start(&one_volume_config(
        "p",
        "max_throughput_iops = 5000",
        "vol",
        "256MiB",
    ));
    let a = Api::new(&node.api_url());
    let vol = a.uuid_of(VOLUMES, "vol");
    let pol = a.uuid_of(POLICIES, "p");
    let mut fio = fio_command(
        &node.uri("vol"),
        &[
            "--rw=randread",
            "--bs=4k",
            "--iodepth=16",
            "--time_based",
            "--runtime=8",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawning fio");
    // An error is (what, whether a starved host can explain it: a rate short of the
    // ceiling, a change seen late; never fio reconnecting or a rate above the ceiling).
    let result = (|| {
        settle(&a, "vol", 5000, Duration::from_secs(6))
            .map_err(|s| (format!("never reached 5,000 IOPS: {s:?}"), true))
            .map(|_| ())?;
        let conns = connections_total(&a);
        a.patch_ok(
            &format!("{POLICIES}/{pol}"),
            r#"{"fixed": {"max_throughput_iops": 1000}}"#,
        );
        // Late, or short of the new ceiling: a starved node or sampler explains either.
        let took = settle(&a, "vol", 1000, Duration::from_secs(2)).map_err(|s| {
            (
                format!("metric.iops.total not at 1,000 ±5% within 2 s: {s:?}"),
                true,
            )
        })?;
        // Stays there.
        std::thread::sleep(Duration::from_millis(500));
        let later = metric_iops(&a, "vol");
        if !(950..=1050).contains(&later) {
            return Err((format!("drifted to {later} IOPS"), later < 950));
        }
        if connections_total(&a) != conns {
            return Err(("fio reconnected".into(), false));
        }
        eprintln!("settled at 1,000 IOPS {took:?} after the PATCH");
        Ok(())
    })();
    let _ = vol;
    if let Err((e, excusable)) = result {
        let _ = fio.kill();
        let _ = fio.wait();
        assert!(excusable, "{e}");
        rt.short(e);
        return rt.finish();
    }
    let out = fio.wait_with_output().expect("fio");
    assert!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    rt.finish();
}
