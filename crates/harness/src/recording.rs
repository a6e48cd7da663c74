//! Recording a run's time series: fio's per-window logs (asked for in each job file,
//! written to a temporary directory), the node's samples and the hosts' tool sets
//! (`toolsets`, every second, unless `--no-tools`) while each job runs.

use std::path::PathBuf;
use std::sync::Arc;

use crate::node_sampler::{self, EmbeddedProbe, NodeProbe, RestProbe, Sampling};
use crate::series::JobSeries;
use crate::target::{EmbeddedNode, Target};
use fio::logs::{collect, log_options};
use fio::JobFile;

/// Other hosts to sample beside this machine while each job runs (remote load
/// generators, over their own transport): called once per job, for fresh sources.
pub type RemoteHosts = Arc<dyn Fn() -> Vec<toolsets::HostSpec> + Send + Sync>;

/// One per run; removes fio's logs when dropped.
pub struct SeriesRecorder {
    dir: Option<PathBuf>,
    /// Sample the hosts' tool sets while jobs run.
    tools: bool,
    /// Remote hosts sampled beside this one (with `tools` only).
    remote: Option<RemoteHosts>,
}

/// One job's recording in progress.
pub struct JobRecording {
    logs: Option<(PathBuf, String)>,
    sampling: Option<Sampling>,
    /// The tool sets and the ramp (ms) their clock is shifted by.
    tools: Option<(toolsets::Sampler, u64)>,
}

fn prefix(seq: usize) -> String {
    format!("job{seq}")
}

impl SeriesRecorder {
    /// Without a temporary directory fio's logs are not recorded (the run goes on).
    pub fn new() -> SeriesRecorder {
        SeriesRecorder::with_tools(true)
    }

    /// `tools`: sample the hosts (this machine) while each job runs.
    pub fn with_tools(tools: bool) -> SeriesRecorder {
        SeriesRecorder {
            dir: crate::target::temp_dir("fiologs").ok(),
            tools,
            remote: None,
        }
    }

    /// Also sample these hosts while each job runs (when tool sets are on).
    pub fn with_remote(mut self, remote: Option<RemoteHosts>) -> SeriesRecorder {
        self.remote = remote;
        self
    }

    /// Whether tool sets are sampled.
    pub fn tools(&self) -> bool {
        self.tools
    }

    /// Ask fio, in job `seq`'s file, for its IOPS, bandwidth, latency and histogram logs.
    pub fn add_log_options(&self, seq: usize, file: &mut JobFile) {
        if let Some(d) = &self.dir {
            for (k, v) in log_options(&d.join(prefix(seq)).display().to_string()) {
                file.global.set(&k, v);
            }
        }
    }

    /// The same for one section of a file that runs several jobs at once (each job its
    /// own logs, numbered `seq`).
    pub fn add_section_log_options(&self, seq: usize, section: &mut fio::Section) {
        if let Some(d) = &self.dir {
            for (k, v) in log_options(&d.join(prefix(seq)).display().to_string()) {
                section.set(&k, v);
            }
        }
    }

    /// Record job `seq`'s fio logs only (another job of the same fio run samples the node).
    pub fn start_logs(&self, seq: usize) -> JobRecording {
        JobRecording {
            logs: self.dir.clone().map(|d| (d, prefix(seq))),
            sampling: None,
            tools: None,
        }
    }

    /// Start sampling the node job `seq` runs on (the embedded node in-process, a
    /// `--node` target over REST; nothing for other targets) and the hosts' tool sets.
    /// `generating`: this process generates the job's load itself (the ramp's genio, on
    /// threads named `toolsets::GENERATOR_THREADS`), so those threads are the load
    /// generator in the tool sets.
    pub fn start(
        &self,
        seq: usize,
        node: Option<&EmbeddedNode>,
        target: &Target,
        ramp_s: f64,
        generating: bool,
    ) -> JobRecording {
        let probe: Option<Box<dyn NodeProbe>> = match (node, target) {
            (Some(n), _) => Some(Box::new(EmbeddedProbe::new(n.node().clone()))),
            (
                None,
                Target::NodeVolume { node: api, .. }
                | Target::Node(api)
                | Target::NodeVolumes { node: api, .. },
            ) => Some(Box::new(
                RestProbe::new(api.clone()).with_luns(
                    target
                        .luns_on_node()
                        .into_iter()
                        .map(|l| (l.path, l.node_name))
                        .collect(),
                ),
            )),
            _ => None,
        };
        // This machine runs fio; it is the node's host too when the node is embedded (its
        // threads are the node), or when the node's process listens here.
        let mut roles = if node.is_some() {
            toolsets::Roles::embedded()
        } else if self.tools {
            toolsets::Roles::harness_only(crate::local_node::node_pid(target))
        } else {
            toolsets::Roles::harness_only(None)
        };
        if generating {
            roles = roles.with_generator();
        }
        let ramp_ms = (ramp_s * 1000.0) as u64;
        JobRecording {
            logs: self.dir.clone().map(|d| (d, prefix(seq))),
            sampling: probe.map(|p| node_sampler::start(p, ramp_ms)),
            tools: self.tools.then(|| {
                let mut hosts = vec![toolsets::HostSpec::local(roles)];
                if let Some(remote) = &self.remote {
                    hosts.extend(remote());
                }
                (
                    toolsets::Sampler::start(hosts, toolsets::DEFAULT_PERIOD),
                    ramp_ms,
                )
            }),
        }
    }
}

impl Default for SeriesRecorder {
    fn default() -> Self {
        SeriesRecorder::new()
    }
}

impl Drop for SeriesRecorder {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl JobRecording {
    /// Stop sampling and read fio's logs (unreadable logs cost the charts, not the run).
    pub fn finish(self, job_id: i64) -> JobSeries {
        let (node, resources) = self.sampling.map(Sampling::finish_all).unwrap_or_default();
        JobSeries {
            job_id,
            node,
            resources,
            hosts: self
                .tools
                .map(|(s, ramp_ms)| on_fio_clock(s.stop(), ramp_ms))
                .unwrap_or_default(),
            fio: self
                .logs
                .and_then(|(d, p)| collect(&d, &p).ok())
                .unwrap_or_default(),
            ops: Vec::new(),
        }
    }
}

/// Moves tool-set samples onto fio's log clock (0 = the end of the ramp), dropping those
/// that ended during the ramp, as the node's samples are.
fn on_fio_clock(mut hosts: Vec<toolsets::HostSeries>, ramp_ms: u64) -> Vec<toolsets::HostSeries> {
    for h in &mut hosts {
        h.samples.retain(|s| s.t_ms > ramp_ms);
        for s in &mut h.samples {
            s.t_ms -= ramp_ms;
        }
    }
    hosts
}
