//! Issue 31: a plan says what to measure, never where or what to run. Each spelling of a
//! fio option that runs a command, writes a path or names another target (white space
//! and control characters around the name, TOML quoted and dotted keys) is refused at the
//! plan's line before anything runs, on a directory target and on `--node ... --volume`;
//! nothing it names is created. `--allow-any-fio-option` passes a plainly written one (the
//! positive control: the same command does run then). A value fio would misread (`4kk`)
//! is an error at its line before any I/O.
//!
//! Cost: the refusals run no fio (~0.1 s each); the control runs one 1 s fio job on 4 MiB.

use std::path::Path;

use crate::bench_util::{bench_plan, Dir};
use crate::util::{require_tool, Node};

/// A plan whose one workload sets `options` after rw, bs and size (`{M}`: the marker path).
fn plan(options: &str, marker: &Path) -> String {
    format!(
        "[bench]\nruntime = \"1s\"\nramp = \"0s\"\n\n[[workload]]\nname = \"w\"\n\
         fio = {{ rw = \"write\", bs = \"4k\", size = \"4M\", rate_iops = 1000, {} }}\n",
        options.replace("{M}", &marker.display().to_string())
    )
}

/// Each way the attacker wrote a dangerous option, inline on line 7.
fn attacks() -> Vec<(&'static str, &'static str)> {
    vec![
        ("exec_prerun = \"touch {M}\"", "shell command"),
        (
            "\" exec_prerun\" = \"touch {M}\"",
            "fio reads this name as \"exec_prerun\"",
        ),
        (
            "\"exec_prerun \" = \"touch {M}\"",
            "fio reads this name as \"exec_prerun\"",
        ),
        (
            "\"exec_prerun\\t\" = \"touch {M}\"",
            "fio reads this name as \"exec_prerun\"",
        ),
        (
            "\"exec_prerun\\u000b\" = \"touch {M}\"",
            "fio reads this name as \"exec_prerun\"",
        ),
        (
            "'exec_postrun ' = \"touch {M}\"",
            "fio reads this name as \"exec_postrun\"",
        ),
        (
            "\" ioengine\" = \"exec\", program = \"/usr/bin/touch\", arg = \"{M}\"",
            "fio reads this name as \"ioengine\"",
        ),
        (
            "ioengine = \"exec\", program = \"/usr/bin/touch\", arg = \"{M}\"",
            "runs a program",
        ),
        (
            "\" filename\" = \"{M}\"",
            "fio reads this name as \"filename\"",
        ),
        ("filename = \"{M}\"", "the target does (--target)"),
        (
            "write_iolog = \"{M}\"",
            "fio writes a file at a path it names",
        ),
        (
            "write_bw_log = \"{M}\"",
            "fio writes a file at a path it names",
        ),
        ("directory = \"{M}\"", "the target does (--target)"),
        ("nice = 5", "not an option a plan may set"),
    ]
}

fn refused(d: &Dir, text_: &str, extra: &[&str], want: &[&str], marker: &Path) {
    d.write("p.toml", text_);
    let (code, out, err) = bench_plan(d, extra);
    assert_eq!(code, Some(2), "{text_}\nstdout:\n{out}\nstderr:\n{err}");
    for w in want {
        assert!(err.contains(w), "{text_}\nwant {w:?} in:\n{err}");
    }
    assert!(
        !marker.exists(),
        "{text_}: {} was created",
        marker.display()
    );
    assert!(!d.path().join("r.db").exists(), "nothing is stored");
}

#[test]
fn every_spelling_of_an_option_that_runs_or_writes_is_refused_at_its_line() {
    require_tool("fio");
    let d = Dir::new("plan-safety");
    let target = d.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let marker = d.path().join("outside").join("pwned");
    std::fs::create_dir(marker.parent().unwrap()).unwrap();
    let t = target.display().to_string();
    for (opt, says) in attacks() {
        let p = plan(opt, &marker);
        refused(
            &d,
            &p,
            &["--target", &t],
            &["p.toml:7: workload \"w\": fio.", says],
            &marker,
        );
        // The same on a table of its own and as dotted keys (line 9 and 8).
        let as_table = p.replace(
            "fio = { rw = \"write\", bs = \"4k\", size = \"4M\", rate_iops = 1000, ",
            "[workload.fio]\nrw = \"write\"\n",
        );
        let as_table = as_table
            .trim_end()
            .trim_end_matches('}')
            .replace(", ", "\n")
            + "\n";
        refused(
            &d,
            &as_table,
            &["--target", &t],
            &["p.toml:9: ", says],
            &marker,
        );
    }
    let dotted = "[bench]\nruntime = \"1s\"\n\n[[workload]]\nname = \"w\"\nfio.rw = \"write\"\nfio.\" exec_prerun\" = \"touch {M}\"\n";
    refused(
        &d,
        &dotted.replace("{M}", &marker.display().to_string()),
        &["--target", &t],
        &["p.toml:7: workload \"w\": fio.\" exec_prerun\": fio reads this name as \"exec_prerun\""],
        &marker,
    );
    // A value fio would misread: an error at its line, nothing written.
    refused(
        &d,
        &plan("iodepth = 4", &marker).replace("\"4k\"", "\"4kk\""),
        &["--target", &t],
        &["p.toml:7: workload \"w\": fio.bs = \"4kk\": expected a size"],
        &marker,
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "the target was never written"
    );

    // The old flag's name is not silently kept: it allows more than exec now.
    let (code, _, err) = bench_plan(&d, &["--allow-exec", "--target", &t]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--allow-any-fio-option"), "{err}");

    // The positive control: the flag passes a plainly written command, which runs.
    d.write("p.toml", &plan("exec_prerun = \"touch {M}\"", &marker));
    let (code, out, err) = bench_plan(&d, &["--target", &t, "--allow-any-fio-option"]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(marker.exists(), "with the flag the plan's command runs");
}

#[test]
fn a_running_nodes_volume_gets_the_same_refusals() {
    require_tool("fio");
    let node = Node::start(&crate::util::one_volume_config(
        "p",
        "max_throughput_iops = 500",
        "v",
        "64MiB",
    ));
    let d = Dir::new("plan-safety-node");
    let marker = d.path().join("pwned");
    let url = node.api_url();
    for (opt, says) in attacks() {
        refused(
            &d,
            &plan(opt, &marker),
            &["--node", &url, "--volume", "v"],
            &["p.toml:7: workload \"w\": fio.", says],
            &marker,
        );
    }
}
