//! `qoslab tenants`: tenant file systems over qoslab volumes (seed 004). `mount` exports
//! volumes through nbdfuse, attaches them as loop devices with direct I/O, makes file
//! systems and mounts them, runs a command (or holds until interrupted) and tears it all
//! down; `cleanup` finds and undoes what killed runs left behind. See docs/TENANTS.md.

use std::path::PathBuf;
use std::process::Command;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use mounts::{AttachOptions, FsType, Session, StaleRun};

#[derive(Args)]
pub struct TenantsArgs {
    #[command(subcommand)]
    command: TenantsCommand,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Fs {
    Ext4,
    Xfs,
}

impl From<Fs> for FsType {
    fn from(f: Fs) -> FsType {
        match f {
            Fs::Ext4 => FsType::Ext4,
            Fs::Xfs => FsType::Xfs,
        }
    }
}

#[derive(Subcommand)]
enum TenantsCommand {
    /// Mount volumes as tenant file systems, run a command on them (or hold until
    /// interrupted), then tear everything down.
    #[command(after_help = "\
Each --nbd URI becomes tenant tN (in order): nbdfuse exports it as a file, losetup
attaches that file as a loop device with direct I/O (the page cache stays above the
tenant's file system), mkfs formats it (its contents are lost) and it is mounted under
BASE_DIR/run-PID-NONCE/tN.fs. Stale runs under BASE_DIR (from a killed qoslab) are
cleaned first. The command runs with QOSLAB_TENANT_DIRS (colon-separated mount points)
and QOSLAB_TENANT_<N> in its environment; its exit status is qoslab's. Needs root,
/dev/fuse and loop devices.

EXAMPLES:
  qoslab tenants mount --nbd 'nbd+unix:///v1?socket=/run/qoslab.sock' -- \\
      fio --name=t --directory=\"$QOSLAB_TENANT_0\" --rw=randwrite --bs=4k --size=64m --fsync=1
  qoslab tenants mount --fs xfs --nbd nbd://127.0.0.1/v1 --nbd nbd://127.0.0.1/v2   # hold")]
    Mount(MountArgs),
    /// Find runs left behind by a killed qoslab (their lock is free) and undo them:
    /// kill processes on their file systems, unmount, detach loop devices, stop nbdfuse,
    /// remove directories. Live runs are listed and left alone.
    Cleanup(CleanupArgs),
}

#[derive(Args)]
struct MountArgs {
    /// NBD URI of a volume (repeat for more tenants), e.g. nbd+unix:///NAME?socket=PATH.
    #[arg(long = "nbd", required = true)]
    nbd: Vec<String>,
    /// File system to make on each volume.
    #[arg(long, value_enum, default_value = "ext4")]
    fs: Fs,
    /// Attach the loop devices without direct I/O (the page cache then caches the volume
    /// a second time, below the file system: for comparison only).
    #[arg(long)]
    no_direct_io: bool,
    /// Extra mount options (mount -o).
    #[arg(long)]
    mount_options: Option<String>,
    /// Where run directories live.
    #[arg(long, default_value = mounts::DEFAULT_BASE)]
    base_dir: PathBuf,
    /// Command to run with the file systems mounted (after `--`); without one, hold until
    /// SIGINT/SIGTERM.
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Args)]
struct CleanupArgs {
    /// Where run directories live.
    #[arg(long, default_value = mounts::DEFAULT_BASE)]
    base_dir: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    output: Output,
}

pub fn run(args: TenantsArgs) -> anyhow::Result<i32> {
    match args.command {
        TenantsCommand::Mount(a) => mount(a),
        TenantsCommand::Cleanup(a) => cleanup(a),
    }
}

fn describe(r: &StaleRun) -> String {
    if r.live {
        return format!("{}: live (pid {}), left alone", r.run, pid(r));
    }
    let u = &r.undone;
    let mut s = format!(
        "{}: cleaned (pid {} is gone): {} process(es) killed, {} unmounted, {} loop device(s) \
         detached, {} nbdfuse stopped",
        r.run,
        pid(r),
        u.processes_killed,
        u.unmounted.len(),
        u.loops_detached.len(),
        u.nbdfuse_stopped
    );
    for e in &u.errors {
        s.push_str(&format!("\n  error: {e}"));
    }
    s
}

fn pid(r: &StaleRun) -> String {
    r.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into())
}

fn cleanup(a: CleanupArgs) -> anyhow::Result<i32> {
    let runs = mounts::cleanup_stale(&a.base_dir)?;
    let failed = runs.iter().any(|r| !r.undone.errors.is_empty());
    if a.output == Output::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "runs": runs }))?
        );
    } else if runs.is_empty() {
        println!("qoslab: no runs under {}", a.base_dir.display());
    } else {
        for r in &runs {
            println!("qoslab: {}", describe(r));
        }
    }
    Ok(if failed { 1 } else { 0 })
}

fn mount(a: MountArgs) -> anyhow::Result<i32> {
    let fs: FsType = a.fs.into();
    let (session, cleaned) = Session::open(&a.base_dir, &[fs])?;
    for r in cleaned.iter().filter(|r| !r.live) {
        println!("qoslab: stale {}", describe(r));
    }
    let mut opts = AttachOptions::new(fs);
    opts.direct_io = !a.no_direct_io;
    opts.mount_options = a.mount_options.clone();
    let mut dirs = Vec::new();
    for (i, uri) in a.nbd.iter().enumerate() {
        let t = session.attach(&format!("t{i}"), uri, &opts)?;
        println!(
            "qoslab: tenant {} mounted at {} ({} on {}, direct I/O {}, nbdfuse pid {})",
            t.name,
            t.mount_dir.display(),
            t.fs,
            t.loop_dev,
            if t.direct_io { "on" } else { "off" },
            t.nbdfuse_pid
        );
        dirs.push(t.mount_dir);
    }
    println!("qoslab: run {} ready", session.id());
    let code = if let Some((prog, rest)) = a.command.split_first() {
        let mut c = Command::new(prog);
        c.args(rest).env(
            "QOSLAB_TENANT_DIRS",
            std::env::join_paths(&dirs).unwrap_or_default(),
        );
        for (i, d) in dirs.iter().enumerate() {
            c.env(format!("QOSLAB_TENANT_{i}"), d);
        }
        // Its own process group: a signal to qoslab kills it (registered) before unmounting;
        // after a SIGKILL it stays, with the mounts it keeps busy, for the next run's cleanup.
        use std::os::unix::process::CommandExt;
        let mut child = lifecycle::children::spawn(
            c.process_group(0),
            lifecycle::children::OnParentDeath::Stay,
        )
        .map_err(|e| anyhow::anyhow!("cannot run {prog}: {e}"))?;
        let _reg = mounts::children::register(child.id());
        child.wait()?.code().unwrap_or(1)
    } else {
        println!("qoslab: holding the mounts until interrupted (Ctrl-C or SIGTERM)");
        loop {
            std::thread::park();
        }
    };
    let undone = session.close()?;
    if let Some(sig) = lifecycle::received() {
        // The signal thread has torn down (close waited for it) and exits with 128 + sig.
        return Ok(lifecycle::exit_status(sig));
    }
    println!(
        "qoslab: torn down: {} unmounted, {} loop device(s) detached",
        undone.unmounted.len(),
        undone.loops_detached.len()
    );
    Ok(code)
}
