//! Real NBD clients against the real server: fio (nbd engine), nbdinfo, qemu-img, nbdcopy.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use crate::client::Client;
use crate::json::Json;
use crate::util::{assert_same_bytes, fio, heavy, pattern, require_tool, run, Node, VOL_64MIB};

const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn fio_workloads_with_crc32c_verify() {
    let _g = heavy();
    let node = Node::start(VOL_64MIB);
    let uri = node.uri("vol");
    // One pass over [offset, offset + size) with crc32c headers in every block; `verify`:
    // fio reads back and checks what it wrote in the same run.
    let pass = |rw: &str, bs: &str, offset: &str, size: &str, verify: bool| {
        let opts = [
            format!("--rw={rw}"),
            format!("--bs={bs}"),
            format!("--offset={offset}"),
            format!("--size={size}"),
        ];
        let mut a = vec!["--verify=crc32c", "--iodepth=16"];
        a.extend(opts.iter().map(String::as_str));
        if verify {
            a.push("--do_verify=1");
        }
        fio(&uri, &a)
    };

    // Sequential write of [0, 32M) with verification of what was written...
    let r = pass("write", "64k", "0", "32M", true);
    r.assert_ios("write", 512, "seq write covered 32 MiB");
    assert!(
        r.ios("read") >= 512,
        "verify pass read everything back\n{}",
        r.out
    );
    // ...then a separate sequential read pass verifying every block's crc32c header.
    pass("read", "64k", "0", "32M", false).assert_ios("read", 512, "seq read");

    // Random write of [32M, 48M) in 4k blocks, verified, then a separate random read verify.
    let r = pass("randwrite", "4k", "32M", "16M", true);
    r.assert_ios("write", 4096, "randwrite covered every block once");
    pass("randread", "4k", "32M", "16M", false).assert_ios("read", 4096, "randread");

    // Mixed random read/write of [48M, 64M); fio verifies what it wrote.
    let r = pass("randrw", "4k", "48M", "16M", true);
    assert!(
        r.iops("read") > 0.0 && r.iops("write") > 0.0,
        "randrw IOPS\n{}",
        r.out
    );

    // Random trim of [0, 16M): fio cannot checksum a trim, so check the result directly.
    let r = fio(
        &uri,
        &[
            "--rw=randtrim",
            "--bs=64k",
            "--offset=0",
            "--size=16M",
            "--iodepth=16",
        ],
    );
    r.assert_ios("trim", 256, "randtrim covered 16 MiB");
    let mut c = Client::open(node.socket(), "vol");
    assert!(
        c.read(0, 16 << 20).iter().all(|&b| b == 0),
        "trimmed range must read as zeroes"
    );
    // The untrimmed half of the sequential data still verifies.
    let r = pass("read", "64k", "16M", "16M", false);
    assert_eq!(r.ios("read"), 256, "seq read verify after trim\n{}", r.out);
    c.disconnect();
}

/// `nbdinfo --json --list` as a map from export name to its JSON object.
fn nbdinfo_exports(node: &Node) -> BTreeMap<String, Json> {
    let list_uri = format!("nbd+unix://?socket={}", node.socket().display());
    let out = run(
        Command::new("nbdinfo").args(["--json", "--list", &list_uri]),
        TOOL_TIMEOUT,
    )
    .ok();
    let j = Json::parse_from_first_brace(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
    j.at("exports")
        .arr()
        .iter()
        .map(|e| (e.at("export-name").str().to_string(), e.clone()))
        .collect()
}

#[test]
fn nbdinfo_lists_every_volume_with_size_description_and_flags() {
    require_tool("nbdinfo");
    let node = Node::start(
        r#"
[[policy]]
name = "p500"
fixed = { max_throughput_iops = 500 }

[[volume]]
name = "alpha"
size = "64MiB"
description = "first volume"

[[volume]]
name = "beta"
size = "10GB"
description = "limited, with spaces"
policy = "p500"

[[volume]]
name = "gold"
size = 1048576
read_only = true
description = "golden image"
"#,
    );
    let exports = nbdinfo_exports(&node);
    assert_eq!(
        exports.keys().collect::<Vec<_>>(),
        ["alpha", "beta", "gold"],
        "exported volumes"
    );
    let want = [
        ("alpha", 64u64 << 20, "first volume", false),
        ("beta", 10_000_000_000, "limited, with spaces", false),
        ("gold", 1 << 20, "golden image", true),
    ];
    for (name, size, desc, ro) in want {
        let e = &exports[name];
        let ctx = format!("export {name}: {e}");
        assert_eq!(e.at("export-size").u64(), size, "{ctx}");
        assert_eq!(e.at("description").str(), desc, "{ctx}");
        assert_eq!(e.at("is_read_only").bool(), ro, "{ctx}");
        assert_eq!(e.at("can_trim").bool(), !ro, "{ctx}");
        assert_eq!(e.at("can_zero").bool(), !ro, "{ctx}");
        assert_eq!(e.at("can_fast_zero").bool(), !ro, "{ctx}");
        assert!(e.at("can_multi_conn").bool(), "{ctx}");
        assert!(e.at("can_flush").bool(), "{ctx}");
        assert!(e.at("can_fua").bool(), "{ctx}");
        assert!(e.at("can_cache").bool(), "{ctx}");
        assert!(e.at("can_df").bool(), "{ctx}");
        assert_eq!(e.at("block_size_minimum").u64(), 1, "{ctx}");
        assert_eq!(e.at("block_size_preferred").u64(), 4096, "{ctx}");
        assert_eq!(e.at("block_size_maximum").u64(), 33554432, "{ctx}");
        let ctxs: Vec<&str> = e.at("contexts").arr().iter().map(Json::str).collect();
        assert!(ctxs.contains(&"base:allocation"), "{ctx}");
    }

    // Per export, with the URI naming it.
    let out = run(
        Command::new("nbdinfo").args(["--json", &node.uri("gold")]),
        TOOL_TIMEOUT,
    )
    .ok();
    let j = Json::parse_from_first_brace(&out.stdout).unwrap();
    let e = &j.at("exports").arr()[0];
    assert_eq!(e.at("export-name").str(), "gold");
    assert!(
        e.at("is_read_only").bool() && !e.at("can_trim").bool(),
        "{e}"
    );

    // The human-readable listing names every export with its description and size.
    let list_uri = format!("nbd+unix://?socket={}", node.socket().display());
    let out = run(
        Command::new("nbdinfo").args(["--list", &list_uri]),
        TOOL_TIMEOUT,
    )
    .ok();
    for (name, size, desc, _) in want {
        assert!(out.stdout.contains(&format!("export=\"{name}\":")), "{out}");
        assert!(
            out.stdout.contains(&format!("description: {desc}")),
            "{out}"
        );
        assert!(
            out.stdout.contains(&format!("export-size: {size} ")),
            "{out}"
        );
    }
}

/// `nbdinfo --map` as (offset, length, type, description) rows.
fn nbdinfo_map(uri: &str) -> Vec<(u64, u64, u32, String)> {
    let out = run(Command::new("nbdinfo").args(["--map", uri]), TOOL_TIMEOUT).ok();
    out.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert!(f.len() >= 3, "unexpected nbdinfo --map line {l:?}");
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f.get(3).copied().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn nbdinfo_map_shows_a_hole_then_data() {
    require_tool("nbdinfo");
    let node = Node::start(
        r#"
[[volume]]
name = "vol"
size = "16MiB"
"#,
    );
    let uri = node.uri("vol");
    let map = nbdinfo_map(&uri);
    assert_eq!(
        map,
        vec![(0, 16 << 20, 3, "hole,zero".to_string())],
        "fresh volume map"
    );

    let mut c = Client::open(node.socket(), "vol");
    c.write(0, &pattern(9, 1 << 20));
    c.flush();
    c.disconnect();
    let map = nbdinfo_map(&uri);
    assert_eq!(
        (map[0].0, map[0].2, map[0].3.as_str()),
        (0, 0, "data"),
        "after a write: {map:?}"
    );
    assert!(map[0].1 >= 1 << 20, "data extent covers the write: {map:?}");
    let last = map.last().unwrap();
    assert_eq!(
        (last.2, last.3.as_str()),
        (3, "hole,zero"),
        "the rest is still a hole: {map:?}"
    );
    assert_eq!(
        last.0 + last.1,
        16 << 20,
        "extents cover the volume: {map:?}"
    );
}

#[test]
fn qemu_img_convert_round_trip() {
    require_tool("qemu-img");
    let _g = heavy();
    let node = Node::start(VOL_64MIB);
    let src = node.scratch("src.img");
    let back = node.scratch("back.img");
    let data = pattern(11, 64 << 20);
    std::fs::write(&src, &data).unwrap();
    let uri = node.uri("vol");
    run(
        Command::new("qemu-img")
            .args(["convert", "-n", "-f", "raw", "-O", "raw"])
            .arg(&src)
            .arg(&uri),
        TOOL_TIMEOUT,
    )
    .ok();
    run(
        Command::new("qemu-img")
            .args(["convert", "-f", "raw", "-O", "raw"])
            .arg(&uri)
            .arg(&back),
        TOOL_TIMEOUT,
    )
    .ok();
    assert_same_bytes(
        "qemu-img convert round trip",
        &std::fs::read(&back).unwrap(),
        &data,
    );
    let out = run(
        Command::new("qemu-img")
            .args(["compare", "-f", "raw", "-F", "raw"])
            .arg(&src)
            .arg(&uri),
        TOOL_TIMEOUT,
    );
    assert!(out.status.success(), "qemu-img compare: {out}");
    // And what reached the disk is the image itself.
    assert_same_bytes(
        "volume file",
        &std::fs::read(node.volume_file("vol")).unwrap(),
        &data,
    );
}

#[test]
fn nbdcopy_multi_conn_round_trip() {
    require_tool("nbdcopy");
    let _g = heavy();
    let node = Node::start(VOL_64MIB);
    let uri = node.uri("vol");
    let nbdcopy = |from: &dyn AsRef<std::ffi::OsStr>, to: &dyn AsRef<std::ffi::OsStr>| {
        run(
            Command::new("nbdcopy")
                .args(["--connections=4", "--requests=16", "--flush"])
                .arg(from)
                .arg(to),
            TOOL_TIMEOUT,
        )
        .ok();
    };
    // First fill the volume with data, then copy in an image with a 16 MiB zero region:
    // nbdcopy zeroes that region with WRITE_ZEROES/TRIM rather than writing it.
    let a = node.scratch("a.img");
    std::fs::write(&a, pattern(12, 64 << 20)).unwrap();
    nbdcopy(&a, &uri);

    let mut b_data = pattern(13, 64 << 20);
    b_data[16 << 20..32 << 20].fill(0);
    let b = node.scratch("b.img");
    {
        // Written sparse so that nbdcopy sees a hole in the source.
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::File::create(&b).unwrap();
        f.write_all(&b_data[..16 << 20]).unwrap();
        f.seek(SeekFrom::Start(32 << 20)).unwrap();
        f.write_all(&b_data[32 << 20..]).unwrap();
    }
    nbdcopy(&b, &uri);

    let out = node.scratch("out.img");
    std::fs::File::create(&out).unwrap();
    nbdcopy(&uri, &out);
    assert_same_bytes("nbdcopy round trip", &std::fs::read(&out).unwrap(), &b_data);
    assert_same_bytes(
        "volume file after nbdcopy",
        &std::fs::read(node.volume_file("vol")).unwrap(),
        &b_data,
    );
}
