//! What every suite run shares: its hosts (preflighted), a run directory on each host, a
//! local work directory for job files, and a progress sink.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hosts::{Host, HostFacts};

use crate::SuiteError;

/// Where progress lines go (stderr in the CLI, a Vec in tests).
pub type Progress = Box<dyn Fn(&str) + Send + Sync>;

pub struct Session {
    pub hosts: Vec<Host>,
    pub facts: Vec<HostFacts>,
    /// The run's id (`<pid>-<ms since the epoch>`), in the names of what it makes on hosts.
    pub id: String,
    /// On every host: where remote logs and scratch files go (removed at the end).
    pub rundir: String,
    /// On the coordinator: where job files are written.
    pub workdir: PathBuf,
    pub progress: Progress,
    /// How long remote servers may live at most (their lease).
    pub lease: Duration,
    /// On SIGINT/SIGTERM/SIGHUP: remove the run directories and close the ssh masters.
    _cleanup: lifecycle::Guard,
}

impl Session {
    /// Preflight `hosts` (facts + `tools`; every failing host named) and prepare a run id.
    pub fn open(
        hosts: Vec<Host>,
        tools: &[&str],
        progress: Progress,
    ) -> Result<Session, SuiteError> {
        let mut all = vec!["timeout", "setsid"];
        all.extend_from_slice(tools);
        progress(&format!(
            "preflight: {} host(s), tools {}",
            hosts.len(),
            tools.join(" ")
        ));
        let facts = match hosts::preflight(&hosts, &all) {
            Ok(f) => f,
            Err(e) => {
                // The hosts that answered keep a master connection: close them now.
                hosts::disconnect_all(&hosts);
                return Err(e.into());
            }
        };
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let id = format!("{}-{stamp}", std::process::id());
        let workdir = std::env::temp_dir().join(format!("qoslab-suite-{id}"));
        std::fs::create_dir_all(&workdir)
            .map_err(|e| SuiteError::Io(format!("{}: {e}", workdir.display())))?;
        for f in &facts {
            progress(&format!(
                "  {}: {} ({}), {} cores, {:.1} GiB RAM, {} disks, NICs {}",
                f.host,
                f.hostname,
                f.kernel,
                f.cores,
                f.mem_total_bytes as f64 / (1u64 << 30) as f64,
                f.disks.len(),
                f.nics
                    .iter()
                    .filter(|n| n.name != "lo")
                    .map(|n| match n.speed_mbps {
                        Some(s) => format!("{}={s}Mb/s", n.name),
                        None => format!("{}=?", n.name),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        let rundir = format!("/tmp/qoslab-run-{id}");
        let (hs, rd, wd) = (hosts.clone(), rundir.clone(), workdir.clone());
        // Registered before any remote process, so on a signal it runs after they are
        // stopped (newest first).
        let cleanup = lifecycle::register(lifecycle::Phase::Remote, move || close(&hs, &rd, &wd));
        Ok(Session {
            hosts,
            facts,
            id,
            rundir,
            workdir,
            progress,
            lease: Duration::from_secs(3600),
            _cleanup: cleanup,
        })
    }

    pub fn say(&self, line: &str) {
        (self.progress)(line);
    }

    pub fn host(&self, name: &str) -> Option<(usize, &Host)> {
        self.hosts.iter().enumerate().find(|(_, h)| h.name == name)
    }
}

/// Remove the run directory on every host and the local work directory; close the ssh
/// masters and their control directory.
fn close(hs: &[Host], rundir: &str, workdir: &std::path::Path) {
    for h in hs {
        hosts::remote::remove_rundir(h, rundir);
    }
    hosts::disconnect_all(hs);
    let _ = std::fs::remove_dir_all(workdir);
}

impl Drop for Session {
    fn drop(&mut self) {
        close(&self.hosts, &self.rundir, &self.workdir);
    }
}
