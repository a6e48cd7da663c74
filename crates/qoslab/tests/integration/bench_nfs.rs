//! Issue 31: NFS targets behave like directories. On a fresh NAS volume docs/NFS.md's fio
//! commands run verbatim, and `qoslab bench` runs a randwrite job (fio's nfs engine cannot
//! create a file it writes at random: the harness lays it out first), lists the
//! `fiotest` it wrote in the export and removes it; a job that did no I/O because of an
//! error is a job in error with fio's message (exit 1), never a measurement of zero; an
//! export's existing `fiotest` is written only with `--overwrite`.
//!
//! Cost: ~10 s (fio 5 s on 64 MiB, three 2 s bench jobs on 16 MiB).

use std::process::Command;
use std::time::Duration;

use crate::bench_util::{bench_plan, Dir};
use crate::nfs_node::{nfs_port, nfs_url};
use crate::util::{require_tool, run, Node};

const DOCS: &str = include_str!("../../../../docs/NFS.md");
const LIMIT: Duration = Duration::from_secs(60);

/// The docs' block after its marker comment.
fn docs_block() -> &'static str {
    let after = DOCS
        .split("<!-- fio on a fresh NAS volume")
        .nth(1)
        .expect("docs/NFS.md has the marker");
    let start = after.find("```sh\n").expect("a sh block") + 6;
    let len = after[start..].find("```").expect("its end");
    &after[start..start + len]
}

const NODE: &str = "[[volume]]\nname = \"vol1\"\nsize = \"1GB\"\nnas_path = \"/vol1\"\n\n\
                    [[volume]]\nname = \"fresh\"\nsize = \"1GB\"\nnas_path = \"/fresh\"\n";

const PLAN: &str = "[bench]\nruntime = \"2s\"\nramp = \"0s\"\n\n[[workload]]\nname = \"w\"\n\
                    fio = { rw = \"randwrite\", bs = \"4k\", iodepth = 4, size = \"16M\" }\n\
                    expect = [\"iops >= 10\"]\n";

#[test]
fn a_fresh_nas_volume_takes_the_docs_fio_and_a_bench_randwrite_and_is_left_clean() {
    require_tool("fio");
    let node = Node::start_with(NODE, &["--listen-nfs", "127.0.0.1:0"]);
    let port = nfs_port(&node).to_string();
    let d = Dir::new("bench-nfs");
    // The docs' commands, verbatim but for the port.
    let script = docs_block().replace("2049", &port);
    let out = run(
        Command::new("sh")
            .args(["-ec", &script])
            .current_dir(d.path()),
        LIMIT,
    );
    assert!(out.status.success(), "{out}");
    assert!(out.stdout.contains("read: IOPS="), "{out}");
    assert!(!out.stderr.contains("NFS3ERR"), "{out}");

    // qoslab bench: a randwrite on the fresh volume, its file listed and removed.
    d.write("p.toml", PLAN);
    let url = nfs_url(&node, "/fresh");
    let (code, out, err) = bench_plan(&d, &["--target", &url]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("PASS iops >= 10"), "{out}");
    assert!(
        out.contains("wrote nfs://127.0.0.1/fresh/fiotest (16.0 MiB): created by the run: removed"),
        "{out}"
    );
    let tree = node.data_dir().join("nas/fresh");
    let left: Vec<_> = std::fs::read_dir(&tree).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");

    // Kept, then refused: an export's existing fiotest is written only with --overwrite.
    let (code, _, err) = bench_plan(&d, &["--target", &url, "--keep-files"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = bench_plan(&d, &["--target", &url]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("nfs://127.0.0.1/fresh/fiotest is an existing file (16.0 MiB)"),
        "{err}"
    );

    // An export that is not there: fio does no I/O and says why: an error, exit 1.
    let nope = nfs_url(&node, "/nope");
    let (code, out, err) = bench_plan(&d, &["--target", &nope]);
    assert_eq!(code, Some(1), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("ERROR: w: fio did no I/O; fio said:"), "{out}");
    assert!(out.contains("MNT3ERR_NOENT"), "{out}");
    assert!(
        !out.contains("iops = 0"),
        "never a measurement of zero:\n{out}"
    );
}
