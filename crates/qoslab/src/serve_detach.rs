//! `qoslab serve --detach`: start the node in the background and return once it serves
//! (its ready lines printed, exit 0) or failed (its error printed, exit 2, nothing left
//! behind). The node's output goes to DATA_DIR/serve.log; it stops on SIGTERM
//! (`kill PID`: the pid is printed, and kept in DATA_DIR/serve.lock while it runs).

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

/// How long a node may take to start (a calibration measures for 4 s first).
const START_LIMIT: Duration = Duration::from_secs(120);

/// Start `qoslab serve` (these arguments minus `--detach`) in its own session.
pub fn run(data_dir: &Path) -> anyhow::Result<()> {
    let created = !data_dir.exists();
    storage_node::private::create_dir_all(data_dir)
        .with_context(|| format!("creating the data directory {}", data_dir.display()))?;
    let log_path = data_dir.join("serve.log");
    let mut log = storage_node::private::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let start = log.seek(SeekFrom::End(0))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--detach")
        .collect();
    let exe = std::env::current_exe().context("finding the qoslab executable")?;
    let mut cmd = Command::new(exe);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?);
    // SAFETY: setsid(2) in the child before exec: its own session, away from this
    // terminal's signals.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("starting qoslab serve")?;
    let pid = child.id();
    let deadline = Instant::now() + START_LIMIT;
    let read_new = || -> String {
        let mut f = match std::fs::File::open(&log_path) {
            Ok(f) => f,
            Err(_) => return String::new(),
        };
        let _ = f.seek(SeekFrom::Start(start));
        let mut s = String::new();
        let _ = f.read_to_string(&mut s);
        s
    };
    loop {
        if let Some(status) = child.try_wait()? {
            eprint!("{}", read_new());
            if created {
                let _ = std::fs::remove_dir_all(data_dir);
            }
            anyhow::bail!(
                "qoslab serve stopped before it was ready ({status}); its output is above"
            );
        }
        let text = read_new();
        if text.lines().any(|l| l.starts_with("qoslab: ready")) {
            // The per-volume lines follow the ready line in the same write.
            std::thread::sleep(Duration::from_millis(100));
            // What serve prints (its `qoslab:` lines and the volumes under them); the log
            // lines stay in the log.
            for l in read_new()
                .lines()
                .filter(|l| l.starts_with("qoslab:") || l.starts_with("  "))
            {
                println!("{l}");
            }
            println!(
                "qoslab: serving in the background as pid {pid}; log {}; stop it with `kill {pid}`",
                log_path.display()
            );
            return Ok(());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            eprint!("{text}");
            anyhow::bail!("qoslab serve was not ready within {START_LIMIT:?}; stopped it");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
