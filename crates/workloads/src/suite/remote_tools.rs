//! Tool sets on remote fio load generators: `qoslab bench PLAN --client H,PORT --hosts H`
//! samples each named host over ssh while every job runs, beside this machine, so a
//! diagnosis can say a remote load generator was short of CPU.

use std::sync::Arc;

use harness::plan::PlanError;
use harness::recording::RemoteHosts;
use hosts::{Host, SshConfig};
use toolsets::{HostSpec, Roles};

use super::cli::SuiteArgs;

/// Remote hosts to sample, their ssh master connections closed when dropped.
pub struct RemoteTools {
    pub hosts: RemoteHosts,
    conns: Vec<Host>,
}

impl Drop for RemoteTools {
    fn drop(&mut self) {
        hosts::disconnect_all(&self.conns);
    }
}

/// The hosts named by `--hosts` (with `--ssh-config`, `--ssh-opt`), each sampled over its
/// ssh transport as a load generator (every process named fio is fio); None without
/// `--hosts`. Each host is checked once here (its facts over ssh), so a typo fails the run
/// before any job instead of leaving empty series.
pub fn from_args(m: &clap::ArgMatches) -> Result<Option<RemoteTools>, PlanError> {
    let a: SuiteArgs = crate::family_flags(m)?;
    let Some(list) = a.hosts.as_deref() else {
        return Ok(None);
    };
    let mut options = Vec::new();
    if let Some(c) = &a.ssh_config {
        options.push("-F".to_string());
        options.push(c.display().to_string());
    }
    options.extend(a.ssh_opts.iter().cloned());
    let cfg = Arc::new(SshConfig {
        options,
        ..SshConfig::default()
    });
    let hosts = hosts::parse_hosts(list, cfg).map_err(|e| PlanError(format!("--hosts: {e}")))?;
    if let Err(e) = hosts::preflight(&hosts, &["sh"]) {
        hosts::disconnect_all(&hosts);
        return Err(PlanError(format!(
            "--hosts (load generators' tool sets): {e}"
        )));
    }
    let sampled = hosts.clone();
    let remote: RemoteHosts = Arc::new(move || {
        sampled
            .iter()
            .map(|h| HostSpec {
                source: Box::new(suites::tools::SshProc::new(h.clone())),
                roles: Roles::load_generator(),
            })
            .collect()
    });
    Ok(Some(RemoteTools {
        hosts: remote,
        conns: hosts,
    }))
}
