//! Recording a run's time series: fio's per-window logs (asked for in each job file,
//! written to a temporary directory) and the node's samples while each job runs.

use std::path::PathBuf;

use crate::node_sampler::{self, EmbeddedProbe, NodeProbe, RestProbe, Sampling};
use crate::series::JobSeries;
use crate::target::{EmbeddedNode, Target};
use fio::logs::{collect, log_options};
use fio::JobFile;

/// One per run; removes fio's logs when dropped.
pub struct SeriesRecorder {
    dir: Option<PathBuf>,
}

/// One job's recording in progress.
pub struct JobRecording {
    logs: Option<(PathBuf, String)>,
    sampling: Option<Sampling>,
}

fn prefix(seq: usize) -> String {
    format!("job{seq}")
}

impl SeriesRecorder {
    /// Without a temporary directory fio's logs are not recorded (the run goes on).
    pub fn new() -> SeriesRecorder {
        SeriesRecorder {
            dir: crate::target::temp_dir("fiologs").ok(),
        }
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
        }
    }

    /// Start sampling the node job `seq` runs on (the embedded node in-process, a
    /// `--node` target over REST; nothing for other targets).
    pub fn start(
        &self,
        seq: usize,
        node: Option<&EmbeddedNode>,
        target: &Target,
        ramp_s: f64,
    ) -> JobRecording {
        let probe: Option<Box<dyn NodeProbe>> = match (node, target) {
            (Some(n), _) => Some(Box::new(EmbeddedProbe::new(n.node().clone()))),
            (None, Target::NodeVolume { node: api, .. }) => {
                Some(Box::new(RestProbe::new(api.clone())))
            }
            _ => None,
        };
        JobRecording {
            logs: self.dir.clone().map(|d| (d, prefix(seq))),
            sampling: probe.map(|p| node_sampler::start(p, (ramp_s * 1000.0) as u64)),
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
        JobSeries {
            job_id,
            node: self.sampling.map(Sampling::finish).unwrap_or_default(),
            fio: self
                .logs
                .and_then(|(d, p)| collect(&d, &p).ok())
                .unwrap_or_default(),
            ops: Vec::new(),
        }
    }
}
