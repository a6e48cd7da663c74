//! Configuration errors, signals, graceful shutdown, durability across restarts.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::{expect_closed, Client, CMD_FLAG_FUA, CMD_READ, CMD_WRITE};
use crate::util::{
    assert_same_bytes, fio_command, one_volume_config, pattern, require_fio_nbd, run, Node,
    TempDir, QOSLAB, VOL_64MIB,
};

/// One invalid configuration: the text, the line the error must point at (the offending
/// field's own line, not its table's header), and the fragments stderr must contain
/// (names, fields, values).
struct Bad {
    what: &'static str,
    toml: &'static str,
    line: usize,
    fragments: &'static [&'static str],
}

const BAD: &[Bad] = &[
    Bad {
        what: "unknown policy",
        toml: "[[volume]]\nname = \"v1\"\nsize = \"1GiB\"\npolicy = \"nope\"\n",
        line: 4,
        fragments: &["volume \"v1\"", "policy = \"nope\"", "not defined"],
    },
    Bad {
        what: "bad unit",
        toml: "[[volume]]\nname = \"ok\"\nsize = \"1GiB\"\n\n[[volume]]\nname = \"v2\"\nsize = \"10XB\"\n",
        line: 7,
        fragments: &["volume \"v2\"", "size", "10XB"],
    },
    Bad {
        what: "negative size",
        toml: "[[volume]]\nname = \"v3\"\nsize = -5\n",
        line: 3,
        fragments: &["volume \"v3\"", "size = -5", "negative"],
    },
    Bad {
        what: "fixed floor above ceiling",
        toml: "[[policy]]\nname = \"pf\"\nfixed = { min_throughput_iops = 1000, max_throughput_iops = 500 }\n\n\
               [[volume]]\nname = \"v4\"\nsize = \"1GiB\"\npolicy = \"pf\"\n",
        line: 3,
        fragments: &["policy \"pf\"", "min_throughput_iops", "1000", "max_throughput_iops", "500"],
    },
    Bad {
        what: "adaptive without peak",
        toml: "[[policy]]\nname = \"pa\"\nadaptive = { expected_iops = \"5IOPS/GB\" }\n",
        line: 3,
        fragments: &["policy \"pa\"", "adaptive.peak_iops"],
    },
    Bad {
        what: "misspelled field",
        toml: "[[volume]]\nname = \"v6\"\nsize = \"1GiB\"\nread_onyl = true\n",
        line: 4,
        fragments: &["read_onyl"],
    },
];

#[test]
fn invalid_configs_exit_2_naming_field_and_value() {
    let mut failures = Vec::new();
    for b in BAD {
        let dir = TempDir::new("badcfg");
        let cfg = dir.join("node.toml");
        std::fs::write(&cfg, b.toml).unwrap();
        let sock = dir.join("nbd.sock");
        let out = run(
            Command::new(QOSLAB)
                .arg("serve")
                .arg("--config")
                .arg(&cfg)
                .arg("--data-dir")
                .arg(dir.join("data"))
                .arg("--listen-unix")
                .arg(&sock),
            Duration::from_secs(20),
        );
        let mut problems = Vec::new();
        if out.status.code() != Some(2) {
            problems.push(format!("exit status {} (want 2)", out.status));
        }
        if out.stdout.contains("qoslab: ready") {
            problems.push("printed the ready line".into());
        }
        if sock.exists() {
            problems.push("left a listening socket".into());
        }
        let first = out
            .stderr
            .lines()
            .find(|l| l.starts_with("qoslab: error:"))
            .unwrap_or("");
        if first.is_empty() {
            problems.push("no `qoslab: error:` line on stderr".into());
        }
        let at = format!("node.toml:{}:", b.line);
        if !first.contains(&at) {
            problems.push(format!("error does not point at `{at}`"));
        }
        for f in b.fragments {
            if !first.contains(f) {
                problems.push(format!("error does not mention `{f}`"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {}\n  stderr: {}",
                b.what,
                problems.join("; "),
                out.stderr.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "invalid configs:\n{}",
        failures.join("\n")
    );
}

#[test]
fn sigint_and_sigterm_on_an_idle_node_exit_zero() {
    for sig in ["INT", "TERM"] {
        let mut node = Node::start("[[volume]]\nname = \"vol\"\nsize = \"1MiB\"\n");
        let mut c = Client::open(node.socket(), "vol");
        c.write(0, b"x");
        node.signal(sig);
        let st = node
            .wait_exit(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("SIG{sig}: still running after 10 s"));
        assert!(
            st.success(),
            "SIG{sig}: exit status {st}\n{}",
            node.stderr()
        );
        // An idle open connection is closed by the shutdown.
        expect_closed(
            &mut c.s,
            Duration::from_secs(5),
            "idle connection at shutdown",
        );
        assert!(
            !node.socket().exists(),
            "SIG{sig}: the unix socket file is removed on exit"
        );
    }
}

#[test]
fn sigterm_during_fio_writes_exits_zero_within_10s() {
    require_fio_nbd();
    let mut node = Node::start(&one_volume_config(
        "p200",
        "max_throughput_iops = 200",
        "vol",
        "64MiB",
    ));
    let mut fio = fio_command(
        &node.uri("vol"),
        &[
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=16",
            "--time_based",
            "--runtime=60",
        ],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawning fio");
    // Let fio connect and fill its queue (the ceiling keeps requests parked in the node).
    std::thread::sleep(Duration::from_secs(2));
    if let Some(st) = fio.try_wait().unwrap() {
        panic!("fio exited early ({st}); node stderr:\n{}", node.stderr());
    }
    let t0 = Instant::now();
    node.signal("TERM");
    let st = node.wait_exit(Duration::from_secs(10));
    let took = t0.elapsed();
    // Whatever happened, do not leave fio running.
    let deadline = Instant::now() + Duration::from_secs(15);
    while fio.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = fio.kill();
    let _ = fio.wait();
    let st = st.unwrap_or_else(|| {
        panic!(
            "qoslab still running 10 s after SIGTERM under load\n{}",
            node.stderr()
        )
    });
    assert!(
        st.success(),
        "exit status {st} after SIGTERM under load (took {took:?})\n{}",
        node.stderr()
    );
    eprintln!("SIGTERM under fio load: exited 0 after {took:?}");
    // fio really was writing when the signal came.
    use std::os::unix::fs::MetadataExt;
    let blocks = std::fs::metadata(node.volume_file("vol")).unwrap().blocks();
    assert!(blocks > 0, "fio wrote nothing before SIGTERM");
}

#[test]
fn data_flushed_before_sigterm_survives_a_restart() {
    let mut node = Node::start(VOL_64MIB);
    let big = pattern(21, 4 << 20);
    let small = pattern(22, 4096);
    let mut c = Client::open(node.socket(), "vol");
    c.write(3 << 20, &big);
    let r = c.request(CMD_FLAG_FUA, CMD_WRITE, 60 << 20, 4096, &small);
    assert_eq!(r.error, 0, "FUA write");
    c.write(12345, b"unaligned bytes");
    c.flush();
    // SIGTERM with the connection still open.
    let st = node.stop();
    assert!(st.success(), "exit status {st}\n{}", node.stderr());
    expect_closed(&mut c.s, Duration::from_secs(5), "connection at shutdown");

    let file = std::fs::read(node.volume_file("vol")).unwrap();
    assert_same_bytes("volume file after shutdown", &file[3 << 20..7 << 20], &big);

    node.start_again();
    let mut c = Client::open(node.socket(), "vol");
    assert_eq!(c.size(), 64 << 20);
    assert_same_bytes(
        "4 MiB written before FLUSH",
        &c.read(3 << 20, 4 << 20),
        &big,
    );
    assert_same_bytes("FUA write", &c.read(60 << 20, 4096), &small);
    assert_eq!(c.read(12345, 15), b"unaligned bytes");
    assert_eq!(
        c.read(0, 4096),
        vec![0u8; 4096],
        "never-written range reads as zeroes"
    );
    c.disconnect();
}

#[test]
fn sigterm_lets_requests_parked_by_qos_finish() {
    let mut node = Node::start(&one_volume_config(
        "p20",
        "max_throughput_iops = 20",
        "vol",
        "16MiB",
    ));
    let mut c = Client::open(node.socket(), "vol");
    // 40 reads at 20 IOPS: most of them wait in the node for up to ~2 s.
    let mut b = Vec::new();
    let mut cookies = std::collections::HashSet::new();
    for i in 0..40u64 {
        cookies.insert(c.encode(&mut b, 0, CMD_READ, i * 4096, 4096, &[]));
    }
    c.send_raw(&b);
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    node.signal("TERM");
    // Every request received before the signal is answered, successfully (they are
    // in flight: parked by QoS well within the shutdown grace), then the node hangs up.
    for _ in 0..40 {
        let r = c.recv();
        assert_eq!(
            r.error, 0,
            "parked READ cookie {} answered with errno {}",
            r.cookie, r.error
        );
        assert!(cookies.remove(&r.cookie), "unexpected cookie {}", r.cookie);
    }
    expect_closed(
        &mut c.s,
        Duration::from_secs(10),
        "connection after shutdown",
    );
    let st = node
        .wait_exit(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("still running 10 s after SIGTERM\n{}", node.stderr()));
    assert!(st.success(), "exit status {st}\n{}", node.stderr());
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "shutdown took {:?}",
        t0.elapsed()
    );
}
