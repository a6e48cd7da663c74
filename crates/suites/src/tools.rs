//! Tool sets on every host of a suite (the `toolsets` crate's: per-CPU, run queue, memory,
//! iostat -x, NICs, CPU per process role, every second): [`SshProc`] is a
//! [`toolsets::ProcSource`] over a host's ssh transport, one round trip per sample (the
//! framed snapshot script over the multiplexed connection), parsed on the coordinator by
//! the same code as the local host.

use std::collections::HashMap;
use std::time::Duration;

use hosts::Host;
use toolsets::source::{parse_nic_speeds, CONSTS_SCRIPT, NIC_SPEEDS_SCRIPT, SNAPSHOT_SCRIPT};
use toolsets::{
    HostConsts, HostSeries, HostSpec, ProcSource, RawSnapshot, Roles, Sampler, SourceError,
};

/// A host's /proc, read over its transport.
pub struct SshProc {
    host: Host,
}

impl SshProc {
    pub fn new(host: Host) -> SshProc {
        SshProc { host }
    }

    fn run(&self, script: &str) -> Result<String, SourceError> {
        self.host
            .run_ok(script)
            .map_err(|e| SourceError::Transport(e.to_string()))
    }
}

impl ProcSource for SshProc {
    fn host(&self) -> &str {
        &self.host.name
    }

    fn consts(&mut self) -> Result<HostConsts, SourceError> {
        HostConsts::parse(&self.run(CONSTS_SCRIPT)?)
    }

    fn nic_speeds(&mut self) -> HashMap<String, u64> {
        self.run(NIC_SPEEDS_SCRIPT)
            .map(|t| parse_nic_speeds(&t))
            .unwrap_or_default()
    }

    fn snapshot(&mut self) -> Result<RawSnapshot, SourceError> {
        let out = self
            .host
            .run(SNAPSHOT_SCRIPT)
            .map_err(|e| SourceError::Transport(e.to_string()))?;
        RawSnapshot::from_framed(out.stdout.as_bytes())
    }
}

/// Sample `hosts` every second until [`Sampler::stop`] (every process named fio is fio: a
/// load generator's roles).
pub fn sample(hosts: &[&Host]) -> Sampler {
    Sampler::start(
        hosts
            .iter()
            .map(|h| HostSpec {
                source: Box::new(SshProc::new((*h).clone())),
                roles: Roles::load_generator(),
            })
            .collect(),
        toolsets::DEFAULT_PERIOD,
    )
}

/// Samples moved onto fio's log clock (0 = the end of the ramp), those that ended during
/// the ramp dropped.
pub fn after_ramp(mut series: Vec<HostSeries>, ramp: Duration) -> Vec<HostSeries> {
    let ramp_ms = ramp.as_millis() as u64;
    for h in &mut series {
        h.samples.retain(|s| s.t_ms > ramp_ms);
        for s in &mut h.samples {
            s.t_ms -= ramp_ms;
        }
    }
    series
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local transport runs the same scripts: a snapshot parses, constants are sane.
    #[test]
    fn the_local_host_through_the_transport() {
        let mut p = SshProc::new(Host::local());
        let c = p.consts().unwrap();
        assert!(c.ticks_per_second > 0 && c.page_size >= 4096);
        let snap = p.snapshot().unwrap();
        assert!(!snap.stat.is_empty() && !snap.diskstats.is_empty() && !snap.processes.is_empty());
        let s = sample(&[&Host::local()]);
        std::thread::sleep(Duration::from_millis(2300));
        let series = s.stop();
        assert_eq!(series.len(), 1);
        assert!(series[0].errors.is_empty(), "{:?}", series[0].errors);
        assert!(!series[0].samples.is_empty(), "a sample a second");
    }
}
