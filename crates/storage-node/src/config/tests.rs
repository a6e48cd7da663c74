//! Data-driven config checks: TOML in, a one-line summary or the exact error out.

use super::*;

fn summary(cfg: &NodeConfig) -> String {
    let mut s = Vec::new();
    for p in &cfg.policies {
        s.push(format!("policy {}={:?}", p.name, p.policy));
    }
    for v in &cfg.volumes {
        s.push(format!(
            "volume {} size={} reserve={} ro={} policy={:?}",
            v.name, v.size, v.snapshot_reserve_percent, v.read_only, v.policy
        ));
    }
    s.join("\n")
}

#[track_caller]
fn check(input: &str, expect: &str) {
    let got = match NodeConfig::parse(input, "node.toml") {
        Ok(cfg) => summary(&cfg),
        Err(e) => format!("error: {e}"),
    };
    assert_eq!(got.trim(), expect.trim(), "\ninput:\n{input}");
}

#[track_caller]
fn check_err_contains(input: &str, parts: &[&str]) {
    let e = NodeConfig::parse(input, "node.toml").expect_err("config should be rejected");
    let msg = e.to_string();
    for p in parts {
        assert!(msg.contains(p), "error {msg:?} lacks {p:?}");
    }
}

#[test]
fn volumes_units_and_defaults() {
    check(
        r#"
[[volume]]
name = "a"
size = "100GB"
[[volume]]
name = "b"
size = "1GiB"
snapshot_reserve_percent = 0
read_only = true
policy = "value"
[[volume]]
name = "c"
size = 4096
"#,
        r#"
volume a size=100000000000 reserve=5 ro=false policy=None
volume b size=1073741824 reserve=0 ro=true policy=Some("value")
volume c size=4096 reserve=5 ro=false policy=None
"#,
    );
}

#[test]
fn bad_unit_names_line_field_and_forms() {
    check_err_contains(
        "\n[[volume]]\nname = \"a\"\nsize = \"10XB\"\n",
        &["node.toml:4", "volume \"a\"", "size", "10XB", "KiB"],
    );
}

#[test]
fn negative_and_absurd_sizes() {
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = -5\n",
        &["node.toml:3", "size = -5", "negative"],
    );
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = \"-5GB\"\n",
        &["volume \"a\"", "-5GB"],
    );
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = \"2000TB\"\n",
        &["size = 2000TB", "allowed range is 1 B to 1 PiB"],
    );
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = 0\n",
        &["allowed range is 1 B to 1 PiB"],
    );
}

#[test]
fn unknown_policy_lists_known_ones() {
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = \"1GiB\"\npolicy = \"gold\"\n",
        &[
            "policy = \"gold\" is not defined",
            "extreme, performance, value",
        ],
    );
}

#[test]
fn fixed_floor_above_ceiling() {
    check_err_contains(
        "[[policy]]\nname = \"p\"\nfixed = { max_throughput_iops = 100, min_throughput_iops = 200 }\n",
        &["node.toml:3", "policy \"p\"", "min_throughput_iops"],
    );
}

#[test]
fn adaptive_without_peak() {
    check_err_contains(
        "[[policy]]\nname = \"p\"\nadaptive = { expected_iops = \"5IOPS/GB\" }\n",
        &["policy \"p\"", "adaptive.peak_iops is required"],
    );
}

#[test]
fn unknown_field_is_named() {
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = \"1GiB\"\nsnapshot_reserve = 5\n",
        &["node.toml:4", "snapshot_reserve"],
    );
}

#[test]
fn policy_kinds_and_cli_forms() {
    check(
        r#"
[[policy]]
name = "both"
fixed = { max_throughput = "500iops,100MB/s" }
[[policy]]
name = "a"
adaptive = { expected_iops = "5IOPS/GB", peak_iops = "50IOPS/GB", peak_iops_allocation = "allocated-space", block_size = "any" }
"#,
        r#"
policy both=Fixed(FixedPolicy { max_iops: 500, max_mbps: 100, min_iops: 0, min_mbps: 0, capacity_shared: false, weight: 0, burst: None })
policy a=Adaptive(AdaptivePolicy { expected_iops: IopsPerTb(5000.0), peak_iops: IopsPerTb(50000.0), absolute_min_iops: 0, expected_allocation: AllocatedSpace, peak_allocation: AllocatedSpace, block_size: Any, weight: 0, burst: None })
"#,
    );
    check_err_contains(
        "[[policy]]\nname = \"p\"\nfixed = { max_throughput = \"500iop\" }\n",
        &["500iop", "500iops,100MB/s"],
    );
}

#[test]
fn structural_errors() {
    check_err_contains(
        "[[policy]]\nname = \"p\"\n",
        &["exactly one of `fixed`, `adaptive` or `provisioned`"],
    );
    check_err_contains(
        "[[policy]]\nname = \"value\"\nfixed = { max_throughput_iops = 1 }\n",
        &["duplicate policy name"],
    );
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = 1\n[[volume]]\nname = \"a\"\nsize = 1\n",
        &["node.toml:5", "duplicate volume name"],
    );
    check_err_contains("[[volume]]\nname = \"a/b\"\nsize = 1\n", &["invalid name"]);
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = 1\nsnapshot_reserve_percent = 95\n",
        &["snapshot_reserve_percent = 95", "0 to 90"],
    );
    check_err_contains(
        "[node]\nlisten_tcp = \"localhost\"\n",
        &["node.listen_tcp", "HOST:PORT"],
    );
    check_err_contains(
        "[node]\nlisten_http = \"localhost:80\"\n",
        &["node.listen_http", "HOST:PORT"],
    );
    let cfg = NodeConfig::parse("[node]\nlisten_http = \"127.0.0.1:9\"\n", "node.toml").unwrap();
    assert_eq!(cfg.listen_http, Some("127.0.0.1:9".parse().unwrap()));
}

#[test]
fn capacity_table() {
    let cfg = NodeConfig::parse(
        "[capacity]\niops = 20000\nmbps = 400\ncost_unit = \"64KiB\"\ndiscipline = \"fifo\"\n",
        "node.toml",
    )
    .unwrap();
    let cap = cfg.capacity.unwrap();
    assert_eq!(
        (cap.iops, cap.mbps, cap.cost_unit, cap.discipline),
        (20000, 400, 65536, Discipline::Fifo)
    );
    assert_eq!(cap.rate().bytes_per_sec, 400 << 20);
    let cfg = NodeConfig::parse("[capacity]\niops = 1000\n", "node.toml").unwrap();
    assert_eq!(cfg.capacity.unwrap().cost_unit, DEFAULT_COST_UNIT);
    assert!(NodeConfig::parse("", "node.toml")
        .unwrap()
        .capacity
        .is_none());
    check_err_contains(
        "[node]\n\n[capacity]\niops = -5\n",
        &[
            "node.toml:3",
            "capacity.iops = -5",
            "0 (not limited) or positive",
        ],
    );
    check_err_contains(
        "[capacity]\niops = 1000\ncost_unit = 100\n",
        &["capacity.cost_unit = 100", "512 B to 64 MiB"],
    );
    check_err_contains(
        "[capacity]\niops = 1000\ndiscipline = \"wfq\"\n",
        &["capacity.discipline", "\"wfq\"", "mclock", "fifo"],
    );
    check_err_contains(
        "[capacity]\niops = 1000\ncalibrate = true\n",
        &["either iops/mbps or calibrate"],
    );
    check_err_contains("[capacity]\nios = 1\n", &["node.toml:2", "ios"]);
}

#[test]
fn policy_weight() {
    let cfg = NodeConfig::parse(
        "[[policy]]\nname = \"w\"\nfixed = { min_throughput_iops = 100, weight = 3 }\n",
        "node.toml",
    )
    .unwrap();
    assert_eq!(cfg.policies[0].policy.weight(), 3);
    check_err_contains(
        "[[policy]]\nname = \"w\"\nadaptive = { peak_iops = 100, weight = 0 }\n",
        &["node.toml:3", "adaptive.weight = 0", "1 to 10000"],
    );
}

#[test]
fn burst_sub_tables() {
    check(
        r#"
[[policy]]
name = "gp2ish"
fixed = { max_throughput_iops = 300, burst = { max_throughput_iops = 3000, bucket_iops = 5.4e6 } }
[[policy]]
name = "sf"
fixed = { max_throughput = "1000iops", min_throughput = "50iops", burst = { max_throughput = "1500iops", duration = "60s", initial_percent = 0 } }
[[policy]]
name = "st1ish"
fixed = { max_throughput_mbps = 40, burst = { max_throughput_mbps = 250, bucket_mb = "1TiB" } }
"#,
        r#"
policy gp2ish=Fixed(FixedPolicy { max_iops: 300, max_mbps: 0, min_iops: 0, min_mbps: 0, capacity_shared: false, weight: 0, burst: Some(BurstPolicy { max_iops: 3000, max_mbps: 0, bucket_iops: 5400000, bucket_mb: 0, seconds: 0, initial_percent: 100 }) })
policy sf=Fixed(FixedPolicy { max_iops: 1000, max_mbps: 0, min_iops: 50, min_mbps: 0, capacity_shared: false, weight: 0, burst: Some(BurstPolicy { max_iops: 1500, max_mbps: 0, bucket_iops: 0, bucket_mb: 0, seconds: 60, initial_percent: 0 }) })
policy st1ish=Fixed(FixedPolicy { max_iops: 0, max_mbps: 40, min_iops: 0, min_mbps: 0, capacity_shared: false, weight: 0, burst: Some(BurstPolicy { max_iops: 0, max_mbps: 250, bucket_iops: 0, bucket_mb: 1048576, seconds: 0, initial_percent: 100 }) })
"#,
    );
    for (burst, parts) in [
        (
            "{ max_throughput_iops = 3000 }",
            &["policy \"p\"", "fixed.burst.bucket_iops", "needs a bucket"][..],
        ),
        (
            "{ max_throughput_iops = 200, bucket_iops = 10 }",
            &[
                "fixed.burst.max_throughput_iops",
                "above fixed.max_throughput_iops = 300",
            ],
        ),
        (
            "{ max_throughput_iops = 3000, duration = \"forever\" }",
            &["fixed.burst.duration", "forever", "30min"],
        ),
        (
            "{ max_throughput_iops = 3000, duration = 60, bucket_iops = 5 }",
            &["not both"],
        ),
        (
            "{ max_throughput_iops = 3000, duration = 60, initial_percent = 150 }",
            &["fixed.burst.initial_percent = 150", "0 to 100"],
        ),
        (
            "{ max_throughput_iops = 3000, duration = 60, bucket = 5 }",
            &["node.toml", "bucket"],
        ),
    ] {
        check_err_contains(
            &format!(
                "[[policy]]\nname = \"p\"\nfixed = {{ max_throughput_iops = 300, burst = {burst} }}\n"
            ),
            parts,
        );
    }
}

#[test]
fn provisioned_policies_and_ceiling_mode() {
    check(
        r#"
[[policy]]
name = "gp2"
provisioned = { model = "ebs-gp2" }
[[policy]]
name = "st1-lab"
provisioned = { model = "EBS_ST1", bucket_scale = "1/100", initial_percent = 0, weight = 3 }
"#,
        r#"
policy gp2=Provisioned(ProvisionedPolicy { model: EbsGp2, bucket_scale: 1.0, initial_percent: 100, weight: 0 })
policy st1-lab=Provisioned(ProvisionedPolicy { model: EbsSt1, bucket_scale: 0.01, initial_percent: 0, weight: 3 })
"#,
    );
    check_err_contains(
        "[[policy]]\nname = \"p\"\nprovisioned = { model = \"gp3\" }\n",
        &[
            "node.toml:3",
            "provisioned.model",
            "gp3",
            "ebs-gp2, ebs-st1",
        ],
    );
    check_err_contains(
        "[[policy]]\nname = \"p\"\nprovisioned = { model = \"ebs-gp2\", bucket_scale = 0 }\n",
        &["provisioned.bucket_scale", "above 0"],
    );
    check_err_contains(
        "[[policy]]\nname = \"p\"\nfixed = { max_throughput_iops = 1 }\nprovisioned = { model = \"ebs-gp2\" }\n",
        &["exactly one of"],
    );
    let cfg = NodeConfig::parse("[node]\nceiling_mode = \"ontap\"\n", "n").unwrap();
    assert_eq!(cfg.ceiling_mode, CeilingMode::Ontap);
    assert_eq!(
        NodeConfig::parse("", "n").unwrap().ceiling_mode,
        CeilingMode::Strict
    );
    check_err_contains(
        "[node]\nceiling_mode = \"loose\"\n",
        &["node.ceiling_mode", "loose", "strict", "ontap"],
    );
}

#[test]
fn provisioned_file_system_section() {
    let cfg = NodeConfig::parse(
        "[provisioned]\npreset = \"fsx-ontap-128\"\nscale = \"1/1000\"\nrate_scale = 0.1\nburst_duration = \"10min\"\nper_connection = \"50MB/s\"\n",
        "n",
    )
    .unwrap();
    let s = cfg.provisioned.unwrap();
    assert_eq!(s.name, "fsx-ontap-128");
    assert_eq!(s.network.baseline, 15_000_000);
    assert_eq!(s.memory_cache, 16_000_000);
    assert_eq!(
        s.per_connection,
        5 << 20,
        "per_connection is scaled like every rate"
    );
    // 600 s x 1/1000: a 0.6 s burst.
    assert!((s.network.burst_seconds().unwrap() - 0.6).abs() < 1e-6);
    let custom = NodeConfig::parse(
        "[provisioned]\nnetwork = { baseline = \"100MB/s\", burst = \"400MB/s\" }\ndisk = { baseline = 10485760 }\ndisk_iops = { baseline = 1000 }\nburst_duration = 10\nmemory_cache = \"4MiB\"\n",
        "n",
    )
    .unwrap()
    .provisioned
    .unwrap();
    assert_eq!(custom.name, "custom");
    assert_eq!(custom.network.burst.unwrap().bucket, (300 * 10) << 20);
    assert_eq!(custom.disk.baseline, 10 << 20);
    assert_eq!(custom.memory_cache, 4 << 20);
    for (toml, parts) in [
        (
            "[provisioned]\npreset = \"fsx-ontap-100\"\n",
            &["node.toml:1: provisioned.preset", "fsx-ontap-128, fsx-ontap-256"][..],
        ),
        (
            "[provisioned]\nnetwork = { baseline = 1 }\n",
            &["give a preset", "network and disk"],
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\nscale = -1\n",
            &["provisioned.scale = -1", "above 0"],
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\nnetwork = { baseline = \"100MB/s\", burst = \"50MB/s\" }\n",
            &["network.burst", "must be above network.baseline"],
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\ncache_block = 100\n",
            &["cache_block = 100", "512 B to 64 MiB"],
        ),
        (
            "[provisioned]\npreset = \"fsx-ontap-128\"\nper_connection = \"500iops\"\n",
            &["per_connection", "150MB/s"],
        ),
    ] {
        check_err_contains(toml, parts);
    }
}

#[test]
fn array_keys() {
    let cfg = NodeConfig::parse(
        r#"[capacity]
io_accounting = "transfer:64KiB"
mbps_ceiling_with_floor = "ignored"
read = { 4KiB = "15300iops", 128KiB = "195MB/s", 1MiB = "246MiB/s" }
write = { 4KiB = "10900iops", 1MiB = "136MB/s" }
latency = { read = { fixed = "785us" }, write = { fixed = "0.7ms", per_kib = "2us" } }
"#,
        "node.toml",
    )
    .unwrap();
    let a = &cfg.array;
    assert_eq!(a.accounting.to_string(), "transfer:64KiB");
    assert_eq!(a.mbps_ceiling_with_floor, MbpsCeilingWithFloor::Ignored);
    let m = a.model.as_ref().unwrap();
    assert_eq!(m.capacity_iops(), 15_300);
    assert_eq!(
        array::describe(&m.read),
        [
            ("4KiB".to_string(), "15300iops".to_string()),
            ("128KiB".into(), "195MB/s".into()),
            ("1MiB".into(), "246MB/s".into())
        ]
    );
    assert_eq!(a.latency.read.fixed_ns, 785_000);
    assert_eq!(
        (a.latency.write.fixed_ns, a.latency.write.per_kib_ns),
        (700_000, 2_000)
    );
    assert!(a.needs_controller());
    // Only the accounting: no controller, the defaults everywhere else.
    let cfg = NodeConfig::parse("[capacity]\nio_accounting = \"solidfire\"\n", "n").unwrap();
    assert_eq!(cfg.array.accounting.to_string(), "solidfire");
    assert!(!cfg.array.needs_controller() && !cfg.capacity.unwrap().is_set());
    // Nothing: whole, enforced.
    let cfg = NodeConfig::parse("", "n").unwrap();
    assert_eq!(cfg.array, ArraySpec::default());
    assert!(cfg.array.accounting.is_whole());
}

#[test]
fn array_key_errors_name_line_field_value_and_forms() {
    for (input, parts) in [
        (
            "\n[capacity]\nio_accounting = \"transfer:1B\"\n",
            &[
                "node.toml:2",
                "capacity.io_accounting",
                "out of range",
                "allowed",
            ][..],
        ),
        (
            "[capacity]\nio_accounting = \"ops\"\n",
            &[
                "capacity.io_accounting",
                "\"ops\"",
                "whole",
                "transfer",
                "solidfire",
            ],
        ),
        (
            "[capacity]\nmbps_ceiling_with_floor = \"sometimes\"\n",
            &[
                "mbps_ceiling_with_floor = \"sometimes\"",
                "enforced",
                "ignored",
            ],
        ),
        (
            "[capacity]\nread = { 4KiB = \"100iops\" }\n",
            &["give both read and write"],
        ),
        (
            "[capacity]\nread = { 4KiB = \"fast\" }\nwrite = { 4KiB = \"1iops\" }\n",
            &["capacity.read.4KiB", "fast"],
        ),
        (
            "[capacity]\nread = { 4KiB = \"0iops\" }\nwrite = { 4KiB = \"1iops\" }\n",
            &["capacity.read", "give one rate"],
        ),
        (
            "[capacity]\nread = { 4XB = \"1iops\" }\nwrite = { 4KiB = \"1iops\" }\n",
            &["capacity.read.4XB", "invalid size"],
        ),
        (
            "[capacity]\niops = 1000\nread = { 4KiB = \"1iops\" }\nwrite = { 4KiB = \"1iops\" }\n",
            &["either iops/mbps", "read/write", "not two of them"],
        ),
        (
            "[capacity]\nio_accounting = \"transfer\"\ncost_unit = \"32KiB\"\niops = 1\n",
            &[
                "cost_unit applies to io_accounting = \"whole\" only",
                "transfer:64KiB",
            ],
        ),
        (
            "[capacity]\nlatency = { read = { fixed = \"fast\" } }\n",
            &["capacity.latency.read.fixed", "\"fast\"", "785us"],
        ),
        (
            "[capacity]\nlatency = { write = { per_kib = \"2s\" } }\n",
            &["capacity.latency.write.per_kib", "0 to 1000 ms"],
        ),
        (
            "[capacity]\nlatency = { read = { fixed = \"1ms\", jitter = \"1ms\" } }\n",
            &["unknown field `jitter`"],
        ),
    ] {
        check_err_contains(input, parts);
    }
}

#[test]
fn backend_layers() {
    let cfg = NodeConfig::parse(
        "[backend]\ndelay = { read = \"2ms\", write = \"500us\" }\n",
        "node.toml",
    )
    .unwrap();
    assert_eq!(
        (cfg.layers.delay_read, cfg.layers.delay_write),
        (
            std::time::Duration::from_millis(2),
            std::time::Duration::from_micros(500)
        )
    );
    assert_eq!(
        NodeConfig::parse("", "n").unwrap().layers,
        LayerSpec::default()
    );
    check_err_contains(
        "\n[backend]\ndelay = { read = \"2s\" }\n",
        &["node.toml:2: backend.delay.read", "\"2s\"", "0 to 1s"],
    );
    check_err_contains(
        "[backend]\ndelay = { write = \"fast\" }\n",
        &["backend.delay.write", "\"fast\"", "785us"],
    );
    check_err_contains("[backend]\nslow = true\n", &["unknown field `slow`"]);
}

/// Errors point at the field that is wrong, not at its table's header (issue 24), and a
/// table made by a dotted header alone (`[capacity.latency]`) parses like an inline one.
#[test]
fn errors_name_the_fields_line_and_dotted_tables_parse() {
    // A policy's kind given by dotted keys parses, and its errors name the key's line.
    let cfg = NodeConfig::parse(
        "[[policy]]\nname = \"p\"\nfixed.max_throughput = \"200iops\"\nfixed.capacity_shared = true\n",
        "node.toml",
    )
    .unwrap();
    assert_eq!(cfg.policies.len(), 1);
    check_err_contains(
        "[[policy]]\nname = \"p\"\n\nfixed.max_throughput = \"5furlongs\"\n",
        &["node.toml:4: policy \"p\""],
    );
    check_err_contains(
        "[[volume]]\nname = \"a\"\ndescription = \"x\"\nsize = \"5XB\"\n",
        &["node.toml:4: volume \"a\": size"],
    );
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = 1\n\nsnapshot_reserve_percent = 95\n",
        &["node.toml:5: volume \"a\": snapshot_reserve_percent = 95"],
    );
    check_err_contains(
        "[[volume]]\nname = \"a\"\nsize = 1\npolicy = \"gold\"\n",
        &["node.toml:4: volume \"a\": policy = \"gold\""],
    );
    check_err_contains(
        "[node]\ndata_dir = \"d\"\nlisten_tcp = \"nowhere\"\n",
        &["node.toml:3: node.listen_tcp = \"nowhere\""],
    );
    let cfg = NodeConfig::parse(
        "[node]\nlisten_unix = \"nbd.sock\"\n\n[capacity.latency]\nread = { fixed = \"785us\" }\n",
        "node.toml",
    )
    .unwrap();
    assert_eq!(cfg.array.latency.read.fixed_ns, 785_000);
    assert_eq!(cfg.sources["node.listen_unix"], "node.toml:2");
    check_err_contains(
        "\n[capacity.latency]\nread = { fixed = \"forever\" }\n",
        &["node.toml:2: capacity.latency.read.fixed"],
    );
}
