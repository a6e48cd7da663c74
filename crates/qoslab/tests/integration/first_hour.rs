//! Issue 24, the first hour, through the real binary: the README's binary-only path and
//! docs/FIRST-HOUR.md run verbatim on a fresh data directory; a relative socket path inside
//! the data directory and a failed start that leaves nothing; the client context from the
//! environment and from `qoslab login`; a plan with its own policies and volumes run whole
//! on a node (created, then deleted); a directory target cleaned up unless `--keep-files`,
//! with DONE for a run without checks; a fio option typo as a plan error (exit 2, file:line,
//! nothing stored); fio's own error text in the summary.
//!
//! The verbatim scripts run in a network namespace of their own (`unshare --net`, loopback
//! up), so the node's default ports (8080, 10809) are theirs alone; the node they start in
//! the background is stopped by pid (its `serve.lock`) whatever happens.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::bench_util::{export, qoslab, succeeded, text, usage_error, Dir};
use crate::ontap_rest::{https_node, PASSWORD};
use crate::small_fs::SmallFs;
use crate::util::{require_fio_nbd, require_tool, run, Node, Out, QOSLAB};

const LIMIT: Duration = Duration::from_secs(120);

const README: &str = include_str!("../../../../README.md");
const WALKTHROUGH: &str = include_str!("../../../../docs/FIRST-HOUR.md");

/// The ```sh blocks of a Markdown text, in order.
fn sh_blocks(md: &str) -> Vec<&str> {
    md.split("```sh\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or(""))
        .collect()
}

/// The README's binary-only path: the block after its marker comment.
fn readme_binary_path() -> &'static str {
    let after = README
        .split("<!-- binary-only path")
        .nth(1)
        .expect("README.md has the binary-only path's marker");
    sh_blocks(after)[0]
}

/// A node started with `serve --detach` in `data`: stopped (SIGTERM, then SIGKILL after
/// 20 s) when dropped, by the pid its lock file names, if that pid is a qoslab.
struct Detached(PathBuf);

impl Drop for Detached {
    fn drop(&mut self) {
        let Ok(pid) = std::fs::read_to_string(self.0.join("serve.lock")) else {
            return;
        };
        let Ok(pid) = pid.trim().parse::<u32>() else {
            return;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains("qoslab") {
            return; // gone already (the script stopped it), or a recycled pid
        }
        let _ = Command::new("kill").arg(pid.to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Path::new(&format!("/proc/{pid}")).exists() {
            if Instant::now() > deadline {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Run `script` with `bash -e` in `dir`, in a network namespace of its own, with the binary
/// under test first on PATH and no qoslab context inherited.
fn run_verbatim(dir: &Dir, script: &str) -> Out {
    require_tool("unshare");
    let bin = Path::new(QOSLAB).parent().expect("the binary's directory");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--net", "bash", "-ec"])
        .arg(format!("ip link set lo up\n{script}"))
        .current_dir(dir.path())
        .env("PATH", path)
        .env("HOME", dir.path())
        .env("QOSLAB_CONTEXT", dir.path().join("context.json"));
    for v in [
        "QOSLAB_URL",
        "QOSLAB_DATA_DIR",
        "QOSLAB_USER",
        "QOSLAB_PASSWORD",
        "QOSLAB_TOKEN_FILE",
        "QOSLAB_DB",
        "XDG_CONFIG_HOME",
    ] {
        cmd.env_remove(v);
    }
    run(&mut cmd, LIMIT)
}

#[test]
fn the_readmes_binary_only_path_runs_verbatim_on_a_fresh_data_directory() {
    require_fio_nbd();
    let script = readme_binary_path();
    let commands: Vec<&str> = script.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(commands.len(), 5, "five commands:\n{script}");
    let dir = Dir::new("readme");
    let _node = Detached(dir.path().join("qoslab-data"));
    let out = run_verbatim(&dir, script);
    assert!(out.status.success(), "{out}");
    // fio against the 500 IOPS ceiling: never above it (a busy machine only slows fio;
    // 5% covers fio's rounding and the pacer's 5 ms burst window over 5 s).
    let iops: f64 = out
        .stdout
        .split("read: IOPS=")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no fio read line in\n{out}"));
    assert!(iops > 0.0 && iops <= 525.0, "fio read {iops} IOPS\n{out}");
    // The node's socket is inside its data directory; the benchmark ran on the volume
    // there and says what it judged: no checks in dbench's profile, so DONE.
    assert!(dir.path().join("qoslab-data/nbd.sock").exists());
    assert!(
        out.stdout
            .contains("--profile dbench (9 fio run(s), ~32 s) on volume vol500 on node"),
        "{out}"
    );
    assert!(
        out.stdout.contains("run 1: DONE (9 job(s), 0 in error"),
        "{out}"
    );
    assert!(out.stdout.contains("Dbench Summary"), "{out}");
    // The context `qoslab login` saved is the user's alone.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("context.json"))
        .expect("qoslab login saved a context")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn the_first_hour_walkthrough_runs_verbatim() {
    require_fio_nbd();
    require_tool("curl");
    let script = sh_blocks(WALKTHROUGH).join("\n");
    let dir = Dir::new("walkthrough");
    let _node = Detached(dir.path().join("qoslab-data"));
    let out = run_verbatim(&dir, &script);
    assert!(out.status.success(), "{out}");
    let o = &out.stdout;
    // Seed 000's curl lines created the two fixed policies on the empty node (201, not
    // 409), the clustershell line the adaptive one; -fields shows the fixed ones.
    for name in ["\"QoS_500iops\"", "\"QoS_100MBps\"", "\"aQoS\""] {
        assert!(o.contains(&format!("\"name\": {name}")), "{name}\n{out}");
    }
    assert!(
        o.contains("policy-group max-throughput\n------------ --------------\nQoS_100MBps  100MB/S\nQoS_500iops  500IOPS\n"),
        "{out}"
    );
    // Three volumes in one run, each judged against its own policy on the node.
    assert!(
        o.contains("on volumes vol500, vol100, volaqos on node https://127.0.0.1:8080"),
        "{out}"
    );
    assert!(
        o.contains("run 1: PASSED (3 job(s), 0 in error; verdicts: 3 pass, 0 fail"),
        "{out}"
    );
    let report = std::fs::read_to_string(dir.path().join("seed000.html")).expect("the report");
    assert!(
        report.contains("randread_500 on vol500 stayed under its 500 IOPS ceiling (within 3%)"),
        "the answer box states the claim"
    );
    assert!(report.contains("seqread on vol100 stayed under its 100.0 MiB/s ceiling"));
    // The directory target: what was written, where, and that it is gone.
    assert!(
        o.contains(
            "wrote scratch/fiotest (64.0 MiB): created by the run: removed (--keep-files keeps it)"
        ),
        "{out}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("scratch"))
            .unwrap()
            .count(),
        0
    );
    assert!(o.contains("run 2: PASSED (1 job(s)"), "{out}");
    // The dry run wrote nothing; the refusals as the walkthrough prints them.
    assert!(o.contains("Nothing ran and nothing was written."), "{out}");
    for refusal in [
        "--target: data.img is an existing file (64.0 KiB): the run writes into it and its data will be destroyed. Nothing was written. --overwrite allows that",
        "--target scratch/typo: no such file or directory. Nothing was written. --create makes it",
        "target \"scratch/typo/\": no such directory (a trailing / names a directory that exists",
    ] {
        assert!(out.stderr.contains(refusal), "{refusal}\n{out}");
    }
    assert!(!dir.path().join("scratch/typo").exists(), "{out}");
    assert_eq!(
        std::fs::metadata(dir.path().join("data.img"))
            .unwrap()
            .len(),
        65536,
        "untouched"
    );
    // The typo: a plan error at the plan's line, with what is allowed; nothing stored.
    assert!(
        out.stderr.contains("typo.toml:8: workload \"randwrite\": fio.rw = \"randwrit\": expected one of read, write"),
        "{out}"
    );
    assert!(out.stderr.contains("did you mean randwrite?"), "{out}");
    assert!(!o.contains("run 3"), "{out}");
    assert!(
        !dir.path().join("context.json").exists(),
        "logout forgets the context"
    );
}

const VOLUME: &str = "[[volume]]\nname = \"v1\"\nsize = \"1GiB\"\n";

#[test]
fn a_relative_socket_is_inside_the_data_directory_and_a_failed_start_leaves_nothing() {
    let d = Dir::new("socket");
    d.write(
        "node.toml",
        &format!("[node]\nlisten_unix = \"nbd.sock\"\nlisten_tcp = \"127.0.0.1:0\"\n\n{VOLUME}"),
    );
    let args = [
        "serve",
        "--detach",
        "--config",
        "node.toml",
        "--data-dir",
        "data",
        "--listen-http",
        "127.0.0.1:0",
        "--insecure-http",
    ];
    let _node = Detached(d.path().join("data"));
    let o = qoslab(&d, &args, LIMIT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("socket=data/nbd.sock"), "{out}");
    let info = run(
        Command::new("nbdinfo")
            .arg("--list")
            .arg("nbd+unix:///?socket=data/nbd.sock")
            .current_dir(d.path()),
        LIMIT,
    )
    .ok();
    assert!(info.stdout.contains("export=\"v1\""), "{info}");

    // A socket whose directory is missing: the setting, its file:line and the fix; the
    // data directory is not created.
    d.write(
        "bad.toml",
        &format!("[node]\nlisten_unix = \"sub/nbd.sock\"\n\n{VOLUME}"),
    );
    let err = usage_error(
        &d,
        &[
            "serve",
            "--config",
            "bad.toml",
            "--data-dir",
            "fresh",
            "--listen-http",
            "127.0.0.1:0",
            "--insecure-http",
        ],
        LIMIT,
    );
    assert!(
        err.contains("node.listen_unix at bad.toml:2 = fresh/sub/nbd.sock: its directory fresh/sub does not exist; create it, or give --listen-unix PATH"),
        "{err}"
    );
    assert!(
        !d.path().join("fresh").exists(),
        "a failed start leaves nothing"
    );
}

/// `qoslab ARGS` in `dir` with only `env` as its qoslab context.
fn client(dir: &Dir, args: &[&str], env: &[(&str, String)]) -> Out {
    let mut cmd = Command::new(QOSLAB);
    cmd.args(args).current_dir(dir.path());
    for v in [
        "QOSLAB_URL",
        "QOSLAB_DATA_DIR",
        "QOSLAB_USER",
        "QOSLAB_PASSWORD",
        "QOSLAB_TOKEN_FILE",
        "XDG_CONFIG_HOME",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("HOME", dir.path())
        .env("QOSLAB_CONTEXT", dir.path().join("ctx.json"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd, LIMIT)
}

#[test]
fn client_commands_take_the_node_and_user_from_the_environment_or_a_login() {
    let node = https_node(VOLUME, &[]);
    let d = Dir::new("context");
    let url = node.api_url();
    let data = node.data_dir().display().to_string();
    let env = [
        ("QOSLAB_URL", url.clone()),
        ("QOSLAB_DATA_DIR", data.clone()),
        ("QOSLAB_USER", "admin".to_string()),
        ("QOSLAB_PASSWORD", PASSWORD.to_string()),
    ];
    // The environment alone: the URL, the CA (from the data directory), the user.
    let o = client(&d, &["volume", "list"], &env).ok();
    assert!(o.stdout.contains("v1"), "{o}");
    // Without the password the node refuses, and says so.
    let o = client(&d, &["volume", "list"], &env[..3]);
    assert!(!o.status.success(), "{o}");
    // Without the data directory the node's certificate is not trusted.
    let o = client(
        &d,
        &["volume", "list"],
        &[env[0].clone(), env[2].clone(), env[3].clone()],
    );
    assert!(!o.status.success(), "{o}");
    assert!(o.stderr.to_lowercase().contains("certificate"), "{o}");

    // `qoslab login` saves the context once; later commands need nothing else.
    let o = client(
        &d,
        &[
            "login",
            "--url",
            &url,
            "--data-dir",
            &data,
            "-u",
            &format!("admin:{PASSWORD}"),
        ],
        &[],
    )
    .ok();
    assert!(o.stdout.contains("logged in to"), "{o}");
    let o = client(&d, &["volume", "list"], &[]).ok();
    assert!(o.stdout.contains("v1"), "{o}");
    let o = client(&d, &["ontap", "vol", "show", "-fields", "size"], &[]).ok();
    assert!(o.stdout.contains("v1"), "{o}");
    client(&d, &["logout"], &[]).ok();
    let o = client(&d, &["volume", "list", "--url", &url], &[]);
    assert!(!o.status.success(), "after logout the context is gone: {o}");
}

/// A plan with two policies and two volumes of its own, and a third volume the node has.
const NODE_PLAN: &str = r#"[bench]
name = "whole-plan"
runtime = "2s"
ramp = "1s"

[[policy]]
name = "fh_500iops"
fixed = { max_throughput_iops = 500 }

[[policy]]
name = "fh_20mbps"
fixed = { max_throughput_mbps = 20 }

[[volume]]
name = "fh_a"
size = "10GB"
policy = "fh_500iops"

[[volume]]
name = "fh_b"
size = "10GB"
policy = "fh_20mbps"

[[workload]]
name = "a_randread"
volume = "fh_a"
fio = { rw = "randread", bs = "4k", iodepth = 16, size = "1G" }
expect = ["iops <= policy.ceiling +-3%"]

[[workload]]
name = "b_read"
volume = "fh_b"
fio = { rw = "read", bs = "1M", iodepth = 4, size = "1G" }
expect = ["bw <= policy.ceiling +-3%"]

[[workload]]
name = "base_read"
volume = "base"
fio = { rw = "randread", bs = "4k", iodepth = 4, size = "256M" }
"#;

#[test]
fn a_plan_runs_whole_on_a_node_its_missing_policies_and_volumes_created_then_deleted() {
    require_fio_nbd();
    let node = Node::start("[[volume]]\nname = \"base\"\nsize = \"1GiB\"\n");
    let url = node.api_url();
    let d = Dir::new("whole-plan");
    d.write("p.toml", NODE_PLAN);
    let o = qoslab(
        &d,
        &["bench", "p.toml", "--node", &url, "--db", "r.db"],
        LIMIT,
    );
    let out = succeeded(&o);
    assert!(out.contains("on volumes fh_a, fh_b, base on node"), "{out}");
    assert!(
        out.contains("verdicts: 2 pass, 0 fail, 0 inconclusive"),
        "{out}"
    );
    // The limits judged were the node's for each volume.
    let o = export(&d, "1", "json", LIMIT);
    let (json, _) = text(&o);
    assert!(json.contains("\"ceiling_iops\": 500"), "{json}");
    assert!(json.contains("\"ceiling_bps\": 20971520"), "{json}");
    // What the run created is gone; what the node had stays.
    let vols = client(
        &d,
        &["volume", "list", "--url", &url, "--output", "json"],
        &[],
    )
    .ok();
    assert!(vols.stdout.contains("\"base\""), "{vols}");
    assert!(
        !vols.stdout.contains("fh_a") && !vols.stdout.contains("fh_b"),
        "{vols}"
    );
    let pols = client(
        &d,
        &["policy", "list", "--url", &url, "--output", "json"],
        &[],
    )
    .ok();
    assert!(
        !pols.stdout.contains("fh_500iops") && !pols.stdout.contains("fh_20mbps"),
        "{pols}"
    );
}

const DIR_PLAN: &str = r#"[bench]
name = "on-a-dir"
runtime = "1s"
ramp = "0s"

[[volume]]
name = "ignored"
size = "1GiB"

[[workload]]
name = "w"
fio = { rw = "randwrite", bs = "4k", iodepth = 4 }
"#;

/// `qoslab bench PLAN --target TARGET --db r.db --no-tools EXTRA...` in `d`.
fn bench_on(d: &Dir, plan: &str, target: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "bench",
        plan,
        "--target",
        target,
        "--db",
        "r.db",
        "--no-tools",
    ];
    args.extend_from_slice(extra);
    qoslab(d, &args, LIMIT)
}

#[test]
fn a_directory_target_is_cleaned_up_unless_keep_files_and_a_run_without_checks_is_done() {
    require_tool("fio");
    let d = Dir::new("dir-target");
    d.write("p.toml", DIR_PLAN);
    // A small file system of its own (64 MiB of tmpfs), so the default size is seen to
    // fit its free space (half of it) and the run stays short.
    let fs = SmallFs::tmpfs(64);
    let target = fs.mnt.clone();
    std::fs::write(target.join("mine.dat"), b"not qoslab's").unwrap();
    let t = target.display().to_string();
    let o = bench_on(&d, "p.toml", &t, &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    // The plan's node tables are named as not applied, never silently dropped.
    assert!(
        err.contains("not applied") || out.contains("not applied"),
        "{out}\n{err}"
    );
    // No size in the plan: a default that fits, said, written and removed.
    let mib: f64 = out
        .split(&format!("wrote {t}/fiotest ("))
        .nth(1)
        .and_then(|s| s.split(" MiB)").next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no 'wrote' line in\n{out}"));
    assert!(
        (16.0..=32.0).contains(&mib),
        "{mib} MiB on a 64 MiB file system"
    );
    assert!(out.contains("removed (--keep-files keeps it)"), "{out}");
    assert!(
        out.contains("run 1: DONE (1 job(s), 0 in error; no checks"),
        "{out}"
    );
    let left: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["mine.dat"]);

    // --keep-files (a small file this time: the default size was proven above).
    d.write(
        "small.toml",
        &DIR_PLAN.replace("iodepth = 4 }", "iodepth = 4, size = \"16M\" }"),
    );
    let o = bench_on(&d, "small.toml", &t, &["--keep-files"]);
    let out = succeeded(&o);
    assert!(
        out.contains(&format!(
            "wrote {t}/fiotest (16.0 MiB): created by the run: kept (--keep-files)"
        )),
        "{out}"
    );
    assert!(
        target.join("fiotest").exists(),
        "--keep-files keeps what the run wrote"
    );
    assert!(target.join("mine.dat").exists());
}

#[test]
fn a_fio_option_typo_is_a_plan_error_at_its_line_and_nothing_is_stored() {
    require_tool("fio");
    let d = Dir::new("typo");
    // qoslab's own check first (its allow-list and value grammar), then fio's
    // --parse-only for what only fio knows, in fio's words.
    for (option, says) in [
        (
            "rw = \"randred\"",
            "p.toml:6: workload \"w\": fio.rw = \"randred\": expected one of read, write",
        ),
        ("rw = \"randred\"", "; did you mean randread?"),
        (
            "rw = \"randread\", iodeth = 16",
            "p.toml:6: workload \"w\": fio.iodeth: not an option a plan may set",
        ),
        ("rw = \"randread\", iodeth = 16", "; did you mean iodepth?"),
        (
            "rw = \"randread\", random_distribution = \"zipf:1\"",
            "p.toml:6: workload \"w\": fio rejects the job: fio: zipf theta must different than 1.0",
        ),
    ] {
        d.write(
            "p.toml",
            &format!(
                "[bench]\nruntime = \"1s\"\n\n[[workload]]\nname = \"w\"\nfio = {{ {option}, bs = \"4k\", size = \"16M\" }}\n"
            ),
        );
        let t = d.path().display().to_string();
        let err = usage_error(
            &d,
            &["bench", "p.toml", "--target", &t, "--db", "r.db"],
            LIMIT,
        );
        assert!(err.contains(says), "{option}: {err}");
        assert!(!d.path().join("r.db").exists(), "nothing stored");
    }
}

#[test]
fn fios_own_error_text_reaches_the_summary_and_the_stored_job() {
    require_fio_nbd();
    let d = Dir::new("fio-error");
    d.write(
        "p.toml",
        "[bench]\nruntime = \"1s\"\nramp = \"0s\"\n\n[[workload]]\nname = \"w\"\nfio = { rw = \"randread\", bs = \"4k\", size = \"16M\" }\nexpect = [\"iops > 0\"]\n",
    );
    let uri = format!("nbd+unix:///nope?socket={}/none.sock", d.path().display());
    let o = bench_on(&d, "p.toml", &uri, &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "stdout:\n{out}\nstderr:\n{err}");
    let fio_says = "nbd_connect_uri: connect: No such file or directory";
    assert!(
        out.contains(fio_says),
        "the summary has fio's words:\n{out}"
    );
    assert!(!out.contains("DONE") && !out.contains("PASSED"), "{out}");
    let o = export(&d, "1", "json", LIMIT);
    let (json, _) = text(&o);
    assert!(
        json.contains(fio_says),
        "the stored job has fio's words:\n{json}"
    );
}
